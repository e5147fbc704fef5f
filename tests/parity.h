/* parity.h — what the backend parity harness (test_backend_ops.c) compares with: the measures of
 * error between a backend's output and the CPU reference, one PASS/FAIL line per comparison, and
 * the random scenes (camera, Gaussians in and around its frustum) every stage is run on. Inputs
 * come from one printed seed (SPLAT_TEST_SEED=<n> repeats a run) and a stream per test. */
#ifndef SPLAT_PARITY_H
#define SPLAT_PARITY_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/ref/stages.h"
#include "core/core.h"
#include "scene/gaussians.h"

static uint64_t pt_seed;
static int pt_failures;

/* One line per comparison: PASS/FAIL, the target (backend and variant), stage, what, the measured
 * error and its tolerance. Returns ok. */
static inline int pt_report(int ok, const char *target, const char *stage, const char *what, const char *metric, double err,
                     double tol) {
    printf("%s %s %s %s: %s %.3g (tol %.3g)\n", ok ? "PASS" : "FAIL", target, stage, what, metric, err, tol);
    fflush(stdout);
    if (!ok) pt_failures++;
    return ok;
}

static inline sp_rng pt_rng(uint64_t stream) {
    sp_rng r;
    sp_rng_seed(&r, pt_seed, stream);
    return r;
}

/* ---- measures of error (NaN anywhere counts as infinite error) ---- */

/* Max over i of |a-b| / max(|b|, floor), floor = floor_frac * max|b|; only where mask (if any). */
static inline double pt_max_rel(const float *a, const float *b, size_t n, int stride, const uint8_t *mask,
                         double floor_frac) {
    double mx = 0.0, err = 0.0;
    for (size_t i = 0; i < n * stride; i++)
        if (!mask || mask[i / stride]) mx = fmax(mx, fabs((double)b[i]));
    double fl = fmax(floor_frac * mx, 1e-30);
    for (size_t i = 0; i < n * stride; i++) {
        if (mask && !mask[i / stride]) continue;
        double d = fabs((double)a[i] - (double)b[i]) / fmax(fabs((double)b[i]), fl);
        if (!(d <= err)) err = isnan(d) ? INFINITY : fmax(err, d);
    }
    return err;
}

/* Relative error of the quadratic form d^T C d (conic C = (a, b, c) = [[a, b], [b, c]]):
 * sqrt|tr((C^-1 dC)^2)| with dC = x - ref, the largest over Gaussians in mask. */
static inline double pt_conic_form_err(const float *x, const float *ref, int n, const uint8_t *mask) {
    double worst = 0.0;
    for (int i = 0; i < n; i++) {
        if (mask && !mask[i]) continue;
        double a = ref[3 * i], b = ref[3 * i + 1], cc = ref[3 * i + 2];
        double da = (double)x[3 * i] - a, db = (double)x[3 * i + 1] - b, dc = (double)x[3 * i + 2] - cc;
        double det = a * cc - b * b;
        if (!(det > 0.0)) {
            worst = INFINITY;
            continue;
        }
        /* N = C^-1 dC, C^-1 = [[cc, -b], [-b, a]] / det */
        double n00 = (cc * da - b * db) / det, n01 = (cc * db - b * dc) / det;
        double n10 = (-b * da + a * db) / det, n11 = (-b * db + a * dc) / det;
        double e = sqrt(fabs(n00 * n00 + 2.0 * n01 * n10 + n11 * n11));
        if (!(e <= worst)) worst = isnan(e) ? INFINITY : e;
    }
    return worst;
}

/* ||a - b|| / ||b|| (0 when both are zero, infinite when only b is). */
static inline double pt_rel_l2(const float *a, const float *b, size_t n) {
    double num = 0.0, den = 0.0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)a[i] - (double)b[i];
        num += d * d;
        den += (double)b[i] * (double)b[i];
    }
    if (isnan(num)) return INFINITY;
    if (den == 0.0) return num == 0.0 ? 0.0 : INFINITY;
    return sqrt(num / den);
}

static inline double pt_max_abs(const float *a, const float *b, size_t n) {
    double e = 0.0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (!(d <= e)) e = isnan(d) ? INFINITY : d;
    }
    return e;
}

/* Number of NaN or infinite values. */
static inline size_t pt_nonfinite(const float *x, size_t n) {
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) bad += !isfinite(x[i]);
    return bad;
}

/* ---- random scenes ---- */
typedef struct {
    sp_camera cam;
    int n, K, deg;
    float *means, *log_scales, *quats, *logits, *sh;
    sp_params p;
} pt_scene;

static inline void pt_mat_from_quat(const float q[4], float R[9]) {
    float w = q[0], x = q[1], y = q[2], z = q[3];
    R[0] = 1 - 2 * (y * y + z * z), R[1] = 2 * (x * y - w * z), R[2] = 2 * (x * z + w * y);
    R[3] = 2 * (x * y + w * z), R[4] = 1 - 2 * (x * x + z * z), R[5] = 2 * (y * z - w * x);
    R[6] = 2 * (x * z - w * y), R[7] = 2 * (y * z + w * x), R[8] = 1 - 2 * (x * x + y * y);
}

/* n Gaussians at depths 1..6 in (and a little beyond) a w x h view, every 97th behind the near
 * plane; opacities from 0.02 to 0.98, SH of degree deg. */
static inline void pt_scene_make(pt_scene *s, sp_rng *r, int n, int w, int h, int deg) {
    memset(s, 0, sizeof *s);
    s->n = n;
    s->deg = deg;
    s->K = sp_sh_coeffs(deg);
    sp_camera *c = &s->cam;
    c->width = w, c->height = h;
    c->fx = 0.9f * w, c->fy = 0.9f * w;
    c->cx = 0.5f * w + 1.5f, c->cy = 0.5f * h - 2.0f;
    float q[4] = {1.0f, 0.2f * (sp_rng_uniform(r) - 0.5f), 0.2f * (sp_rng_uniform(r) - 0.5f),
                  0.2f * (sp_rng_uniform(r) - 0.5f)};
    float ql = sqrtf(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
    for (int k = 0; k < 4; k++) q[k] /= ql;
    pt_mat_from_quat(q, c->R);
    for (int k = 0; k < 3; k++) c->t[k] = 0.3f * (sp_rng_uniform(r) - 0.5f);
    size_t N = n ? (size_t)n : 1;
    s->means = sp_malloc(N * 3 * 4);
    s->log_scales = sp_malloc(N * 3 * 4);
    s->quats = sp_malloc(N * 4 * 4);
    s->logits = sp_malloc(N * 4);
    s->sh = sp_malloc(N * 3 * s->K * 4);
    for (int i = 0; i < n; i++) {
        float z = 1.0f + 5.0f * sp_rng_uniform(r);
        float pc[3] = {(sp_rng_uniform(r) * 1.4f - 0.7f) * z * w / c->fx,
                       (sp_rng_uniform(r) * 1.4f - 0.7f) * z * h / c->fy, z};
        if (i % 97 == 0) pc[2] = 0.1f; /* behind the near plane */
        float d[3] = {pc[0] - c->t[0], pc[1] - c->t[1], pc[2] - c->t[2]};
        for (int k = 0; k < 3; k++) s->means[3 * i + k] = c->R[k] * d[0] + c->R[3 + k] * d[1] + c->R[6 + k] * d[2];
        for (int k = 0; k < 3; k++) s->log_scales[3 * i + k] = logf(0.01f + 0.12f * sp_rng_uniform(r));
        for (int k = 0; k < 4; k++) s->quats[4 * i + k] = sp_rng_normal(r) + (k == 0 ? 0.5f : 0.0f);
        s->logits[i] = -4.0f + 8.0f * sp_rng_uniform(r);
        for (int k = 0; k < 3 * s->K; k++) s->sh[3 * s->K * i + k] = (k < 3 ? 1.0f : 0.3f) * (sp_rng_uniform(r) - 0.5f);
    }
    s->p.n = n, s->p.K = s->K;
    s->p.means = s->means, s->p.log_scales = s->log_scales, s->p.quats = s->quats;
    s->p.opacity_logits = s->logits, s->p.sh = s->sh;
}

static inline void pt_scene_free(pt_scene *s) {
    free(s->means);
    free(s->log_scales);
    free(s->quats);
    free(s->logits);
    free(s->sh);
}

/* A parameter store holding the scene's Gaussians. */
static inline void pt_scene_store(const pt_scene *s, sp_gaussians *g) {
    sp_gaussians_init(g, s->n > 0 ? s->n : 1, s->deg);
    g->n = s->n;
    size_t n = (size_t)s->n;
    memcpy(g->means, s->means, n * 12), memcpy(g->log_scales, s->log_scales, n * 12);
    memcpy(g->quats, s->quats, n * 16), memcpy(g->opacity_logits, s->logits, n * 4);
    memcpy(g->sh, s->sh, n * 12 * (size_t)s->K);
}

/* Random Gaussians in a cube of half-size spread around the origin. */
static inline void pt_random_gaussians(sp_gaussians *g, sp_rng *r, int n, int deg, float spread) {
    sp_gaussians_init(g, n > 0 ? n : 1, deg);
    g->n = n;
    for (int i = 0; i < n; i++) {
        for (int k = 0; k < 3; k++) g->means[3 * i + k] = spread * (2.0f * sp_rng_uniform(r) - 1.0f);
        for (int k = 0; k < 3; k++) g->log_scales[3 * i + k] = logf(0.03f + 0.1f * sp_rng_uniform(r));
        for (int k = 0; k < 4; k++) g->quats[4 * i + k] = sp_rng_normal(r);
        g->opacity_logits[i] = -2.0f + 4.0f * sp_rng_uniform(r);
        for (int k = 0; k < 3 * g->K; k++) g->sh[3 * g->K * i + k] = (k < 3 ? 1.5f : 0.2f) * (sp_rng_uniform(r) - 0.5f);
    }
}

/* Camera at distance d around the origin, looking at it (OpenCV axes, world up = +z). */
static inline void pt_look_at(sp_camera *c, int w, int h, float az, float el, float d) {
    memset(c, 0, sizeof *c);
    c->width = w, c->height = h;
    c->fx = c->fy = 1.1f * w;
    c->cx = 0.5f * w, c->cy = 0.5f * h;
    float C[3] = {d * cosf(el) * cosf(az), d * cosf(el) * sinf(az), d * sinf(el)};
    float f[3] = {-C[0] / d, -C[1] / d, -C[2] / d};
    float r[3] = {f[1], -f[0], 0.0f}; /* f x (0,0,1) */
    float rl = sqrtf(r[0] * r[0] + r[1] * r[1] + r[2] * r[2]);
    for (int k = 0; k < 3; k++) r[k] /= rl;
    float dn[3] = {f[1] * r[2] - f[2] * r[1], f[2] * r[0] - f[0] * r[2], f[0] * r[1] - f[1] * r[0]};
    for (int k = 0; k < 3; k++) c->R[k] = r[k], c->R[3 + k] = dn[k], c->R[6 + k] = f[k];
    for (int k = 0; k < 3; k++) c->t[k] = -(c->R[3 * k] * C[0] + c->R[3 * k + 1] * C[1] + c->R[3 * k + 2] * C[2]);
}

static inline int pt_stores_equal(const sp_gaussians *a, const sp_gaussians *b) {
    if (a->n != b->n || a->K != b->K) return 0;
    size_t n = (size_t)a->n;
    return !memcmp(a->means, b->means, n * 12) && !memcmp(a->log_scales, b->log_scales, n * 12) &&
           !memcmp(a->quats, b->quats, n * 16) && !memcmp(a->opacity_logits, b->opacity_logits, n * 4) &&
           !memcmp(a->sh, b->sh, n * 12 * (size_t)a->K);
}

static inline size_t pt_store_nonfinite(const sp_gaussians *g) {
    size_t n = (size_t)g->n;
    return pt_nonfinite(g->means, n * 3) + pt_nonfinite(g->log_scales, n * 3) + pt_nonfinite(g->quats, n * 4) +
           pt_nonfinite(g->opacity_logits, n) + pt_nonfinite(g->sh, n * 3 * (size_t)g->K);
}

#endif
