/* adam.cu — the `adam` stage on the GPU: one fused kernel over every parameter group of the n
 * Gaussians (means, log_scales, quats, opacity, SH DC, SH rest), each with its own learning rate.
 * Parameters, gradients and moments share the packed layout of cu_params_at with cap = n. */
#include "backend/cuda/cuda_internal.h"
#include "backend/cuda/update.cuh"

/* The Gaussian of element t of the packed n-Gaussian layout (per = 3K). */
__device__ __forceinline__ int64_t gaussian_of(int64_t t, int64_t n, uint32_t per) {
    if (t < 3 * n) return t / 3;
    if (t < 6 * n) return (t - 3 * n) / 3;
    if (t < 10 * n) return (t - 6 * n) / 4;
    if (t < 11 * n) return t - 10 * n;
    return (t - 11 * n) / per;
}

/* Sparse: whether element t's Gaussian was in view (its zero gradients then update too). */
__device__ __forceinline__ bool in_view(const cu_adam_args *a, int64_t t, int64_t n, uint32_t per) {
    return a->seen && a->seen[gaussian_of(t, n, per)];
}

__device__ __forceinline__ void adam_one(float *p, const float *g, float *m, float *v, size_t i, float lr,
                                         const cu_adam_args *a, int64_t n, uint32_t per) {
    if (a->sparse && g[i] == 0.0f && !in_view(a, (int64_t)i, n, per)) return;
    if (a->moments16) adam_val_m16(p + i, g[i], (uint32_t *)(m + i), lr, a, (uint64_t)i);
    else adam_val(p + i, g[i], m + i, v + i, lr, a);
}

/* Elements first .. end-1 of the packed n-Gaussian layout (regions of 3n, 3n, 4n, n and 3Kn floats
 * back to back), four consecutive elements per thread through 16-byte loads and stores; each
 * element's learning rate comes from its region, found by comparisons (and one remainder per four
 * SH elements), not per-element division. Elements outside [first, end) at the ends are left
 * alone. The buffers come from cu_alloc (cudaMalloc: 256-byte aligned). Sparse (adam.sparse): the
 * gradients are read first, a group of four zeros of Gaussians out of view touches nothing else,
 * and such a zero in a mixed group keeps its value and moments. adam.moments16: the moments are
 * the packed words in m, element t's random bits drawn for t (v untouched). */
__global__ void k_adam4(float *p, const float *g, float *m, float *v, int64_t n, uint32_t per, int64_t first,
                        int64_t end, cu_adam_args a) {
    int64_t t0 = (first & ~(int64_t)3) + 4 * ((int64_t)blockIdx.x * blockDim.x + threadIdx.x);
    if (t0 >= end) return;
    float lr[4];
    int64_t sh0 = 11 * n;
    uint32_t r = t0 >= sh0 ? (uint32_t)((uint64_t)(t0 - sh0) % per) : 0;
#pragma unroll
    for (int i = 0; i < 4; i++) {
        int64_t t = t0 + i;
        if (t < 3 * n) lr[i] = a.lr[0];
        else if (t < 6 * n) lr[i] = a.lr[1];
        else if (t < 10 * n) lr[i] = a.lr[2];
        else if (t < sh0) lr[i] = a.lr[3];
        else {
            lr[i] = r < 3 ? a.lr[4] : a.lr[5];
            if (++r == per) r = 0;
        }
    }
    if (t0 >= first && t0 + 4 <= end) {
        float4 gi = *(const float4 *)(g + t0);
        bool seen[4] = {false, false, false, false};
        if (a.sparse && a.seen)
#pragma unroll
            for (int i = 0; i < 4; i++) seen[i] = in_view(&a, t0 + i, n, per);
        if (a.sparse && gi.x == 0.0f && gi.y == 0.0f && gi.z == 0.0f && gi.w == 0.0f && !seen[0] && !seen[1] &&
            !seen[2] && !seen[3])
            return;
        float gg[4] = {gi.x, gi.y, gi.z, gi.w};
        float4 pi = *(const float4 *)(p + t0);
        float pp[4] = {pi.x, pi.y, pi.z, pi.w};
        if (a.moments16) {
            uint4 wi = *(const uint4 *)(m + t0);
            uint32_t ww[4] = {wi.x, wi.y, wi.z, wi.w};
#pragma unroll
            for (int i = 0; i < 4; i++)
                if (!a.sparse || gg[i] != 0.0f || seen[i])
                    adam_val_m16(&pp[i], gg[i], &ww[i], lr[i], &a, (uint64_t)(t0 + i));
            *(uint4 *)(m + t0) = make_uint4(ww[0], ww[1], ww[2], ww[3]);
            *(float4 *)(p + t0) = make_float4(pp[0], pp[1], pp[2], pp[3]);
            return;
        }
        float4 mi = *(const float4 *)(m + t0), vi = *(const float4 *)(v + t0);
        float mm[4] = {mi.x, mi.y, mi.z, mi.w}, vv[4] = {vi.x, vi.y, vi.z, vi.w};
#pragma unroll
        for (int i = 0; i < 4; i++)
            if (!a.sparse || gg[i] != 0.0f || seen[i]) adam_val(&pp[i], gg[i], &mm[i], &vv[i], lr[i], &a);
        *(float4 *)(m + t0) = make_float4(mm[0], mm[1], mm[2], mm[3]);
        *(float4 *)(v + t0) = make_float4(vv[0], vv[1], vv[2], vv[3]);
        *(float4 *)(p + t0) = make_float4(pp[0], pp[1], pp[2], pp[3]);
    } else {
        for (int i = 0; i < 4; i++)
            if (t0 + i >= first && t0 + i < end) adam_one(p, g, m, v, (size_t)(t0 + i), lr[i], &a, n, per);
    }
}

void cuda_adam_range(float *param, const float *grad, float *m, float *v, int n, int K, int64_t first, int64_t end,
                     const cu_adam_args *a, cudaStream_t s) {
    int64_t total = (int64_t)n * (11 + 3 * (int64_t)K);
    if (end > total) end = total;
    if (first < 0) first = 0;
    if (end <= first) return;
    int64_t quads = (end - (first & ~(int64_t)3) + 3) / 4;
    k_adam4<<<CU_GRID(quads, 256), 256, 0, s>>>(param, grad, m, v, n, (uint32_t)(3 * K), first, end, *a);
}

/* One learning rate over a flat array: k_adam4 with every region's rate the same (its whole region
 * means, count values), so the parity harness's adam check runs the training kernel's path, ragged
 * end included. */
void cuda_adam_flat(float *param, const float *grad, float *m, float *v, int64_t count, float lr,
                    const cu_adam_args *a, cudaStream_t s) {
    if (count <= 0) return;
    cu_adam_args one = *a;
    for (int k = 0; k < 6; k++) one.lr[k] = lr;
    one.seen = NULL;
    k_adam4<<<CU_GRID((count + 3) / 4, 256), 256, 0, s>>>(param, grad, m, v, count, 3, 0, count, one);
}

/* adam.moments16: the float moments m[i], v[i] of count values packed into m[i] (rounded to
 * nearest, sp_m16_pack_nearest), v[i] zeroed. */
__global__ void k_m16_pack(float *m, float *v, int64_t count) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= count) return;
    m[i] = __uint_as_float(sp_m16_pack_nearest(m[i], v[i]));
    v[i] = 0.0f;
}

void cuda_m16_pack(float *m, float *v, int64_t count, cudaStream_t s) {
    if (count > 0) k_m16_pack<<<CU_GRID(count, 256), 256, 0, s>>>(m, v, count);
}
