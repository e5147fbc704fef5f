/* raster.cu — the image-space stages on the GPU (docs/math.md): emit_pairs (one key per touched
 * tile), tile_ranges, rasterize (16x16 tiles, shared-memory batches, early stop) and
 * backward_raster. The sort between emit_pairs and tile_ranges is a CUB radix sort called from
 * cuda_backend.cu.
 *
 * backward_raster walks each pixel back to front from its last contributor. Per Gaussian of a
 * batch the 9 gradient values are reduced over the warp (a fixed shuffle tree); the lanes holding
 * the totals then add them atomically to the Gaussian (when at most CU_BWD_DIRECT pixels of the warp
 * blended it, those lanes add their own 9 values instead, no shuffles): as floats (fast mode), or in
 * deterministic mode as 64-bit fixed-point integers (cu_fx), whose sums are the same in any order,
 * turned into floats afterwards (cuda_fx_finish). No float atomics in deterministic mode. */
#include "backend/cuda/cuda_internal.h"
#include "backend/tile_cull.h"

#include <cub/cub.cuh>

/* ---- emit_pairs ---- */
/* Pair keys (docs/math.md): the depth key's order within each tile, in 32 bits when they hold it
 * exactly. info (cuda_pair_info) has the smallest and largest depth key >> SP_DEPTH_KEY_DROP of the
 * Gaussians that touch a tile, lo and hi; with d the bit width of hi - lo and tb that of the tile
 * ids, d + tb <= 32 gives 32-bit keys tile << d | (depth key >> SP_DEPTH_KEY_DROP) - lo, else 64-bit
 * ones tile << 32 | depth key. Both hold the same order (ties within 2^-19 as the depth key has
 * them), so the sorted lists are the same bit for bit; the 32-bit ones move 16 bytes a pair a sort
 * pass instead of 24 and need fewer passes (lego: depths within two octaves, 2500 tiles: 32 bits,
 * 4 passes of 8, against 40 bits and 5). Emit decides from info on the device, the host from its
 * copy of info (cuda_pair_keys): the same function of the same numbers. */
__host__ __device__ __forceinline__ int cu_key_shift(uint32_t lo, uint32_t not_hi, int tile_bits) {
    uint32_t hi = ~not_hi, span = hi > lo ? hi - lo : 0;
    int d = 0;
    while (d < 32 && (span >> d)) d++;
    return d + tile_bits <= 32 ? d : 32;
}

/* Bits needed for tile ids 0..tiles (one spare value above the last tile). */
int cuda_tile_bits(int tiles) {
    int b = 0;
    while (b < 32 && ((uint64_t)1 << b) <= (uint64_t)tiles) b++;
    return b;
}

cu_keys cuda_pair_keys(void *p, int tiles, const uint32_t *info) {
    cu_keys k;
    k.p = p;
    k.shift = cu_key_shift(info[1], info[2], cuda_tile_bits(tiles));
    k.k32 = k.shift < 32;
    return k;
}

__device__ __forceinline__ uint32_t cu_key_tile(uint32_t k, int shift) { return k >> shift; }
__device__ __forceinline__ uint32_t cu_key_tile(unsigned long long k, int) { return (uint32_t)(k >> 32); }

/* Each block's smallest depth key and smallest complement (the largest key) of the Gaussians that
 * touch a tile, reduced over its warps, then one atomicMin each. */
__global__ void k_pair_info(cu_proj proj, int n, uint32_t *info) {
    __shared__ uint32_t s_lo[8], s_nhi[8];
    uint32_t lo = 0xffffffffu, nhi = 0xffffffffu;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        if (proj.touched[i]) {
            uint32_t v = sp_depth_key(proj.depth[i]) >> SP_DEPTH_KEY_DROP;
            lo = min(lo, v);
            nhi = min(nhi, ~v);
        }
    for (int o = 16; o; o >>= 1) {
        lo = min(lo, __shfl_xor_sync(0xffffffffu, lo, o));
        nhi = min(nhi, __shfl_xor_sync(0xffffffffu, nhi, o));
    }
    int warp = threadIdx.x >> 5;
    if ((threadIdx.x & 31) == 0) s_lo[warp] = lo, s_nhi[warp] = nhi;
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int k = 1; k < (int)(blockDim.x >> 5); k++) lo = min(lo, s_lo[k]), nhi = min(nhi, s_nhi[k]);
        if (lo != 0xffffffffu) atomicMin(info + 1, lo);
        if (nhi != 0xffffffffu) atomicMin(info + 2, nhi);
        if (blockIdx.x == 0) info[0] = proj.offsets[n - 1];
    }
}

void cuda_pair_info(const cu_proj *proj, int n, uint32_t *info, cudaStream_t s) {
    cudaMemsetAsync(info, 0xff, 3 * sizeof(uint32_t), s);
    if (n <= 0) {
        cudaMemsetAsync(info, 0, sizeof(uint32_t), s);
        return;
    }
    int blocks = min(CU_GRID(n, 256), 1024);
    k_pair_info<<<blocks, 256, 0, s>>>(*proj, n, info);
}

/* The rect's tiles in row-major order, those the ellipse reaches (tile_cull.h): project counted
 * them into touched with the same test. Places at or past cap are not written (the buffers' size:
 * the forward pass emits before it knows the count, and again into larger buffers when the count
 * exceeds them). */
template <typename K>
__device__ __forceinline__ void emit_rect(const cu_proj &proj, int i, int tiles_x, K *keys, uint32_t *vals,
                                          uint32_t off, uint32_t end, uint32_t lo, int shift) {
    const int32_t *r = proj.rect + 4 * (size_t)i;
    uint32_t dbits = sp_depth_key(proj.depth[i]);
    K dk = sizeof(K) == 4 ? (K)((dbits >> SP_DEPTH_KEY_DROP) - lo) : (K)dbits;
    sp_tile_ellipse_t te = sp_tile_ellipse(proj.mean2d[2 * i], proj.mean2d[2 * i + 1], proj.conic[3 * i],
                                           proj.conic[3 * i + 1], proj.conic[3 * i + 2], proj.opacity[i]);
    for (int ty = r[1]; ty < r[3]; ty++)
        for (int tx = r[0]; tx < r[2]; tx++) {
            if (!sp_tile_hit(&te, tx, ty)) continue;
            keys[off] = ((K)(uint32_t)(ty * tiles_x + tx) << shift) | dk;
            vals[off] = (uint32_t)i;
            if (++off == end) return;
        }
}

__global__ void k_emit_pairs(cu_proj proj, int n, int tiles_x, int tile_bits, void *keys, const uint32_t *info,
                             uint32_t *vals, uint32_t cap) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    uint32_t cnt = proj.touched[i];
    if (!cnt) return;
    uint32_t off = proj.offsets[i] - cnt, end = min(proj.offsets[i], cap);
    if (off >= end) return;
    uint32_t lo = info[1];
    int shift = cu_key_shift(lo, info[2], tile_bits);
    if (shift < 32) emit_rect(proj, i, tiles_x, (uint32_t *)keys, vals, off, end, lo, shift);
    else emit_rect(proj, i, tiles_x, (unsigned long long *)keys, vals, off, end, 0u, 32);
}

void cuda_emit_pairs(const cu_proj *proj, int n, int tiles_x, int tiles, void *keys, const uint32_t *info,
                     uint32_t *vals, int64_t cap, cudaStream_t s) {
    if (n <= 0 || cap <= 0) return;
    uint32_t c = (uint32_t)(cap < 0xffffffffLL ? cap : 0xffffffffLL);
    k_emit_pairs<<<CU_GRID(n, 256), 256, 0, s>>>(*proj, n, tiles_x, cuda_tile_bits(tiles), keys, info, vals, c);
}

/* ---- sort ---- */
/* Stable LSD radix sort of the keys' bits only: 32-bit keys from bit 0 to shift + tile bits, 64-bit
 * ones from SP_DEPTH_KEY_DROP to 32 + tile bits. */
template <typename K>
static void sort_pairs(void *temp, size_t *bytes, cu_keys *keys, cu_keys alt, uint32_t **vals, uint32_t *vals_alt,
                       int np, int tiles, cudaStream_t s) {
    int tb = cuda_tile_bits(tiles);
    int begin = keys->k32 ? 0 : SP_DEPTH_KEY_DROP, end = keys->shift + tb;
    cub::DoubleBuffer<K> dk((K *)keys->p, (K *)alt.p);
    cub::DoubleBuffer<uint32_t> dv(*vals, vals_alt);
    cub::DeviceRadixSort::SortPairs(temp, *bytes, dk, dv, np, begin, end, s);
    keys->p = dk.Current();
    *vals = dv.Current();
}

size_t cuda_sort_pairs_bytes(int np, int tiles, cu_keys keys) {
    size_t bytes = 0;
    uint32_t *v = NULL;
    keys.p = NULL;
    if (keys.k32) sort_pairs<uint32_t>(NULL, &bytes, &keys, keys, &v, NULL, np, tiles, 0);
    else sort_pairs<unsigned long long>(NULL, &bytes, &keys, keys, &v, NULL, np, tiles, 0);
    return bytes;
}

void cuda_sort_pairs(void *temp, size_t bytes, cu_keys *keys, cu_keys alt, uint32_t **vals, uint32_t *vals_alt, int np,
                     int tiles, cudaStream_t s) {
    if (np <= 0) return;
    if (keys->k32) sort_pairs<uint32_t>(temp, &bytes, keys, alt, vals, vals_alt, np, tiles, s);
    else sort_pairs<unsigned long long>(temp, &bytes, keys, alt, vals, vals_alt, np, tiles, s);
}

/* ---- tile_ranges ---- */
/* First sorted position in [lo, hi] whose tile id is >= t (keys are sorted, tile id in the high
 * word; every position below lo is below t), found by a whole warp: each round the 32 lanes probe
 * 32 evenly spaced positions of [lo, hi) and the range shrinks to the gap between the last probe
 * below t and the first one not, so about five rounds of one load each cover millions of pairs. */
template <typename K>
__device__ static uint32_t warp_lower_bound_tile(const K *keys, int shift, uint32_t lo, uint32_t hi, uint32_t t,
                                                 int lane) {
    while (hi - lo > 32) {
        uint64_t span = hi - lo;
        uint32_t pos = lo + (uint32_t)(span * (uint64_t)(lane + 1) / 33);
        int c = __popc(__ballot_sync(0xffffffffu, cu_key_tile(keys[pos], shift) < t));
        uint32_t nlo = c ? lo + (uint32_t)(span * (uint64_t)c / 33) + 1 : lo;
        uint32_t nhi = c < 32 ? lo + (uint32_t)(span * (uint64_t)(c + 1) / 33) : hi;
        lo = nlo, hi = nhi;
    }
    uint32_t pos = lo + (uint32_t)lane;
    return lo + __popc(__ballot_sync(0xffffffffu, pos < hi && cu_key_tile(keys[pos], shift) < t));
}

/* ---- tile order ---- */
/* A tile's pair count is a good proxy for its rasterize and backward_raster time, which varies by
 * orders of magnitude across an image (empty background against the densest tiles). Blocks start
 * roughly in index order, so taking tiles heaviest first keeps the SMs busy to the end instead of
 * leaving a few heavy tiles running alone. Keys: 8 bits of 16 log2(count + 1), inverted (steps of
 * about 4 %, up to 65535 pairs; one radix pass); the sort is stable, so ties stay in tile order. */
__device__ __forceinline__ uint8_t tile_order_key(uint32_t pairs) {
    int c = (int)(16.0f * __log2f((float)pairs + 1.0f));
    return (uint8_t)(255 - min(max(c, 0), 255));
}

/* One warp per tile: empty tiles get start = end = the position where their pairs would be, as the
 * CPU reference writes them. okeys / ovals (or NULL): the tile order's sort input. */
template <typename K>
__global__ void k_tile_ranges(const K *keys, int shift, int num_pairs, int tiles, uint2 *range, uint8_t *okeys,
                              uint32_t *ovals) {
    int t = (int)((blockIdx.x * blockDim.x + threadIdx.x) >> 5), lane = threadIdx.x & 31;
    if (t >= tiles) return; /* the whole warp */
    uint32_t s = warp_lower_bound_tile(keys, shift, 0, (uint32_t)num_pairs, (uint32_t)t, lane);
    uint32_t e = warp_lower_bound_tile(keys, shift, s, (uint32_t)num_pairs, (uint32_t)t + 1, lane);
    if (lane == 0) {
        range[t] = make_uint2(s, e);
        if (okeys) okeys[t] = tile_order_key(e - s), ovals[t] = (uint32_t)t;
    }
}

__global__ void k_tile_order_keys(const uint2 *range, int tiles, uint8_t *keys, uint32_t *vals) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= tiles) return;
    keys[t] = tile_order_key(range[t].y - range[t].x);
    vals[t] = (uint32_t)t;
}

static size_t align256(size_t x) { return (x + 255) & ~(size_t)255; }

static size_t tile_order_sort_bytes(int tiles) {
    size_t tb = 0;
    cub::DoubleBuffer<uint8_t> k(NULL, NULL);
    cub::DoubleBuffer<uint32_t> v(NULL, NULL);
    cub::DeviceRadixSort::SortPairs(NULL, tb, k, v, tiles, 0, 8);
    return tb;
}

size_t cuda_tile_order_bytes(int tiles) {
    if (tiles <= 0) return 0;
    return 2 * align256((size_t)tiles) + 2 * align256((size_t)tiles * 4) + align256(tile_order_sort_bytes(tiles));
}

/* The places of the sort's keys and values in a tile order scratch. */
typedef struct {
    uint8_t *k0, *k1;
    uint32_t *v0, *v1;
    void *temp;
} tile_order_bufs;

static tile_order_bufs tile_order_split(int tiles, void *scratch) {
    tile_order_bufs o;
    char *p = (char *)scratch;
    o.k0 = (uint8_t *)p, o.k1 = (uint8_t *)(p + align256((size_t)tiles));
    p += 2 * align256((size_t)tiles);
    o.v0 = (uint32_t *)p, o.v1 = (uint32_t *)(p + align256((size_t)tiles * 4));
    o.temp = p + 2 * align256((size_t)tiles * 4);
    return o;
}

static const uint32_t *tile_order_sort(const tile_order_bufs *o, int tiles, cudaStream_t s) {
    size_t tb = tile_order_sort_bytes(tiles);
    cub::DoubleBuffer<uint8_t> dk(o->k0, o->k1);
    cub::DoubleBuffer<uint32_t> dv(o->v0, o->v1);
    cub::DeviceRadixSort::SortPairs(o->temp, tb, dk, dv, tiles, 0, 8, s);
    return dv.Current();
}

const uint32_t *cuda_tile_ranges(cu_keys keys, int num_pairs, int tiles, uint2 *range, void *order_scratch,
                                 cudaStream_t s) {
    if (tiles <= 0) return NULL;
    tile_order_bufs o = {};
    if (order_scratch) o = tile_order_split(tiles, order_scratch);
    unsigned g = CU_GRID((int64_t)tiles * 32, 128);
    if (keys.k32)
        k_tile_ranges<<<g, 128, 0, s>>>((const uint32_t *)keys.p, keys.shift, num_pairs, tiles, range, o.k0, o.v0);
    else
        k_tile_ranges<<<g, 128, 0, s>>>((const unsigned long long *)keys.p, 32, num_pairs, tiles, range, o.k0, o.v0);
    return order_scratch ? tile_order_sort(&o, tiles, s) : NULL;
}

const uint32_t *cuda_tile_order(const uint2 *range, int tiles, void *scratch, cudaStream_t s) {
    if (tiles <= 0) return NULL;
    tile_order_bufs o = tile_order_split(tiles, scratch);
    k_tile_order_keys<<<CU_GRID(tiles, 128), 128, 0, s>>>(range, tiles, o.k0, o.v0);
    return tile_order_sort(&o, tiles, s);
}

/* ---- rasterize ---- */
/* Each warp (8x4 pixels, cu_tile_lx/ly) walks its tile's list on its own, 32 positions at a time:
 * a lane whose position's warp mask (cuda_warp_masks) has the warp's bit loads that Gaussian into
 * the warp's slice of shared memory, and the warp then blends only those hits, in list order. No
 * block-wide barrier inside the walk: a warp whose pixels are all done leaves while the others go
 * on, and the next batch's loads are issued before the current one is blended (its ids a batch earlier
 * still, so the record loads wait on no other load).
 * STATE 2 (training: the per-pixel backward in chunks): at every CU_CHUNK-th position of its
 * tile's list a pixel still blending stores (T, accumulated colour) into its chunk's slot; STATE 3:
 * blend weights summed per Gaussian (cu_buckets.weight). With bk.tile_max_nc the block
 * records the largest contributor count of the tile. */

/* The level tau of sp_tile_tau in float: __logf's error is far inside the 0.1 % widening. */
__device__ __forceinline__ float cu_warp_tau(float sigma) {
    return 2.0f * __logf(255.0f * sigma) * (float)SP_TILE_TAU_WIDEN + (float)SP_TILE_TAU_PAD;
}

/* A projected Gaussian as the raster kernels read it: 2D mean, conic and opacity, colour. */
struct cu_splat {
    float2 m;
    float4 co;
    float3 col;
};

/* Gaussian g's record (cu_proj.splat) as the raster kernels keep it: its three 16-byte words, the
 * third's spare fields (y, z) free for the kernel's own use (the Gaussian's id, a factor). A warp's
 * batch sits in shared memory as these records, one slot of three words per lane: one base
 * address for everything a blend reads (separate arrays per field cost the kernels a few
 * instructions per blend to recompute their addresses). */
struct cu_rec {
    float4 a, b, c;
};

__device__ __forceinline__ cu_rec cu_load_rec(const cu_proj &proj, uint32_t g) {
    const float4 *r = proj.splat + 3 * (size_t)g;
    cu_rec x;
    x.a = r[0], x.b = r[1], x.c = r[2];
    return x;
}

/* A record's fields: 2D mean, conic and opacity, colour. */
__device__ __forceinline__ cu_splat cu_rec_splat(float4 a, float4 b, float cz) {
    cu_splat s;
    s.m = make_float2(a.x, a.y);
    s.co = make_float4(a.z, a.w, b.x, b.y);
    s.col = make_float3(b.z, b.w, cz);
    return s;
}

/* ---- warp masks ---- */
/* One thread per sorted position j (its tile in keys[j]: cu_key_tile): bit k of mask[j] says whether
 * the position's Gaussian reaches warp k's 8x4 pixels (tile_cull.h's rectangle test with the level
 * tau of cu_warp_tau: conservative, so nothing that would blend is left out). Made once per pair
 * here, rasterize and the fast per-pixel backward then load only the Gaussians that reach their
 * warp and test nothing (each of a tile's 8 warps used to load and test every Gaussian of the
 * tile's list). */
template <typename K>
__global__ void k_warp_masks(cu_proj proj, const K *keys, int shift, const uint32_t *ids, int num_pairs, int tiles_x,
                             uint8_t *mask) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= num_pairs) return;
    int tile = (int)cu_key_tile(keys[j], shift), tx = tile % tiles_x, ty = tile / tiles_x;
    uint32_t g = ids[j];
    float4 a = proj.splat[3 * (size_t)g], b = proj.splat[3 * (size_t)g + 1];
    sp_tile_ellipse_t el = sp_tile_ellipse_tau(a.x, a.y, a.z, a.w, b.x, cu_warp_tau(b.y));
    uint32_t m = 0;
#pragma unroll
    for (int k = 0; k < CU_BLOCK / 32; k++) {
        int rx = tx * CU_TILE + cu_tile_lx(k * 32), ry = ty * CU_TILE + cu_tile_ly(k * 32);
        m |= (uint32_t)sp_rect_hit(&el, rx, ry, CU_WARP_W, CU_WARP_H) << k;
    }
    mask[j] = (uint8_t)m;
}

void cuda_warp_masks(const cu_proj *proj, const cu_bins *bins, cu_keys keys, uint8_t *mask, cudaStream_t s) {
    if (bins->num_pairs <= 0) return;
    unsigned g = CU_GRID(bins->num_pairs, 256);
    if (keys.k32)
        k_warp_masks<<<g, 256, 0, s>>>(*proj, (const uint32_t *)keys.p, keys.shift, bins->ids, bins->num_pairs,
                                       bins->tiles_x, mask);
    else
        k_warp_masks<<<g, 256, 0, s>>>(*proj, (const unsigned long long *)keys.p, 32, bins->ids, bins->num_pairs,
                                       bins->tiles_x, mask);
}

/* A tile's 8 warps run in CU_RASTER_PARTS blocks of CU_RASTER_THREADS threads: warps no longer
 * share batches, and smaller blocks free their SM slot as soon as their own warps are done instead
 * of when the tile's slowest warp is. */
#define CU_RASTER_THREADS 64
#define CU_RASTER_PARTS (CU_BLOCK / CU_RASTER_THREADS)
template <int STATE>
__global__ void __launch_bounds__(CU_RASTER_THREADS, 20) k_rasterize(cu_proj proj, cu_bins bins, int w, int h,
                                                                 float3 bg, cu_raster out, cu_buckets bk) {
    __shared__ cu_rec s_rec[CU_RASTER_THREADS];
    __shared__ unsigned long long s_wsum[STATE == 3 ? CU_RASTER_THREADS : 1];
    __shared__ uint32_t s_wid[STATE == 3 ? CU_RASTER_THREADS : 1];
    int slot = (int)(blockIdx.x / CU_RASTER_PARTS);
    int tile = bins.order ? (int)bins.order[slot] : slot;
    int tx = tile % bins.tiles_x, ty = tile / bins.tiles_x;
    /* t: this thread's place among the tile's 256 (the pixel mapping and the per-pixel state) */
    int t = (int)(blockIdx.x % CU_RASTER_PARTS) * CU_RASTER_THREADS + (int)threadIdx.x;
    int lane = (int)threadIdx.x & 31, wp = t >> 5;
    int lx = cu_tile_lx(t), ly = cu_tile_ly(t);
    int px = tx * CU_TILE + lx, py = ty * CU_TILE + ly;
    int inside = px < w && py < h;
    float fx = (float)px + 0.5f, fy = (float)py + 0.5f;
    uint2 rg = bins.range[tile];
    int start = (int)rg.x, end = (int)rg.y;
    float4 *chunk = STATE == 2 ? bk.chunk + (size_t)cu_chunk_first(start, tile) * CU_BLOCK + t : NULL;
    int wl = (int)threadIdx.x >> 5; /* the warp within this block */
    cu_rec *w_rec = s_rec + wl * 32;
    unsigned long long *w_wsum = s_wsum + (STATE == 3 ? wl * 32 : 0);
    uint32_t *w_wid = s_wid + (STATE == 3 ? wl * 32 : 0);
    float T = 1.0f, C0 = 0.0f, C1 = 0.0f, C2 = 0.0f;
    int n_contrib = 0;
    int done = !inside;
    /* this lane's Gaussian of the next batch, loaded ahead; with warp masks only when it reaches
     * this warp (mcur: its bit for the batch in hand, mnext: for the one after) */
    const uint8_t *wm = bins.wmask;
    cu_rec sp = {};
    uint32_t gid = 0u, gnext = 0u; /* gnext: this lane's id of the next batch, read a batch ahead of its record */
    int mcur = start + lane < end ? (wm[start + lane] >> wp) & 1 : 0;
    int mnext = start + 32 + lane < end ? (wm[start + 32 + lane] >> wp) & 1 : 0;
    if (mcur) sp = cu_load_rec(proj, gid = bins.ids[start + lane]);
    if (start + 32 + lane < end) gnext = bins.ids[start + 32 + lane];
    for (int base = start; base < end; base += 32) {
        if (__all_sync(0xffffffffu, done)) break;
        int hit = mcur;
        if (hit) w_rec[lane] = sp;
        if (STATE == 3) w_wsum[lane] = 0ull, w_wid[lane] = gid;
        uint32_t bits = __ballot_sync(0xffffffffu, hit);
        __syncwarp();
        mcur = mnext;
        uint32_t g1 = gnext;
        int ahead = base + 64 + lane < end; /* the batch after the next: its mask bit and id */
        mnext = ahead ? (wm[base + 64 + lane] >> wp) & 1 : 0;
        gnext = ahead ? bins.ids[base + 64 + lane] : 0u;
        if (mcur) sp = cu_load_rec(proj, gid = g1);
        if (STATE == 2 && !done && !((base - start) & (CU_CHUNK - 1)))
            chunk[(size_t)((base - start) >> CU_CHUNK_LOG) * CU_BLOCK] = make_float4(T, C0, C1, C2);
        /* CU_RASTER_ILP hits at a time: their alphas are independent, so they are computed together
         * (the warp is no longer stalled on one exp at a time), then blended in order without a
         * branch per hit (the transmittance chain is the only serial part: the colours are read with
         * the alphas and added under a predicate). A warp walking a dense tile alone at the end of
         * the kernel waits on that chain. With the ids read a batch ahead, 3M Gaussians on lego:
         * rasterize 1.166 -> 0.947 ms/step (the blend alone 1.003; 8 hits at a time 1.046), the same
         * bits (bench/RESULTS.md, 2026-12-05). */
        while (bits && !done) {
            int kk[CU_RASTER_ILP];
            float a[CU_RASTER_ILP];
            float3 c[CU_RASTER_ILP];
#pragma unroll
            for (int u = 0; u < CU_RASTER_ILP; u++) {
                kk[u] = bits ? __ffs(bits) - 1 : -1;
                bits &= bits - 1;
            }
#pragma unroll
            for (int u = 0; u < CU_RASTER_ILP; u++) {
                int k = kk[u] < 0 ? 0 : kk[u];
                float4 ra = w_rec[k].a, rb = w_rec[k].b;
                c[u] = make_float3(rb.z, rb.w, w_rec[k].c.x);
                float dx = ra.x - fx, dy = ra.y - fy; /* mean; conic ra.z, ra.w, rb.x; opacity rb.y */
                float power = -0.5f * (ra.z * dx * dx + rb.x * dy * dy) - ra.w * dx * dy;
                float alpha = fminf(0.99f, rb.y * __expf(power));
                a[u] = (kk[u] >= 0 && power <= 0.0f && alpha >= 1.0f / 255.0f) ? alpha : 0.0f; /* 0: skipped */
            }
#pragma unroll
            for (int u = 0; u < CU_RASTER_ILP; u++) {
                float Tn = T * (1.0f - a[u]);
                int stop = !done && a[u] != 0.0f && Tn < 1e-4f;
                int blend = !done && a[u] != 0.0f && !stop;
                done |= stop;
                if (blend) {
                    float wgt = a[u] * T;
                    C0 += c[u].x * wgt, C1 += c[u].y * wgt, C2 += c[u].z * wgt;
                    if (STATE == 3)
                        atomicAdd(&w_wsum[kk[u]], (unsigned long long)__float2ull_rn(wgt * (float)SP_BLEND_WEIGHT_UNIT));
                    T = Tn;
                    n_contrib = base - start + kk[u] + 1;
                }
            }
        }
        __syncwarp();
        if (STATE == 3 && w_wsum[lane]) atomicAdd(&bk.weight[w_wid[lane]], w_wsum[lane]);
    }
    if (inside) {
        size_t pix = (size_t)py * w + px;
        out.rgb[3 * pix] = C0 + T * bg.x;
        out.rgb[3 * pix + 1] = C1 + T * bg.y;
        out.rgb[3 * pix + 2] = C2 + T * bg.z;
        out.final_T[pix] = T;
        out.n_contrib[pix] = n_contrib;
    }
    if (bk.tile_max_nc) { /* zeroed by cuda_rasterize; the tile's warps meet here */
        int wmax = __reduce_max_sync(0xffffffffu, n_contrib);
        if (lane == 0 && wmax) atomicMax(&bk.tile_max_nc[tile], wmax);
    }
}

void cuda_rasterize(const cu_proj *proj, const cu_bins *bins, int w, int h, float3 bg, cu_raster *out,
                    const cu_buckets *bk, cudaStream_t s) {
    int tiles = bins->tiles_x * bins->tiles_y;
    if (tiles <= 0) return;
    if (bk && bk->tile_max_nc) cudaMemsetAsync(bk->tile_max_nc, 0, (size_t)tiles * sizeof(int32_t), s);
    unsigned grid = (unsigned)tiles * CU_RASTER_PARTS;
    if (bk && bk->weight) k_rasterize<3><<<grid, CU_RASTER_THREADS, 0, s>>>(*proj, *bins, w, h, bg, *out, *bk);
    else if (bk && bk->chunk) k_rasterize<2><<<grid, CU_RASTER_THREADS, 0, s>>>(*proj, *bins, w, h, bg, *out, *bk);
    else k_rasterize<0><<<grid, CU_RASTER_THREADS, 0, s>>>(*proj, *bins, w, h, bg, *out, bk ? *bk : cu_buckets{});
}

/* ---- backward_raster, per-pixel variant ---- */
/* Warp sum of the 9 per-pair gradient values in 12 shuffles instead of 9 x 5: a butterfly
 * reduce-scatter. At each xor step a lane keeps the first or the second part of the values it is
 * responsible for (c slots, the second part zero-padded) and adds its partner's copy of that part.
 * After the xor-16/8/4/2 steps every lane holds one slot, the xor-1 step completes the sum, and
 * the lane named by reduce9_owner holds the warp total of one of the 9 values. */
#define CU_R9_STEP(o, c, in, out)                                                                 \
    {                                                                                             \
        int hi_ = (lane & (o)) != 0;                                                              \
        _Pragma("unroll") for (int j = 0; j < (c); j++) {                                         \
            float second = j + (c) < (int)(sizeof(in) / sizeof(float)) ? in[j + (c)] : 0.0f;     \
            float send = hi_ ? in[j] : second;                                                    \
            float keep = hi_ ? second : in[j];                                                    \
            out[j] = keep + __shfl_xor_sync(0xffffffffu, send, (o));                              \
        }                                                                                         \
    }

__device__ __forceinline__ float warp_reduce9(const float (&v)[CU_PAIR_GRADS], int lane) {
    float a[5], b[3], c[2], d[1];
    CU_R9_STEP(16, 5, v, a);
    CU_R9_STEP(8, 3, a, b);
    CU_R9_STEP(4, 2, b, c);
    CU_R9_STEP(2, 1, c, d);
    return d[0] + __shfl_xor_sync(0xffffffffu, d[0], 1);
}

/* Which of the 9 values lane ends up holding after warp_reduce9, or -1: mirrors the slot
 * bookkeeping (slot counts 9 -> 5 -> 3 -> 2 -> 1, real values n of them). */
__device__ __forceinline__ int reduce9_owner(int lane) {
    const int step_o[4] = {16, 8, 4, 2}, step_c[4] = {5, 3, 2, 1};
    int n = CU_PAIR_GRADS, base = 0;
    for (int s = 0; s < 4; s++) {
        int c = step_c[s];
        if (lane & step_o[s]) base += c, n = n > c ? n - c : 0;
        else n = n < c ? n : c;
    }
    return (n == 1 && !(lane & 1)) ? base : -1;
}

/* Where gradient value idx of Gaussian g lives: dst[idx] + stride * g. */
__device__ __forceinline__ float *grad_slot(const cu_proj_grad &G, int idx, int *stride) {
    if (idx < 2) return *stride = 2, G.mean2d + idx;
    if (idx < 5) return *stride = 3, G.conic + (idx - 2);
    if (idx < 6) return *stride = 1, G.opacity;
    return *stride = 3, G.color + (idx - 6);
}

/* One (pixel, Gaussian) pair of the walk back to front: when the Gaussian is blended at the pixel,
 * v receives the pair's 9 gradient values and T, B (the colour behind) step back past it; returns
 * whether it was blended (v untouched otherwise). */
__device__ __forceinline__ int bwd_pair(float2 m, float4 co, float3 col, float fx, float fy, float g0, float g1,
                                        float g2, float &T, float &B0, float &B1, float &B2,
                                        float (&v)[CU_PAIR_GRADS]) {
    float dx = m.x - fx, dy = m.y - fy;
    float power = -0.5f * (co.x * dx * dx + co.z * dy * dy) - co.y * dx * dy;
    float e = __expf(power);
    float gw = co.w * e;
    float alpha = fminf(0.99f, gw);
    if (!(power <= 0.0f && alpha >= 1.0f / 255.0f)) return 0;
    float ia = __fdividef(1.0f, 1.0f - alpha); /* 1 - alpha >= 0.01: the fast reciprocal's error is ~2 ulp */
    float Tj = T * ia;
    float at = alpha * Tj;
    v[6] = at * g0, v[7] = at * g1, v[8] = at * g2;
    float dalpha = g0 * (col.x * Tj - B0 * ia) + g1 * (col.y * Tj - B1 * ia) + g2 * (col.z * Tj - B2 * ia);
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
    return 1;
}

/* At most this many pixels of a warp blending one Gaussian add their 9 values each, atomically,
 * instead of the warp sum (its shuffle tree costs more instructions than a few lanes' atomics): at
 * 3M Gaussians on lego 1.72 -> 1.64 ms/step for backward_raster with 4, against 1.68 with 2, 1.79
 * with 6, 2.21 with 8 (bench/RESULTS.md, 2026-12-04 session 27). */
#define CU_BWD_DIRECT 4

/* Each warp walks its chunk's positions back to front on its own, 32 at a time (from its own last
 * contributor down), through its slice of shared memory, the next batch loaded ahead, and only over
 * the Gaussians whose ellipse reaches its 8x4 pixels; no block-wide barrier. The (tile, chunk)
 * item's 8 warps run in blocks of CU_BWD_THREADS threads (a small block frees its slot when its own
 * warps are done). DET: the warp totals go into fxg as fixed-point integers instead of float
 * atomics into G. */
#define CU_BWD_THREADS 64
template <int DET>
__global__ void __launch_bounds__(CU_BWD_THREADS, 20)
    k_backward_pixel(cu_proj proj, cu_bins bins, int w, int h, float3 bg, cu_raster fwd, const float *dl_drgb,
                     cu_buckets bk, cu_chunk_work work, cu_fx fxg, cu_proj_grad G) {
    constexpr int NT = CU_BWD_THREADS, PARTS = CU_BLOCK / NT;
    __shared__ cu_rec s_rec[NT]; /* c.y: the Gaussian's id; DET: c.z its cu_fx_conic_fac, made once per load */
    int it = (int)(blockIdx.x / PARTS);
    if (it >= *work.num_items) return; /* the grid is an upper bound */
    uint2 item = work.items[it];
    int tile = (int)item.x, chunk = (int)item.y;
    int tx = tile % bins.tiles_x, ty = tile / bins.tiles_x;
    /* t: this thread's place among the tile's 256 (the pixel mapping and the per-pixel state) */
    int t = (int)(blockIdx.x % PARTS) * NT + (int)threadIdx.x;
    int lx = cu_tile_lx(t), ly = cu_tile_ly(t);
    int px = tx * CU_TILE + lx, py = ty * CU_TILE + ly;
    int inside = px < w && py < h;
    int lane = threadIdx.x & 31, warp = t >> 5;
    int own = reduce9_owner(lane), own_stride = 0;
    float *own_dst = own >= 0 ? grad_slot(G, own, &own_stride) : NULL;
    float own_scale = 0.0f;
    unsigned long long *own_fx = NULL;
    if (DET && own >= 0) own_scale = fxg.scale[cu_fx_class(own)], own_fx = fxg.acc + (size_t)own * fxg.n;
    int own_conic = own >= 0 && cu_fx_class(own) == 1;
    float fx = (float)px + 0.5f, fy = (float)py + 0.5f;
    int start = (int)bins.range[tile].x;
    int max_nc = bk.tile_max_nc[tile];
    /* this block's positions: [c_lo, c_hi) */
    int c_lo = chunk * CU_CHUNK, c_hi = min(max_nc, c_lo + CU_CHUNK);
    int nc = 0;
    float T = 1.0f, g0 = 0.0f, g1 = 0.0f, g2 = 0.0f, B0 = 0.0f, B1 = 0.0f, B2 = 0.0f;
    if (inside) {
        size_t pix = (size_t)py * w + px;
        nc = fwd.n_contrib[pix];
        g0 = dl_drgb[3 * pix], g1 = dl_drgb[3 * pix + 1], g2 = dl_drgb[3 * pix + 2];
        if (nc > c_hi) { /* blending goes on past the chunk: start from the state the forward pass left
                            at its end; the colour behind it is the final colour minus that in front */
            float4 st = bk.chunk[((size_t)cu_chunk_first(start, tile) + (c_hi >> CU_CHUNK_LOG)) * CU_BLOCK + t];
            T = st.x;
            B0 = fwd.rgb[3 * pix] - st.y, B1 = fwd.rgb[3 * pix + 1] - st.z, B2 = fwd.rgb[3 * pix + 2] - st.w;
        } else {
            T = fwd.final_T[pix];
            B0 = T * bg.x, B1 = T * bg.y, B2 = T * bg.z;
        }
    }
    int warp_nc = __reduce_max_sync(0xffffffffu, nc); /* positions past it are skipped by the whole warp */
    int wl = (int)threadIdx.x >> 5; /* the warp within this block */
    cu_rec *w_rec = s_rec + wl * 32;
    int top = min(c_hi, warp_nc);
    /* this lane's Gaussian of the next batch, loaded ahead; with warp masks only when it reaches
     * this warp (mcur: its bit for the batch in hand, mnext: for the one below) */
    const uint8_t *wm = bins.wmask;
    uint32_t g = 0;
    cu_rec sp = {};
    int k = top - 32 + lane;
    int mcur = k >= c_lo && k < top ? (wm[start + k] >> warp) & 1 : 0;
    int mnext = k - 32 >= c_lo ? (wm[start + k - 32] >> warp) & 1 : 0;
    if (mcur) sp = cu_load_rec(proj, g = bins.ids[start + k]);
    for (; top > c_lo; top -= 32) {
        int lo = top - 32; /* slot s holds position lo + s; positions below c_lo are not loaded */
        int hit = mcur;
        if (hit) {
            sp.c.y = __uint_as_float(g);
            if (DET) sp.c.z = cu_fx_conic_fac(sp.a.z, sp.a.w, sp.b.x);
            w_rec[lane] = sp;
        }
        uint32_t bits = __ballot_sync(0xffffffffu, hit);
        __syncwarp();
        k = lo - 32 + lane;
        mcur = mnext;
        mnext = k - 32 >= c_lo ? (wm[start + k - 32] >> warp) & 1 : 0;
        if (mcur) sp = cu_load_rec(proj, g = bins.ids[start + k]);
        while (bits) { /* back to front: the highest slot first */
            int sl = 31 - __clz(bits);
            bits ^= 1u << sl;
            float v[CU_PAIR_GRADS];
            for (int c = 0; c < CU_PAIR_GRADS; c++) v[c] = 0.0f;
            float4 ra = w_rec[sl].a, rb = w_rec[sl].b;
            float2 rc = make_float2(w_rec[sl].c.x, w_rec[sl].c.y);
            cu_splat q = cu_rec_splat(ra, rb, rc.x);
            int any = lo + sl < nc && bwd_pair(q.m, q.co, q.col, fx, fy, g0, g1, g2, T, B0, B1, B2, v);
            uint32_t who = __ballot_sync(0xffffffffu, any);
            if (__popc(who) > CU_BWD_DIRECT) { /* more than a few pixels blended it: the warp sums */
                float tot = warp_reduce9(v, lane);
                if (own >= 0) {
                    uint32_t id = __float_as_uint(rc.y);
                    if (DET) {
                        atomicAdd(own_fx + id, cu_fx_of(own_conic ? tot * w_rec[sl].c.z : tot, own_scale));
                    } else {
                        atomicAdd(own_dst + (size_t)own_stride * id, tot);
                    }
                }
            } else if (any) { /* a few pixels: each adds its own values (fewer instructions than the sum) */
                uint32_t id = __float_as_uint(rc.y);
#pragma unroll
                for (int c = 0; c < CU_PAIR_GRADS; c++) {
                    if (DET) {
                        float val = cu_fx_class(c) == 1 ? v[c] * w_rec[sl].c.z : v[c];
                        atomicAdd(fxg.acc + (size_t)c * fxg.n + id, cu_fx_of(val, fxg.scale[cu_fx_class(c)]));
                    } else {
                        int st = 0;
                        float *d = grad_slot(G, c, &st);
                        atomicAdd(d + (size_t)st * id, v[c]);
                    }
                }
            }
        }
        __syncwarp();
    }
}

void cuda_backward_raster_pixel(const cu_proj *proj, const cu_bins *bins, int w, int h, float3 bg,
                                const cu_raster *fwd, const float *dl_drgb, const cu_buckets *bk,
                                const cu_chunk_work *work, const cu_fx *fx, cu_proj_grad *g, cudaStream_t s) {
    int tiles = bins->tiles_x * bins->tiles_y;
    if (tiles <= 0 || work->max_items <= 0) return;
    unsigned grid = (unsigned)work->max_items * (CU_BLOCK / CU_BWD_THREADS);
    if (fx)
        k_backward_pixel<1><<<grid, CU_BWD_THREADS, 0, s>>>(*proj, *bins, w, h, bg, *fwd, dl_drgb, *bk, *work, *fx,
                                                           *g);
    else
        k_backward_pixel<0><<<grid, CU_BWD_THREADS, 0, s>>>(*proj, *bins, w, h, bg, *fwd, dl_drgb, *bk, *work,
                                                           cu_fx{}, *g);
}

/* ---- deterministic gradient sums: 64-bit fixed point (cu_fx) ---- */
/* The largest |dL/drgb| of the step, as float bits (non-negative floats order as their bits). */
__global__ void k_fx_max(const float *dl, int64_t count, unsigned *max_bits) {
    unsigned m = 0;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += (int64_t)gridDim.x * blockDim.x)
        m = max(m, __float_as_uint(fabsf(dl[i])));
    m = __reduce_max_sync(0xffffffffu, m);
    if ((threadIdx.x & 31) == 0 && m) atomicMax(max_bits, m);
}

/* The classes' scales from the largest |dL/drgb| m: 2^(CU_FX_BITS[c] - e) with m < 2^e. */
__global__ void k_fx_scales(const unsigned *max_bits, float *scale) {
    int c = threadIdx.x;
    if (c >= CU_FX_CLASSES) return;
    float m = __uint_as_float(*max_bits);
    int e = 0;
    if (m > 0.0f && isfinite(m)) frexpf(m, &e);
    const int bits[CU_FX_CLASSES] = CU_FX_BITS;
    scale[c] = ldexpf(1.0f, bits[c] - e);
}

void cuda_fx_begin(const cu_fx *fx, const float *dl_drgb, int64_t count, cudaStream_t s) {
    cudaMemsetAsync(fx->acc, 0, (size_t)CU_PAIR_GRADS * (fx->n > 0 ? fx->n : 1) * sizeof(unsigned long long), s);
    cudaMemsetAsync(fx->max_bits, 0, sizeof(unsigned), s);
    if (count > 0) k_fx_max<<<256, 256, 0, s>>>(dl_drgb, count, fx->max_bits);
    k_fx_scales<<<1, 32, 0, s>>>(fx->max_bits, fx->scale);
}

__global__ void k_fx_finish(cu_fx fx, cu_proj_grad G) {
    int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= (int64_t)CU_PAIR_GRADS * fx.n) return;
    int c = (int)(j / fx.n), i = (int)(j % fx.n), stride = 0;
    float *dst = grad_slot(G, c, &stride);
    double q = (double)fx.scale[cu_fx_class(c)];
    if (cu_fx_class(c) == 1) q *= (double)cu_fx_conic_fac(fx.conic[3 * i], fx.conic[3 * i + 1], fx.conic[3 * i + 2]);
    dst[(size_t)stride * i] = (float)((double)(long long)fx.acc[j] / q);
}

void cuda_fx_finish(const cu_fx *fx, cu_proj_grad *g, cudaStream_t s) {
    int64_t total = (int64_t)CU_PAIR_GRADS * fx->n;
    if (total > 0) k_fx_finish<<<CU_GRID(total, 256), 256, 0, s>>>(*fx, *g);
}

/* ---- the chunked backward's work list ---- */
__global__ void k_chunk_counts(const int32_t *tile_max_nc, int tiles, int *counts) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= tiles) return;
    int nc = max(tile_max_nc[t], 0);
    counts[t] = max(1, (nc + CU_CHUNK - 1) >> CU_CHUNK_LOG);
}

__global__ void k_chunk_fill(const int *counts, const int *firsts, int tiles, uint2 *items, int *num_items) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= tiles) return;
    int c = counts[t], f = firsts[t];
    for (int j = 0; j < c; j++) items[f + j] = make_uint2((uint32_t)t, (uint32_t)j);
    if (t == tiles - 1) *num_items = f + c;
}

static size_t chunk_scan_bytes(int tiles) {
    size_t tb = 0;
    cub::DeviceScan::ExclusiveSum(NULL, tb, (const int *)NULL, (int *)NULL, tiles);
    return tb;
}

size_t cuda_chunk_items_bytes(int tiles, int64_t num_pairs) {
    if (tiles <= 0) return 0;
    return align256(cu_chunk_count(num_pairs, tiles) * sizeof(uint2)) + 2 * align256((size_t)tiles * 4) +
           align256(4) + align256(chunk_scan_bytes(tiles));
}

cu_chunk_work cuda_chunk_items(const int32_t *tile_max_nc, int tiles, int64_t num_pairs, void *scratch,
                               cudaStream_t s) {
    cu_chunk_work w = {NULL, NULL, 0};
    if (tiles <= 0) return w;
    char *p = (char *)scratch;
    size_t cap = cu_chunk_count(num_pairs, tiles);
    uint2 *items = (uint2 *)p;
    p += align256(cap * sizeof(uint2));
    int *counts = (int *)p;
    p += align256((size_t)tiles * 4);
    int *firsts = (int *)p;
    p += align256((size_t)tiles * 4);
    int *num = (int *)p;
    p += align256(4);
    size_t tb = chunk_scan_bytes(tiles);
    k_chunk_counts<<<CU_GRID(tiles, 128), 128, 0, s>>>(tile_max_nc, tiles, counts);
    cub::DeviceScan::ExclusiveSum(p, tb, counts, firsts, tiles, s);
    k_chunk_fill<<<CU_GRID(tiles, 128), 128, 0, s>>>(counts, firsts, tiles, items, num);
    w.items = items;
    w.num_items = num;
    w.max_items = (int)cap;
    return w;
}
