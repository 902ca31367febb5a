/* The dump's numeric kernels: the statistics of a host block of floats in one pass (stats) and of an
 * integer or bool block of any strides (int_stats). They take an address, a length or shape, and a kind,
 * and touch no Python object beyond their arguments; everything else of the dump is Python.
 *
 * stats: numbers follow numpy's rules: any NaN makes every result NaN; sums run in independent lanes
 * so the compiler can vectorise them without reassociating one long chain (and without -ffast-math,
 * which would drop NaN handling), each lane's float sums carried into its own double every BLOCK
 * elements. Built with the package (setup.py); msprobe.dump.kernels loads it.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#define LANES 16
#define BLOCK 16

enum { KIND_F32 = 0, KIND_BF16 = 1, KIND_F16 = 2, KIND_F64 = 3 };

static inline float bf16_to_f32(uint16_t h) {
    uint32_t bits = (uint32_t)h << 16;
    float out;
    memcpy(&out, &bits, sizeof out);
    return out;
}

typedef union {
    uint32_t bits;
    float value;
} Word;

/* An IEEE half's exact float, without branches, so that both reduction loops vectorise it (a branchy
 * conversion keeps float16 reductions scalar, slower than torch's own; bench/reduce_kernel.py prints
 * both ratios): a normal half's exponent and
 * mantissa moved into a float's fields are its value times 2^112; a subnormal's mantissa m under
 * 0.5's exponent is 0.5 + m * 2^-24, less 0.5 exactly m * 2^-24; infinities and NaNs stay what they
 * are under the scaling */
static inline float f16_to_f32(uint16_t h) {
    uint32_t shifted = (uint32_t)h << 17; /* exponent and mantissa at the top, the sign shifted out */
    Word scaled = {.bits = (shifted >> 4) + (224u << 23)}, offset = {.bits = (shifted >> 17) | (126u << 23)};
    Word normal = {.value = scaled.value * 0x1.0p-112f}, subnormal = {.value = offset.value - 0.5f};
    uint32_t small = 0u - (uint32_t)(shifted < (1u << 27));
    Word out = {.bits = ((uint32_t)(h & 0x8000u) << 16) | (small & subnormal.bits) | (~small & normal.bits)};
    return out.value;
}

/* Max/Min in the element's precision (exact); sums of BLOCK products per float lane (short enough that
 * float error stays at double's noise level for the totals), carried into a double per lane (no serial
 * chain of double additions: that was half the time), the lanes added in order at the end. Squares are
 * added with a fused multiply-add (FUSE: one rounding; the vector loop's multiplies then leave the adder
 * ports to Max, Min and the sums, ~20% faster), written out so that no compiler contracts one loop's
 * arithmetic and not the other's. */
#define REDUCE_BODY(TYPE, ACC, LOAD, FUSE)                                             \
    {                                                                                  \
        const TYPE *x = (const TYPE *)data;                                            \
        ACC hi[LANES], lo[LANES];                                                      \
        ACC first = (ACC)LOAD(x[0]);                                                   \
        double lane_total[LANES], lane_squares[LANES];                                 \
        for (int k = 0; k < LANES; k++) {                                              \
            hi[k] = first; lo[k] = first;                                              \
            lane_total[k] = 0.0; lane_squares[k] = 0.0;                                \
        }                                                                              \
        Py_ssize_t i = 0;                                                              \
        while (i + LANES <= n) {                                                       \
            ACC s[LANES], q[LANES];                                                    \
            for (int k = 0; k < LANES; k++) {                                          \
                s[k] = 0; q[k] = 0;                                                    \
            }                                                                          \
            Py_ssize_t end = i + LANES * BLOCK < n ? i + LANES * BLOCK : n;            \
            for (; i + LANES <= end; i += LANES) {                                     \
                for (int k = 0; k < LANES; k++) {                                      \
                    ACC v = (ACC)LOAD(x[i + k]);                                       \
                    hi[k] = v > hi[k] ? v : hi[k];                                     \
                    lo[k] = v < lo[k] ? v : lo[k];                                     \
                    s[k] += v;                                                         \
                    q[k] = FUSE(v, v, q[k]);                                           \
                }                                                                      \
            }                                                                          \
            for (int k = 0; k < LANES; k++) {                                          \
                lane_total[k] += (double)s[k];                                         \
                lane_squares[k] += (double)q[k];                                       \
            }                                                                          \
        }                                                                              \
        double high = (double)hi[0], low = (double)lo[0], total = 0.0, squares = 0.0;  \
        for (int k = 0; k < LANES; k++) {                                              \
            high = hi[k] > high ? (double)hi[k] : high;                                \
            low = lo[k] < low ? (double)lo[k] : low;                                   \
            total += lane_total[k];                                                    \
            squares += lane_squares[k];                                                \
        }                                                                              \
        for (; i < n; i++) {                                                           \
            double v = (double)LOAD(x[i]);                                             \
            high = v > high ? v : high;                                                \
            low = v < low ? v : low;                                                   \
            total += v;                                                                \
            squares = fma(v, v, squares);                                              \
        }                                                                              \
        out[0] = high; out[1] = low; out[2] = total; out[3] = squares;                 \
    }

#define AS_IS(v) (v)

#define REDUCE_KINDS                                                       \
    switch (kind) {                                                        \
    case KIND_F32: REDUCE_BODY(float, float, AS_IS, fmaf) break;           \
    case KIND_BF16: REDUCE_BODY(uint16_t, float, bf16_to_f32, fmaf) break; \
    case KIND_F16: REDUCE_BODY(uint16_t, float, f16_to_f32, fmaf) break;   \
    default: REDUCE_BODY(double, double, AS_IS, fma) break;                \
    }

static void reduce_plain(const void *data, Py_ssize_t n, int kind, double out[4]) {
    REDUCE_KINDS
}

/* The same loops in 256-bit vectors where the CPU has AVX2 and FMA (twice the elements per instruction):
 * every lane does the same operations in the same order as reduce_plain (whose fmaf is the C library's,
 * exact either way), so the numbers are the same bits on every machine. */
#if defined(__GNUC__) && defined(__x86_64__)
#define HAVE_AVX2 1
__attribute__((target("avx2,fma"))) static void reduce_avx2(const void *data, Py_ssize_t n, int kind, double out[4]) {
    REDUCE_KINDS
}
#endif
static int use_avx2 = 0;

static void reduce_block(const void *data, Py_ssize_t n, int kind, double out[4]) {
#ifdef HAVE_AVX2
    if (use_avx2) {
        reduce_avx2(data, n, kind, out);
    } else
#endif
    reduce_plain(data, n, kind, out);
    /* finite elements whose float squares overflowed (|x| > 1.8e19): squares again, in double */
    if (isinf(out[3]) && isfinite(out[0]) && isfinite(out[1]) && kind != KIND_F64) {
        double squares = 0.0;
        for (Py_ssize_t i = 0; i < n; i++) {
            double v = kind == KIND_F32 ? (double)((const float *)data)[i]
                     : kind == KIND_BF16 ? (double)bf16_to_f32(((const uint16_t *)data)[i])
                     : (double)f16_to_f32(((const uint16_t *)data)[i]);
            squares = fma(v, v, squares);
        }
        out[3] = squares;
    }
    /* a NaN anywhere: the sum of squares is NaN (inf * inf is not), and Max/Min must be NaN too */
    if (isnan(out[3])) {
        out[0] = out[1] = out[2] = NAN;
    }
}

/* The (address, length) pair both block functions take: a length >= 0, an address unless empty */
static int block_args(PyObject *const *args, const char *name, const void **data, Py_ssize_t *n) {
    unsigned long long address = PyLong_AsUnsignedLongLong(args[0]);
    *n = PyLong_AsSsize_t(args[1]);
    if (PyErr_Occurred()) {
        return -1;
    }
    if (*n < 0 || (address == 0 && *n > 0)) {
        PyErr_Format(PyExc_ValueError, "%s: negative length or null address", name);
        return -1;
    }
    *data = (const void *)(uintptr_t)address;
    return 0;
}

/* stats(address, numel, kind) -> (max, min, sum, sum_of_squares); numel > 0, the block dense */
static PyObject *stats(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "stats(address, numel, kind)");
        return NULL;
    }
    const void *data;
    Py_ssize_t n;
    if (block_args(args, "stats", &data, &n) < 0) {
        return NULL;
    }
    long kind = PyLong_AsLong(args[2]);
    if (kind == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (n == 0 || kind < KIND_F32 || kind > KIND_F64) {
        PyErr_SetString(PyExc_ValueError, "stats: empty block or unknown kind");
        return NULL;
    }
    double out[4];
    if (n >= (1 << 16)) { /* long enough for other threads (the file writer) to use the time */
        Py_BEGIN_ALLOW_THREADS
        reduce_block(data, n, (int)kind, out);
        Py_END_ALLOW_THREADS
    } else {
        reduce_block(data, n, (int)kind, out);
    }
    return Py_BuildValue("(dddd)", out[0], out[1], out[2], out[3]);
}

#define MAX_DIMS 16 /* the most dimensions int_stats walks (more: the caller reduces otherwise) */

/* Integer and bool tensors, as stats.py's numpy path reduces them: each element widened to double, Max/Min
 * of the doubles, sums in double (exact while partial sums stay below 2^53: token ids, counts, masks).
 * Any strides (a token batch sliced from a longer one): no copy to make first. */
enum { INT_I64 = 0, INT_I32 = 1, INT_I16 = 2, INT_I8 = 3, INT_U8 = 4, INT_BOOL = 5 };

/* One row of `n` elements `step` apart into the running Max/Min/sums (or any/all for bools) */
#define INT_ROW(TYPE)                                                    \
    {                                                                    \
        const TYPE *x = (const TYPE *)row;                               \
        for (Py_ssize_t i = 0; i < n; i++) {                             \
            double v = (double)x[i * step];                              \
            acc[0] = v > acc[0] ? v : acc[0];                            \
            acc[1] = v < acc[1] ? v : acc[1];                            \
            acc[2] += v;                                                 \
            acc[3] += v * v;                                             \
        }                                                                \
    }

static void int_row(const char *row, Py_ssize_t n, Py_ssize_t step, int kind, double acc[4], int flags[2]) {
    switch (kind) {
    case INT_I64: INT_ROW(int64_t) break;
    case INT_I32: INT_ROW(int32_t) break;
    case INT_I16: INT_ROW(int16_t) break;
    case INT_I8: INT_ROW(int8_t) break;
    case INT_U8: INT_ROW(uint8_t) break;
    default:
        for (Py_ssize_t i = 0; i < n; i++) {
            flags[0] |= row[i * step] != 0;
            flags[1] &= row[i * step] != 0;
        }
    }
}

/* The reduction of a tensor of `dims` dimensions (none: one element) row by row: acc = (max, min, sum,
 * sum of squares) or flags = (any, all) for bools */
static void int_reduce(const char *data, int kind, Py_ssize_t dims, const Py_ssize_t *size, const Py_ssize_t *stride,
                       double acc[4], int flags[2]) {
    static const Py_ssize_t item_size[6] = {8, 4, 2, 1, 1, 1};
    Py_ssize_t item = item_size[kind], last = dims - 1, index[MAX_DIMS] = {0};
    acc[0] = -INFINITY;
    acc[1] = INFINITY;
    acc[2] = acc[3] = 0.0;
    flags[0] = 0;
    flags[1] = 1;
    Py_ssize_t n = dims ? size[last] : 1, step = dims ? stride[last] : 1;
    for (;;) { /* each row along the last dimension */
        Py_ssize_t offset = 0;
        for (Py_ssize_t d = 0; d < last; d++) {
            offset += index[d] * stride[d];
        }
        int_row(data + offset * item, n, step, kind, acc, flags);
        Py_ssize_t d = last - 1;
        while (d >= 0 && ++index[d] == size[d]) {
            index[d--] = 0;
        }
        if (d < 0) {
            break;
        }
    }
}

/* A strided float tensor whose elements lie in rows (the last dimension has stride 1: a slice of the last
 * dimension, a chunk of a fused projection) reduced row by row. Statistics do not depend on the order, so
 * the dimensions are put in order of decreasing stride (broadcast ones, of stride 0, outermost) and each
 * one that continues the next is merged into it; rows are copied into a buffer one after another and the
 * buffer reduced when full (a row of 16 elements is too short to reduce on its own). */
typedef struct {
    Py_ssize_t dims;
    Py_ssize_t size[MAX_DIMS];
    Py_ssize_t stride[MAX_DIMS];
} Layout;

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

/* out (the results so far, `any` of them) combined with a chunk's */
static void combine(double out[4], const double part[4], int any) {
    out[0] = !any || part[0] > out[0] ? part[0] : out[0];
    out[1] = !any || part[1] < out[1] ? part[1] : out[1];
    out[2] = any ? out[2] + part[2] : part[2];
    out[3] = any ? out[3] + part[3] : part[3];
}

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

/* The shape and strides tuples of a call (at most MAX_DIMS, each size >= 1): 0, or -1 with an error set */
static int read_layout(PyObject *shape, PyObject *strides, const char *name, Layout *layout) {
    if (!PyTuple_Check(shape) || !PyTuple_Check(strides) || PyTuple_Size(shape) != PyTuple_Size(strides) ||
        PyTuple_Size(shape) > MAX_DIMS) {
        PyErr_Format(PyExc_TypeError, "%s(address, kind, shape: tuple, strides: tuple)", name);
        return -1;
    }
    layout->dims = PyTuple_Size(shape);
    for (Py_ssize_t d = 0; d < layout->dims; d++) {
        layout->size[d] = PyLong_AsSsize_t(PyTuple_GetItem(shape, d));
        layout->stride[d] = PyLong_AsSsize_t(PyTuple_GetItem(strides, d));
        if (layout->size[d] <= 0 && !PyErr_Occurred()) {
            PyErr_Format(PyExc_ValueError, "%s: empty tensor", name);
        }
    }
    return PyErr_Occurred() ? -1 : 0;
}

static const Py_ssize_t FLOAT_ITEM_SIZE[4] = {4, 2, 2, 8};

/* row_stats(address, kind, shape, strides) -> (max, min, sum, sum_of_squares) of a float tensor in rows */
static PyObject *row_stats(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    Layout layout;
    if (nargs != 4 || read_layout(args[2], args[3], "row_stats", &layout) < 0) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_TypeError, "row_stats(address, kind, shape: tuple, strides: tuple)");
        }
        return NULL;
    }
    const char *data = (const char *)PyLong_AsVoidPtr(args[0]);
    long kind = PyLong_AsLong(args[1]);
    if (PyErr_Occurred()) {
        return NULL;
    }
    if (data == NULL || kind < KIND_F32 || kind > KIND_F64 || layout.dims < 2 ||
        layout.stride[layout.dims - 1] != 1) {
        PyErr_SetString(PyExc_ValueError, "row_stats: null address, unknown kind or not rows");
        return NULL;
    }
    double out[4];
    reduce_rows(data, &layout, (int)kind, FLOAT_ITEM_SIZE[kind], out);
    return Py_BuildValue("(dddd)", out[0], out[1], out[2], out[3]);
}

/* int_stats(address, kind, shape, strides) -> (max, min, sum, sum_of_squares) as floats, or (any, all) as
 * bools for INT_BOOL; shape and strides (in elements) are tuples of ints, at least one element */
static PyObject *int_stats(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    Layout layout;
    if (nargs != 4 || read_layout(args[2], args[3], "int_stats", &layout) < 0) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_TypeError, "int_stats(address, kind, shape: tuple, strides: tuple)");
        }
        return NULL;
    }
    const char *data = (const char *)PyLong_AsVoidPtr(args[0]);
    long kind = PyLong_AsLong(args[1]);
    if (PyErr_Occurred()) {
        return NULL;
    }
    if (data == NULL || kind < INT_I64 || kind > INT_BOOL) {
        PyErr_SetString(PyExc_ValueError, "int_stats: null address or unknown kind");
        return NULL;
    }
    double acc[4];
    int flags[2];
    int_reduce(data, (int)kind, layout.dims, layout.size, layout.stride, acc, flags);
    int any = flags[0], all = flags[1];
    double high = acc[0], low = acc[1], total = acc[2], squares = acc[3];
    if (kind == INT_BOOL) {
        return Py_BuildValue("(OO)", any ? Py_True : Py_False, all ? Py_True : Py_False);
    }
    return Py_BuildValue("(dddd)", high, low, total, squares);
}

/* METH_VARARGS entry points: the stable ABI of Python 3.9 (one wheel for 3.9 and later) has no METH_FASTCALL,
 * so each passes its tuple's items on as an array; more than 4 arguments reach the function as a wrong count */
#define VARARGS_ENTRY(name)                                                     \
    static PyObject *name##_entry(PyObject *self, PyObject *tuple) {            \
        PyObject *items[4];                                                     \
        Py_ssize_t nargs = PyTuple_Size(tuple);                                 \
        if (nargs < 0) {                                                        \
            return NULL;                                                        \
        }                                                                       \
        for (Py_ssize_t i = 0; i < nargs && i < 4; i++) {                       \
            items[i] = PyTuple_GetItem(tuple, i);                               \
        }                                                                       \
        return name(self, items, nargs);                                        \
    }
VARARGS_ENTRY(stats)
VARARGS_ENTRY(int_stats)
VARARGS_ENTRY(row_stats)

static PyMethodDef methods[] = {
    {"stats", stats_entry, METH_VARARGS, "(max, min, sum, sum of squares) of a dense block"},
    {"int_stats", int_stats_entry, METH_VARARGS, "(max, min, sum, sum of squares) or (any, all)"},
    {"row_stats", row_stats_entry, METH_VARARGS, "(max, min, sum, sum of squares) of rows"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_kernels", NULL, -1, methods};

PyMODINIT_FUNC PyInit__kernels(void) {
#ifdef HAVE_AVX2
    __builtin_cpu_init();
    use_avx2 = getenv("MSPROBE_NO_AVX2") == NULL && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif
    PyObject *created = PyModule_Create(&module);
    if (created != NULL && PyModule_AddIntConstant(created, "has_avx2", use_avx2) < 0) {
        Py_DECREF(created);
        return NULL;
    }
    return created;
}
