/* record_plain_call: a whole API call made without autograd (an optimizer's step), recorded in one C
 * call: what DumpEngine.api_begin, api_inputs, api_outputs and _add do for it, in that order; and
 * finish_call: api_outputs and _add alone, for a call with autograd whose gates Python made.
 *
 * Included by _native.c after _walk.c and _json.c. The engine builds the context (plain_context in
 * engine.py) only where nothing is decided per entry: every entry kept, no filter, host statistics
 * written at once, no tensor files, and the step's journal open. Whatever this does not do itself
 * (pending tensors, entries queued before it) goes to the context's
 * `rest(name, entry, tensors, with_stack)`.
 */

enum {
    P_ENGINE,   /* the DumpEngine: its "busy" flag is set while the call's values are encoded */
    P_COUNTERS, /* the engine's call counters: API name -> calls so far this step */
    P_BASES,    /* (prefix, api) -> "prefix.api", made once per API */
    P_WHOLE,    /* encode_args' and encode_outputs' first three arguments */
    P_TENSOR,
    P_SLOW,
    P_FD,       /* journal_entry's first two: the journal (mapped, or its descriptor) and the step's lines */
    P_LINES,
    P_METADATA, /* the step's stack and construct records, written in bulk by the background thread */
    P_MODULES,  /* the engine's open module calls (mix: the API's construct parent), or None (L1) */
    P_PENDING,  /* the engine's entries waiting for statistics: an entry may not overtake them */
    P_CAPTURE,  /* stack.capture */
    P_REST,     /* rest(name, entry, tensors, with_stack): the engine's _add */
    P_SIZE
};

static PyObject *s_busy, *s_forward, *v_construct, *v_stack, *k_output, *s_want_forward, *s_inputs, *s_tensors_attr,
    *s_parent, *s_parameters, *s_plain, *k_backward_tail;

static int call_init(void) {
#define INTERN(var, text) if ((var = PyUnicode_InternFromString(text)) == NULL) return -1;
    INTERN(s_busy, "busy") INTERN(s_forward, "forward") INTERN(v_construct, "c") INTERN(v_stack, "s")
    INTERN(k_output, "output") INTERN(s_want_forward, "want_forward") INTERN(s_inputs, "inputs")
    INTERN(s_tensors_attr, "tensors") INTERN(s_parent, "parent") INTERN(s_parameters, "parameters")
    INTERN(s_plain, "plain") INTERN(k_backward_tail, "backward")
#undef INTERN
    return 0;
}

/* The items of a plain context (borrowed from it), or NULL with a TypeError when `plain` is not one */
static PyObject *const *plain_items(PyObject *plain) {
    PyObject *const *context = PyTuple_Check(plain) && PyTuple_GET_SIZE(plain) == P_SIZE ?
        &PyTuple_GET_ITEM(plain, 0) : NULL;
    if (context == NULL || !PyDict_Check(context[P_COUNTERS]) || !PyDict_Check(context[P_BASES]) ||
        !PyType_Check(context[P_TENSOR]) || !PyDict_Check(context[P_LINES]) || !PyList_Check(context[P_METADATA]) ||
        !PyList_Check(context[P_PENDING]) || !(context[P_MODULES] == Py_None || PyList_Check(context[P_MODULES]))) {
        PyErr_SetString(PyExc_TypeError, "malformed context: not DumpEngine.plain_context()'s");
        return NULL;
    }
    return context;
}

static int set_busy(PyObject *engine, PyObject *value) {
    return PyObject_SetAttr(engine, s_busy, value);
}

/* engine.busy = False. An error already set stays (a failure to clear the flag then is dropped); -1 when
 * clearing it fails with no error before. */
static int busy_off(PyObject *engine) {
    if (!PyErr_Occurred()) {
        return set_busy(engine, Py_False);
    }
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    if (set_busy(engine, Py_False) < 0) {
        PyErr_Clear();
    }
    PyErr_Restore(type, value, traceback);
    return 0;
}

/* base + middle + the decimal index + tail, a new str: what PyUnicode_FromFormat("%U%s%zd%s") makes,
 * without its format parsing and vsprintf (~0.4 us a name; a module call names two, an API call one) */
static PyObject *indexed_name(PyObject *base, const char *middle, Py_ssize_t index, const char *tail) {
    if (!PyUnicode_IS_ASCII(base) || index < 0) {
        return PyUnicode_FromFormat("%U%s%zd%s", base, middle, index, tail);
    }
    char digits[24];
    int count = 0;
    size_t value = (size_t)index;
    do {
        digits[count++] = (char)('0' + value % 10);
        value /= 10;
    } while (value != 0);
    size_t before = (size_t)PyUnicode_GET_LENGTH(base), mid = strlen(middle), end = strlen(tail);
    PyObject *name = PyUnicode_New((Py_ssize_t)(before + mid + (size_t)count + end), 127);
    if (name == NULL) {
        return NULL;
    }
    char *out = (char *)PyUnicode_1BYTE_DATA(name);
    memcpy(out, PyUnicode_1BYTE_DATA(base), before);
    out += before;
    memcpy(out, middle, mid);
    out += mid;
    while (count > 0) {
        *out++ = digits[--count];
    }
    memcpy(out, tail, end);
    return name;
}

/* "prefix.api.N.forward", counting the call (api_begin's name) */
static PyObject *forward_name(PyObject *const *context, PyObject *key) {
    PyObject *base = PyDict_GetItemWithError(context[P_BASES], key);
    if (base == NULL) {
        if (PyErr_Occurred() || !PyTuple_Check(key) || PyTuple_GET_SIZE(key) < 2) {
            if (!PyErr_Occurred()) {
                PyErr_SetString(PyExc_TypeError, "record_plain_call: key must be (prefix, api)");
            }
            return NULL;
        }
        base = PyUnicode_FromFormat("%S.%S", PyTuple_GET_ITEM(key, 0), PyTuple_GET_ITEM(key, 1));
        if (base == NULL || PyDict_SetItem(context[P_BASES], key, base) < 0) {
            Py_XDECREF(base);
            return NULL;
        }
        Py_DECREF(base); /* the dict holds it */
    }
    PyObject *counted = PyDict_GetItemWithError(context[P_COUNTERS], base);
    Py_ssize_t index = counted == NULL ? 0 : PyLong_AsSsize_t(counted);
    if (PyErr_Occurred()) {
        return NULL;
    }
    PyObject *next = PyLong_FromSsize_t(index + 1);
    int failed = next == NULL || PyDict_SetItem(context[P_COUNTERS], base, next) < 0;
    Py_XDECREF(next);
    return failed ? NULL : indexed_name(base, ".", index, ".forward");
}

/* A metadata record (kind, name, value) onto the step's list. Out of the cycle collector's sight: its
 * items are strings, None or a stack's list of strings, none of which can lead back to it, and a step
 * keeps hundreds of them (each tracked one brought the young generation's next collection closer). */
static int append_pair(PyObject *list, PyObject *kind, PyObject *name, PyObject *value) {
    PyObject *item = PyTuple_Pack(3, kind, name, value);
    untrack(item);
    int failed = item == NULL || PyList_Append(list, item) < 0;
    Py_XDECREF(item);
    return failed ? -1 : 0;
}

/* mix: the construct record of entry `name` under the module call `owner` (a Call, or None: at the top) */
static int construct_under(PyObject *const *context, PyObject *name, PyObject *owner) {
    PyObject *parent = owner == Py_None ? (Py_INCREF(Py_None), Py_None) : call_get(owner, s_forward);
    if (parent == NULL) {
        return -1;
    }
    int failed = append_pair(context[P_METADATA], v_construct, name, parent);
    Py_DECREF(parent);
    return failed;
}

/* mix: the construct record of the API under the innermost open module call */
static int construct(PyObject *const *context, PyObject *name) {
    PyObject *modules = context[P_MODULES];
    if (modules == Py_None) {
        return 0;
    }
    Py_ssize_t open = PyList_GET_SIZE(modules);
    return construct_under(context, name, open ? PyList_GET_ITEM(modules, open - 1) : Py_None);
}

/* The finished entry (with the caller's stack when `with_stack`): into the journal here, or to the
 * engine's _add where something waits */
static int add_entry(PyObject *const *context, PyObject *name, PyObject *entry, PyObject *tensors, int with_stack) {
    if (PyList_GET_SIZE(tensors) == 0 && PyList_GET_SIZE(context[P_PENDING]) == 0) {
        PyObject *journal[4] = {context[P_FD], context[P_LINES], name, entry};
        PyObject *written = journal_entry(NULL, journal, 4);
        if (written != NULL) {
            Py_DECREF(written);
            if (!with_stack) {
                return 0;
            }
            PyObject *frames = PyObject_CallNoArgs(context[P_CAPTURE]);
            if (frames == NULL) {
                return -1;
            }
            int filled = PyObject_IsTrue(frames);
            int failed = filled < 0 || (filled && append_pair(context[P_METADATA], v_stack, name, frames) < 0);
            Py_DECREF(frames);
            return failed ? -1 : 0;
        }
        if (!PyErr_ExceptionMatches(PyExc_TypeError)) {
            return -1;
        }
        PyErr_Clear(); /* refused before anything was written: the json module's path writes it */
    }
    PyObject *rest_args[4] = {name, entry, tensors, with_stack ? Py_True : Py_False};
    PyObject *done = PyObject_Vectorcall(context[P_REST], rest_args, 4, NULL);
    Py_XDECREF(done);
    return done == NULL ? -1 : 0;
}

/* record_plain_call(context: tuple, key: (prefix, api), func, args: tuple, kwargs: dict or None)
 *   -> func(*args, **kwargs), its forward entry recorded */
static PyObject *record_plain_call(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 5 || !PyTuple_Check(args[3]) || !(args[4] == Py_None || PyDict_Check(args[4]))) {
        PyErr_SetString(PyExc_TypeError, "record_plain_call(context, key, func, args: tuple, kwargs: dict or None)");
        return NULL;
    }
    PyObject *const *context = plain_items(args[0]);
    if (context == NULL) {
        return NULL;
    }
    PyObject *engine = context[P_ENGINE], *kwargs = args[4];
    PyObject *name = forward_name(context, args[1]);
    if (name == NULL) {
        return NULL;
    }
    PyObject *tensors = PyList_New(0), *entry = NULL, *output = NULL, *encoded = NULL;
    if (tensors == NULL || set_busy(engine, Py_True) < 0) {
        goto fail;
    }
    PyObject *walk_in[6] = {context[P_WHOLE], context[P_TENSOR], context[P_SLOW], args[3], kwargs, tensors};
    entry = encode_args(NULL, walk_in, 6);
    if (busy_off(engine) < 0 || entry == NULL) {
        goto fail;
    }
    output = PyObject_Call(args[2], args[3], kwargs != Py_None && PyDict_GET_SIZE(kwargs) ? kwargs : NULL);
    if (output == NULL || set_busy(engine, Py_True) < 0) {
        goto fail;
    }
    PyObject *walk_out[5] = {context[P_WHOLE], context[P_TENSOR], context[P_SLOW], output, tensors};
    encoded = encode_outputs(NULL, walk_out, 5);
    if (encoded == NULL || PyDict_SetItem(entry, k_output, encoded) < 0 || construct(context, name) < 0 ||
        add_entry(context, name, entry, tensors, 1) < 0) {
        goto fail;
    }
    if (set_busy(engine, Py_False) < 0) {
        goto fail;
    }
    Py_DECREF(name);
    Py_DECREF(tensors);
    Py_DECREF(entry);
    Py_DECREF(encoded);
    return output;
fail:
    busy_off(engine); /* an error is set: it stays */
    Py_DECREF(name);
    Py_XDECREF(tensors);
    Py_XDECREF(entry);
    Py_XDECREF(output);
    Py_XDECREF(encoded);
    return NULL;
}

/* {name: record} of a module's parameters, walked as Encoder.encode(value, "parameters", (name,), out) */
static PyObject *encode_parameters(PyObject *const *context, PyObject *parameters, PyObject *tensors) {
    Walk walk = {context[P_WHOLE], context[P_TENSOR], context[P_SLOW], tensors, s_parameters, {NULL}, 0};
    PyObject *encoded = PyDict_New();
    Py_ssize_t at = 0;
    PyObject *key, *value;
    while (encoded != NULL && PyDict_Next(parameters, &at, &key, &value)) {
        PyObject *name = PyObject_Str(key), *record = NULL;
        if (name != NULL) {
            walk.position[0] = name;
            walk.length = 1;
            Py_INCREF(value);
            record = encode_one(&walk, value, 0);
            Py_DECREF(value);
        }
        if (record == NULL || PyDict_SetItem(encoded, name, record) < 0) {
            Py_CLEAR(encoded);
        }
        Py_XDECREF(name);
        Py_XDECREF(record);
    }
    return encoded;
}

/* finish_call(context, call, output[, parameters]) -> None: DumpEngine.api_outputs (or module_end, with
 * the module's parameters: a dict or None) for a call recorded in Python (one with autograd, whose gates
 * are Python's; a module's) while the plain context holds: its outputs walked, an API's construct record
 * (mix) and its forward entry journaled with the caller's stack. */
static PyObject *finish_call(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs < 3 || nargs > 4 || (nargs == 4 && args[3] != Py_None && !PyDict_Check(args[3]))) {
        PyErr_SetString(PyExc_TypeError, "finish_call(context, call, output, parameters: dict or None = None)");
        return NULL;
    }
    PyObject *parameters = nargs == 4 && args[3] != Py_None && PyDict_GET_SIZE(args[3]) ? args[3] : NULL;
    PyObject *const *context = plain_items(args[0]);
    if (context == NULL) {
        return NULL;
    }
    PyObject *engine = context[P_ENGINE], *call = args[1];
    PyObject *wanted = call_get(call, s_want_forward);
    int want = wanted == NULL ? -1 : PyObject_IsTrue(wanted);
    Py_XDECREF(wanted);
    if (want <= 0) {
        return want < 0 ? NULL : (Py_INCREF(Py_None), Py_None);
    }
    PyObject *entry = call_get(call, s_inputs), *tensors = call_get(call, s_tensors_attr);
    PyObject *name = call_get(call, s_forward), *encoded = NULL, *fresh = NULL;
    int failed = entry == NULL || tensors == NULL || name == NULL || !PyList_Check(tensors) || !PyUnicode_Check(name) ||
                 set_busy(engine, Py_True) < 0;
    if (!failed && entry == Py_None) { /* inputs not recorded (a filter): an empty record of them */
        Py_DECREF(entry);
        entry = Py_BuildValue("{s[]s{}}", "input_args", "input_kwargs");
        failed = entry == NULL;
    }
    if (!failed) {
        failed = !PyDict_Check(entry) || call_set(call, s_inputs, Py_None) < 0;
    }
    if (!failed) {
        PyObject *walk_out[5] = {context[P_WHOLE], context[P_TENSOR], context[P_SLOW], args[2], tensors};
        encoded = encode_outputs(NULL, walk_out, 5);
        failed = encoded == NULL || PyDict_SetItem(entry, k_output, encoded) < 0;
    }
    if (!failed && parameters != NULL) {
        PyObject *records = encode_parameters(context, parameters, tensors);
        failed = records == NULL || PyDict_SetItem(entry, s_parameters, records) < 0;
        Py_XDECREF(records);
    }
    if (!failed && nargs == 3 && context[P_MODULES] != Py_None) { /* mix: under the module call it was made in */
        PyObject *parent = call_get(call, s_parent);
        failed = parent == NULL || construct_under(context, name, parent) < 0;
        Py_XDECREF(parent);
    }
    if (!failed) {
        fresh = PyList_New(0);
        failed = fresh == NULL || add_entry(context, name, entry, tensors, 1) < 0 ||
                 call_set(call, s_tensors_attr, fresh) < 0;
    }
    if (failed && !PyErr_Occurred()) {
        PyErr_SetString(PyExc_TypeError,
                        "finish_call: a call's inputs must be a dict, its tensors a list, its name a str");
    }
    if (busy_off(engine) < 0) {
        failed = 1;
    }
    Py_XDECREF(entry);
    Py_XDECREF(tensors);
    Py_XDECREF(name);
    Py_XDECREF(encoded);
    Py_XDECREF(fresh);
    if (failed) {
        return NULL;
    }
    Py_RETURN_NONE;
}
