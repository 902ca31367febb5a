/* mode_dispatch: DumpMode.__torch_function__ (msprobe/pytorch/hooks.py) without its Python frame, for the
 * calls that need no Python: a function outside the API list, or any call while the engine is busy, runs
 * as is; while the engine's plain context is set (or opened by the window's first recorded call), a call
 * without autograd is record_plain_call's and one with autograd record_grad_call's (when the mode was
 * given the module hooks' state). Every other call goes to the Python method. Torch calls a mode's
 * __torch_function__ a few hundred times a step (an optimizer's ops, tensor attribute reads): the frame
 * and its lookups were ~1 us of each.
 *
 * Included by _native.c after _grad_call.c.
 */

/* mode_dispatch(state, mode, func, types, args=(), kwargs=None) with state = (table: func -> key, engine,
 * is_grad_enabled, method: DumpMode.__torch_function__, unbound, the module hooks' state or None). Bound to
 * the mode (types.MethodType over a functools.partial holding `state`), it is the mode's
 * __torch_function__. */
static PyObject *mode_dispatch(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    PyObject *state = nargs >= 1 ? args[0] : NULL;
    if (state == NULL || !PyTuple_Check(state) || PyTuple_GET_SIZE(state) != 5 ||
        !PyDict_Check(PyTuple_GET_ITEM(state, 0)) || nargs < 4) {
        PyErr_SetString(PyExc_TypeError, "mode_dispatch(state, mode, func, types, args=(), kwargs=None)");
        return NULL;
    }
    PyObject *table = PyTuple_GET_ITEM(state, 0), *engine = PyTuple_GET_ITEM(state, 1);
    PyObject *method = PyTuple_GET_ITEM(state, 3);
    PyObject *func = args[2], *call_args = nargs > 4 ? args[4] : NULL, *call_kwargs = nargs > 5 ? args[5] : Py_None;
    if (kwnames != NULL || nargs > 6 || call_args == NULL || !PyTuple_Check(call_args) ||
        !(call_kwargs == Py_None || PyDict_Check(call_kwargs))) { /* called otherwise than torch calls it */
        return PyObject_Vectorcall(method, args + 1, nargs - 1, kwnames);
    }
    PyObject *key = PyDict_GetItemWithError(table, func);
    if (key == NULL && PyErr_Occurred()) {
        PyErr_Clear(); /* not a key (unhashable): the method decides */
        return PyObject_Vectorcall(method, args + 1, nargs - 1, NULL);
    }
    PyObject *busy = PyObject_GetAttr(engine, s_busy);
    int is_busy = busy == NULL ? -1 : PyObject_IsTrue(busy);
    Py_XDECREF(busy);
    if (is_busy < 0) {
        return NULL;
    }
    if (key == NULL || is_busy) { /* not recorded: the function itself */
        PyObject *kwargs = call_kwargs != Py_None && PyDict_GET_SIZE(call_kwargs) ? call_kwargs : NULL;
        return PyObject_Call(func, call_args, kwargs);
    }
    PyObject *plain = window_context(engine);
    if (plain == NULL && PyErr_Occurred()) {
        return NULL;
    }
    if (plain != NULL) {
        PyObject *grad = PyObject_CallNoArgs(PyTuple_GET_ITEM(state, 2));
        int enabled = grad == NULL ? -1 : PyObject_IsTrue(grad);
        Py_XDECREF(grad);
        if (enabled < 0) {
            Py_DECREF(plain);
            return NULL;
        }
        if (!enabled) {
            PyObject *call[5] = {plain, key, func, call_args, call_kwargs};
            PyObject *output = record_plain_call(NULL, call, 5);
            Py_DECREF(plain);
            return output;
        }
        PyObject *hooks = PyTuple_GET_ITEM(state, 4);
        if (PyTuple_Check(hooks) && PyTuple_GET_SIZE(hooks) == M_SIZE) {
            PyObject *output = record_grad_call(&PyTuple_GET_ITEM(hooks, 0), plain, key, func, call_args, call_kwargs);
            if (output != NULL || PyErr_Occurred()) {
                Py_DECREF(plain);
                return output;
            }
        }
    }
    Py_XDECREF(plain);
    return PyObject_Vectorcall(method, args + 1, nargs - 1, NULL);
}
