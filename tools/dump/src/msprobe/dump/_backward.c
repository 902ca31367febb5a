/* record_gradient: a gradient hook of a recorded call (msprobe/pytorch/gates.py), in C: what
 * DumpEngine.backward_grad and _emit_backward do with one gradient, with the torch function mode set
 * aside as gates._record_gradient does; record_param_gradient: a parameter's (DumpEngine.param_grad).
 *
 * Included by _native.c after _call.c (the backward entry goes to the journal as record_plain_call's
 * entries do, through the engine's plain context). Whatever this does not do itself (no plain context:
 * a gradient after stop(); a gradient inside a list argument; a tensor the record maker declines) it
 * hands to the Python hook, which does all of it.
 */

/* the names these read, beside _call.c's s_plain, s_tensors_attr ("tensors") and k_output ("output") */
static PyObject *s_generation, *s_emitted, *s_grad_in, *s_grad_out, *s_got_in, *s_got_out, *s_expect_in,
    *s_expect_out, *s_backward, *s_open_backward, *k_input;

static int backward_init(void) {
#define INTERN(var, text) if ((var = PyUnicode_InternFromString(text)) == NULL) return -1;
    INTERN(s_generation, "generation") INTERN(s_emitted, "emitted")
    INTERN(s_grad_in, "grad_in") INTERN(s_grad_out, "grad_out") INTERN(s_got_in, "got_in")
    INTERN(s_got_out, "got_out") INTERN(s_expect_in, "expect_in") INTERN(s_expect_out, "expect_out")
    INTERN(s_backward, "backward") INTERN(s_open_backward, "_open_backward") INTERN(k_input, "input")
#undef INTERN
    return 0;
}

enum { H_FALLBACK, H_MODES, H_POP, H_PUSH, H_SIZE }; /* the hooks' context */

/* 1 when the attributes hold equal values, 0 when not, -1 on error */
static int same_attribute(PyObject *a, PyObject *b, PyObject *name) {
    PyObject *x = PyObject_GetAttr(a, name), *y = x == NULL ? NULL : PyObject_GetAttr(b, name);
    int same = y == NULL ? -1 : PyObject_RichCompareBool(x, y, Py_EQ);
    Py_XDECREF(x);
    Py_XDECREF(y);
    return same;
}

static Py_ssize_t attribute_size(PyObject *call, PyObject *name) {
    PyObject *value = call_get(call, name);
    Py_ssize_t size = value == NULL ? -1 : PyLong_AsSsize_t(value);
    Py_XDECREF(value);
    return size;
}

/* call.grad_in / grad_out [index] = record, the list grown with None */
static int place_record(PyObject *call, PyObject *slots_name, Py_ssize_t index, PyObject *record) {
    PyObject *slots = call_get(call, slots_name);
    if (slots == NULL || !PyList_Check(slots)) {
        if (slots != NULL) {
            PyErr_SetString(PyExc_TypeError, "record_gradient: a call's gradient slots must be a list");
        }
        Py_XDECREF(slots);
        return -1;
    }
    int failed = 0;
    while (!failed && PyList_GET_SIZE(slots) <= index) {
        failed = PyList_Append(slots, Py_None) < 0;
    }
    if (!failed) {
        Py_INCREF(record);
        failed = PyList_SetItem(slots, index, record) < 0;
    }
    Py_DECREF(slots);
    return failed ? -1 : 0;
}

/* got_* += 1; 1 when both sides now have what they expect, 0 when not, -1 on error */
static int count_gradient(PyObject *call, int input_side) {
    Py_ssize_t got = attribute_size(call, input_side ? s_got_out : s_got_in);
    PyObject *next = got < 0 ? NULL : PyLong_FromSsize_t(got + 1);
    if (next == NULL || call_set(call, input_side ? s_got_out : s_got_in, next) < 0) {
        Py_XDECREF(next);
        return -1;
    }
    Py_DECREF(next);
    Py_ssize_t got_out = attribute_size(call, s_got_out), got_in = attribute_size(call, s_got_in);
    Py_ssize_t expect_out = attribute_size(call, s_expect_out), expect_in = attribute_size(call, s_expect_in);
    if (got_out < 0 || got_in < 0 || expect_out < 0 || expect_in < 0) {
        return PyErr_Occurred() ? -1 : 0;
    }
    return got_out >= expect_out && got_in >= expect_in;
}

/* _emit_backward: the call's backward entry, into the journal */
static int emit_backward(PyObject *const *context, PyObject *engine, PyObject *call) {
    if (call_set(call, s_emitted, Py_True) < 0) {
        return -1;
    }
    PyObject *open = PyObject_GetAttr(engine, s_open_backward), *id = PyLong_FromVoidPtr(call);
    int failed = open == NULL || id == NULL || !PyDict_Check(open) ||
                 (PyDict_Contains(open, id) == 1 && PyDict_DelItem(open, id) < 0);
    Py_XDECREF(open);
    Py_XDECREF(id);
    if (failed) {
        return -1;
    }
    PyObject *grad_in = call_get(call, s_grad_in), *grad_out = call_get(call, s_grad_out);
    PyObject *name = call_get(call, s_backward), *tensors = call_get(call, s_tensors_attr);
    PyObject *entry = PyDict_New(), *fresh = PyList_New(0);
    failed = grad_in == NULL || grad_out == NULL || name == NULL || tensors == NULL || entry == NULL ||
             fresh == NULL || !PyUnicode_Check(name) || !PyList_Check(tensors) ||
             PyDict_SetItem(entry, k_input, grad_in) < 0 || PyDict_SetItem(entry, k_output, grad_out) < 0 ||
             add_entry(context, name, entry, tensors, 0) < 0 || call_set(call, s_tensors_attr, fresh) < 0;
    Py_XDECREF(grad_in);
    Py_XDECREF(grad_out);
    Py_XDECREF(name);
    Py_XDECREF(tensors);
    Py_XDECREF(entry);
    Py_XDECREF(fresh);
    return failed ? -1 : 0;
}

/* The engine's plain context (*plain, a new reference holding its items) and the record its record maker
 * makes of `grad` (*record, new): 1; 0 when the Python hook is to do it (no context: a gradient after
 * stop(); a tensor the record maker does not take), both NULL; -1 on error */
static int gradient_record(PyObject *engine, PyObject *grad, PyObject **plain, PyObject **record) {
    *record = NULL;
    *plain = PyObject_GetAttr(engine, s_plain);
    if (*plain == NULL) {
        return -1;
    }
    PyObject *const *context = *plain == Py_None ? NULL : plain_items(*plain);
    if (context == NULL || !PyObject_TypeCheck(grad, (PyTypeObject *)context[P_TENSOR])) {
        Py_CLEAR(*plain);
        return PyErr_Occurred() ? -1 : 0;
    }
    *record = PyObject_CallOneArg(context[P_WHOLE], grad);
    if (*record == NULL || *record == Py_None) {
        Py_CLEAR(*record);
        Py_CLEAR(*plain);
        return PyErr_Occurred() ? -1 : 0;
    }
    return 1;
}

/* 1 done, 0 left to the Python hook (nothing changed yet), -1 on error */
static int record_here(PyObject *engine, PyObject *call, PyObject *side, PyObject *path, PyObject *grad) {
    int current = same_attribute(call, engine, s_generation);
    if (current <= 0) {
        return current < 0 ? -1 : 1; /* a gradient of another step's call: ignored, as in Python */
    }
    PyObject *emitted = call_get(call, s_emitted);
    int done = emitted == NULL ? -1 : PyObject_IsTrue(emitted);
    Py_XDECREF(emitted);
    if (done != 0) {
        return done < 0 ? -1 : 1;
    }
    int input_side = PyUnicode_Check(side) && PyUnicode_Compare(side, k_input) == 0;
    Py_ssize_t index = PyTuple_Check(path) && PyTuple_GET_SIZE(path) == 1 ?
        PyLong_AsSsize_t(PyTuple_GET_ITEM(path, 0)) : -1;
    if (index < 0) { /* inside a list argument (or not an index): Python's place() */
        PyErr_Clear();
        return 0;
    }
    PyObject *plain, *record;
    int result = gradient_record(engine, grad, &plain, &record);
    if (result <= 0) {
        return result;
    }
    PyObject *const *context = &PyTuple_GET_ITEM(plain, 0);
    result = place_record(call, input_side ? s_grad_in : s_grad_out, index, record);
    Py_DECREF(record);
    if (result == 0) {
        result = count_gradient(call, input_side);
        if (result > 0) {
            result = emit_backward(context, engine, call);
        }
    }
    Py_DECREF(plain);
    return result < 0 ? -1 : 1;
}

/* The torch function mode set aside (popped into *mode, NULL when none is active): tensors are read
 * outside it. 0, or -1 on error. */
static int mode_aside(PyObject *const *hooks, PyObject **mode) {
    *mode = NULL;
    PyObject *modes = PyObject_CallNoArgs(hooks[H_MODES]);
    Py_ssize_t active = modes == NULL ? -1 : PyLong_AsSsize_t(modes);
    Py_XDECREF(modes);
    if (active > 0) {
        *mode = PyObject_CallNoArgs(hooks[H_POP]);
        return *mode == NULL ? -1 : 0;
    }
    return active < 0 ? -1 : 0;
}

/* The mode back on its stack, an error set meanwhile kept; `done` as given, or -1 when this fails */
static int mode_back(PyObject *const *hooks, PyObject *mode, int done) {
    if (mode == NULL) {
        return done;
    }
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    PyObject *pushed = PyObject_CallOneArg(hooks[H_PUSH], mode);
    Py_DECREF(mode);
    if (pushed == NULL) {
        Py_XDECREF(type);
        Py_XDECREF(value);
        Py_XDECREF(traceback);
        return -1;
    }
    Py_DECREF(pushed);
    PyErr_Restore(type, value, traceback);
    return done;
}

/* A hook's work (`here` returns 1 done, 0 left to the Python hook, -1 error), the mode aside and the
 * engine busy meanwhile; then the Python hook, with args[1:], for what is left */
static PyObject *run_hook(PyObject *const *args, Py_ssize_t nargs, int (*here)(PyObject *const *),
                          const char *usage) {
    if (nargs != 6 || !PyTuple_Check(args[0]) || PyTuple_GET_SIZE(args[0]) != H_SIZE) {
        PyErr_SetString(PyExc_TypeError, usage);
        return NULL;
    }
    PyObject *const *hooks = &PyTuple_GET_ITEM(args[0], 0);
    PyObject *engine = args[1], *mode;
    if (mode_aside(hooks, &mode) < 0) {
        return NULL;
    }
    int done = set_busy(engine, Py_True) < 0 ? -1 : here(args);
    if (busy_off(engine) < 0) {
        done = -1;
    }
    done = mode_back(hooks, mode, done);
    if (done < 0) {
        return NULL;
    }
    if (done == 0) { /* the Python hook does it all, the mode set aside by itself */
        return PyObject_Vectorcall(hooks[H_FALLBACK], args + 1, nargs - 1, NULL);
    }
    Py_RETURN_NONE;
}

static int gradient_here(PyObject *const *args) {
    return record_here(args[1], args[2], args[3], args[4], args[5]);
}

/* record_gradient(hooks, engine, call, side, path, grad) -> None; hooks: (python_hook, modes, pop, push),
 * python_hook(engine, call, side, path, grad) being gates._record_gradient */
static PyObject *record_gradient(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    return run_hook(args, nargs, gradient_here, "record_gradient(hooks, engine, call, side, path, grad)");
}

/* A parameter's gradient: the entry {param: [record]} under its module's parameters_grad name (the
 * journal keeps each part; the step's end merges them) */
static int param_gradient_here(PyObject *const *args) {
    if (!PyUnicode_Check(args[2])) {
        return 0;
    }
    PyObject *plain, *record;
    int found = gradient_record(args[1], args[5], &plain, &record);
    if (found <= 0) {
        return found;
    }
    PyObject *const *context = &PyTuple_GET_ITEM(plain, 0);
    PyObject *records = PyList_New(1), *entry = records == NULL ? NULL : PyDict_New(), *tensors = PyList_New(0);
    if (records != NULL) {
        Py_INCREF(record);
        PyList_SET_ITEM(records, 0, record);
    }
    if (entry != NULL && PyDict_SetItem(entry, args[4], records) < 0) {
        Py_CLEAR(entry);
    }
    Py_XDECREF(records);
    int failed = entry == NULL || tensors == NULL || add_entry(context, args[2], entry, tensors, 0) < 0;
    Py_DECREF(record);
    Py_XDECREF(entry);
    Py_XDECREF(tensors);
    Py_DECREF(plain);
    return failed ? -1 : 1;
}

/* record_param_gradient(hooks, engine, entry_name, owner, param, grad) -> None; hooks as
 * record_gradient's, python_hook(engine, entry_name, owner, param, grad) doing DumpEngine.param_grad */
static PyObject *record_param_gradient(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    return run_hook(args, nargs, param_gradient_here,
                    "record_param_gradient(hooks, engine, entry_name, owner, param, grad)");
}
