/* module_pre / module_post: a module's forward hooks (Hooks._pre_hook / _post_hook in
 * msprobe/pytorch/hooks.py) in C while the engine's plain context holds: DumpEngine.module_begin (its
 * counter, names, Call, construct record, inputs walked), the gates of its positional arguments, then
 * the hooks of its outputs, backward_expect, its own parameters and module_end (finish_call). In Python
 * those were ~40 calls a module, ~60 us of glue around the C records on the bench model's L0 step.
 *
 * Whatever is not the common case goes to the Python hook whole, before anything is changed: no plain
 * context (none possible for the configuration, a window after stop()), an argument that is a list
 * or tuple of tensors or an output that is a list or tuple inside one (Python gates their items), an
 * output of a tuple subclass (named tuples).
 * Both hooks of one module share its `calls` list and the Call objects, so a call the Python pre hook
 * began ends in C and the other way round.
 *
 * Included by _native.c after _backward.c (mode_aside, mode_back; finish_call and the plain context
 * from _call.c).
 */

/* the state all module hooks of one engine share; M_MODES..M_PUSH sit where _backward.c's hooks keep
 * theirs (H_MODES..H_PUSH), so mode_aside and mode_back take this state as it is */
enum {
    M_ENGINE,
    M_MODES,        /* the torch function mode stack: its length, pop, push */
    M_POP,
    M_PUSH,
    M_CALL_TYPE,    /* msprobe.dump.calls.Call */
    M_HOOK,         /* gates._HOOK: hook(engine, call, side, path, grad) */
    M_PARTIAL,      /* functools.partial */
    M_HOOK_DICT,    /* collections.OrderedDict: a tensor's hook dict */
    M_OWN_KEY,      /* gates._OWN_KEY */
    M_GRAD_ENABLED, /* torch._C.is_grad_enabled */
    M_SET_GRAD,     /* torch._C._set_grad_enabled */
    M_STRIDED,      /* torch.strided */
    M_ALIAS,        /* the adapter's alias(view, original) */
    M_GATE_OUTPUTS, /* gates.gate_outputs, for outputs an API call's C path does not walk itself */
    M_NOT_AMONG,    /* gates.not_among */
    M_SIZE
};
/* each module's own: its counter key "Module.{path}.{Class}", its open calls, the Python hook */
enum { O_BASE, O_CALLS, O_PYTHON, O_SIZE };

static PyObject *s_grad_fn, *s_backward_hooks, *s_register_hook_dict, *s_register_hook, *s_sequence_nr,
    *s_parameters_dict, *s_want_backward, *s_n_args, *s_n_outputs, *s_engine_parameters, *s_open_plain;

static int module_init(void) {
#define INTERN(var, text) if ((var = PyUnicode_InternFromString(text)) == NULL) return -1;
    INTERN(s_grad_fn, "grad_fn") INTERN(s_backward_hooks, "_backward_hooks")
    INTERN(s_register_hook_dict, "_register_hook_dict") INTERN(s_register_hook, "register_hook")
    INTERN(s_sequence_nr, "_sequence_nr") INTERN(s_parameters_dict, "_parameters")
    INTERN(s_want_backward, "want_backward") INTERN(s_n_args, "n_args") INTERN(s_n_outputs, "n_outputs")
    INTERN(s_engine_parameters, "parameters") INTERN(s_open_plain, "open_plain")
#undef INTERN
    return 0;
}

/* The shared and own state of a hook's first two arguments (borrowed), or -1 with a TypeError */
static int module_state(PyObject *const *args, PyObject *const **shared, PyObject *const **own) {
    if (!PyTuple_Check(args[0]) || PyTuple_GET_SIZE(args[0]) != M_SIZE || !PyTuple_Check(args[1]) ||
        PyTuple_GET_SIZE(args[1]) != O_SIZE || !PyList_Check(PyTuple_GET_ITEM(args[1], O_CALLS)) ||
        !PyUnicode_Check(PyTuple_GET_ITEM(args[1], O_BASE))) {
        PyErr_SetString(PyExc_TypeError, "module hook: malformed state");
        return -1;
    }
    *shared = &PyTuple_GET_ITEM(args[0], 0);
    *own = &PyTuple_GET_ITEM(args[1], 0);
    return 0;
}

/* The engine's plain context (a new reference) when it holds, else NULL (an error set on failure) */
static PyObject *held_context(PyObject *engine) {
    PyObject *plain = PyObject_GetAttr(engine, s_plain);
    if (plain == Py_None) {
        Py_CLEAR(plain);
    } else if (plain != NULL && plain_items(plain) == NULL) {
        Py_CLEAR(plain);
    }
    return plain;
}

/* held_context, or at a window's first recorded call the context DumpEngine.open_plain opens then */
static PyObject *window_context(PyObject *engine) {
    PyObject *plain = held_context(engine);
    if (plain != NULL || PyErr_Occurred()) {
        return plain;
    }
    PyObject *opened = PyObject_CallMethodNoArgs(engine, s_open_plain);
    if (opened == NULL) {
        return NULL;
    }
    Py_DECREF(opened);
    return held_context(engine);
}

/* 1 when `value` is a list or tuple (Python's gates walk those), 0 when not */
static int is_sequence(PyObject *value) {
    return PyList_Check(value) || PyTuple_Check(value);
}

/* 1 when one of the values is a list or tuple holding a tensor: Python's gates gate its items (torch.cat's
 * list); a shape's tuple (layer_norm's) is passed as it is by both */
static int gated_inside(PyObject *tuple, PyObject *tensor_type) {
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(tuple); i++) {
        PyObject *value = PyTuple_GET_ITEM(tuple, i);
        for (Py_ssize_t j = 0; is_sequence(value) && j < PySequence_Fast_GET_SIZE(value); j++) {
            if (PyObject_TypeCheck(PySequence_Fast_GET_ITEM(value, j), (PyTypeObject *)tensor_type)) {
                return 1;
            }
        }
    }
    return 0;
}

/* torch's grad mode now: 1, 0, or -1 on error */
static int grad_enabled(PyObject *const *shared) {
    PyObject *enabled = PyObject_CallNoArgs(shared[M_GRAD_ENABLED]);
    int on = enabled == NULL ? -1 : PyObject_IsTrue(enabled);
    Py_XDECREF(enabled);
    return on;
}

static int set_grad_mode(PyObject *const *shared, int on) {
    PyObject *done = PyObject_CallOneArg(shared[M_SET_GRAD], on ? Py_True : Py_False);
    Py_XDECREF(done);
    return done == NULL ? -1 : 0;
}

static int set_size(PyObject *call, PyObject *name, Py_ssize_t size) {
    PyObject *value = PyLong_FromSsize_t(size);
    int failed = value == NULL || call_set(call, name, value) < 0;
    Py_XDECREF(value);
    return failed ? -1 : 0;
}

/* gates._hook_new_tensor: `hook` on a tensor an op made just now, in its own hook dict when it has none,
 * beside the others under its own key when it has one */
static int hook_new_tensor(PyObject *const *shared, PyObject *tensor, PyObject *hook) {
    PyObject *grad_fn = PyObject_GetAttr(tensor, s_grad_fn);
    PyObject *hooks = grad_fn == NULL ? NULL : PyObject_GetAttr(tensor, s_backward_hooks);
    if (hooks == NULL) {
        Py_XDECREF(grad_fn);
        return -1;
    }
    int failed;
    if (grad_fn == Py_None) {
        PyObject *handle = PyObject_CallMethodOneArg(tensor, s_register_hook, hook);
        failed = handle == NULL;
        Py_XDECREF(handle);
    } else if (hooks != Py_None) { /* beside the hooks there (a child module's on the same output) */
        failed = PyObject_SetItem(hooks, hook, hook) < 0;
    } else {
        PyObject *fresh = PyObject_CallNoArgs(shared[M_HOOK_DICT]), *attached = NULL;
        failed = fresh == NULL || PyObject_SetAttr(tensor, s_backward_hooks, fresh) < 0 ||
                 (attached = PyObject_CallMethodOneArg(grad_fn, s_register_hook_dict, tensor)) == NULL ||
                 PyObject_SetItem(fresh, shared[M_OWN_KEY], hook) < 0;
        Py_XDECREF(fresh);
        Py_XDECREF(attached);
    }
    Py_DECREF(grad_fn);
    Py_DECREF(hooks);
    return failed ? -1 : 0;
}

/* The gradient hook of (call, side, (index,)): functools.partial(gates._HOOK, engine, call, side, path) */
static PyObject *gradient_hook(PyObject *const *shared, PyObject *call, PyObject *side, Py_ssize_t index) {
    PyObject *number = PyLong_FromSsize_t(index), *path = number == NULL ? NULL : PyTuple_Pack(1, number);
    Py_XDECREF(number);
    if (path == NULL) {
        return NULL;
    }
    PyObject *parts[5] = {shared[M_HOOK], shared[M_ENGINE], call, side, path};
    PyObject *hook = PyObject_Vectorcall(shared[M_PARTIAL], parts, 5, NULL);
    Py_DECREF(path);
    return hook;
}

/* gates.gate for one value: an identity view (value[...], an alias) of a differentiable strided tensor,
 * its gradient hooked (a new reference: the view, or `value` itself); *gated += 1 and *last = the view
 * when one is made */
static PyObject *gate_value(PyObject *const *shared, PyObject *tensor_type, PyObject *call, PyObject *side,
                            Py_ssize_t index, PyObject *value, int alias, Py_ssize_t *gated, PyObject **last) {
    if (!PyObject_TypeCheck(value, (PyTypeObject *)tensor_type)) {
        return new_ref(value);
    }
    int wanted = attribute_is(value, s_requires_grad, Py_True, 0);
    if (wanted > 0) {
        wanted = attribute_is(value, s_layout, shared[M_STRIDED], 0);
    }
    if (wanted <= 0) {
        return wanted < 0 ? NULL : new_ref(value);
    }
    PyObject *view = PyObject_GetItem(value, Py_Ellipsis);
    if (view == NULL) {
        return NULL;
    }
    /* a recorded call inside the module may get the view: it gets the original's statistics (views of
     * contiguous tensors find them through their base anyway, and only the tensor task keeps more) */
    int contiguous = alias ? attribute_is(value, s_is_contiguous, Py_True, 1) : 1;
    PyObject *aliased = contiguous != 0 ? NULL : PyObject_CallFunctionObjArgs(shared[M_ALIAS], view, value, NULL);
    PyObject *hook = contiguous < 0 || (contiguous == 0 && aliased == NULL) ? NULL :
        gradient_hook(shared, call, side, index);
    Py_XDECREF(aliased);
    if (hook == NULL || hook_new_tensor(shared, view, hook) < 0) {
        Py_XDECREF(hook);
        Py_DECREF(view);
        return NULL;
    }
    Py_DECREF(hook);
    *gated += 1;
    Py_XDECREF(*last);
    *last = new_ref(view);
    return view;
}

/* Call(forward, backward, True, True, parent, engine.generation): a call recorded with a trivial filter */
static PyObject *new_call(PyObject *const *shared, PyObject *forward, PyObject *backward, PyObject *parent) {
    PyObject *generation = PyObject_GetAttr(shared[M_ENGINE], s_generation), *call = NULL;
    if (generation != NULL) {
        PyObject *made[6] = {forward, backward, Py_True, Py_True, parent, generation};
        call = PyObject_Vectorcall(shared[M_CALL_TYPE], made, 6, NULL);
        Py_DECREF(generation);
    }
    return call;
}

/* DumpEngine.api_inputs: call.inputs = the walk of its arguments, the engine busy meanwhile */
static int walk_inputs(PyObject *const *shared, PyObject *const *context, PyObject *call, PyObject *args,
                       PyObject *kwargs) {
    PyObject *tensors = call_get(call, s_tensors_attr), *inputs = NULL;
    int failed = tensors == NULL || set_busy(shared[M_ENGINE], Py_True) < 0;
    if (!failed) {
        PyObject *walk_in[6] = {context[P_WHOLE], context[P_TENSOR], context[P_SLOW], args,
                                kwargs == NULL ? Py_None : kwargs, tensors};
        inputs = encode_args(NULL, walk_in, 6);
        failed = busy_off(shared[M_ENGINE]) < 0 || inputs == NULL || call_set(call, s_inputs, inputs) < 0;
    }
    Py_XDECREF(tensors);
    Py_XDECREF(inputs);
    return failed ? -1 : 0;
}

/* DumpEngine.module_begin with a trivial filter: the new Call, counted, opened and constructed, its
 * inputs walked (a new reference) */
static PyObject *begin_call(PyObject *const *shared, PyObject *const *context, PyObject *base, PyObject *args,
                            PyObject *kwargs) {
    PyObject *counters = context[P_COUNTERS], *modules = context[P_MODULES];
    PyObject *counted = PyDict_GetItemWithError(counters, base);
    Py_ssize_t index = counted == NULL ? 0 : PyLong_AsSsize_t(counted);
    if (PyErr_Occurred() || modules == Py_None) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_TypeError, "module_pre: the plain context has no module list");
        }
        return NULL;
    }
    PyObject *next = PyLong_FromSsize_t(index + 1);
    if (next == NULL || PyDict_SetItem(counters, base, next) < 0) {
        Py_XDECREF(next);
        return NULL;
    }
    Py_DECREF(next);
    Py_ssize_t open = PyList_GET_SIZE(modules);
    PyObject *parent = open ? PyList_GET_ITEM(modules, open - 1) : Py_None;
    PyObject *forward = indexed_name(base, ".forward.", index, "");
    PyObject *backward = forward == NULL ? NULL : indexed_name(base, ".backward.", index, "");
    PyObject *call = backward == NULL ? NULL : new_call(shared, forward, backward, parent);
    int failed = call == NULL || PyList_Append(modules, call) < 0 || construct_under(context, forward, parent) < 0 ||
                 walk_inputs(shared, context, call, args, kwargs) < 0;
    Py_XDECREF(forward);
    Py_XDECREF(backward);
    if (failed) {
        Py_XDECREF(call);
        return NULL;
    }
    return call;
}

/* The gates of a call's positional arguments (gates.gate with the engine busy): a new tuple of them, with
 * *gated the views made and *last the last one (a new reference, or NULL), or NULL on error */
static PyObject *gate_all(PyObject *const *shared, PyObject *tensor_type, PyObject *call, PyObject *args, int alias,
                          Py_ssize_t *gated, PyObject **last) {
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    PyObject *engine = shared[M_ENGINE], *views = PyTuple_New(n);
    *last = NULL;
    if (views == NULL || set_busy(engine, Py_True) < 0) {
        Py_XDECREF(views);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *view = gate_value(shared, tensor_type, call, k_output, i, PyTuple_GET_ITEM(args, i), alias, gated,
                                    last);
        if (view == NULL) {
            Py_CLEAR(views);
            break;
        }
        PyTuple_SET_ITEM(views, i, view);
    }
    if (busy_off(engine) < 0 || views == NULL) {
        Py_XDECREF(views);
        Py_CLEAR(*last);
        return NULL;
    }
    return views;
}

/* A module's argument gates: (gated args, kwargs) for torch, or None when none was gated (a new
 * reference); the call's open entry in `calls` then holds its last gate */
static PyObject *gate_arguments(PyObject *const *shared, PyObject *const *context, PyObject *calls, PyObject *call,
                                PyObject *args, PyObject *kwargs) {
    Py_ssize_t gated = 0;
    PyObject *last;
    PyObject *views = gate_all(shared, context[P_TENSOR], call, args, 1, &gated, &last);
    if (views == NULL) {
        return NULL;
    }
    int failed = 0;
    Py_ssize_t open = PyList_GET_SIZE(calls);
    if (open > 0) { /* what the module makes, it makes after its last gate */
        PyObject *entry = PyTuple_Pack(2, call, last == NULL ? Py_None : last);
        failed = entry == NULL || PyList_SetItem(calls, open - 1, entry) < 0; /* (which takes the entry) */
    }
    failed = failed || set_size(call, s_n_args, PyTuple_GET_SIZE(args)) < 0 || set_size(call, s_expect_in, gated) < 0;
    Py_XDECREF(last);
    if (failed || gated == 0) {
        Py_DECREF(views);
        return failed ? NULL : new_ref(Py_None);
    }
    PyObject *result = PyTuple_Pack(2, views, kwargs);
    Py_DECREF(views);
    return result;
}

/* module_pre(shared, own, module, args, kwargs) -> None or (args, kwargs): Hooks._pre_hook */
static PyObject *module_pre(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    PyObject *const *shared, *const *own;
    if (nargs != 5 || module_state(args, &shared, &own) < 0 || !PyTuple_Check(args[3]) ||
        !(args[4] == Py_None || PyDict_Check(args[4]))) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_TypeError, "module_pre(shared, own, module, args: tuple, kwargs)");
        }
        return NULL;
    }
    PyObject *engine = shared[M_ENGINE], *call_args = args[3], *kwargs = args[4];
    PyObject *busy = PyObject_GetAttr(engine, s_busy);
    int is_busy = busy == NULL ? -1 : PyObject_IsTrue(busy);
    Py_XDECREF(busy);
    if (is_busy != 0) {
        return is_busy < 0 ? NULL : new_ref(Py_None);
    }
    PyObject *plain = window_context(engine);
    if (plain != NULL && gated_inside(call_args, PyTuple_GET_ITEM(plain, P_TENSOR))) {
        Py_CLEAR(plain);
    }
    if (plain == NULL) {
        return PyErr_Occurred() ? NULL : PyObject_Vectorcall(own[O_PYTHON], args + 2, 3, NULL);
    }
    PyObject *const *context = &PyTuple_GET_ITEM(plain, 0), *mode, *result = NULL, *call = NULL;
    int grad = mode_aside(shared, &mode) < 0 ? -1 : grad_enabled(shared);
    if (grad >= 0 && set_grad_mode(shared, 0) == 0) {
        call = begin_call(shared, context, own[O_BASE], call_args, kwargs);
        if (set_grad_mode(shared, grad) < 0) {
            Py_CLEAR(call);
        }
    }
    PyObject *entry = call == NULL ? NULL : PyTuple_Pack(2, call, Py_None);
    if (entry != NULL && PyList_Append(own[O_CALLS], entry) == 0) {
        result = grad ? gate_arguments(shared, context, own[O_CALLS], call, call_args, kwargs) : new_ref(Py_None);
    }
    Py_XDECREF(entry);
    Py_XDECREF(call);
    Py_DECREF(plain);
    if (mode_back(shared, mode, 0) < 0) {
        Py_CLEAR(result);
    }
    return result;
}

/* Which outputs a call made (gates.gate_outputs' made_by_call): for a module, those whose autograd node
 * is newer than its last gate's (`mark`, that node's number; -1: not known, none); for an API call, those
 * that are none of its arguments (`among`: its arguments and their gates) */
typedef struct {
    Py_ssize_t mark;
    PyObject *among[2];
} Made;

/* The node number of `tensor`'s grad_fn, or -1 when it has none; -2 on error */
static Py_ssize_t node_number(PyObject *tensor) {
    PyObject *node = tensor == Py_None ? NULL : PyObject_GetAttr(tensor, s_grad_fn);
    Py_ssize_t number = -1;
    if (node != NULL && node != Py_None) {
        PyObject *value = PyObject_CallMethodNoArgs(node, s_sequence_nr);
        number = value == NULL ? -2 : PyLong_AsSsize_t(value);
        Py_XDECREF(value);
    }
    Py_XDECREF(node);
    return PyErr_Occurred() ? -2 : number;
}

/* gates.not_among: 1 when `tensor` is none of the values (nor an item of one that is a list or tuple) */
static int not_among(PyObject *const among[2], PyObject *tensor) {
    for (int k = 0; k < 2; k++) {
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(among[k]); i++) {
            PyObject *value = PyTuple_GET_ITEM(among[k], i);
            if (value == tensor) {
                return 0;
            }
            for (Py_ssize_t j = 0; is_sequence(value) && j < PySequence_Fast_GET_SIZE(value); j++) {
                if (PySequence_Fast_GET_ITEM(value, j) == tensor) {
                    return 0;
                }
            }
        }
    }
    return 1;
}

/* 1 when the output `value` is hooked itself (a plain strided tensor with a node, made by the call), 0
 * when it gets a gate, -1 on error */
static int hooked_itself(PyObject *const *shared, PyObject *tensor_type, const Made *made, PyObject *value) {
    if ((made->mark < 0 && made->among[0] == NULL) || Py_TYPE(value) != (PyTypeObject *)tensor_type) {
        return 0;
    }
    PyObject *grad_fn = PyObject_GetAttr(value, s_grad_fn);
    int own = grad_fn == NULL ? -1 : grad_fn == Py_None ? 0 : attribute_is(value, s_layout, shared[M_STRIDED], 0);
    Py_XDECREF(grad_fn);
    if (own > 0) {
        if (made->among[0] != NULL) {
            own = not_among(made->among, value);
        } else {
            Py_ssize_t made_at = node_number(value);
            own = made_at < -1 ? -1 : made_at > made->mark;
        }
    }
    return own;
}

/* The hooks of a call's outputs (gates.gate_outputs): an output the call made is hooked itself, any other
 * gets a gate. Outputs: a value, a list or a plain tuple of values that are not lists or tuples
 * (simple_output). The output to return (a new reference) and *hooked */
static PyObject *hook_outputs(PyObject *const *shared, PyObject *tensor_type, PyObject *call, const Made *made,
                              PyObject *output, Py_ssize_t *hooked) {
    int single = !is_sequence(output);
    Py_ssize_t n = single ? 1 : PySequence_Fast_GET_SIZE(output);
    PyObject *items = PyList_New(n), *ignored = NULL;
    for (Py_ssize_t i = 0; items != NULL && i < n; i++) {
        PyObject *value = single ? output : PySequence_Fast_GET_ITEM(output, i), *hooked_value = NULL;
        int own = hooked_itself(shared, tensor_type, made, value);
        if (own > 0) {
            PyObject *hook = gradient_hook(shared, call, k_input, i);
            hooked_value = hook == NULL || hook_new_tensor(shared, value, hook) < 0 ? NULL : new_ref(value);
            Py_XDECREF(hook);
            *hooked += hooked_value != NULL;
        } else if (own == 0) {
            hooked_value = gate_value(shared, tensor_type, call, k_input, i, value, 1, hooked, &ignored);
        }
        if (hooked_value == NULL) {
            Py_CLEAR(items);
            break;
        }
        PyList_SET_ITEM(items, i, hooked_value);
    }
    Py_XDECREF(ignored);
    if (items == NULL || single || PyList_Check(output)) {
        PyObject *result = items != NULL && single ? new_ref(PyList_GET_ITEM(items, 0)) : items;
        if (single) {
            Py_XDECREF(items);
        }
        return result;
    }
    PyObject *result = PyList_AsTuple(items);
    Py_DECREF(items);
    return result;
}

/* DumpEngine.backward_expect: the call's gradient slots, open until they arrive, and its backward
 * construct record where modules are recorded */
static int expect_backward(PyObject *const *shared, PyObject *const *context, PyObject *call, Py_ssize_t n_outputs,
                           Py_ssize_t hooked) {
    PyObject *n_args = call_get(call, s_n_args);
    Py_ssize_t args = n_args == NULL ? -1 : PyLong_AsSsize_t(n_args);
    Py_XDECREF(n_args);
    if (args < 0) {
        return -1;
    }
    PyObject *grad_in = PyList_New(n_outputs), *grad_out = PyList_New(args);
    for (Py_ssize_t i = 0; grad_in != NULL && i < n_outputs; i++) {
        PyList_SET_ITEM(grad_in, i, new_ref(Py_None));
    }
    for (Py_ssize_t i = 0; grad_out != NULL && i < args; i++) {
        PyList_SET_ITEM(grad_out, i, new_ref(Py_None));
    }
    PyObject *open = PyObject_GetAttr(shared[M_ENGINE], s_open_backward), *id = PyLong_FromVoidPtr(call);
    PyObject *parent = call_get(call, s_parent), *name = call_get(call, s_backward);
    PyObject *parent_name = parent == NULL ? NULL : parent == Py_None ? new_ref(Py_None) :
        call_get(parent, s_backward);
    int failed = grad_in == NULL || grad_out == NULL || open == NULL || id == NULL || parent_name == NULL ||
                 name == NULL || !PyDict_Check(open) || set_size(call, s_n_outputs, n_outputs) < 0 ||
                 set_size(call, s_expect_out, hooked) < 0 || call_set(call, s_grad_in, grad_in) < 0 ||
                 call_set(call, s_grad_out, grad_out) < 0 || PyDict_SetItem(open, id, call) < 0 ||
                 (context[P_MODULES] != Py_None &&
                  append_pair(context[P_METADATA], v_construct, name, parent_name) < 0);
    Py_XDECREF(grad_in);
    Py_XDECREF(grad_out);
    Py_XDECREF(open);
    Py_XDECREF(id);
    Py_XDECREF(parent);
    Py_XDECREF(name);
    Py_XDECREF(parent_name);
    return failed ? -1 : 0;
}

/* hooks._own_parameters: the module's parameters that are set, each object once (a new dict) */
static PyObject *own_parameters(PyObject *module) {
    PyObject *all = PyObject_GetAttr(module, s_parameters_dict);
    if (all == NULL || !PyDict_Check(all)) {
        if (all != NULL) {
            PyErr_SetString(PyExc_TypeError, "module_post: a module's _parameters must be a dict");
        }
        Py_XDECREF(all);
        return NULL;
    }
    PyObject *found = PyDict_New(), *key, *value;
    Py_ssize_t at = 0;
    while (found != NULL && PyDict_Next(all, &at, &key, &value)) {
        int seen = value == Py_None;
        Py_ssize_t other = 0;
        PyObject *other_key, *other_value;
        while (!seen && PyDict_Next(found, &other, &other_key, &other_value)) {
            seen = other_value == value; /* tied under two names: the first, as named_parameters lists it */
        }
        if (!seen && PyDict_SetItem(found, key, value) < 0) {
            Py_CLEAR(found);
        }
    }
    Py_DECREF(all);
    return found;
}

/* DumpEngine.module_end: the call closed, its forward entry (finish_call) */
static int end_call(PyObject *const *shared, PyObject *plain, PyObject *call, PyObject *module, PyObject *output,
                    int grad) {
    PyObject *modules = PyTuple_GET_ITEM(plain, P_MODULES);
    if (!PyList_Check(modules)) {
        PyErr_SetString(PyExc_TypeError, "module_post: the plain context has no module list");
        return -1;
    }
    for (Py_ssize_t i = PyList_GET_SIZE(modules) - 1; i >= 0; i--) { /* (it is open once: the last, mostly) */
        if (PyList_GET_ITEM(modules, i) == call) {
            if (PyList_SetSlice(modules, i, i + 1, NULL) < 0) {
                return -1;
            }
            break;
        }
    }
    PyObject *parameters = own_parameters(module);
    if (parameters == NULL || set_grad_mode(shared, 0) < 0) {
        Py_XDECREF(parameters);
        return -1;
    }
    PyObject *finish[4] = {plain, call, output, parameters};
    PyObject *done = finish_call(NULL, finish, 4);
    Py_DECREF(parameters);
    int failed = done == NULL;
    Py_XDECREF(done);
    if (set_grad_mode(shared, grad) < 0) {
        failed = 1;
    }
    return failed ? -1 : 0;
}

/* 1 when a post hook can do `output` in C: a tensor or anything else, or a list or plain tuple of values
 * that are not lists or tuples */
static int simple_output(PyObject *output) {
    if (!is_sequence(output)) {
        return 1;
    }
    if (PyTuple_Check(output) && !PyTuple_CheckExact(output)) {
        return 0;
    }
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(output); i++) {
        if (is_sequence(PySequence_Fast_GET_ITEM(output, i))) {
            return 0;
        }
    }
    return 1;
}

/* The post hook's work for `call` (its entry just taken from `calls`): the new output, or None */
static PyObject *finish_module(PyObject *const *shared, PyObject *plain, PyObject *call, PyObject *last,
                               PyObject *module, PyObject *output) {
    PyObject *const *context = &PyTuple_GET_ITEM(plain, 0), *engine = shared[M_ENGINE], *result = NULL;
    int grad = grad_enabled(shared);
    int backward = grad <= 0 ? grad : attribute_is(call, s_want_backward, Py_True, 0);
    if (backward < 0) {
        return NULL;
    }
    if (backward) {
        Py_ssize_t hooked = 0;
        if (set_busy(engine, Py_True) < 0) {
            return NULL;
        }
        Made made = {node_number(last), {NULL, NULL}};
        result = made.mark < -1 ? NULL : hook_outputs(shared, context[P_TENSOR], call, &made, output, &hooked);
        if (busy_off(engine) < 0) {
            Py_CLEAR(result);
        }
        PyObject *expected = result == NULL ? NULL : call_get(call, s_expect_in);
        int expect_in = expected == NULL ? -1 : PyObject_IsTrue(expected);
        Py_XDECREF(expected);
        Py_ssize_t n_outputs = is_sequence(output) ? PySequence_Fast_GET_SIZE(output) : 1;
        if (expect_in < 0 || ((expect_in || hooked) && expect_backward(shared, context, call, n_outputs, hooked) < 0)) {
            Py_CLEAR(result);
            return NULL;
        }
    }
    if (end_call(shared, plain, call, module, output, grad) < 0) {
        Py_XDECREF(result);
        return NULL;
    }
    return result == NULL ? new_ref(Py_None) : result;
}

/* module_post(shared, own, module, args, kwargs, output) -> None or the output to use: Hooks._post_hook */
static PyObject *module_post(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    PyObject *const *shared, *const *own;
    if (nargs != 6 || module_state(args, &shared, &own) < 0) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_TypeError, "module_post(shared, own, module, args, kwargs, output)");
        }
        return NULL;
    }
    PyObject *calls = own[O_CALLS], *output = args[5];
    Py_ssize_t open = PyList_GET_SIZE(calls);
    if (open == 0) {
        return new_ref(Py_None);
    }
    PyObject *plain = simple_output(output) ? held_context(shared[M_ENGINE]) : NULL;
    if (plain == NULL) {
        return PyErr_Occurred() ? NULL : PyObject_Vectorcall(own[O_PYTHON], args + 2, 4, NULL);
    }
    PyObject *entry = new_ref(PyList_GET_ITEM(calls, open - 1));
    if (PyList_SetSlice(calls, open - 1, open, NULL) < 0 || !PyTuple_Check(entry) || PyTuple_GET_SIZE(entry) != 2) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_TypeError, "module_post: an open call must be (call, last gate)");
        }
        Py_DECREF(entry);
        Py_DECREF(plain);
        return NULL;
    }
    PyObject *call = PyTuple_GET_ITEM(entry, 0), *result = Py_None, *mode;
    if (call != Py_None) {
        result = mode_aside(shared, &mode) < 0 ? NULL :
            finish_module(shared, plain, call, PyTuple_GET_ITEM(entry, 1), args[2], output);
        if (mode_back(shared, mode, 0) < 0) {
            Py_CLEAR(result);
        }
    } else {
        Py_INCREF(result);
    }
    Py_DECREF(entry);
    Py_DECREF(plain);
    return result;
}

/* A new reference to a weak reference's object; NULL when it died (no error set) or on error */
static PyObject *alive_target(PyObject *ref) {
#if PY_VERSION_HEX >= 0x030D0000
    PyObject *target = NULL;
    return PyWeakref_GetRef(ref, &target) < 0 ? NULL : target;
#else
    PyObject *target = PyWeakref_GetObject(ref);
    return target == NULL || target == Py_None ? NULL : new_ref(target);
#endif
}

/* 1 when `owner.name` is a dict whose values are, in order, the objects whose addresses `ids` holds
 * (bytes: one native pointer each); -1 on error */
static int same_dict_values(PyObject *owner, PyObject *name, PyObject *ids) {
    PyObject *members = PyObject_GetAttr(owner, name), *key, *value;
    Py_ssize_t count = PyBytes_GET_SIZE(ids) / (Py_ssize_t)sizeof(void *);
    int same = members == NULL ? -1 : PyDict_Check(members) && PyDict_GET_SIZE(members) == count;
    const char *expected = PyBytes_AS_STRING(ids);
    Py_ssize_t position = 0, i = 0;
    while (same > 0 && PyDict_Next(members, &position, &key, &value)) {
        void *address;
        memcpy(&address, expected + i++ * (Py_ssize_t)sizeof(void *), sizeof address);
        same = address == (void *)value;
    }
    Py_XDECREF(members);
    return same;
}

/* same_members(items) -> bool: ModelPlan.still_valid's check. `items`: a list of (a weak reference to
 * an object, attribute name, bytes of addresses); True when every object is alive and each attribute is
 * a dict of the objects at those addresses, in order (the plan's own modules and parameters, which it
 * watches die: their addresses cannot be reused meanwhile). Those tuples, made again in Python, cost ~90
 * us a window; the addresses are packed (not a tuple of ints) as the check runs on a cold cache at every
 * start(), where each int object was a cache miss of its own. */
static PyObject *same_members(PyObject *self, PyObject *items) {
    if (!PyList_Check(items)) {
        PyErr_SetString(PyExc_TypeError, "same_members(items: list)");
        return NULL;
    }
    int same = 1;
    for (Py_ssize_t i = 0; same > 0 && i < PyList_GET_SIZE(items); i++) {
        PyObject *item = PyList_GET_ITEM(items, i);
        if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 3 || !PyWeakref_CheckRef(PyTuple_GET_ITEM(item, 0)) ||
            !PyBytes_Check(PyTuple_GET_ITEM(item, 2))) {
            PyErr_SetString(PyExc_TypeError, "same_members: an item must be (weak reference, name, bytes of addresses)");
            return NULL;
        }
        PyObject *owner = alive_target(PyTuple_GET_ITEM(item, 0));
        if (owner == NULL) {
            same = PyErr_Occurred() ? -1 : 0;
            break;
        }
        same = same_dict_values(owner, PyTuple_GET_ITEM(item, 1), PyTuple_GET_ITEM(item, 2));
        Py_DECREF(owner);
    }
    return same < 0 ? NULL : PyBool_FromLong(same);
}
