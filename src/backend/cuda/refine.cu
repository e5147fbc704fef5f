/* refine.cu — the `refine` stage on the GPU (docs/math.md): densification statistics -> clone /
 * split candidates, the capacity cap (candidates taken in decreasing mean gradient, ties by index),
 * opacity decay/reset, pruning, and the new store built by stream compaction:
 * survivors in original order, then clones, then split children. The decisions follow the CPU
 * reference (backend/ref/refine.c) step for step: the cap is always applied and a candidate that
 * does not fit is skipped; opacity goes through sigma clamped to [1e-6, 1 - 1e-6]. Split offsets use the PCG32
 * stream (seed, original index) exactly as sp_rng_seed/sp_rng_normal do on the host, so the noise
 * does not depend on thread scheduling. Counts are read back once (refine is rare). */
#include <math.h>

#include <cub/cub.cuh>

#include "backend/cuda/cuda_internal.h"
#include "backend/cuda/cu_rng.cuh"

/* Per-Gaussian decision record. */
enum { RF_CLONE = 1, RF_SPLIT = 2, RF_PRUNE = 4, RF_PRUNE_CHILD = 8, RF_ACCEPT = 16, RF_PRUNE_CLONE = 32 };

__global__ void k_refine_classify(cu_params P, const float *stats, int n, sp_refine_args a, const uint8_t *drop,
                                  uint32_t *flags, float *new_logit, float *key, uint32_t *cost) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float gsum = stats[i], gcnt = stats[n + i];
    float gbar = gsum / fmaxf(gcnt, 1.0f);
    const float *ls = P.log_scales + 3 * (size_t)i;
    float maxs = fmaxf(cr_expf(ls[0]), fmaxf(cr_expf(ls[1]), cr_expf(ls[2])));
    uint32_t f = 0;
    if (a.densify && gbar >= a.grad_threshold) f = maxs <= a.clone_max_scale ? RF_CLONE : RF_SPLIT;
    /* opacity decay / reset, exactly as the CPU reference: through sigma, clamped away from 0 and 1 */
    float logit = P.opacity_logits[i];
    if (a.opacity_decay > 0.0f || a.opacity_reset > 0.0f) {
        float o = 1.0f / (1.0f + cr_expf(-logit));
        if (a.opacity_decay > 0.0f) o *= 1.0f - a.opacity_decay;
        if (a.opacity_reset > 0.0f && o > a.opacity_reset) o = a.opacity_reset;
        o = fminf(fmaxf(o, 1e-6f), 1.0f - 1e-6f);
        logit = cr_logf(o / (1.0f - o));
    }
    new_logit[i] = logit;
    float sigma = 1.0f / (1.0f + cr_expf(-logit));
    /* the original and its clone share the rule; split children have their own (shrunk) scales */
    int low = sigma < a.prune_opacity;
    if (low || (a.prune_world_scale > 0.0f && maxs > a.prune_world_scale)) f |= RF_PRUNE_CLONE;
    if (f & RF_PRUNE_CLONE) f |= RF_PRUNE;
    if (drop && drop[i]) f |= RF_PRUNE; /* densify is off with drop (backend.h) */
    float shrink = cr_logf(a.split_shrink);
    float cmax = fmaxf(cr_expf(ls[0] - shrink), fmaxf(cr_expf(ls[1] - shrink), cr_expf(ls[2] - shrink)));
    if (low || (a.prune_world_scale > 0.0f && cmax > a.prune_world_scale)) f |= RF_PRUNE_CHILD;
    flags[i] = f;
    key[i] = (f & (RF_CLONE | RF_SPLIT)) ? gbar : -INFINITY;
    cost[i] = (f & RF_CLONE) ? 1u : ((f & RF_SPLIT) ? (uint32_t)(a.split_count - 1) : 0u);
}

__global__ void k_iota(uint32_t *v, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) v[i] = (uint32_t)i;
}

/* Capacity cap: sorted candidate j is accepted while the running cost stays within budget. */
__global__ void k_sorted_cost(const uint32_t *order, const uint32_t *flags, const uint32_t *cost, int n,
                              uint32_t *cost_sorted) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= n) return;
    uint32_t i = order[j];
    cost_sorted[j] = (flags[i] & (RF_CLONE | RF_SPLIT)) ? cost[i] : 0u;
}

__global__ void k_accept(const uint32_t *order, const uint32_t *prefix, int n, int64_t budget, uint32_t *flags) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= n) return;
    uint32_t i = order[j];
    if ((flags[i] & (RF_CLONE | RF_SPLIT)) && (int64_t)prefix[j] <= budget) flags[i] |= RF_ACCEPT;
}

/* Candidate costs differ (split_count != 2): the reference's greedy pass, which skips a candidate
 * that does not fit and goes on, run by one thread over the sorted candidates. */
__global__ void k_accept_greedy(const uint32_t *order, const uint32_t *cost, int n, int64_t count, int64_t capacity,
                                uint32_t *flags) {
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    for (int j = 0; j < n; j++) {
        uint32_t i = order[j];
        if (!(flags[i] & (RF_CLONE | RF_SPLIT))) break; /* non-candidates sort last */
        if (count + (int64_t)cost[i] > capacity) continue;
        count += cost[i];
        flags[i] |= RF_ACCEPT;
    }
}

__global__ void k_accept_all(int n, uint32_t *flags) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && (flags[i] & (RF_CLONE | RF_SPLIT))) flags[i] |= RF_ACCEPT;
}

/* counts[c][i]: 0 kept original, 1 kept clone, 2 kept split children, 3 accepted clone, 4 accepted split */
__global__ void k_refine_counts(const uint32_t *flags, int n, int split_count, uint32_t *counts) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    uint32_t f = flags[i];
    int acc = (f & RF_ACCEPT) != 0;
    int clone = acc && (f & RF_CLONE), split = acc && (f & RF_SPLIT);
    size_t N = (size_t)n;
    counts[i] = !split && !(f & RF_PRUNE);
    counts[N + i] = clone && !(f & RF_PRUNE_CLONE);
    counts[2 * N + i] = (split && !(f & RF_PRUNE_CHILD)) ? (uint32_t)split_count : 0u;
    counts[3 * N + i] = clone;
    counts[4 * N + i] = split;
}

/* copy_gaussian and zero_gaussian leave a store without regions (M2 under adam.moments16) alone. */
__device__ static void copy_gaussian(cu_params s, int si, cu_params d, int di, int K, float logit) {
    if (!d.means) return;
    for (int k = 0; k < 3; k++) d.means[3 * (size_t)di + k] = s.means[3 * (size_t)si + k];
    for (int k = 0; k < 3; k++) d.log_scales[3 * (size_t)di + k] = s.log_scales[3 * (size_t)si + k];
    for (int k = 0; k < 4; k++) d.quats[4 * (size_t)di + k] = s.quats[4 * (size_t)si + k];
    d.opacity_logits[di] = logit;
    for (int k = 0; k < 3 * K; k++) d.sh[3 * (size_t)K * di + k] = s.sh[3 * (size_t)K * si + k];
}

__device__ static void zero_gaussian(cu_params d, int di, int K) {
    if (!d.means) return;
    for (int k = 0; k < 3; k++) d.means[3 * (size_t)di + k] = 0.0f, d.log_scales[3 * (size_t)di + k] = 0.0f;
    for (int k = 0; k < 4; k++) d.quats[4 * (size_t)di + k] = 0.0f;
    d.opacity_logits[di] = 0.0f;
    for (int k = 0; k < 3 * K; k++) d.sh[3 * (size_t)K * di + k] = 0.0f;
}

__global__ void k_refine_gather(cu_params P, cu_params M1, cu_params M2, int n, int K, const uint32_t *flags,
                                const float *new_logit, const uint32_t *incl, uint32_t tot0, uint32_t tot1,
                                sp_refine_args a, cu_params NP, cu_params NM1, cu_params NM2) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    size_t N = (size_t)n;
    uint32_t c0 = incl[i] - (i ? incl[i - 1] : 0);
    uint32_t c1 = incl[N + i] - (i ? incl[N + i - 1] : 0);
    uint32_t c2 = incl[2 * N + i] - (i ? incl[2 * N + i - 1] : 0);
    float logit = new_logit[i];
    if (c0) {
        int d = (int)(incl[i] - 1);
        copy_gaussian(P, i, NP, d, K, logit);
        /* an opacity reset also restarts the opacity's Adam moments (as 3DGS does) */
        copy_gaussian(M1, i, NM1, d, K, a.opacity_reset > 0.0f ? 0.0f : M1.opacity_logits[i]);
        if (M2.means) copy_gaussian(M2, i, NM2, d, K, a.opacity_reset > 0.0f ? 0.0f : M2.opacity_logits[i]);
    }
    if (c1) {
        int d = (int)(tot0 + incl[N + i] - 1);
        copy_gaussian(P, i, NP, d, K, logit);
        zero_gaussian(NM1, d, K);
        zero_gaussian(NM2, d, K);
    }
    if (c2) {
        int d0 = (int)(tot0 + tot1 + incl[2 * N + i] - c2);
        const float *q = P.quats + 4 * (size_t)i, *ls = P.log_scales + 3 * (size_t)i, *m = P.means + 3 * (size_t)i;
        float qlen = sqrtf(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
        float w = q[0] / qlen, x = q[1] / qlen, y = q[2] / qlen, z = q[3] / qlen;
        float R[9] = {1.0f - 2.0f * (y * y + z * z), 2.0f * (x * y - w * z), 2.0f * (x * z + w * y),
                      2.0f * (x * y + w * z),        1.0f - 2.0f * (x * x + z * z), 2.0f * (y * z - w * x),
                      2.0f * (x * z - w * y),        2.0f * (y * z + w * x), 1.0f - 2.0f * (x * x + y * y)};
        float s[3] = {cr_expf(ls[0]), cr_expf(ls[1]), cr_expf(ls[2])};
        float shrink = cr_logf(a.split_shrink);
        cu_rng r;
        rng_seed(&r, a.seed, (uint64_t)i);
        for (uint32_t c = 0; c < c2; c++) {
            int d = d0 + (int)c;
            float e[3];
            for (int k = 0; k < 3; k++) e[k] = s[k] * rng_normal(&r);
            copy_gaussian(P, i, NP, d, K, logit);
            for (int k = 0; k < 3; k++) {
                /* rounded step by step (no fused multiply-add), in the CPU reference's order */
                float off = __fadd_rn(__fadd_rn(__fmul_rn(R[3 * k], e[0]), __fmul_rn(R[3 * k + 1], e[1])),
                                      __fmul_rn(R[3 * k + 2], e[2]));
                NP.means[3 * (size_t)d + k] = __fadd_rn(m[k], off);
                NP.log_scales[3 * (size_t)d + k] = ls[k] - shrink;
            }
            zero_gaussian(NM1, d, K);
            zero_gaussian(NM2, d, K);
        }
    }
}

int cuda_refine(cu_backend *b, const sp_refine_args *a, sp_refine_result *res) {
    int n = b->n, K = b->K;
    sp_refine_result r = {0, 0, 0, n, n};
    if (a->densify && a->drop) return sp_error("cuda: refine: drop flags come without densification");
    if (a->densify && (a->split_count < 1 || !(a->split_shrink > 0.0f)))
        return sp_error("cuda: refine: split_count %d and split_shrink %g must be positive", a->split_count,
                        (double)a->split_shrink);
    if (n == 0) {
        if (res) *res = r;
        return 0;
    }
    cudaStream_t st = b->st;
    size_t N = (size_t)n;
    cu_buf tmp = {NULL, 0}, sort_tmp = {NULL, 0}, dropbuf = {NULL, 0};
    cu_buf nparams = {NULL, 0}, ngrads = {NULL, 0}, nm1 = {NULL, 0}, nm2 = {NULL, 0}, nstats = {NULL, 0};
    int rc = -1;
    /* tmp: flags, cost, order_in, order, cost_sorted, prefix (u32 each), counts 5, incl 5, new_logit, key, key_sorted */
    if (cu_alloc(&b->mem, &tmp, N * 19 * 4, "refine scratch")) return -1;
    uint32_t *flags = (uint32_t *)tmp.p, *cost = flags + N, *order_in = cost + N, *order = order_in + N;
    uint32_t *cost_sorted = order + N, *prefix = cost_sorted + N, *counts = prefix + N, *incl = counts + 5 * N;
    float *new_logit = (float *)(incl + 5 * N), *key = new_logit + N, *key_sorted = key + N;
    cu_params P = cu_params_at((float *)b->params.p, n, K);
    cu_params M1 = cu_params_at((float *)b->m1.p, n, K), M2 = cu_params_at((float *)b->m2.p, n, K);
    unsigned grid = CU_GRID(n, 256);
    uint8_t *drop = NULL;
    if (a->drop) {
        if (cu_alloc(&b->mem, &dropbuf, N, "refine drop flags")) {
            cu_free(&b->mem, &tmp);
            return -1;
        }
        drop = (uint8_t *)dropbuf.p;
        cudaMemcpyAsync(drop, a->drop, N, cudaMemcpyHostToDevice, st);
    }
    k_refine_classify<<<grid, 256, 0, st>>>(P, (const float *)b->stats.p, n, *a, drop, flags, new_logit, key, cost);

    /* total cost of all candidates */
    size_t tb = 0, tb2 = 0;
    cub::DeviceScan::InclusiveSum(NULL, tb, cost, prefix, n, st);
    cub::DeviceRadixSort::SortPairsDescending(NULL, tb2, (const float *)key, key_sorted, (const uint32_t *)order_in,
                                              order, n, 0, 32, st);
    if (tb2 > tb) tb = tb2;
    if (cu_alloc(&b->mem, &sort_tmp, tb, "refine scratch")) goto done;
    cub::DeviceScan::InclusiveSum(sort_tmp.p, tb, cost, prefix, n, st);
    cudaMemcpyAsync(b->h_u32, prefix + (n - 1), 4, cudaMemcpyDeviceToHost, st);
    if (cu_check(cudaStreamSynchronize(st), "refine")) goto done;
    {
        int64_t added = b->h_u32[0];
        int64_t budget = (int64_t)a->capacity - n; /* may be negative: nothing with a cost fits */
        if (added > budget) {
            /* candidates in decreasing mean gradient, ties by index (stable sort of ascending indices) */
            k_iota<<<grid, 256, 0, st>>>(order_in, n);
            size_t t3 = tb;
            cub::DeviceRadixSort::SortPairsDescending(sort_tmp.p, t3, (const float *)key, key_sorted,
                                                      (const uint32_t *)order_in, order, n, 0, 32, st);
            if (a->split_count == 2) { /* every candidate costs 1: the greedy pass is a prefix */
                k_sorted_cost<<<grid, 256, 0, st>>>(order, flags, cost, n, cost_sorted);
                cub::DeviceScan::InclusiveSum(sort_tmp.p, tb, cost_sorted, prefix, n, st);
                k_accept<<<grid, 256, 0, st>>>(order, prefix, n, budget, flags);
            } else {
                k_accept_greedy<<<1, 1, 0, st>>>(order, cost, n, n, a->capacity, flags);
            }
        } else {
            k_accept_all<<<grid, 256, 0, st>>>(n, flags);
        }
    }
    k_refine_counts<<<grid, 256, 0, st>>>(flags, n, a->split_count, counts);
    for (int c = 0; c < 5; c++) cub::DeviceScan::InclusiveSum(sort_tmp.p, tb, counts + c * N, incl + c * N, n, st);
    {
        uint32_t tot[5];
        if (cu_check(cudaStreamSynchronize(st), "refine")) goto done;
        for (int c = 0; c < 5; c++)
            if (cu_check(cudaMemcpy(&tot[c], incl + c * N + (n - 1), 4, cudaMemcpyDeviceToHost), "refine")) goto done;
        r.cloned = (int)tot[3];
        r.split = (int)tot[4];
        int64_t nn = (int64_t)tot[0] + tot[1] + tot[2];
        if (nn > 0x7fffffff) {
            sp_error("cuda: refine: %lld Gaussians exceed the supported count", (long long)nn);
            goto done;
        }
        int nnew = (int)nn;
        size_t bytes = (size_t)nnew * cu_floats(K) * sizeof(float);
        b->mem.num_gaussians = nnew;
        if (cu_alloc(&b->mem, &nparams, bytes, "Gaussian parameters") ||
            cu_alloc(&b->mem, &ngrads, bytes, "Gaussian gradients") || cu_alloc(&b->mem, &nm1, bytes, "Adam m") ||
            cu_alloc_m2(b, &nm2, bytes) ||
            cu_alloc(&b->mem, &nstats, (size_t)nnew * 3 * sizeof(float), "densification statistics")) {
            b->mem.num_gaussians = n;
            goto done;
        }
        cu_params NP = cu_params_at((float *)nparams.p, nnew, K);
        cu_params NM1 = cu_params_at((float *)nm1.p, nnew, K), NM2 = cu_params_at((float *)nm2.p, nnew, K);
        k_refine_gather<<<grid, 256, 0, st>>>(P, M1, M2, n, K, flags, new_logit, incl, tot[0], tot[1], *a, NP, NM1,
                                              NM2);
        cudaMemsetAsync(ngrads.p, 0, bytes, st);
        cudaMemsetAsync(nstats.p, 0, (size_t)nnew * 3 * sizeof(float), st);
        if (cu_check(cudaStreamSynchronize(st), "refine")) goto done;
        cu_free(&b->mem, &b->params);
        cu_free(&b->mem, &b->grads);
        cu_free(&b->mem, &b->m1);
        cu_free(&b->mem, &b->m2);
        cu_free(&b->mem, &b->stats);
        b->params = nparams, b->grads = ngrads, b->m1 = nm1, b->m2 = nm2, b->stats = nstats;
        nparams.p = ngrads.p = nm1.p = nm2.p = nstats.p = NULL;
        b->n = nnew;
        r.n_after = nnew;
        r.pruned = (int)((int64_t)n + r.cloned + (int64_t)r.split * (a->split_count - 1) - nnew);
        rc = 0;
    }
done:
    cu_free(&b->mem, &nparams);
    cu_free(&b->mem, &ngrads);
    cu_free(&b->mem, &nm1);
    cu_free(&b->mem, &nm2);
    cu_free(&b->mem, &nstats);
    cu_free(&b->mem, &sort_tmp);
    cu_free(&b->mem, &tmp);
    cu_free(&b->mem, &dropbuf);
    if (rc == 0 && res) *res = r;
    return rc;
}
