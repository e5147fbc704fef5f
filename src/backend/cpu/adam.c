/* adam.c — the `adam` stage of docs/math.md on the CPU: one bias-corrected Adam update over
 * a flat parameter array. Element-wise, so the OpenMP split cannot change any result.
 *
 *   m = β1 m + (1 − β1) g,   v = β2 v + (1 − β2) g²,
 *   p −= lr · (m / (1 − β1^step)) / (sqrt(v / (1 − β2^step)) + eps)
 *
 * step counts updates from 1; a step below 1 is treated as 1. The bias corrections are computed
 * in double and rounded to float; the per-element arithmetic is float, as on the GPU.
 * Callers may update many small arrays (one per Gaussian), so small counts run without a
 * parallel region and the bias corrections of the last (β1, β2, step) are remembered per thread. */
#include <math.h>

#include "backend/cpu/stages.h"

#define PARALLEL_MIN 16384 /* elements below which threads cost more than they save */

typedef struct {
    float beta1, beta2, bc1, bc2;
    int step;
} bias_cache;

static _Thread_local bias_cache cache = {0, 0, 0, 0, 0};

void cpu_adam(float *param, const float *grad, float *m, float *v, int64_t count, float lr, float beta1,
              float beta2, float eps, int step) {
    if (count <= 0) return;
    if (step < 1) step = 1;
    if (cache.step != step || cache.beta1 != beta1 || cache.beta2 != beta2) {
        cache.beta1 = beta1;
        cache.beta2 = beta2;
        cache.step = step;
        cache.bc1 = (float)(1.0 - pow((double)beta1, (double)step));
        cache.bc2 = (float)(1.0 - pow((double)beta2, (double)step));
    }
    const float bc1 = cache.bc1, bc2 = cache.bc2;
    const float b1c = 1.0f - beta1, b2c = 1.0f - beta2;
#pragma omp parallel for schedule(static) if (count >= PARALLEL_MIN)
    for (int64_t i = 0; i < count; i++) {
        float g = grad[i];
        float mi = beta1 * m[i] + b1c * g;
        float vi = beta2 * v[i] + b2c * g * g;
        m[i] = mi;
        v[i] = vi;
        param[i] -= lr * (mi / bc1) / (sqrtf(vi / bc2) + eps);
    }
}
