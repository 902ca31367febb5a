/* torch_record: a CPU tensor's dump.json record (meta, statistics, CRC-32 in md5 mode) in one call.
 *
 * Included by _native.c (it uses reduce_block and crc32_ieee). The tensor is read only through Python's
 * attribute protocol (dtype, _version, is_contiguous(), data_ptr(), ...): no torch headers, no import.
 * It answers None for every tensor it does not handle (not a dense contiguous CPU block of a float kind
 * in `dtypes`, no version counter, a lazy negation, empty or above `max_numel` elements, a cached value
 * that is not a final dict) and msprobe/pytorch/stats.py makes that record instead.
 *
 * The statistics cache is the dict of msprobe/pytorch/content_cache.py, with its keys and values:
 * (id(root), storage_offset, numel, dtype, version) -> (weakref to root, statistics dict), which this
 * reads and writes for dense views only. Every record is also kept by tensor object: id(tensor) (an int
 * key, which the content keys never equal) -> (weakref to the tensor, version, dtype, record,
 * contiguous), and a tensor that is no view is found by that alone; a view covering all of its root at
 * offset 0 is served from the root's (root_statistics). Keying those by contents as well cost a key,
 * a weak reference and an entry a record, for hits the kept record gives anyway. The same object at
 * the same version, shape and dtype
 * has the same record but for requires_grad, read again: one API's output is the next one's input (an
 * optimizer's chain of in-place updates), and probing the layout again costs 4 method calls. The same
 * object, kept contiguous, at a new version (the next in-place update) has new statistics but probes
 * only what a new version can have changed (changed_record).
 */

static PyObject *s_stride, *s_dtype, *s_layout, *s_is_cpu, *s_version, *s_is_contiguous, *s_is_neg, *s_numel, *s_base,
    *s_storage_offset, *s_data_ptr, *s_shape, *s_requires_grad;
static PyObject *k_type, *k_dtype, *k_shape, *k_max, *k_min, *k_mean, *k_norm, *k_requires_grad, *k_md5,
    *v_tensor_type;

/* A dict of `count` items, keys and values in order (a new reference). Py_BuildValue parsed its format on
 * every record (a tenth of a small tensor's record); a record's eight items are set in a copy of a
 * template holding its keys, which a copy makes at its full size at once. */
static PyObject *record_template, *record_keys[8];
static PyObject *stats_key[5]; /* k_max, k_min, k_mean, k_norm, k_md5: a Stats' keys */

static PyObject *filled_dict(PyObject *template, PyObject *const *keys, PyObject *const *values, int count) {
    PyObject *dict = template != NULL ? PyDict_Copy(template) : PyDict_New();
    for (int i = 0; dict != NULL && i < count; i++) {
        if (values[i] == NULL || PyDict_SetItem(dict, keys[i], values[i]) < 0) {
            Py_CLEAR(dict);
        }
    }
    return dict;
}

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
    PyObject *statistics[5] = {k_max, k_min, k_mean, k_norm, k_md5};
    memcpy(stats_key, statistics, sizeof statistics);
    PyObject *keys[8] = {k_type, k_dtype, k_shape, k_max, k_min, k_mean, k_norm, k_requires_grad};
    PyObject *nones[8] = {Py_None, Py_None, Py_None, Py_None, Py_None, Py_None, Py_None, Py_None};
    memcpy(record_keys, keys, sizeof keys);
    record_template = filled_dict(NULL, record_keys, nones, 8);
    return record_template == NULL ? -1 : 0;
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

/* Out of the cycle collector's sight: an object of the caches that holds no reference a cycle could run
 * through (weak references without callback, numbers, strings, dtypes, dicts and lists of those). A
 * dumped step keeps ~2,000 of them; tracked, they made the young generation's collections several
 * times longer. */
static void untrack(PyObject *object) {
    if (object != NULL && PyObject_GC_IsTracked(object)) {
        PyObject_GC_UnTrack(object);
    }
}


static const Py_ssize_t FLOAT_ITEM_SIZE[4] = {4, 2, 2, 8}; /* bytes of an element of each KIND_* */

typedef struct {
    Py_ssize_t dims, size[MAX_DIMS], stride[MAX_DIMS];
} Layout;

/* torch_record's arguments, read once a call */
typedef struct {
    PyObject *entries;   /* the cache: content keys and tensor ids -> kept values */
    Py_ssize_t limit;    /* its size bound */
    Py_ssize_t max_numel;
    PyObject *strided;   /* torch.strided */
    int md5;
    int shared;          /* records are final (nothing adds to them): the kept one is handed out, not copied */
} RecordArgs;

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

/* The layout with the same elements in fewer, longer rows: statistics do not depend on the order, so the
 * dimensions are put in order of decreasing stride (broadcast ones, of stride 0, outermost) and each one
 * that continues the next is merged into it. A chunk of a fused projection viewed as heads and
 * transposed, (8, 4, 32, 16) of strides (6144, 16, 192, 1), becomes 256 rows of 64. */
static void merged_rows(const Layout *layout, Layout *merged) {
    Py_ssize_t n = 0;
    for (Py_ssize_t i = 0; i < layout->dims; i++) { /* insertion sort, dimensions of one element dropped */
        Py_ssize_t size = layout->size[i], stride = layout->stride[i], j = n++;
        if (size == 1) {
            n--;
            continue;
        }
        for (; j > 0 && (merged->stride[j - 1] != 0 && (stride == 0 || merged->stride[j - 1] < stride)); j--) {
            merged->size[j] = merged->size[j - 1];
            merged->stride[j] = merged->stride[j - 1];
        }
        merged->size[j] = size;
        merged->stride[j] = stride;
    }
    Py_ssize_t kept = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (kept > 0 && merged->stride[i] != 0 && merged->stride[kept - 1] == merged->size[i] * merged->stride[i]) {
            merged->size[kept - 1] *= merged->size[i]; /* the outer dimension continues this one */
            merged->stride[kept - 1] = merged->stride[i];
        } else {
            merged->size[kept] = merged->size[i];
            merged->stride[kept] = merged->stride[i];
            kept++;
        }
    }
    merged->dims = kept;
}

/* out (the results so far, `any` of them) combined with a chunk's: NaN anywhere makes every statistic NaN */
static void combine(double out[4], const double part[4], int any) {
    out[0] = !any || part[0] > out[0] ? part[0] : out[0];
    out[1] = !any || part[1] < out[1] ? part[1] : out[1];
    out[2] = any ? out[2] + part[2] : part[2];
    out[3] = any ? out[3] + part[3] : part[3];
}

/* The statistics of a strided tensor in rows (layout_rows): rows copied into a buffer one after another
 * and the buffer reduced when full (a row of 16 elements is too short to reduce on its own: 1,024 of
 * them took 67 us, gathered 5 us) */
static void reduce_rows(const char *data, const Layout *layout, int kind, Py_ssize_t item, double out[4]) {
    double buffer[2048]; /* 16 KB: in L1 with the rows it is copied from */
    Layout rows;
    merged_rows(layout, &rows);
    Py_ssize_t index[MAX_DIMS] = {0}, outer = rows.dims - 1, width = rows.size[outer];
    Py_ssize_t capacity = (Py_ssize_t)sizeof buffer / item, filled = 0;
    int any = 0;
    out[0] = out[1] = out[2] = out[3] = 0.0;
    for (;;) {
        Py_ssize_t offset = 0;
        for (Py_ssize_t d = 0; d < outer; d++) {
            offset += index[d] * rows.stride[d];
        }
        const char *row = data + offset * item;
        for (Py_ssize_t left = width; left > 0;) {
            Py_ssize_t take = left < capacity - filled ? left : capacity - filled;
            memcpy((char *)buffer + filled * item, row, (size_t)(take * item));
            filled += take;
            row += take * item;
            left -= take;
            if (filled == capacity) {
                double part[4];
                reduce_block(buffer, filled, kind, part);
                combine(out, part, any);
                any = 1;
                filled = 0;
            }
        }
        Py_ssize_t d = outer - 1;
        while (d >= 0 && ++index[d] == rows.size[d]) {
            index[d--] = 0;
        }
        if (d < 0) {
            break;
        }
    }
    if (filled > 0) {
        double part[4];
        reduce_block(buffer, filled, kind, part);
        combine(out, part, any);
    }
    if (isnan(out[3])) { /* a NaN in any chunk: every statistic NaN, as for one block */
        out[0] = out[1] = out[2] = NAN;
    }
}

/* A block's statistics as the records hold them: Max, Min, Mean, Norm and, in md5 mode, md5 (NULL
 * otherwise); new references. Kept out of a dict until a record or the content cache needs one: most
 * records are of tensors that are not views, whose statistics go straight into their record. */
typedef struct {
    PyObject *item[5];
} Stats;

static void stats_clear(Stats *stats) {
    for (int i = 0; i < 5; i++) {
        Py_CLEAR(stats->item[i]);
    }
}

/* The statistics a dict (a kept record, a cache entry) holds: 1, or 0 (nothing taken) when one is missing */
static int stats_of(PyObject *dict, int md5, Stats *stats) {
    for (int i = 0; i < 5; i++) {
        PyObject *value = i < 4 || md5 ? PyDict_GetItem(dict, stats_key[i]) : NULL;
        if (value == NULL && (i < 4 || md5)) {
            stats_clear(stats);
            return 0;
        }
        Py_XINCREF(value);
        stats->item[i] = value;
    }
    return 1;
}

/* dict[key] = value for each statistic there is: 0, or -1 on error */
static int set_stats(PyObject *dict, const Stats *stats) {
    for (int i = 0; i < 5; i++) {
        if (stats->item[i] != NULL && PyDict_SetItem(dict, stats_key[i], stats->item[i]) < 0) {
            return -1;
        }
    }
    return 0;
}

/* The statistics of the block, with md5 when `md5` is set: 0, or -1 on error (nothing set) */
static int block_statistics(PyObject *tensor, Py_ssize_t numel, int kind, int md5, Py_ssize_t item,
                            const Layout *rows, Stats *stats) {
    PyObject *address = call_method(tensor, s_data_ptr);
    if (address == NULL) {
        return -1;
    }
    const void *data = PyLong_AsVoidPtr(address);
    Py_DECREF(address);
    if (data == NULL) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_ValueError, "torch_record: null address");
        }
        return -1;
    }
    double out[4];
    if (rows != NULL) {
        reduce_rows((const char *)data, rows, kind, item, out);
    } else {
        reduce_block(data, numel, kind, out);
    }
    stats->item[0] = PyFloat_FromDouble(out[0]);
    stats->item[1] = PyFloat_FromDouble(out[1]);
    stats->item[2] = PyFloat_FromDouble(out[2] / (double)numel);
    stats->item[3] = PyFloat_FromDouble(sqrt(out[3]));
    stats->item[4] = NULL;
    if (md5) {
        char text[9];
        snprintf(text, sizeof text, "%08x", crc32_ieee(0, (const unsigned char *)data, (size_t)(numel * item)));
        stats->item[4] = PyUnicode_FromString(text);
    }
    for (int i = 0; i < 4 + md5; i++) {
        if (stats->item[i] == NULL) {
            stats_clear(stats);
            return -1;
        }
    }
    return 0;
}

/* The cached statistics of `key` when its root is still `root` (borrowed): 1, else 0 (none taken) */
static int cached(PyObject *entries, PyObject *key, PyObject *root, int md5, Stats *stats) {
    PyObject *hit = PyDict_GetItemWithError(entries, key);
    if (hit == NULL || !PyTuple_Check(hit) || PyTuple_GET_SIZE(hit) != 2) {
        return 0;
    }
    PyObject *owner = weak_target(PyTuple_GET_ITEM(hit, 0));
    PyObject *value = PyTuple_GET_ITEM(hit, 1);
    return owner == root && PyDict_CheckExact(value) && stats_of(value, md5, stats);
}

static int store(PyObject *entries, PyObject *key, PyObject *root, const Stats *stats, Py_ssize_t limit) {
    if (PyDict_GET_SIZE(entries) >= limit) {
        PyDict_Clear(entries);
    }
    PyObject *ref = PyWeakref_NewRef(root, NULL), *dict = PyDict_New(), *value = NULL;
    if (ref != NULL && dict != NULL && set_stats(dict, stats) == 0) {
        value = PyTuple_Pack(2, ref, dict);
    }
    untrack(ref);
    untrack(dict);
    untrack(value);
    untrack(key);
    Py_XDECREF(ref);
    Py_XDECREF(dict);
    int failed = value == NULL || PyDict_SetItem(entries, key, value) < 0;
    Py_XDECREF(value);
    return failed ? -1 : 0;
}

/* The statistics of a dense view at offset 0 covering its whole root (`count` elements) from the record
 * kept for the root at the view's version (a view shares its root's version counter): 1, else 0. Only
 * views are in the content cache: a tensor that is no view is found by its own kept record, so its
 * contents reach a view of it through that. */
static int root_statistics(PyObject *entries, PyObject *root, PyObject *dtype, PyObject *version, Py_ssize_t count,
                           int md5, Stats *stats) {
    PyObject *id = PyLong_FromVoidPtr(root);
    PyObject *known = id == NULL ? NULL : PyDict_GetItemWithError(entries, id);
    Py_XDECREF(id);
    if (known == NULL || !PyTuple_Check(known) || PyTuple_GET_SIZE(known) != 5 ||
        weak_target(PyTuple_GET_ITEM(known, 0)) != root || PyTuple_GET_ITEM(known, 2) != dtype ||
        PyTuple_GET_ITEM(known, 4) != Py_True) { /* kept contiguous: its statistics are of its block */
        return 0;
    }
    PyObject *kept = PyTuple_GET_ITEM(known, 3), *dims = PyDict_GetItem(kept, k_shape);
    Py_ssize_t numel = 1;
    for (Py_ssize_t i = 0; dims != NULL && PyList_Check(dims) && i < PyList_GET_SIZE(dims); i++) {
        numel *= PyLong_AsSsize_t(PyList_GET_ITEM(dims, i));
    }
    int same = dims == NULL || PyErr_Occurred() || numel != count ? 0
             : PyObject_RichCompareBool(version, PyTuple_GET_ITEM(known, 1), Py_EQ);
    if (same <= 0) {
        PyErr_Clear();
        return 0;
    }
    return stats_of(kept, md5, stats);
}

/* The statistics of `tensor`: 1 with `stats` set (from the cache or computed), 0 when the tensor is not
 * one this path handles, -1 on error. */
static int tensor_statistics(PyObject *tensor, PyObject *dtype, int kind, const RecordArgs *args,
                             PyObject **version_out, PyObject **shape_out, int *contiguous, Stats *stats) {
    PyObject *entries = args->entries;
    Py_ssize_t limit = args->limit, max_numel = args->max_numel;
    int md5 = args->md5;
    int ok = attribute_is(tensor, s_layout, args->strided, 0);
    if (ok > 0) ok = attribute_is(tensor, s_is_cpu, Py_True, 0);
    if (ok > 0) ok = attribute_is(tensor, s_is_neg, Py_False, 1);
    Layout layout;
    int rows = 0;
    if (ok > 0) {
        ok = *contiguous = attribute_is(tensor, s_is_contiguous, Py_True, 1);
        if (ok == 0 && !md5) { /* CRC-32 follows the element order; statistics do not: a dense block or rows */
            ok = read_layout(tensor, &layout);
            if (ok > 0 && !layout_dense(&layout)) {
                rows = ok = layout_rows(&layout);
            }
        }
    }
    if (ok <= 0) {
        return ok;
    }
    PyObject *version = PyObject_GetAttr(tensor, s_version);
    if (version == NULL) { /* an inference tensor: no version counter, never cached (Python's path) */
        PyErr_Clear();
        return 0;
    }
    PyObject *shape = PyObject_GetAttr(tensor, s_shape), *base = PyObject_GetAttr(tensor, s_base);
    PyObject *numel = NULL, *offset = NULL, *key = NULL, *id = NULL;
    Py_ssize_t count = shape == NULL || !PyTuple_Check(shape) ? -1 : 1;
    for (Py_ssize_t d = 0; count >= 0 && d < PyTuple_GET_SIZE(shape); d++) {
        count *= PyLong_AsSsize_t(PyTuple_GET_ITEM(shape, d));
    }
    int found = 0;
    if (PyErr_Occurred() || base == NULL || count < 0) {
        found = PyErr_Occurred() ? -1 : 0; /* (a shape that is not a tuple: the Python path) */
        goto done;
    }
    if (count == 0 || count > max_numel) {
        goto done;
    }
    if (base != Py_None && !rows) { /* a dense view: content_cache.py's key (root, offset, numel, dtype, version) */
        numel = PyLong_FromSsize_t(count);
        offset = numel == NULL ? NULL : call_method(tensor, s_storage_offset);
        id = offset == NULL ? NULL : PyLong_FromVoidPtr(base);
        key = id == NULL ? NULL : PyTuple_Pack(5, id, offset, numel, dtype, version);
        if (key == NULL) {
            found = -1;
            goto done;
        }
        found = cached(entries, key, base, md5, stats);
        if (!found && !PyErr_Occurred() && PyLong_AsSsize_t(offset) == 0) {
            found = root_statistics(entries, base, dtype, version, count, md5, stats);
        }
        if (PyErr_Occurred()) {
            stats_clear(stats);
            found = -1;
            goto done;
        }
    }
    if (!found) {
        found = block_statistics(tensor, count, kind, md5, FLOAT_ITEM_SIZE[kind], rows ? &layout : NULL, stats) < 0
              ? -1 : 1;
        if (found > 0 && key != NULL && store(entries, key, base, stats, limit) < 0) {
            stats_clear(stats);
            found = -1;
        }
    }
done:
    if (found > 0) {
        *version_out = version; /* the caller's references */
        *shape_out = shape;
    } else {
        Py_DECREF(version);
        Py_XDECREF(shape);
    }
    Py_XDECREF(numel);
    Py_XDECREF(base);
    Py_XDECREF(offset);
    Py_XDECREF(id);
    Py_XDECREF(key);
    return found;
}

/* 1 when `shape` (a torch.Size) holds the ints of `dims` (a record's list), 0 when not, -1 on error */
static int same_dims(PyObject *shape, PyObject *dims) {
    PyObject *items = PySequence_Fast(shape, "shape");
    if (items == NULL) {
        return -1;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(items);
    int same = dims != NULL && PyList_Check(dims) && PyList_GET_SIZE(dims) == n;
    for (Py_ssize_t i = 0; same > 0 && i < n; i++) {
        same = PyObject_RichCompareBool(PySequence_Fast_GET_ITEM(items, i), PyList_GET_ITEM(dims, i), Py_EQ);
    }
    Py_DECREF(items);
    return same;
}

/* `record`, or NULL without error: the full path reads the tensor again and reports what fails */
static PyObject *or_declined(PyObject *record) {
    if (record == NULL) {
        PyErr_Clear();
    }
    return record;
}

/* A copy of the kept record `kept` with `stats` (NULL: none) set and requires_grad set to `grad` */
static PyObject *copied_record(PyObject *kept, const Stats *stats, PyObject *grad) {
    PyObject *record = PyDict_Copy(kept);
    if (record != NULL && ((stats != NULL && set_stats(record, stats) < 0) ||
                           PyDict_SetItem(record, k_requires_grad, grad) < 0)) {
        Py_CLEAR(record);
    }
    return record;
}

/* args->entries[id] = (ref, version, dtype, `record` (a copy unless args->shared), contiguous), out of the
 * cycle collector's sight */
static int keep_known(const RecordArgs *args, PyObject *id, PyObject *ref, PyObject *version, PyObject *dtype,
                      PyObject *record, int contiguous) {
    PyObject *copy = args->shared ? new_ref(record) : PyDict_Copy(record), *value = NULL;
    if (copy != NULL) {
        value = PyTuple_Pack(5, ref, version, dtype, copy, contiguous > 0 ? Py_True : Py_False);
        untrack(copy);
        untrack(PyDict_GetItem(copy, k_shape));
        untrack(value);
    }
    int failed = value == NULL || PyDict_SetItem(args->entries, id, value) < 0;
    Py_XDECREF(copy);
    Py_XDECREF(value);
    return failed ? -1 : 0;
}

/* The record kept for this tensor object when it is still at that version, shape and dtype (a new
 * copy; itself when `shared` and its requires_grad is the tensor's), else NULL without error. `known`: the
 * entry under id(tensor), borrowed. `moved` is set when only the version differs and the tensor was
 * contiguous when kept: changed_record's case. */
static PyObject *known_record(PyObject *known, PyObject *tensor, PyObject *dtype, int shared, int *moved) {
    *moved = 0;
    if (!PyTuple_Check(known) || PyTuple_GET_SIZE(known) != 5 ||
        weak_target(PyTuple_GET_ITEM(known, 0)) != tensor || PyTuple_GET_ITEM(known, 2) != dtype) {
        return NULL;
    }
    PyObject *kept = PyTuple_GET_ITEM(known, 3);
    PyObject *version = PyObject_GetAttr(tensor, s_version), *shape = NULL, *record = NULL;
    int same = version == NULL ? -1 : PyObject_RichCompareBool(version, PyTuple_GET_ITEM(known, 1), Py_EQ);
    if (same >= 0) {
        shape = PyObject_GetAttr(tensor, s_shape);
        int dims = shape == NULL ? -1 : same_dims(shape, PyDict_GetItem(kept, k_shape));
        *moved = same == 0 && dims > 0 && PyTuple_GET_ITEM(known, 4) == Py_True;
        same = dims < 0 ? -1 : same && dims;
    }
    PyObject *grad = same > 0 ? PyObject_GetAttr(tensor, s_requires_grad) : NULL;
    if (grad != NULL) {
        int same_grad = shared && PyDict_GetItem(kept, k_requires_grad) == grad;
        record = same_grad ? new_ref(kept) : copied_record(kept, NULL, grad);
    }
    Py_XDECREF(version);
    Py_XDECREF(shape);
    Py_XDECREF(grad);
    return or_declined(record);
}

/* The statistics a view of `tensor` covering all of it stored at this version (an in-place op on the
 * view wrote it, and its output was recorded): 1, else 0 (-1 on error). A tensor that is no view is not
 * in the content cache itself; this is the one way its contents can be there first. */
static int written_through_view(const RecordArgs *args, PyObject *id, PyObject *tensor, Py_ssize_t numel,
                                PyObject *version, PyObject *dtype, Stats *stats) {
    PyObject *offset = PyLong_FromLong(0), *count = PyLong_FromSsize_t(numel);
    PyObject *key = offset == NULL || count == NULL ? NULL : PyTuple_Pack(5, id, offset, count, dtype, version);
    int found = key == NULL ? -1 : cached(args->entries, key, tensor, args->md5, stats);
    if (found == 0 && PyErr_Occurred()) {
        found = -1;
    }
    Py_XDECREF(offset);
    Py_XDECREF(count);
    Py_XDECREF(key);
    return found;
}

/* The record of a tensor object kept contiguous at an earlier version, of the same shape and dtype: an
 * in-place op's output (an optimizer's chain of updates on one parameter; half of an L1 step's records).
 * Its layout is probed again only as far as it can have changed (device, lazy negation, contiguity,
 * address: a `.data` swap or `set_` keeps the object); the content cache is neither read (this
 * version's contents are new) nor written. NULL without error where the full path must decide. */
static PyObject *changed_record(const RecordArgs *args, PyObject *id, PyObject *known, PyObject *tensor, int kind) {
    Py_ssize_t max_numel = args->max_numel;
    int md5 = args->md5;
    PyObject *kept = PyTuple_GET_ITEM(known, 3), *dims = PyDict_GetItem(kept, k_shape);
    Py_ssize_t numel = 1;
    for (Py_ssize_t i = 0; dims != NULL && i < PyList_GET_SIZE(dims); i++) {
        numel *= PyLong_AsSsize_t(PyList_GET_ITEM(dims, i));
    }
    if (PyErr_Occurred() || dims == NULL || numel <= 0 || numel > max_numel) {
        PyErr_Clear();
        return NULL;
    }
    int ok = attribute_is(tensor, s_is_cpu, Py_True, 0);
    if (ok > 0) ok = attribute_is(tensor, s_is_neg, Py_False, 1);
    if (ok > 0) ok = attribute_is(tensor, s_is_contiguous, Py_True, 1);
    PyObject *version = ok > 0 ? PyObject_GetAttr(tensor, s_version) : NULL;
    PyObject *grad = version != NULL ? PyObject_GetAttr(tensor, s_requires_grad) : NULL;
    Stats stats = {{NULL}};
    int measured = grad == NULL ? -1 : written_through_view(args, id, tensor, numel, version, PyTuple_GET_ITEM(known, 2),
                                                              &stats);
    if (measured == 0) {
        measured = block_statistics(tensor, numel, kind, md5, FLOAT_ITEM_SIZE[kind], NULL, &stats) == 0;
    }
    PyObject *record = measured > 0 ? copied_record(kept, &stats, grad) : NULL;
    /* kept again, at this version, under the same weak reference */
    if (record != NULL && keep_known(args, id, PyTuple_GET_ITEM(known, 0), version, PyTuple_GET_ITEM(known, 2),
                                     record, 1) < 0) {
        Py_CLEAR(record);
    }
    stats_clear(&stats);
    Py_XDECREF(grad);
    Py_XDECREF(version);
    return or_declined(record);
}

/* Keep `record` under id(tensor) in the cache, bounded by args->limit (a copy unless args->shared:
 * callers may add to theirs) */
static int keep_record(const RecordArgs *args, PyObject *id, PyObject *tensor, PyObject *version, PyObject *dtype,
                       PyObject *record, int contiguous) {
    if (PyDict_GET_SIZE(args->entries) >= args->limit) {
        PyDict_Clear(args->entries);
    }
    PyObject *ref = PyWeakref_NewRef(tensor, NULL);
    untrack(ref);
    int failed = ref == NULL || keep_known(args, id, ref, version, dtype, record, contiguous) < 0;
    Py_XDECREF(ref);
    return failed ? -1 : 0;
}

/* The record of an integer or bool CPU tensor of any strides (`kind`: INT_*), as stats.py's
 * _native_int_stats and the Python path make it: float Max/Min/Mean/Norm, or any/all for bools. Kept
 * under its id like a float tensor's, never in the content cache; md5 mode is the Python path's (the
 * CRC-32 follows the element order). NULL with an error, or Py_None where this path does not apply. */
static PyObject *int_record(const RecordArgs *args, PyObject *id, PyObject *tensor, PyObject *dtype, PyObject *info,
                            int kind) {
    Py_ssize_t max_numel = args->max_numel;
    int ok = args->md5 ? 0 : attribute_is(tensor, s_layout, args->strided, 0);
    if (ok > 0) ok = attribute_is(tensor, s_is_cpu, Py_True, 0);
    if (ok > 0) ok = attribute_is(tensor, s_is_neg, Py_False, 1);
    Layout layout;
    if (ok > 0) ok = read_layout(tensor, &layout);
    Py_ssize_t numel = 1;
    for (Py_ssize_t d = 0; ok > 0 && d < layout.dims; d++) {
        numel *= layout.size[d];
    }
    if (ok <= 0 || numel <= 0 || numel > max_numel) {
        return ok < 0 ? NULL : none_ref();
    }
    PyObject *address = call_method(tensor, s_data_ptr);
    const char *data = address == NULL ? NULL : (const char *)PyLong_AsVoidPtr(address);
    Py_XDECREF(address);
    if (data == NULL) {
        return PyErr_Occurred() ? NULL : none_ref();
    }
    double acc[4];
    int flags[2];
    int_reduce(data, kind, layout.dims, layout.size, layout.stride, acc, flags);
    PyObject *values[8] = {new_ref(v_tensor_type), new_ref(PyTuple_GET_ITEM(info, 0)), PyList_New(layout.dims)};
    for (Py_ssize_t d = 0; values[2] != NULL && d < layout.dims; d++) {
        PyObject *size = PyLong_FromSsize_t(layout.size[d]);
        if (size == NULL) {
            Py_CLEAR(values[2]);
            break;
        }
        PyList_SET_ITEM(values[2], d, size);
    }
    if (kind == INT_BOOL) {
        values[3] = new_ref(flags[0] ? Py_True : Py_False);
        values[4] = new_ref(flags[1] ? Py_True : Py_False);
        values[5] = new_ref(Py_None);
        values[6] = new_ref(Py_None);
    } else {
        values[3] = PyFloat_FromDouble(acc[0]);
        values[4] = PyFloat_FromDouble(acc[1]);
        values[5] = PyFloat_FromDouble(acc[2] / (double)numel);
        values[6] = PyFloat_FromDouble(sqrt(acc[3]));
    }
    values[7] = PyObject_GetAttr(tensor, s_requires_grad);
    PyObject *record = filled_dict(record_template, record_keys, values, 8);
    for (int i = 0; i < 8; i++) {
        Py_XDECREF(values[i]);
    }
    PyObject *version = record == NULL ? NULL : PyObject_GetAttr(tensor, s_version);
    if (version == NULL) { /* an inference tensor: no version counter, not kept */
        PyErr_Clear();
        return record;
    }
    if (keep_record(args, id, tensor, version, dtype, record, 0) < 0) {
        Py_CLEAR(record);
    }
    Py_DECREF(version);
    return record;
}

/* torch_record(entries, dtypes, limit, max_numel, strided, md5[, shared], tensor) -> record or None.
 * dtypes: dtype -> (name, kind) for the kinds this path reduces; limit: the cache's size bound; shared:
 * nothing adds to the records handed out (no tensor files' names), so one record serves the cache and
 * every entry of the same tensor at the same version (a dict copy less a record). */
static PyObject *torch_record(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if ((nargs != 7 && nargs != 8) || !PyDict_Check(args[0]) || !PyDict_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError,
                        "torch_record(entries: dict, dtypes: dict, limit, max_numel, strided, md5[, shared], tensor)");
        return NULL;
    }
    RecordArgs parsed = {args[0], PyLong_AsSsize_t(args[2]), PyLong_AsSsize_t(args[3]), args[4],
                         PyObject_IsTrue(args[5]), nargs == 8 ? PyObject_IsTrue(args[6]) : 0};
    if (PyErr_Occurred() || parsed.shared < 0) { /* a limit or bound that is no int */
        return NULL;
    }
    PyObject *tensor = args[nargs - 1];
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
    int integer = kind >= INT_KIND_BASE + INT_I64 && kind <= INT_KIND_BASE + INT_BOOL;
    if (!integer && (kind < KIND_F32 || kind > KIND_F64)) {
        Py_DECREF(dtype);
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_ValueError, "torch_record: unknown kind");
        }
        return NULL;
    }
    PyObject *id = PyLong_FromVoidPtr(tensor);
    if (id == NULL) {
        Py_DECREF(dtype);
        return NULL;
    }
    PyObject *known = PyDict_GetItemWithError(parsed.entries, id);
    int moved = 0;
    PyObject *record = known == NULL ? NULL : known_record(known, tensor, dtype, parsed.shared, &moved);
    if (record == NULL && !PyErr_Occurred() && integer) {
        record = int_record(&parsed, id, tensor, dtype, info, (int)kind - INT_KIND_BASE);
    } else if (record == NULL && moved) {
        record = changed_record(&parsed, id, known, tensor, (int)kind);
    }
    if (record != NULL || PyErr_Occurred()) {
        Py_DECREF(id);
        Py_DECREF(dtype);
        return record;
    }
    PyObject *version = NULL, *shape = NULL;
    int contiguous = 0;
    Stats stats = {{NULL}};
    int found = tensor_statistics(tensor, dtype, (int)kind, &parsed, &version, &shape, &contiguous, &stats);
    if (found <= 0) {
        Py_DECREF(id);
        Py_DECREF(dtype);
        return found < 0 ? NULL : none_ref();
    }
    PyObject *grad = PyObject_GetAttr(tensor, s_requires_grad);
    PyObject *dims = PySequence_List(shape);
    if (dims != NULL && grad != NULL) {
        PyObject *values[8] = {v_tensor_type, PyTuple_GET_ITEM(info, 0), dims, stats.item[0], stats.item[1],
                               stats.item[2], stats.item[3], grad};
        record = filled_dict(record_template, record_keys, values, 8);
        if (record != NULL && stats.item[4] != NULL && PyDict_SetItem(record, k_md5, stats.item[4]) < 0) {
            Py_CLEAR(record);
        }
        if (record != NULL && (parsed.limit < 0 ||
                               keep_record(&parsed, id, tensor, version, dtype, record, contiguous) < 0)) {
            Py_CLEAR(record);
        }
    }
    Py_XDECREF(shape);
    Py_XDECREF(grad);
    Py_XDECREF(dims);
    stats_clear(&stats);
    Py_DECREF(version);
    Py_DECREF(id);
    Py_DECREF(dtype);
    return record;
}
