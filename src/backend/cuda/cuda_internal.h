/* cuda_internal.h — what the CUDA backend's .cu files share: device buffers with memory
 * accounting, the stage launchers (one per stage of docs/math.md) and small device helpers.
 * Compiled by nvcc only; C code never includes this file. */
#ifndef SPLAT_CUDA_INTERNAL_H
#define SPLAT_CUDA_INTERNAL_H

#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

extern "C" {
#include "backend/backend.h"
#include "core/core.h"
}

#define CU_TILE 16
#define CU_BLOCK (CU_TILE * CU_TILE)
#define CU_RASTER_ILP 4 /* rasterize: Gaussians whose alphas are computed together (divides 32) */
#define CU_PAIR_GRADS 9  /* dmean2d 2, dconic 3, dopacity 1, dcolor 3 */

/* Where thread t of a tile's block sits in the 16x16 tile: each warp covers an 8x4 rectangle (a
 * warp's footprint has a shorter border than a 16x2 strip, so more Gaussians miss the whole warp
 * and the warp masks skip more). Every raster kernel uses this mapping, so per-pixel state written
 * by one kernel is read at the same pixel by another. */
#define CU_WARP_W 8
#define CU_WARP_H 4
#ifdef __CUDACC__
__host__ __device__ static inline int cu_tile_lx(int t) { return ((t >> 5) & 1) * 8 + (t & 7); }
__host__ __device__ static inline int cu_tile_ly(int t) { return (t >> 6) * 4 + ((t >> 3) & 3); }
#endif

/* Device memory accounting: every allocation of the backend goes through cu_alloc/cu_free. */
typedef struct {
    int64_t cur, peak;
    int num_gaussians; /* named in out-of-memory messages */
} cu_mem;

typedef struct {
    void *p;
    size_t bytes;
} cu_buf;

int cu_alloc(cu_mem *mem, cu_buf *b, size_t bytes, const char *what);
void cu_free(cu_mem *mem, cu_buf *b);
/* Grows b to at least bytes (contents lost); grows by 1.5x to amortize. */
int cu_reserve(cu_mem *mem, cu_buf *b, size_t bytes, const char *what);
/* Records a CUDA error as sp_error ("cuda: what: message"); returns -1 if err != success. */
int cu_check(cudaError_t err, const char *what);

/* Projected Gaussians on the device (layouts of sp_proj in backend/ref/stages.h). */
typedef struct {
    float *mean2d, *conic, *depth, *opacity, *color, *radius;
    int32_t *rect;
    uint8_t *clamped;
    uint32_t *touched; /* tiles per Gaussian */
    uint32_t *offsets; /* inclusive prefix sum of touched */
    /* [3n] or NULL: Gaussian i's copy of what the raster kernels gather, in one 48-byte record
     * (sp_proj_record's layout): {mean2d x, y, conic 0, 1}, {conic 2, opacity, colour r, g},
     * {colour b, 0, 0, 0}; two memory sectors a load instead of four to six from the arrays above */
    float4 *splat;
} cu_proj;

/* Writes one cu_proj.splat record (the layout of backend/ref/stages.h's sp_proj_record). */
__host__ __device__ static inline void cuda_splat_record(float4 *r, float mx, float my, float c0, float c1, float c2,
                                                         float opacity, const float *col) {
    r[0] = make_float4(mx, my, c0, c1);
    r[1] = make_float4(c2, opacity, col[0], col[1]);
    r[2] = make_float4(col[2], 0.0f, 0.0f, 0.0f);
}

typedef struct {
    float *mean2d, *conic, *opacity, *color;
} cu_proj_grad;

/* Parameters (or gradients, or moments) in one allocation: regions at capacity offsets. */
typedef struct {
    float *means, *log_scales, *quats, *opacity_logits, *sh;
} cu_params;

/* A store's regions; every one NULL for a store that is not there (base NULL: the second moments'
 * under adam.moments16, cu_keeps_m2). */
static inline cu_params cu_params_at(float *base, int cap, int K) {
    cu_params p;
    size_t c = (size_t)cap;
    (void)K;
    if (!base) {
        p.means = p.log_scales = p.quats = p.opacity_logits = p.sh = NULL;
        return p;
    }
    p.means = base;
    p.log_scales = base + 3 * c;
    p.quats = base + 6 * c;
    p.opacity_logits = base + 10 * c;
    p.sh = base + 11 * c;
    return p;
}

/* Sorted per-tile lists. */
typedef struct {
    int tiles_x, tiles_y;
    int num_pairs;
    const uint32_t *ids;   /* [num_pairs] Gaussian per sorted position */
    const uint2 *range;    /* [tiles] start, end */
    const uint32_t *order; /* [tiles] the tile each block takes, most pairs first (cuda_tile_ranges); NULL = in order */
    /* [num_pairs] bit k: the pair's Gaussian reaches warp k's 8x4 pixels of the tile (cuda_warp_masks);
     * rasterize and the fast per-pixel backward read it */
    const uint8_t *wmask;
} cu_bins;

typedef struct {
    float *rgb;
    float *final_T;
    int32_t *n_contrib;
} cu_raster;

/* What rasterize leaves for the passes after it: each tile's largest contributor count, the
 * per-pixel backward's chunk states, and blend weights when asked for. */
typedef struct {
    int32_t *tile_max_nc;
    float4 *chunk; /* per-pixel backward: the state at every CU_CHUNK-th position (cu_chunk_first) */
    /* blend weights: each Gaussian's alpha T summed over the pixels, in units of 1 / SP_BLEND_WEIGHT_UNIT
     * (integer sums: the same in any order, so deterministic runs prune alike) */
    unsigned long long *weight;
} cu_buckets;

/* Per-pixel backward in chunks: a heavy tile's list is walked by several blocks, each over CU_CHUNK
 * positions, so the densest tiles no longer run alone at the end of the pass. A block starts from
 * the per-pixel state (T, colour in front) that the forward pass stored at its chunk's end. Tile
 * t's chunk states start at cu_chunk_first(start_t, t): start / CU_CHUNK + t leaves room for
 * ceil(count / CU_CHUNK) chunks per tile without a scan. 128 positions: backward_raster 0.408 ->
 * 0.388 ms/step on lego at 340k against 256 (512: 0.443; H200, bench/RESULTS.md session 22). */
#define CU_CHUNK_LOG 7
#define CU_CHUNK (1 << CU_CHUNK_LOG)
static inline __host__ __device__ uint32_t cu_chunk_first(uint32_t start, int tile) {
    return (start >> CU_CHUNK_LOG) + (uint32_t)tile;
}
static inline size_t cu_chunk_count(int64_t num_pairs, int tiles) {
    return (size_t)((num_pairs >> CU_CHUNK_LOG) + tiles + 2);
}
/* The chunked backward's work list: one (tile, chunk) item per CU_CHUNK positions below the tile's
 * largest contributor count, at least one per tile; built on the device (cuda_chunk_items). */
typedef struct {
    const uint2 *items;   /* [upper bound] (tile, chunk index) */
    const int *num_items; /* device count; blocks past it return */
    int max_items;        /* the grid: an upper bound, cu_chunk_count */
} cu_chunk_work;
size_t cuda_chunk_items_bytes(int tiles, int64_t num_pairs);
cu_chunk_work cuda_chunk_items(const int32_t *tile_max_nc, int tiles, int64_t num_pairs, void *scratch,
                               cudaStream_t s);

/* ---- stage launchers (all asynchronous on stream s) ---- */
/* project.cu */
/* antialias: the opacity-compensated filter (sp_backend_config.antialias) */
void cuda_project(const cu_params *p, int n, int K, const sp_camera *cam, int sh_degree, int antialias, cu_proj *out,
                  cudaStream_t s);
/* project_back; stats may be NULL (grad_accum, grad_count, max_radius). */
void cuda_project_back(const cu_params *p, int n, int K, const sp_camera *cam, int sh_degree, int antialias,
                       const cu_proj *proj, const cu_proj_grad *g, cu_params *out, float *grad_accum,
                       float *grad_count, float *max_radius, cudaStream_t s);
/* The same math on the host, for tests without a GPU. */
void cuda_project_host(const cu_params *p, int n, int K, const sp_camera *cam, int sh_degree, int antialias,
                       cu_proj *out);
void cuda_project_back_host(const cu_params *p, int n, int K, const sp_camera *cam, int sh_degree, int antialias,
                            const cu_proj *proj, const cu_proj_grad *g, cu_params *out);
/* raster.cu */
/* Pair keys (raster.cu, docs/math.md): 32-bit (k32: tile << shift | depth key offset) when a step's
 * depth span and tile ids fit in 32 bits, else 64-bit (tile << 32 | depth key, shift 32); both
 * order the pairs alike. p holds room for as many 64-bit keys either way. */
typedef struct {
    void *p;
    int k32, shift;
} cu_keys;
int cuda_tile_bits(int tiles);
/* info[0] = the pair count (offsets[n - 1]), info[1] = the smallest depth key >> SP_DEPTH_KEY_DROP
 * of the Gaussians that touch a tile, info[2] = the complement of the largest (device memory, 3
 * words; the scan of touched into offsets must come first). */
void cuda_pair_info(const cu_proj *proj, int n, uint32_t *info, cudaStream_t s);
/* The key layout for info (a host copy of cuda_pair_info's): what cuda_emit_pairs wrote. */
cu_keys cuda_pair_keys(void *p, int tiles, const uint32_t *info);
/* keys (room for cap 64-bit keys) and vals hold cap pairs: the pairs at places past it are not
 * written. The layout comes from info (device memory: cuda_pair_info's). */
void cuda_emit_pairs(const cu_proj *proj, int n, int tiles_x, int tiles, void *keys, const uint32_t *info,
                     uint32_t *vals, int64_t cap, cudaStream_t s);
/* The stable sort of np pairs by their keys' bits: the double buffers keys / alt and *vals /
 * vals_alt; keys->p and *vals are set to where the sorted ones are. temp:
 * cuda_sort_pairs_bytes(np, tiles, *keys) bytes. */
size_t cuda_sort_pairs_bytes(int np, int tiles, cu_keys keys);
void cuda_sort_pairs(void *temp, size_t bytes, cu_keys *keys, cu_keys alt, uint32_t **vals, uint32_t *vals_alt, int np,
                     int tiles, cudaStream_t s);
/* Each tile's [start, end) in the sorted pairs. With order_scratch (cuda_tile_order_bytes(tiles)
 * bytes) also the tile order, returned (inside the scratch; else NULL): the tiles in decreasing
 * pair count (ties in tile order), the order in which the raster kernels take them, so the
 * heaviest start first and the light ones fill the tail. */
size_t cuda_tile_order_bytes(int tiles);
const uint32_t *cuda_tile_ranges(cu_keys keys, int num_pairs, int tiles, uint2 *range, void *order_scratch,
                                 cudaStream_t s);
/* The tile order of given ranges (as cuda_tile_ranges makes it). */
const uint32_t *cuda_tile_order(const uint2 *range, int tiles, void *scratch, cudaStream_t s);
/* mask[j] for every sorted position j of bins (bins->wmask's layout; keys: the sorted keys): the
 * rectangle test each warp of rasterize and backward_raster would make, made
 * once per pair. */
void cuda_warp_masks(const cu_proj *proj, const cu_bins *bins, cu_keys keys, uint8_t *mask, cudaStream_t s);
/* bk: NULL, or where the chunk states (chunk, may be NULL), each tile's largest contributor count
 * (tile_max_nc, may be NULL) and the blend weights (weight, may be NULL) go. */
void cuda_rasterize(const cu_proj *proj, const cu_bins *bins, int w, int h, float3 bg, cu_raster *out,
                    const cu_buckets *bk, cudaStream_t s);
/* Deterministic gradient sums: each warp total is added as a 64-bit fixed-point integer,
 * round(total * scale), into acc[value][Gaussian] (value: the 9 of CU_PAIR_GRADS); integer sums are
 * the same in any order. The scale is a power of two per class of value (mean2d, conic, opacity,
 * colour): 2^(CU_FX_BITS - e) for the step's largest |dL/drgb| m < 2^e, so that a Gaussian's sum
 * over every pixel of a 2^24-pixel image stays under 2^62 (colour: |w dL/drgb| <= m per pixel;
 * opacity: <= 12 m; mean2d: <= 120 m) while a warp total keeps 2^-CU_FX_BITS of m as its
 * resolution. A conic value grows with the Gaussian's size (d²·G <= 0.74 sigma_max² per pixel), so
 * its totals are first multiplied by the Gaussian's own power of two cu_fx_conic_fac <= 1 /
 * sigma_max², which brings them to <= 5 m per pixel as well. An add is clamped to +-2^61. */
#define CU_FX_CLASSES 4
#define CU_FX_BITS {31, 34, 34, 38}
typedef struct {
    unsigned long long *acc; /* [CU_PAIR_GRADS][n] */
    float *scale;            /* [CU_FX_CLASSES], set on the device by cuda_fx_begin */
    unsigned *max_bits;      /* the step's largest |dL/drgb| as float bits */
    const float *conic;      /* the projected conics (cu_proj.conic) the backward reads */
    int n;
} cu_fx;
__host__ __device__ static inline int cu_fx_class(int value) { return value < 2 ? 0 : value < 5 ? 1 : value < 6 ? 2 : 3; }
#ifdef __CUDACC__
__device__ static inline unsigned long long cu_fx_of(float v, float scale) {
    double q = (double)v * (double)scale;
    q = q > 0x1p61 ? 0x1p61 : q < -0x1p61 ? -0x1p61 : q;
    return (unsigned long long)__double2ll_rn(q);
}
/* A power of two <= 1 / tr(conic^-1) (tr = (a + c) / det = sigma_x² + sigma_y² >= sigma_max²), from
 * float exponents alone, no division: with a + c < 2^ea and det >= 2^(ed-1), tr < 2^(ea-ed+1), so
 * 2^-(ea-ed+1) is within a factor 4 of 1 / tr. 1 for a conic that is not positive definite or
 * whose numbers are not normal floats. Round-to-nearest intrinsics (no fused multiply-add), so
 * the backward and cuda_fx_finish compute the same power. */
__device__ static inline float cu_fx_conic_fac(float a, float b, float c) {
    float det = __fsub_rn(__fmul_rn(a, c), __fmul_rn(b, b)), sum = __fadd_rn(a, c);
    int ed = (int)((__float_as_uint(det) >> 23) & 0xff), ea = (int)((__float_as_uint(sum) >> 23) & 0xff);
    if (!(det > 0.0f) || !(sum > 0.0f) || ed == 0 || ed == 255 || ea == 0 || ea == 255) return 1.0f;
    int e = ea - ed + 1; /* the biases cancel */
    e = e < -60 ? -60 : e > 60 ? 60 : e;
    return __uint_as_float((uint32_t)(127 - e) << 23);
}
#endif
/* Zeroes acc and sets the scales from dl_drgb (count floats); all on the stream. */
void cuda_fx_begin(const cu_fx *fx, const float *dl_drgb, int64_t count, cudaStream_t s);
/* g's 9 arrays = acc / scale, rounded to float. */
void cuda_fx_finish(const cu_fx *fx, cu_proj_grad *g, cudaStream_t s);
/* The per-pixel backward in chunks: float atomics into g, or with fx (deterministic mode) its
 * fixed-point sums (cuda_fx_begin before, cuda_fx_finish after). */
void cuda_backward_raster_pixel(const cu_proj *proj, const cu_bins *bins, int w, int h, float3 bg,
                                const cu_raster *fwd, const float *dl_drgb, const cu_buckets *bk,
                                const cu_chunk_work *work, const cu_fx *fx, cu_proj_grad *g, cudaStream_t s);
/* loss.cu: the target image, read by the loss kernels: a float RGB image (f), or else an 8-bit view
 * of 3 or 4 channels composited on bg as it is read (premul: its colours are premultiplied). */
typedef struct {
    const float *f;
    const uint8_t *pix;
    int channels, premul;
    float3 bg;
} cu_target;
/* Number of per-block partial sums loss needs for a w x h image. */
int cuda_loss_partials(int w, int h);
/* Writes dl_drgb; work: 9 w h floats scratch; partials: cuda_loss_partials doubles x2. The loss
 * value is added to acc[0] (sum), acc[1] += 1 (count), acc[2] += 1 if not finite. *value (device)
 * receives this step's loss when not NULL. */
void cuda_loss(const float *rgb, cu_target target, int w, int h, float ssim_weight, float *dl_drgb, float *work,
               double *partials, double *acc, double *value, cudaStream_t s);
/* score.cu: evaluation scores of a rendered image against the 8-bit ground truth g8 (device,
 * [h][w][3]): p8 = the render quantized as sp_image_quantize, *sse = Σ (p8 − g8)² (device), and
 * per-block SSIM sums (cuda_score_partials of them, channel-major then row-major blocks) whose
 * sum in that order is the SSIM map's sum as sp_ssim_u8 computes it, to rounding. window: the
 * host's sp_ssim_window. */
int cuda_score_partials(int w, int h);
void cuda_score_image(const float *rgb, const uint8_t *g8, uint8_t *p8, int w, int h, const double window[11],
                      double *partial, unsigned long long *sse, cudaStream_t s);
/* adam.cu: one kernel over all groups of n Gaussians (the packed layout). */
typedef struct {
    float lr[6]; /* lr_t (sp_adam_bias) of means, log_scales, quats, opacity, sh_dc, sh_rest */
    float beta1, beta2, eps; /* eps: eps_t */
    int sparse; /* adam.sparse: elements whose gradient is exactly 0 are left alone, unless in view: */
    const uint8_t *seen; /* per Gaussian, 1 = in view (cuda_adam_range; NULL: none; the fused update reads
                            the projection's rectangles instead) */
    int moments16;   /* adam.moments16: m holds the packed moments (moments16_rule.h), v is not touched */
    uint32_t step; /* the packed moments' random bits are drawn for this step (sp_m16_step) */
} cu_adam_args;
/* The update of elements first .. end-1 of n Gaussians' parameters in the packed layout (cu_params_at
 * with cap = n: the buffers' floats first .. end-1); 0 .. n (11 + 3K) is one whole step. */
void cuda_adam_range(float *param, const float *grad, float *m, float *v, int n, int K, int64_t first, int64_t end,
                     const cu_adam_args *a, cudaStream_t s);
void cuda_adam_flat(float *param, const float *grad, float *m, float *v, int64_t count, float lr,
                    const cu_adam_args *a, cudaStream_t s);
/* adam.moments16: float moments m, v of count values into packed words in m, v zeroed
 * (set_gaussians; backend/moments16_rule.h). */
void cuda_m16_pack(float *m, float *v, int64_t count, cudaStream_t s);
/* project.cu: project_back fused with the step's update, for a step whose gradients are not summed
 * with others (no batch, one device): MCMC's regularizer terms (wo = opacity_reg / n, ws =
 * scale_reg / 3n; 0 for none), Adam on p with moments m1, m2, then MCMC's position noise (noise 0
 * for none): the same results as project_back, cuda_mcmc_reg, cuda_adam_range over all n and
 * cuda_mcmc_noise, without the gradients' round trip through memory. */
typedef struct {
    cu_params m1, m2;
    cu_adam_args adam;
    float wo, ws, noise;
    uint64_t seed;
} cu_update;
void cuda_project_back_update(cu_params *p, int n, int K, const sp_camera *cam, int sh_degree, int antialias,
                              const cu_proj *proj, const cu_proj_grad *g, const cu_update *u, float *grad_accum,
                              float *grad_count, float *max_radius, cudaStream_t s);
/* ---- device helpers ---- */
#define CU_GRID(n, b) ((unsigned)(((int64_t)(n) + (b)-1) / (b)))

/* ---- the backend object (cuda_backend.cu; refine.cu reads it) ---- */
#define CU_PROF_RING 4
#define CU_PROF_SPANS 24
typedef struct {
    cudaEvent_t ev[CU_PROF_SPANS][2];
    int stage[CU_PROF_SPANS];
    int num_spans, pending, train;
} cu_prof_set;

typedef struct {
    size_t off;
    int channels;
    sp_camera cam;
} cu_view;

typedef struct {
    sp_backend base;
    cudaStream_t st;
    cudaEvent_t count_ready; /* forward: the pair count and depth span are on the host */
    cu_mem mem;
    int n, K, sh_degree;
    /* n * sp_gaussian_floats(K) floats each, regions at offsets of n; m2 empty (p NULL) under
     * adam.moments16, where m1 holds both moments of a value in one word (cu_keeps_m2) */
    cu_buf params, grads, m1, m2;
    cu_buf stats;                 /* grad_accum[n], grad_count[n], max_radius[n] */
    cu_buf grads_view;            /* batches: this view's gradients, added to grads (grads_pending) */
    cu_buf seen;                  /* sparse Adam, unfused steps: 1 = in view in a step of the sum (n bytes) */
    int grads_pending;            /* grads holds a sum of views not yet given to Adam */
    /* per-Gaussian scratch */
    cu_buf proj_buf, pgrad_buf;
    int scratch_n;
    cu_proj proj;
    cu_proj_grad pgrad;
    /* pairs */
    cu_buf keys, keys_sorted, vals, vals_sorted, fx_acc, fx_aux;
    cu_buf wmask; /* [pair_cap] cu_bins.wmask */
    cu_buf pair_info; /* cuda_pair_info */
    cu_keys sorted_keys; /* the sort's output: keys or keys_sorted */
    uint32_t *sorted_vals;
    int64_t pair_cap;
    int num_pairs;
    cu_buf sort_temp, scan_temp;
    cu_buf ranges;
    cu_buf tile_order;      /* cuda_tile_order's scratch */
    const uint32_t *order;  /* the tiles, most pairs first (inside tile_order) */
    cu_buf tile_max_nc;               /* each tile's largest contributor count (cu_buckets) */
    cu_buf chunk_state, chunk_work;   /* per-pixel backward in chunks (cu_buckets.chunk, cu_chunk_work) */
    cu_buf weights;                   /* blend weights (cu_buckets.weight), allocated when asked for */
    cu_buf score_u8, score_part;      /* evaluation scores (cu_score): 8-bit images, partial sums */
    int tiles_x, tiles_y;
    /* images */
    cu_buf rgb, final_T, n_contrib, dl_drgb, loss_work, partials;
    cu_buf acc; /* double sum, count, non-finite count, last value */
    double *h_acc;   /* pinned */
    uint32_t *h_u32; /* pinned scalars read back */
    /* training views */
    cu_buf view_pix;
    cu_view *views;
    int num_views;
    sp_alpha_mode alpha;
    /* streamed views (stage_view): num_slots device slots of slot_cap bytes in one buffer (slot k at
     * k * slot_stride), two pinned host buffers that take turns, and the event after each one's copy */
    cu_buf slot_pool;
    int num_slots;
    size_t slot_cap, slot_stride;
    cu_view *slot_view; /* [num_slots]; channels 0: the slot holds no image */
    uint8_t *h_ring[2];
    size_t h_ring_cap;
    cudaEvent_t ring_ev[2];
    int ring_next;
    /* profiling */
    cu_prof_set prof[CU_PROF_RING];
    int prof_cur;
    cu_prof_set *prof_active;
    double prof_ms[SP_MAX_STAGES];
    int prof_fused; /* a profiled step ran project_back and adam as one kernel: one row for both */
    long prof_calls;
} cu_backend;

/* Whether the backend keeps a second-moment store: not with adam.moments16 (one word a value in
 * m1 holds both moments), which leaves three of the four per-value stores (params, grads, m1). */
static inline int cu_keeps_m2(const cu_backend *b) { return !b->base.cfg.moments16; }

/* A second-moment store of `bytes` into *m2, or none (p NULL) under adam.moments16: 0, or -1 with
 * the error set. */
static inline int cu_alloc_m2(cu_backend *b, cu_buf *m2, size_t bytes) {
    m2->p = NULL;
    m2->bytes = 0;
    return cu_keeps_m2(b) ? cu_alloc(&b->mem, m2, bytes, "Adam v") : 0;
}

/* Profiling spans (no-ops unless cfg.profile and a set is active), one profiling row per stage of
 * backend.h (stage: SP_STAGE_PROJECT .. SP_STAGE_REFINE). */
void cu_prof_begin(cu_backend *b, int stage);
void cu_prof_end(cu_backend *b);
/* Starts/ends a profiled span set (train_step, refine). */
void cu_prof_open(cu_backend *b, int train);
void cu_prof_close(cu_backend *b);

static inline int cu_floats(int K) { return 3 + 3 + 4 + 1 + 3 * K; }

/* Batches (cuda_backend.cu), for the replicated backend: Adam with the gradients summed so far,
 * which starts a new sum; and an empty contribution (zero gradients) for a replica with no view
 * in a batch. Both asynchronous on b->st. */
int cuda_backend_adam(cu_backend *b, const sp_step_args *a);
/* Adam on the floats first .. end-1 of the parameter buffer only (the replicated backend updates
 * each chunk as soon as its all-reduce lands); the chunks of a batch together equal one
 * cuda_backend_adam, bit for bit. */
int cuda_backend_adam_range(cu_backend *b, const sp_step_args *a, int64_t first, int64_t end);
void cuda_backend_zero_grads(cu_backend *b);

/* refine.cu */
int cuda_refine(cu_backend *b, const sp_refine_args *a, sp_refine_result *r);

/* mcmc.cu (refine.strategy = "mcmc"): the regularizer gradients added to G, the position noise on
 * P's means (asynchronous on st); reading the opacity logits and log-scales to the host, applying
 * a plan (backend.h; grows the buffers when it adds Gaussians, resets gradients and statistics). */
void cuda_mcmc_reg(const cu_params *P, cu_params *G, int n, float opacity_reg, float scale_reg, cudaStream_t st);
void cuda_mcmc_noise(cu_params *P, int n, float noise_scale, uint64_t seed, cudaStream_t st);
int cuda_mcmc_read(cu_backend *b, float *opacity_logits, float *log_scales);
int cuda_mcmc_apply(cu_backend *b, const sp_mcmc_plan *p);
/* backend.h's mcmc_refine: the decisions on the device (backend/mcmc_rule.h). */
int cuda_mcmc_refine(cu_backend *b, float dead_opacity, int add, uint64_t seed, int *relocated, int *added);

/* reorder.cu: backend.h's reorder (the Gaussians in Morton order of their means). */
int cuda_reorder(cu_backend *b);

#endif
