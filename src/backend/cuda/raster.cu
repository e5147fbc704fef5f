/* raster.cu — the image-space stages on the GPU (docs/math.md): emit_pairs (one key per touched
 * tile), tile_ranges, rasterize (16x16 tiles, shared-memory batches, early stop) and
 * backward_raster. The sort between emit_pairs and tile_ranges is a CUB radix sort called from
 * cuda_backend.cu.
 *
 * backward_raster variants sit side by side; the per-pixel one walks each pixel back to front from
 * its last contributor. Per Gaussian of a batch the 9 gradient values are reduced over the warp;
 * lane 0 then either adds them atomically to the Gaussian (fast mode) or, in deterministic mode,
 * parks them in shared memory, and after the batch one thread per value sums the 8 warps in fixed
 * order into pair_grad[sorted position]; cuda_reduce_pair_grads finally sums each Gaussian's pairs
 * in ascending position order. No float atomics in deterministic mode. */
#include "backend/cuda/cuda_internal.h"

/* ---- emit_pairs ---- */
__global__ void k_emit_pairs(cu_proj proj, int n, int tiles_x, int deterministic, uint64_t *keys, uint32_t *vals,
                             uint32_t *pair_gid) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    uint32_t cnt = proj.touched[i];
    if (!cnt) return;
    uint32_t off = proj.offsets[i] - cnt;
    const int32_t *r = proj.rect + 4 * (size_t)i;
    uint64_t dbits = (uint64_t)__float_as_uint(proj.depth[i]);
    for (int ty = r[1]; ty < r[3]; ty++)
        for (int tx = r[0]; tx < r[2]; tx++) {
            uint64_t tile = (uint64_t)(ty * tiles_x + tx);
            keys[off] = (tile << 32) | dbits;
            if (deterministic) {
                vals[off] = off;
                pair_gid[off] = (uint32_t)i;
            } else {
                vals[off] = (uint32_t)i;
            }
            off++;
        }
}

void cuda_emit_pairs(const cu_proj *proj, int n, int tiles_x, int deterministic, uint64_t *keys, uint32_t *vals,
                     uint32_t *pair_gid, cudaStream_t s) {
    if (n <= 0) return;
    k_emit_pairs<<<CU_GRID(n, 256), 256, 0, s>>>(*proj, n, tiles_x, deterministic, keys, vals, pair_gid);
}

/* Bits needed for tile ids 0..tiles (one spare value above the last tile). */
int cuda_tile_bits(int tiles) {
    int b = 0;
    while (b < 32 && ((uint64_t)1 << b) <= (uint64_t)tiles) b++;
    return b;
}

/* ---- tile_ranges ---- */
/* First sorted position whose tile id is >= t (keys are sorted, tile id in the high word). */
__device__ static uint32_t lower_bound_tile(const uint64_t *keys, int num_pairs, uint32_t t) {
    uint32_t lo = 0, hi = (uint32_t)num_pairs;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if ((uint32_t)(keys[mid] >> 32) < t) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* One thread per tile, binary search: empty tiles get start = end = the position where their
 * pairs would be, as the CPU reference writes them. */
__global__ void k_tile_ranges(const uint64_t *keys, int num_pairs, int tiles, uint2 *range) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= tiles) return;
    uint32_t s = lower_bound_tile(keys, num_pairs, (uint32_t)t);
    uint32_t e = lower_bound_tile(keys, num_pairs, (uint32_t)t + 1);
    range[t] = make_uint2(s, e);
}

void cuda_tile_ranges(const uint64_t *keys, int num_pairs, int tiles, uint2 *range, cudaStream_t s) {
    if (tiles <= 0) return;
    k_tile_ranges<<<CU_GRID(tiles, 128), 128, 0, s>>>(keys, num_pairs, tiles, range);
}

__global__ void k_gather_ids(const uint32_t *perm, const uint32_t *pair_gid, int num_pairs, uint32_t *ids,
                             uint32_t *inv) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= num_pairs) return;
    uint32_t p = perm[j];
    ids[j] = pair_gid[p];
    inv[p] = (uint32_t)j;
}

void cuda_gather_ids(const uint32_t *perm, const uint32_t *pair_gid, int num_pairs, uint32_t *ids, uint32_t *inv,
                     cudaStream_t s) {
    if (num_pairs <= 0) return;
    k_gather_ids<<<CU_GRID(num_pairs, 256), 256, 0, s>>>(perm, pair_gid, num_pairs, ids, inv);
}

/* ---- rasterize ---- */
__global__ void __launch_bounds__(CU_BLOCK) k_rasterize(cu_proj proj, cu_bins bins, int w, int h, float3 bg,
                                                        cu_raster out) {
    __shared__ float2 s_mean[CU_BLOCK];
    __shared__ float4 s_conic_op[CU_BLOCK];
    __shared__ float3 s_color[CU_BLOCK];
    int tile = blockIdx.x;
    int tx = tile % bins.tiles_x, ty = tile / bins.tiles_x;
    int lx = threadIdx.x % CU_TILE, ly = threadIdx.x / CU_TILE;
    int px = tx * CU_TILE + lx, py = ty * CU_TILE + ly;
    int inside = px < w && py < h;
    float fx = (float)px + 0.5f, fy = (float)py + 0.5f;
    uint2 rg = bins.range[tile];
    int start = (int)rg.x, end = (int)rg.y;
    float T = 1.0f, C0 = 0.0f, C1 = 0.0f, C2 = 0.0f;
    int n_contrib = 0;
    int done = !inside;
    for (int base = start; base < end; base += CU_BLOCK) {
        if (__syncthreads_count(done) == CU_BLOCK) break;
        int j = base + (int)threadIdx.x;
        if (j < end) {
            uint32_t g = bins.ids[j];
            s_mean[threadIdx.x] = make_float2(proj.mean2d[2 * g], proj.mean2d[2 * g + 1]);
            s_conic_op[threadIdx.x] =
                make_float4(proj.conic[3 * g], proj.conic[3 * g + 1], proj.conic[3 * g + 2], proj.opacity[g]);
            s_color[threadIdx.x] = make_float3(proj.color[3 * g], proj.color[3 * g + 1], proj.color[3 * g + 2]);
        }
        __syncthreads();
        int cnt = min(CU_BLOCK, end - base);
        for (int k = 0; k < cnt && !done; k++) {
            float2 m = s_mean[k];
            float4 co = s_conic_op[k];
            float dx = m.x - fx, dy = m.y - fy;
            float power = -0.5f * (co.x * dx * dx + co.z * dy * dy) - co.y * dx * dy;
            if (power > 0.0f) continue;
            float alpha = fminf(0.99f, co.w * expf(power));
            if (alpha < 1.0f / 255.0f) continue;
            float Tn = T * (1.0f - alpha);
            if (Tn < 1e-4f) {
                done = 1;
                break;
            }
            float3 c = s_color[k];
            float wgt = alpha * T;
            C0 += c.x * wgt, C1 += c.y * wgt, C2 += c.z * wgt;
            T = Tn;
            n_contrib = base - start + k + 1;
        }
    }
    if (inside) {
        size_t pix = (size_t)py * w + px;
        out.rgb[3 * pix] = C0 + T * bg.x;
        out.rgb[3 * pix + 1] = C1 + T * bg.y;
        out.rgb[3 * pix + 2] = C2 + T * bg.z;
        out.final_T[pix] = T;
        out.n_contrib[pix] = n_contrib;
    }
}

void cuda_rasterize(const cu_proj *proj, const cu_bins *bins, int w, int h, float3 bg, cu_raster *out,
                    cudaStream_t s) {
    int tiles = bins->tiles_x * bins->tiles_y;
    if (tiles <= 0) return;
    k_rasterize<<<tiles, CU_BLOCK, 0, s>>>(*proj, *bins, w, h, bg, *out);
}

/* ---- backward_raster, per-pixel variant ---- */
__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    return v;
}

template <int DET>
__global__ void __launch_bounds__(CU_BLOCK) k_backward_pixel(cu_proj proj, cu_bins bins, int w, int h, float3 bg,
                                                             cu_raster fwd, const float *dl_drgb, float *pair_grad,
                                                             cu_proj_grad G) {
    __shared__ uint32_t s_id[CU_BWD_BATCH];
    __shared__ float2 s_mean[CU_BWD_BATCH];
    __shared__ float4 s_conic_op[CU_BWD_BATCH];
    __shared__ float3 s_color[CU_BWD_BATCH];
    __shared__ float s_part[DET ? CU_BLOCK / 32 : 1][DET ? CU_BWD_BATCH : 1][CU_PAIR_GRADS];
    __shared__ int s_max_nc;
    int tile = blockIdx.x;
    int tx = tile % bins.tiles_x, ty = tile / bins.tiles_x;
    int lx = threadIdx.x % CU_TILE, ly = threadIdx.x / CU_TILE;
    int px = tx * CU_TILE + lx, py = ty * CU_TILE + ly;
    int inside = px < w && py < h;
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    float fx = (float)px + 0.5f, fy = (float)py + 0.5f;
    uint2 rg = bins.range[tile];
    int start = (int)rg.x, end = (int)rg.y;
    if (threadIdx.x == 0) s_max_nc = 0;
    __syncthreads();
    int nc = 0;
    float T = 1.0f, g0 = 0.0f, g1 = 0.0f, g2 = 0.0f;
    if (inside) {
        size_t pix = (size_t)py * w + px;
        nc = fwd.n_contrib[pix];
        T = fwd.final_T[pix];
        g0 = dl_drgb[3 * pix], g1 = dl_drgb[3 * pix + 1], g2 = dl_drgb[3 * pix + 2];
        if (nc > 0) atomicMax(&s_max_nc, nc);
    }
    float B0 = T * bg.x, B1 = T * bg.y, B2 = T * bg.z;
    __syncthreads();
    int max_nc = s_max_nc;
    if (DET) { /* positions nobody blended get zero contributions */
        for (int j = start + max_nc + (int)threadIdx.x; j < end; j += CU_BLOCK)
            for (int c = 0; c < CU_PAIR_GRADS; c++) pair_grad[(size_t)j * CU_PAIR_GRADS + c] = 0.0f;
    }
    for (int hi = max_nc; hi > 0; hi -= CU_BWD_BATCH) {
        int lo = max(0, hi - CU_BWD_BATCH);
        __syncthreads();
        int k = lo + (int)threadIdx.x;
        if (k < hi) {
            uint32_t g = bins.ids[start + k];
            int slot = k - lo;
            s_id[slot] = g;
            s_mean[slot] = make_float2(proj.mean2d[2 * g], proj.mean2d[2 * g + 1]);
            s_conic_op[slot] =
                make_float4(proj.conic[3 * g], proj.conic[3 * g + 1], proj.conic[3 * g + 2], proj.opacity[g]);
            s_color[slot] = make_float3(proj.color[3 * g], proj.color[3 * g + 1], proj.color[3 * g + 2]);
        }
        __syncthreads();
        for (int k2 = hi - 1; k2 >= lo; k2--) {
            int slot = k2 - lo;
            float v[CU_PAIR_GRADS];
            for (int c = 0; c < CU_PAIR_GRADS; c++) v[c] = 0.0f;
            int any = 0;
            if (k2 < nc) {
                float2 m = s_mean[slot];
                float4 co = s_conic_op[slot];
                float dx = m.x - fx, dy = m.y - fy;
                float power = -0.5f * (co.x * dx * dx + co.z * dy * dy) - co.y * dx * dy;
                float e = expf(power);
                float gw = co.w * e;
                float alpha = fminf(0.99f, gw);
                if (power <= 0.0f && alpha >= 1.0f / 255.0f) {
                    any = 1;
                    float3 col = s_color[slot];
                    float Tj = T / (1.0f - alpha);
                    float at = alpha * Tj;
                    v[6] = at * g0, v[7] = at * g1, v[8] = at * g2;
                    float ia = 1.0f / (1.0f - alpha);
                    float dalpha = g0 * (col.x * Tj - B0 * ia) + g1 * (col.y * Tj - B1 * ia) +
                                   g2 * (col.z * Tj - B2 * ia);
                    B0 += col.x * at, B1 += col.y * at, B2 += col.z * at;
                    T = Tj;
                    /* straight through the 0.99 clamp (3DGS convention) */
                    v[5] = dalpha * e;
                    float dpow = dalpha * gw;
                    v[2] = dpow * (-0.5f * dx * dx);
                    v[3] = dpow * (-dx * dy);
                    v[4] = dpow * (-0.5f * dy * dy);
                    v[0] = dpow * (-(co.x * dx + co.y * dy));
                    v[1] = dpow * (-(co.y * dx + co.z * dy));
                }
            }
            if (__any_sync(0xffffffffu, any)) {
                for (int c = 0; c < CU_PAIR_GRADS; c++) v[c] = warp_sum(v[c]);
                if (lane == 0) {
                    if (DET) {
                        for (int c = 0; c < CU_PAIR_GRADS; c++) s_part[warp][slot][c] = v[c];
                    } else {
                        uint32_t g = s_id[slot];
                        atomicAdd(&G.mean2d[2 * g], v[0]);
                        atomicAdd(&G.mean2d[2 * g + 1], v[1]);
                        atomicAdd(&G.conic[3 * g], v[2]);
                        atomicAdd(&G.conic[3 * g + 1], v[3]);
                        atomicAdd(&G.conic[3 * g + 2], v[4]);
                        atomicAdd(&G.opacity[g], v[5]);
                        atomicAdd(&G.color[3 * g], v[6]);
                        atomicAdd(&G.color[3 * g + 1], v[7]);
                        atomicAdd(&G.color[3 * g + 2], v[8]);
                    }
                }
            } else if (DET && lane == 0) {
                for (int c = 0; c < CU_PAIR_GRADS; c++) s_part[warp][slot][c] = 0.0f;
            }
        }
        if (DET) {
            __syncthreads();
            for (int t = threadIdx.x; t < (hi - lo) * CU_PAIR_GRADS; t += CU_BLOCK) {
                int slot = t / CU_PAIR_GRADS, c = t % CU_PAIR_GRADS;
                float acc = 0.0f;
                for (int wp = 0; wp < CU_BLOCK / 32; wp++) acc += s_part[wp][slot][c];
                pair_grad[(size_t)(start + lo + slot) * CU_PAIR_GRADS + c] = acc;
            }
        }
    }
}

void cuda_backward_raster_pixel(const cu_proj *proj, const cu_bins *bins, int w, int h, float3 bg,
                                const cu_raster *fwd, const float *dl_drgb, int deterministic, float *pair_grad,
                                cu_proj_grad *g, cudaStream_t s) {
    int tiles = bins->tiles_x * bins->tiles_y;
    if (tiles <= 0) return;
    if (deterministic)
        k_backward_pixel<1><<<tiles, CU_BLOCK, 0, s>>>(*proj, *bins, w, h, bg, *fwd, dl_drgb, pair_grad, *g);
    else
        k_backward_pixel<0><<<tiles, CU_BLOCK, 0, s>>>(*proj, *bins, w, h, bg, *fwd, dl_drgb, pair_grad, *g);
}

__global__ void k_reduce_pair_grads(const float *pair_grad, const uint32_t *seg_end, const uint32_t *pos, int n,
                                    cu_proj_grad G) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    uint32_t b = i ? seg_end[i - 1] : 0, e = seg_end[i];
    float v[CU_PAIR_GRADS];
    for (int c = 0; c < CU_PAIR_GRADS; c++) v[c] = 0.0f;
    for (uint32_t k = b; k < e; k++) {
        const float *pg = pair_grad + (size_t)pos[k] * CU_PAIR_GRADS;
        for (int c = 0; c < CU_PAIR_GRADS; c++) v[c] += pg[c];
    }
    G.mean2d[2 * i] = v[0], G.mean2d[2 * i + 1] = v[1];
    G.conic[3 * i] = v[2], G.conic[3 * i + 1] = v[3], G.conic[3 * i + 2] = v[4];
    G.opacity[i] = v[5];
    G.color[3 * i] = v[6], G.color[3 * i + 1] = v[7], G.color[3 * i + 2] = v[8];
}

void cuda_reduce_pair_grads(const float *pair_grad, const uint32_t *seg_end, const uint32_t *pos, int n,
                            cu_proj_grad *g, cudaStream_t s) {
    if (n <= 0) return;
    k_reduce_pair_grads<<<CU_GRID(n, 256), 256, 0, s>>>(pair_grad, seg_end, pos, n, *g);
}
