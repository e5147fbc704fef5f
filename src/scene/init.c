/* init.c — initial Gaussians from points or from a random box, with scales from the 3 nearest
 * neighbours found in a k-d tree.
 *
 * The tree is implicit: the points are reordered so that every node's median sits in the middle
 * of its range, smaller coordinates (on the node's split axis) to its left, larger to its right;
 * ranges of at most LEAF points are scanned. The split axis is the one of largest extent, so flat
 * or clustered clouds stay balanced. A query only ever reads distances, and the result is the sum
 * of the three smallest, sorted: the same value whatever the visiting order, hence deterministic. */
#include "core/threads.h"
#include "scene/init.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"

#define LEAF 16
#define TASK_MIN 20000 /* ranges smaller than this are built without spawning tasks */

typedef struct {
    float p[3];
    int id; /* index in the caller's array */
} kd_point;

/* Reorders a[lo, hi) so that a[k] holds the element that belongs there in sorted order (by axis
 * ax), with nothing larger before it and nothing smaller after it. Hoare partitioning (which splits
 * runs of equal keys evenly) around the median of three elements at hashed positions: no input
 * order is systematically bad, and the result is still a pure function of the input. */
static void select_nth(kd_point *a, int lo, int hi, int k, int ax) {
    hi--; /* inclusive from here on */
    uint64_t round = 0;
    while (lo < hi) {
        uint64_t h = sp_hash64((uint64_t)lo << 32 | (uint32_t)hi, round++), len = (uint64_t)(hi - lo + 1);
        float x = a[lo + (int)(h % len)].p[ax], y = a[lo + (int)((h >> 21) % len)].p[ax],
              z = a[lo + (int)((h >> 42) % len)].p[ax];
        float pv = x < y ? (y < z ? y : (x < z ? z : x)) : (x < z ? x : (y < z ? z : y));
        int i = lo, j = hi;
        while (i <= j) {
            while (a[i].p[ax] < pv) i++;
            while (a[j].p[ax] > pv) j--;
            if (i <= j) {
                kd_point t = a[i];
                a[i] = a[j];
                a[j] = t;
                i++;
                j--;
            }
        }
        /* now a[lo..j] <= pv, a[i..hi] >= pv, and everything strictly between equals pv */
        if (k <= j) hi = j;
        else if (k >= i) lo = i;
        else return;
    }
}

static void build(kd_point *a, uint8_t *axis, int lo, int hi) {
    if (hi - lo <= LEAF) return;
    float mn[3] = {INFINITY, INFINITY, INFINITY}, mx[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (int i = lo; i < hi; i++)
        for (int k = 0; k < 3; k++) {
            float v = a[i].p[k];
            if (v < mn[k]) mn[k] = v;
            if (v > mx[k]) mx[k] = v;
        }
    int ax = 0;
    for (int k = 1; k < 3; k++)
        if (mx[k] - mn[k] > mx[ax] - mn[ax]) ax = k;
    int mid = lo + (hi - lo) / 2;
    select_nth(a, lo, hi, mid, ax);
    axis[mid] = (uint8_t)ax;
    if (hi - lo >= TASK_MIN) {
#pragma omp task default(none) firstprivate(a, axis, lo, mid)
        build(a, axis, lo, mid);
        build(a, axis, mid + 1, hi);
#pragma omp taskwait
    } else {
        build(a, axis, lo, mid);
        build(a, axis, mid + 1, hi);
    }
}

typedef struct {
    float d[3]; /* the three smallest squared distances so far, ascending */
} best3;

static inline void consider(best3 *b, const float q[3], const float p[3]) {
    float dx = q[0] - p[0], dy = q[1] - p[1], dz = q[2] - p[2];
    float d = dx * dx + dy * dy + dz * dz;
    if (d >= b->d[2]) return;
    if (d < b->d[1]) {
        b->d[2] = b->d[1];
        if (d < b->d[0]) {
            b->d[1] = b->d[0];
            b->d[0] = d;
        } else {
            b->d[1] = d;
        }
    } else {
        b->d[2] = d;
    }
}

/* Searches positions [lo, hi) of the tree for the nearest neighbours of q, skipping position self.
 * The near side of a split first; the far side only when the splitting plane is closer than the
 * current third distance (a point beyond it at an equal distance would not change the sum). */
static void query(const kd_point *a, const uint8_t *axis, int lo, int hi, const float q[3], int self, best3 *b) {
    if (hi - lo <= LEAF) {
        for (int i = lo; i < hi; i++)
            if (i != self) consider(b, q, a[i].p);
        return;
    }
    int mid = lo + (hi - lo) / 2, ax = axis[mid];
    if (mid != self) consider(b, q, a[mid].p);
    float diff = q[ax] - a[mid].p[ax];
    if (diff < 0.0f) {
        query(a, axis, lo, mid, q, self, b);
        if (diff * diff < b->d[2]) query(a, axis, mid + 1, hi, q, self, b);
    } else {
        query(a, axis, mid + 1, hi, q, self, b);
        if (diff * diff < b->d[2]) query(a, axis, lo, mid, q, self, b);
    }
}

void sp_knn3_mean_dist2(const float *xyz, int n, float *out) {
    if (n <= 0) return;
    if (n == 1) {
        out[0] = 0.0f;
        return;
    }
    kd_point *a = sp_malloc((size_t)n * sizeof *a);
    uint8_t *axis = sp_calloc((size_t)n, 1);
#pragma omp parallel for schedule(static) num_threads(sp_omp_threads())
    for (int i = 0; i < n; i++) {
        memcpy(a[i].p, xyz + 3 * (size_t)i, 3 * sizeof(float));
        a[i].id = i;
    }
#pragma omp parallel num_threads(sp_omp_threads())
#pragma omp single
    build(a, axis, 0, n);
    int k = n - 1 < 3 ? n - 1 : 3;
    /* queries run in tree order, for locality */
#pragma omp parallel for schedule(dynamic, 2048) num_threads(sp_omp_threads())
    for (int i = 0; i < n; i++) {
        best3 b = {{INFINITY, INFINITY, INFINITY}};
        query(a, axis, 0, n, a[i].p, i, &b);
        float s = 0.0f;
        for (int j = 0; j < k; j++) s += b.d[j];
        out[a[i].id] = s / (float)k;
    }
    free(axis);
    free(a);
}

/* The shared path: colours as floats in [0, 1] (rgb01 NULL: grey). */
static int init_points(sp_gaussians *g, const float *xyz, const float *rgb01, int n, int sh_degree, float opacity,
                       float fixed_scale) {
    if (!g) return sp_error("init: no Gaussian store given");
    if (n < 1) return sp_error("init: no points to initialize from (n = %d)", n);
    if (!xyz) return sp_error("init: no point coordinates given");
    if (sh_degree < 0 || sh_degree > 3) return sp_error("init: SH degree %d is not in 0..3", sh_degree);
    if (!(opacity > 0.0f && opacity < 1.0f)) return sp_error("init: opacity %g is not in (0, 1)", (double)opacity);
    if (!(fixed_scale >= 0.0f) || isinf(fixed_scale))
        return sp_error("init: fixed scale %g must be finite and >= 0 (0: from neighbours)", (double)fixed_scale);
    for (int i = 0; i < n; i++) {
        const float *p = xyz + 3 * (size_t)i;
        if (!isfinite(p[0]) || !isfinite(p[1]) || !isfinite(p[2]))
            return sp_error("init: point %d is not finite (%g, %g, %g)", i, (double)p[0], (double)p[1], (double)p[2]);
    }

    float *d2 = NULL;
    if (fixed_scale <= 0.0f && n > 1) {
        d2 = sp_try_alloc((size_t)n, sizeof *d2, "the initial scales", "lower init.count");
        if (!d2) return -1;
        sp_knn3_mean_dist2(xyz, n, d2);
    }
    if (sp_gaussians_try_init(g, n, sh_degree)) {
        free(d2);
        return -1;
    }
    g->n = n;
    int K = g->K;
    float logit = sp_logitf(opacity);
    float fixed_log = fixed_scale > 0.0f ? logf(fixed_scale) : n == 1 ? logf(SP_INIT_LONE_SCALE) : 0.0f;
#pragma omp parallel for schedule(static) num_threads(sp_omp_threads())
    for (int i = 0; i < n; i++) {
        size_t i3 = 3 * (size_t)i;
        memcpy(g->means + i3, xyz + i3, 3 * sizeof(float));
        float ls = fixed_log;
        if (d2) ls = logf(sqrtf(fmaxf(d2[i], SP_INIT_MIN_DIST2)));
        g->log_scales[i3 + 0] = g->log_scales[i3 + 1] = g->log_scales[i3 + 2] = ls;
        float *q = g->quats + 4 * (size_t)i;
        q[0] = 1.0f, q[1] = q[2] = q[3] = 0.0f;
        g->opacity_logits[i] = logit;
        float *sh = g->sh + (size_t)i * K * 3; /* DC first; higher bands stay zero */
        for (int c = 0; c < 3; c++) sh[c] = ((rgb01 ? rgb01[i3 + c] : 0.5f) - 0.5f) / SP_SH_C0;
    }
    free(d2);
    return 0;
}

int sp_init_from_points(sp_gaussians *g, const float *xyz, const uint8_t *rgb, int n, int sh_degree, float opacity,
                        float fixed_scale) {
    if (n < 1) return sp_error("init: no points to initialize from (n = %d)", n);
    float *c = NULL;
    if (rgb) {
        c = sp_try_alloc((size_t)n * 3, sizeof *c, "the initial colours", NULL);
        if (!c) return -1;
        for (size_t i = 0; i < (size_t)n * 3; i++) c[i] = (float)rgb[i] / 255.0f;
    }
    int rc = init_points(g, xyz, c, n, sh_degree, opacity, fixed_scale);
    free(c);
    return rc;
}

/* Fraction of the cameras that see x (in front and projecting inside the image). */
static float seen_fraction(const float x[3], const sp_camera *cams, int ncams) {
    int seen = 0;
    for (int c = 0; c < ncams; c++) {
        const sp_camera *k = &cams[c];
        float p[3];
        for (int r = 0; r < 3; r++) p[r] = k->R[3 * r] * x[0] + k->R[3 * r + 1] * x[1] + k->R[3 * r + 2] * x[2] + k->t[r];
        if (!(p[2] > 0.0f)) continue;
        float u = k->fx * p[0] / p[2] + k->cx, v = k->fy * p[1] / p[2] + k->cy;
        seen += u >= 0.0f && u < (float)k->width && v >= 0.0f && v < (float)k->height;
    }
    return (float)seen / (float)ncams;
}

int sp_init_random(sp_gaussians *g, int count, const float box_min[3], const float box_max[3], int sh_degree,
                   float opacity, float fixed_scale, uint64_t seed, const sp_camera *cams, int ncams) {
    if (count < 1) return sp_error("init: random initialization needs at least one point (count = %d)", count);
    for (int k = 0; k < 3; k++)
        if (!isfinite(box_min[k]) || !isfinite(box_max[k]) || box_min[k] > box_max[k])
            return sp_error("init: random box min (%g, %g, %g) max (%g, %g, %g) is not a finite box",
                            (double)box_min[0], (double)box_min[1], (double)box_min[2], (double)box_max[0],
                            (double)box_max[1], (double)box_max[2]);
    float *xyz = sp_try_alloc((size_t)count * 3, sizeof *xyz, "the initial points", "lower init.count");
    if (!xyz) return -1;
    sp_camera *some = NULL; /* an evenly spaced subset of many cameras */
    if (ncams > SP_INIT_MAX_CAMS) {
        some = sp_try_alloc(SP_INIT_MAX_CAMS, sizeof *some, "the initial points", "lower init.count");
        if (!some) {
            free(xyz);
            return -1;
        }
        for (int j = 0; j < SP_INIT_MAX_CAMS; j++) some[j] = cams[(int64_t)j * ncams / SP_INIT_MAX_CAMS];
        cams = some, ncams = SP_INIT_MAX_CAMS;
    }
    sp_rng r;
    sp_rng_seed(&r, seed, 0x1417u);
    int64_t tries = 0, budget = 64 * (int64_t)count;
    for (size_t i = 0; i < (size_t)count;) {
        float *x = xyz + 3 * i;
        for (int k = 0; k < 3; k++) /* clamped: rounding must not leave the box */
            x[k] = fminf(box_max[k], box_min[k] + (box_max[k] - box_min[k]) * sp_rng_uniform(&r));
        if (ncams > 0 && tries++ < budget && sp_rng_uniform(&r) >= seen_fraction(x, cams, ncams)) continue;
        i++;
    }
    free(some);
    /* grey (NULL colours): the colour comes from the images, as in 3DGS */
    int rc = init_points(g, xyz, NULL, count, sh_degree, opacity, fixed_scale);
    free(xyz);
    return rc;
}
