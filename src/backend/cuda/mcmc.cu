/* mcmc.cu — MCMC densification on the GPU (refine.strategy = "mcmc", docs/math.md "MCMC"): the
 * regularizer gradients added in every step, the position noise after Adam, and a relocation /
 * growth plan decided on the host (train/mcmc.c) applied by one small kernel. Each follows the CPU
 * reference (backend/cpu/mcmc.c) operation for operation; the noise uses the PCG32 stream
 * (seed, index) exactly as the host does, so both backends draw the same noise. */
#include <math.h>

#include "backend/cuda/cuda_internal.h"
#include "backend/cuda/cu_rng.cuh"

extern "C" {
#include "backend/cpu/mcmc.h" /* sp_mcmc_plan_check */
}

/* the noise gate of backend/cpu/mcmc.h */
#define MCMC_GATE_K 100.0f
#define MCMC_GATE_X0 0.995f

__global__ void k_mcmc_reg(cu_params P, cu_params G, int n, float wo, float ws) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    /* sigma (1 - sigma) as e / (1 + e)^2, e = exp(-|logit|): no cancellation in 1 - sigma (cpu/mcmc.c) */
    float e = cr_expf(-fabsf(P.opacity_logits[i])), d = __fadd_rn(1.0f, e);
    G.opacity_logits[i] = __fadd_rn(G.opacity_logits[i], __fmul_rn(wo, __fdiv_rn(e, __fmul_rn(d, d))));
    for (int k = 0; k < 3; k++)
        G.log_scales[3 * (size_t)i + k] =
            __fadd_rn(G.log_scales[3 * (size_t)i + k], __fmul_rn(ws, cr_expf(P.log_scales[3 * (size_t)i + k])));
}

__global__ void k_mcmc_noise(cu_params P, int n, float scale, uint64_t seed) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float o = 1.0f / (1.0f + cr_expf(-P.opacity_logits[i]));
    float gate = 1.0f / (1.0f + cr_expf(-MCMC_GATE_K * ((1.0f - o) - MCMC_GATE_X0)));
    float f = scale * gate;
    if (f == 0.0f) return;
    const float *q = P.quats + 4 * (size_t)i, *ls = P.log_scales + 3 * (size_t)i;
    float qn = sqrtf(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
    float w = q[0] / qn, x = q[1] / qn, y = q[2] / qn, z = q[3] / qn;
    float R[9] = {1.0f - 2.0f * (y * y + z * z), 2.0f * (x * y - w * z), 2.0f * (x * z + w * y),
                  2.0f * (x * y + w * z),        1.0f - 2.0f * (x * x + z * z), 2.0f * (y * z - w * x),
                  2.0f * (x * z - w * y),        2.0f * (y * z + w * x), 1.0f - 2.0f * (x * x + y * y)};
    cu_rng r;
    rng_seed(&r, seed, (uint64_t)i);
    float e[3], t[3];
    for (int k = 0; k < 3; k++) e[k] = rng_normal(&r);
    for (int k = 0; k < 3; k++) {
        float s = cr_expf(ls[k]);
        t[k] = s * s * (R[k] * e[0] + R[3 + k] * e[1] + R[6 + k] * e[2]);
    }
    for (int k = 0; k < 3; k++)
        P.means[3 * (size_t)i + k] += f * (R[3 * k] * t[0] + R[3 * k + 1] * t[1] + R[3 * k + 2] * t[2]);
}

/* The plan of backend.h: entries are independent, one thread each. */
__global__ void k_mcmc_apply(cu_params P, cu_params M1, cu_params M2, int K, int count, const int32_t *dst,
                             const int32_t *src, const float *logit, const float *ls) {
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= count) return;
    size_t d = (size_t)dst[k], s = (size_t)src[k];
    if (d != s) {
        for (int c = 0; c < 3; c++) P.means[3 * d + c] = P.means[3 * s + c];
        for (int c = 0; c < 4; c++) P.quats[4 * d + c] = P.quats[4 * s + c];
        for (int c = 0; c < 3 * K; c++) P.sh[3 * (size_t)K * d + c] = P.sh[3 * (size_t)K * s + c];
    }
    P.opacity_logits[d] = logit[k];
    for (int c = 0; c < 3; c++) P.log_scales[3 * d + c] = ls[3 * (size_t)k + c];
    cu_params M[2] = {M1, M2};
    for (int j = 0; j < 2; j++) {
        for (int c = 0; c < 3; c++) M[j].means[3 * d + c] = 0.0f, M[j].log_scales[3 * d + c] = 0.0f;
        for (int c = 0; c < 4; c++) M[j].quats[4 * d + c] = 0.0f;
        M[j].opacity_logits[d] = 0.0f;
        for (int c = 0; c < 3 * K; c++) M[j].sh[3 * (size_t)K * d + c] = 0.0f;
    }
}

void cuda_mcmc_reg(const cu_params *P, cu_params *G, int n, float opacity_reg, float scale_reg, cudaStream_t st) {
    if (n <= 0 || (opacity_reg == 0.0f && scale_reg == 0.0f)) return;
    float wo = opacity_reg / (float)n, ws = scale_reg / (float)(3 * (int64_t)n);
    k_mcmc_reg<<<CU_GRID(n, 256), 256, 0, st>>>(*P, *G, n, wo, ws);
}

void cuda_mcmc_noise(cu_params *P, int n, float noise_scale, uint64_t seed, cudaStream_t st) {
    if (n <= 0 || noise_scale == 0.0f) return;
    k_mcmc_noise<<<CU_GRID(n, 256), 256, 0, st>>>(*P, n, noise_scale, seed);
}

/* Copies the n-Gaussian regions of src (capacity n) into dst (capacity nn >= n). */
static void copy_grown(float *dst, const float *src, int n, int nn, int K, cudaStream_t st) {
    cu_params d = cu_params_at(dst, nn, K), s = cu_params_at((float *)src, n, K);
    size_t N = (size_t)n;
    cudaMemcpyAsync(d.means, s.means, N * 12, cudaMemcpyDeviceToDevice, st);
    cudaMemcpyAsync(d.log_scales, s.log_scales, N * 12, cudaMemcpyDeviceToDevice, st);
    cudaMemcpyAsync(d.quats, s.quats, N * 16, cudaMemcpyDeviceToDevice, st);
    cudaMemcpyAsync(d.opacity_logits, s.opacity_logits, N * 4, cudaMemcpyDeviceToDevice, st);
    cudaMemcpyAsync(d.sh, s.sh, N * 12 * (size_t)K, cudaMemcpyDeviceToDevice, st);
}

int cuda_mcmc_read(cu_backend *b, float *opacity_logits, float *log_scales) {
    if (b->n == 0) return 0;
    cu_params P = cu_params_at((float *)b->params.p, b->n, b->K);
    cudaMemcpyAsync(opacity_logits, P.opacity_logits, (size_t)b->n * 4, cudaMemcpyDeviceToHost, b->st);
    cudaMemcpyAsync(log_scales, P.log_scales, (size_t)b->n * 12, cudaMemcpyDeviceToHost, b->st);
    return cu_check(cudaStreamSynchronize(b->st), "mcmc_read");
}

int cuda_mcmc_apply(cu_backend *b, const sp_mcmc_plan *p) {
    int n = b->n, K = b->K, nn = p->n_after;
    cudaStream_t st = b->st;
    if (sp_mcmc_plan_check(p, n)) return -1;
    if (nn > n) { /* new buffers at the grown capacity; moments and gradients of the new ones zero */
        cu_buf np = {NULL, 0}, ng = {NULL, 0}, nm1 = {NULL, 0}, nm2 = {NULL, 0}, ns = {NULL, 0};
        size_t bytes = (size_t)nn * cu_floats(K) * sizeof(float);
        b->mem.num_gaussians = nn;
        if (cu_alloc(&b->mem, &np, bytes, "Gaussian parameters") || cu_alloc(&b->mem, &ng, bytes, "Gaussian gradients") ||
            cu_alloc(&b->mem, &nm1, bytes, "Adam m") || cu_alloc(&b->mem, &nm2, bytes, "Adam v") ||
            cu_alloc(&b->mem, &ns, (size_t)nn * 3 * sizeof(float), "densification statistics")) {
            cu_free(&b->mem, &np), cu_free(&b->mem, &ng), cu_free(&b->mem, &nm1), cu_free(&b->mem, &nm2);
            cu_free(&b->mem, &ns);
            b->mem.num_gaussians = n;
            return -1;
        }
        cudaMemsetAsync(np.p, 0, bytes, st);
        cudaMemsetAsync(nm1.p, 0, bytes, st);
        cudaMemsetAsync(nm2.p, 0, bytes, st);
        if (n > 0) {
            copy_grown((float *)np.p, (const float *)b->params.p, n, nn, K, st);
            copy_grown((float *)nm1.p, (const float *)b->m1.p, n, nn, K, st);
            copy_grown((float *)nm2.p, (const float *)b->m2.p, n, nn, K, st);
        }
        if (cu_check(cudaStreamSynchronize(st), "mcmc grow")) {
            cu_free(&b->mem, &np), cu_free(&b->mem, &ng), cu_free(&b->mem, &nm1), cu_free(&b->mem, &nm2);
            cu_free(&b->mem, &ns);
            b->mem.num_gaussians = n;
            return -1;
        }
        cu_free(&b->mem, &b->params), cu_free(&b->mem, &b->grads), cu_free(&b->mem, &b->m1);
        cu_free(&b->mem, &b->m2), cu_free(&b->mem, &b->stats);
        b->params = np, b->grads = ng, b->m1 = nm1, b->m2 = nm2, b->stats = ns;
        b->n = nn;
    }
    /* fresh gradients and statistics, as refine leaves them */
    cudaMemsetAsync(b->grads.p, 0, (size_t)nn * cu_floats(K) * sizeof(float), st);
    cudaMemsetAsync(b->stats.p, 0, (size_t)nn * 3 * sizeof(float), st);
    b->grads_pending = 0;
    if (p->count > 0) {
        cu_buf tmp = {NULL, 0};
        size_t c = (size_t)p->count;
        if (cu_alloc(&b->mem, &tmp, c * 6 * 4, "the MCMC plan")) return -1;
        int32_t *d_dst = (int32_t *)tmp.p, *d_src = d_dst + c;
        float *d_logit = (float *)(d_src + c), *d_ls = d_logit + c;
        cudaMemcpyAsync(d_dst, p->dst, c * 4, cudaMemcpyHostToDevice, st);
        cudaMemcpyAsync(d_src, p->src, c * 4, cudaMemcpyHostToDevice, st);
        cudaMemcpyAsync(d_logit, p->opacity_logit, c * 4, cudaMemcpyHostToDevice, st);
        cudaMemcpyAsync(d_ls, p->log_scales, c * 12, cudaMemcpyHostToDevice, st);
        cu_params P = cu_params_at((float *)b->params.p, nn, K);
        cu_params M1 = cu_params_at((float *)b->m1.p, nn, K), M2 = cu_params_at((float *)b->m2.p, nn, K);
        k_mcmc_apply<<<CU_GRID(c, 256), 256, 0, st>>>(P, M1, M2, K, p->count, d_dst, d_src, d_logit, d_ls);
        int rc = cu_check(cudaStreamSynchronize(st), "mcmc_apply"); /* the host arrays and tmp are free after */
        cu_free(&b->mem, &tmp);
        if (rc) return -1;
    }
    return cu_check(cudaGetLastError(), "mcmc_apply");
}
