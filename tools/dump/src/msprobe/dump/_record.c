/* torch_record: a CPU tensor's dump.json record (meta, statistics, CRC-32 in md5 mode) in one call.
 *
 * Included by _native.c (it uses reduce_block and crc32_ieee). The tensor is read only through Python's
 * attribute protocol (dtype, _version, is_contiguous(), data_ptr(), ...): no torch headers, no import.
 * It answers None for every tensor it does not handle (not a dense contiguous CPU block of a float kind
 * in `dtypes`, no version counter, a lazy negation, empty or above `max_numel` elements, a cached value
 * that is not a final dict) and msprobe/pytorch/stats.py makes that record instead.
 *
 * The statistics cache is the dict of msprobe/pytorch/content_cache.py, with its keys and values:
 * (id(root), storage_offset, numel, dtype, version) -> (weakref to root, statistics dict).
 */

static PyObject *s_stride, *s_dtype, *s_layout, *s_is_cpu, *s_version, *s_is_contiguous, *s_is_neg, *s_numel, *s_base,
    *s_storage_offset, *s_data_ptr, *s_shape, *s_requires_grad;
static PyObject *k_type, *k_dtype, *k_shape, *k_max, *k_min, *k_mean, *k_norm, *k_requires_grad, *k_md5,
    *v_tensor_type;

static int record_init(void) {
#define INTERN(var, text) if ((var = PyUnicode_InternFromString(text)) == NULL) return -1;
    INTERN(s_stride, "stride") INTERN(s_dtype, "dtype") INTERN(s_layout, "layout") INTERN(s_is_cpu, "is_cpu") INTERN(s_version, "_version")
    INTERN(s_is_contiguous, "is_contiguous") INTERN(s_is_neg, "is_neg") INTERN(s_numel, "numel")
    INTERN(s_base, "_base") INTERN(s_storage_offset, "storage_offset") INTERN(s_data_ptr, "data_ptr")
    INTERN(s_shape, "shape") INTERN(s_requires_grad, "requires_grad")
    INTERN(k_type, "type") INTERN(k_dtype, "dtype") INTERN(k_shape, "shape") INTERN(k_max, "Max")
    INTERN(k_min, "Min") INTERN(k_mean, "Mean") INTERN(k_norm, "Norm") INTERN(k_requires_grad, "requires_grad")
    INTERN(k_md5, "md5") INTERN(v_tensor_type, "torch.Tensor")
#undef INTERN
    return 0;
}

static PyObject *none_ref(void) {
    Py_INCREF(Py_None);
    return Py_None;
}

static PyObject *call_method(PyObject *object, PyObject *name) {
    PyObject *args[1] = {object};
    return PyObject_VectorcallMethod(name, args, 1 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
}

/* 1 when `object.name` / `object.name()` is `expected`, 0 when it is something else, -1 on error */
static int attribute_is(PyObject *object, PyObject *name, PyObject *expected, int call) {
    PyObject *value = call ? call_method(object, name) : PyObject_GetAttr(object, name);
    if (value == NULL) {
        return -1;
    }
    int same = value == expected;
    Py_DECREF(value);
    return same;
}

static PyObject *weak_target(PyObject *ref) {
#if PY_VERSION_HEX >= 0x030D0000
    PyObject *target = NULL;
    if (PyWeakref_GetRef(ref, &target) < 0) {
        return NULL;
    }
    Py_XDECREF(target); /* only compared by identity, while the caller holds the root */
    return target;
#else
    return PyWeakref_GetObject(ref);
#endif
}

#define MAX_DIMS 16

typedef struct {
    Py_ssize_t dims, size[MAX_DIMS], stride[MAX_DIMS];
} Layout;

/* The tensor's shape and strides; 0 when it has more than MAX_DIMS dimensions, -1 on error */
static int read_layout(PyObject *tensor, Layout *layout) {
    PyObject *strides = call_method(tensor, s_stride), *shape = PyObject_GetAttr(tensor, s_shape);
    int answer = -1;
    if (strides == NULL || shape == NULL) {
        goto done;
    }
    answer = 0;
    if (!PyTuple_Check(strides) || !PyTuple_Check(shape) || PyTuple_GET_SIZE(strides) != PyTuple_GET_SIZE(shape) ||
        PyTuple_GET_SIZE(shape) > MAX_DIMS) {
        goto done;
    }
    layout->dims = PyTuple_GET_SIZE(shape);
    for (Py_ssize_t i = 0; i < layout->dims; i++) {
        layout->stride[i] = PyLong_AsSsize_t(PyTuple_GET_ITEM(strides, i));
        layout->size[i] = PyLong_AsSsize_t(PyTuple_GET_ITEM(shape, i));
    }
    answer = PyErr_Occurred() ? -1 : 1;
done:
    Py_XDECREF(strides);
    Py_XDECREF(shape);
    return answer;
}

/* 1 when the elements fill one block of memory in some order (a transpose of a contiguous tensor), as
 * content_cache.dense decides */
static int layout_dense(const Layout *layout) {
    Py_ssize_t stride[MAX_DIMS], size[MAX_DIMS], dims = layout->dims, expected = 1;
    for (Py_ssize_t i = 0; i < dims; i++) { /* insertion sort by (stride, size) */
        Py_ssize_t j = i;
        for (; j > 0 && (stride[j - 1] > layout->stride[i] ||
                         (stride[j - 1] == layout->stride[i] && size[j - 1] > layout->size[i])); j--) {
            stride[j] = stride[j - 1];
            size[j] = size[j - 1];
        }
        stride[j] = layout->stride[i];
        size[j] = layout->size[i];
    }
    for (Py_ssize_t i = 0; i < dims; i++) {
        if (size[i] == 1) {
            continue;
        }
        if (stride[i] != expected) {
            return 0;
        }
        expected *= size[i];
    }
    return 1;
}

/* 1 when the elements lie in rows: the last dimension (of more than one element) has stride 1 (a slice
 * of the last dimension, a chunk of a fused projection) */
static int layout_rows(const Layout *layout) {
    return layout->dims >= 2 && layout->stride[layout->dims - 1] == 1 && layout->size[layout->dims - 1] > 1;
}

/* The statistics of a strided tensor in rows: each row in one pass, the rows' results combined */
static void reduce_rows(const char *data, const Layout *layout, int kind, Py_ssize_t item, double out[4]) {
    Py_ssize_t index[MAX_DIMS] = {0}, outer = layout->dims - 1, width = layout->size[outer];
    double high = -INFINITY, low = INFINITY, total = 0.0, squares = 0.0;
    int any = 0;
    for (;;) {
        Py_ssize_t offset = 0;
        for (Py_ssize_t d = 0; d < outer; d++) {
            offset += index[d] * layout->stride[d];
        }
        double row[4];
        reduce_block(data + offset * item, width, kind, row);
        high = !any || row[0] > high ? row[0] : high; /* a NaN row: all NaN below, from its squares */
        low = !any || row[1] < low ? row[1] : low;
        any = 1;
        total += row[2];
        squares += row[3];
        Py_ssize_t d = outer - 1;
        while (d >= 0 && ++index[d] == layout->size[d]) {
            index[d--] = 0;
        }
        if (d < 0) {
            break;
        }
    }
    out[0] = high; out[1] = low; out[2] = total; out[3] = squares;
    if (isnan(squares)) { /* a NaN in any row: every statistic NaN, as for one block */
        out[0] = out[1] = out[2] = NAN;
    }
}

/* The statistics of the block (a new dict), with "md5" when `md5` is set */
static PyObject *block_statistics(PyObject *tensor, Py_ssize_t numel, int kind, int md5, Py_ssize_t item,
                                  const Layout *rows) {
    PyObject *address = call_method(tensor, s_data_ptr);
    if (address == NULL) {
        return NULL;
    }
    const void *data = PyLong_AsVoidPtr(address);
    Py_DECREF(address);
    if (data == NULL) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_ValueError, "torch_record: null address");
        }
        return NULL;
    }
    double out[4];
    if (rows != NULL) {
        reduce_rows((const char *)data, rows, kind, item, out);
    } else {
        reduce_block(data, numel, kind, out);
    }
    PyObject *stats = Py_BuildValue("{OdOdOdOd}", k_max, out[0], k_min, out[1], k_mean, out[2] / (double)numel,
                                    k_norm, sqrt(out[3]));
    if (stats != NULL && md5) {
        char text[9];
        snprintf(text, sizeof text, "%08x", crc32_ieee(0, (const unsigned char *)data, (size_t)(numel * item)));
        PyObject *crc = PyUnicode_FromString(text);
        if (crc == NULL || PyDict_SetItem(stats, k_md5, crc) < 0) {
            Py_CLEAR(stats);
        }
        Py_XDECREF(crc);
    }
    return stats;
}

/* The cached statistics of `key` when its root is still `root` (borrowed), else NULL without error */
static PyObject *cached(PyObject *entries, PyObject *key, PyObject *root) {
    PyObject *hit = PyDict_GetItemWithError(entries, key);
    if (hit == NULL || !PyTuple_Check(hit) || PyTuple_GET_SIZE(hit) != 2) {
        return NULL;
    }
    PyObject *owner = weak_target(PyTuple_GET_ITEM(hit, 0));
    PyObject *value = PyTuple_GET_ITEM(hit, 1);
    return owner == root && PyDict_CheckExact(value) ? value : NULL;
}

static int store(PyObject *entries, PyObject *key, PyObject *root, PyObject *stats, Py_ssize_t limit) {
    if (PyDict_GET_SIZE(entries) >= limit) {
        PyDict_Clear(entries);
    }
    PyObject *ref = PyWeakref_NewRef(root, NULL);
    if (ref == NULL) {
        return -1;
    }
    PyObject *value = PyTuple_Pack(2, ref, stats);
    Py_DECREF(ref);
    int failed = value == NULL || PyDict_SetItem(entries, key, value) < 0;
    Py_XDECREF(value);
    return failed ? -1 : 0;
}

/* The statistics of `tensor` (a new reference): from the cache or computed and cached; Py_None when
 * the tensor is not one this path handles. */
static PyObject *tensor_statistics(PyObject *tensor, PyObject *dtype, int kind, PyObject *const *args) {
    PyObject *entries = args[0];
    Py_ssize_t limit = PyLong_AsSsize_t(args[2]), max_numel = PyLong_AsSsize_t(args[3]);
    int md5 = PyObject_IsTrue(args[5]);
    if ((limit == -1 || max_numel == -1 || md5 < 0) && PyErr_Occurred()) {
        return NULL;
    }
    int ok = attribute_is(tensor, s_layout, args[4], 0);
    if (ok > 0) ok = attribute_is(tensor, s_is_cpu, Py_True, 0);
    if (ok > 0) ok = attribute_is(tensor, s_is_neg, Py_False, 1);
    Layout layout;
    int rows = 0;
    if (ok > 0) {
        ok = attribute_is(tensor, s_is_contiguous, Py_True, 1);
        if (ok == 0 && !md5) { /* CRC-32 follows the element order; statistics do not: a dense block or rows */
            ok = read_layout(tensor, &layout);
            if (ok > 0 && !layout_dense(&layout)) {
                rows = ok = layout_rows(&layout);
            }
        }
    }
    if (ok <= 0) {
        return ok < 0 ? NULL : none_ref();
    }
    PyObject *version = PyObject_GetAttr(tensor, s_version);
    if (version == NULL) { /* an inference tensor: no version counter, never cached (Python's path) */
        PyErr_Clear();
        return none_ref();
    }
    PyObject *numel = call_method(tensor, s_numel), *base = PyObject_GetAttr(tensor, s_base);
    PyObject *offset = call_method(tensor, s_storage_offset), *key = NULL, *id = NULL, *stats = NULL;
    Py_ssize_t count = numel == NULL ? -1 : PyLong_AsSsize_t(numel);
    if (base == NULL || offset == NULL || count < 0) {
        goto done;
    }
    if (count == 0 || count > max_numel) {
        stats = none_ref();
        goto done;
    }
    /* content_cache.py's keys: a block by its contents, a strided tensor by itself */
    PyObject *root = rows ? tensor : base == Py_None ? tensor : base;
    id = PyLong_FromVoidPtr(root);
    if (rows && id != NULL) {
        Py_DECREF(offset);
        Py_DECREF(numel);
        offset = PyLong_FromLong(-1);
        numel = PyLong_FromLong(-1);
        if (offset == NULL || numel == NULL) {
            goto done;
        }
    }
    key = id == NULL ? NULL : PyTuple_Pack(5, id, offset, numel, dtype, version);
    if (key == NULL) {
        goto done;
    }
    stats = cached(entries, key, root);
    if (stats != NULL) {
        Py_INCREF(stats);
    } else if (!PyErr_Occurred()) {
        static const Py_ssize_t item_size[4] = {4, 2, 2, 8};
        stats = block_statistics(tensor, count, kind, md5, item_size[kind], rows ? &layout : NULL);
        if (stats != NULL && store(entries, key, root, stats, limit) < 0) {
            Py_CLEAR(stats);
        }
    }
done:
    Py_DECREF(version);
    Py_XDECREF(numel);
    Py_XDECREF(base);
    Py_XDECREF(offset);
    Py_XDECREF(id);
    Py_XDECREF(key);
    return stats;
}

/* torch_record(entries, dtypes, limit, max_numel, strided, md5, tensor) -> record or None.
 * dtypes: dtype -> (name, kind) for the kinds this path reduces; limit: the cache's size bound. */
static PyObject *torch_record(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 7 || !PyDict_Check(args[0]) || !PyDict_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "torch_record(entries: dict, dtypes: dict, limit, max_numel, strided, md5, tensor)");
        return NULL;
    }
    PyObject *tensor = args[6];
    PyObject *dtype = PyObject_GetAttr(tensor, s_dtype);
    if (dtype == NULL) {
        return NULL;
    }
    PyObject *info = PyDict_GetItemWithError(args[1], dtype);
    if (info == NULL || !PyTuple_Check(info) || PyTuple_GET_SIZE(info) != 2) {
        Py_DECREF(dtype);
        return PyErr_Occurred() ? NULL : none_ref();
    }
    long kind = PyLong_AsLong(PyTuple_GET_ITEM(info, 1));
    if (kind < KIND_F32 || kind > KIND_F64) {
        Py_DECREF(dtype);
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_ValueError, "torch_record: unknown kind");
        }
        return NULL;
    }
    PyObject *stats = tensor_statistics(tensor, dtype, (int)kind, args);
    Py_DECREF(dtype);
    if (stats == NULL || stats == Py_None) {
        return stats;
    }
    PyObject *shape = PyObject_GetAttr(tensor, s_shape), *grad = PyObject_GetAttr(tensor, s_requires_grad);
    PyObject *dims = shape == NULL ? NULL : PySequence_List(shape), *record = NULL;
    if (dims != NULL && grad != NULL) {
        record = Py_BuildValue("{OOOOOOOOOOOOOOOO}", k_type, v_tensor_type, k_dtype, PyTuple_GET_ITEM(info, 0),
                               k_shape, dims, k_max, PyDict_GetItem(stats, k_max), k_min, PyDict_GetItem(stats, k_min),
                               k_mean, PyDict_GetItem(stats, k_mean), k_norm, PyDict_GetItem(stats, k_norm),
                               k_requires_grad, grad);
        PyObject *md5 = record == NULL ? NULL : PyDict_GetItem(stats, k_md5);
        if (md5 != NULL && PyDict_SetItem(record, k_md5, md5) < 0) {
            Py_CLEAR(record);
        }
    }
    Py_XDECREF(shape);
    Py_XDECREF(grad);
    Py_XDECREF(dims);
    Py_DECREF(stats);
    return record;
}


/* ----- encode_args / encode_outputs: what Encoder.args / Encoder.outputs return, in C ------------ */

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
    PyObject *slow;       /* Encoder.encode(value, role, position, out, depth): whatever this leaves */
    PyObject *out;        /* the call's pending tensors, for slow */
    PyObject *role;       /* "input", "output" or the keyword */
    PyObject *position[MAX_DEPTH + 2]; /* the value's position: ints and dict keys (new references) */
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
