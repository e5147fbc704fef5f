/* adam.cu — the `adam` stage on the GPU: one fused kernel over every parameter group of the n
 * Gaussians (means, log_scales, quats, opacity, SH DC, SH rest), each with its own learning rate.
 * Parameters, gradients and moments share the capacity-offset layout of cu_params_at. */
#include "backend/cuda/cuda_internal.h"

__device__ __forceinline__ void adam_one(float *p, const float *g, float *m, float *v, size_t i, float lr,
                                         const cu_adam_args *a) {
    float gi = g[i];
    float mi = a->beta1 * m[i] + (1.0f - a->beta1) * gi;
    float vi = a->beta2 * v[i] + (1.0f - a->beta2) * gi * gi;
    m[i] = mi;
    v[i] = vi;
    p[i] -= lr * (mi / a->bc1) / (sqrtf(vi / a->bc2) + a->eps);
}

/* Element t of the n-Gaussian view: region sizes 3n, 3n, 4n, n, 3Kn; regions start at
 * capacity offsets 0, 3cap, 6cap, 10cap, 11cap. This launch covers elements first .. end-1. */
__global__ void k_adam(float *p, const float *g, float *m, float *v, int n, int cap, int K, int64_t first,
                       int64_t end, cu_adam_args a) {
    int64_t t = first + (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    int64_t N = n, C = cap;
    if (t >= end) return;
    size_t idx;
    float lr;
    if (t < 3 * N) idx = (size_t)t, lr = a.lr[0];
    else if (t < 6 * N) idx = (size_t)(3 * C + (t - 3 * N)), lr = a.lr[1];
    else if (t < 10 * N) idx = (size_t)(6 * C + (t - 6 * N)), lr = a.lr[2];
    else if (t < 11 * N) idx = (size_t)(10 * C + (t - 10 * N)), lr = a.lr[3];
    else {
        int64_t e = t - 11 * N;
        int k = (int)((e / 3) % K);
        idx = (size_t)(11 * C + e);
        lr = k == 0 ? a.lr[4] : a.lr[5];
    }
    adam_one(p, g, m, v, idx, lr, &a);
}

void cuda_adam(float *param, const float *grad, float *m, float *v, int n, int cap, int K, const cu_adam_args *a,
               cudaStream_t s) {
    cuda_adam_range(param, grad, m, v, n, cap, K, 0, (int64_t)n * (11 + 3 * (int64_t)K), a, s);
}

void cuda_adam_range(float *param, const float *grad, float *m, float *v, int n, int cap, int K, int64_t first,
                     int64_t end, const cu_adam_args *a, cudaStream_t s) {
    int64_t total = (int64_t)n * (11 + 3 * (int64_t)K);
    if (end > total) end = total;
    if (first < 0) first = 0;
    if (end <= first) return;
    k_adam<<<CU_GRID(end - first, 256), 256, 0, s>>>(param, grad, m, v, n, cap, K, first, end, *a);
}

__global__ void k_adam_flat(float *p, const float *g, float *m, float *v, int64_t count, float lr,
                            cu_adam_args a) {
    int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= count) return;
    adam_one(p, g, m, v, (size_t)t, lr, &a);
}

void cuda_adam_flat(float *param, const float *grad, float *m, float *v, int64_t count, float lr,
                    const cu_adam_args *a, cudaStream_t s) {
    if (count <= 0) return;
    k_adam_flat<<<CU_GRID(count, 256), 256, 0, s>>>(param, grad, m, v, count, lr, *a);
}
