/* The dump's per-call costs that Python pays most for, in C: the statistics of a dense block of
 * floats in one pass (stats), and where the caller's stack starts and its key (stack_anchor, stack_key).
 *
 * crc32 is the CRC-32 of md5 mode folded with carry-less multiplies where the CPU has them.
 * torch_record (_record.c) makes a CPU tensor's whole dump.json record with them; encode_args and
 * encode_outputs (_walk.c) walk a call's arguments and outputs into records; json_bytes, json_line and
 * journal_entry (_json.c) encode records as JSON and append an entry to the journal, through the
 * journal's shared mapping (MappedJournal, _journal.c) where it has one; decimal_floats (_decimal.c)
 * spells the journal's hex floats as repr does, for dump.json; record_plain_call
 * (_call.c) records a whole API call made without autograd with them and finish_call the forward entry
 * of a call or module recorded in Python; record_gradient and record_param_gradient (_backward.c) are
 * the gradient hooks of a recorded call and of a parameter; module_pre and module_post (_module.c) a
 * module's forward hooks with its gates; record_grad_call (_grad_call.c) an API call made with autograd,
 * which mode_dispatch (_mode.c) routes there. Call (_calltype.c) is msprobe.dump.calls.Call in C.
 *
 * Built on first use by msprobe/dump/native.py (no build step at install time); without a C compiler
 * the Python paths are used instead.
 *
 * int_stats: the same for integer and bool blocks.
 *
 * stats: numbers follow numpy's rules: any NaN makes every result NaN; sums run in independent lanes
 * so the compiler can vectorise them without reassociating one long chain (and without -ffast-math,
 * which would drop NaN handling), each lane's float sums carried into its own double every BLOCK
 * elements.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <frameobject.h>
#include <structmember.h>
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <errno.h>
#include <unistd.h>

#define LANES 16
#define BLOCK 16

/* Py_NewRef, which Python 3.9 lacks */
static inline PyObject *new_ref(PyObject *object) {
    Py_INCREF(object);
    return object;
}

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

/* An IEEE half's exact float, without branches, so that both reduction loops vectorise it (the branchy
 * version kept float16 reductions scalar: 0.65 G elements a second on this VM, a third of torch's four
 * reductions, where this gives 4.1; bench/reduce_kernel.py): a normal half's exponent and
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

static uint32_t crc_table[256];

static void crc_table_init(void) {
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++) c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
        crc_table[n] = c;
    }
}

/* c: the running register (not inverted); the bytes a folded run leaves over (< 16) */
static uint32_t crc_bytes(uint32_t c, const unsigned char *p, size_t n) {
    while (n--) c = crc_table[(c ^ *p++) & 0xff] ^ (c >> 8);
    return c;
}

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define HAVE_CLMUL 1
__attribute__((target("pclmul,sse4.1")))
/* CRC-32 (zlib's: reflected, polynomial 0x04C11DB7) by folding 64 bytes a step with carry-less multiplies
 * (Intel's "Fast CRC Computation for Generic Polynomials Using PCLMULQDQ"): ~13 GB/s here against zlib's
 * ~2 GB/s, which made md5 mode cost twice a step of the bench model. n >= 64 and a multiple of 16. */
static uint32_t crc_fold(uint32_t c, const unsigned char *p, size_t n) {
    const __m128i r2r1 = _mm_set_epi64x(0x1c6e41596LL, 0x154442bd4LL);
    const __m128i r4r3 = _mm_set_epi64x(0x0ccaa009eLL, 0x1751997d0LL);
    const __m128i r5 = _mm_set_epi64x(0, 0x163cd6124LL);
    const __m128i poly = _mm_set_epi64x(0x1f7011641LL, 0x1db710641LL);
    const __m128i mask32 = _mm_set_epi32(0, 0, 0, -1);
    __m128i x1 = _mm_loadu_si128((const __m128i *)p);
    __m128i x2 = _mm_loadu_si128((const __m128i *)(p + 16));
    __m128i x3 = _mm_loadu_si128((const __m128i *)(p + 32));
    __m128i x4 = _mm_loadu_si128((const __m128i *)(p + 48));
    x1 = _mm_xor_si128(x1, _mm_cvtsi32_si128((int)c));
    p += 64; n -= 64;
    while (n >= 64) {
        __m128i h1 = _mm_clmulepi64_si128(x1, r2r1, 0x11), h2 = _mm_clmulepi64_si128(x2, r2r1, 0x11);
        __m128i h3 = _mm_clmulepi64_si128(x3, r2r1, 0x11), h4 = _mm_clmulepi64_si128(x4, r2r1, 0x11);
        x1 = _mm_clmulepi64_si128(x1, r2r1, 0x00); x2 = _mm_clmulepi64_si128(x2, r2r1, 0x00);
        x3 = _mm_clmulepi64_si128(x3, r2r1, 0x00); x4 = _mm_clmulepi64_si128(x4, r2r1, 0x00);
        x1 = _mm_xor_si128(_mm_xor_si128(x1, h1), _mm_loadu_si128((const __m128i *)p));
        x2 = _mm_xor_si128(_mm_xor_si128(x2, h2), _mm_loadu_si128((const __m128i *)(p + 16)));
        x3 = _mm_xor_si128(_mm_xor_si128(x3, h3), _mm_loadu_si128((const __m128i *)(p + 32)));
        x4 = _mm_xor_si128(_mm_xor_si128(x4, h4), _mm_loadu_si128((const __m128i *)(p + 48)));
        p += 64; n -= 64;
    }
#define FOLD(acc, next) do { __m128i h = _mm_clmulepi64_si128(acc, r4r3, 0x11); \
        acc = _mm_clmulepi64_si128(acc, r4r3, 0x00); acc = _mm_xor_si128(_mm_xor_si128(acc, h), next); } while (0)
    FOLD(x1, x2); FOLD(x1, x3); FOLD(x1, x4);
    while (n >= 16) {
        FOLD(x1, _mm_loadu_si128((const __m128i *)p));
        p += 16; n -= 16;
    }
#undef FOLD
    /* 128 -> 64 */
    __m128i t = _mm_srli_si128(x1, 8);
    x1 = _mm_clmulepi64_si128(x1, r4r3, 0x10);
    x1 = _mm_xor_si128(x1, t);
    /* 64 -> 32 */
    t = _mm_srli_si128(x1, 4);
    x1 = _mm_and_si128(x1, mask32);
    x1 = _mm_clmulepi64_si128(x1, r5, 0x00);
    x1 = _mm_xor_si128(x1, t);
    /* Barrett reduction */
    t = x1;
    x1 = _mm_and_si128(x1, mask32);
    x1 = _mm_clmulepi64_si128(x1, poly, 0x10);
    x1 = _mm_and_si128(x1, mask32);
    x1 = _mm_clmulepi64_si128(x1, poly, 0x00);
    x1 = _mm_xor_si128(x1, t);
    return (uint32_t)_mm_extract_epi32(x1, 1);
}
#endif

static int use_clmul = 0;

static uint32_t crc32_ieee(uint32_t crc, const unsigned char *p, size_t n) {
    uint32_t c = ~crc;
#ifdef HAVE_CLMUL
    if (use_clmul && n >= 64) {
        size_t whole = n & ~(size_t)15;
        c = crc_fold(c, p, whole);
        p += whole; n -= whole;
    }
#endif
    return ~crc_bytes(c, p, n);
}


/* crc32(address, nbytes) -> zlib.crc32 of the bytes; only where has_fast_crc32 (else zlib is faster) */
static PyObject *crc32(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "crc32(address, nbytes)");
        return NULL;
    }
    const void *data;
    Py_ssize_t n;
    if (block_args(args, "crc32", &data, &n) < 0) {
        return NULL;
    }
    uint32_t result;
    Py_BEGIN_ALLOW_THREADS
    result = crc32_ieee(0, (const unsigned char *)data, (size_t)n);
    Py_END_ALLOW_THREADS
    return PyLong_FromUnsignedLong(result);
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

/* 1 when the code's frames are left out of stacks (skip[id] or, for a code not seen before, classify(code)) */
static int is_skipped(PyCodeObject *code, PyObject *id, PyObject *skip, PyObject *classify) {
    PyObject *known = PyDict_GetItemWithError(skip, id);
    if (known != NULL) {
        return PyObject_IsTrue(known);
    }
    if (PyErr_Occurred()) {
        return -1;
    }
    PyObject *answer = PyObject_CallOneArg(classify, (PyObject *)code);
    int skipped = answer == NULL ? -1 : PyObject_IsTrue(answer);
    Py_XDECREF(answer);
    return skipped;
}

/* stack_anchor(frame, skip, classify) -> (frame, lasti) of the first frame from `frame` outward that is
 * not skipped, or None */
static PyObject *stack_anchor(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3 || !PyFrame_Check(args[0]) || !PyDict_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "stack_anchor(frame, skip: dict, classify)");
        return NULL;
    }
    PyFrameObject *frame = (PyFrameObject *)args[0];
    Py_INCREF(frame);
    while (frame != NULL) {
        PyCodeObject *code = PyFrame_GetCode(frame);
        PyObject *id = PyLong_FromVoidPtr(code);
        int skipped = id == NULL ? -1 : is_skipped(code, id, args[1], args[2]);
        Py_XDECREF(id);
        Py_DECREF(code);
        if (skipped < 0) {
            Py_DECREF(frame);
            return NULL;
        }
        if (!skipped) {
            PyObject *found = Py_BuildValue("(Ni)", (PyObject *)frame, frame_lasti(frame));
            return found;
        }
        PyFrameObject *back = PyFrame_GetBack(frame);
        Py_DECREF(frame);
        frame = back;
    }
    Py_RETURN_NONE;
}

/* recent_stack(skip, classify, recent, suspendable, capture) -> stack.capture() for the innermost Python
 * frame: its common case here (the anchor frame is remembered in `recent` and its call site was seen:
 * an optimizer's loop, a model's forward), anything else by calling `capture` (stack.py). `recent` maps
 * id(frame) to (frame, {lasti: frames}); `suspendable`: the code flags of frames never remembered. */
static PyObject *recent_stack(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 5 || !PyDict_Check(args[0]) || !PyDict_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "recent_stack(skip: dict, classify, recent: dict, suspendable, capture)");
        return NULL;
    }
    long suspendable = PyLong_AsLong(args[3]);
    if (suspendable == -1 && PyErr_Occurred()) {
        return NULL;
    }
    PyFrameObject *top = PyEval_GetFrame(); /* borrowed */
    PyObject *frame_args[3] = {(PyObject *)top, args[0], args[1]};
    PyObject *found = top == NULL ? NULL : stack_anchor(self, frame_args, 3);
    if (found == NULL) {
        if (PyErr_Occurred()) {
            return NULL;
        }
        return PyObject_CallNoArgs(args[4]);
    }
    PyObject *frames = NULL;
    if (PyTuple_Check(found)) {
        PyFrameObject *anchor = (PyFrameObject *)PyTuple_GET_ITEM(found, 0);
        PyCodeObject *code = PyFrame_GetCode(anchor);
        int remembered = !(code->co_flags & suspendable);
        Py_DECREF(code);
        PyObject *id = remembered ? PyLong_FromVoidPtr(anchor) : NULL;
        PyObject *hit = id == NULL ? NULL : PyDict_GetItemWithError(args[2], id);
        if (hit != NULL && PyTuple_Check(hit) && PyTuple_GET_SIZE(hit) == 2 &&
            PyTuple_GET_ITEM(hit, 0) == (PyObject *)anchor && PyDict_Check(PyTuple_GET_ITEM(hit, 1))) {
            frames = PyDict_GetItemWithError(PyTuple_GET_ITEM(hit, 1), PyTuple_GET_ITEM(found, 1));
            Py_XINCREF(frames);
        }
        Py_XDECREF(id);
    }
    Py_DECREF(found);
    if (frames != NULL || PyErr_Occurred()) {
        return frames;
    }
    return PyObject_CallNoArgs(args[4]); /* walked and remembered by stack.py */
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
        int skipped = id == NULL ? -1 : is_skipped(code, id, skip, classify);
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

#define MAX_DIMS 16 /* the most dimensions the C paths walk (more: the Python paths) */

/* Integer and bool tensors, as stats.py's numpy path reduces them: each element widened to double, Max/Min
 * of the doubles, sums in double (exact while partial sums stay below 2^53: token ids, counts, masks).
 * Any strides (a token batch sliced from a longer one): no copy to make first. */
enum { INT_I64 = 0, INT_I32 = 1, INT_I16 = 2, INT_I8 = 3, INT_U8 = 4, INT_BOOL = 5 };
#define INT_KIND_BASE 16 /* torch_record's kind of an INT_* tensor: INT_KIND_BASE + INT_* */

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

#include "_calltype.c"
#include "_record.c"
#include "_walk.c"
#include "_journal.c"
#include "_json.c"
#include "_decimal.c"
#include "_members.c"
#include "_files.c"
#include "_call.c"
#include "_backward.c"
#include "_module.c"
#include "_grad_call.c"
#include "_mode.c"

/* int_stats(address, kind, shape, strides) -> (max, min, sum, sum_of_squares) as floats, or (any, all) as
 * bools for INT_BOOL; shape and strides (in elements) are tuples of ints, at least one element */
static PyObject *int_stats(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 4 || !PyTuple_Check(args[2]) || !PyTuple_Check(args[3]) ||
        PyTuple_GET_SIZE(args[2]) != PyTuple_GET_SIZE(args[3]) || PyTuple_GET_SIZE(args[2]) > MAX_DIMS) {
        PyErr_SetString(PyExc_TypeError, "int_stats(address, kind, shape: tuple, strides: tuple)");
        return NULL;
    }
    const char *data = (const char *)PyLong_AsVoidPtr(args[0]);
    long kind = PyLong_AsLong(args[1]);
    Py_ssize_t dims = PyTuple_GET_SIZE(args[2]), size[MAX_DIMS], stride[MAX_DIMS];
    for (Py_ssize_t d = 0; d < dims; d++) {
        size[d] = PyLong_AsSsize_t(PyTuple_GET_ITEM(args[2], d));
        stride[d] = PyLong_AsSsize_t(PyTuple_GET_ITEM(args[3], d));
        if (size[d] <= 0 && !PyErr_Occurred()) {
            PyErr_SetString(PyExc_ValueError, "int_stats: empty tensor");
        }
    }
    if (PyErr_Occurred()) {
        return NULL;
    }
    if (data == NULL || kind < INT_I64 || kind > INT_BOOL) {
        PyErr_SetString(PyExc_ValueError, "int_stats: null address or unknown kind");
        return NULL;
    }
    double acc[4];
    int flags[2];
    int_reduce(data, (int)kind, dims, size, stride, acc, flags);
    int any = flags[0], all = flags[1];
    double high = acc[0], low = acc[1], total = acc[2], squares = acc[3];
    if (kind == INT_BOOL) {
        return Py_BuildValue("(OO)", any ? Py_True : Py_False, all ? Py_True : Py_False);
    }
    return Py_BuildValue("(dddd)", high, low, total, squares);
}


static PyMethodDef methods[] = {
    {"stats", (PyCFunction)(void (*)(void))stats, METH_FASTCALL, "(max, min, sum, sum of squares) of a dense block"},
    {"int_stats", (PyCFunction)(void (*)(void))int_stats, METH_FASTCALL, "(max, min, sum, sum of squares) or (any, all)"},
    {"stack_anchor", (PyCFunction)(void (*)(void))stack_anchor, METH_FASTCALL, "(frame, lasti) where a stack starts"},
    {"stack_key", (PyCFunction)(void (*)(void))stack_key, METH_FASTCALL, "(key, codes) of the caller's stack"},
    {"recent_stack", (PyCFunction)(void (*)(void))recent_stack, METH_FASTCALL, "stack.capture(), remembered sites in C"},
    {"crc32", (PyCFunction)(void (*)(void))crc32, METH_FASTCALL, "zlib.crc32 of a block of bytes"},
    {"json_bytes", (PyCFunction)json_bytes, METH_O, "json.dumps(value, ensure_ascii=False).encode() of plain values"},
    {"journal_entry", (PyCFunction)(void (*)(void))journal_entry, METH_FASTCALL, "write and keep an entry's journal line"},
    {"json_line", (PyCFunction)json_line, METH_O, "json_bytes(value) + b'\\n'"},
    {"decimal_floats", (PyCFunction)decimal_floats, METH_O, "journal text with its hex floats in repr's digits"},
    {"dump_members", (PyCFunction)dump_members, METH_O, "dump.json's data members from a step's journal lines"},
    {"write_files", (PyCFunction)(void (*)(void))write_files, METH_FASTCALL, "files written atomically without the GIL"},
    {"prepare_dirs", (PyCFunction)(void (*)(void))prepare_dirs, METH_FASTCALL, "a journal's directories, without the GIL"},
    {"encode_args", (PyCFunction)(void (*)(void))encode_args, METH_FASTCALL, "Encoder.args in C"},
    {"encode_outputs", (PyCFunction)(void (*)(void))encode_outputs, METH_FASTCALL, "Encoder.outputs in C"},
    {"torch_record", (PyCFunction)(void (*)(void))torch_record, METH_FASTCALL, "a CPU tensor's record, or None"},
    {"record_plain_call", (PyCFunction)(void (*)(void))record_plain_call, METH_FASTCALL, "a no-grad API call, recorded"},
    {"mode_dispatch", (PyCFunction)(void (*)(void))mode_dispatch, METH_FASTCALL | METH_KEYWORDS, "DumpMode.__torch_function__'s common cases"},
    {"finish_call", (PyCFunction)(void (*)(void))finish_call, METH_FASTCALL, "a call's outputs and forward entry"},
    {"record_gradient", (PyCFunction)(void (*)(void))record_gradient, METH_FASTCALL, "a gradient hook of a recorded call"},
    {"record_param_gradient", (PyCFunction)(void (*)(void))record_param_gradient, METH_FASTCALL, "a parameter's gradient hook"},
    {"module_pre", (PyCFunction)(void (*)(void))module_pre, METH_FASTCALL, "a module's forward pre hook"},
    {"module_post", (PyCFunction)(void (*)(void))module_post, METH_FASTCALL, "a module's forward hook"},
    {"same_members", (PyCFunction)same_members, METH_O, "whether objects' dicts still hold the objects of given ids"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_native", NULL, -1, methods};

PyMODINIT_FUNC PyInit__native(void) {
    crc_table_init();
    json_init();
    if (record_init() < 0 || values_init() < 0 || call_init() < 0 || backward_init() < 0 ||
        module_init() < 0) {
        return NULL;
    }
#if defined(HAVE_CLMUL) || defined(HAVE_AVX2)
    __builtin_cpu_init();
#endif
#ifdef HAVE_AVX2
    use_avx2 = getenv("MSPROBE_NO_AVX2") == NULL && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif
#ifdef HAVE_CLMUL
    use_clmul = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
#endif
    PyObject *created = PyModule_Create(&module);
    if (created != NULL && (journal_init(created) < 0 || call_type_init(created) < 0 ||
                            PyModule_AddIntConstant(created, "has_fast_crc32", use_clmul) < 0 ||
                            PyModule_AddIntConstant(created, "has_avx2", use_avx2) < 0 ||
                            PyModule_AddIntConstant(created, "INT_KIND_BASE", INT_KIND_BASE) < 0)) {
        Py_DECREF(created);
        return NULL;
    }
    return created;
}
