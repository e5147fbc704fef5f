/* cuda_backend.cu — the CUDA backend behind backend.h: device buffers with memory accounting,
 * training views kept on the device as 8-bit images, the train_step orchestration (every stage
 * submitted on one stream), loss accumulation on the device, render, parameter transfer and
 * per-stage profiling with CUDA events.
 *
 * Host waits per training step: one. The number of (tile, Gaussian) pairs is read back (a 4-byte
 * async copy) after the prefix sum of `emit_pairs`, because the radix sort takes its length on the
 * host; buffers sized by it only grow. Everything else, including the loss, stays on the device
 * until take_loss. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cub/cub.cuh>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_internal.h"
#include "backend/tile_cull.h"

extern "C" {
#include "backend/ref/loss.h"
#include "backend/ref/mcmc.h" /* cpu_mcmc_weights: the regularizers' weights, as the host computes them */
#include "backend/ref/stages.h" /* sp_adam_bias: the update's factors, as the reference makes them */
}

/* ---- memory ---- */
int cu_check(cudaError_t err, const char *what) {
    if (err == cudaSuccess) return 0;
    return sp_error("cuda: %s: %s", what, cudaGetErrorString(err));
}

int cu_alloc(cu_mem *mem, cu_buf *b, size_t bytes, const char *what) {
    b->p = NULL;
    b->bytes = 0;
    if (bytes == 0) bytes = 16;
    cudaError_t err = cudaMalloc(&b->p, bytes);
    if (err != cudaSuccess) {
        cudaGetLastError(); /* clear the sticky-free error state */
        b->p = NULL;
        /* the same shape as the host's out-of-memory errors (core.h): what, how much, what to change */
        char need[32], used[32], peak[32];
        snprintf(need, sizeof need, "%s", sp_bytes_str((double)bytes));
        snprintf(used, sizeof used, "%s", sp_bytes_str((double)mem->cur));
        snprintf(peak, sizeof peak, "%s", sp_bytes_str((double)mem->peak));
        return sp_error("out of GPU memory: %s for the %s (%d Gaussians; %s already in use, peak %s); lower "
                        "refine.capacity (fewer Gaussians) or raise data.downscale (smaller images)",
                        need, what, mem->num_gaussians, used, peak);
    }
    b->bytes = bytes;
    mem->cur += (int64_t)bytes;
    if (mem->cur > mem->peak) mem->peak = mem->cur;
    return 0;
}

void cu_free(cu_mem *mem, cu_buf *b) {
    if (b->p) {
        cudaFree(b->p);
        mem->cur -= (int64_t)b->bytes;
    }
    b->p = NULL;
    b->bytes = 0;
}

int cu_reserve(cu_mem *mem, cu_buf *b, size_t bytes, const char *what) {
    if (b->p && b->bytes >= bytes) return 0;
    size_t want = b->p ? b->bytes + b->bytes / 2 : bytes;
    if (want < bytes) want = bytes;
    cu_free(mem, b);
    if (cu_alloc(mem, b, want, what) == 0) return 0;
    return cu_alloc(mem, b, bytes, what); /* the 1.5x slack did not fit: try the exact size */
}

/* ---- profiling ---- */
static void prof_harvest(cu_backend *b, cu_prof_set *ps) {
    if (!ps->pending) return;
    for (int i = 0; i < ps->num_spans; i++) {
        float ms = 0.0f;
        cudaEventSynchronize(ps->ev[i][1]);
        if (cudaEventElapsedTime(&ms, ps->ev[i][0], ps->ev[i][1]) == cudaSuccess) b->prof_ms[ps->stage[i]] += ms;
    }
    if (ps->train) b->prof_calls++;
    ps->pending = 0;
    ps->num_spans = 0;
}

void cu_prof_open(cu_backend *b, int train) {
    if (!b->base.cfg.profile) return;
    cu_prof_set *ps = &b->prof[b->prof_cur];
    prof_harvest(b, ps);
    ps->num_spans = 0;
    ps->train = train;
    b->prof_active = ps;
}

void cu_prof_close(cu_backend *b) {
    if (!b->prof_active) return;
    b->prof_active->pending = 1;
    b->prof_active = NULL;
    b->prof_cur = (b->prof_cur + 1) % CU_PROF_RING;
}

void cu_prof_begin(cu_backend *b, int stage) {
    cu_prof_set *ps = b->prof_active;
    if (!ps || ps->num_spans >= CU_PROF_SPANS) return;
    ps->stage[ps->num_spans] = stage;
    cudaEventRecord(ps->ev[ps->num_spans][0], b->st);
}

void cu_prof_end(cu_backend *b) {
    cu_prof_set *ps = b->prof_active;
    if (!ps || ps->num_spans >= CU_PROF_SPANS) return;
    cudaEventRecord(ps->ev[ps->num_spans][1], b->st);
    ps->num_spans++;
}

/* ---- buffers sized by the Gaussian count ---- */
static int ensure_scratch(cu_backend *b, int n) {
    if (n <= b->scratch_n && b->proj_buf.p) return 0;
    int cap = n + n / 4 + 1024;
    cu_free(&b->mem, &b->proj_buf);
    cu_free(&b->mem, &b->pgrad_buf);
    size_t c = (size_t)cap;
    /* floats: splat records 12 (first: 16-byte aligned), mean2d 2, conic 3, depth 1, opacity 1, color 3,
     * radius 1 | ints: rect 4, touched 1, offsets 1 | bytes: clamped 3 (rounded up) */
    size_t pbytes = c * (23 * sizeof(float) + 6 * sizeof(uint32_t)) + ((3 * c + 15) & ~(size_t)15);
    if (cu_alloc(&b->mem, &b->proj_buf, pbytes, "projected Gaussians") ||
        cu_alloc(&b->mem, &b->pgrad_buf, c * 9 * sizeof(float), "projected gradients"))
        return -1;
    float *f = (float *)b->proj_buf.p;
    b->proj.splat = (float4 *)f, f += 12 * c;
    b->proj.mean2d = f, f += 2 * c;
    b->proj.conic = f, f += 3 * c;
    b->proj.depth = f, f += c;
    b->proj.opacity = f, f += c;
    b->proj.color = f, f += 3 * c;
    b->proj.radius = f, f += c;
    int32_t *ip = (int32_t *)f;
    b->proj.rect = ip, ip += 4 * c;
    b->proj.touched = (uint32_t *)ip, ip += c;
    b->proj.offsets = (uint32_t *)ip, ip += c;
    b->proj.clamped = (uint8_t *)ip;
    f = (float *)b->pgrad_buf.p;
    b->pgrad.mean2d = f, f += 2 * c;
    b->pgrad.conic = f, f += 3 * c;
    b->pgrad.opacity = f, f += c;
    b->pgrad.color = f;
    b->scratch_n = cap;
    return 0;
}

static int ensure_pixels(cu_backend *b, int w, int h) {
    size_t np = (size_t)w * h;
    if (cu_reserve(&b->mem, &b->rgb, np * 3 * sizeof(float), "rendered image") ||
        cu_reserve(&b->mem, &b->final_T, np * sizeof(float), "transmittance image") ||
        cu_reserve(&b->mem, &b->n_contrib, np * sizeof(int32_t), "contributor counts") ||
        cu_reserve(&b->mem, &b->ranges, (size_t)(((w + 15) / 16) * ((h + 15) / 16)) * sizeof(uint2), "tile ranges"))
        return -1;
    return 0;
}

static int ensure_loss_buffers(cu_backend *b, int w, int h) {
    size_t np = (size_t)w * h;
    if (cu_reserve(&b->mem, &b->dl_drgb, np * 3 * sizeof(float), "image gradient") ||
        cu_reserve(&b->mem, &b->loss_work, np * 9 * sizeof(float), "SSIM maps") ||
        cu_reserve(&b->mem, &b->partials, (size_t)cuda_loss_partials(w, h) * 2 * sizeof(double), "loss partials"))
        return -1;
    return 0;
}

static cu_params params_of(cu_backend *b, cu_buf *buf) { return cu_params_at((float *)buf->p, b->n, b->K); }

static cu_bins current_bins(cu_backend *b);

/* The Adam arguments of a step: the learning rates and eps with the bias correction folded in
 * (sp_adam_bias, as the reference). */
static cu_adam_args adam_args(const cu_backend *b, const sp_step_args *a) {
    cu_adam_args aa;
    sp_adam_bias_t bias = sp_adam_bias(a->beta1, a->beta2, a->eps, a->adam_step);
    const float lr[6] = {a->lr.means, a->lr.log_scales, a->lr.quats, a->lr.opacity, a->lr.sh_dc, a->lr.sh_rest};
    for (int k = 0; k < 6; k++) aa.lr[k] = sp_adam_lr(&bias, lr[k]);
    aa.beta1 = a->beta1, aa.beta2 = a->beta2, aa.eps = bias.eps;
    aa.sparse = a->adam_sparse;
    aa.seen = NULL;
    aa.moments16 = b->base.cfg.moments16;
    aa.step = sp_m16_step(a->adam_step);
    return aa;
}

/* ---- the forward half: project, emit_pairs, sort, tile_ranges, rasterize ---- */
/* train: the backward pass follows (it reads the chunk states). weight: NULL, or
 * where rasterize adds the blend weights (cu_buckets.weight). */
static int forward(cu_backend *b, const sp_camera *cam, int sh_degree, float3 bg, int train,
                   unsigned long long *weight) {
    int n = b->n, w = cam->width, h = cam->height;
    b->tiles_x = (w + CU_TILE - 1) / CU_TILE;
    b->tiles_y = (h + CU_TILE - 1) / CU_TILE;
    int tiles = b->tiles_x * b->tiles_y;
    if (ensure_scratch(b, n) || ensure_pixels(b, w, h)) return -1;
    cu_params P = params_of(b, &b->params);

    cu_prof_begin(b, SP_STAGE_PROJECT);
    cuda_project(&P, n, b->K, cam, sh_degree, b->base.cfg.antialias, &b->proj, b->st);
    cu_prof_end(b);

    /* The pair count and the depth span (the key layout: cuda_pair_info) come back to the host for
     * the sort; meanwhile the pairs are emitted into the buffers as they are (they are emitted again
     * below if the count outgrows them), so the device does not wait for the host between the scan
     * and the sort. */
    cu_prof_begin(b, SP_STAGE_EMIT_PAIRS);
    size_t tb = 0;
    cub::DeviceScan::InclusiveSum(NULL, tb, b->proj.touched, b->proj.offsets, n, b->st);
    if (cu_reserve(&b->mem, &b->scan_temp, tb, "scan scratch") ||
        cu_reserve(&b->mem, &b->pair_info, 4 * sizeof(uint32_t), "pair info"))
        return -1;
    uint32_t *info = (uint32_t *)b->pair_info.p;
    if (n > 0) cub::DeviceScan::InclusiveSum(b->scan_temp.p, tb, b->proj.touched, b->proj.offsets, n, b->st);
    cuda_pair_info(&b->proj, n, info, b->st);
    cudaMemcpyAsync(b->h_u32, info, 3 * sizeof(uint32_t), cudaMemcpyDeviceToHost, b->st);
    if (cu_check(cudaEventRecord(b->count_ready, b->st), "project")) return -1;
    int64_t emitted = b->pair_cap;
    cuda_emit_pairs(&b->proj, n, b->tiles_x, tiles, b->keys.p, info, (uint32_t *)b->vals.p, emitted, b->st);
    cu_prof_end(b);
    if (cu_check(cudaEventSynchronize(b->count_ready), "project")) return -1;
    uint32_t np = b->h_u32[0];
    /* The sort takes an int count. (Per-Gaussian offsets are 32-bit: a wrap past 2^32 pairs would
     * need every one of a million Gaussians to cover over 4000 tiles.) */
    if (np > 0x7fffffffu) return sp_error("cuda: %u tile pairs for %d Gaussians exceed the sort's limit", np, n);
    b->num_pairs = (int)np;
    if ((int64_t)np > b->pair_cap) {
        int64_t cap = (int64_t)np + (int64_t)np / 2 + 4096;
        if (cap > 0x7fffffff) cap = np;
        if (cu_check(cudaStreamSynchronize(b->st), "project")) return -1; /* the emit above is done with them */
        cu_free(&b->mem, &b->keys);
        cu_free(&b->mem, &b->keys_sorted);
        cu_free(&b->mem, &b->vals);
        cu_free(&b->mem, &b->vals_sorted);
        cu_free(&b->mem, &b->wmask);
        b->pair_cap = 0;
        size_t c = (size_t)cap;
        if (cu_alloc(&b->mem, &b->keys, c * 8, "pair keys") || cu_alloc(&b->mem, &b->keys_sorted, c * 8, "pair keys") ||
            cu_alloc(&b->mem, &b->vals, c * 4, "pair values") ||
            cu_alloc(&b->mem, &b->vals_sorted, c * 4, "pair values") ||
            cu_alloc(&b->mem, &b->wmask, c, "pair warp masks"))
            return -1;
        b->pair_cap = cap;
    }
    if ((int64_t)np > emitted) {
        cu_prof_begin(b, SP_STAGE_EMIT_PAIRS);
        cuda_emit_pairs(&b->proj, n, b->tiles_x, tiles, b->keys.p, info, (uint32_t *)b->vals.p, b->pair_cap, b->st);
        cu_prof_end(b);
    }
    cu_keys keys = cuda_pair_keys(b->keys.p, tiles, b->h_u32);

    cu_prof_begin(b, SP_STAGE_SORT);
    /* Double-buffered sort: scratch stays small; the result lands in whichever buffer CUB picks. */
    size_t sb = cuda_sort_pairs_bytes((int)np, tiles, keys);
    if (cu_reserve(&b->mem, &b->sort_temp, sb, "sort scratch")) return -1;
    uint32_t *vals = (uint32_t *)b->vals.p;
    cu_keys alt = keys;
    alt.p = b->keys_sorted.p;
    cuda_sort_pairs(b->sort_temp.p, sb, &keys, alt, &vals, (uint32_t *)b->vals_sorted.p, (int)np, tiles, b->st);
    b->sorted_keys = keys;
    b->sorted_vals = vals;
    cu_prof_end(b);

    cu_prof_begin(b, SP_STAGE_TILE_RANGES);
    if (cu_reserve(&b->mem, &b->tile_order, cuda_tile_order_bytes(tiles), "tile order")) return -1;
    b->order = cuda_tile_ranges(b->sorted_keys, (int)np, tiles, (uint2 *)b->ranges.p, b->tile_order.p, b->st);

    cu_bins bins = current_bins(b);
    bins.wmask = NULL;
    cuda_warp_masks(&b->proj, &bins, b->sorted_keys, (uint8_t *)b->wmask.p, b->st);
    bins.wmask = (const uint8_t *)b->wmask.p;
    cu_prof_end(b);
    cu_raster out = {(float *)b->rgb.p, (float *)b->final_T.p, (int32_t *)b->n_contrib.p};
    cu_buckets bk = {NULL, NULL, weight};
    if (train) {
        if (cu_reserve(&b->mem, &b->tile_max_nc, (size_t)tiles * sizeof(int32_t), "tile contributor counts"))
            return -1;
        bk.tile_max_nc = (int32_t *)b->tile_max_nc.p;
        if (cu_reserve(&b->mem, &b->chunk_state, cu_chunk_count(np, tiles) * CU_BLOCK * sizeof(float4),
                       "backward chunk state") ||
            cu_reserve(&b->mem, &b->chunk_work, cuda_chunk_items_bytes(tiles, np), "backward work list"))
            return -1;
        bk.chunk = (float4 *)b->chunk_state.p;
    }
    cu_prof_begin(b, SP_STAGE_RASTERIZE);
    cuda_rasterize(&b->proj, &bins, w, h, bg, &out, train || weight ? &bk : NULL, b->st);
    cu_prof_end(b);
    return cu_check(cudaGetLastError(), "forward");
}

static cu_bins current_bins(cu_backend *b) {
    cu_bins bins;
    bins.tiles_x = b->tiles_x;
    bins.tiles_y = b->tiles_y;
    bins.num_pairs = b->num_pairs;
    bins.ids = b->sorted_vals;
    bins.range = (const uint2 *)b->ranges.p;
    bins.order = b->order;
    bins.wmask = (const uint8_t *)b->wmask.p;
    return bins;
}

/* ---- ops ---- */
static void cu_destroy(sp_backend *base) {
    cu_backend *b = (cu_backend *)base;
    if (!b) return;
    cudaStreamSynchronize(b->st);
    cu_buf *bufs[] = {&b->params,   &b->grads,       &b->m1,         &b->m2,          &b->stats,     &b->proj_buf,
                      &b->grads_view, &b->seen,
                      &b->pgrad_buf, &b->keys,       &b->keys_sorted, &b->vals,       &b->vals_sorted,
                      &b->fx_acc,   &b->fx_aux,      &b->sort_temp,   &b->scan_temp, &b->ranges, &b->tile_order,
                      &b->rgb,      &b->final_T,     &b->n_contrib,  &b->dl_drgb,     &b->loss_work,
                      &b->partials, &b->acc,         &b->view_pix,   &b->tile_max_nc,
                      &b->chunk_state, &b->chunk_work, &b->weights, &b->score_u8, &b->score_part, &b->wmask, &b->pair_info};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++) cu_free(&b->mem, bufs[i]);
    for (int r = 0; r < CU_PROF_RING; r++)
        for (int i = 0; i < CU_PROF_SPANS; i++) {
            if (b->prof[r].ev[i][0]) cudaEventDestroy(b->prof[r].ev[i][0]);
            if (b->prof[r].ev[i][1]) cudaEventDestroy(b->prof[r].ev[i][1]);
        }
    if (b->h_acc) cudaFreeHost(b->h_acc);
    if (b->h_u32) cudaFreeHost(b->h_u32);
    if (b->count_ready) cudaEventDestroy(b->count_ready);
    if (b->st) cudaStreamDestroy(b->st);
    cu_free(&b->mem, &b->slot_pool);
    free(b->slot_view);
    for (int k = 0; k < 2; k++) {
        if (b->h_ring[k]) cudaFreeHost(b->h_ring[k]);
        if (b->ring_ev[k]) cudaEventDestroy(b->ring_ev[k]);
    }
    free(b->views);
    free(b);
}

/* Streamed views: slots of one device buffer. A view's pixels go to one of two pinned buffers, then
 * to its slot on the step stream (after the steps queued before, which may still read the slot;
 * before the step that uses it), so the host returns at once and decodes the next view while the
 * GPU trains. Growing the slots (an image larger than a slot) keeps what they hold. */
static int slots_resize(cu_backend *b, int count, size_t bytes) {
    size_t stride = (bytes + 255) & ~(size_t)255;
    cudaStreamSynchronize(b->st); /* steps in flight may read the old slots */
    cu_buf pool = {NULL, 0};
    if (cu_alloc(&b->mem, &pool, (size_t)count * stride, "staged training images (data.device_cache_mb)"))
        return -1;
    cu_view *views = (cu_view *)calloc((size_t)count, sizeof *views);
    if (!views) {
        cu_free(&b->mem, &pool);
        return sp_error("cuda: out of host memory for %d staging slots", count);
    }
    int keep = b->num_slots < count ? b->num_slots : count;
    for (int k = 0; k < keep; k++) { /* the slots' images stay (a growth, not a new set) */
        views[k] = b->slot_view[k];
        if (views[k].channels && cu_check(cudaMemcpyAsync((uint8_t *)pool.p + k * stride,
                                                          (uint8_t *)b->slot_pool.p + k * b->slot_stride, b->slot_cap,
                                                          cudaMemcpyDeviceToDevice, b->st), "stage a training image")) {
            cu_free(&b->mem, &pool);
            free(views);
            return -1;
        }
    }
    cudaStreamSynchronize(b->st);
    cu_free(&b->mem, &b->slot_pool);
    free(b->slot_view);
    b->slot_pool = pool;
    b->slot_view = views;
    b->num_slots = count;
    b->slot_cap = bytes;
    b->slot_stride = stride;
    return 0;
}

static int cu_stage_slots(sp_backend *base, int count, size_t max_pixels, int channels) {
    cu_backend *b = (cu_backend *)base;
    if (count < SP_STAGE_SLOTS) return sp_error("cuda: stage_slots: %d slots (at least %d)", count, SP_STAGE_SLOTS);
    free(b->slot_view); /* a new set: nothing staged before is kept */
    b->slot_view = NULL;
    b->num_slots = 0;
    return slots_resize(b, count, max_pixels * (size_t)(channels > 0 ? channels : 4));
}

static int cu_stage_view(sp_backend *base, int slot, const sp_view *v, sp_alpha_mode alpha) {
    cu_backend *b = (cu_backend *)base;
    if (!v->pixels || (v->channels != 3 && v->channels != 4))
        return sp_error("cuda: stage_view: view %s has no pixels", v->path ? v->path : "?");
    size_t bytes = (size_t)v->cam.width * v->cam.height * v->channels;
    int count = b->num_slots ? b->num_slots : SP_STAGE_SLOTS;
    if (slot < 0 || slot >= count) return sp_error("cuda: stage_view: slot %d out of range", slot);
    if ((!b->num_slots || bytes > b->slot_cap) && slots_resize(b, count, bytes > b->slot_cap ? bytes : b->slot_cap))
        return -1;
    int r = b->ring_next;
    b->ring_next ^= 1;
    /* this pinned buffer may still feed the copy it was last used for */
    if (b->ring_ev[r] && cu_check(cudaEventSynchronize(b->ring_ev[r]), "stage a training image")) return -1;
    if (bytes > b->h_ring_cap) {
        for (int k = 0; k < 2; k++) {
            if (b->ring_ev[k]) cudaEventSynchronize(b->ring_ev[k]);
            if (b->h_ring[k]) cudaFreeHost(b->h_ring[k]);
            b->h_ring[k] = NULL;
        }
        b->h_ring_cap = 0;
        for (int k = 0; k < 2; k++) {
            if (cu_check(cudaMallocHost((void **)&b->h_ring[k], bytes), "pinned memory for a staged training image"))
                return -1;
            if (!b->ring_ev[k] &&
                cu_check(cudaEventCreateWithFlags(&b->ring_ev[k], cudaEventDisableTiming), "stage a training image"))
                return -1;
        }
        b->h_ring_cap = bytes;
    }
    memcpy(b->h_ring[r], v->pixels, bytes);
    if (cu_check(cudaMemcpyAsync((uint8_t *)b->slot_pool.p + slot * b->slot_stride, b->h_ring[r], bytes,
                                 cudaMemcpyHostToDevice, b->st),
                 "stage a training image") ||
        cu_check(cudaEventRecord(b->ring_ev[r], b->st), "stage a training image"))
        return -1;
    b->slot_view[slot].off = (size_t)slot * b->slot_stride;
    b->slot_view[slot].channels = v->channels;
    b->slot_view[slot].cam = v->cam;
    b->alpha = alpha;
    return 0;
}

static int cu_mcmc_refine(sp_backend *base, float dead_opacity, int add, uint64_t seed, int *relocated, int *added) {
    cu_backend *b = (cu_backend *)base;
    cu_prof_open(b, 0);
    cu_prof_begin(b, SP_STAGE_REFINE);
    int rc = cuda_mcmc_refine(b, dead_opacity, add, seed, relocated, added);
    cu_prof_end(b);
    cu_prof_close(b);
    return rc;
}

static int cu_reorder(sp_backend *base) {
    cu_backend *b = (cu_backend *)base;
    cu_prof_open(b, 0);
    cu_prof_begin(b, SP_STAGE_REFINE);
    int rc = cuda_reorder(b);
    cu_prof_end(b);
    cu_prof_close(b);
    return rc;
}

static int cu_device_memory(sp_backend *base, size_t *free_bytes, size_t *total_bytes) {
    (void)base;
    return cu_check(cudaMemGetInfo(free_bytes, total_bytes), "device memory");
}

static int cu_upload_views(sp_backend *base, const sp_view *views, int n, sp_alpha_mode alpha) {
    cu_backend *b = (cu_backend *)base;
    size_t total = 0;
    for (int i = 0; i < n; i++) {
        const sp_view *v = &views[i];
        if (v->channels != 3 && v->channels != 4)
            return sp_error("cuda: view %s: %d channels (3 or 4 expected)", v->name ? v->name : "?", v->channels);
        if (!v->pixels || v->cam.width <= 0 || v->cam.height <= 0)
            return sp_error("cuda: view %s has no pixels", v->name ? v->name : "?");
        total += (((size_t)v->cam.width * v->cam.height * v->channels) + 255) & ~(size_t)255;
    }
    cudaStreamSynchronize(b->st);
    cu_free(&b->mem, &b->view_pix);
    free(b->views);
    b->views = NULL;
    b->num_views = 0;
    if (cu_alloc(&b->mem, &b->view_pix, total, "training images")) return -1;
    b->views = SP_NEW(cu_view, n > 0 ? n : 1);
    size_t off = 0;
    for (int i = 0; i < n; i++) {
        const sp_view *v = &views[i];
        size_t bytes = (size_t)v->cam.width * v->cam.height * v->channels;
        if (cu_check(cudaMemcpyAsync((uint8_t *)b->view_pix.p + off, v->pixels, bytes, cudaMemcpyHostToDevice, b->st),
                     "upload training image"))
            return -1;
        b->views[i].off = off;
        b->views[i].channels = v->channels;
        b->views[i].cam = v->cam;
        off += (bytes + 255) & ~(size_t)255;
    }
    b->num_views = n;
    b->alpha = alpha;
    return cu_check(cudaStreamSynchronize(b->st), "upload training images");
}

static void copy_regions(cu_backend *b, float *dev, const sp_gaussians *g, enum cudaMemcpyKind kind) {
    size_t n = (size_t)b->n;
    cu_params d = cu_params_at(dev, b->n, b->K);
    struct {
        float *dv, *hv;
        size_t cnt;
    } r[5] = {{d.means, g->means, 3 * n},
              {d.log_scales, g->log_scales, 3 * n},
              {d.quats, g->quats, 4 * n},
              {d.opacity_logits, g->opacity_logits, n},
              {d.sh, g->sh, 3 * (size_t)b->K * n}};
    for (int i = 0; i < 5; i++) {
        if (!r[i].cnt) continue;
        if (kind == cudaMemcpyHostToDevice)
            cudaMemcpyAsync(r[i].dv, r[i].hv, r[i].cnt * sizeof(float), kind, b->st);
        else
            cudaMemcpyAsync(r[i].hv, r[i].dv, r[i].cnt * sizeof(float), kind, b->st);
    }
}

static int cu_set_gaussians(sp_backend *base, const sp_gaussians *g, const sp_gaussians *m, const sp_gaussians *v) {
    cu_backend *b = (cu_backend *)base;
    if (g->n < 0) return sp_error("cuda: negative Gaussian count");
    if ((m && (m->n != g->n || m->K != g->K)) || (v && (v->n != g->n || v->K != g->K)))
        return sp_error("cuda: Adam moments do not match the parameters (%d Gaussians, K=%d)", g->n, g->K);
    cudaStreamSynchronize(b->st);
    cu_free(&b->mem, &b->params);
    cu_free(&b->mem, &b->grads);
    cu_free(&b->mem, &b->m1);
    cu_free(&b->mem, &b->m2);
    cu_free(&b->mem, &b->stats);
    b->n = g->n;
    b->K = g->K;
    b->sh_degree = g->sh_degree;
    b->mem.num_gaussians = g->n;
    size_t bytes = (size_t)g->n * cu_floats(g->K) * sizeof(float);
    if (cu_alloc(&b->mem, &b->params, bytes, "Gaussian parameters") ||
        cu_alloc(&b->mem, &b->grads, bytes, "Gaussian gradients") || cu_alloc(&b->mem, &b->m1, bytes, "Adam m") ||
        cu_alloc_m2(b, &b->m2, bytes) ||
        cu_alloc(&b->mem, &b->stats, (size_t)g->n * 3 * sizeof(float), "densification statistics")) {
        b->n = 0;
        return -1;
    }
    copy_regions(b, (float *)b->params.p, g, cudaMemcpyHostToDevice);
    if (m) copy_regions(b, (float *)b->m1.p, m, cudaMemcpyHostToDevice);
    else cudaMemsetAsync(b->m1.p, 0, bytes, b->st);
    /* adam.moments16: v passes through the gradient store (zeroed below) into m1's packed words */
    float *vd = (float *)(cu_keeps_m2(b) ? b->m2.p : b->grads.p);
    if (v) copy_regions(b, vd, v, cudaMemcpyHostToDevice);
    else cudaMemsetAsync(vd, 0, bytes, b->st);
    if (b->base.cfg.moments16) cuda_m16_pack((float *)b->m1.p, vd, (int64_t)g->n * cu_floats(g->K), b->st);
    cudaMemsetAsync(b->grads.p, 0, bytes, b->st);
    b->grads_pending = 0;
    cudaMemsetAsync(b->stats.p, 0, (size_t)g->n * 3 * sizeof(float), b->st);
    return cu_check(cudaStreamSynchronize(b->st), "set_gaussians");
}

static int host_store_fit(sp_gaussians *g, int n, int sh_degree) {
    if (g->K != sp_sh_coeffs(sh_degree) || g->sh_degree != sh_degree || !g->means) {
        if (g->means) sp_gaussians_free(g);
        if (sp_gaussians_try_init(g, n, sh_degree)) return -1;
    }
    if (sp_gaussians_try_reserve(g, n > 0 ? n : 1)) return -1;
    g->n = n;
    return 0;
}

static int cu_get_gaussians(sp_backend *base, sp_gaussians *g, sp_gaussians *m, sp_gaussians *v) {
    cu_backend *b = (cu_backend *)base;
    sp_gaussians *st[3] = {g, m, v};
    int packed = b->base.cfg.moments16 && (m || v), rc = 0;
    cu_buf *src[3] = {&b->params, &b->m1, &b->m2};
    for (int i = 0; i < 3; i++) {
        if (!st[i]) continue;
        if (host_store_fit(st[i], b->n, b->sh_degree)) return -1;
        /* adam.moments16: no m2 store; v comes from m's packed words below */
        if (b->n && src[i]->p) copy_regions(b, (float *)src[i]->p, st[i], cudaMemcpyDeviceToHost);
    }
    sp_gaussians words; /* adam.moments16 and v alone: the packed words, from m's store */
    memset(&words, 0, sizeof words);
    if (packed && !m) {
        rc = host_store_fit(&words, b->n, b->sh_degree);
        if (!rc && b->n) copy_regions(b, (float *)b->m1.p, &words, cudaMemcpyDeviceToHost);
    }
    rc = cu_check(cudaStreamSynchronize(b->st), "get_gaussians") || rc;
    if (!rc && packed) sp_m16_unpack_model(m ? m : &words, m, v);
    if (words.means) sp_gaussians_free(&words);
    return rc ? -1 : 0;
}

static int cu_num_gaussians(sp_backend *base) { return ((cu_backend *)base)->n; }

/* Sparse Adam on unfused steps: the Gaussians in view (screen rectangle not empty) flagged. */
__global__ void k_mark_seen(const int32_t *rect, int n, uint8_t *seen) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && rect[4 * (size_t)i] < rect[4 * (size_t)i + 2] && rect[4 * (size_t)i + 1] < rect[4 * (size_t)i + 3])
        seen[i] = 1;
}

__global__ void k_add(float *dst, const float *src, int64_t count) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < count) dst[i] += src[i];
}

static int cu_train_step(sp_backend *base, const sp_step_args *a) {
    cu_backend *b = (cu_backend *)base;
    if (a->staged ? a->view < 0 || a->view >= b->num_slots || !b->slot_view[a->view].channels
                  : a->view < 0 || a->view >= b->num_views)
        return sp_error("cuda: train_step: %s %d out of range (%d %s)", a->staged ? "staging slot" : "view",
                        a->view, a->staged ? b->num_slots : b->num_views, a->staged ? "slots" : "uploaded");
    if (a->sh_degree < 0 || a->sh_degree > b->sh_degree)
        return sp_error("cuda: train_step: SH degree %d exceeds the stored degree %d", a->sh_degree, b->sh_degree);
    const cu_view *view = a->staged ? &b->slot_view[a->view] : &b->views[a->view];
    const uint8_t *view_pix = (const uint8_t *)(a->staged ? b->slot_pool.p : b->view_pix.p) + view->off;
    const sp_camera *cam = &view->cam;
    int w = cam->width, h = cam->height, n = b->n;
    float3 bg = make_float3(a->bg[0], a->bg[1], a->bg[2]);
    if (ensure_loss_buffers(b, w, h)) return -1;
    cu_prof_open(b, 1);
    if (forward(b, cam, a->sh_degree, bg, 1, NULL)) {
        cu_prof_close(b);
        return -1;
    }
    int det = b->base.cfg.deterministic;
    cu_bins bins = current_bins(b);
    cu_raster fwd = {(float *)b->rgb.p, (float *)b->final_T.p, (int32_t *)b->n_contrib.p};

    cu_prof_begin(b, SP_STAGE_LOSS);
    cu_target target = {NULL, view_pix, view->channels, b->alpha == SP_ALPHA_PREMULTIPLIED, bg};
    double *acc = (double *)b->acc.p;
    cuda_loss((const float *)b->rgb.p, target, w, h, a->ssim_weight, (float *)b->dl_drgb.p,
              (float *)b->loss_work.p, (double *)b->partials.p, acc, acc + 3, b->st);
    cu_prof_end(b);

    cu_prof_begin(b, SP_STAGE_BACKWARD_RASTER);
    cu_fx fx = {NULL, NULL, NULL, b->proj.conic, n};
    if (det) { /* fixed-point sums, the same in any order (cu_fx) */
        if (cu_reserve(&b->mem, &b->fx_acc, (size_t)CU_PAIR_GRADS * (n ? n : 1) * sizeof(unsigned long long),
                       "deterministic gradient sums") ||
            cu_reserve(&b->mem, &b->fx_aux, 256, "deterministic gradient scales")) {
            cu_prof_end(b);
            cu_prof_close(b);
            return -1;
        }
        fx.acc = (unsigned long long *)b->fx_acc.p;
        fx.scale = (float *)b->fx_aux.p;
        fx.max_bits = (unsigned *)((char *)b->fx_aux.p + 128);
        cuda_fx_begin(&fx, (const float *)b->dl_drgb.p, 3 * (int64_t)w * h, b->st);
    } else {
        cudaMemsetAsync(b->pgrad.mean2d, 0, (size_t)b->scratch_n * 9 * sizeof(float), b->st);
    }
    {
        cu_buckets bk = {(int32_t *)b->tile_max_nc.p, (float4 *)b->chunk_state.p, NULL};
        cu_chunk_work work = cuda_chunk_items(bk.tile_max_nc, b->tiles_x * b->tiles_y, b->num_pairs,
                                              b->chunk_work.p, b->st);
        cuda_backward_raster_pixel(&b->proj, &bins, w, h, bg, &fwd, (const float *)b->dl_drgb.p, &bk, &work,
                                   det ? &fx : NULL, &b->pgrad, b->st);
    }
    if (det) cuda_fx_finish(&fx, &b->pgrad, b->st);
    cu_prof_end(b);

    cu_prof_begin(b, SP_STAGE_PROJECT_BACK);
    /* project_back writes (not adds) its gradients: a view added to a pending sum goes through
     * grads_view */
    int add = b->grads_pending;
    size_t gcount = (size_t)n * cu_floats(b->K);
    if (add && cu_reserve(&b->mem, &b->grads_view, gcount * sizeof(float), "batch gradients")) {
        cu_prof_end(b);
        cu_prof_close(b);
        return -1;
    }
    cu_params P = params_of(b, &b->params), Gp = params_of(b, add ? &b->grads_view : &b->grads);
    float *stats = (float *)b->stats.p;
    if (!a->accumulate && !add && !b->base.cfg.split_update) {
        /* a step of its own: the gradients go straight into the update (cuda_project_back_update) */
        cu_update u;
        u.m1 = params_of(b, &b->m1), u.m2 = params_of(b, &b->m2);
        u.adam = adam_args(b, a);
        cpu_mcmc_weights(a->opacity_reg, a->scale_reg, n, &u.wo, &u.ws);
        u.noise = a->noise_scale, u.seed = a->noise_seed;
        cuda_project_back_update(&P, n, b->K, cam, a->sh_degree, b->base.cfg.antialias, &b->proj, &b->pgrad, &u,
                                 a->collect_stats ? stats : NULL, stats + n, stats + 2 * (size_t)n, b->st);
        b->grads_pending = 0;
        if (b->prof_active) b->prof_fused = 1;
        cu_prof_end(b);
        cu_prof_close(b);
        return cu_check(cudaGetLastError(), "train_step");
    }
    if (a->adam_sparse && n > 0) { /* the Gaussians in view, added to those of the sum's earlier views */
        if (cu_reserve(&b->mem, &b->seen, (size_t)n, "sparse Adam's in-view flags")) {
            cu_prof_end(b);
            cu_prof_close(b);
            return -1;
        }
        if (!add) cudaMemsetAsync(b->seen.p, 0, (size_t)n, b->st);
        k_mark_seen<<<CU_GRID(n, 256), 256, 0, b->st>>>(b->proj.rect, n, (uint8_t *)b->seen.p);
    }
    cuda_project_back(&P, n, b->K, cam, a->sh_degree, b->base.cfg.antialias, &b->proj, &b->pgrad, &Gp,
                      a->collect_stats ? stats : NULL, stats + n, stats + 2 * (size_t)n, b->st);
    if (add && gcount) k_add<<<CU_GRID(gcount, 256), 256, 0, b->st>>>((float *)b->grads.p, (const float *)b->grads_view.p,
                                                                   (int64_t)gcount);
    if (a->opacity_reg != 0.0f || a->scale_reg != 0.0f) { /* MCMC: added to the sum, one term per view */
        cu_params G = params_of(b, &b->grads);
        cuda_mcmc_reg(&P, &G, n, a->opacity_reg, a->scale_reg, b->st);
    }
    b->grads_pending = 1;
    cu_prof_end(b);
    int rc = a->accumulate ? 0 : cuda_backend_adam(b, a);
    if (rc == 0 && !a->accumulate && a->noise_scale != 0.0f) { /* MCMC: after the update, as the reference */
        cu_prof_begin(b, SP_STAGE_ADAM);
        cuda_mcmc_noise(&P, n, a->noise_scale, a->noise_seed, b->st);
        cu_prof_end(b);
    }
    cu_prof_close(b);
    if (rc) return rc;
    return cu_check(cudaGetLastError(), "train_step");
}

void cuda_backend_zero_grads(cu_backend *b) {
    if (b->n) cudaMemsetAsync(b->grads.p, 0, (size_t)b->n * cu_floats(b->K) * sizeof(float), b->st);
    b->grads_pending = 1;
}

int cuda_backend_adam(cu_backend *b, const sp_step_args *a) {
    return cuda_backend_adam_range(b, a, 0, (int64_t)b->n * cu_floats(b->K));
}

int cuda_backend_adam_range(cu_backend *b, const sp_step_args *a, int64_t first, int64_t end) {
    int n = b->n;
    cu_prof_begin(b, SP_STAGE_ADAM);
    cu_adam_args aa = adam_args(b, a);
    if (a->adam_sparse && b->seen.p) aa.seen = (const uint8_t *)b->seen.p;
    cuda_adam_range((float *)b->params.p, (const float *)b->grads.p, (float *)b->m1.p, (float *)b->m2.p, n, b->K,
                    first, end, &aa, b->st);
    cu_prof_end(b);
    b->grads_pending = 0;
    return cu_check(cudaGetLastError(), "adam");
}

static int cu_take_loss(sp_backend *base, double *mean_loss, int *steps) {
    cu_backend *b = (cu_backend *)base;
    if (cu_check(cudaMemcpyAsync(b->h_acc, b->acc.p, 3 * sizeof(double), cudaMemcpyDeviceToHost, b->st),
                 "take_loss") ||
        cu_check(cudaStreamSynchronize(b->st), "take_loss"))
        return -1;
    cudaMemsetAsync(b->acc.p, 0, 3 * sizeof(double), b->st);
    int cnt = (int)b->h_acc[1];
    if (steps) *steps = cnt;
    if (mean_loss) *mean_loss = b->h_acc[2] > 0.0 ? NAN : (cnt ? b->h_acc[0] / cnt : 0.0);
    return 0;
}

static int cu_refine(sp_backend *base, const sp_refine_args *a, sp_refine_result *r) {
    cu_backend *b = (cu_backend *)base;
    cu_prof_open(b, 0);
    cu_prof_begin(b, SP_STAGE_REFINE);
    int rc = cuda_refine(b, a, r);
    b->grads_pending = 0; /* refine gives fresh zero gradients */
    cu_prof_end(b);
    cu_prof_close(b);
    return rc;
}

static int cu_mcmc_read(sp_backend *base, float *opacity_logits, float *log_scales) {
    return cuda_mcmc_read((cu_backend *)base, opacity_logits, log_scales);
}

static int cu_mcmc_apply(sp_backend *base, const sp_mcmc_plan *p) {
    cu_backend *b = (cu_backend *)base;
    cu_prof_open(b, 0);
    cu_prof_begin(b, SP_STAGE_REFINE);
    int rc = cuda_mcmc_apply(b, p);
    cu_prof_end(b);
    cu_prof_close(b);
    return rc;
}

static int cu_render(sp_backend *base, const sp_camera *cam, int sh_degree, const float bg[3], float *rgb) {
    cu_backend *b = (cu_backend *)base;
    if (cam->width <= 0 || cam->height <= 0) return sp_error("cuda: render: empty camera %dx%d", cam->width, cam->height);
    if (sh_degree < 0 || sh_degree > b->sh_degree)
        return sp_error("cuda: render: SH degree %d exceeds the stored degree %d", sh_degree, b->sh_degree);
    if (forward(b, cam, sh_degree, make_float3(bg[0], bg[1], bg[2]), 0, NULL)) return -1;
    size_t bytes = (size_t)cam->width * cam->height * 3 * sizeof(float);
    if (cu_check(cudaMemcpyAsync(rgb, b->rgb.p, bytes, cudaMemcpyDeviceToHost, b->st), "render")) return -1;
    return cu_check(cudaStreamSynchronize(b->st), "render");
}

/* The evaluation's scores on the device: the render stays there, only the 8-bit ground truth
 * goes up and two numbers (and the 8-bit render when asked for) come back. */
static int cu_score(sp_backend *base, const sp_camera *cam, int sh_degree, const float bg[3], const uint8_t *g8,
                    uint8_t *p8, uint64_t *sse, double *ssim) {
    cu_backend *b = (cu_backend *)base;
    int w = cam->width, h = cam->height;
    if (w <= 0 || h <= 0) return sp_error("cuda: score: empty camera %dx%d", w, h);
    if (sh_degree < 0 || sh_degree > b->sh_degree)
        return sp_error("cuda: score: SH degree %d exceeds the stored degree %d", sh_degree, b->sh_degree);
    if (forward(b, cam, sh_degree, make_float3(bg[0], bg[1], bg[2]), 0, NULL)) return -1;
    size_t bytes = (size_t)w * h * 3;
    int np = cuda_score_partials(w, h);
    if (cu_reserve(&b->mem, &b->score_u8, 2 * bytes, "evaluation images") ||
        cu_reserve(&b->mem, &b->score_part, sizeof(unsigned long long) + (size_t)np * sizeof(double),
                   "evaluation scores"))
        return -1;
    uint8_t *d_g8 = (uint8_t *)b->score_u8.p, *d_p8 = d_g8 + bytes;
    unsigned long long *d_sse = (unsigned long long *)b->score_part.p;
    double *d_part = (double *)(d_sse + 1);
    double *h_part = (double *)sp_try_alloc((size_t)np + 1, sizeof(double), "evaluation scores", NULL);
    if (!h_part) return -1;
    double win[SP_SSIM_WINDOW];
    sp_ssim_window(win);
    int rc = cu_check(cudaMemcpyAsync(d_g8, g8, bytes, cudaMemcpyHostToDevice, b->st), "score");
    if (rc == 0) {
        cuda_score_image((const float *)b->rgb.p, d_g8, d_p8, w, h, win, d_part, d_sse, b->st);
        rc = cu_check(cudaGetLastError(), "score");
    }
    if (rc == 0) rc = cu_check(cudaMemcpyAsync(h_part, d_sse, (size_t)(np + 1) * sizeof(double), cudaMemcpyDeviceToHost, b->st), "score");
    if (rc == 0 && p8) rc = cu_check(cudaMemcpyAsync(p8, d_p8, bytes, cudaMemcpyDeviceToHost, b->st), "score");
    if (rc == 0) rc = cu_check(cudaStreamSynchronize(b->st), "score");
    if (rc == 0) {
        unsigned long long s;
        memcpy(&s, h_part, sizeof s);
        *sse = (uint64_t)s;
        double sum = 0.0;
        for (int k = 1; k <= np; k++) sum += h_part[k];
        *ssim = sum / (3.0 * (double)w * (double)h);
    }
    free(h_part);
    return rc;
}

/* Integer sums on the device over every camera (cu_buckets.weight), one transfer at the end. */
static int cu_blend_weights(sp_backend *base, const sp_camera *cams, int count, float *weight) {
    cu_backend *b = (cu_backend *)base;
    int n = b->n;
    if (n == 0) return 0;
    for (int c = 0; c < count; c++)
        if (cams[c].width <= 0 || cams[c].height <= 0)
            return sp_error("cuda: blend weights: empty camera %dx%d", cams[c].width, cams[c].height);
    size_t bytes = (size_t)n * sizeof(unsigned long long);
    unsigned long long *h = (unsigned long long *)sp_try_alloc((size_t)n, sizeof(unsigned long long), "blend weights", NULL);
    if (!h) return -1;
    int rc = cu_reserve(&b->mem, &b->weights, bytes, "blend weights");
    if (rc == 0) rc = cu_check(cudaMemsetAsync(b->weights.p, 0, bytes, b->st), "blend weights");
    for (int c = 0; c < count && rc == 0; c++)
        rc = forward(b, &cams[c], 0, make_float3(0.0f, 0.0f, 0.0f), 0, (unsigned long long *)b->weights.p);
    if (rc == 0) rc = cu_check(cudaMemcpyAsync(h, b->weights.p, bytes, cudaMemcpyDeviceToHost, b->st), "blend weights");
    if (rc == 0) rc = cu_check(cudaStreamSynchronize(b->st), "blend weights");
    if (rc == 0)
        for (int i = 0; i < n; i++) weight[i] = (float)((double)h[i] / SP_BLEND_WEIGHT_UNIT);
    free(h);
    return rc;
}

__global__ void k_finite(const float *p, int64_t count, uint32_t *bad) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < count && !isfinite(p[i])) *bad = 1u;
}

static int cu_params_finite(sp_backend *base) {
    cu_backend *b = (cu_backend *)base;
    if (b->n == 0) return 1;
    uint32_t *flag = (uint32_t *)b->acc.p + 8; /* past the 4 doubles */
    cudaMemsetAsync(flag, 0, sizeof(uint32_t), b->st);
    int64_t count = (int64_t)b->n * cu_floats(b->K);
    k_finite<<<CU_GRID(count, 256), 256, 0, b->st>>>((const float *)b->params.p, count, flag);
    cudaMemcpyAsync(b->h_u32 + 1, flag, sizeof(uint32_t), cudaMemcpyDeviceToHost, b->st);
    if (cu_check(cudaStreamSynchronize(b->st), "params_finite")) return 0;
    return b->h_u32[1] == 0;
}

static int cu_get_profile(sp_backend *base, sp_profile *p) {
    cu_backend *b = (cu_backend *)base;
    for (int r = 0; r < CU_PROF_RING; r++) prof_harvest(b, &b->prof[r]);
    memset(p, 0, sizeof *p);
    for (int i = 0; i < SP_STAGE_COUNT; i++) {
        int r = p->num_stages++;
        p->name[r] = sp_stage_name(i);
        p->ms[r] = b->prof_ms[i];
        p->busy_ms += b->prof_ms[i];
        if (i == SP_STAGE_PROJECT_BACK && b->prof_fused) { /* the fused kernel's row covers adam too */
            p->name[r] = "project_back+adam";
            p->ms[r] += b->prof_ms[++i];
            p->busy_ms += b->prof_ms[i];
        }
    }
    p->calls = b->prof_calls;
    p->peak_bytes = b->mem.peak;
    return 0;
}

extern "C" const struct sp_stage_ops cuda_stage_ops; /* stage_ops.cu: single stages for the parity harness */

static const sp_backend_ops k_cuda_ops = {
    "cuda",          cu_destroy,      cu_upload_views, cu_set_gaussians, cu_get_gaussians, cu_num_gaussians,
    cu_train_step,   cu_take_loss,    cu_refine,       cu_render,        cu_params_finite, cu_get_profile,
    &cuda_stage_ops, cu_stage_view,   NULL /* render_many */, cu_mcmc_read, cu_mcmc_apply,
    cu_blend_weights, cu_score,      cu_stage_slots,  cu_mcmc_refine,   cu_device_memory,
    NULL /* mcmc_prepare */, cu_reorder,
};

extern "C" int sp_cuda_device_count(void) {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return n;
}

static int cu_available(void) { return sp_cuda_device_count() > 0; }

static int cu_describe(const sp_backend_config *cfg, char *out, size_t n) {
    snprintf(out, n, "cuda (device %d)", cfg->device);
    return 0;
}

extern "C" sp_backend *sp_cuda_backend_create(const sp_backend_config *cfg) {
    int count = sp_cuda_device_count();
    if (count <= 0) {
        sp_error("cuda: no CUDA device available");
        return NULL;
    }
    if (cfg->device < 0 || cfg->device >= count) {
        sp_error("cuda: device %d does not exist (%d visible)", cfg->device, count);
        return NULL;
    }
    if (cu_check(cudaSetDevice(cfg->device), "select device")) return NULL;
    cu_backend *b = SP_NEW(cu_backend, 1);
    b->base.ops = &k_cuda_ops;
    b->base.cfg = *cfg;
    if (cu_check(cudaStreamCreateWithFlags(&b->st, cudaStreamNonBlocking), "create stream") ||
        cu_check(cudaEventCreateWithFlags(&b->count_ready, cudaEventDisableTiming), "create event") ||
        cu_check(cudaMallocHost((void **)&b->h_acc, 4 * sizeof(double)), "pinned memory") ||
        cu_check(cudaMallocHost((void **)&b->h_u32, 4 * sizeof(uint32_t)), "pinned memory") ||
        cu_alloc(&b->mem, &b->acc, 4 * sizeof(double) + 16, "loss accumulator"))
        goto fail;
    cudaMemsetAsync(b->acc.p, 0, b->acc.bytes, b->st);
    if (cfg->profile)
        for (int r = 0; r < CU_PROF_RING; r++)
            for (int i = 0; i < CU_PROF_SPANS; i++)
                if (cu_check(cudaEventCreate(&b->prof[r].ev[i][0]), "create event") ||
                    cu_check(cudaEventCreate(&b->prof[r].ev[i][1]), "create event"))
                    goto fail;
    if (cu_check(cudaStreamSynchronize(b->st), "init")) goto fail;
    return &b->base;
fail:
    cu_destroy(&b->base);
    return NULL;
}

/* name, gpu, variants, mcmc, available, auto_pick (NULL: when available), create, describe, and
 * several devices or processes through replicated.cu */
extern "C" const sp_backend_kind sp_kind_cuda = {
    "cuda", 1, SP_VARIANT_DETERMINISTIC, 1, cu_available, NULL, sp_cuda_backend_create,
    cu_describe, sp_replicated_create, sp_replicated_describe,
};
