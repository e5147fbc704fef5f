/* core.c — errors, problem lists, allocation, logging (per-thread sinks), timers, RNG, atomic files. */
#include "core/core.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#define SP_FP_BITS 0x8040u /* MXCSR: flush to zero (bit 15) and denormals are zero (bit 6) */
#endif

/* ---- errors ---- */
static _Thread_local char g_err[2048];

/* Formatted apart first: an argument may be sp_last_error() itself (a message prefixed or
 * extended), which vsnprintf must not read while it writes the same buffer. */
int sp_verror(const char *fmt, va_list ap) {
    char msg[sizeof g_err];
    vsnprintf(msg, sizeof msg, fmt, ap);
    memcpy(g_err, msg, sizeof g_err);
    return -1;
}

int sp_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    sp_verror(fmt, ap);
    va_end(ap);
    return -1;
}

int sp_error_prefix(const char *fmt, ...) {
    char pre[1024], old[sizeof g_err];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(pre, sizeof pre, fmt, ap);
    va_end(ap);
    memcpy(old, g_err, sizeof old);
    size_t lp = strlen(pre);
    if (lp > sizeof g_err - 3) lp = sizeof g_err - 3;
    memcpy(g_err, pre, lp);
    memcpy(g_err + lp, ": ", 2);
    size_t lo = strnlen(old, sizeof old);
    if (lo > sizeof g_err - lp - 3) lo = sizeof g_err - lp - 3;
    memcpy(g_err + lp + 2, old, lo);
    g_err[lp + 2 + lo] = 0;
    return -1;
}

const char *sp_last_error(void) { return g_err[0] ? g_err : "unknown error"; }
bool sp_has_error(void) { return g_err[0] != 0; }
void sp_clear_error(void) { g_err[0] = 0; }

void sp_problems_add(sp_problems *p, const char *fmt, ...) {
    if (p->n == p->cap) {
        p->cap = p->cap ? 2 * p->cap : 8;
        p->items = sp_realloc(p->items, (size_t)p->cap * sizeof *p->items);
    }
    char buf[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    p->items[p->n++] = sp_strdup(buf);
}

void sp_problems_free(sp_problems *p) {
    for (int i = 0; i < p->n; i++) free(p->items[i]);
    free(p->items);
    memset(p, 0, sizeof *p);
}

/* ---- allocation ---- */
static void default_oom(void *user, size_t n) {
    (void)user;
    fprintf(stderr, "splat: out of host memory allocating %zu bytes\n", n);
    abort();
}
/* The program's settings (splat.h, "the program's settings"), not the library's state. */
static sp_oom_handler g_oom = default_oom;
static void *g_oom_user;
static size_t g_alloc_limit; /* test hook; 0 = none */

void sp_set_oom_handler(sp_oom_handler handler, void *user) {
    g_oom = handler ? handler : default_oom;
    g_oom_user = handler ? user : NULL;
}
void sp_set_alloc_limit(size_t bytes) { g_alloc_limit = bytes; }

static void oom(size_t n) {
    g_oom(g_oom_user, n);
    abort(); /* a handler must not return */
}

const char *sp_bytes_str(double bytes) {
    static _Thread_local char buf[32];
    if (bytes >= 1e9) snprintf(buf, sizeof buf, "%.1f GB", bytes / 1e9);
    else if (bytes >= 1e6) snprintf(buf, sizeof buf, "%.1f MB", bytes / 1e6);
    else if (bytes >= 1e3) snprintf(buf, sizeof buf, "%.1f kB", bytes / 1e3);
    else snprintf(buf, sizeof buf, "%.0f bytes", bytes);
    return buf;
}

static void *alloc_failed(size_t count, size_t size, const char *what, const char *hint) {
    double bytes = (double)count * (double)size;
    sp_error("out of memory: %s for %s%s%s", sp_bytes_str(bytes), what && *what ? what : "a buffer",
             hint && *hint ? "; " : "", hint && *hint ? hint : "");
    return NULL;
}

static int alloc_refused(size_t count, size_t size) {
    if (size && count > SIZE_MAX / size) return 1;
    return g_alloc_limit && count * size > g_alloc_limit;
}

void *sp_try_alloc(size_t count, size_t size, const char *what, const char *hint) {
    if (alloc_refused(count, size)) return alloc_failed(count, size, what, hint);
    void *p = calloc(count ? count : 1, size ? size : 1);
    return p ? p : alloc_failed(count, size, what, hint);
}

void *sp_try_realloc(void *p, size_t count, size_t size, const char *what, const char *hint) {
    if (alloc_refused(count, size)) return alloc_failed(count, size, what, hint);
    size_t n = count * size;
    void *q = realloc(p, n ? n : 1);
    return q ? q : alloc_failed(count, size, what, hint);
}

void *sp_malloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) oom(n);
    return p;
}
void *sp_calloc(size_t count, size_t size) {
    if (size && count > SIZE_MAX / size) oom(SIZE_MAX);
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p) oom(count * size);
    return p;
}
void *sp_realloc(void *p, size_t n) {
    void *q = realloc(p, n ? n : 1);
    if (!q) oom(n);
    return q;
}
char *sp_strdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = sp_malloc(n);
    memcpy(d, s, n);
    return d;
}
char *sp_strfmt(const char *fmt, ...) {
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *s = sp_malloc((size_t)n + 1);
    vsnprintf(s, (size_t)n + 1, fmt, ap2);
    va_end(ap2);
    return s;
}

/* ---- logging ---- */
/* Per thread: the default sink and the current one (NULL: the default). */
static _Thread_local sp_log_sink t_default_sink = {.level = SP_LOG_INFO};
static _Thread_local sp_log_sink *t_sink;

static sp_log_sink *current_sink(void) { return t_sink ? t_sink : &t_default_sink; }

sp_log_sink *sp_log_use(sp_log_sink *sink) {
    sp_log_sink *old = current_sink();
    t_sink = sink;
    return old;
}
void sp_log_set_live_line(bool live) { current_sink()->live = live; }
void sp_log_set_level(sp_log_level level) { current_sink()->level = level; }
void sp_log_set_file(FILE *f) { current_sink()->file = f; }
void sp_log_set_quiet(bool quiet) { current_sink()->quiet = quiet; }

static const char *const level_names[] = {"debug", "info", "warning", "error"};

static void write_file_line(FILE *f, const char *level, const char *msg) {
    time_t t = time(NULL);
    struct tm tm;
    localtime_r(&t, &tm);
    char ts[32];
    strftime(ts, sizeof ts, "%Y-%m-%d %H:%M:%S", &tm);
    fprintf(f, "%s %s: %s\n", ts, level, msg);
    fflush(f);
}

void sp_log(sp_log_level level, const char *fmt, ...) {
    sp_log_sink *s = current_sink();
    char buf[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (level >= s->level && (!s->quiet || level >= SP_LOG_ERROR)) {
        if (s->fn) {
            s->fn(level, buf, s->user);
        } else {
            if (s->live) fputs("\r\033[K", stderr);
            if (level >= SP_LOG_WARN)
                fprintf(stderr, "splat: %s: %s\n", level_names[level], buf);
            else
                fprintf(stderr, "%s\n", buf);
        }
    }
    if (s->file && level >= SP_LOG_INFO) write_file_line(s->file, level_names[level], buf);
}

void sp_log_to_file(const char *fmt, ...) {
    sp_log_sink *s = current_sink();
    if (!s->file) return;
    char buf[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    write_file_line(s->file, "info", buf);
}

/* ---- time ---- */
/* ---- floating-point mode ---- */
sp_fp_mode sp_fp_enter(void) {
    sp_fp_mode m = {0};
#ifdef SP_FP_BITS
    m.bits = _mm_getcsr();
    if ((m.bits & SP_FP_BITS) != SP_FP_BITS) _mm_setcsr(m.bits | SP_FP_BITS);
#endif
    return m;
}

void sp_fp_leave(sp_fp_mode previous) {
#ifdef SP_FP_BITS
    if (_mm_getcsr() != previous.bits) _mm_setcsr(previous.bits);
#else
    (void)previous;
#endif
}

void sp_fp_set(void) {
#ifdef SP_FP_BITS
    _mm_setcsr(_mm_getcsr() | SP_FP_BITS);
#endif
}

double sp_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- RNG ---- */
void sp_rng_seed(sp_rng *r, uint64_t seed, uint64_t stream) {
    r->state = 0;
    r->inc = (stream << 1u) | 1u;
    sp_rng_u32(r);
    r->state += seed;
    sp_rng_u32(r);
}
uint32_t sp_rng_u32(sp_rng *r) {
    uint64_t old = r->state;
    r->state = old * 6364136223846793005ULL + r->inc;
    uint32_t xs = (uint32_t)(((old >> 18u) ^ old) >> 27u);
    uint32_t rot = (uint32_t)(old >> 59u);
    return (xs >> rot) | (xs << ((-rot) & 31));
}
float sp_rng_uniform(sp_rng *r) { return (float)(sp_rng_u32(r) >> 8) * (1.0f / 16777216.0f); }
float sp_rng_normal(sp_rng *r) {
    float u1 = ((float)(sp_rng_u32(r) >> 8) + 0.5f) * (1.0f / 16777216.0f);
    float u2 = sp_rng_uniform(r);
    return sqrtf(-2.0f * logf(u1)) * cosf(6.28318530718f * u2);
}
uint64_t sp_hash64(uint64_t a, uint64_t b) {
    uint64_t z = a * 0x9E3779B97F4A7C15ULL + b + 0x632BE59BD9B4E019ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* ---- files ---- */
int sp_afile_open(sp_afile *af, const char *path) {
    memset(af, 0, sizeof *af);
    af->path = sp_strdup(path);
    af->tmp = sp_strfmt("%s.tmp.%d", path, (int)getpid());
    af->f = fopen(af->tmp, "wb");
    if (!af->f) {
        sp_error("%s: cannot write: %s", path, strerror(errno));
        free(af->path);
        free(af->tmp);
        memset(af, 0, sizeof *af);
        return -1;
    }
    return 0;
}

/* fsync of the folder holding path, so that a rename into it survives a power cut. */
static void sync_parent(const char *path) {
    char *dir = sp_path_dir(path);
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
    free(dir);
}

int sp_afile_finish(sp_afile *af) {
    int rc = 0;
    if (!af->f) return sp_error("internal: finish of a file that is not open");
    /* a full disk or a file-size limit shows here (or at fsync), never as a half file under PATH */
    if (fflush(af->f) != 0 || ferror(af->f)) rc = sp_error("%s: write failed: %s", af->path, strerror(errno));
    if (rc == 0 && fsync(fileno(af->f)) != 0) rc = sp_error("%s: write failed (fsync): %s", af->path, strerror(errno));
    if (fclose(af->f) != 0 && rc == 0) rc = sp_error("%s: close failed: %s", af->path, strerror(errno));
    af->f = NULL;
    if (rc != 0) sp_afile_abort(af);
    return rc;
}

int sp_afile_sync(sp_afile *af) {
    if (!af->f) return sp_error("internal: sync of a file that is not open");
    if (fflush(af->f) != 0 || ferror(af->f)) return sp_error("%s: write failed: %s", af->path, strerror(errno));
    if (fsync(fileno(af->f)) != 0) return sp_error("%s: write failed (fsync): %s", af->path, strerror(errno));
    return 0;
}

int sp_afile_rename(sp_afile *af) {
    int rc = 0;
    if (!af->tmp || af->f) return sp_error("internal: rename of a file that is not finished");
    if (rename(af->tmp, af->path) != 0) rc = sp_error("%s: rename failed: %s", af->path, strerror(errno));
    else sync_parent(af->path);
    if (rc != 0) unlink(af->tmp);
    free(af->path);
    free(af->tmp);
    memset(af, 0, sizeof *af);
    return rc;
}

int sp_afile_commit(sp_afile *af) {
    if (sp_afile_finish(af)) return -1;
    return sp_afile_rename(af);
}

void sp_afile_abort(sp_afile *af) {
    if (af->f) fclose(af->f);
    if (af->tmp) unlink(af->tmp);
    free(af->path);
    free(af->tmp);
    memset(af, 0, sizeof *af);
}

int sp_write_file_atomic(const char *path, const void *data, size_t n) {
    sp_afile af;
    if (sp_afile_open(&af, path)) return -1;
    if (n && fwrite(data, 1, n, af.f) != n) {
        sp_error("%s: write failed: %s", path, strerror(errno));
        sp_afile_abort(&af);
        return -1;
    }
    return sp_afile_commit(&af);
}

int sp_read_file(const char *path, char **data, size_t *n) {
    *data = NULL;
    if (n) *n = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return sp_error("%s: cannot open: %s", path, strerror(errno));
    /* a FIFO would block, /dev/zero never ends, a folder reads as an error: regular files only */
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        fclose(f);
        return sp_error("%s: not a regular file", path);
    }
    size_t cap = st.st_size > 0 && (uint64_t)st.st_size < SIZE_MAX / 2 ? (size_t)st.st_size + 1 : (size_t)1 << 16;
    size_t len = 0;
    char *buf = sp_try_alloc(cap + 1, 1, path, "the file is too large for this machine's memory");
    while (buf) {
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (len < cap) break;
        char *nb = cap > SIZE_MAX / 4 ? NULL : sp_try_realloc(buf, 2 * cap + 1, 1, path, "the file is too large for this machine's memory");
        if (!nb) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = nb;
        cap *= 2;
    }
    if (!buf) {
        fclose(f);
        return -1;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        return sp_error("%s: read failed", path);
    }
    buf[len] = 0;
    *data = buf;
    if (n) *n = len;
    return 0;
}

int sp_mkdir_p(const char *path) {
    char *p = sp_strdup(path);
    for (char *s = p + 1; *s; s++) {
        if (*s != '/') continue;
        *s = 0;
        if (mkdir(p, 0755) != 0 && errno != EEXIST) {
            sp_error("%s: cannot create directory: %s", p, strerror(errno));
            free(p);
            return -1;
        }
        *s = '/';
    }
    int rc = 0;
    if (mkdir(p, 0755) != 0 && errno != EEXIST) rc = sp_error("%s: cannot create directory: %s", p, strerror(errno));
    else if (!sp_dir_exists(p)) rc = sp_error("%s: exists and is not a directory", p);
    free(p);
    return rc;
}

bool sp_file_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}
bool sp_dir_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

char *sp_path_join(const char *a, const char *b) {
    if (b[0] == '/' || !a || !a[0]) return sp_strdup(b);
    size_t la = strlen(a);
    return sp_strfmt("%s%s%s", a, a[la - 1] == '/' ? "" : "/", b);
}

char *sp_path_dir(const char *path) {
    const char *s = strrchr(path, '/');
    if (!s) return sp_strdup(".");
    if (s == path) return sp_strdup("/");
    char *d = sp_malloc((size_t)(s - path) + 1);
    memcpy(d, path, (size_t)(s - path));
    d[s - path] = 0;
    return d;
}

char *sp_path_absolute(const char *path) {
    char *real = realpath(path, NULL);
    if (real) {
        char *d = sp_strdup(real);
        free(real);
        return d;
    }
    if (path[0] == '/') return sp_strdup(path);
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd)) return sp_strdup(path);
    return sp_path_join(cwd, path);
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st, (void)flag, (void)ftw;
    if (remove(path) != 0 && errno != ENOENT) return sp_error("%s: cannot remove: %s", path, strerror(errno));
    return 0;
}

int sp_remove_tree(const char *path) {
    struct stat st;
    if (lstat(path, &st) != 0) return errno == ENOENT ? 0 : sp_error("%s: %s", path, strerror(errno));
    if (!S_ISDIR(st.st_mode)) return remove_entry(path, &st, 0, NULL);
    return nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS) == 0 ? 0 : -1;
}

/* nftw has no user pointer: the first entry that could not be removed, per thread */
static _Thread_local int t_unremovable;

static int check_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)ftw;
    char *dir = sp_path_dir(path);
    int ok = access(dir, W_OK | X_OK) == 0;
    if (!ok) sp_error("%s: cannot be removed (%s: %s)", path, dir, strerror(errno));
    free(dir);
    if (ok && (flag == FTW_DNR || (S_ISDIR(st->st_mode) && access(path, R_OK | W_OK | X_OK) != 0))) {
        sp_error("%s: its files cannot be removed: %s", path, strerror(errno ? errno : EACCES));
        ok = 0;
    }
    if (!ok) t_unremovable = 1;
    return ok ? 0 : 1;
}

int sp_tree_removable(const char *path) {
    struct stat st;
    if (lstat(path, &st) != 0) return errno == ENOENT ? 0 : sp_error("%s: %s", path, strerror(errno));
    t_unremovable = 0;
    if (!S_ISDIR(st.st_mode)) return check_entry(path, &st, FTW_F, NULL) ? -1 : 0;
    int rc = nftw(path, check_entry, 16, FTW_PHYS);
    if (rc != 0 && !t_unremovable) sp_error("%s: cannot be read: %s", path, strerror(errno));
    return rc == 0 ? 0 : -1;
}

int sp_dir_lock(const char *dir) {
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return sp_error("%s: cannot open: %s", dir, strerror(errno));
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        if (e == ENOLCK || e == EOPNOTSUPP || e == ENOSYS || e == EINVAL) { /* a file system without locks */
            SP_WARN("%s: this file system cannot lock the folder (%s): nothing stops a second training from "
                    "writing it at the same time", dir, strerror(e));
            return fd; /* held, unlocked: the run goes on as before locks existed */
        }
        close(fd);
        if (e == EWOULDBLOCK)
            return sp_error("%s: another training is writing this run folder (it holds the folder's lock); wait for "
                            "it to end, or train into another output.run_dir", dir);
        return sp_error("%s: cannot lock: %s", dir, strerror(e));
    }
    return fd;
}

void sp_dir_unlock(int fd) {
    if (fd >= 0) close(fd); /* closing the last descriptor releases the lock */
}

bool sp_is_temporary_name(const char *name) {
    const char *t = NULL;
    for (const char *q = strstr(name, ".tmp."); q; q = strstr(q + 1, ".tmp.")) t = q;
    return t && t != name && t[5] && strspn(t + 5, "0123456789") == strlen(t + 5);
}

int sp_remove_temporaries(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    int rc = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!sp_is_temporary_name(e->d_name)) continue;
        char *p = sp_path_join(dir, e->d_name);
        if (remove(p) != 0 && errno != ENOENT) rc = sp_error("%s: cannot remove: %s", p, strerror(errno));
        free(p);
    }
    closedir(d);
    return rc;
}
