/* mcmc.cu — MCMC densification on the GPU (refine.strategy = "mcmc", docs/math.md "MCMC"): the
 * regularizer gradients added in every step, the position noise after Adam, a relocation / growth
 * plan decided on the host (train/mcmc.c) applied by one small kernel, and the same decisions made
 * on the device (cuda_mcmc_refine: weights, prefix sums, draws and copies in a few kernels, two
 * scalars read back). Each follows the CPU reference (backend/ref/mcmc.c, train/mcmc.c) operation
 * for operation: the noise uses the PCG32 stream (seed, index) exactly as the host does, and the
 * decisions share backend/mcmc_rule.h with the host, so both draw the same Gaussians. */
#include <math.h>

#include <cub/cub.cuh>

#include "backend/cuda/cuda_internal.h"
#include "backend/cuda/cu_rng.cuh"
#include "backend/cuda/update.cuh"
#include "backend/mcmc_rule.h"

extern "C" {
#include "backend/ref/mcmc.h" /* sp_mcmc_plan_check */
}

__global__ void k_mcmc_reg(cu_params P, cu_params G, int n, float wo, float ws) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    mcmc_reg_one(P.opacity_logits[i], P.log_scales + 3 * (size_t)i, wo, ws, &G.opacity_logits[i],
                 G.log_scales + 3 * (size_t)i);
}

__global__ void k_mcmc_noise(cu_params P, int n, float scale, uint64_t seed) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) mcmc_noise_one(P, i, scale, seed);
}

/* Zeroes Gaussian d's Adam moments (M2 without regions under adam.moments16: m1's words hold both). */
__device__ static void zero_moments(cu_params M1, cu_params M2, int K, size_t d) {
    cu_params M[2] = {M1, M2};
    for (int j = 0; j < (M2.means ? 2 : 1); j++) {
        for (int c = 0; c < 3; c++) M[j].means[3 * d + c] = 0.0f, M[j].log_scales[3 * d + c] = 0.0f;
        for (int c = 0; c < 4; c++) M[j].quats[4 * d + c] = 0.0f;
        M[j].opacity_logits[d] = 0.0f;
        for (int c = 0; c < 3 * K; c++) M[j].sh[3 * (size_t)K * d + c] = 0.0f;
    }
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
    zero_moments(M1, M2, K, d);
}

void cuda_mcmc_reg(const cu_params *P, cu_params *G, int n, float opacity_reg, float scale_reg, cudaStream_t st) {
    if (n <= 0 || (opacity_reg == 0.0f && scale_reg == 0.0f)) return;
    float wo, ws;
    cpu_mcmc_weights(opacity_reg, scale_reg, n, &wo, &ws);
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

/* Grows the stores to nn Gaussians (nn > b->n): new buffers at the grown capacity, the old values
 * copied, moments and gradients of the new ones zero. */
static int mcmc_grow(cu_backend *b, int nn) {
    int n = b->n, K = b->K;
    cudaStream_t st = b->st;
    cu_buf np = {NULL, 0}, ng = {NULL, 0}, nm1 = {NULL, 0}, nm2 = {NULL, 0}, ns = {NULL, 0};
    size_t bytes = (size_t)nn * cu_floats(K) * sizeof(float);
    b->mem.num_gaussians = nn;
    if (cu_alloc(&b->mem, &np, bytes, "Gaussian parameters") || cu_alloc(&b->mem, &ng, bytes, "Gaussian gradients") ||
        cu_alloc(&b->mem, &nm1, bytes, "Adam m") || cu_alloc_m2(b, &nm2, bytes) ||
        cu_alloc(&b->mem, &ns, (size_t)nn * 3 * sizeof(float), "densification statistics")) {
        cu_free(&b->mem, &np), cu_free(&b->mem, &ng), cu_free(&b->mem, &nm1), cu_free(&b->mem, &nm2);
        cu_free(&b->mem, &ns);
        b->mem.num_gaussians = n;
        return -1;
    }
    cudaMemsetAsync(np.p, 0, bytes, st);
    cudaMemsetAsync(nm1.p, 0, bytes, st);
    if (nm2.p) cudaMemsetAsync(nm2.p, 0, bytes, st);
    if (n > 0) {
        copy_grown((float *)np.p, (const float *)b->params.p, n, nn, K, st);
        copy_grown((float *)nm1.p, (const float *)b->m1.p, n, nn, K, st);
        if (nm2.p) copy_grown((float *)nm2.p, (const float *)b->m2.p, n, nn, K, st);
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
    return 0;
}

/* Fresh gradients and statistics, as refine leaves them. */
static void mcmc_fresh(cu_backend *b) {
    cudaMemsetAsync(b->grads.p, 0, (size_t)b->n * cu_floats(b->K) * sizeof(float), b->st);
    cudaMemsetAsync(b->stats.p, 0, (size_t)b->n * 3 * sizeof(float), b->st);
    b->grads_pending = 0;
}

int cuda_mcmc_apply(cu_backend *b, const sp_mcmc_plan *p) {
    int n = b->n, K = b->K, nn = p->n_after;
    cudaStream_t st = b->st;
    if (sp_mcmc_plan_check(p, n)) return -1;
    if (nn > n && mcmc_grow(b, nn)) return -1;
    mcmc_fresh(b);
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

/* ---- the decisions on the device (backend/mcmc_rule.h) ---- */

/* Weights (and, relocating, the dead flags) of the n Gaussians. */
__global__ void k_mcmc_weights(const float *logit, int n, int relocate, float dead_opacity, uint64_t *w, uint8_t *dead) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float l = logit[i];
    int d = relocate && sp_mcmc_dead(l, dead_opacity);
    if (relocate) dead[i] = (uint8_t)d;
    w[i] = d ? 0 : sp_mcmc_weight(l, 0.0f);
}

/* Draw k of stream: its source, counted in times. */
__global__ void k_mcmc_draw(const uint64_t *prefix, int n, const int *count, uint64_t seed, uint64_t stream,
                            int32_t *drawn, int32_t *times) {
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= *count) return;
    uint64_t total = prefix[n - 1];
    int s = sp_mcmc_pick(prefix, n, sp_mcmc_draw_point(seed, stream, (uint64_t)k, total));
    drawn[k] = s;
    atomicAdd(&times[s], 1);
}

/* Copy k: Gaussian dests[k] (or first + k) becomes a copy of its drawn source, with the spread
 * opacity and scales computed from the source's values (read before k_mcmc_sources changes them). */
__global__ void k_mcmc_copies(cu_params P, cu_params M1, cu_params M2, int K, const int *count, const int32_t *dests,
                              int first, const int32_t *drawn, const int32_t *times, float min_opacity) {
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= *count) return;
    size_t d = dests ? (size_t)dests[k] : (size_t)first + (size_t)k, s = (size_t)drawn[k];
    float logit, ls[3];
    sp_mcmc_spread(P.opacity_logits[s], P.log_scales + 3 * s, times[s], min_opacity, &logit, ls);
    for (int c = 0; c < 3; c++) P.means[3 * d + c] = P.means[3 * s + c];
    for (int c = 0; c < 4; c++) P.quats[4 * d + c] = P.quats[4 * s + c];
    for (int c = 0; c < 3 * K; c++) P.sh[3 * (size_t)K * d + c] = P.sh[3 * (size_t)K * s + c];
    P.opacity_logits[d] = logit;
    for (int c = 0; c < 3; c++) P.log_scales[3 * d + c] = ls[c];
    zero_moments(M1, M2, K, d);
}

/* Every drawn source takes the spread opacity and scales itself. */
__global__ void k_mcmc_sources(cu_params P, cu_params M1, cu_params M2, int K, int n, const int32_t *times,
                               float min_opacity) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n || times[i] == 0) return;
    float logit, ls[3];
    sp_mcmc_spread(P.opacity_logits[i], P.log_scales + 3 * (size_t)i, times[i], min_opacity, &logit, ls);
    P.opacity_logits[i] = logit;
    for (int c = 0; c < 3; c++) P.log_scales[3 * (size_t)i + c] = ls[c];
    zero_moments(M1, M2, K, (size_t)i);
}

__global__ void k_mcmc_set_count(int *count, int value) { *count = value; }

__global__ void k_mcmc_iota(int32_t *v, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) v[i] = i;
}

/* Scratch of one phase: weights' prefix sums, dead flags and list, draws, counts. */
typedef struct {
    cu_buf w, prefix, dead, list, drawn, times, temp, scalars;
} mcmc_scratch;

static void scratch_free(cu_backend *b, mcmc_scratch *s) {
    cu_buf *all[] = {&s->w, &s->prefix, &s->dead, &s->list, &s->drawn, &s->times, &s->temp, &s->scalars};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) cu_free(&b->mem, all[i]);
}

/* One phase over the b->n Gaussians: relocate (the dead, onto live ones) or add (`add` new ones
 * after the last). *done receives how many were relocated or added. Reads back two scalars. */
static int mcmc_phase(cu_backend *b, mcmc_scratch *s, int relocate, float dead_opacity, int add, uint64_t seed,
                      int *done) {
    int n = b->n, K = b->K;
    cudaStream_t st = b->st;
    *done = 0;
    if (n <= 0 || (!relocate && add <= 0)) return 0;
    const char *what = "MCMC on the device";
    size_t N = (size_t)n, tb = 0, tb2 = 0;
    uint64_t *w, *prefix;
    int *scalars;
    if (cu_reserve(&b->mem, &s->w, N * 8, what) || cu_reserve(&b->mem, &s->prefix, N * 8, what) ||
        cu_reserve(&b->mem, &s->dead, N, what) || cu_reserve(&b->mem, &s->list, N * 4, what) ||
        cu_reserve(&b->mem, &s->drawn, (size_t)(relocate || add < n ? n : add) * 4, what) || cu_reserve(&b->mem, &s->times, N * 4, what) ||
        cu_reserve(&b->mem, &s->scalars, 64, what))
        return -1;
    w = (uint64_t *)s->w.p, prefix = (uint64_t *)s->prefix.p, scalars = (int *)s->scalars.p;
    cub::DeviceScan::InclusiveSum(NULL, tb, w, prefix, n, st);
    cub::DeviceSelect::Flagged(NULL, tb2, (const int32_t *)s->times.p, (const uint8_t *)s->dead.p,
                               (int32_t *)s->list.p, scalars, n, st);
    if (cu_reserve(&b->mem, &s->temp, tb > tb2 ? tb : tb2, what)) return -1;
    cu_params P = cu_params_at((float *)b->params.p, n, K);
    k_mcmc_weights<<<CU_GRID(n, 256), 256, 0, st>>>(P.opacity_logits, n, relocate, dead_opacity, w,
                                                   (uint8_t *)s->dead.p);
    cub::DeviceScan::InclusiveSum(s->temp.p, tb, w, prefix, n, st);
    if (relocate) { /* the dead, in index order: times holds 0 .. n-1 until the draws count in it */
        k_mcmc_iota<<<CU_GRID(n, 256), 256, 0, st>>>((int32_t *)s->times.p, n);
        cub::DeviceSelect::Flagged(s->temp.p, tb2, (const int32_t *)s->times.p, (const uint8_t *)s->dead.p,
                                   (int32_t *)s->list.p, scalars, n, st);
    }
    else
        k_mcmc_set_count<<<1, 1, 0, st>>>(scalars, add);
    /* the two scalars the host needs: the total weight and the draw count */
    uint64_t *h = (uint64_t *)b->h_acc; /* pinned, four doubles' room */
    cudaMemcpyAsync(h, prefix + (n - 1), 8, cudaMemcpyDeviceToHost, st);
    cudaMemcpyAsync(h + 1, scalars, 4, cudaMemcpyDeviceToHost, st);
    if (cu_check(cudaStreamSynchronize(st), what)) return -1;
    uint64_t total = h[0];
    int count = (int)(uint32_t)h[1];
    /* the host's rules (train/mcmc.c): nothing dead or nothing alive, or no weight at all: no change */
    if (total == 0 || count <= 0 || (relocate && count >= n)) return 0;
    int nn = relocate ? n : n + count;
    if (nn > n) {
        if (mcmc_grow(b, nn)) return -1;
    }
    P = cu_params_at((float *)b->params.p, nn, K);
    cu_params M1 = cu_params_at((float *)b->m1.p, nn, K), M2 = cu_params_at((float *)b->m2.p, nn, K);
    int32_t *times = (int32_t *)s->times.p, *drawn = (int32_t *)s->drawn.p;
    cudaMemsetAsync(times, 0, N * 4, st);
    k_mcmc_draw<<<CU_GRID(count, 256), 256, 0, st>>>(prefix, n, scalars, seed, relocate ? 1 : 2, drawn, times);
    k_mcmc_copies<<<CU_GRID(count, 256), 256, 0, st>>>(P, M1, M2, K, scalars,
                                                        relocate ? (const int32_t *)s->list.p : NULL, n, drawn,
                                                        times, dead_opacity);
    k_mcmc_sources<<<CU_GRID(n, 256), 256, 0, st>>>(P, M1, M2, K, n, times, dead_opacity);
    *done = count;
    return cu_check(cudaGetLastError(), what);
}

int cuda_mcmc_refine(cu_backend *b, float dead_opacity, int add, uint64_t seed, int *relocated, int *added) {
    mcmc_scratch s;
    memset(&s, 0, sizeof s);
    *relocated = *added = 0;
    int rc = mcmc_phase(b, &s, 1, dead_opacity, 0, sp_hash64(seed, 1), relocated);
    if (rc == 0) rc = mcmc_phase(b, &s, 0, dead_opacity, add, sp_hash64(seed, 2), added);
    scratch_free(b, &s);
    if (rc == 0 && (*relocated || *added)) mcmc_fresh(b); /* as mcmc_apply leaves them (none applied: unchanged) */
    return rc;
}
