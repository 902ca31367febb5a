/* encode_args / encode_outputs: what Encoder.args / Encoder.outputs return, walked in C.
 *
 * Included by _native.c after _record.c (tensors are recorded by the record maker given, usually
 * torch_record). The walk follows Encoder.encode's cases in its order; whatever it does not know
 * (slices, framework objects, tensors the record maker declines, containers nested too deep) goes back
 * to Python (Encoder._after_walk) with its role, position and depth.
 */

static PyObject *k_value, *v_bool, *v_int, *v_float, *v_str, *k_input_args, *k_input_kwargs, *v_input, *v_output;

static int values_init(void) {
#define INTERN(var, text) if ((var = PyUnicode_InternFromString(text)) == NULL) return -1;
    INTERN(k_value, "value") INTERN(v_bool, "bool") INTERN(v_int, "int") INTERN(v_float, "float")
    INTERN(v_str, "str") INTERN(k_input_args, "input_args") INTERN(k_input_kwargs, "input_kwargs")
    INTERN(v_input, "input") INTERN(v_output, "output")
#undef INTERN
    return 0;
}

#define MAX_DEPTH 8 /* Encoder.encode's: deeper containers are described as a value of their type */

typedef struct {
    PyObject *whole;      /* tensor -> record or None (torch_record over the adapter's cache) */
    PyObject *tensor;     /* the framework's tensor type */
    PyObject *slow;       /* Encoder._after_walk(value, role, position, out, depth): whatever this leaves */
    PyObject *out;        /* the call's pending tensors, for slow */
    PyObject *role;       /* "input", "output" or the keyword */
    PyObject *position[MAX_DEPTH + 2]; /* the value's position: ints and dict keys (held by the loops) */
    Py_ssize_t length;
} Walk;

static PyObject *slow_path(Walk *walk, PyObject *value, int depth) {
    PyObject *position = PyTuple_New(walk->length), *level = PyLong_FromLong(depth), *result = NULL;
    if (position != NULL && level != NULL) {
        for (Py_ssize_t i = 0; i < walk->length; i++) {
            Py_INCREF(walk->position[i]);
            PyTuple_SET_ITEM(position, i, walk->position[i]);
        }
        PyObject *args[5] = {value, walk->role, position, walk->out, level};
        result = PyObject_Vectorcall(walk->slow, args, 5, NULL);
    }
    Py_XDECREF(position);
    Py_XDECREF(level);
    return result;
}

static PyObject *typed(PyObject *type, PyObject *value) {
    PyObject *record = PyDict_New();
    if (record != NULL && (PyDict_SetItem(record, k_type, type) < 0 || PyDict_SetItem(record, k_value, value) < 0)) {
        Py_CLEAR(record);
    }
    return record;
}

static PyObject *encode_one(Walk *walk, PyObject *value, int depth);

/* value's items, each at position + (index or key,) */
static PyObject *encode_container(Walk *walk, PyObject *value, int depth) {
    int is_dict = PyDict_Check(value);
    PyObject *result = is_dict ? PyDict_New() : PyList_New(0);
    if (result == NULL) {
        return NULL;
    }
    Py_ssize_t at = 0, index = 0;
    PyObject *key, *item;
    PyObject *items = is_dict ? NULL : PySequence_Fast(value, "a list or tuple");
    if (!is_dict && items == NULL) {
        Py_DECREF(result);
        return NULL;
    }
    while (is_dict ? PyDict_Next(value, &at, &key, &item) : index < PySequence_Fast_GET_SIZE(items)) {
        PyObject *place = is_dict ? (Py_INCREF(key), key) : PyLong_FromSsize_t(index);
        if (!is_dict) {
            item = PySequence_Fast_GET_ITEM(items, index);
        }
        index++;
        if (place == NULL) {
            goto fail;
        }
        walk->position[walk->length++] = place;
        Py_INCREF(item);
        PyObject *encoded = encode_one(walk, item, depth + 1);
        Py_DECREF(item);
        walk->length--;
        int failed = encoded == NULL;
        if (!failed) {
            if (is_dict) {
                PyObject *name = PyObject_Str(key);
                failed = name == NULL || PyDict_SetItem(result, name, encoded) < 0;
                Py_XDECREF(name);
            } else {
                failed = PyList_Append(result, encoded) < 0;
            }
        }
        Py_XDECREF(encoded);
        Py_DECREF(place);
        if (failed) {
            goto fail;
        }
    }
    Py_XDECREF(items);
    return result;
fail:
    Py_XDECREF(items);
    Py_DECREF(result);
    return NULL;
}

/* Encoder.encode's cases, in its order; the rest (slices, framework objects, ...) go to slow */
static PyObject *encode_one(Walk *walk, PyObject *value, int depth) {
    if (PyObject_TypeCheck(value, (PyTypeObject *)walk->tensor)) {
        PyObject *record = PyObject_CallOneArg(walk->whole, value);
        if (record != Py_None) {
            return record;
        }
        Py_DECREF(record);
        return slow_path(walk, value, depth);
    }
    if (value == Py_None) {
        return none_ref();
    }
    if (PyBool_Check(value)) {
        return typed(v_bool, value);
    }
    if (PyLong_Check(value)) {
        return typed(v_int, value);
    }
    if (PyFloat_Check(value)) {
        return typed(v_float, value);
    }
    if (PyUnicode_Check(value)) {
        return typed(v_str, value);
    }
    if ((PyList_Check(value) || PyTuple_Check(value) || PyDict_Check(value)) && depth < MAX_DEPTH &&
        walk->length < MAX_DEPTH + 1) {
        return encode_container(walk, value, depth);
    }
    return slow_path(walk, value, depth);
}

static int walk_args(PyObject *const *args, Py_ssize_t nargs, Py_ssize_t expected, Walk *walk, const char *usage) {
    if (nargs != expected || !PyList_Check(args[nargs - 1])) {
        PyErr_SetString(PyExc_TypeError, usage);
        return -1;
    }
    walk->whole = args[0];
    walk->tensor = args[1];
    walk->slow = args[2];
    walk->out = args[nargs - 1];
    walk->length = 0;
    if (!PyType_Check(walk->tensor)) {
        PyErr_SetString(PyExc_TypeError, usage);
        return -1;
    }
    return 0;
}

/* encode_args(whole, tensor_type, slow, args: tuple, kwargs: dict or None, out: list)
 *   -> {"input_args": [...], "input_kwargs": {...}} */
static PyObject *encode_args(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    Walk walk;
    if (walk_args(args, nargs, 6, &walk, "encode_args(whole, tensor_type, slow, args, kwargs, out)") < 0) {
        return NULL;
    }
    PyObject *positional = PySequence_Fast(args[3], "encode_args: args must be a sequence");
    if (positional == NULL) {
        return NULL;
    }
    PyObject *encoded_args = PyList_New(PySequence_Fast_GET_SIZE(positional)), *encoded_kwargs = PyDict_New();
    PyObject *result = NULL;
    if (encoded_args == NULL || encoded_kwargs == NULL) {
        goto done;
    }
    walk.role = v_input;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(positional); i++) {
        PyObject *index = PyLong_FromSsize_t(i);
        if (index == NULL) {
            goto done;
        }
        walk.position[0] = index;
        walk.length = 1;
        PyObject *encoded = encode_one(&walk, PySequence_Fast_GET_ITEM(positional, i), 0);
        Py_DECREF(index);
        if (encoded == NULL) {
            goto done;
        }
        PyList_SET_ITEM(encoded_args, i, encoded);
    }
    if (args[4] != Py_None) {
        if (!PyDict_Check(args[4])) {
            PyErr_SetString(PyExc_TypeError, "encode_args: kwargs must be a dict or None");
            goto done;
        }
        Py_ssize_t at = 0;
        PyObject *key, *value;
        while (PyDict_Next(args[4], &at, &key, &value)) {
            walk.role = key;
            walk.length = 0;
            Py_INCREF(value);
            PyObject *encoded = encode_one(&walk, value, 0);
            Py_DECREF(value);
            int failed = encoded == NULL || PyDict_SetItem(encoded_kwargs, key, encoded) < 0;
            Py_XDECREF(encoded);
            if (failed) {
                goto done;
            }
        }
    }
    result = PyDict_New();
    if (result != NULL && (PyDict_SetItem(result, k_input_args, encoded_args) < 0 ||
                           PyDict_SetItem(result, k_input_kwargs, encoded_kwargs) < 0)) {
        Py_CLEAR(result);
    }
done:
    Py_DECREF(positional);
    Py_XDECREF(encoded_args);
    Py_XDECREF(encoded_kwargs);
    return result;
}

/* encode_outputs(whole, tensor_type, slow, output, out: list) -> [records]: a list or tuple output
 * item by item at (i,), any other output as the one item at (0,) */
static PyObject *encode_outputs(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    Walk walk;
    if (walk_args(args, nargs, 5, &walk, "encode_outputs(whole, tensor_type, slow, output, out)") < 0) {
        return NULL;
    }
    walk.role = v_output;
    PyObject *output = args[3];
    int many = PyList_Check(output) || PyTuple_Check(output);
    PyObject *items = many ? PySequence_Fast(output, "") : PyTuple_Pack(1, output);
    if (items == NULL) {
        return NULL;
    }
    Py_ssize_t count = PySequence_Fast_GET_SIZE(items);
    PyObject *result = PyList_New(count);
    for (Py_ssize_t i = 0; result != NULL && i < count; i++) {
        PyObject *index = PyLong_FromSsize_t(i);
        PyObject *encoded = NULL;
        if (index != NULL) {
            walk.position[0] = index;
            walk.length = 1;
            encoded = encode_one(&walk, PySequence_Fast_GET_ITEM(items, i), 0);
            Py_DECREF(index);
        }
        if (encoded == NULL) {
            Py_CLEAR(result);
            break;
        }
        PyList_SET_ITEM(result, i, encoded);
    }
    Py_DECREF(items);
    return result;
}
