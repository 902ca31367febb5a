/* record_grad_call: an API call made with autograd while the engine's plain context holds, in one C call:
 * what DumpMode.__torch_function__ and run_recorded (msprobe/pytorch/hooks.py) do for it without
 * record_nested: api_begin, api_inputs, the gates of its positional arguments and the hooks of its
 * outputs (gates.gate_call), backward_expect, then finish_call. A call whose arguments hold lists or
 * tuples of tensors (torch.cat's) goes to the Python method whole; an output other than a value, a list or a plain
 * tuple of values (a structseq, nested lists) has its hooks made by gates.gate_outputs.
 *
 * Included by _native.c after _module.c (the gates, the output hooks and the module state's M_* items).
 */

/* run_recorded's _inplace(name): in-place APIs get no gates (they write their argument) */
static int in_place(PyObject *name) {
    Py_ssize_t length = PyUnicode_GET_LENGTH(name);
    if (length >= 2 && PyUnicode_READ_CHAR(name, 0) == '_' && PyUnicode_READ_CHAR(name, 1) == '_') {
        return (length >= 3 && PyUnicode_READ_CHAR(name, 2) == 'i') ||
               PyUnicode_CompareWithASCIIString(name, "__setitem__") == 0;
    }
    return length > 0 && PyUnicode_READ_CHAR(name, length - 1) == '_';
}

/* The API's Call, counted and named as api_begin names it, its inputs walked with autograd off */
static PyObject *begin_api_call(PyObject *const *shared, PyObject *const *context, PyObject *key, PyObject *args,
                                PyObject *kwargs) {
    PyObject *forward = forward_name(context, key);
    if (forward == NULL) {
        return NULL;
    }
    Py_ssize_t cut = PyUnicode_GET_LENGTH(forward) - 7; /* "….forward" -> "….backward" */
    PyObject *stem = PyUnicode_Substring(forward, 0, cut);
    PyObject *backward = stem == NULL ? NULL : PyUnicode_Concat(stem, k_backward_tail);
    PyObject *modules = context[P_MODULES];
    PyObject *parent = modules != Py_None && PyList_GET_SIZE(modules) ?
        PyList_GET_ITEM(modules, PyList_GET_SIZE(modules) - 1) : Py_None;
    PyObject *call = backward == NULL ? NULL : new_call(shared, forward, backward, parent);
    Py_XDECREF(stem);
    Py_XDECREF(backward);
    Py_DECREF(forward);
    int failed = call == NULL || set_grad_mode(shared, 0) < 0;
    if (!failed) {
        failed = walk_inputs(shared, context, call, args, kwargs) < 0;
        if (set_grad_mode(shared, 1) < 0) {
            failed = 1;
        }
    }
    if (failed) {
        Py_XDECREF(call);
        return NULL;
    }
    return call;
}

/* gates.gate_call without nesting: the arguments' gates (no alias: only the API's own body sees them),
 * the function on them, its outputs hooked, backward_expect when anything was hooked. The output. */
static PyObject *gated_call(PyObject *const *shared, PyObject *const *context, PyObject *call, PyObject *func,
                            PyObject *args, PyObject *kwargs) {
    PyObject *engine = shared[M_ENGINE], *last;
    Py_ssize_t n = PyTuple_GET_SIZE(args), gated = 0, hooked = 0;
    PyObject *views = gate_all(shared, context[P_TENSOR], call, args, 0, &gated, &last);
    if (views == NULL) {
        return NULL;
    }
    Py_XDECREF(last);
    PyObject *output = set_busy(engine, Py_False) < 0 ? NULL : PyObject_Call(func, views, kwargs);
    PyObject *result = NULL;
    if (output != NULL && set_busy(engine, Py_True) == 0) {
        if (simple_output(output)) {
            Made made = {-1, {args, views}};
            result = hook_outputs(shared, context[P_TENSOR], call, &made, output, &hooked);
        } else { /* gate_outputs sets and clears the busy flag itself */
            PyObject *among = PyTuple_Pack(2, args, views), *made_by = NULL, *hooks = NULL;
            if (among != NULL) {
                made_by = PyObject_CallFunctionObjArgs(shared[M_PARTIAL], shared[M_NOT_AMONG], among, NULL);
            }
            if (made_by != NULL) {
                hooks = PyObject_CallFunctionObjArgs(shared[M_GATE_OUTPUTS], engine, call, output, made_by, NULL);
            }
            if (hooks != NULL && PyTuple_Check(hooks) && PyTuple_GET_SIZE(hooks) == 3) {
                result = new_ref(PyTuple_GET_ITEM(hooks, 0));
                hooked = PyLong_AsSsize_t(PyTuple_GET_ITEM(hooks, 2));
            } else if (hooks != NULL) { /* an error, never "not mine": the function has run already */
                PyErr_SetString(PyExc_TypeError, "gate_outputs must return (output, outputs, hooked)");
            }
            Py_XDECREF(among);
            Py_XDECREF(made_by);
            Py_XDECREF(hooks);
        }
        if (busy_off(engine) < 0 || PyErr_Occurred()) {
            Py_CLEAR(result);
        }
    }
    Py_DECREF(views);
    Py_ssize_t n_outputs = output == NULL ? 0 : is_sequence(output) ? PySequence_Size(output) : 1;
    Py_XDECREF(output);
    if (result != NULL && (gated || hooked) &&
        (set_size(call, s_n_args, n) < 0 || set_size(call, s_expect_in, gated) < 0 ||
         expect_backward(shared, context, call, n_outputs, hooked) < 0)) {
        Py_CLEAR(result);
    }
    return result;
}

/* record_grad_call(shared, plain, key, func, args: tuple, kwargs: dict or None) -> the output; None (not
 * an error) where the call's arguments are the Python method's to walk */
static PyObject *record_grad_call(PyObject *const *shared, PyObject *plain, PyObject *key, PyObject *func,
                                  PyObject *args, PyObject *kwargs) {
    PyObject *const *context = plain_items(plain);
    if (context == NULL || gated_inside(args, context[P_TENSOR]) || !PyTuple_Check(key) ||
        PyTuple_GET_SIZE(key) < 2 || !PyUnicode_Check(PyTuple_GET_ITEM(key, 1))) {
        return NULL;
    }
    if (kwargs != NULL && (kwargs == Py_None || PyDict_GET_SIZE(kwargs) == 0)) {
        kwargs = NULL;
    }
    PyObject *call = begin_api_call(shared, context, key, args, kwargs);
    if (call == NULL) {
        return NULL;
    }
    PyObject *output = in_place(PyTuple_GET_ITEM(key, 1)) ? PyObject_Call(func, args, kwargs) :
        gated_call(shared, context, call, func, args, kwargs);
    if (output != NULL) {
        PyObject *finish[3] = {plain, call, output};
        PyObject *done = set_grad_mode(shared, 0) < 0 ? NULL : finish_call(NULL, finish, 3);
        if (set_grad_mode(shared, 1) < 0 || done == NULL) {
            Py_CLEAR(output);
        }
        Py_XDECREF(done);
    }
    Py_DECREF(call);
    return output;
}
