/* json_bytes: what json.dumps(value, ensure_ascii=False).encode() gives, for the plain values of
 * dump.json records (dict with str keys, list, tuple, str, int, float, bool, None), 3-4x faster.
 *
 * Included by _native.c. The json module's encoder is generic: it makes a Python string per token,
 * calls float.__repr__ through the object protocol and joins the pieces at the end. This writes UTF-8
 * into one growing buffer. Floats use repr's own shortest round-trip digits (PyOS_double_to_string,
 * mode 'r'); NaN and infinities are spelled as json writes them. Any other type raises TypeError, and
 * the caller uses the json module instead. A journal line (journal_entry) spells a finite float as '#'
 * and the 16 hex digits of its bits instead: exact, written in ~10 ns where repr's digits cost 100-500 ns
 * in a hook (a float32 value's 17 digits most), and turned into repr's digits by decimal_floats
 * (_decimal.c) on the writer thread, without the GIL, when the step's dump.json is made.
 */

typedef struct {
    char *data;
    Py_ssize_t size, capacity;
    int hex_floats; /* finite floats in hex, '#' and 16 digits (a journal line) */
} JsonBuffer;

#define HEX_FLOAT_LENGTH 17 /* '#' and 16 hex digits */

static int buffer_reserve(JsonBuffer *buffer, Py_ssize_t more) {
    if (buffer->size + more <= buffer->capacity) {
        return 0;
    }
    Py_ssize_t capacity = buffer->capacity ? buffer->capacity : 256;
    while (capacity < buffer->size + more) {
        capacity *= 2;
    }
    char *grown = PyMem_Realloc(buffer->data, (size_t)capacity);
    if (grown == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    buffer->data = grown;
    buffer->capacity = capacity;
    return 0;
}

static int buffer_add(JsonBuffer *buffer, const char *text, Py_ssize_t length) {
    if (buffer_reserve(buffer, length) < 0) {
        return -1;
    }
    memcpy(buffer->data + buffer->size, text, (size_t)length);
    buffer->size += length;
    return 0;
}

#define ADD_LITERAL(buffer, text) buffer_add(buffer, text, (Py_ssize_t)(sizeof(text) - 1))

static int encode_string(JsonBuffer *buffer, PyObject *text) {
    Py_ssize_t length;
    const char *utf8 = PyUnicode_AsUTF8AndSize(text, &length);
    if (utf8 == NULL || buffer_reserve(buffer, length * 6 + 2) < 0) { /* \u00XX: 6 bytes at most per byte */
        return -1;
    }
    char *out = buffer->data + buffer->size;
    *out++ = '"';
    for (Py_ssize_t i = 0; i < length; i++) {
        unsigned char c = (unsigned char)utf8[i];
        if (c >= 0x20 && c != '"' && c != '\\') {
            *out++ = (char)c;
            continue;
        }
        *out++ = '\\';
        switch (c) {
        case '"': *out++ = '"'; break;
        case '\\': *out++ = '\\'; break;
        case '\n': *out++ = 'n'; break;
        case '\r': *out++ = 'r'; break;
        case '\t': *out++ = 't'; break;
        case '\b': *out++ = 'b'; break;
        case '\f': *out++ = 'f'; break;
        default:
            out += sprintf(out, "u%04x", c);
        }
    }
    *out++ = '"';
    buffer->size = out - buffer->data;
    return 0;
}

/* repr()'s digits for a double in [1e-15, 1e16) without its bignum arithmetic (~15x faster): with
 * x = m * 2^e and k chosen so that x * 10^k has 17 digits, the doubles' rounding interval around x,
 * times 10^k, is exact in 128-bit integers (as 4m * 5^k / 2^(shift - k): 5^31 and 55-bit mantissas fit
 * in 127 bits); the shortest multiple of a power of ten inside it, nearest to x, is what repr prints.
 * Answers 0 (the caller then asks PyOS_double_to_string) outside that range, without 128-bit integers,
 * or where repr's choice rests on a tie: a candidate on the interval's edge or halfway between two
 * candidates. (Gradient statistics are often below 1e-5: their Means, their Min/Max near zero.) */
#ifdef __SIZEOF_INT128__
typedef unsigned __int128 u128;

#define POW5_MOST 31

static int short_digits(double value, char *out) {
    if (!(value >= 1e-15 && value < 1e16)) {
        return 0;
    }
    static u128 pow5[POW5_MOST + 1];
    if (pow5[0] == 0) {
        u128 power = 1;
        for (int i = 0; i <= POW5_MOST; i++, power *= 5) {
            pow5[i] = power;
        }
    }
    static const uint64_t pow10[18] = {1ull, 10ull, 100ull, 1000ull, 10000ull, 100000ull, 1000000ull,
        10000000ull, 100000000ull, 1000000000ull, 10000000000ull, 100000000000ull, 1000000000000ull,
        10000000000000ull, 100000000000000ull, 1000000000000000ull, 10000000000000000ull,
        100000000000000000ull};
    uint64_t bits;
    memcpy(&bits, &value, sizeof bits);
    int biased = (int)((bits >> 52) & 0x7ff);
    uint64_t m = (bits & ((1ull << 52) - 1)) | (1ull << 52);
    int exponent = 2 - (biased - 1075); /* x = 4m / 2^exponent; 1 <= exponent <= 104 in this range */
    /* floor(log10(x)) from the binary exponent (log10(2) = 0.30103): at most one off, corrected below */
    int k = 16 - (int)floor((biased - 1023) * 0.30102999566398120);
    u128 scale = 0, x4 = 0;
    uint64_t whole = 0;
    int shift = 0; /* x * 10^k = 4m * 5^k / 2^shift */
    for (int tries = 0; tries < 3; tries++) {
        shift = exponent - k;
        if (k < 0 || k > POW5_MOST || shift < 0 || shift > 120) {
            return 0;
        }
        scale = pow5[k];
        x4 = (u128)(4 * m) * scale;
        whole = (uint64_t)(x4 >> shift);
        if (whole < pow10[16]) {
            k++;
        } else if (whole >= pow10[17]) {
            k--;
        } else {
            break;
        }
    }
    if (whole < pow10[16] || whole >= pow10[17]) {
        return 0;
    }
    u128 mask = ((u128)1 << shift) - 1;
    uint64_t gap_below = (m == (1ull << 52) && biased > 1) ? 1 : 2; /* a power of two: closer below */
    u128 low = (u128)(4 * m - gap_below) * scale, high = (u128)(4 * m + 2) * scale;
    uint64_t low_whole = (uint64_t)(low >> shift), high_whole = (uint64_t)(high >> shift);
    int low_exact = (low & mask) == 0, high_exact = (high & mask) == 0, even = (m & 1) == 0;
    uint64_t first = low_whole + ((even && low_exact) ? 0 : 1), last = high_whole - ((!even && high_exact) ? 1 : 0);
    u128 rest = x4 & mask;
    /* the fewest digits n with a multiple of 10^(17-n) in [first, last] (more digits always have one) */
    int fewest = 1, most = 17;
    while (fewest < most) {
        int middle = (fewest + most) / 2;
        uint64_t step = pow10[17 - middle], candidate = (first + step - 1) / step * step;
        if (candidate <= last) {
            most = middle;
        } else {
            fewest = middle + 1;
        }
    }
    {
        int n = fewest;
        uint64_t step = pow10[17 - n];
        uint64_t below = whole / step * step, above = below + step;
        int below_ok = below >= first && below <= last, above_ok = above >= first && above <= last;
        if (!below_ok && !above_ok) {
            return 0;
        }
        uint64_t chosen = below;
        if (below_ok && above_ok) {
            u128 to_below = ((u128)(whole - below) << shift) + rest, to_above = ((u128)(above - whole) << shift) - rest;
            if (to_below == to_above) {
                return 0;
            }
            chosen = to_below < to_above ? below : above;
        } else if (above_ok) {
            chosen = above;
        }
        if ((chosen == low_whole && low_exact) || (chosen == high_whole && high_exact)) {
            return 0;
        }
        int point = 17 - k; /* x = 0.DIGITS * 10^point */
        uint64_t digits = chosen / step;
        if (digits == pow10[n]) { /* rounded up into the next decade: 10...0 -> 1 */
            digits = 1;
            n = 1;
            point++;
        }
        char text[24];
        int count = 0;
        for (uint64_t rest_digits = digits; rest_digits; rest_digits /= 10) {
            text[count++] = (char)('0' + rest_digits % 10);
        }
        for (int i = 0; i < count / 2; i++) {
            char swap = text[i];
            text[i] = text[count - 1 - i];
            text[count - 1 - i] = swap;
        }
        char *at = out;
        if (point <= -4) { /* 1e-05 and below, as repr */
            *at++ = text[0];
            if (count > 1) {
                *at++ = '.';
                memcpy(at, text + 1, (size_t)(count - 1));
                at += count - 1;
            }
            int power = 1 - point; /* (5 to 16 here) */
            *at++ = 'e';
            *at++ = '-';
            *at++ = (char)('0' + power / 10);
            *at++ = (char)('0' + power % 10);
        } else if (point <= 0) {
            *at++ = '0';
            *at++ = '.';
            memset(at, '0', (size_t)(-point));
            at += -point;
            memcpy(at, text, (size_t)count);
            at += count;
        } else if (point < count) {
            memcpy(at, text, (size_t)point);
            at += point;
            *at++ = '.';
            memcpy(at, text + point, (size_t)(count - point));
            at += count - point;
        } else {
            memcpy(at, text, (size_t)count);
            at += count;
            memset(at, '0', (size_t)(point - count));
            at += point - count;
            *at++ = '.';
            *at++ = '0';
        }
        return (int)(at - out);
    }
    return 0;
}
#else
static int short_digits(double value, char *out) {
    return 0;
}
#endif

/* short_digits' table filled while one thread runs (decimal_floats calls it without the GIL) */
static void json_init(void) {
    char unused[32];
    short_digits(1.0, unused);
}

/* repr(value)'s text for a finite double: in `fast` (32 bytes), or made by PyOS_double_to_string (needs
 * the GIL) into *made, for the caller to PyMem_Free; its length, or -1 with an error */
static int float_text(double value, char *fast, const char **text, char **made, int may_call_python) {
    int negative = value < 0, length = short_digits(negative ? -value : value, fast + 1);
    *made = NULL;
    if (length > 0) {
        fast[0] = '-';
        *text = negative ? fast : fast + 1;
        return length + negative;
    }
    if (!may_call_python) {
        return 0;
    }
    if ((*made = PyOS_double_to_string(value, 'r', 0, Py_DTSF_ADD_DOT_0, NULL)) == NULL) {
        return -1;
    }
    *text = *made;
    return (int)strlen(*made);
}

static int encode_hex_float(JsonBuffer *buffer, uint64_t bits) {
    static const char digits[] = "0123456789abcdef";
    if (buffer_reserve(buffer, HEX_FLOAT_LENGTH) < 0) {
        return -1;
    }
    char *out = buffer->data + buffer->size;
    out[0] = '#';
    for (int i = 0; i < 16; i++) {
        out[1 + i] = digits[(bits >> (60 - 4 * i)) & 15];
    }
    buffer->size += HEX_FLOAT_LENGTH;
    return 0;
}

/* Formatting a double is most of an entry's encoding, and a step's statistics repeat (one call's output
 * is the next one's input, a module's output its parent's): the text of recent values is kept by bit
 * pattern, however it was made. */
#define FLOAT_SLOTS 4096
static struct {
    uint64_t bits;
    unsigned char length; /* 0: empty */
    char text[27];
} float_texts[FLOAT_SLOTS];

static int encode_float(JsonBuffer *buffer, double value) {
    if (isnan(value)) {
        return ADD_LITERAL(buffer, "NaN");
    }
    if (isinf(value)) {
        return value > 0 ? ADD_LITERAL(buffer, "Infinity") : ADD_LITERAL(buffer, "-Infinity");
    }
    uint64_t bits;
    memcpy(&bits, &value, sizeof bits);
    if (buffer->hex_floats) {
        return encode_hex_float(buffer, bits);
    }
    size_t slot = (size_t)((bits * 0x9E3779B97F4A7C15ull) >> 52) & (FLOAT_SLOTS - 1);
    if (float_texts[slot].length && float_texts[slot].bits == bits) {
        return buffer_add(buffer, float_texts[slot].text, float_texts[slot].length);
    }
    char fast[32], *made; /* made: PyOS_double_to_string's, to free */
    const char *text;
    int length = float_text(value, fast, &text, &made, 1);
    if (length < 0) {
        return -1;
    }
    int failed = buffer_add(buffer, text, length);
    if ((size_t)length < sizeof float_texts[slot].text) { /* (the fast digits' divisions cost ~60 ns a value) */
        float_texts[slot].bits = bits;
        float_texts[slot].length = (unsigned char)length;
        memcpy(float_texts[slot].text, text, (size_t)length);
    }
    PyMem_Free(made);
    return failed;
}

static int encode_int(JsonBuffer *buffer, PyObject *value) {
    int overflow;
    long long number = PyLong_AsLongLongAndOverflow(value, &overflow);
    if (number == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (!overflow) {
        char text[24];
        char *at = text + sizeof text;
        unsigned long long magnitude = number < 0 ? 0ull - (unsigned long long)number : (unsigned long long)number;
        do {
            *--at = (char)('0' + magnitude % 10);
            magnitude /= 10;
        } while (magnitude);
        if (number < 0) {
            *--at = '-';
        }
        return buffer_add(buffer, at, (Py_ssize_t)(text + sizeof text - at));
    }
    PyObject *digits = PyLong_Type.tp_repr(value);
    if (digits == NULL) {
        return -1;
    }
    Py_ssize_t length;
    const char *utf8 = PyUnicode_AsUTF8AndSize(digits, &length);
    int failed = utf8 == NULL || buffer_add(buffer, utf8, length) < 0;
    Py_DECREF(digits);
    return failed ? -1 : 0;
}

static int encode_value(JsonBuffer *buffer, PyObject *value);

static int encode_items(JsonBuffer *buffer, PyObject *sequence) {
    Py_ssize_t count = PySequence_Fast_GET_SIZE(sequence);
    PyObject **items = PySequence_Fast_ITEMS(sequence);
    if (ADD_LITERAL(buffer, "[") < 0) {
        return -1;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        if ((i && ADD_LITERAL(buffer, ", ") < 0) || encode_value(buffer, items[i]) < 0) {
            return -1;
        }
    }
    return ADD_LITERAL(buffer, "]");
}

static int encode_dict(JsonBuffer *buffer, PyObject *dict) {
    Py_ssize_t position = 0;
    PyObject *key, *item;
    int first = 1;
    if (ADD_LITERAL(buffer, "{") < 0) {
        return -1;
    }
    while (PyDict_Next(dict, &position, &key, &item)) {
        if (!PyUnicode_Check(key)) {
            PyErr_SetString(PyExc_TypeError, "json_bytes: a dict key that is not a str");
            return -1;
        }
        if ((!first && ADD_LITERAL(buffer, ", ") < 0) || encode_string(buffer, key) < 0 ||
            ADD_LITERAL(buffer, ": ") < 0) {
            return -1;
        }
        Py_INCREF(item); /* a value's own encoding never runs Python code, but keep it alive regardless */
        int failed = encode_value(buffer, item);
        Py_DECREF(item);
        if (failed < 0) {
            return -1;
        }
        first = 0;
    }
    return ADD_LITERAL(buffer, "}");
}

static int encode_value(JsonBuffer *buffer, PyObject *value) {
    if (value == Py_None) {
        return ADD_LITERAL(buffer, "null");
    }
    if (value == Py_True) {
        return ADD_LITERAL(buffer, "true");
    }
    if (value == Py_False) {
        return ADD_LITERAL(buffer, "false");
    }
    if (PyUnicode_Check(value)) {
        return encode_string(buffer, value);
    }
    if (PyFloat_Check(value)) {
        return encode_float(buffer, PyFloat_AS_DOUBLE(value));
    }
    if (PyLong_Check(value)) {
        return encode_int(buffer, value);
    }
    if (!PyDict_Check(value) && !PyList_Check(value) && !PyTuple_Check(value)) {
        PyErr_Format(PyExc_TypeError, "Object of type %.100s is not JSON serializable", Py_TYPE(value)->tp_name);
        return -1;
    }
    if (Py_EnterRecursiveCall(" in json_bytes")) {
        return -1;
    }
    int failed = PyDict_Check(value) ? encode_dict(buffer, value) : encode_items(buffer, value);
    Py_LeaveRecursiveCall();
    return failed;
}

static PyObject *encoded(PyObject *value, int newline, int hex_floats) {
    JsonBuffer buffer = {NULL, 0, 0, hex_floats};
    PyObject *result = NULL;
    if (encode_value(&buffer, value) == 0 && (!newline || ADD_LITERAL(&buffer, "\n") == 0)) {
        result = PyBytes_FromStringAndSize(buffer.data, buffer.size);
    }
    PyMem_Free(buffer.data);
    return result;
}

/* json_bytes(value) -> bytes */
static PyObject *json_bytes(PyObject *self, PyObject *value) {
    return encoded(value, 0, 0);
}

/* json_line(value) -> bytes: json_bytes(value) + b"\n" (a journal record) */
static PyObject *json_line(PyObject *self, PyObject *value) {
    return encoded(value, 1, 0);
}

/* `size` bytes written to `fd` whole (a short write continued, EINTR retried): 0, or -1 with an error */
static int write_whole(int fd, const char *data, Py_ssize_t size) {
    while (size > 0) {
        ssize_t written = write(fd, data, (size_t)size);
        if (written < 0) {
            if (errno == EINTR) {
                if (PyErr_CheckSignals() < 0) {
                    return -1;
                }
                continue;
            }
            PyErr_SetFromErrno(PyExc_OSError);
            return -1;
        }
        data += written;
        size -= written;
    }
    return 0;
}

/* journal_entry(journal, lines: dict, name, value) -> None: the record ["d", name, value] as a JSON
 * line (its finite floats in hex), appended to `journal` (a MappedJournal, or a file descriptor written
 * to; whole either way: a killed process keeps it) and kept in `lines[name]`, beside an earlier line of
 * the same name as a list (merged when the step ends). TypeError for values json_bytes refuses, before
 * anything is written. */
static PyObject *journal_entry(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 4 || !PyDict_Check(args[1]) || !PyUnicode_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "journal_entry(journal, lines: dict, name: str, value)");
        return NULL;
    }
    MappedJournal *mapped = mapped_journal(args[0]);
    long fd = mapped != NULL ? 0 : PyLong_AsLong(args[0]);
    if (fd < 0 || fd > INT32_MAX) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_ValueError, "journal_entry: not a file descriptor");
        }
        return NULL;
    }
    static PyObject *kind = NULL; /* the record's tag, made once (this runs for every entry) */
    if (kind == NULL && (kind = PyUnicode_InternFromString("d")) == NULL) {
        return NULL;
    }
    PyObject *record = PyList_New(3);
    if (record == NULL) {
        return NULL;
    }
    Py_INCREF(kind);
    PyList_SET_ITEM(record, 0, kind);
    Py_INCREF(args[2]);
    PyList_SET_ITEM(record, 1, args[2]);
    Py_INCREF(args[3]);
    PyList_SET_ITEM(record, 2, args[3]);
    PyObject *line = encoded(record, 1, 1);
    Py_DECREF(record);
    if (line == NULL) {
        return NULL;
    }
    int unwritten = mapped != NULL ? journal_append(mapped, PyBytes_AS_STRING(line), PyBytes_GET_SIZE(line))
                                   : write_whole((int)fd, PyBytes_AS_STRING(line), PyBytes_GET_SIZE(line));
    if (unwritten < 0) {
        Py_DECREF(line);
        return NULL;
    }
    PyObject *earlier = PyDict_GetItemWithError(args[1], args[2]);
    int failed;
    if (earlier == NULL) {
        failed = PyErr_Occurred() || PyDict_SetItem(args[1], args[2], line) < 0;
    } else if (PyList_Check(earlier)) {
        failed = PyList_Append(earlier, line) < 0;
    } else {
        PyObject *both = PyList_New(2);
        failed = both == NULL;
        if (!failed) {
            Py_INCREF(earlier);
            PyList_SET_ITEM(both, 0, earlier);
            Py_INCREF(line);
            PyList_SET_ITEM(both, 1, line);
            failed = PyDict_SetItem(args[1], args[2], both) < 0;
            Py_DECREF(both);
        }
    }
    Py_DECREF(line);
    if (failed) {
        return NULL;
    }
    Py_RETURN_NONE;
}
