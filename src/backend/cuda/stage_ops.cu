/* stage_ops.cu — the CUDA backend's stage table (backend/stage_ops.h): one stage at a time over
 * host arrays, for the parity harness and its perf mode. Every call runs the kernels a training
 * step runs, under the backend's config (deterministic mode, per-splat backward), on the backend's
 * device: it allocates what it needs in a small arena, runs on the default stream, copies the
 * results back and frees the arena. Also the host-run kernel math of cuda_test_api.h. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cub/cub.cuh>

#include "backend/cuda/cuda_internal.h"
#include "backend/cuda/cuda_test_api.h"
extern "C" {
#include "backend/ref/stages.h" /* sp_adam_bias; C linkage before stage_ops.h includes it again */
}
#include "backend/stage_ops.h"
#include "backend/tile_cull.h"

#define ARENA_MAX 48
typedef struct {
    cu_mem mem;
    cu_buf bufs[ARENA_MAX];
    int n;
    int failed;
} arena;

/* Selects the backend's device; a fresh arena. */
static void arena_begin(arena *A, sp_backend *b) {
    memset(A, 0, sizeof *A);
    if (cu_check(cudaSetDevice(b->cfg.device), "select device")) A->failed = 1;
}

static void *arena_alloc(arena *A, size_t bytes) {
    if (A->failed || A->n >= ARENA_MAX) {
        A->failed = 1;
        return NULL;
    }
    cu_buf *b = &A->bufs[A->n];
    if (cu_alloc(&A->mem, b, bytes, "test buffer")) {
        A->failed = 1;
        return NULL;
    }
    A->n++;
    cudaMemset(b->p, 0, b->bytes);
    return b->p;
}

static void *arena_up(arena *A, const void *host, size_t bytes) {
    void *d = arena_alloc(A, bytes);
    if (d && host && bytes) cudaMemcpy(d, host, bytes, cudaMemcpyHostToDevice);
    return d;
}

static int arena_done(arena *A, const char *what) {
    cudaError_t err = cudaDeviceSynchronize();
    for (int i = 0; i < A->n; i++) cu_free(&A->mem, &A->bufs[i]);
    A->n = 0;
    if (A->failed) return -1;
    return cu_check(err != cudaSuccess ? err : cudaGetLastError(), what);
}

static void down(void *host, const void *dev, size_t bytes) {
    if (bytes) cudaMemcpy(host, dev, bytes, cudaMemcpyDeviceToHost);
}

static cu_params upload_params(arena *A, const sp_params *p) {
    size_t n = (size_t)p->n;
    cu_params d;
    d.means = (float *)arena_up(A, p->means, n * 3 * 4);
    d.log_scales = (float *)arena_up(A, p->log_scales, n * 3 * 4);
    d.quats = (float *)arena_up(A, p->quats, n * 4 * 4);
    d.opacity_logits = (float *)arena_up(A, p->opacity_logits, n * 4);
    d.sh = (float *)arena_up(A, p->sh, n * 3 * (size_t)p->K * 4);
    return d;
}

/* Device copy of a host projection (touched/offsets recomputed from rect and the tile test). */
static cu_proj upload_proj(arena *A, const sp_proj *p, int n) {
    size_t N = (size_t)n;
    cu_proj d;
    d.mean2d = (float *)arena_up(A, p->mean2d, N * 2 * 4);
    d.conic = (float *)arena_up(A, p->conic, N * 3 * 4);
    d.depth = (float *)arena_up(A, p->depth, N * 4);
    d.opacity = (float *)arena_up(A, p->opacity, N * 4);
    d.color = (float *)arena_up(A, p->color, N * 3 * 4);
    d.radius = (float *)arena_up(A, p->radius, N * 4);
    d.rect = (int32_t *)arena_up(A, p->rect, N * 4 * 4);
    d.clamped = (uint8_t *)arena_up(A, p->clamped, N * 3);
    uint32_t *touched = (uint32_t *)malloc((N ? N : 1) * 4), *offs = (uint32_t *)malloc((N ? N : 1) * 4);
    uint32_t acc = 0;
    for (size_t i = 0; i < N; i++) {
        const int32_t *r = p->rect + 4 * i;
        const float *m = p->mean2d + 2 * i, *c = p->conic + 3 * i;
        sp_tile_ellipse_t te = sp_tile_ellipse(m[0], m[1], c[0], c[1], c[2], p->opacity[i]);
        touched[i] = 0;
        for (int ty = r[1]; ty < r[3]; ty++)
            for (int tx = r[0]; tx < r[2]; tx++) touched[i] += (uint32_t)sp_tile_hit(&te, tx, ty);
        acc += touched[i];
        offs[i] = acc;
    }
    d.touched = (uint32_t *)arena_up(A, touched, N * 4);
    d.offsets = (uint32_t *)arena_up(A, offs, N * 4);
    free(touched);
    free(offs);
    float4 *rec = (float4 *)calloc(3 * (N ? N : 1), sizeof(float4));
    for (size_t i = 0; rec && i < N; i++) sp_proj_record(p, i, &rec[3 * i].x);
    d.splat = rec ? (float4 *)arena_up(A, rec, N * 3 * sizeof(float4)) : NULL;
    if (!rec) A->failed = 1;
    free(rec);
    return d;
}

/* Whether project's records (cu_proj.splat) hold what it wrote to the arrays, for every Gaussian
 * with a tile; 0 if so. */
static int check_splat_records(const sp_proj *out, const float4 *dev, size_t N) {
    float4 *rec = (float4 *)malloc(3 * (N ? N : 1) * sizeof(float4));
    if (!rec) return sp_error("stage project: out of memory");
    down(rec, dev, N * 3 * sizeof(float4));
    size_t bad = N;
    for (size_t i = 0; i < N && bad == N; i++) {
        const int32_t *r = out->rect + 4 * i;
        if (!(r[0] < r[2] && r[1] < r[3])) continue;
        float want[12];
        sp_proj_record(out, i, want);
        if (memcmp(want, rec + 3 * i, sizeof want)) bad = i;
    }
    free(rec);
    return bad == N ? 0 : sp_error("stage project: Gaussian %zu's splat record differs from its arrays", bad);
}

static cu_bins upload_bins(arena *A, const sp_bins *b) {
    cu_bins d;
    d.tiles_x = b->tiles_x;
    d.tiles_y = b->tiles_y;
    d.num_pairs = (int)b->num_pairs;
    d.ids = (const uint32_t *)arena_up(A, b->ids, (size_t)b->num_pairs * 4);
    int tiles = b->tiles_x * b->tiles_y;
    d.range = (const uint2 *)arena_up(A, b->range, (size_t)tiles * 8);
    /* the kernels take the tiles heaviest first, as in training: the results must not depend on it */
    void *scratch = arena_alloc(A, cuda_tile_order_bytes(tiles));
    d.order = scratch ? cuda_tile_order(d.range, tiles, scratch, 0) : NULL;
    d.wmask = NULL; /* with_masks adds them once proj is on the device */
    return d;
}

/* The warp masks of b's pairs (cuda_warp_masks; the tile of each position from the ranges, in
 * 64-bit keys: a training step's 32-bit ones are checked through render and train_step), which
 * rasterize and backward_raster read. */
static void with_masks(arena *A, const sp_bins *b, const cu_proj *d, cu_bins *db) {
    size_t P = (size_t)b->num_pairs;
    uint64_t *keys = (uint64_t *)malloc((P ? P : 1) * 8);
    if (!keys) {
        A->failed = 1;
        return;
    }
    for (int t = 0; t < b->tiles_x * b->tiles_y; t++)
        for (uint32_t j = b->range[2 * t]; j < b->range[2 * t + 1]; j++) keys[j] = (uint64_t)t << 32;
    const uint64_t *dk = (const uint64_t *)arena_up(A, keys, P * 8);
    free(keys);
    uint8_t *wmask = (uint8_t *)arena_alloc(A, P ? P : 1);
    if (A->failed) return;
    cu_keys k = {(void *)dk, 0, 32};
    cuda_warp_masks(d, db, k, wmask, 0);
    db->wmask = wmask;
}

static int st_project(sp_backend *b, const sp_params *p, const sp_camera *cam, int sh_degree, sp_proj *out) {
    arena A;
    arena_begin(&A, b);
    int n = p->n;
    size_t N = (size_t)n;
    cu_params P = upload_params(&A, p);
    cu_proj d;
    d.mean2d = (float *)arena_alloc(&A, N * 2 * 4);
    d.conic = (float *)arena_alloc(&A, N * 3 * 4);
    d.depth = (float *)arena_alloc(&A, N * 4);
    d.opacity = (float *)arena_alloc(&A, N * 4);
    d.color = (float *)arena_alloc(&A, N * 3 * 4);
    d.radius = (float *)arena_alloc(&A, N * 4);
    d.rect = (int32_t *)arena_alloc(&A, N * 4 * 4);
    d.clamped = (uint8_t *)arena_alloc(&A, N * 3);
    d.touched = (uint32_t *)arena_alloc(&A, N * 4);
    d.offsets = (uint32_t *)arena_alloc(&A, N * 4);
    d.splat = (float4 *)arena_alloc(&A, N * 3 * sizeof(float4));
    int rc = 0;
    if (!A.failed) {
        cuda_project(&P, n, p->K, cam, sh_degree, b->cfg.antialias, &d, 0);
        down(out->mean2d, d.mean2d, N * 2 * 4);
        down(out->conic, d.conic, N * 3 * 4);
        down(out->depth, d.depth, N * 4);
        down(out->opacity, d.opacity, N * 4);
        down(out->color, d.color, N * 3 * 4);
        down(out->radius, d.radius, N * 4);
        down(out->rect, d.rect, N * 4 * 4);
        down(out->clamped, d.clamped, N * 3);
        rc = check_splat_records(out, d.splat, N);
    }
    int done = arena_done(&A, "stage project");
    return rc ? rc : done;
}

/* emit_pairs, sort, tile_ranges as forward() runs them (the same in both modes: the pairs' places
 * come from a scan and the sort is stable, so the lists are deterministic). */
static int st_bin(sp_backend *b, const sp_proj *proj, int n, const sp_camera *cam, sp_bins *bins) {
    arena A;
    arena_begin(&A, b);
    int tiles_x = (cam->width + CU_TILE - 1) / CU_TILE, tiles_y = (cam->height + CU_TILE - 1) / CU_TILE;
    int tiles = tiles_x * tiles_y;
    cu_proj d = upload_proj(&A, proj, n);
    uint32_t *info_d = (uint32_t *)arena_alloc(&A, 3 * 4), info[3] = {0, 0xffffffffu, 0xffffffffu};
    if (!A.failed) {
        cuda_pair_info(&d, n, info_d, 0);
        down(info, info_d, sizeof info);
    }
    uint32_t np = info[0];
    size_t P = np ? np : 1;
    cu_keys keys = cuda_pair_keys(arena_alloc(&A, P * 8), tiles, info), keys_s = keys;
    keys_s.p = arena_alloc(&A, P * 8);
    uint32_t *vals = (uint32_t *)arena_alloc(&A, P * 4), *vals_s = (uint32_t *)arena_alloc(&A, P * 4);
    uint2 *range = (uint2 *)arena_alloc(&A, (size_t)tiles * 8);
    size_t tb = cuda_sort_pairs_bytes((int)np, tiles, keys);
    void *tmp = arena_alloc(&A, tb);
    bins->tiles_x = tiles_x;
    bins->tiles_y = tiles_y;
    bins->num_pairs = np;
    bins->cap = np;
    bins->ids = (uint32_t *)realloc(bins->ids, P * 4); /* bins start zeroed, as for cpu_bin */
    bins->range = (uint32_t *)realloc(bins->range, (size_t)(tiles ? tiles : 1) * 8);
    if (!A.failed) {
        cuda_emit_pairs(&d, n, tiles_x, tiles, keys.p, info_d, vals, (int64_t)np, 0);
        cuda_sort_pairs(tmp, tb, &keys, keys_s, &vals, vals_s, (int)np, tiles, 0);
        cuda_tile_ranges(keys, (int)np, tiles, range, NULL, 0);
        down(bins->ids, vals, (size_t)np * 4);
        down(bins->range, range, (size_t)tiles * 8);
    }
    return arena_done(&A, "stage bin");
}

static cu_raster alloc_raster(arena *A, int w, int h) {
    size_t np = (size_t)w * h;
    cu_raster r;
    r.rgb = (float *)arena_alloc(A, np * 3 * 4);
    r.final_T = (float *)arena_alloc(A, np * 4);
    r.n_contrib = (int32_t *)arena_alloc(A, np * 4);
    return r;
}

static int st_rasterize(sp_backend *b, const sp_proj *proj, int n, const sp_bins *bins, const sp_camera *cam,
                        const float bg[3], sp_raster_out *out) {
    arena A;
    arena_begin(&A, b);
    int w = cam->width, h = cam->height;
    size_t np = (size_t)w * h;
    cu_proj d = upload_proj(&A, proj, n);
    cu_bins db = upload_bins(&A, bins);
    with_masks(&A, bins, &d, &db);
    cu_raster r = alloc_raster(&A, w, h);
    if (!A.failed) {
        cuda_rasterize(&d, &db, w, h, make_float3(bg[0], bg[1], bg[2]), &r, NULL, 0);
        down(out->rgb, r.rgb, np * 3 * 4);
        down(out->final_T, r.final_T, np * 4);
        down(out->n_contrib, r.n_contrib, np * 4);
    }
    return arena_done(&A, "stage rasterize");
}

/* backward_raster under the backend's config: deterministic (64-bit fixed-point sums, cu_fx) or
 * float atomics. It runs the GPU forward pass first (which leaves the state the
 * backward reads: the chunk states and each tile's largest contributor count) and uses that pass's
 * output. */
static int st_backward_raster(sp_backend *b, const sp_proj *proj, int n, const sp_bins *bins, const sp_camera *cam,
                              const float bg[3], const sp_raster_out *fwd, const float *dl_drgb, sp_proj_grad *g) {
    int deterministic = b->cfg.deterministic;
    arena A;
    arena_begin(&A, b);
    int w = cam->width, h = cam->height;
    size_t np = (size_t)w * h, N = (size_t)n;
    cu_proj d = upload_proj(&A, proj, n);
    cu_bins db = upload_bins(&A, bins);
    cu_raster r;
    r.rgb = (float *)arena_up(&A, fwd->rgb, np * 3 * 4);
    r.final_T = (float *)arena_up(&A, fwd->final_T, np * 4);
    r.n_contrib = (int32_t *)arena_up(&A, fwd->n_contrib, np * 4);
    const float *dl = (const float *)arena_up(&A, dl_drgb, np * 3 * 4);
    cu_proj_grad G;
    G.mean2d = (float *)arena_alloc(&A, N * 2 * 4);
    G.conic = (float *)arena_alloc(&A, N * 3 * 4);
    G.opacity = (float *)arena_alloc(&A, N * 4);
    G.color = (float *)arena_alloc(&A, N * 3 * 4);
    cu_fx fx = {NULL, NULL, NULL, d.conic, n};
    if (deterministic) {
        fx.acc = (unsigned long long *)arena_alloc(&A, (N ? N : 1) * CU_PAIR_GRADS * 8);
        fx.scale = (float *)arena_alloc(&A, 128);
        fx.max_bits = (unsigned *)arena_alloc(&A, 128);
    }
    int tiles = db.tiles_x * db.tiles_y;
    with_masks(&A, bins, &d, &db);
    cu_buckets bk = {NULL, NULL, NULL};
    bk.tile_max_nc = (int32_t *)arena_alloc(&A, (size_t)tiles * 4);
    bk.chunk = (float4 *)arena_alloc(&A, cu_chunk_count(bins->num_pairs, tiles) * CU_BLOCK * sizeof(float4));
    void *work_scratch = arena_alloc(&A, cuda_chunk_items_bytes(tiles, bins->num_pairs));
    if (!A.failed) {
        float3 b3 = make_float3(bg[0], bg[1], bg[2]);
        /* the GPU forward pass replaces fwd: it leaves the state the backward reads */
        cuda_rasterize(&d, &db, w, h, b3, &r, &bk, 0);
        cu_chunk_work work = cuda_chunk_items(bk.tile_max_nc, tiles, bins->num_pairs, work_scratch, 0);
        if (deterministic) cuda_fx_begin(&fx, dl, 3 * (int64_t)np, 0);
        cuda_backward_raster_pixel(&d, &db, w, h, b3, &r, dl, &bk, &work, deterministic ? &fx : NULL, &G, 0);
        if (deterministic) cuda_fx_finish(&fx, &G, 0);
        down(g->mean2d, G.mean2d, N * 2 * 4);
        down(g->conic, G.conic, N * 3 * 4);
        down(g->opacity, G.opacity, N * 4);
        down(g->color, G.color, N * 3 * 4);
    }
    return arena_done(&A, "stage backward_raster");
}

static int st_project_back(sp_backend *b, const sp_params *p, const sp_camera *cam, int sh_degree,
                           const sp_proj *proj, const sp_proj_grad *g, sp_params_grad *out) {
    arena A;
    arena_begin(&A, b);
    int n = p->n;
    size_t N = (size_t)n, K = (size_t)p->K;
    cu_params P = upload_params(&A, p);
    cu_proj d = upload_proj(&A, proj, n);
    cu_proj_grad G;
    G.mean2d = (float *)arena_up(&A, g->mean2d, N * 2 * 4);
    G.conic = (float *)arena_up(&A, g->conic, N * 3 * 4);
    G.opacity = (float *)arena_up(&A, g->opacity, N * 4);
    G.color = (float *)arena_up(&A, g->color, N * 3 * 4);
    cu_params O;
    O.means = (float *)arena_alloc(&A, N * 3 * 4);
    O.log_scales = (float *)arena_alloc(&A, N * 3 * 4);
    O.quats = (float *)arena_alloc(&A, N * 4 * 4);
    O.opacity_logits = (float *)arena_alloc(&A, N * 4);
    O.sh = (float *)arena_alloc(&A, N * 3 * K * 4);
    if (!A.failed) {
        cuda_project_back(&P, n, p->K, cam, sh_degree, b->cfg.antialias, &d, &G, &O, NULL, NULL, NULL, 0);
        down(out->means, O.means, N * 3 * 4);
        down(out->log_scales, O.log_scales, N * 3 * 4);
        down(out->quats, O.quats, N * 4 * 4);
        down(out->opacity_logits, O.opacity_logits, N * 4);
        down(out->sh, O.sh, N * 3 * K * 4);
    }
    return arena_done(&A, "stage project_back");
}

static int st_loss(sp_backend *b, const float *rgb, const float *target, int w, int h, float ssim_weight,
                   double *loss, float *dl_drgb) {
    arena A;
    arena_begin(&A, b);
    size_t np = (size_t)w * h;
    const float *dr = (const float *)arena_up(&A, rgb, np * 3 * 4);
    const float *dt = (const float *)arena_up(&A, target, np * 3 * 4);
    float *dl = (float *)arena_alloc(&A, np * 3 * 4);
    float *work = (float *)arena_alloc(&A, np * 9 * 4);
    double *partials = (double *)arena_alloc(&A, (size_t)cuda_loss_partials(w, h) * 2 * 8);
    double *acc = (double *)arena_alloc(&A, 4 * 8);
    if (!A.failed) {
        cu_target t = {dt, NULL, 3, 0, make_float3(0.0f, 0.0f, 0.0f)};
        cuda_loss(dr, t, w, h, ssim_weight, dl_drgb ? dl : NULL, work, partials, acc, acc + 3, 0);
        down(loss, acc + 3, 8);
        if (dl_drgb) down(dl_drgb, dl, np * 3 * 4);
    }
    return arena_done(&A, "stage loss");
}

static int st_adam(sp_backend *b, float *param, const float *grad, float *m, float *v, int64_t count, float lr,
                   float beta1, float beta2, float eps, int step, int sparse) {
    arena A;
    arena_begin(&A, b);
    size_t bytes = (size_t)count * 4;
    float *dp = (float *)arena_up(&A, param, bytes), *dg = (float *)arena_up(&A, grad, bytes);
    float *dm = (float *)arena_up(&A, m, bytes), *dv = (float *)arena_up(&A, v, bytes);
    if (!A.failed) {
        cu_adam_args a;
        memset(&a, 0, sizeof a);
        sp_adam_bias_t bias = sp_adam_bias(beta1, beta2, eps, step);
        a.beta1 = beta1, a.beta2 = beta2, a.eps = bias.eps;
        a.sparse = sparse;
        cuda_adam_flat(dp, dg, dm, dv, count, sp_adam_lr(&bias, lr), &a, 0);
        down(param, dp, bytes);
        down(m, dm, bytes);
        down(v, dv, bytes);
    }
    return arena_done(&A, "stage adam");
}

/* Copies a host store into a device region layout (regions at offsets of n). */
static void store_to_dev(float *dev, const sp_gaussians *g) {
    size_t n = (size_t)g->n;
    cu_params d = cu_params_at(dev, g->n, g->K);
    cudaMemcpy(d.means, g->means, n * 12, cudaMemcpyHostToDevice);
    cudaMemcpy(d.log_scales, g->log_scales, n * 12, cudaMemcpyHostToDevice);
    cudaMemcpy(d.quats, g->quats, n * 16, cudaMemcpyHostToDevice);
    cudaMemcpy(d.opacity_logits, g->opacity_logits, n * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(d.sh, g->sh, n * 12 * (size_t)g->K, cudaMemcpyHostToDevice);
}

static void dev_to_store(sp_gaussians *g, const float *dev, int n) {
    sp_gaussians_reserve(g, n > 0 ? n : 1);
    g->n = n;
    size_t N = (size_t)n;
    cu_params d = cu_params_at((float *)dev, n, g->K);
    down(g->means, d.means, N * 12);
    down(g->log_scales, d.log_scales, N * 12);
    down(g->quats, d.quats, N * 16);
    down(g->opacity_logits, d.opacity_logits, N * 4);
    down(g->sh, d.sh, N * 12 * (size_t)g->K);
}

static void temp_backend_close(cu_backend *b) {
    cu_free(&b->mem, &b->params);
    cu_free(&b->mem, &b->grads);
    cu_free(&b->mem, &b->m1);
    cu_free(&b->mem, &b->m2);
    cu_free(&b->mem, &b->stats);
    if (b->h_u32) cudaFreeHost(b->h_u32);
    free(b);
}

/* A backend object of its own for refine and mcmc_apply, holding copies of the stores g, m, v on the
 * device (and buffers for the densification statistics and gradients those stages expect). NULL
 * on failure (the error is set). */
static cu_backend *temp_backend_open(sp_backend *base, const sp_gaussians *g, const sp_gaussians *m,
                                     const sp_gaussians *v) {
    if (cu_check(cudaSetDevice(base->cfg.device), "select device")) return NULL;
    cu_backend *b = SP_NEW(cu_backend, 1);
    b->base = *base;
    b->base.cfg.moments16 = 0; /* the stores given are float m and v, each of its own (cu_keeps_m2) */
    b->st = 0;
    b->n = g->n;
    b->K = g->K;
    b->sh_degree = g->sh_degree;
    b->mem.num_gaussians = g->n;
    size_t N = (size_t)(g->n ? g->n : 1), bytes = N * cu_floats(g->K) * sizeof(float);
    if (cu_check(cudaMallocHost((void **)&b->h_u32, 4 * sizeof(uint32_t)), "pinned memory") ||
        cu_alloc(&b->mem, &b->params, bytes, "parameters") || cu_alloc(&b->mem, &b->grads, bytes, "gradients") ||
        cu_alloc(&b->mem, &b->m1, bytes, "Adam m") || cu_alloc(&b->mem, &b->m2, bytes, "Adam v") ||
        cu_alloc(&b->mem, &b->stats, N * 3 * sizeof(float) + 16, "statistics")) {
        temp_backend_close(b);
        return NULL;
    }
    if (g->n) {
        store_to_dev((float *)b->params.p, g);
        store_to_dev((float *)b->m1.p, m);
        store_to_dev((float *)b->m2.p, v);
    }
    return b;
}

/* Copies the stores back (their sizes follow b->n) and waits: 0, or -1 with the error set. */
static int temp_backend_read(cu_backend *b, sp_gaussians *g, sp_gaussians *m, sp_gaussians *v, const char *what) {
    dev_to_store(g, (const float *)b->params.p, b->n);
    dev_to_store(m, (const float *)b->m1.p, b->n);
    dev_to_store(v, (const float *)b->m2.p, b->n);
    return cu_check(cudaDeviceSynchronize(), what);
}

/* refine on a backend object of its own holding the given stores and statistics: cuda_refine, the
 * function the backend's refine op runs. */
static int st_refine(sp_backend *base, sp_gaussians *g, sp_gaussians *m, sp_gaussians *v, const float *grad_accum,
                     const int32_t *grad_count, const float *max_radius, const sp_refine_args *a,
                     sp_refine_result *r) {
    cu_backend *b = temp_backend_open(base, g, m, v);
    if (!b) return -1;
    size_t N = (size_t)g->n;
    float *st = (float *)malloc((N ? N : 1) * 3 * sizeof(float));
    for (size_t i = 0; i < N; i++) st[i] = grad_accum[i], st[N + i] = (float)grad_count[i], st[2 * N + i] = max_radius[i];
    cudaMemcpy(b->stats.p, st, N * 3 * sizeof(float), cudaMemcpyHostToDevice);
    free(st);
    int rc = cuda_refine(b, a, r) ? -1 : temp_backend_read(b, g, m, v, "stage refine");
    temp_backend_close(b);
    return rc;
}

/* MCMC terms of a step: the kernels train_step runs, on the stores uploaded in the region layout. */
static int st_mcmc_step(sp_backend *base, sp_gaussians *g, sp_gaussians *grad, float opacity_reg, float scale_reg,
                        float noise_scale, uint64_t seed) {
    if (cu_check(cudaSetDevice(base->cfg.device), "select device")) return -1;
    arena A;
    arena_begin(&A, base);
    size_t floats = (size_t)(g->n ? g->n : 1) * cu_floats(g->K);
    float *dp = (float *)arena_alloc(&A, floats * 4), *dg = (float *)arena_alloc(&A, floats * 4);
    if (dp && dg && g->n) {
        store_to_dev(dp, g);
        store_to_dev(dg, grad);
        cu_params P = cu_params_at(dp, g->n, g->K), G = cu_params_at(dg, g->n, g->K);
        cuda_mcmc_reg(&P, &G, g->n, opacity_reg, scale_reg, 0);
        cuda_mcmc_noise(&P, g->n, noise_scale, seed, 0);
        dev_to_store(g, dp, g->n);
        dev_to_store(grad, dg, g->n);
    }
    return arena_done(&A, "stage mcmc_step");
}

/* A plan applied by cuda_mcmc_apply on a backend object of its own holding the given stores. */
static int st_mcmc_apply(sp_backend *base, sp_gaussians *g, sp_gaussians *m, sp_gaussians *v, const sp_mcmc_plan *p) {
    cu_backend *b = temp_backend_open(base, g, m, v);
    if (!b) return -1;
    int rc = cuda_mcmc_apply(b, p) ? -1 : temp_backend_read(b, g, m, v, "stage mcmc_apply");
    temp_backend_close(b);
    return rc;
}

static cu_params host_params(const sp_params *p) {
    cu_params d;
    d.means = (float *)p->means, d.log_scales = (float *)p->log_scales, d.quats = (float *)p->quats;
    d.opacity_logits = (float *)p->opacity_logits, d.sh = (float *)p->sh;
    return d;
}

static int host_project_with(int antialias, const sp_params *p, const sp_camera *cam, int sh_degree, sp_proj *out) {
    size_t N = (size_t)p->n;
    cu_params P = host_params(p);
    cu_proj d;
    d.mean2d = out->mean2d, d.conic = out->conic, d.depth = out->depth, d.opacity = out->opacity;
    d.color = out->color, d.radius = out->radius, d.rect = out->rect, d.clamped = out->clamped;
    memset(out->mean2d, 0, N * 8), memset(out->conic, 0, N * 12), memset(out->depth, 0, N * 4);
    memset(out->opacity, 0, N * 4), memset(out->color, 0, N * 12), memset(out->clamped, 0, N * 3);
    d.touched = (uint32_t *)malloc((N ? N : 1) * 4);
    d.offsets = NULL;
    d.splat = NULL;
    cuda_project_host(&P, p->n, p->K, cam, sh_degree, antialias, &d);
    free(d.touched);
    return 0;
}

static int host_project_back_with(int antialias, const sp_params *p, const sp_camera *cam, int sh_degree,
                                  const sp_proj *proj, const sp_proj_grad *g, sp_params_grad *out) {
    cu_params P = host_params(p);
    cu_proj d;
    d.mean2d = proj->mean2d, d.conic = proj->conic, d.depth = proj->depth, d.opacity = proj->opacity;
    d.color = proj->color, d.radius = proj->radius, d.rect = proj->rect, d.clamped = proj->clamped;
    d.touched = NULL, d.offsets = NULL, d.splat = NULL;
    cu_proj_grad G;
    G.mean2d = g->mean2d, G.conic = g->conic, G.opacity = g->opacity, G.color = g->color;
    cu_params O;
    O.means = out->means, O.log_scales = out->log_scales, O.quats = out->quats;
    O.opacity_logits = out->opacity_logits, O.sh = out->sh;
    cuda_project_back_host(&P, p->n, p->K, cam, sh_degree, antialias, &d, &G, &O);
    return 0;
}

/* The stage-table signatures, without and with the antialias filter (b is NULL here). */
static int host_project(sp_backend *b, const sp_params *p, const sp_camera *cam, int sh_degree, sp_proj *out) {
    return host_project_with(0, p, cam, sh_degree, out);
}
static int host_project_aa(sp_backend *b, const sp_params *p, const sp_camera *cam, int sh_degree, sp_proj *out) {
    return host_project_with(1, p, cam, sh_degree, out);
}
static int host_project_back(sp_backend *b, const sp_params *p, const sp_camera *cam, int sh_degree,
                             const sp_proj *proj, const sp_proj_grad *g, sp_params_grad *out) {
    return host_project_back_with(0, p, cam, sh_degree, proj, g, out);
}
static int host_project_back_aa(sp_backend *b, const sp_params *p, const sp_camera *cam, int sh_degree,
                                const sp_proj *proj, const sp_proj_grad *g, sp_params_grad *out) {
    return host_project_back_with(1, p, cam, sh_degree, proj, g, out);
}

/* The table hung on the backend's ops (cuda_backend.cu). */
extern "C" const sp_stage_ops cuda_stage_ops = {
    st_project, st_bin, st_rasterize, st_backward_raster, st_project_back, st_loss, st_adam, st_refine,
    st_mcmc_step, st_mcmc_apply,
};

/* project and project_back with the kernels' per-Gaussian code run on the host (no GPU needed). */
static const sp_stage_ops k_host_math_ops = {
    host_project, NULL, NULL, NULL, host_project_back, NULL, NULL, NULL,
};
static const sp_stage_ops k_host_math_ops_aa = {
    host_project_aa, NULL, NULL, NULL, host_project_back_aa, NULL, NULL, NULL,
};

extern "C" const struct sp_stage_ops *cuda_host_math_stages(int antialias) {
    return antialias ? &k_host_math_ops_aa : &k_host_math_ops;
}
