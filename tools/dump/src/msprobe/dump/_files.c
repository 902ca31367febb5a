/* write_files(files, remove): whole files written as jsonio.write_bytes_atomic writes each one (a
 * temporary file beside it, written, fsync'ed, renamed over it), then `remove` unlinked, all in one
 * stretch without the GIL.
 *
 * Included by _native.c. The writer thread finishes a step while the next one trains, and every system
 * call Python makes gives the GIL up and takes it back: the hook thread, which gives it up at every
 * torch op, then waits for the writer's turn each time (~50 us a handover on this VM). The ~20 calls of
 * a step's three files were ~1 ms of such waits a step when every step is dumped. prepare_dirs does the
 * same for the directories of the next step's journal, opened ahead.
 */
#include <fcntl.h>
#include <sys/stat.h>

typedef struct {
    PyObject *path, *temporary; /* bytes (file system encoding) */
    PyObject *data;             /* bytes, held while the GIL is released */
} FileJob;

/* One file written through its temporary name: 0, or an errno (the temporary file removed) */
static int write_file_job(const FileJob *job) {
    int fd = open(PyBytes_AS_STRING(job->temporary), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0) {
        return errno;
    }
    const char *data = PyBytes_AS_STRING(job->data);
    Py_ssize_t left = PyBytes_GET_SIZE(job->data);
    int failed = 0;
    while (left > 0 && !failed) {
        ssize_t written = write(fd, data, (size_t)left);
        if (written < 0) {
            failed = errno == EINTR ? 0 : errno;
            continue;
        }
        data += written;
        left -= written;
    }
    if (!failed && fsync(fd) < 0) {
        failed = errno;
    }
    if (close(fd) < 0 && !failed) {
        failed = errno;
    }
    if (!failed && rename(PyBytes_AS_STRING(job->temporary), PyBytes_AS_STRING(job->path)) < 0) {
        failed = errno;
    }
    if (failed) {
        unlink(PyBytes_AS_STRING(job->temporary));
    }
    return failed;
}

static void clear_jobs(FileJob *jobs, Py_ssize_t count) {
    for (Py_ssize_t i = 0; i < count; i++) {
        Py_XDECREF(jobs[i].path);
        Py_XDECREF(jobs[i].temporary);
        Py_XDECREF(jobs[i].data);
    }
    PyMem_Free(jobs);
}

/* write_files(files: list of (path, temporary path, bytes), remove: path or None) -> None; OSError naming
 * the file that failed (the files before it are written, those after it are not) */
static PyObject *write_files(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 || !PyList_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "write_files(files: list of (path, temporary, bytes), remove)");
        return NULL;
    }
    Py_ssize_t count = PyList_GET_SIZE(args[0]);
    FileJob *jobs = PyMem_Calloc((size_t)(count ? count : 1), sizeof(FileJob));
    PyObject *remove = NULL;
    if (jobs == NULL) {
        return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *item = PyList_GET_ITEM(args[0], i);
        if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 3 || !PyBytes_Check(PyTuple_GET_ITEM(item, 2)) ||
            !PyUnicode_FSConverter(PyTuple_GET_ITEM(item, 0), &jobs[i].path) ||
            !PyUnicode_FSConverter(PyTuple_GET_ITEM(item, 1), &jobs[i].temporary)) {
            if (!PyErr_Occurred()) {
                PyErr_SetString(PyExc_TypeError, "write_files: a file is a (path, temporary, bytes) tuple");
            }
            clear_jobs(jobs, count);
            return NULL;
        }
        jobs[i].data = PyTuple_GET_ITEM(item, 2);
        Py_INCREF(jobs[i].data);
    }
    if (args[1] != Py_None && !PyUnicode_FSConverter(args[1], &remove)) {
        clear_jobs(jobs, count);
        return NULL;
    }
    Py_ssize_t failed_at = -1;
    int failed = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < count && !failed; i++) {
        failed = write_file_job(&jobs[i]);
        failed_at = failed ? i : -1;
    }
    if (!failed && remove != NULL && unlink(PyBytes_AS_STRING(remove)) < 0 && errno != ENOENT) {
        failed = errno;
    }
    Py_END_ALLOW_THREADS
    if (failed) {
        errno = failed;
        PyObject *name = failed_at >= 0 ? PyTuple_GET_ITEM(PyList_GET_ITEM(args[0], failed_at), 0) : args[1];
        PyErr_SetFromErrnoWithFilenameObject(PyExc_OSError, name);
    }
    clear_jobs(jobs, count);
    Py_XDECREF(remove);
    if (failed) {
        return NULL;
    }
    Py_RETURN_NONE;
}

/* prepare_dirs(dirs, journal) -> the directories of `dirs` made (outermost first), or None when `journal`
 * exists (nothing done then). OpenedAhead.run's check and directories in one stretch without the GIL
 * (they were several system calls, each a handover of the GIL). */
static PyObject *prepare_dirs(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 || !PyList_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "prepare_dirs(dirs: list, journal)");
        return NULL;
    }
    Py_ssize_t count = PyList_GET_SIZE(args[0]);
    PyObject *encoded = PyList_New(count), *journal = NULL, *made = NULL;
    char *was_made = PyMem_Calloc((size_t)(count ? count : 1), 1);
    int ok = encoded != NULL && was_made != NULL && PyUnicode_FSConverter(args[1], &journal);
    for (Py_ssize_t i = 0; ok && i < count; i++) {
        PyObject *path = NULL;
        ok = PyUnicode_FSConverter(PyList_GET_ITEM(args[0], i), &path);
        if (ok) {
            PyList_SET_ITEM(encoded, i, path);
        }
    }
    if (!ok) {
        if (was_made == NULL && !PyErr_Occurred()) {
            PyErr_NoMemory();
        }
        goto done;
    }
    int failed = 0, present = 0;
    Py_ssize_t failed_at = -1;
    Py_BEGIN_ALLOW_THREADS
    struct stat status;
    present = stat(PyBytes_AS_STRING(journal), &status) == 0;
    for (Py_ssize_t i = 0; !present && !failed && i < count; i++) {
        const char *path = PyBytes_AS_STRING(PyList_GET_ITEM(encoded, i));
        if (mkdir(path, 0777) == 0) {
            was_made[i] = 1;
        } else if (errno != EEXIST || stat(path, &status) < 0 || !S_ISDIR(status.st_mode)) {
            failed = errno == EEXIST ? ENOTDIR : errno;
            failed_at = i;
        }
    }
    Py_END_ALLOW_THREADS
    if (failed) {
        errno = failed;
        PyErr_SetFromErrnoWithFilenameObject(PyExc_OSError, PyList_GET_ITEM(args[0], failed_at));
        goto done;
    }
    if (present) {
        made = Py_None;
        Py_INCREF(made);
        goto done;
    }
    made = PyList_New(0);
    for (Py_ssize_t i = 0; made != NULL && i < count; i++) {
        if (was_made[i] && PyList_Append(made, PyList_GET_ITEM(args[0], i)) < 0) {
            Py_CLEAR(made);
        }
    }
done:
    Py_XDECREF(encoded);
    Py_XDECREF(journal);
    PyMem_Free(was_made);
    return made;
}
