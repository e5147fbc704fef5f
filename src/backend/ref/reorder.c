/* reorder.c — the Gaussians in Morton order of their means on the host (backend/morton_rule.h):
 * the codes, a stable least-significant-digit counting sort of them in three 10-bit digits, and
 * the stores gathered into that order. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/morton_rule.h"
#include "backend/ref/reorder.h"
#include "core/core.h"
#include "core/threads.h"

void cpu_morton_box(const float *means, int n, float lo[3], int e[3]) {
    for (int k = 0; k < 3; k++) {
        float a = 0.0f, b = 0.0f;
        int any = 0;
        for (int i = 0; i < n; i++) {
            float x = means[3 * (size_t)i + k];
            if (!isfinite(x)) continue;
            if (!any || x < a) a = x;
            if (!any || x > b) b = x;
            any = 1;
        }
        lo[k] = a;
        e[k] = sp_morton_exponent(a, b);
    }
}

int cpu_morton_order(const float *means, int n, int32_t *order) {
    if (n <= 0) return 0;
    uint32_t *code = sp_try_alloc((size_t)n, 2 * sizeof(uint32_t), "the reorder's codes", "lower refine.max_gaussians");
    int32_t *tmp = sp_try_alloc((size_t)n, sizeof(int32_t), "the reorder's codes", "lower refine.max_gaussians");
    if (!code || !tmp) {
        free(code), free(tmp);
        return -1;
    }
    uint32_t *code2 = code + n;
    float lo[3];
    int e[3];
    cpu_morton_box(means, n, lo, e);
#pragma omp parallel for schedule(static) num_threads(sp_omp_threads())
    for (int i = 0; i < n; i++) {
        code[i] = sp_morton_code(means + 3 * (size_t)i, lo, e);
        order[i] = i;
    }
    /* three stable passes over 10-bit digits, low digit first: order ends sorted by code, equal
     * codes in index order */
    for (int pass = 0; pass < 3; pass++) {
        int shift = 10 * pass;
        size_t count[1025] = {0};
        for (int i = 0; i < n; i++) count[((code[i] >> shift) & 1023u) + 1]++;
        for (int d = 0; d < 1024; d++) count[d + 1] += count[d];
        for (int i = 0; i < n; i++) {
            size_t at = count[(code[i] >> shift) & 1023u]++;
            tmp[at] = order[i];
            code2[at] = code[i];
        }
        memcpy(order, tmp, (size_t)n * sizeof *order);
        memcpy(code, code2, (size_t)n * sizeof *code);
    }
    free(code), free(tmp);
    return 0;
}

/* s gathered in order into the scratch store d (the same n and SH degree), then the two swapped. */
static void gather(sp_gaussians *s, sp_gaussians *d, const int32_t *order) {
    d->n = s->n;
#pragma omp parallel for schedule(static) num_threads(sp_omp_threads())
    for (int i = 0; i < s->n; i++) sp_gaussians_copy_one(d, i, s, order[i]);
    sp_gaussians t = *s;
    *s = *d;
    *d = t;
}

int cpu_reorder(sp_gaussians *g, sp_gaussians *m, sp_gaussians *v) {
    int n = g->n;
    if (n <= 1) return 0;
    /* one scratch store, taken before anything moves: the three stores move together or not at all */
    sp_gaussians d = {0};
    int32_t *order = sp_try_alloc((size_t)n, sizeof(int32_t), "the reorder's codes", "lower refine.max_gaussians");
    if (!order || sp_gaussians_try_init(&d, n, g->sh_degree) || cpu_morton_order(g->means, n, order)) {
        free(order);
        sp_gaussians_free(&d);
        return -1;
    }
    gather(g, &d, order);
    if (m) gather(m, &d, order);
    if (v) gather(v, &d, order);
    sp_gaussians_free(&d);
    free(order);
    return 0;
}
