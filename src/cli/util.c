/* util.c — what the subcommands share that is the program's business, not the library's:
 * memory that cannot fail (out of memory ends the program, as main.c's handler does for the
 * library's bookkeeping), strings, paths and files, a clock, the last error message and problem
 * lists. The commands include only include/splat.h of the library (tests/check_library_rules.py). */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"

/* ---- memory ---- */

void cli_out_of_memory(void *user, size_t bytes) {
    (void)user;
    fprintf(stderr, "\nsplat: out of memory (a %zu-byte allocation failed); exiting\n", bytes);
    exit(2);
}

void *cli_alloc(size_t count, size_t size) {
    if (size && count > SIZE_MAX / size) cli_out_of_memory(NULL, SIZE_MAX);
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p) cli_out_of_memory(NULL, count * size);
    return p;
}

char *cli_strdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = cli_alloc(n, 1);
    memcpy(d, s, n);
    return d;
}

char *cli_strfmt(const char *fmt, ...) {
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *s = cli_alloc((size_t)(n > 0 ? n : 0) + 1, 1);
    vsnprintf(s, (size_t)(n > 0 ? n : 0) + 1, fmt, ap2);
    va_end(ap2);
    return s;
}

/* ---- the last error ---- */

static char g_error[4096];

int cli_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_error, sizeof g_error, fmt, ap);
    va_end(ap);
    return -1;
}

const char *cli_last_error(void) { return g_error; }

/* ---- problem lists ---- */

void cli_problems_add(cli_problems *p, const char *fmt, ...) {
    if (p->n == p->cap) {
        int cap = p->cap ? 2 * p->cap : 8;
        char **items = realloc(p->items, (size_t)cap * sizeof *items);
        if (!items) cli_out_of_memory(NULL, (size_t)cap * sizeof *items);
        p->items = items;
        p->cap = cap;
    }
    char buf[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    p->items[p->n++] = cli_strdup(buf);
}

void cli_problems_free(cli_problems *p) {
    for (int i = 0; i < p->n; i++) free(p->items[i]);
    free(p->items);
    memset(p, 0, sizeof *p);
}

/* ---- files and paths ---- */

double cli_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int cli_file_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

int cli_dir_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

char *cli_path_join(const char *a, const char *b) {
    if (b[0] == '/' || !a || !a[0]) return cli_strdup(b);
    return cli_strfmt("%s%s%s", a, a[strlen(a) - 1] == '/' ? "" : "/", b);
}

int cli_mkdir_p(const char *path) {
    if (!*path) return cli_error("cannot create a directory without a name");
    char *p = cli_strdup(path);
    int rc = 0;
    for (char *s = p + 1;; s++) {
        if (*s && *s != '/') continue;
        char c = *s;
        *s = 0;
        if (mkdir(p, 0755) != 0 && errno != EEXIST) {
            rc = cli_error("%s: cannot create directory: %s", p, strerror(errno));
            break;
        }
        if (!c) break;
        *s = c;
    }
    if (rc == 0 && !cli_dir_exists(path)) rc = cli_error("%s: exists and is not a directory", path);
    free(p);
    return rc;
}

int cli_write_file_atomic(const char *path, const void *data, size_t n) {
    char *tmp = cli_strfmt("%s.tmp.%d", path, (int)getpid());
    FILE *f = fopen(tmp, "wb");
    int rc = 0;
    if (!f) {
        rc = cli_error("%s: cannot write: %s", path, strerror(errno));
    } else {
        int bad = (n && fwrite(data, 1, n, f) != n) || fflush(f) != 0 || fsync(fileno(f)) != 0;
        bad |= fclose(f) != 0;
        if (bad) rc = cli_error("%s: write failed: %s", path, strerror(errno));
        else if (rename(tmp, path) != 0) rc = cli_error("%s: cannot rename from %s: %s", path, tmp, strerror(errno));
        if (rc) remove(tmp);
    }
    free(tmp);
    return rc;
}

