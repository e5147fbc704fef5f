/* checkpoint.c — binary checkpoint: magic, version, step, dataset, stores, curves, clocks, CRC-32.
 * Little-endian hosts. */
#include "train/checkpoint.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"

#include <zlib.h>

#define CK_MAGIC "SPLATCK1"
/* Version 2 adds the dataset the run trained on and a closing CRC-32; version 3 the run's wall
 * time and the training time of each evaluation, after the curves. Versions 1 and 2 still read. */
#define CK_VERSION 3u

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

uint32_t sp_checkpoint_crc32(uint32_t crc, const void *data, size_t n) {
    enum { CHUNK = 4 << 20 };
    const Bytef *p = data;
    size_t chunks = n / CHUNK + (n % CHUNK != 0);
    uLong *part = chunks > 1 ? malloc(chunks * sizeof *part) : NULL;
    if (!part) return (uint32_t)crc32_z(crc, p, n);
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < chunks; i++) {
        size_t off = i * CHUNK, len = n - off < CHUNK ? n - off : CHUNK;
        part[i] = crc32_z(0, p + off, len);
    }
    uLong c = crc;
    for (size_t i = 0; i < chunks; i++) {
        size_t off = i * CHUNK, len = n - off < CHUNK ? n - off : CHUNK;
        c = crc32_combine(c, part[i], (z_off_t)len);
    }
    free(part);
    return (uint32_t)c;
}

/* The bytes written so far and their CRC-32 (version 2 ends with it). */
typedef struct {
    FILE *f;
    uLong crc;
} writer;

/* fwrite of n bytes; nothing to write (an empty store or curve, whose pointer may be NULL) is
 * not a call at all. */
static void put(writer *w, const void *p, size_t n) {
    if (!n) return;
    fwrite(p, 1, n, w->f);
    w->crc = sp_checkpoint_crc32((uint32_t)w->crc, p, n);
}

static void put_store(writer *w, const sp_gaussians *g) {
    size_t n = (size_t)g->n;
    put(w, g->means, n * 3 * sizeof(float));
    put(w, g->log_scales, n * 3 * sizeof(float));
    put(w, g->quats, n * 4 * sizeof(float));
    put(w, g->opacity_logits, n * sizeof(float));
    put(w, g->sh, n * 3 * (size_t)g->K * sizeof(float));
}

int sp_checkpoint_write_stores(sp_checkpoint_writer *cw, const char *path, const sp_checkpoint *c) {
    memset(cw, 0, sizeof *cw);
    size_t dlen = c->dataset ? strlen(c->dataset) : 0;
    if (c->step < 0 || c->g.n < 0 || c->g.sh_degree < 0 || c->g.sh_degree > 3 || dlen > SP_CHECKPOINT_MAX_DATASET)
        return sp_error("%s: cannot write a checkpoint of step %d with %d Gaussians of SH degree %d", path, c->step,
                        c->g.n, c->g.sh_degree);
    if (sp_afile_open(&cw->af, path)) return -1;
    writer w = {cw->af.f, crc32_z(0, Z_NULL, 0)};
    uint32_t hdr[5] = {CK_VERSION, (uint32_t)c->step, (uint32_t)c->g.n, (uint32_t)c->g.sh_degree, SP_CURVES};
    uint32_t dl = (uint32_t)dlen;
    put(&w, CK_MAGIC, 8);
    put(&w, hdr, sizeof hdr);
    put(&w, &c->train_seconds, sizeof(double));
    put(&w, &dl, sizeof dl);
    put(&w, c->dataset, dlen);
    put_store(&w, &c->g);
    put_store(&w, &c->m);
    put_store(&w, &c->v);
    cw->crc = w.crc;
    if (sp_afile_sync(&cw->af)) {
        sp_afile_abort(&cw->af);
        return -1;
    }
    return 0;
}

int sp_checkpoint_write_rest(sp_checkpoint_writer *cw, const sp_checkpoint *c) {
    if (!cw->af.f) return sp_error("internal: the rest of a checkpoint whose stores were not written");
    writer w = {cw->af.f, cw->crc};
    const sp_series *series[SP_CURVES + 1];
    for (int k = 0; k < SP_CURVES; k++) series[k] = &c->curves[k];
    series[SP_CURVES] = &c->eval_seconds;
    for (int k = 0; k <= SP_CURVES; k++) {
        if (k == SP_CURVES) put(&w, &c->total_seconds, sizeof(double)); /* version 3: the clocks */
        uint32_t n = (uint32_t)series[k]->n;
        put(&w, &n, sizeof n);
        put(&w, series[k]->x, n * sizeof(double));
        put(&w, series[k]->y, n * sizeof(double));
    }
    uint32_t crc = (uint32_t)w.crc;
    fwrite(&crc, 1, sizeof crc, cw->af.f);
    return sp_afile_commit(&cw->af);
}

void sp_checkpoint_writer_abort(sp_checkpoint_writer *cw) {
    if (cw->af.f) sp_afile_abort(&cw->af);
}

int sp_checkpoint_write(const char *path, const sp_checkpoint *c) {
    sp_checkpoint_writer w;
    if (sp_checkpoint_write_stores(&w, path, c)) return -1;
    return sp_checkpoint_write_rest(&w, c);
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

static int take_store(reader *r, sp_gaussians *g, int n, int deg, const char *path) {
    if (sp_gaussians_try_init(g, n, deg)) {
        sp_error_prefix("%s", path); /* out of memory, naming the file */
        return -2;
    }
    g->n = n;
    size_t m = (size_t)n;
    return take(r, g->means, m * 12) || take(r, g->log_scales, m * 12) || take(r, g->quats, m * 16) ||
                   take(r, g->opacity_logits, m * 4) || take(r, g->sh, m * 12 * (size_t)g->K)
               ? -1
               : 0;
}

/* The first non-finite value of a store, as "the means of Gaussian 12", or NULL. */
static const char *non_finite(const sp_gaussians *g, int *which) {
    size_t n = (size_t)g->n;
    struct {
        const float *p;
        size_t per;
        const char *name;
    } parts[5] = {{g->means, 3, "position"},
                  {g->log_scales, 3, "scale"},
                  {g->quats, 4, "rotation"},
                  {g->opacity_logits, 1, "opacity"},
                  {g->sh, 3 * (size_t)g->K, "colour"}};
    for (int k = 0; k < 5; k++)
        for (size_t i = 0; i < n * parts[k].per; i++)
            if (!isfinite(parts[k].p[i])) {
                *which = (int)(i / parts[k].per);
                return parts[k].name;
            }
    return NULL;
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
    if (hdr[0] < 1 || hdr[0] > CK_VERSION) {
        rc = sp_error("%s: checkpoint version %u, this splat reads versions 1 to %u", path, hdr[0], CK_VERSION);
        goto done;
    }
    if (hdr[0] >= 2) { /* a CRC-32 of everything before it closes the file */
        uint32_t want;
        if (size < 4 + (size_t)(r.p - data)) {
            rc = sp_error("%s: truncated checkpoint", path);
            goto done;
        }
        memcpy(&want, data + size - 4, 4);
        if (sp_checkpoint_crc32(0, data, size - 4) != want) {
            rc = sp_error("%s: the checkpoint is damaged (its checksum does not match its contents: a truncated or "
                          "altered file); it cannot be resumed", path);
            goto done;
        }
        r.end -= 4;
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
    if (hdr[0] >= 2) {
        uint32_t dl;
        if (take(&r, &dl, sizeof dl) || dl > SP_CHECKPOINT_MAX_DATASET || (size_t)(r.end - r.p) < dl) {
            rc = sp_error("%s: corrupt checkpoint: bad dataset name", path);
            goto done;
        }
        c->dataset = sp_malloc((size_t)dl + 1);
        take(&r, c->dataset, dl);
        c->dataset[dl] = 0;
        if (memchr(c->dataset, 0, dl)) {
            rc = sp_error("%s: corrupt checkpoint: bad dataset name", path);
            goto done;
        }
    }
    size_t left = (size_t)(r.end - r.p), per = 3 * store_bytes((int)hdr[3]);
    if (hdr[2] > left / per || hdr[2] > (uint32_t)INT_MAX / 2) {
        rc = sp_error("%s: truncated or corrupt checkpoint: it claims %u Gaussians, the %zu bytes left hold at most %zu",
                      path, hdr[2], left, left / per);
        goto done;
    }
    c->step = (int)hdr[1];
    int n = (int)hdr[2], deg = (int)hdr[3], t;
    if ((t = take_store(&r, &c->g, n, deg, path)) || (t = take_store(&r, &c->m, n, deg, path)) ||
        (t = take_store(&r, &c->v, n, deg, path))) {
        rc = t == -2 ? -1 : sp_error("%s: truncated checkpoint (expected %d Gaussians)", path, n);
        goto done;
    }
    c->total_seconds = NAN; /* versions 1 and 2: unknown */
    for (int k = 0; k < SP_CURVES + (hdr[0] >= 3); k++) {
        int clock_ok = k < SP_CURVES || take(&r, &c->total_seconds, sizeof(double)) == 0;
        double wall = c->total_seconds;
        if (k == SP_CURVES && clock_ok && !(isnan(wall) || (wall >= 0 && wall < 1e9))) {
            rc = sp_error("%s: corrupt checkpoint: wall time %g s", path, c->total_seconds);
            goto done;
        }
        uint32_t cn;
        if (!clock_ok || take(&r, &cn, sizeof cn) || (size_t)(r.end - r.p) / 16 < (size_t)cn) {
            rc = sp_error("%s: truncated checkpoint curves", path);
            goto done;
        }
        sp_series *s = k < SP_CURVES ? &c->curves[k] : &c->eval_seconds;
        if (cn) {
            s->cap = s->n = (int)cn;
            s->x = sp_try_alloc((size_t)cn, sizeof(double), path, NULL);
            s->y = sp_try_alloc((size_t)cn, sizeof(double), path, NULL);
            if (!s->x || !s->y) {
                rc = -1;
                goto done;
            }
            take(&r, s->x, (size_t)cn * 8);
            take(&r, s->y, (size_t)cn * 8);
        }
    }
    if (r.p != r.end) {
        rc = sp_error("%s: corrupt checkpoint: %zu unexpected bytes at the end", path, (size_t)(r.end - r.p));
        goto done;
    }
    if (hdr[0] < 3) /* when the evaluations happened: unknown */
        for (int i = 0; i < c->curves[SP_CURVE_PSNR].n; i++)
            sp_series_push(&c->eval_seconds, c->curves[SP_CURVE_PSNR].x[i], NAN);
    else if (c->eval_seconds.n != c->curves[SP_CURVE_PSNR].n)
        rc = sp_error("%s: corrupt checkpoint: %d evaluation times for %d PSNR points", path, c->eval_seconds.n,
                      c->curves[SP_CURVE_PSNR].n);
    /* a model that went non-finite cannot be trained on or rendered: refused before anything uses it */
    const sp_gaussians *stores[3] = {&c->g, &c->m, &c->v};
    const char *store_names[3] = {"parameters", "first Adam moments", "second Adam moments"};
    for (int k = 0; k < 3 && rc == 0; k++) {
        int which = 0;
        const char *what = non_finite(stores[k], &which);
        if (what)
            rc = sp_error("%s: the checkpoint's %s are not finite (the %s of Gaussian %d): the run diverged before "
                          "this checkpoint was saved; it cannot be resumed", path, store_names[k], what, which);
    }
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
    sp_series_free(&c->eval_seconds);
    free(c->dataset);
    memset(c, 0, sizeof *c);
}
