/* dump_members(entries) -> bytes: the members of dump.json's "data" object, from a step's journal lines.
 *
 * Included by _native.c (after _json.c: JsonBuffer). `entries` maps an entry's name to its journal line,
 * ["d", <name>, <value>]\n as journal_entry writes it, or to a list of such lines (a value completed in
 * parts: a module's parameter gradients, one line each). The answer is `<name>: <value>` joined with
 * ", ", in the dict's order; parts are merged as dict.update merges them (a key keeps its first place and
 * takes its last value), on the bytes: StepWriter.finish parsed every part with the json module and
 * encoded the merge again, ~0.3 ms a step of the writer thread's time with the GIL held, which the hook
 * thread waits for when every step is dumped. A line not in that form is a ValueError (the caller then
 * merges with the json module).
 */

#define MERGED_MEMBERS 256 /* the most members of a value merged from parts (more: the json module) */

typedef struct {
    const char *key, *value;
    Py_ssize_t key_length, value_length;
} Member;

/* The end of the JSON string starting at `at` (its opening quote): the index after its closing quote,
 * or -1 when there is none before `end` */
static Py_ssize_t string_end(const char *text, Py_ssize_t at, Py_ssize_t end) {
    if (at >= end || text[at] != '"') {
        return -1;
    }
    for (Py_ssize_t i = at + 1; i < end; i++) {
        if (text[i] == '\\') {
            i++;
        } else if (text[i] == '"') {
            return i + 1;
        }
    }
    return -1;
}

/* The end of the JSON value starting at `at`: the index of the first ',' or closing bracket outside
 * strings and nested brackets, or -1 when the value does not end before `end` */
static Py_ssize_t value_end(const char *text, Py_ssize_t at, Py_ssize_t end) {
    int depth = 0;
    for (Py_ssize_t i = at; i < end; i++) {
        char c = text[i];
        if (c == '"') {
            i = string_end(text, i, end);
            if (i < 0) {
                return -1;
            }
            i--;
        } else if (c == '{' || c == '[') {
            depth++;
        } else if (c == '}' || c == ']') {
            if (depth == 0) {
                return i;
            }
            depth--;
        } else if (c == ',' && depth == 0) {
            return i;
        }
    }
    return -1;
}

/* The name's JSON and the value of the journal line `line`: 0, or -1 (not a line of that form) */
static int line_parts(PyObject *line, const char **name, Py_ssize_t *name_length, const char **value,
                      Py_ssize_t *value_length) {
    if (!PyBytes_Check(line)) {
        return -1;
    }
    const char *text = PyBytes_AS_STRING(line);
    Py_ssize_t size = PyBytes_GET_SIZE(line);
    static const char head[] = "[\"d\", ";
    Py_ssize_t start = (Py_ssize_t)sizeof head - 1;
    if (size < start + 6 || memcmp(text, head, (size_t)start) != 0 || text[size - 2] != ']' || text[size - 1] != '\n') {
        return -1;
    }
    Py_ssize_t after = string_end(text, start, size);
    if (after < 0 || after + 2 > size - 2 || text[after] != ',' || text[after + 1] != ' ') {
        return -1;
    }
    *name = text + start;
    *name_length = after - start;
    *value = text + after + 2;
    *value_length = size - 2 - (after + 2);
    return 0;
}

/* The members of the object `value` added to `members` (dict.update: a key seen before takes the new
 * value in its old place): 0, or -1 (not an object, or too many members) */
static int merge_members(const char *value, Py_ssize_t length, Member *members, int *count) {
    if (length < 2 || value[0] != '{' || value[length - 1] != '}') {
        return -1;
    }
    Py_ssize_t at = 1, end = length - 1;
    while (at < end) {
        Py_ssize_t key_end = string_end(value, at, end);
        if (key_end < 0 || key_end + 2 > end || value[key_end] != ':' || value[key_end + 1] != ' ') {
            return -1;
        }
        Py_ssize_t start = key_end + 2, stop = value_end(value, start, length);
        if (stop < 0 || stop == start) {
            return -1;
        }
        Member member = {value + at, value + start, key_end - at, stop - start};
        int found = 0;
        for (int i = 0; i < *count && !found; i++) {
            if (members[i].key_length == member.key_length &&
                memcmp(members[i].key, member.key, (size_t)member.key_length) == 0) {
                members[i] = member;
                found = 1;
            }
        }
        if (!found) {
            if (*count == MERGED_MEMBERS) {
                return -1;
            }
            members[(*count)++] = member;
        }
        if (stop == end) {
            break;
        }
        if (stop + 2 > end || value[stop] != ',' || value[stop + 1] != ' ') {
            return -1;
        }
        at = stop + 2;
    }
    return 0;
}

/* `<name>: {merged}` of the parts `lines` added to `buffer`: 0, or -1 (with ValueError when a part is
 * not of the journal's form) */
static int add_merged(JsonBuffer *buffer, PyObject *lines) {
    Member members[MERGED_MEMBERS];
    int count = 0;
    const char *name = NULL, *value;
    Py_ssize_t name_length = 0, value_length;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(lines); i++) {
        if (line_parts(PyList_GET_ITEM(lines, i), &name, &name_length, &value, &value_length) < 0 ||
            merge_members(value, value_length, members, &count) < 0) {
            PyErr_SetString(PyExc_ValueError, "dump_members: a part that is not a journal line of an object");
            return -1;
        }
    }
    if (name == NULL) {
        PyErr_SetString(PyExc_ValueError, "dump_members: an entry of no lines");
        return -1;
    }
    if (buffer_add(buffer, name, name_length) < 0 || ADD_LITERAL(buffer, ": {") < 0) {
        return -1;
    }
    for (int i = 0; i < count; i++) {
        if ((i && ADD_LITERAL(buffer, ", ") < 0) || buffer_add(buffer, members[i].key, members[i].key_length) < 0 ||
            ADD_LITERAL(buffer, ": ") < 0 || buffer_add(buffer, members[i].value, members[i].value_length) < 0) {
            return -1;
        }
    }
    return ADD_LITERAL(buffer, "}");
}

static PyObject *dump_members(PyObject *self, PyObject *entries) {
    if (!PyDict_Check(entries)) {
        PyErr_SetString(PyExc_TypeError, "dump_members(entries: dict)");
        return NULL;
    }
    JsonBuffer buffer = {NULL, 0, 0, 0};
    Py_ssize_t position = 0;
    PyObject *key, *line, *result = NULL;
    int first = 1, failed = 0;
    while (!failed && PyDict_Next(entries, &position, &key, &line)) {
        const char *name, *value;
        Py_ssize_t name_length, value_length;
        failed = !first && ADD_LITERAL(&buffer, ", ") < 0;
        if (failed) {
            break;
        }
        if (PyList_Check(line)) {
            failed = add_merged(&buffer, line) < 0;
        } else if (line_parts(line, &name, &name_length, &value, &value_length) < 0) {
            PyErr_SetString(PyExc_ValueError, "dump_members: a line that is not a journal entry line");
            failed = 1;
        } else {
            failed = buffer_add(&buffer, name, name_length) < 0 || ADD_LITERAL(&buffer, ": ") < 0 ||
                     buffer_add(&buffer, value, value_length) < 0;
        }
        first = 0;
    }
    if (!failed) {
        result = PyBytes_FromStringAndSize(buffer.data != NULL ? buffer.data : "", buffer.size);
    }
    PyMem_Free(buffer.data);
    return result;
}
