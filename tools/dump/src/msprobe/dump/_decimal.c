/* decimal_floats(data: bytes) -> bytes: journal text with its hex floats ('#' and 16 hex digits of a
 * double's bits, outside strings: journal_entry's) spelled as json.dumps spells them (repr's digits).
 *
 * Included by _native.c (after _json.c: float_text, HEX_FLOAT_LENGTH). Runs on the writer thread when a
 * step's dump.json is made, without the GIL but for the rare value short_digits leaves to
 * PyOS_double_to_string; the output is reserved first (a hex float's 17 bytes become 24 at most). Text
 * without '#' is returned as it is.
 */

#define DECIMAL_FLOAT_MOST 24 /* -2.2250738585072014e-308 */

static int hex_digit(char c) {
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* The double spelled by the 16 hex digits at `text`: 0, or -1 (not 16 hex digits) */
static int hex_bits(const char *text, double *value) {
    uint64_t bits = 0;
    for (int i = 0; i < 16; i++) {
        int digit = hex_digit(text[i]);
        if (digit < 0) {
            return -1;
        }
        bits = bits << 4 | (uint64_t)digit;
    }
    memcpy(value, &bits, sizeof bits);
    return 0;
}

/* `size` bytes of `text` with their hex floats made decimal, into `out` (reserved for the worst case):
 * the bytes written, or -1 with an error (set with the GIL held) */
static Py_ssize_t write_decimal(const char *text, Py_ssize_t size, char *out) {
    char *start = out;
    int in_string = 0, failed = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < size && !failed; i++) {
        char c = text[i];
        double value;
        if (in_string) {
            if (c == '\\' && i + 1 < size) {
                *out++ = c;
                c = text[++i];
            } else if (c == '"') {
                in_string = 0;
            }
        } else if (c == '"') {
            in_string = 1;
        } else if (c == '#' && i + HEX_FLOAT_LENGTH <= size && hex_bits(text + i + 1, &value) == 0 &&
                   isfinite(value)) {
            char fast[32], *made;
            const char *digits;
            int length = float_text(value, fast, &digits, &made, 0);
            if (length == 0) { /* repr's own digits: PyOS_double_to_string needs the GIL */
                Py_BLOCK_THREADS
                length = float_text(value, fast, &digits, &made, 1);
                if (length > DECIMAL_FLOAT_MOST) {
                    PyErr_SetString(PyExc_ValueError, "decimal_floats: a float longer than reserved");
                    length = -1;
                }
                if (length > 0) {
                    memcpy(out, digits, (size_t)length);
                }
                PyMem_Free(made);
                Py_UNBLOCK_THREADS
            } else {
                memcpy(out, digits, (size_t)length);
            }
            failed = length < 0;
            out += length > 0 ? length : 0;
            i += HEX_FLOAT_LENGTH - 1;
            continue;
        }
        *out++ = c;
    }
    Py_END_ALLOW_THREADS
    return failed ? -1 : out - start;
}

static PyObject *decimal_floats(PyObject *self, PyObject *data) {
    if (!PyBytes_Check(data)) {
        PyErr_SetString(PyExc_TypeError, "decimal_floats(data: bytes)");
        return NULL;
    }
    const char *text = PyBytes_AS_STRING(data);
    Py_ssize_t size = PyBytes_GET_SIZE(data), marks = 0;
    for (const char *at = text; (at = memchr(at, '#', (size_t)(text + size - at))) != NULL; at++) {
        marks++;
    }
    if (marks == 0) {
        Py_INCREF(data);
        return data;
    }
    char *out = PyMem_Malloc((size_t)(size + marks * (DECIMAL_FLOAT_MOST - HEX_FLOAT_LENGTH)));
    if (out == NULL) {
        return PyErr_NoMemory();
    }
    Py_ssize_t written = write_decimal(text, size, out);
    PyObject *result = written < 0 ? NULL : PyBytes_FromStringAndSize(out, written);
    PyMem_Free(out);
    return result;
}
