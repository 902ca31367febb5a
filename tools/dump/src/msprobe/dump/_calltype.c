/* Call: msprobe.dump.calls.Call as a C type, the same attributes with the same defaults. A dumped step
 * makes one for every module call and every API call with autograd; the Python class's __init__ (a
 * frame, thirteen attribute stores, two lists) was ~1.5 us of each, this is ~0.2 us. Python code reads
 * and writes its attributes as it did (any object in each: member descriptors).
 *
 * Included by _native.c before _call.c.
 */

typedef struct {
    PyObject_HEAD
    PyObject *forward, *backward, *want_forward, *want_backward, *inputs, *tensors, *parent, *grad_in, *grad_out,
        *expect_in, *expect_out, *got_in, *got_out, *generation, *n_outputs, *n_args, *emitted;
} CallObject;

#define CALL_MEMBER(name) {#name, T_OBJECT_EX, offsetof(CallObject, name), 0, NULL}
static PyMemberDef call_members[] = {
    CALL_MEMBER(forward), CALL_MEMBER(backward), CALL_MEMBER(want_forward), CALL_MEMBER(want_backward),
    CALL_MEMBER(inputs), CALL_MEMBER(tensors), CALL_MEMBER(parent), CALL_MEMBER(grad_in), CALL_MEMBER(grad_out),
    CALL_MEMBER(expect_in), CALL_MEMBER(expect_out), CALL_MEMBER(got_in), CALL_MEMBER(got_out),
    CALL_MEMBER(generation), CALL_MEMBER(n_outputs), CALL_MEMBER(n_args), CALL_MEMBER(emitted),
    {NULL, 0, 0, 0, NULL},
};
#undef CALL_MEMBER

#define CALL_FIELDS 17 /* the members above, in order: CallObject's pointers after the header */

static PyObject **call_fields(CallObject *call) {
    return &call->forward;
}

static int call_traverse(CallObject *call, visitproc visit, void *arg) {
    PyObject **fields = call_fields(call);
    for (int i = 0; i < CALL_FIELDS; i++) {
        Py_VISIT(fields[i]);
    }
    return 0;
}

static int call_clear(CallObject *call) {
    PyObject **fields = call_fields(call);
    for (int i = 0; i < CALL_FIELDS; i++) {
        Py_CLEAR(fields[i]);
    }
    return 0;
}

static void call_dealloc(CallObject *call) {
    PyObject_GC_UnTrack(call);
    call_clear(call);
    Py_TYPE(call)->tp_free((PyObject *)call);
}

static PyTypeObject CallType;
static PyObject *zero;

/* Call(forward, backward, want_forward, want_backward, parent, generation) */
static PyObject *call_vectorcall(PyObject *type, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs != 6 || (kwnames != NULL && PyTuple_GET_SIZE(kwnames) != 0)) {
        PyErr_SetString(PyExc_TypeError, "Call(forward, backward, want_forward, want_backward, parent, generation)");
        return NULL;
    }
    CallObject *call = PyObject_GC_New(CallObject, (PyTypeObject *)type);
    if (call == NULL) {
        return NULL;
    }
    PyObject **given[6] = {&call->forward, &call->backward, &call->want_forward, &call->want_backward,
                           &call->parent, &call->generation};
    for (int i = 0; i < 6; i++) {
        *given[i] = args[i];
        Py_INCREF(args[i]);
    }
    call->inputs = Py_None;
    Py_INCREF(Py_None);
    call->emitted = Py_False;
    Py_INCREF(Py_False);
    PyObject **counts[6] = {&call->expect_in, &call->expect_out, &call->got_in, &call->got_out, &call->n_outputs,
                            &call->n_args};
    for (int i = 0; i < 6; i++) {
        *counts[i] = zero;
        Py_INCREF(zero);
    }
    call->tensors = PyList_New(0);
    call->grad_in = PyList_New(0);
    call->grad_out = PyList_New(0);
    PyObject_GC_Track(call);
    if (call->tensors == NULL || call->grad_in == NULL || call->grad_out == NULL) {
        Py_DECREF(call);
        return NULL;
    }
    return (PyObject *)call;
}

static PyObject *call_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    if (!PyTuple_Check(args)) {
        PyErr_BadInternalCall();
        return NULL;
    }
    Py_ssize_t nkw = kwargs == NULL ? 0 : PyDict_GET_SIZE(kwargs);
    if (nkw != 0) {
        PyErr_SetString(PyExc_TypeError, "Call() takes positional arguments only");
        return NULL;
    }
    return call_vectorcall((PyObject *)type, &PyTuple_GET_ITEM(args, 0), (size_t)PyTuple_GET_SIZE(args), NULL);
}

static PyTypeObject CallType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "msprobe.dump.calls.Call",
    .tp_doc = "One recorded API or module call; keeps what its backward entry needs.",
    .tp_basicsize = sizeof(CallObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_traverse = (traverseproc)call_traverse,
    .tp_clear = (inquiry)call_clear,
    .tp_dealloc = (destructor)call_dealloc,
    .tp_members = call_members,
    .tp_new = call_new,
    .tp_vectorcall = call_vectorcall,
};

static PyObject *call_names[CALL_FIELDS]; /* the members' names, interned: the s_* names of the C paths */

/* The offset of the field `name` (an interned str) in a C Call, or -1: another object, another name */
static Py_ssize_t call_offset(PyObject *call, PyObject *name) {
    if (Py_TYPE(call) == &CallType) {
        for (int i = 0; i < CALL_FIELDS; i++) {
            if (call_names[i] == name) {
                return call_members[i].offset;
            }
        }
    }
    return -1;
}

/* getattr(call, name) (a new reference): a C Call's field read directly (PyObject_GetAttr's type lookup
 * and member descriptor were ~50 ns of each of the ~15 reads and writes a recorded call makes) */
static PyObject *call_get(PyObject *call, PyObject *name) {
    Py_ssize_t offset = call_offset(call, name);
    if (offset < 0) {
        return PyObject_GetAttr(call, name);
    }
    PyObject *value = *(PyObject **)((char *)call + offset);
    if (value == NULL) {
        PyErr_SetObject(PyExc_AttributeError, name);
        return NULL;
    }
    Py_INCREF(value);
    return value;
}

/* setattr(call, name, value) */
static int call_set(PyObject *call, PyObject *name, PyObject *value) {
    Py_ssize_t offset = call_offset(call, name);
    if (offset < 0 || value == NULL) {
        return PyObject_SetAttr(call, name, value);
    }
    PyObject **field = (PyObject **)((char *)call + offset), *old = *field;
    Py_INCREF(value);
    *field = value;
    Py_XDECREF(old);
    return 0;
}

/* `type` readied and added to `module` as `name` (the module's types: Call, MappedJournal) */
static int add_type(PyObject *module, PyTypeObject *type, const char *name) {
    if (PyType_Ready(type) < 0) {
        return -1;
    }
    Py_INCREF(type);
    if (PyModule_AddObject(module, name, (PyObject *)type) < 0) {
        Py_DECREF(type);
        return -1;
    }
    return 0;
}

static int call_type_init(PyObject *module) {
    for (int i = 0; i < CALL_FIELDS; i++) {
        if ((call_names[i] = PyUnicode_InternFromString(call_members[i].name)) == NULL) {
            return -1;
        }
    }
    return (zero = PyLong_FromLong(0)) == NULL ? -1 : add_type(module, &CallType, "Call");
}
