/* stagetest.h — shared by the stage tests: tiny random scenes and a double-precision instance of
 * the stage math (stage_math.h with SP_REAL = double) driven through a whole forward and backward
 * pass, the reference that finite differences and the float stages are checked against.
 *
 * The double pipeline records every discrete decision of the rasterizer (skip, clamp, early stop,
 * blend) in st_events; a finite-difference step whose two sides record different decisions
 * crossed a discontinuity and is not used. */
#ifndef SPLAT_STAGETEST_H
#define SPLAT_STAGETEST_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/ref/stages.h"
#include "scene/gaussians.h"
#include "core/core.h"

static uint64_t st_events;
#define SP_MATH_EVENT(kind, j) (st_events = st_events * 1000003u + (uint64_t)(kind) * 65599u + (uint64_t)(j) + 1u)
#define SP_REAL double
#define SP_SUFFIX d
#include "backend/ref/stage_math.h"
#undef SP_REAL
#undef SP_SUFFIX

/* A scene: camera, float parameters (what the product sees) and their double copies. */
typedef struct {
    sp_camera cam;
    int n, K, degree;
    int antialias; /* project's opacity-compensated filter (0 unless a test sets it) */
    float *means, *log_scales, *quats, *logits, *sh;
    double *dmeans, *dlog_scales, *dquats, *dlogits, *dsh;
    double *w; /* [H][W][3] loss weights: L = sum w . rgb */
    float bg[3];
} st_scene;

static inline void st_sync_double(st_scene *s) {
    for (int i = 0; i < 3 * s->n; i++) s->dmeans[i] = s->means[i], s->dlog_scales[i] = s->log_scales[i];
    for (int i = 0; i < 4 * s->n; i++) s->dquats[i] = s->quats[i];
    for (int i = 0; i < s->n; i++) s->dlogits[i] = s->logits[i];
    for (int i = 0; i < s->n * s->K * 3; i++) s->dsh[i] = s->sh[i];
}

/* Camera: w x h, looking roughly along world +z from near the origin, slightly rotated. */
static inline void st_camera(sp_camera *cam, sp_rng *r, int w, int h) {
    memset(cam, 0, sizeof *cam);
    cam->width = w;
    cam->height = h;
    cam->fx = 0.9f * w;
    cam->fy = 0.95f * w;
    cam->cx = 0.5f * w + 0.37f;
    cam->cy = 0.5f * h - 0.21f;
    /* c2w: small rotation about a random axis, centre near the origin */
    float ax[3] = {sp_rng_normal(r), sp_rng_normal(r), sp_rng_normal(r)};
    float an = sqrtf(ax[0] * ax[0] + ax[1] * ax[1] + ax[2] * ax[2]);
    float ang = 0.15f;
    float q[4] = {cosf(ang / 2), sinf(ang / 2) * ax[0] / an, sinf(ang / 2) * ax[1] / an, sinf(ang / 2) * ax[2] / an};
    double R[9];
    sp_m_quat_rot_d((double[4]){q[0], q[1], q[2], q[3]}, R);
    float c2w[16] = {0};
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) c2w[i * 4 + j] = (float)R[i * 3 + j];
    c2w[3] = 0.1f, c2w[7] = -0.05f, c2w[11] = 0.2f, c2w[15] = 1;
    sp_camera_set_c2w_opencv(cam, c2w);
}

/* Random scene of n Gaussians inside the view, at depths 3..5, screen sizes of a few pixels (some
 * spanning several tiles), opacities 0.1..0.85, SH degree `degree` stored with K = 16. */
static inline void st_scene_make(st_scene *s, uint64_t seed, int n, int degree, int w, int h) {
    memset(s, 0, sizeof *s);
    sp_rng r;
    sp_rng_seed(&r, seed, 7);
    st_camera(&s->cam, &r, w, h);
    s->n = n;
    s->K = 16;
    s->degree = degree;
    s->means = SP_NEW(float, 3 * n);
    s->log_scales = SP_NEW(float, 3 * n);
    s->quats = SP_NEW(float, 4 * n);
    s->logits = SP_NEW(float, n);
    s->sh = SP_NEW(float, (size_t)n * s->K * 3);
    s->dmeans = SP_NEW(double, 3 * n);
    s->dlog_scales = SP_NEW(double, 3 * n);
    s->dquats = SP_NEW(double, 4 * n);
    s->dlogits = SP_NEW(double, n);
    s->dsh = SP_NEW(double, (size_t)n * s->K * 3);
    s->w = SP_NEW(double, (size_t)w * h * 3);
    const sp_camera *c = &s->cam;
    float C[3];
    sp_camera_center(c, C);
    for (int i = 0; i < n; i++) {
        /* a camera-space point well inside the image, then to world: m = R^T (p - t) */
        float z = 3 + 2 * sp_rng_uniform(&r);
        float px = ((0.1f + 0.8f * sp_rng_uniform(&r)) * w - c->cx) / c->fx * z;
        float py = ((0.1f + 0.8f * sp_rng_uniform(&r)) * h - c->cy) / c->fy * z;
        float p[3] = {px - c->t[0], py - c->t[1], z - c->t[2]};
        for (int k = 0; k < 3; k++) s->means[3 * i + k] = c->R[0 * 3 + k] * p[0] + c->R[1 * 3 + k] * p[1] + c->R[2 * 3 + k] * p[2];
        float base = (i % 5 == 0) ? 0.35f : 0.08f;
        for (int k = 0; k < 3; k++) s->log_scales[3 * i + k] = logf(base * (0.5f + sp_rng_uniform(&r)));
        for (int k = 0; k < 4; k++) s->quats[4 * i + k] = sp_rng_normal(&r);
        s->quats[4 * i] += 1.5f; /* |q| != 1 on purpose */
        s->logits[i] = sp_logitf(0.1f + 0.75f * sp_rng_uniform(&r));
        for (int k = 0; k < s->K; k++)
            for (int ch = 0; ch < 3; ch++)
                s->sh[((size_t)i * s->K + k) * 3 + ch] =
                    k == 0 ? (0.1f + 0.8f * sp_rng_uniform(&r) - 0.5f) / SP_SH_C0 : 0.6f * (sp_rng_uniform(&r) - 0.5f);
        if (i % 7 == 3) s->sh[(size_t)i * s->K * 3 + 1] = -4.0f; /* a clamped channel */
    }
    for (int i = 0; i < w * h * 3; i++) s->w[i] = 2 * sp_rng_uniform(&r) - 1;
    s->bg[0] = 0.2f, s->bg[1] = 0.7f, s->bg[2] = 0.45f;
    st_sync_double(s);
}

static inline void st_scene_free(st_scene *s) {
    free(s->means), free(s->log_scales), free(s->quats), free(s->logits), free(s->sh);
    free(s->dmeans), free(s->dlog_scales), free(s->dquats), free(s->dlogits), free(s->dsh);
    free(s->w);
}

static inline sp_params st_params(const st_scene *s) {
    sp_params p = {s->n, s->K, s->means, s->log_scales, s->quats, s->logits, s->sh};
    return p;
}

/* Parameter groups, for looping over every scalar of a scene. */
enum { ST_MEANS, ST_SCALES, ST_QUATS, ST_LOGITS, ST_SH, ST_GROUPS };
static inline const char *st_group_name(int g) {
    static const char *names[ST_GROUPS] = {"means", "log_scales", "quats", "opacity_logits", "sh"};
    return names[g];
}

static inline double *st_group(st_scene *s, int g, int *count) {
    switch (g) {
    case ST_MEANS: *count = 3 * s->n; return s->dmeans;
    case ST_SCALES: *count = 3 * s->n; return s->dlog_scales;
    case ST_QUATS: *count = 4 * s->n; return s->dquats;
    case ST_LOGITS: *count = s->n; return s->dlogits;
    default: *count = s->n * s->K * 3; return s->dsh;
    }
}

/* Index of the Gaussian a scalar of group g belongs to, and whether it is used at this degree. */
static inline int st_scalar_used(const st_scene *s, int g, int k, int *gauss) {
    int per = g == ST_MEANS || g == ST_SCALES ? 3 : g == ST_QUATS ? 4 : g == ST_LOGITS ? 1 : s->K * 3;
    *gauss = k / per;
    if (g == ST_SH) return (k % per) / 3 < sp_sh_coeffs(s->degree);
    return 1;
}

/* ---- the double pipeline ---- */

typedef struct {
    sp_mproj_d *proj; /* [n] */
    int tiles_x, tiles_y;
    int *list, *start; /* per tile lists, sorted by (depth, index) */
    double *rgb, *T;
    int32_t *nc;
    uint64_t sig; /* hash of the discrete outcome: rects, colour clamps, raster decisions */
} st_fwd;

static const sp_mproj_d *st_sort_proj;
static inline int st_cmp_depth(const void *a, const void *b) {
    int i = *(const int *)a, j = *(const int *)b;
    double di = st_sort_proj[i].depth, dj = st_sort_proj[j].depth;
    if (di != dj) return di < dj ? -1 : 1;
    return i - j;
}

static inline sp_msplat_d st_splat(const sp_mproj_d *p) {
    sp_msplat_d s = {p->mean2d[0], p->mean2d[1], p->conic[0], p->conic[1], p->conic[2], p->opacity,
                     {p->color[0], p->color[1], p->color[2]}, sp_m_splat_pmin_d(p->opacity)};
    return s;
}

/* Builds per-tile lists from the (double) projections: every Gaussian whose rect contains the
 * tile, sorted by (depth, index). */
static inline void st_bin_d(st_fwd *f, int n) {
    int tiles = f->tiles_x * f->tiles_y;
    f->start = SP_NEW(int, tiles + 1);
    int total = 0;
    for (int t = 0; t < tiles; t++) {
        int tx = t % f->tiles_x, ty = t / f->tiles_x;
        for (int i = 0; i < n; i++) {
            const int32_t *r = f->proj[i].rect;
            if (tx >= r[0] && tx < r[2] && ty >= r[1] && ty < r[3]) total++;
        }
    }
    f->list = SP_NEW(int, total + 1);
    int k = 0;
    for (int t = 0; t < tiles; t++) {
        f->start[t] = k;
        int tx = t % f->tiles_x, ty = t / f->tiles_x;
        for (int i = 0; i < n; i++) {
            const int32_t *r = f->proj[i].rect;
            if (tx >= r[0] && tx < r[2] && ty >= r[1] && ty < r[3]) f->list[k++] = i;
        }
        st_sort_proj = f->proj;
        qsort(f->list + f->start[t], k - f->start[t], sizeof(int), st_cmp_depth);
    }
    f->start[tiles] = k;
}

/* Double forward of the whole scene. */
static inline void st_forward_d(const st_scene *s, st_fwd *f) {
    memset(f, 0, sizeof *f);
    sp_mcam_d mc;
    sp_mcam_init_d(&mc, &s->cam);
    int W = s->cam.width, H = s->cam.height;
    f->tiles_x = mc.tiles_x;
    f->tiles_y = mc.tiles_y;
    f->proj = SP_NEW(sp_mproj_d, s->n);
    uint64_t sig = 1469598103934665603ull;
    for (int i = 0; i < s->n; i++) {
        sp_m_project_d(&mc, s->dmeans + 3 * i, s->dlog_scales + 3 * i, s->dquats + 4 * i, s->dlogits[i],
                       s->dsh + (size_t)i * s->K * 3, s->degree, s->antialias, &f->proj[i]);
        for (int k = 0; k < 4; k++) sig = sig * 1099511628211ull + (uint64_t)f->proj[i].rect[k];
        for (int k = 0; k < 3; k++) sig = sig * 1099511628211ull + f->proj[i].clamped[k];
    }
    st_bin_d(f, s->n);
    f->rgb = SP_NEW(double, (size_t)W * H * 3);
    f->T = SP_NEW(double, (size_t)W * H);
    f->nc = SP_NEW(int32_t, (size_t)W * H);
    sp_msplat_d *buf = SP_NEW(sp_msplat_d, s->n + 1);
    double bg[3] = {s->bg[0], s->bg[1], s->bg[2]};
    st_events = 0;
    for (int py = 0; py < H; py++)
        for (int px = 0; px < W; px++) {
            int t = (py / 16) * f->tiles_x + px / 16;
            int m = f->start[t + 1] - f->start[t];
            for (int j = 0; j < m; j++) buf[j] = st_splat(&f->proj[f->list[f->start[t] + j]]);
            size_t pix = (size_t)py * W + px;
            sp_m_raster_pixel_d(buf, m, px, py, bg, f->rgb + 3 * pix, f->T + pix, f->nc + pix);
        }
    free(buf);
    f->sig = sig ^ st_events;
}

static inline void st_fwd_free(st_fwd *f) {
    free(f->proj), free(f->list), free(f->start), free(f->rgb), free(f->T), free(f->nc);
}

/* L = sum w . rgb in double, and the signature of its discrete outcome. */
static inline double st_loss_d(const st_scene *s, uint64_t *sig) {
    st_fwd f;
    st_forward_d(s, &f);
    double L = 0;
    for (int i = 0; i < s->cam.width * s->cam.height * 3; i++) L += s->w[i] * f.rgb[i];
    if (sig) *sig = f.sig;
    st_fwd_free(&f);
    return L;
}

/* Analytic gradient of st_loss_d w.r.t. the double parameters, through the double backward.
 * Also returns the projected-quantity gradients (gp: [n] splat-layout) when gp != NULL. */
static inline void st_grad_d(const st_scene *s, double *gm, double *gls, double *gq, double *gl, double *gsh,
                             sp_msplat_d *gp_out) {
    st_fwd f;
    st_forward_d(s, &f);
    int W = s->cam.width, H = s->cam.height;
    sp_msplat_d *gp = SP_NEW(sp_msplat_d, s->n + 1);
    sp_msplat_d *buf = SP_NEW(sp_msplat_d, s->n + 1), *acc = SP_NEW(sp_msplat_d, s->n + 1);
    double bg[3] = {s->bg[0], s->bg[1], s->bg[2]};
    for (int py = 0; py < H; py++)
        for (int px = 0; px < W; px++) {
            int t = (py / 16) * f.tiles_x + px / 16;
            int m = f.start[t + 1] - f.start[t];
            for (int j = 0; j < m; j++) buf[j] = st_splat(&f.proj[f.list[f.start[t] + j]]);
            memset(acc, 0, sizeof(sp_msplat_d) * (m + 1));
            size_t pix = (size_t)py * W + px;
            sp_m_raster_pixel_back_d(buf, f.nc[pix], px, py, bg, f.T[pix], s->w + 3 * pix, acc);
            for (int j = 0; j < m; j++) {
                sp_msplat_d *d = &gp[f.list[f.start[t] + j]];
                d->x += acc[j].x, d->y += acc[j].y, d->a += acc[j].a, d->b += acc[j].b, d->c += acc[j].c;
                d->op += acc[j].op;
                for (int ch = 0; ch < 3; ch++) d->col[ch] += acc[j].col[ch];
            }
        }
    sp_mcam_d mc;
    sp_mcam_init_d(&mc, &s->cam);
    memset(gm, 0, sizeof(double) * 3 * s->n);
    memset(gls, 0, sizeof(double) * 3 * s->n);
    memset(gq, 0, sizeof(double) * 4 * s->n);
    memset(gl, 0, sizeof(double) * s->n);
    memset(gsh, 0, sizeof(double) * s->n * s->K * 3);
    for (int i = 0; i < s->n; i++) {
        const sp_mproj_d *p = &f.proj[i];
        if (!(p->rect[0] < p->rect[2] && p->rect[1] < p->rect[3])) continue;
        double dm2[2] = {gp[i].x, gp[i].y}, dcon[3] = {gp[i].a, gp[i].b, gp[i].c};
        sp_m_project_back_d(&mc, s->dmeans + 3 * i, s->dlog_scales + 3 * i, s->dquats + 4 * i, s->dlogits[i],
                            s->dsh + (size_t)i * s->K * 3, s->degree, s->antialias, p->clamped, dm2, dcon, gp[i].op, gp[i].col,
                            gm + 3 * i, gls + 3 * i, gq + 4 * i, gl + i, gsh + (size_t)i * s->K * 3);
    }
    if (gp_out) memcpy(gp_out, gp, sizeof(sp_msplat_d) * s->n);
    free(gp), free(buf), free(acc);
    st_fwd_free(&f);
}

/* Compares a float gradient with a double reference: |f - d| <= atol * max|d| + rtol * |d|. */
static inline void st_assert_close(const char *what, const float *f, const double *d, int count, double atol,
                                   double rtol) {
    double scale = 0;
    for (int i = 0; i < count; i++) scale = fmax(scale, fabs(d[i]));
    for (int i = 0; i < count; i++) {
        double err = fabs((double)f[i] - d[i]);
        if (!(err <= atol * scale + rtol * fabs(d[i])))
            fail_msg("%s[%d]: float %.9g vs double %.9g (scale %.3g)", what, i, f[i], d[i], scale);
    }
}

#endif
