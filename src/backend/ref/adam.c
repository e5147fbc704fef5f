/* adam.c — the `adam` stage of docs/math.md on the CPU: one bias-corrected Adam update over
 * a flat parameter array. Element-wise, so the OpenMP split cannot change any result.
 *
 *   m = β1 m + (1 − β1) g,   v = β2 v + (1 − β2) g²,
 *   p −= lr · (m / (1 − β1^step)) / (sqrt(v / (1 − β2^step)) + eps)
 *
 * step counts updates from 1; a step below 1 is treated as 1. Sparse (adam.sparse): an element
 * whose gradient is exactly 0 keeps its value and moments. The bias corrections are computed
 * in double and rounded to float; the per-element arithmetic is float, as on the GPU.
 * Callers may update many small arrays (one per Gaussian), so small counts run without a
 * parallel region and the bias corrections of the last (β1, β2, step) are remembered per thread. */
#include <math.h>

#include "backend/ref/stages.h"
#include "core/threads.h"

#define PARALLEL_MIN 16384 /* elements below which threads cost more than they save */

typedef struct {
    float beta1, beta2, bc1, bc2;
    int step;
} bias_cache;

static _Thread_local bias_cache cache = {0, 0, 0, 0, 0};

static void bias_corrections(float beta1, float beta2, int step, float *bc1, float *bc2) {
    if (cache.step != step || cache.beta1 != beta1 || cache.beta2 != beta2) {
        cache.beta1 = beta1;
        cache.beta2 = beta2;
        cache.step = step;
        cache.bc1 = (float)(1.0 - pow((double)beta1, (double)step));
        cache.bc2 = (float)(1.0 - pow((double)beta2, (double)step));
    }
    *bc1 = cache.bc1;
    *bc2 = cache.bc2;
}

void cpu_adam_bias(float beta1, float beta2, int step, float *bc1, float *bc2) {
    bias_corrections(beta1, beta2, step < 1 ? 1 : step, bc1, bc2);
}

void cpu_adam(float *param, const float *grad, float *m, float *v, int64_t count, float lr, float beta1,
              float beta2, float eps, int step, int sparse) {
    if (count <= 0) return;
    if (step < 1) step = 1;
    float bc1, bc2;
    bias_corrections(beta1, beta2, step, &bc1, &bc2);
#pragma omp parallel for schedule(static) if (count >= PARALLEL_MIN) num_threads(sp_omp_threads())
    for (int64_t i = 0; i < count; i++)
        cpu_adam_one(&param[i], grad[i], &m[i], &v[i], lr, beta1, beta2, eps, bc1, bc2, sparse);
}

void cpu_adam_sh(float *sh, const float *grad, float *m, float *v, int64_t n, int K, float lr_dc, float lr_rest,
                 float beta1, float beta2, float eps, int step, int sparse) {
    if (n <= 0) return;
    if (step < 1) step = 1;
    float bc1, bc2;
    bias_corrections(beta1, beta2, step, &bc1, &bc2);
    int64_t per = 3 * (int64_t)K;
#pragma omp parallel for schedule(static) if (n * per >= PARALLEL_MIN) num_threads(sp_omp_threads())
    for (int64_t i = 0; i < n * per; i++) {
        float lr = i % per < 3 ? lr_dc : lr_rest;
        cpu_adam_one(&sh[i], grad[i], &m[i], &v[i], lr, beta1, beta2, eps, bc1, bc2, sparse);
    }
}
