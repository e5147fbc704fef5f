/* gaussians.c — allocation and copying of the host Gaussian store. */
#include "scene/gaussians.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"

int sp_gaussians_try_init(sp_gaussians *g, int cap, int sh_degree) {
    memset(g, 0, sizeof *g);
    g->sh_degree = sh_degree;
    g->K = sp_sh_coeffs(sh_degree);
    return sp_gaussians_try_reserve(g, cap > 0 ? cap : 1);
}

int sp_gaussians_try_reserve(sp_gaussians *g, int cap) {
    if (cap <= g->cap) return 0;
    size_t c = (size_t)cap, k3 = 3 * (size_t)g->K;
    char what[128];
    snprintf(what, sizeof what, "the Gaussian parameters (%d Gaussians, SH degree %d)", cap, g->sh_degree);
    const char *hint = "lower refine.capacity (or init.count), or trainer.sh_degree";
    /* One array at a time: each grown array stays valid, so the store is consistent (at its old
     * capacity) if a later one fails. */
    float **arr[5] = {&g->means, &g->log_scales, &g->quats, &g->opacity_logits, &g->sh};
    size_t per[5] = {3, 3, 4, 1, k3};
    size_t total = (size_t)sp_gaussian_floats(g->K) * sizeof(float);
    for (int i = 0; i < 5; i++) {
        float *q = sp_try_realloc(*arr[i], c * per[i], sizeof(float), what, hint);
        if (!q) {
            sp_error("out of memory: %s for %s; %s", sp_bytes_str((double)c * (double)total), what, hint);
            return -1;
        }
        *arr[i] = q;
    }
    size_t o = (size_t)g->cap;
    for (int i = 0; i < 5; i++) memset(*arr[i] + per[i] * o, 0, (c - o) * per[i] * sizeof(float));
    g->cap = cap;
    return 0;
}

void sp_gaussians_init(sp_gaussians *g, int cap, int sh_degree) {
    memset(g, 0, sizeof *g);
    g->sh_degree = sh_degree;
    g->K = sp_sh_coeffs(sh_degree);
    sp_gaussians_reserve(g, cap > 0 ? cap : 1);
}

void sp_gaussians_reserve(sp_gaussians *g, int cap) {
    if (cap <= g->cap) return;
    size_t c = (size_t)cap;
    g->means = sp_realloc(g->means, c * 3 * sizeof(float));
    g->log_scales = sp_realloc(g->log_scales, c * 3 * sizeof(float));
    g->quats = sp_realloc(g->quats, c * 4 * sizeof(float));
    g->opacity_logits = sp_realloc(g->opacity_logits, c * sizeof(float));
    g->sh = sp_realloc(g->sh, c * 3 * (size_t)g->K * sizeof(float));
    size_t o = (size_t)g->cap;
    memset(g->means + 3 * o, 0, (c - o) * 3 * sizeof(float));
    memset(g->log_scales + 3 * o, 0, (c - o) * 3 * sizeof(float));
    memset(g->quats + 4 * o, 0, (c - o) * 4 * sizeof(float));
    memset(g->opacity_logits + o, 0, (c - o) * sizeof(float));
    memset(g->sh + 3 * (size_t)g->K * o, 0, (c - o) * 3 * (size_t)g->K * sizeof(float));
    g->cap = cap;
}

void sp_gaussians_free(sp_gaussians *g) {
    free(g->means);
    free(g->log_scales);
    free(g->quats);
    free(g->opacity_logits);
    free(g->sh);
    memset(g, 0, sizeof *g);
}

void sp_gaussians_copy_one(sp_gaussians *d, int di, const sp_gaussians *s, int si) {
    memcpy(d->means + 3 * (size_t)di, s->means + 3 * (size_t)si, 3 * sizeof(float));
    memcpy(d->log_scales + 3 * (size_t)di, s->log_scales + 3 * (size_t)si, 3 * sizeof(float));
    memcpy(d->quats + 4 * (size_t)di, s->quats + 4 * (size_t)si, 4 * sizeof(float));
    d->opacity_logits[di] = s->opacity_logits[si];
    size_t k3 = 3 * (size_t)s->K;
    memcpy(d->sh + k3 * (size_t)di, s->sh + k3 * (size_t)si, k3 * sizeof(float));
}

void sp_gaussians_zero(sp_gaussians *g) {
    size_t n = (size_t)g->n;
    memset(g->means, 0, n * 3 * sizeof(float));
    memset(g->log_scales, 0, n * 3 * sizeof(float));
    memset(g->quats, 0, n * 4 * sizeof(float));
    memset(g->opacity_logits, 0, n * sizeof(float));
    memset(g->sh, 0, n * 3 * (size_t)g->K * sizeof(float));
}

void sp_gaussians_clone(sp_gaussians *d, const sp_gaussians *s) {
    sp_gaussians_init(d, s->n, s->sh_degree);
    d->n = s->n;
    for (int i = 0; i < s->n; i++) sp_gaussians_copy_one(d, i, s, i);
}

static int all_finite(const float *p, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!isfinite(p[i])) return 0;
    return 1;
}

int sp_gaussians_finite(const sp_gaussians *g) {
    size_t n = (size_t)g->n;
    return all_finite(g->means, 3 * n) && all_finite(g->log_scales, 3 * n) && all_finite(g->quats, 4 * n) &&
           all_finite(g->opacity_logits, n) && all_finite(g->sh, 3 * (size_t)g->K * n);
}
