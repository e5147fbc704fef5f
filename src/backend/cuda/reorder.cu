/* reorder.cu — backend.h's reorder on the device: the box of the means (each axis's least and
 * greatest finite value through integer atomics on the floats' ordered bits: exact in any order),
 * every Gaussian's Morton code (backend/morton_rule.h, the host's arithmetic), a stable radix sort
 * of (code, index) pairs, and the three stores (parameters, both Adam moments) gathered into that
 * order, region by region, through the gradient buffer: the reorder drops a pending batch's
 * gradients (as refine does), so that buffer is free, and after each gather the two swap. Only the
 * codes and the sort's scratch are allocated (about 16 bytes a Gaussian). */
#include <cub/cub.cuh>

#include "backend/cuda/cuda_internal.h"
#include "backend/morton_rule.h"

/* A float's bits as an unsigned integer of the same order (-inf < ... < -0 < +0 < ... < +inf); no
 * finite value maps to 0 or 0xffffffff, the box's starting values. */
__device__ static inline uint32_t ordered_bits(float x) {
    uint32_t u = __float_as_uint(x);
    return u & 0x80000000u ? ~u : u | 0x80000000u;
}
__device__ static inline float from_ordered(uint32_t u) {
    return __uint_as_float(u & 0x80000000u ? u & 0x7fffffffu : ~u);
}

#define RO_BLOCK 256

/* box[0..2]: each axis's least finite mean (ordered bits), box[3..5] the greatest. */
__global__ void k_reorder_box(const float *means, int n, uint32_t *box) {
    __shared__ uint32_t s[6];
    if (threadIdx.x < 6) s[threadIdx.x] = threadIdx.x < 3 ? 0xffffffffu : 0u;
    __syncthreads();
    uint32_t lo[3] = {0xffffffffu, 0xffffffffu, 0xffffffffu}, hi[3] = {0u, 0u, 0u};
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        for (int k = 0; k < 3; k++) {
            float x = means[3 * (size_t)i + k];
            if (!isfinite(x)) continue;
            uint32_t u = ordered_bits(x);
            lo[k] = min(lo[k], u), hi[k] = max(hi[k], u);
        }
    for (int k = 0; k < 3; k++) {
        for (int o = 16; o > 0; o >>= 1) {
            lo[k] = min(lo[k], __shfl_xor_sync(0xffffffffu, lo[k], o));
            hi[k] = max(hi[k], __shfl_xor_sync(0xffffffffu, hi[k], o));
        }
        if ((threadIdx.x & 31) == 0) atomicMin(&s[k], lo[k]), atomicMax(&s[3 + k], hi[k]);
    }
    __syncthreads();
    if (threadIdx.x < 3) atomicMin(&box[threadIdx.x], s[threadIdx.x]);
    else if (threadIdx.x < 6) atomicMax(&box[threadIdx.x], s[threadIdx.x]);
}

__global__ void k_reorder_codes(const float *means, int n, const uint32_t *box, uint32_t *code, uint32_t *idx) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float lo[3];
    int e[3];
    for (int k = 0; k < 3; k++) {
        int any = box[k] != 0xffffffffu; /* an axis with no finite value: lo 0, every value in cell 0 */
        float a = any ? from_ordered(box[k]) : 0.0f, b = any ? from_ordered(box[3 + k]) : 0.0f;
        lo[k] = a;
        e[k] = sp_morton_exponent(a, b);
    }
    code[i] = sp_morton_code(means + 3 * (size_t)i, lo, e);
    idx[i] = (uint32_t)i;
}

/* One region of w floats a Gaussian: out's Gaussian i takes in's Gaussian order[i]. */
__global__ void k_reorder_gather(const float *in, float *out, int n, int w, const uint32_t *order) {
    int64_t x = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (x >= (int64_t)n * w) return;
    int64_t i = x / w, k = x - i * w;
    out[x] = in[(int64_t)order[i] * w + k];
}

/* The whole store `from` gathered into `to` (both packed at capacity n). */
static void gather_store(const float *from, float *to, int n, int K, const uint32_t *order, cudaStream_t st) {
    cu_params a = cu_params_at((float *)from, n, K), b = cu_params_at(to, n, K);
    const float *src[5] = {a.means, a.log_scales, a.quats, a.opacity_logits, a.sh};
    float *dst[5] = {b.means, b.log_scales, b.quats, b.opacity_logits, b.sh};
    int w[5] = {3, 3, 4, 1, 3 * K};
    for (int r = 0; r < 5; r++)
        k_reorder_gather<<<CU_GRID((int64_t)n * w[r], RO_BLOCK), RO_BLOCK, 0, st>>>(src[r], dst[r], n, w[r], order);
}

int cuda_reorder(cu_backend *b) {
    int n = b->n, K = b->K;
    cudaStream_t st = b->st;
    if (n > 1) {
        const char *what = "the reorder's codes";
        size_t N = (size_t)n, tb = 0;
        cu_buf codes = {NULL, 0}, temp = {NULL, 0};
        if (cu_alloc(&b->mem, &codes, N * 16 + 64, what)) return -1;
        uint32_t *code = (uint32_t *)codes.p, *code2 = code + N, *idx = code2 + N, *idx2 = idx + N;
        uint32_t *box = idx2 + N;
        cub::DeviceRadixSort::SortPairs(NULL, tb, code, code2, idx, idx2, n, 0, 3 * SP_MORTON_BITS, st);
        if (cu_alloc(&b->mem, &temp, tb, what)) {
            cu_free(&b->mem, &codes);
            return -1;
        }
        const float *means = cu_params_at((float *)b->params.p, n, K).means;
        static const uint32_t start[6] = {0xffffffffu, 0xffffffffu, 0xffffffffu, 0u, 0u, 0u};
        cudaMemcpyAsync(box, start, sizeof start, cudaMemcpyHostToDevice, st);
        int blocks = (int)CU_GRID(n, RO_BLOCK);
        k_reorder_box<<<blocks < 1024 ? blocks : 1024, RO_BLOCK, 0, st>>>(means, n, box);
        k_reorder_codes<<<CU_GRID(n, RO_BLOCK), RO_BLOCK, 0, st>>>(means, n, box, code, idx);
        cub::DeviceRadixSort::SortPairs(temp.p, tb, code, code2, idx, idx2, n, 0, 3 * SP_MORTON_BITS, st);
        cu_buf *store[3] = {&b->params, &b->m1, &b->m2};
        for (int s = 0; s < 3; s++) {
            if (!store[s]->p) continue; /* m2 under adam.moments16 */
            gather_store((const float *)store[s]->p, (float *)b->grads.p, n, K, idx2, st);
            cu_buf t = *store[s];
            *store[s] = b->grads, b->grads = t;
        }
        int rc = cu_check(cudaStreamSynchronize(st), "reorder"); /* the scratch is freed after its use */
        cu_free(&b->mem, &temp), cu_free(&b->mem, &codes);
        if (rc) return -1;
    }
    if (n > 0) {
        cudaMemsetAsync(b->grads.p, 0, (size_t)n * cu_floats(K) * sizeof(float), st);
        cudaMemsetAsync(b->stats.p, 0, (size_t)n * 3 * sizeof(float), st);
    }
    b->grads_pending = 0;
    return cu_check(cudaGetLastError(), "reorder");
}
