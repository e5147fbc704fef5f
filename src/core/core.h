/* core.h — the bottom layer: errors, problem lists, allocation, logging, timers, RNG and
 * atomic files. Everything above includes this; it includes nothing of splat's. */
#ifndef SPLAT_CORE_H
#define SPLAT_CORE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define SP_PRINTF(a, b) __attribute__((format(printf, a, b)))

/* Errors. Fallible functions return 0 on success and -1 on failure, after recording a message
 * with sp_error() (thread-local; the newest message wins). Messages name the file (and line,
 * for text formats) they are about: "lego/transforms_train.json: frame 3: no file_path". */
int sp_error(const char *fmt, ...) SP_PRINTF(1, 2); /* records, returns -1 */
int sp_verror(const char *fmt, va_list ap);
/* Prefix the current message: sp_error_prefix("%s", path) turns "bad x" into "path: bad x". */
int sp_error_prefix(const char *fmt, ...) SP_PRINTF(1, 2);
const char *sp_last_error(void);
bool sp_has_error(void); /* a message was recorded since the last sp_clear_error() */
void sp_clear_error(void);

/* Problem lists: `check` and config validation report every problem, not only the first. */
typedef struct {
    char **items;
    int n, cap;
} sp_problems;
void sp_problems_add(sp_problems *p, const char *fmt, ...) SP_PRINTF(2, 3);
void sp_problems_free(sp_problems *p);

/* Host allocation comes in two kinds.
 *
 * Fallible, for every size that comes from input or from the scene (Gaussian stores, images,
 * datasets, backend buffers, refine growth): sp_try_alloc and sp_try_realloc return NULL when
 * the memory is not there (or count * size overflows), after recording an error that says what
 * was being allocated, how much, and what to change:
 *   "out of memory: 1.2 GB for the Gaussian parameters (5000000 Gaussians); lower refine.capacity"
 * The caller returns -1 up; the trainer stops and keeps the last checkpoint. sp_try_realloc
 * leaves the old block valid on failure. `what` and `hint` are short phrases ("" or NULL: none).
 *
 * Infallible, for small bookkeeping whose size does not grow with the input (names, paths,
 * messages, lists of problems): sp_malloc, sp_calloc, sp_realloc, sp_strdup, sp_strfmt. If even
 * these fail the process is out of memory for anything; they call the out-of-memory handler,
 * which a program sets once (the splat CLI prints a message and exits with status 2). The
 * default handler prints the size to stderr and calls abort(). The library never calls exit().
 */
void *sp_try_alloc(size_t count, size_t size, const char *what, const char *hint);   /* zeroed */
void *sp_try_realloc(void *p, size_t count, size_t size, const char *what, const char *hint);
/* "12.0 MB", "1.5 GB": byte counts as a person reads them (static thread-local buffer). */
const char *sp_bytes_str(double bytes);
typedef void (*sp_oom_handler)(void *user, size_t bytes);
/* The program's handler (splat_set_oom_handler) and the pointer it is called with; NULL: the
 * default (message, abort()). Process-wide: set once, before other threads allocate. */
void sp_set_oom_handler(sp_oom_handler handler, void *user);
/* Test hook: fallible allocations of more than `bytes` fail as if memory ran out (0: no limit).
 * Lets tests drive every out-of-memory path without exhausting the machine. */
void sp_set_alloc_limit(size_t bytes);

void *sp_malloc(size_t n);
void *sp_calloc(size_t count, size_t size);
void *sp_realloc(void *p, size_t n);
char *sp_strdup(const char *s);
char *sp_strfmt(const char *fmt, ...) SP_PRINTF(1, 2); /* malloc'd formatted string */
#define SP_NEW(T, count) ((T *)sp_calloc((size_t)(count), sizeof(T)))

/* Logging. Messages go to the calling thread's current log sink. There is no process-wide
 * logging state: each thread starts with its own default sink (level info, shown messages on
 * stderr, no file), and a caller that wants messages elsewhere for the duration of a call makes
 * its own sink current with sp_log_use() and restores the previous one afterwards (the public
 * API does this at every entry point, routing messages to the context's callback). Work that
 * the library runs on OpenMP worker threads logs nothing; if it did, the message would go to
 * that worker's default sink.
 *
 * The setters below change the current sink of the calling thread. */
typedef enum { SP_LOG_DEBUG, SP_LOG_INFO, SP_LOG_WARN, SP_LOG_ERROR } sp_log_level;
/* Receives every message the sink shows (already formatted, no newline). */
typedef void (*sp_log_fn)(sp_log_level level, const char *message, void *user);
typedef struct {
    sp_log_level level; /* messages below it are not shown */
    bool quiet;         /* true: only errors are shown (the file still gets everything) */
    bool live;          /* a live progress line is on the terminal: stderr output clears it first */
    FILE *file;         /* run log (info and above, with time stamps), e.g. the run's log.txt */
    sp_log_fn fn;       /* where shown messages go; NULL: stderr ("splat: warning: ..." above info) */
    void *user;
} sp_log_sink;
/* Makes sink the calling thread's current one (NULL: the thread's default); returns the
 * previous one (never NULL), to be restored with sp_log_use() when the call is done. */
sp_log_sink *sp_log_use(sp_log_sink *sink);
void sp_log_set_level(sp_log_level level);
void sp_log_set_file(FILE *f); /* NULL: no file */
void sp_log_set_quiet(bool quiet); /* true: only the file (and errors) */
/* true while a live progress line is on the terminal: messages clear it first. */
void sp_log_set_live_line(bool live);
void sp_log(sp_log_level level, const char *fmt, ...) SP_PRINTF(2, 3);
/* Only into the log file (details a terminal need not show). */
void sp_log_to_file(const char *fmt, ...) SP_PRINTF(1, 2);
#define SP_DEBUG(...) sp_log(SP_LOG_DEBUG, __VA_ARGS__)
#define SP_INFO(...) sp_log(SP_LOG_INFO, __VA_ARGS__)
#define SP_WARN(...) sp_log(SP_LOG_WARN, __VA_ARGS__)
#define SP_ERROR(...) sp_log(SP_LOG_ERROR, __VA_ARGS__)

/* Version and build commit (version.c). */
const char *sp_version(void);
const char *sp_commit(void);

/* The floating-point mode of the library's CPU work: denormals flushed to zero (x86: FTZ and DAZ
 * in MXCSR; elsewhere nothing changes). Adam moments of Gaussians that stop receiving gradients
 * decay into the denormal range, where x86 arithmetic is about 100x slower. sp_fp_enter sets it on
 * the calling thread and returns the mode it replaced; sp_fp_leave(that) restores it. The public
 * API brackets every call with them, so a caller's thread gets its own mode back when the call
 * returns; OpenMP worker threads of the CPU backend keep the library's (sp_fp_set). */
typedef struct {
    unsigned bits; /* the previous MXCSR (x86) */
} sp_fp_mode;
sp_fp_mode sp_fp_enter(void);
void sp_fp_leave(sp_fp_mode previous);
/* Sets the library's mode on the calling thread for good (the CPU backend's worker threads). */
void sp_fp_set(void);

/* Monotonic wall clock, seconds. */
double sp_now(void);

/* RNG: PCG32 (O'Neill), seeded by (seed, stream). Identical sequences on every platform. */
typedef struct {
    uint64_t state, inc;
} sp_rng;
void sp_rng_seed(sp_rng *r, uint64_t seed, uint64_t stream);
uint32_t sp_rng_u32(sp_rng *r);
float sp_rng_uniform(sp_rng *r); /* [0, 1) */
float sp_rng_normal(sp_rng *r);  /* standard normal (Box-Muller, one value per call) */
/* Stateless hash of (a, b) to a well-mixed 64-bit value: per-element seeds for parallel code. */
uint64_t sp_hash64(uint64_t a, uint64_t b);

/* Files. Every output is written atomically: to "PATH.tmp.PID", then renamed over PATH. */
typedef struct {
    FILE *f;
    char *path, *tmp;
} sp_afile;
int sp_afile_open(sp_afile *af, const char *path); /* binary write */
int sp_afile_commit(sp_afile *af);                 /* finish + rename; -1 on any write error */
/* The two halves of a commit, for outputs that must change together (a model and its
 * checkpoint): finish flushes, fsyncs and closes the temporary (on error it is removed); rename
 * moves it over PATH and fsyncs the folder. */
int sp_afile_finish(sp_afile *af);
/* Flushes what was written so far and fsyncs it (the file stays open): the finish of a large file
 * written in parts then syncs only its last part. */
int sp_afile_sync(sp_afile *af);
int sp_afile_rename(sp_afile *af);
void sp_afile_abort(sp_afile *af);                 /* close and remove the temporary */
int sp_write_file_atomic(const char *path, const void *data, size_t n);
/* Whole file into a NUL-terminated buffer (n excludes the NUL). Errors name the path; anything
 * but a regular file (a FIFO, a device, a folder) is refused, and a file larger than memory is an
 * "out of memory" error naming it. */
int sp_read_file(const char *path, char **data, size_t *n);
int sp_mkdir_p(const char *path);
bool sp_file_exists(const char *path);
bool sp_dir_exists(const char *path);
char *sp_path_join(const char *a, const char *b); /* malloc'd "a/b" (b absolute: b) */
char *sp_path_dir(const char *path);              /* malloc'd directory part ("." if none) */
/* malloc'd absolute form of path: resolved (symlinks too) when it exists, else joined to the
 * working directory. */
char *sp_path_absolute(const char *path);
/* Removes a file, or a directory with everything under it (symlinks are removed, not followed).
 * A path that does not exist is not an error. */
int sp_remove_tree(const char *path);
/* 0 when path (a file, or a folder and everything under it) could be removed by this process,
 * judged from the permissions of each folder that holds an entry; -1 naming the first entry
 * that could not be, having removed nothing. A path that does not exist is removable. */
int sp_tree_removable(const char *path);
/* An exclusive lock on a folder, held until sp_dir_unlock (or the process ends): flock on the
 * folder itself, so nothing is written and no stale lock survives a crash. Another holder, in
 * this process or another, makes it fail at once ("another training is writing ..."); a file
 * system without locks is a warning, not an error. Returns the descriptor, or -1 with the error
 * set. */
int sp_dir_lock(const char *dir);
void sp_dir_unlock(int fd);
/* 1 for "NAME.tmp.PID" (the last ".tmp." followed by digits only): an atomic write's temporary. */
bool sp_is_temporary_name(const char *name);
/* Removes the temporaries ("NAME.tmp.PID") that interrupted atomic writes left in dir. */
int sp_remove_temporaries(const char *dir);

static inline float sp_sigmoidf(float x) { return 1.0f / (1.0f + __builtin_expf(-x)); }
static inline float sp_logitf(float p) { return __builtin_logf(p / (1.0f - p)); }
static inline int sp_mini(int a, int b) { return a < b ? a : b; }
static inline int sp_maxi(int a, int b) { return a > b ? a : b; }

#endif
