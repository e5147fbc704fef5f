/* checkpoint.c — binary checkpoint: magic, version, step, stores, curves. Little-endian hosts. */
#include "train/checkpoint.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"

#define CK_MAGIC "SPLATCK1"
#define CK_VERSION 1u

void sp_series_push(sp_series *s, double x, double y) {
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 64;
        s->x = sp_realloc(s->x, (size_t)s->cap * sizeof(double));
        s->y = sp_realloc(s->y, (size_t)s->cap * sizeof(double));
    }
    s->x[s->n] = x;
    s->y[s->n] = y;
    s->n++;
}

void sp_series_free(sp_series *s) {
    free(s->x);
    free(s->y);
    memset(s, 0, sizeof *s);
}

/* fwrite of n bytes; nothing to write (an empty store or curve, whose pointer may be NULL) is
 * not a call at all. */
static void put(FILE *f, const void *p, size_t n) {
    if (n) fwrite(p, 1, n, f);
}

static void put_store(FILE *f, const sp_gaussians *g) {
    size_t n = (size_t)g->n;
    put(f, g->means, n * 3 * sizeof(float));
    put(f, g->log_scales, n * 3 * sizeof(float));
    put(f, g->quats, n * 4 * sizeof(float));
    put(f, g->opacity_logits, n * sizeof(float));
    put(f, g->sh, n * 3 * (size_t)g->K * sizeof(float));
}

int sp_checkpoint_write(const char *path, const sp_checkpoint *c) {
    if (c->step < 0 || c->g.n < 0 || c->g.sh_degree < 0 || c->g.sh_degree > 3)
        return sp_error("%s: cannot write a checkpoint of step %d with %d Gaussians of SH degree %d", path, c->step,
                        c->g.n, c->g.sh_degree);
    sp_afile af;
    if (sp_afile_open(&af, path)) return -1;
    uint32_t hdr[5] = {CK_VERSION, (uint32_t)c->step, (uint32_t)c->g.n, (uint32_t)c->g.sh_degree, SP_CURVES};
    put(af.f, CK_MAGIC, 8);
    put(af.f, hdr, sizeof hdr);
    put(af.f, &c->train_seconds, sizeof(double));
    put_store(af.f, &c->g);
    put_store(af.f, &c->m);
    put_store(af.f, &c->v);
    for (int k = 0; k < SP_CURVES; k++) {
        uint32_t n = (uint32_t)c->curves[k].n;
        put(af.f, &n, sizeof n);
        put(af.f, c->curves[k].x, n * sizeof(double));
        put(af.f, c->curves[k].y, n * sizeof(double));
    }
    return sp_afile_commit(&af);
}

typedef struct {
    const char *p, *end;
} reader;

static int take(reader *r, void *dst, size_t n) {
    if ((size_t)(r->end - r->p) < n) return -1;
    if (n) memcpy(dst, r->p, n);
    r->p += n;
    return 0;
}

/* Bytes one Gaussian takes in one store: means, scales, quaternion, opacity, K SH colours. */
static size_t store_bytes(int deg) { return (size_t)(3 + 3 + 4 + 1 + 3 * sp_sh_coeffs(deg)) * sizeof(float); }

static int take_store(reader *r, sp_gaussians *g, int n, int deg) {
    sp_gaussians_init(g, n, deg);
    g->n = n;
    size_t m = (size_t)n;
    return take(r, g->means, m * 12) || take(r, g->log_scales, m * 12) || take(r, g->quats, m * 16) ||
                   take(r, g->opacity_logits, m * 4) || take(r, g->sh, m * 12 * (size_t)g->K)
               ? -1
               : 0;
}

int sp_checkpoint_read(const char *path, sp_checkpoint *c) {
    memset(c, 0, sizeof *c);
    char *data;
    size_t size;
    if (sp_read_file(path, &data, &size)) return -1;
    reader r = {data, data + size};
    char magic[8];
    uint32_t hdr[5];
    int rc = 0;
    if (take(&r, magic, 8) || memcmp(magic, CK_MAGIC, 8)) {
        rc = sp_error("%s: not a splat checkpoint", path);
        goto done;
    }
    if (take(&r, hdr, sizeof hdr) || take(&r, &c->train_seconds, sizeof(double))) {
        rc = sp_error("%s: truncated checkpoint header", path);
        goto done;
    }
    /* Every header field is checked, and every count against the bytes the file has left,
     * before anything is allocated. */
    if (hdr[0] != CK_VERSION) {
        rc = sp_error("%s: checkpoint version %u, this splat reads version %u", path, hdr[0], CK_VERSION);
        goto done;
    }
    if (hdr[1] > SP_CHECKPOINT_MAX_STEP) {
        rc = sp_error("%s: corrupt checkpoint: step %u is out of range (0 to %d)", path, hdr[1],
                      SP_CHECKPOINT_MAX_STEP);
        goto done;
    }
    if (hdr[3] > 3) {
        rc = sp_error("%s: corrupt checkpoint: SH degree %u (0 to 3)", path, hdr[3]);
        goto done;
    }
    if (hdr[4] != SP_CURVES) {
        rc = sp_error("%s: corrupt checkpoint: %u curves, expected %d", path, hdr[4], SP_CURVES);
        goto done;
    }
    if (!(c->train_seconds >= 0 && c->train_seconds < 1e9)) {
        rc = sp_error("%s: corrupt checkpoint: training time %g s", path, c->train_seconds);
        goto done;
    }
    size_t left = (size_t)(r.end - r.p), per = 3 * store_bytes((int)hdr[3]);
    if (hdr[2] > left / per || hdr[2] > (uint32_t)INT_MAX / 2) {
        rc = sp_error("%s: truncated or corrupt checkpoint: it claims %u Gaussians, the %zu bytes left hold at most %zu",
                      path, hdr[2], left, left / per);
        goto done;
    }
    c->step = (int)hdr[1];
    int n = (int)hdr[2], deg = (int)hdr[3];
    if (take_store(&r, &c->g, n, deg) || take_store(&r, &c->m, n, deg) || take_store(&r, &c->v, n, deg)) {
        rc = sp_error("%s: truncated checkpoint (expected %d Gaussians)", path, n);
        goto done;
    }
    for (int k = 0; k < SP_CURVES; k++) {
        uint32_t cn;
        if (take(&r, &cn, sizeof cn) || (size_t)(r.end - r.p) / 16 < (size_t)cn) {
            rc = sp_error("%s: truncated checkpoint curves", path);
            goto done;
        }
        sp_series *s = &c->curves[k];
        if (cn) {
            s->cap = s->n = (int)cn;
            s->x = sp_malloc((size_t)cn * sizeof(double));
            s->y = sp_malloc((size_t)cn * sizeof(double));
            take(&r, s->x, (size_t)cn * 8);
            take(&r, s->y, (size_t)cn * 8);
        }
    }
    if (r.p != r.end) rc = sp_error("%s: corrupt checkpoint: %zu unexpected bytes at the end", path, (size_t)(r.end - r.p));
done:
    free(data);
    if (rc) sp_checkpoint_free(c);
    return rc;
}

void sp_checkpoint_free(sp_checkpoint *c) {
    sp_gaussians_free(&c->g);
    sp_gaussians_free(&c->m);
    sp_gaussians_free(&c->v);
    for (int k = 0; k < SP_CURVES; k++) sp_series_free(&c->curves[k]);
    memset(c, 0, sizeof *c);
}
