/* The dump's two per-call costs that Python pays most for, in C: the statistics of a dense block of
 * floats in one pass (stats), and the key of the caller's stack (stack_key).
 *
 * Built on first use by msprobe/dump/native.py (no build step at install time); without a C compiler
 * the Python paths are used instead.
 *
 * stats: numbers follow numpy's rules: any NaN makes every result
 * NaN; sums run in independent lanes so the compiler can vectorise them without reassociating one
 * long chain (and without -ffast-math, which would drop NaN handling), and are carried into double
 * every LANES x BLOCK elements.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <frameobject.h>
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

static inline float f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exponent = (h >> 10) & 0x1fu;
    uint32_t mantissa = h & 0x3ffu;
    uint32_t bits;
    if (exponent == 0x1fu) {
        bits = sign | 0x7f800000u | (mantissa << 13); /* inf, NaN */
    } else if (exponent != 0) {
        bits = sign | ((exponent + 112u) << 23) | (mantissa << 13);
    } else if (mantissa == 0) {
        bits = sign; /* signed zero */
    } else { /* subnormal: normalise */
        exponent = 113u;
        while (!(mantissa & 0x400u)) {
            mantissa <<= 1;
            exponent--;
        }
        bits = sign | (exponent << 23) | ((mantissa & 0x3ffu) << 13);
    }
    float out;
    memcpy(&out, &bits, sizeof out);
    return out;
}

/* Max/Min in the element's precision (exact); sums of LANES x BLOCK products in float lanes (short
 * enough that float error stays at double's noise level for the totals), carried into double totals */
#define REDUCE_BODY(TYPE, ACC, LOAD)                                                   \
    {                                                                                  \
        const TYPE *x = (const TYPE *)data;                                            \
        ACC hi[LANES], lo[LANES];                                                      \
        ACC first = (ACC)LOAD(x[0]);                                                   \
        double total = 0.0, squares = 0.0;                                             \
        for (int k = 0; k < LANES; k++) {                                              \
            hi[k] = first; lo[k] = first;                                              \
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
                    q[k] += v * v;                                                     \
                }                                                                      \
            }                                                                          \
            for (int k = 0; k < LANES; k++) {                                          \
                total += (double)s[k];                                                 \
                squares += (double)q[k];                                               \
            }                                                                          \
        }                                                                              \
        double high = (double)hi[0], low = (double)lo[0];                              \
        for (int k = 1; k < LANES; k++) {                                              \
            high = hi[k] > high ? (double)hi[k] : high;                                \
            low = lo[k] < low ? (double)lo[k] : low;                                   \
        }                                                                              \
        for (; i < n; i++) {                                                           \
            double v = (double)LOAD(x[i]);                                             \
            high = v > high ? v : high;                                                \
            low = v < low ? v : low;                                                   \
            total += v;                                                                \
            squares += v * v;                                                          \
        }                                                                              \
        out[0] = high; out[1] = low; out[2] = total; out[3] = squares;                 \
    }

#define AS_IS(v) (v)

static void reduce_block(const void *data, Py_ssize_t n, int kind, double out[4]) {
    switch (kind) {
    case KIND_F32: REDUCE_BODY(float, float, AS_IS) break;
    case KIND_BF16: REDUCE_BODY(uint16_t, float, bf16_to_f32) break;
    case KIND_F16: REDUCE_BODY(uint16_t, float, f16_to_f32) break;
    default: REDUCE_BODY(double, double, AS_IS) break;
    }
    /* finite elements whose float squares overflowed (|x| > 1.8e19): squares again, in double */
    if (isinf(out[3]) && isfinite(out[0]) && isfinite(out[1]) && kind != KIND_F64) {
        double squares = 0.0;
        for (Py_ssize_t i = 0; i < n; i++) {
            double v = kind == KIND_F32 ? (double)((const float *)data)[i]
                     : kind == KIND_BF16 ? (double)bf16_to_f32(((const uint16_t *)data)[i])
                     : (double)f16_to_f32(((const uint16_t *)data)[i]);
            squares += v * v;
        }
        out[3] = squares;
    }
    /* a NaN anywhere: the sum of squares is NaN (inf * inf is not), and Max/Min must be NaN too */
    if (isnan(out[3])) {
        out[0] = out[1] = out[2] = NAN;
    }
}

/* stats(address, numel, kind) -> (max, min, sum, sum_of_squares); numel > 0, the block dense */
static PyObject *stats(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "stats(address, numel, kind)");
        return NULL;
    }
    unsigned long long address = PyLong_AsUnsignedLongLong(args[0]);
    Py_ssize_t n = PyLong_AsSsize_t(args[1]);
    long kind = PyLong_AsLong(args[2]);
    if (PyErr_Occurred()) {
        return NULL;
    }
    if (n <= 0 || address == 0 || kind < KIND_F32 || kind > KIND_F64) {
        PyErr_SetString(PyExc_ValueError, "stats: empty block, null address or unknown kind");
        return NULL;
    }
    double out[4];
    if (n >= (1 << 16)) { /* long enough for other threads (the file writer) to use the time */
        Py_BEGIN_ALLOW_THREADS
        reduce_block((const void *)(uintptr_t)address, n, (int)kind, out);
        Py_END_ALLOW_THREADS
    } else {
        reduce_block((const void *)(uintptr_t)address, n, (int)kind, out);
    }
    return Py_BuildValue("(dddd)", out[0], out[1], out[2], out[3]);
}

/* The frame's current bytecode offset, as Python's frame.f_lasti gives it */
static int frame_lasti(PyFrameObject *frame) {
#if PY_VERSION_HEX >= 0x030B0000
    return PyFrame_GetLasti(frame);
#elif PY_VERSION_HEX >= 0x030A0000
    return frame->f_lasti < 0 ? -1 : frame->f_lasti * (int)sizeof(_Py_CODEUNIT);
#else
    return frame->f_lasti;
#endif
}

/* stack_key(frame, skip, classify, limit) -> (id(code), lasti, ...) of the frames from `frame` outward
 * that are not skipped, at most `limit` of them, and their code objects. `skip` maps id(code) to a
 * bool; `classify(code)` answers (and fills `skip`) for a code not seen before. */
static PyObject *stack_key(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 4 || !PyFrame_Check(args[0]) || !PyDict_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "stack_key(frame, skip: dict, classify, limit)");
        return NULL;
    }
    PyObject *skip = args[1], *classify = args[2];
    Py_ssize_t limit = PyLong_AsSsize_t(args[3]);
    if (limit == -1 && PyErr_Occurred()) {
        return NULL;
    }
    PyObject *keys = PyList_New(0), *codes = PyList_New(0);
    if (keys == NULL || codes == NULL) {
        goto fail;
    }
    PyFrameObject *frame = (PyFrameObject *)args[0];
    Py_INCREF(frame);
    while (frame != NULL && PyList_GET_SIZE(codes) < limit) {
        PyCodeObject *code = PyFrame_GetCode(frame);
        PyObject *id = PyLong_FromVoidPtr(code);
        int skipped = -1;
        if (id != NULL) {
            PyObject *known = PyDict_GetItemWithError(skip, id);
            if (known != NULL) {
                skipped = PyObject_IsTrue(known);
            } else if (!PyErr_Occurred()) {
                PyObject *answer = PyObject_CallOneArg(classify, (PyObject *)code);
                skipped = answer == NULL ? -1 : PyObject_IsTrue(answer);
                Py_XDECREF(answer);
            }
        }
        if (skipped == 0) {
            PyObject *lasti = PyLong_FromLong(frame_lasti(frame));
            if (lasti == NULL || PyList_Append(keys, id) < 0 || PyList_Append(keys, lasti) < 0 ||
                PyList_Append(codes, (PyObject *)code) < 0) {
                skipped = -1;
            }
            Py_XDECREF(lasti);
        }
        Py_XDECREF(id);
        Py_DECREF(code);
        if (skipped < 0) {
            Py_DECREF(frame);
            goto fail;
        }
        PyFrameObject *back = PyFrame_GetBack(frame);
        Py_DECREF(frame);
        frame = back;
    }
    Py_XDECREF(frame);
    PyObject *key = PyList_AsTuple(keys);
    Py_DECREF(keys);
    if (key == NULL) {
        Py_DECREF(codes);
        return NULL;
    }
    PyObject *result = PyTuple_Pack(2, key, codes);
    Py_DECREF(key);
    Py_DECREF(codes);
    return result;
fail:
    Py_XDECREF(keys);
    Py_XDECREF(codes);
    return NULL;
}

static PyMethodDef methods[] = {
    {"stats", (PyCFunction)(void (*)(void))stats, METH_FASTCALL, "(max, min, sum, sum of squares) of a dense block"},
    {"stack_key", (PyCFunction)(void (*)(void))stack_key, METH_FASTCALL, "(key, codes) of the caller's stack"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_native", NULL, -1, methods};

PyMODINIT_FUNC PyInit__native(void) { return PyModule_Create(&module); }
