/* model_check.c — the checks shared by the model readers (rules in model_check.h): regular files
 * only, fallible allocation with the file named, no empty models, no non-finite values and no
 * zero quaternions. */
#include "io/model_check.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/core.h"

/* Prefixes the error just recorded (an allocation failure, which does not know the file) with
 * the path. */
static int name_error(const char *path) {
    char *msg = sp_strdup(sp_last_error());
    int rc = sp_error("%s: %s", path, msg);
    free(msg);
    return rc;
}

int sp_model_open(const char *path, FILE **f, off_t *size) {
    *f = NULL;
    *size = 0;
    struct stat st;
    /* stat first: opening a FIFO for reading would block until a writer comes */
    if (stat(path, &st) != 0) return sp_error("%s: cannot open: %s", path, strerror(errno));
    if (!S_ISREG(st.st_mode))
        return sp_error("%s: not a regular file (%s): a model must be a file", path,
                        S_ISDIR(st.st_mode) ? "a directory" : S_ISFIFO(st.st_mode) ? "a FIFO" : "a device or socket");
    FILE *fp = fopen(path, "rb");
    if (!fp) return sp_error("%s: cannot open: %s", path, strerror(errno));
    /* the file opened may not be the one stat saw: check again on the descriptor */
    if (fstat(fileno(fp), &st) != 0 || !S_ISREG(st.st_mode)) {
        fclose(fp);
        return sp_error("%s: not a regular file: a model must be a file", path);
    }
    *f = fp;
    *size = st.st_size;
    return 0;
}

int sp_model_read_bytes(const char *path, char **data, size_t *n) {
    *data = NULL;
    *n = 0;
    FILE *f;
    off_t size;
    if (sp_model_open(path, &f, &size)) return -1;
    char *buf = sp_model_buffer(path, (size_t)size + 1, 1, "the file's contents");
    if (!buf) {
        fclose(f);
        return -1;
    }
    size_t got = size > 0 ? fread(buf, 1, (size_t)size, f) : 0;
    int bad = ferror(f) || got != (size_t)size;
    fclose(f);
    if (bad) {
        free(buf);
        return sp_error("%s: read failed (%zu of %lld bytes)", path, got, (long long)size);
    }
    buf[got] = 0;
    *data = buf;
    *n = got;
    return 0;
}

int sp_model_alloc(const char *path, sp_gaussians *g, int n, int sh_degree) {
    if (sp_gaussians_try_init(g, n, sh_degree) == 0) return 0;
    sp_gaussians_free(g);
    return name_error(path);
}

void *sp_model_buffer(const char *path, size_t count, size_t size, const char *what) {
    void *p = sp_try_alloc(count, size, what, "");
    if (!p) name_error(path);
    return p;
}

static int first_bad(const float *p, size_t per, size_t n, int *gaussian) {
    for (size_t i = 0; i < per * n; i++)
        if (!isfinite(p[i])) {
            *gaussian = (int)(i / per);
            return 1;
        }
    return 0;
}

int sp_model_check(const char *path, sp_gaussians *g) {
    if (g->n <= 0) {
        sp_gaussians_free(g);
        return sp_error("%s: the model has no Gaussians", path);
    }
    size_t n = (size_t)g->n;
    int i = -1, rc = 0;
    if (first_bad(g->means, 3, n, &i)) rc = sp_error("%s: Gaussian %d: position is not a finite number", path, i);
    else if (first_bad(g->log_scales, 3, n, &i)) rc = sp_error("%s: Gaussian %d: scale is not a finite number", path, i);
    else if (first_bad(g->quats, 4, n, &i)) rc = sp_error("%s: Gaussian %d: rotation is not a finite number", path, i);
    else if (first_bad(g->opacity_logits, 1, n, &i)) rc = sp_error("%s: Gaussian %d: opacity is not a finite number", path, i);
    else if (first_bad(g->sh, 3 * (size_t)g->K, n, &i)) rc = sp_error("%s: Gaussian %d: colour (SH) is not a finite number", path, i);
    for (size_t j = 0; rc == 0 && j < n; j++) {
        const float *q = g->quats + 4 * j;
        if (q[0] == 0 && q[1] == 0 && q[2] == 0 && q[3] == 0)
            rc = sp_error("%s: Gaussian %zu: rotation is the zero quaternion", path, j);
    }
    if (rc) sp_gaussians_free(g);
    return rc;
}
