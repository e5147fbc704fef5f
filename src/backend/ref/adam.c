/* adam.c — the `adam` stage of docs/math.md on the CPU: one bias-corrected Adam update over
 * a flat parameter array. Element-wise, so the OpenMP split cannot change any result.
 *
 *   m = β1 m + (1 − β1) g,   v = β2 v + (1 − β2) g²,
 *   p −= lr_t · m / (sqrt(v) + eps_t),   lr_t = lr · sqrt(1 − β2^step) / (1 − β1^step),
 *                                        eps_t = eps · sqrt(1 − β2^step)
 *
 * (the bias-corrected update p −= lr · (m / (1 − β1^step)) / (sqrt(v / (1 − β2^step)) + eps) with the
 * corrections folded into lr and eps once per step: sp_adam_bias). step counts updates from 1; a
 * step below 1 is treated as 1. Sparse (adam.sparse): an element whose gradient is exactly 0 keeps
 * its value and moments, unless its Gaussian was in view this step (its screen rectangle not
 * empty): a Gaussian in view takes the whole update, so the values a clamped colour channel or a
 * hidden Gaussian gives no gradient keep their momentum, as in the dense update. The factors are
 * computed in double and rounded to float; the per-element arithmetic is float, as on the GPU.
 * adam.moments16: the moments packed 16 bits each in one word, stochastically rounded
 * (backend/moments16_rule.h). Callers may update many small arrays (one per Gaussian), so small counts run without a parallel
 * region and the factors of the last (β1, β2, eps, step) are remembered per thread. */
#include <math.h>

#include "backend/ref/stages.h"
#include "core/threads.h"

#define PARALLEL_MIN 16384 /* elements below which threads cost more than they save */

typedef struct {
    float beta1, beta2, eps;
    int step;
    sp_adam_bias_t bias;
} bias_cache;

static _Thread_local bias_cache cache = {0, 0, 0, 0, {0.0, 0.0f}};

sp_adam_bias_t sp_adam_bias(float beta1, float beta2, float eps, int step) {
    if (step < 1) step = 1;
    if (cache.step != step || cache.beta1 != beta1 || cache.beta2 != beta2 || cache.eps != eps) {
        double c1 = 1.0 - pow((double)beta1, (double)step), c2 = sqrt(1.0 - pow((double)beta2, (double)step));
        cache.beta1 = beta1;
        cache.beta2 = beta2;
        cache.eps = eps;
        cache.step = step;
        cache.bias.lr_scale = c2 / c1;
        cache.bias.eps = (float)((double)eps * c2);
    }
    return cache.bias;
}

void cpu_adam(float *param, const float *grad, float *m, float *v, int64_t count, float lr, float beta1,
              float beta2, float eps, int step, int sparse, const uint8_t *seen, int per, int64_t m16) {
    if (count <= 0) return;
    sp_adam_bias_t b = sp_adam_bias(beta1, beta2, eps, step);
    float lr_t = sp_adam_lr(&b, lr);
    if (m16 >= 0) {
        uint32_t t = sp_m16_step(step);
#pragma omp parallel for schedule(static) if (count >= PARALLEL_MIN) num_threads(sp_omp_threads())
        for (int64_t i = 0; i < count; i++)
            cpu_adam_one_m16(&param[i], grad[i], &m[i], lr_t, beta1, beta2, b.eps, sparse && !(seen && seen[i / per]),
                             sp_m16_bits(t, (uint64_t)(m16 + i)));
    } else if (sparse) {
#pragma omp parallel for schedule(static) if (count >= PARALLEL_MIN) num_threads(sp_omp_threads())
        for (int64_t i = 0; i < count; i++)
            cpu_adam_one(&param[i], grad[i], &m[i], &v[i], lr_t, beta1, beta2, b.eps, !(seen && seen[i / per]));
    } else { /* no branch in the loop: it vectorizes */
#pragma omp parallel for schedule(static) if (count >= PARALLEL_MIN) num_threads(sp_omp_threads())
        for (int64_t i = 0; i < count; i++) cpu_adam_one(&param[i], grad[i], &m[i], &v[i], lr_t, beta1, beta2, b.eps, 0);
    }
}

void cpu_adam_sh(float *sh, const float *grad, float *m, float *v, int64_t n, int K, float lr_dc, float lr_rest,
                 float beta1, float beta2, float eps, int step, int sparse, const uint8_t *seen, int64_t m16) {
    if (n <= 0) return;
    sp_adam_bias_t b = sp_adam_bias(beta1, beta2, eps, step);
    float lr_t_dc = sp_adam_lr(&b, lr_dc), lr_t_rest = sp_adam_lr(&b, lr_rest);
    int64_t per = 3 * (int64_t)K;
    if (m16 >= 0) { /* a Gaussian at a time, as the dense update below (its loops vectorize) */
        uint32_t t = sp_m16_step(step);
#pragma omp parallel for schedule(static) if (n * per >= PARALLEL_MIN) num_threads(sp_omp_threads())
        for (int64_t g = 0; g < n; g++) {
            int64_t o = g * per;
            int sp = sparse && !(seen && seen[g]);
            for (int64_t e = o; e < o + 3; e++)
                cpu_adam_one_m16(&sh[e], grad[e], &m[e], lr_t_dc, beta1, beta2, b.eps, sp,
                                 sp_m16_bits(t, (uint64_t)(m16 + e)));
            for (int64_t e = o + 3; e < o + per; e++)
                cpu_adam_one_m16(&sh[e], grad[e], &m[e], lr_t_rest, beta1, beta2, b.eps, sp,
                                 sp_m16_bits(t, (uint64_t)(m16 + e)));
        }
        return;
    }
    if (sparse) {
#pragma omp parallel for schedule(static) if (n * per >= PARALLEL_MIN) num_threads(sp_omp_threads())
        for (int64_t i = 0; i < n * per; i++) {
            float lr = i % per < 3 ? lr_t_dc : lr_t_rest;
            cpu_adam_one(&sh[i], grad[i], &m[i], &v[i], lr, beta1, beta2, b.eps, !(seen && seen[i / per]));
        }
        return;
    }
    /* dense: a Gaussian at a time, its DC terms then the rest, no branch in the loops (they vectorize) */
#pragma omp parallel for schedule(static) if (n * per >= PARALLEL_MIN) num_threads(sp_omp_threads())
    for (int64_t g = 0; g < n; g++) {
        int64_t o = g * per;
        for (int64_t e = o; e < o + 3; e++) cpu_adam_one(&sh[e], grad[e], &m[e], &v[e], lr_t_dc, beta1, beta2, b.eps, 0);
        for (int64_t e = o + 3; e < o + per; e++)
            cpu_adam_one(&sh[e], grad[e], &m[e], &v[e], lr_t_rest, beta1, beta2, b.eps, 0);
    }
}

void sp_m16_pack_store(float *m, float *v, int64_t count) {
    for (int64_t i = 0; i < count; i++) {
        uint32_t w = sp_m16_pack_nearest(m[i], v ? v[i] : 0.0f);
        memcpy(&m[i], &w, 4);
        if (v) v[i] = 0.0f;
    }
}

void sp_m16_unpack_store(const float *m_words, float *m, float *v, int64_t count) {
    for (int64_t i = 0; i < count; i++) {
        uint32_t w;
        memcpy(&w, &m_words[i], 4);
        if (v) v[i] = sp_m16_v(w);
        if (m) m[i] = sp_m16_m(w);
    }
}

/* The five arrays of a store and their lengths. */
static void model_arrays(const sp_gaussians *g, float *a[5], int64_t cnt[5]) {
    int64_t n = g->n;
    a[0] = g->means, a[1] = g->log_scales, a[2] = g->quats, a[3] = g->opacity_logits, a[4] = g->sh;
    cnt[0] = 3 * n, cnt[1] = 3 * n, cnt[2] = 4 * n, cnt[3] = n, cnt[4] = 3 * (int64_t)g->K * n;
}

void sp_m16_pack_model(sp_gaussians *m, sp_gaussians *v) {
    float *am[5], *av[5] = {NULL, NULL, NULL, NULL, NULL};
    int64_t cnt[5];
    model_arrays(m, am, cnt);
    if (v) model_arrays(v, av, cnt);
    for (int k = 0; k < 5; k++) sp_m16_pack_store(am[k], av[k], cnt[k]);
}

void sp_m16_unpack_model(const sp_gaussians *words, sp_gaussians *m, sp_gaussians *v) {
    float *aw[5], *am[5] = {NULL, NULL, NULL, NULL, NULL}, *av[5] = {NULL, NULL, NULL, NULL, NULL};
    int64_t cnt[5];
    model_arrays(words, aw, cnt);
    if (m) model_arrays(m, am, cnt);
    if (v) model_arrays(v, av, cnt);
    for (int k = 0; k < 5; k++) sp_m16_unpack_store(aw[k], am[k], av[k], cnt[k]);
}
