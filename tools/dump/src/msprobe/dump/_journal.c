/* MappedJournal: a step's journal appended to through a shared memory mapping of the file.
 *
 * A record copied into a MAP_SHARED mapping is in the kernel's page cache at once, as a write() would
 * put it there: a process killed right after keeps it. It costs no system call: on the bench model a
 * write() per entry was 0.03 of the L0 step ratio and 0.12 of L1's (~2-3 us each beside the model's
 * kernels). The file is reserved ahead (posix_fallocate: a full disk is an OSError here, not a SIGBUS on
 * a later store) and the pages the step is expected to write are faulted in writable when mapped
 * (MADV_POPULATE_WRITE, on the background thread that opens the next step's journal, without the GIL);
 * it grows by doubling. close() cuts the file to what was written; a killed process leaves zeros after
 * its last record, which the journal's reader drops
 * (msprobe/schema/journal.py).
 *
 * A child forked while a journal is mapped shares the mapping but not the parent's position in it: its
 * appends are dropped (a forked worker is not the rank being recorded) and its close() leaves the file
 * alone.
 *
 * Included by _native.c after _calltype.c (add_type). Linux only (posix_fallocate, mremap): elsewhere the
 * module has no MappedJournal and journals are written with write().
 */
#ifdef __linux__
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <pthread.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14; older kernels answer EINVAL, and pages fault in on first store */
#endif

#define JOURNAL_ROUND ((Py_ssize_t)1 << 16)

static unsigned long fork_generation = 0;

static void journal_forked(void) {
    fork_generation++;
}

typedef struct {
    PyObject_HEAD
    int fd;
    char *base;                /* NULL once closed */
    Py_ssize_t used, capacity;
    unsigned long generation;  /* fork_generation when mapped: another one means a forked child */
} MappedJournal;

static Py_ssize_t journal_rounded(Py_ssize_t size) {
    return (size + JOURNAL_ROUND - 1) / JOURNAL_ROUND * JOURNAL_ROUND;
}

/* The file `fd` reserved and mapped up to `wanted` bytes (from `*capacity`, mapped at `*base` unless
 * NULL), the first `populate` bytes past the old end faulted in writable: 0, or an errno. No Python API:
 * MappedJournal() calls it without the GIL (reserving, mapping and faulting in a quarter megabyte took
 * ~0.35 ms of the writer thread, all of it with the GIL held, which the hook thread waited for) */
static int journal_map_raw(int fd, char **base, Py_ssize_t *capacity, Py_ssize_t wanted, Py_ssize_t populate) {
    int failed;
    do {
        failed = posix_fallocate(fd, *capacity, wanted - *capacity);
    } while (failed == EINTR);
    if (failed != 0) {
        return failed;
    }
    void *mapped = *base == NULL ? mmap(NULL, (size_t)wanted, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) :
                                   mremap(*base, (size_t)*capacity, (size_t)wanted, MREMAP_MAYMOVE);
    if (mapped == MAP_FAILED) {
        return errno;
    }
    if (populate > wanted - *capacity) {
        populate = wanted - *capacity;
    }
    if (populate > 0) { /* best effort: what it does not fault in now faults in on the first store */
        madvise((char *)mapped + *capacity, (size_t)populate, MADV_POPULATE_WRITE);
    }
    *base = mapped;
    *capacity = wanted;
    return 0;
}

/* The journal grown to `wanted` bytes (with the GIL: the hook thread appends meanwhile): 0, or -1 with
 * OSError */
static int journal_map(MappedJournal *self, Py_ssize_t wanted) {
    int failed = journal_map_raw(self->fd, &self->base, &self->capacity, wanted, 0);
    if (failed != 0) {
        errno = failed;
        PyErr_SetFromErrno(PyExc_OSError);
        return -1;
    }
    return 0;
}

/* `size` bytes appended: 0, or -1 with an error (closed, or the file cannot grow) */
static int journal_append(MappedJournal *self, const char *data, Py_ssize_t size) {
    if (self->generation != fork_generation) {
        return 0;
    }
    if (self->base == NULL) {
        PyErr_SetString(PyExc_ValueError, "MappedJournal: closed");
        return -1;
    }
    if (size > self->capacity - self->used) {
        Py_ssize_t wanted = self->capacity * 2;
        if (wanted < self->used + size) {
            wanted = self->used + size;
        }
        if (journal_map(self, journal_rounded(wanted)) < 0) {
            return -1;
        }
    }
    memcpy(self->base + self->used, data, (size_t)size);
    self->used += size;
    return 0;
}

/* The mapping `base` (NULL: none) of `capacity` bytes and the descriptor `fd` (-1: none) released. No
 * Python API: close() calls it without the GIL */
static void journal_release(char *base, Py_ssize_t capacity, int fd) {
    if (base != NULL) {
        munmap(base, (size_t)capacity);
    }
    if (fd >= 0) {
        close(fd);
    }
}

static void journal_unmap(MappedJournal *self) {
    journal_release(self->base, self->capacity, self->fd);
    self->base = NULL;
    self->fd = -1;
}

/* Appends go after the last whole record of the file's first `size` bytes: a journal a killed run left
 * (the same step of a run started again) ends in its reserved zeros, maybe after a record the kill cut,
 * and both are overwritten (with zeros first: no piece of the cut record may follow the next one) */
static void journal_resume(MappedJournal *self, Py_ssize_t size) {
    Py_ssize_t end = size;
    while (end > 0 && self->base[end - 1] != '\n') {
        end--;
    }
    memset(self->base + end, 0, (size_t)(size - end));
    self->used = end;
}

/* close(): the mapping released and the file cut to what was written (not by a forked child). The
 * journal is marked closed first, with the GIL (an append after that fails as closed); the system calls
 * run without it. */
static PyObject *MappedJournal_close(MappedJournal *self, PyObject *unused) {
    int owner = self->generation == fork_generation, fd = self->fd, failed = 0;
    char *base = self->base;
    Py_ssize_t capacity = self->capacity, used = self->used;
    self->base = NULL;
    self->fd = -1;
    Py_BEGIN_ALLOW_THREADS
    failed = base != NULL && owner && ftruncate(fd, (off_t)used) < 0 ? errno : 0;
    journal_release(base, capacity, fd);
    Py_END_ALLOW_THREADS
    if (failed) {
        errno = failed;
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    Py_RETURN_NONE;
}

/* append(data: bytes) */
static PyObject *MappedJournal_append(MappedJournal *self, PyObject *data) {
    if (!PyBytes_Check(data)) {
        PyErr_SetString(PyExc_TypeError, "MappedJournal.append(data: bytes)");
        return NULL;
    }
    if (journal_append(self, PyBytes_AS_STRING(data), PyBytes_GET_SIZE(data)) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *MappedJournal_used(MappedJournal *self, void *unused) {
    return PyLong_FromSsize_t(self->used);
}

static void MappedJournal_dealloc(MappedJournal *self) {
    journal_unmap(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef journal_methods[] = {
    {"append", (PyCFunction)MappedJournal_append, METH_O, "append bytes (whole records)"},
    {"close", (PyCFunction)MappedJournal_close, METH_NOARGS, "release the mapping; the file keeps what was written"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef journal_getset[] = {
    {"used", (getter)MappedJournal_used, NULL, "bytes written", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyObject *MappedJournal_new(PyTypeObject *type, PyObject *args, PyObject *kwargs);

static PyTypeObject MappedJournalType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "_native.MappedJournal",
    .tp_basicsize = sizeof(MappedJournal),
    .tp_dealloc = (destructor)MappedJournal_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "MappedJournal(path, capacity): a journal file appended to through a shared mapping",
    .tp_methods = journal_methods,
    .tp_getset = journal_getset,
    .tp_new = MappedJournal_new,
};

/* MappedJournal(path, capacity, populate=capacity): appends after the last whole record the file holds,
 * `capacity` bytes reserved beyond what it holds and the first `populate` of them faulted in writable (what
 * the step is expected to write: faulting in more only costs the writer thread) */
static PyObject *MappedJournal_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    PyObject *path;
    Py_ssize_t capacity, populate = -1;
    if (kwargs != NULL || !PyArg_ParseTuple(args, "O&n|n", PyUnicode_FSConverter, &path, &capacity, &populate)) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_TypeError, "MappedJournal(path, capacity, populate=capacity)");
        }
        return NULL;
    }
    MappedJournal *self = (MappedJournal *)type->tp_alloc(type, 0);
    if (self == NULL) {
        Py_DECREF(path);
        return NULL;
    }
    self->generation = fork_generation;
    self->fd = -1;
    if (capacity < JOURNAL_ROUND) {
        capacity = JOURNAL_ROUND;
    }
    if (populate < 0) {
        populate = capacity;
    }
    int failed = 0;
    struct stat status;
    Py_BEGIN_ALLOW_THREADS /* (self is not shared yet) */
    self->fd = open(PyBytes_AS_STRING(path), O_RDWR | O_CLOEXEC);
    if (self->fd < 0 || fstat(self->fd, &status) < 0) {
        failed = errno;
    } else {
        self->capacity = (Py_ssize_t)status.st_size;
        failed = journal_map_raw(self->fd, &self->base, &self->capacity,
                                 journal_rounded(self->capacity + capacity), populate);
    }
    Py_END_ALLOW_THREADS
    Py_DECREF(path);
    if (failed != 0) {
        errno = failed;
        PyErr_SetFromErrno(PyExc_OSError);
        Py_DECREF(self);
        return NULL;
    }
    journal_resume(self, (Py_ssize_t)status.st_size);
    return (PyObject *)self;
}

/* `object` as a MappedJournal, or NULL when it is something else (a file descriptor) */
static MappedJournal *mapped_journal(PyObject *object) {
    return Py_TYPE(object) == &MappedJournalType ? (MappedJournal *)object : NULL;
}

static int journal_init(PyObject *module) {
    if (pthread_atfork(NULL, NULL, journal_forked) != 0) {
        return -1;
    }
    return add_type(module, &MappedJournalType, "MappedJournal");
}
#else
typedef struct MappedJournal MappedJournal;

static MappedJournal *mapped_journal(PyObject *object) {
    return NULL;
}

static int journal_append(MappedJournal *self, const char *data, Py_ssize_t size) {
    PyErr_SetString(PyExc_SystemError, "MappedJournal: not built here");
    return -1;
}

static int journal_init(PyObject *module) {
    return 0;
}
#endif
