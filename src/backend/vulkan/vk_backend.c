/* vk_backend.c — the Vulkan compute backend: the training step as GLSL compute shaders
 * (shaders/NAME.comp, embedded as SPIR-V) recorded into one command buffer per step (project,
 * emit count and scan, emit_pairs, sort, tile_ranges and the warp masks, rasterize, loss,
 * backward_raster, project_back, adam), sized on the device by the pair count (indirect dispatches) and submitted
 * without waiting for anything: the host records the next step while the device runs this one.
 * When a step's pairs do not fit the pair buffers the device skips it (pair_args.comp) and every
 * later one until the host, reading the step's status when it next needs its command buffer,
 * grows the buffers and runs the skipped steps again, in order (vk_wait_all). Loss sums stay on
 * the device until take_loss. Refine decides on the host from the small per-Gaussian fields and
 * gathers the SH rows on the device (vk_refine.c); MCMC decides on the device (vk_mcmc.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/ref/loss.h"
#include "backend/ref/mcmc.h"
#include "backend/ref/stages.h" /* sp_adam_bias */
#include "backend/stage_ops.h"
#include "backend/tile_cull.h"
#include "backend/vulkan/vk_backend.h"
#include "backend/vulkan/vulkan_backend.h"
#include "core/core.h"
#include "core/threads.h"

_Static_assert(VK_DEPTH_KEY_DROP == SP_DEPTH_KEY_DROP, "emit_pairs.comp drops the depth key bits tile_cull.h does");

int vk_usable_degree(int degree, int K) {
    int d = degree < 0 ? 0 : degree > 3 ? 3 : degree;
    while (d > 0 && sp_sh_coeffs(d) > K) d--;
    return d;
}

vk_layout vk_layout_of(const vk_backend *b) {
    uint32_t c = (uint32_t)b->cap;
    vk_layout l = {0, 3 * c, 6 * c, 10 * c, 11 * c};
    return l;
}

/* The n Gaussians' five parameter regions (start, length) in the capacity's layout. */
static void adam_regions(const vk_backend *b, uint32_t reg[10]) {
    vk_layout l = vk_layout_of(b);
    uint32_t n = (uint32_t)b->n;
    const uint32_t r[10] = {l.means, 3 * n, l.ls, 3 * n, l.quats, 4 * n, l.op, n, l.sh, 3 * (uint32_t)b->K * n};
    memcpy(reg, r, sizeof r);
}

uint32_t vk_adam_groups(const uint32_t reg[10]) {
    uint32_t q = 0;
    for (int r = 0; r < 5; r++) q += (reg[2 * r + 1] + 3) / 4;
    return q;
}

void vk_cam_words(uint32_t w[32], const sp_camera *cam) {
    memset(w, 0, 32 * sizeof(uint32_t));
    for (int i = 0; i < 9; i++) w[i] = vk_f2u(cam->R[i]);
    for (int i = 0; i < 3; i++) w[9 + i] = vk_f2u(cam->t[i]);
    w[12] = vk_f2u(cam->fx);
    w[13] = vk_f2u(cam->fy);
    w[14] = vk_f2u(cam->cx);
    w[15] = vk_f2u(cam->cy);
    w[16] = (uint32_t)cam->width;
    w[17] = (uint32_t)cam->height;
    w[18] = (uint32_t)((cam->width + SP_TILE - 1) / SP_TILE);
    w[19] = (uint32_t)((cam->height + SP_TILE - 1) / SP_TILE);
}

/* ---- buffers ---- */

/* Scan scratch for up to m elements: level l holds the block totals of level l - 1. */
static int ensure_scan(vk_backend *b, int64_t m) {
    for (int l = 0; l < 4; l++) {
        m = (m + VK_CHUNK - 1) / VK_CHUNK;
        if (vk_buf_ensure(&b->c, &b->scan_tmp[l], (VkDeviceSize)(m + 1) * 4, 0)) return -1;
        if (m <= 1) break;
    }
    return 0;
}

int vk_cap_for(int n) { return (n + n / 4 + 16 + 3) & ~3; }

int vk_ensure_gaussians(vk_backend *b, int n, int sh_degree) {
    int K = sp_sh_coeffs(sh_degree);
    if (n <= b->cap && K == b->K) return 0;
    vk_ctx *c = &b->c;
    if (vk_wait_all(b)) return -1;
    int cap = n > b->cap ? vk_cap_for(n) : b->cap;
    b->cap = cap;
    b->K = K;
    b->sh_degree = sh_degree;
    VkDeviceSize f = 4, pc = (VkDeviceSize)cap * (VkDeviceSize)sp_gaussian_floats(K) * f;
    vk_buf *params[4] = {&b->P, &b->Gr, &b->M1, &b->M2};
    for (int i = 0; i < 4; i++)
        if (vk_buf_ensure(c, params[i], pc, 0)) return -1;
    struct { vk_buf *buf; int per; } g[] = {{&b->mean2d, 2}, {&b->conic, 3}, {&b->depth, 1}, {&b->opac, 1},
                                            {&b->color, 3},  {&b->rect, 4},  {&b->radius, 1}, {&b->clamped, 3},
                                            {&b->pgrad, 9},  {&b->st_accum, 1}, {&b->st_count, 1}, {&b->st_maxr, 1}};
    for (size_t i = 0; i < sizeof g / sizeof g[0]; i++)
        if (vk_buf_ensure(c, g[i].buf, (VkDeviceSize)cap * g[i].per * f, 0)) return -1;
    if (vk_buf_ensure(c, &b->offsets, (VkDeviceSize)(cap + 1) * f, 0)) return -1;
    return ensure_scan(b, cap + 1);
}

/* The chunked backward's state and work list for pair_cap pairs over tiles_cap tiles
 * (shaders/chunks.glsl), and the scan of the chunk counts. */
static int ensure_chunks(vk_backend *b) {
    int64_t slots = vk_chunk_slots(b->pair_cap, b->tiles_cap);
    if (vk_buf_ensure(&b->c, &b->chunk_st, (VkDeviceSize)slots * VK_WG * 16, 0) ||
        vk_buf_ensure(&b->c, &b->chunk_work, (VkDeviceSize)(2 * (int64_t)b->tiles_cap + 1 + 2 * slots) * 4, 0))
        return -1;
    return ensure_scan(b, (int64_t)b->tiles_cap + 1);
}

int vk_ensure_image(vk_backend *b, int w, int h) {
    int px = w * h, tiles = ((w + SP_TILE - 1) / SP_TILE) * ((h + SP_TILE - 1) / SP_TILE);
    vk_ctx *c = &b->c;
    if (px > b->pix_cap) {
        if (vk_wait_all(b)) return -1;
        struct { vk_buf *buf; int per; } g[] = {{&b->rgb, 3}, {&b->final_T, 1}, {&b->n_contrib, 1}, {&b->target, 3},
                                                {&b->dl_drgb, 3}, {&b->Gm, 9}};
        for (size_t i = 0; i < sizeof g / sizeof g[0]; i++)
            if (vk_buf_ensure(c, g[i].buf, (VkDeviceSize)px * g[i].per * 4, 0)) return -1;
        /* the loss's partial sums, a pair per 32x32 tile and channel: 3 ceil(w/32) ceil(h/32) is at
         * most 3 px / 32 + 3 for any w x h of px pixels */
        if (vk_buf_ensure(c, &b->part, (VkDeviceSize)(px / 8 + 4) * 8, 0)) return -1;
        b->pix_cap = px;
    }
    if (tiles > b->tiles_cap) {
        if (vk_wait_all(b)) return -1;
        if (vk_buf_ensure(c, &b->range, (VkDeviceSize)tiles * 8, 0)) return -1;
        b->tiles_cap = tiles;
        if (ensure_chunks(b)) return -1;
    }
    return 0;
}

int vk_ensure_pairs(vk_backend *b, int64_t np, int tiles) {
    (void)tiles;
    if (np > b->pair_cap) {
        if (vk_wait_all(b)) return -1;
        int64_t cap = np + np / 4 + 1024;
        VkDeviceSize f = 4;
        vk_buf *one[] = {&b->key_hi[0], &b->key_hi[1], &b->key_lo[0], &b->key_lo[1], &b->val[0], &b->val[1],
                         &b->pair_gid, &b->sorted_gid};
        for (size_t i = 0; i < sizeof one / sizeof one[0]; i++)
            if (vk_buf_ensure(&b->c, one[i], (VkDeviceSize)cap * f, 0)) return -1;
        if (b->base.cfg.deterministic && vk_buf_ensure(&b->c, &b->slots, (VkDeviceSize)cap * 9 * f, 0)) return -1;
        int64_t chunks = (cap + VK_SORT_CHUNK - 1) / VK_SORT_CHUNK;
        if (vk_buf_ensure(&b->c, &b->hist, (VkDeviceSize)(chunks + 1) * 256 * f, 0)) return -1;
        if (vk_buf_ensure(&b->c, &b->wmask, (VkDeviceSize)((cap + 3) / 4) * f, 0)) return -1;
        b->pair_cap = cap;
        if (ensure_chunks(b)) return -1;
    }
    return 0;
}

/* Waits for step command buffer i; a step it held is done then: its status (rb) says whether the
 * device skipped it, and its pair count. */
static int kc_wait(vk_backend *b, int i) {
    vk_cmd *k = &b->kc[i];
    int was = k->pending;
    if (vk_cmd_wait(&b->c, k, b->base.cfg.profile ? b->ms : NULL)) return -1;
    if (!was || !b->kc_step[i].live || b->kc_step[i].skipped) return 0;
    const uint32_t *st = (const uint32_t *)b->rb.map + VK_RB_STEP + 2 * i;
    if (st[0] > b->np_seen) b->np_seen = st[0];
    if (st[1]) b->kc_step[i].skipped = b->skipped = 1;
    else b->kc_step[i].live = 0;
    return 0;
}

static int replay(vk_backend *b);

int vk_wait_all(vk_backend *b) {
    double *ms = b->base.cfg.profile ? b->ms : NULL;
    for (;;) {
        if (vk_cmd_wait(&b->c, &b->ka, ms) || vk_cmd_wait(&b->c, &b->kb, ms) || kc_wait(b, 0) || kc_wait(b, 1))
            return -1;
        if (!b->skipped || b->replaying) return 0;
        if (replay(b)) return -1;
    }
}

/* A dispatch whose workgroup count is gate g's: while a training step is recorded (b->gated), read
 * from pargs, where pair_args.comp writes it, or 0 when the step's pairs do not fit; else direct. */
static int dispatch_gated(vk_backend *b, vk_cmd *k, int pipe, vk_buf *const *bufs, int nbufs, const uint32_t *w,
                          uint32_t groups, int g) {
    if (!b->gated) return vk_dispatch(&b->c, k, pipe, bufs, nbufs, w, groups);
    if (groups != b->gate_groups[g])
        return sp_error("vulkan: internal error: gated dispatch of %u workgroups, %u recorded", groups, b->gate_groups[g]);
    return vk_dispatch_indirect(&b->c, k, pipe, bufs, nbufs, w, &b->pargs, (VkDeviceSize)(VK_PA_GATE + 3 * g) * 4);
}

/* ---- recording ---- */

/* Radix passes of the pair sort, 8-bit digits: the 4 digits of the depth word, then as many
 * digits of the tile word as the tile count needs. */
int vk_sort_passes(int tiles) {
    int tile_bits = 0;
    while ((1 << tile_bits) < tiles) tile_bits++;
    return 4 + (tile_bits + 7) / 8;
}

int vk_rec_project(vk_backend *b, vk_cmd *k, const sp_camera *cam, int degree) {
    vk_layout l = vk_layout_of(b);
    uint32_t w[32];
    vk_cam_words(w, cam);
    w[20] = (uint32_t)b->n, w[21] = (uint32_t)b->K, w[22] = (uint32_t)vk_usable_degree(degree, b->K);
    w[23] = l.means, w[24] = l.ls, w[25] = l.quats, w[26] = l.op, w[27] = l.sh;
    w[28] = (uint32_t)b->base.cfg.antialias;
    vk_buf *bufs[] = {&b->P, &b->mean2d, &b->conic, &b->depth, &b->opac, &b->color, &b->rect, &b->radius, &b->clamped};
    if (vk_dispatch(&b->c, k, VP_PROJECT, bufs, 9, w, vk_groups(b->n, VK_WG))) return -1;
    vk_stamp(&b->c, k, SP_STAGE_PROJECT);
    return 0;
}

/* Exclusive scan of m uints in place (levels of scan_tmp hold block totals). */
static int rec_scan(vk_backend *b, vk_cmd *k, vk_buf *data, int64_t m, int level) {
    uint32_t groups = vk_groups(m, VK_CHUNK);
    if (groups > b->c.max_wg_count || level >= 4) return sp_error("vulkan: scan of %lld elements is too large", (long long)m);
    uint32_t w[32] = {0};
    w[20] = (uint32_t)m;
    vk_buf *bufs[] = {data, &b->scan_tmp[level]};
    if (vk_dispatch(&b->c, k, VP_SCAN_BLOCK, bufs, 2, w, groups)) return -1;
    if (groups > 1) {
        if (rec_scan(b, k, &b->scan_tmp[level], groups, level + 1)) return -1;
        if (vk_dispatch(&b->c, k, VP_SCAN_ADD, bufs, 2, w, groups)) return -1;
    }
    return 0;
}

/* The pair sort (shaders/sort_*.comp), every dispatch sized on the device: sort_count reads the keys
 * once and counts all their digits; per pass, sort_scan scans the pass's histogram (the first
 * pass's also writes the plan: which passes run, from which set, with how many workgroups),
 * sort_hist (from the second pass on) counts the chunks' digits and sort_scatter moves the pairs.
 * A pass whose digit is the same for every key runs no sort_hist or sort_scatter workgroup. */
int vk_rec_sort(vk_backend *b, vk_cmd *k, int passes) {
    vk_ctx *c = &b->c;
    if (passes < 1 || passes > (int)VK_SORT_MAX_PASSES) return sp_error("vulkan: internal error: %d sort passes", passes);
    uint32_t cw[32] = {0};
    cw[20] = (uint32_t)passes;
    vk_buf *cb[] = {&b->key_lo[0], &b->key_hi[0], &b->hist, &b->pargs};
    if (vk_dispatch_indirect(c, k, VP_SORT_COUNT, cb, 4, cw, &b->pargs, VK_PA_SORT * 4)) return -1;
    for (int p = 0; p < passes; p++) {
        uint32_t hi = p >= 4, shift = 8 * (uint32_t)(p & 3);
        VkDeviceSize plan = (VkDeviceSize)(VK_PA_SORT_PLAN + 8 * p) * 4; /* sort_hist's, then sort_scatter's workgroups */
        uint32_t hw[32] = {0}, qw[32] = {0}, sw[32] = {0};
        hw[20] = (uint32_t)p, hw[21] = shift;
        qw[20] = (uint32_t)p, qw[21] = (uint32_t)passes, qw[22] = c->max_wg_count;
        sw[20] = (uint32_t)p, sw[21] = shift, sw[22] = hi;
        vk_buf *hb[] = {hi ? &b->key_hi[0] : &b->key_lo[0], hi ? &b->key_hi[1] : &b->key_lo[1], &b->hist, &b->pargs};
        vk_buf *qb[] = {&b->hist, &b->pargs};
        vk_buf *sb[] = {&b->key_lo[0], &b->key_hi[0], &b->val[0], &b->key_lo[1], &b->key_hi[1],
                        &b->val[1],    &b->hist,      &b->pargs};
        if ((p > 0 && vk_dispatch_indirect(c, k, VP_SORT_HIST, hb, 4, hw, &b->pargs, plan)) ||
            vk_dispatch(c, k, VP_SORT_SCAN, qb, 2, qw, 256) ||
            vk_dispatch_indirect(c, k, VP_SORT_SCATTER, sb, 8, sw, &b->pargs, plan + 12))
            return -1;
    }
    return 0;
}

int vk_rec_count(vk_backend *b, vk_cmd *k, int n) {
    uint32_t w[32] = {0};
    w[20] = (uint32_t)n;
    vk_buf *bufs[] = {&b->mean2d, &b->conic, &b->opac, &b->rect, &b->offsets, &b->depth, &b->pargs};
    if (vk_dispatch(&b->c, k, VP_EMIT_COUNT, bufs, 7, w, vk_groups(n + 1, VK_WG))) return -1;
    if (rec_scan(b, k, &b->offsets, n + 1, 0)) return -1;
    vk_copy(k, &b->offsets, (VkDeviceSize)n * 4, &b->rb, 0, 4);
    vk_stamp(&b->c, k, SP_STAGE_EMIT_PAIRS);
    return 0;
}

int vk_rec_bins(vk_backend *b, vk_cmd *k, const sp_camera *cam, int n) {
    vk_ctx *c = &b->c;
    uint32_t w[32];
    vk_cam_words(w, cam);
    int tiles = (int)(w[18] * w[19]);
    /* the sizes below from the pair count (offsets[n]) */
    uint32_t aw[32] = {0};
    uint32_t reg[10];
    adam_regions(b, reg);
    b->gate_groups[VK_GATE_N] = vk_groups(n, VK_WG);
    b->gate_groups[VK_GATE_PB] = vk_groups(n, VK_PB_WG);
    b->gate_groups[VK_GATE_ADAM] = vk_groups(vk_adam_groups(reg), VK_WG);
    aw[20] = (uint32_t)n, aw[21] = c->max_wg_count;
    aw[22] = b->pair_cap < 0xffffffffll ? (uint32_t)b->pair_cap : 0xffffffffu;
    for (int g = 0; g < 3; g++) aw[23 + g] = b->gate_groups[g];
    aw[26] = (uint32_t)tiles; /* the pair keys' layout: one word when the depth span and tiles fit */
    vk_buf *ab[] = {&b->offsets, &b->pargs};
    if (vk_dispatch(c, k, VP_PAIR_ARGS, ab, 2, aw, 1)) return -1;
    w[20] = (uint32_t)n;
    vk_buf *eb[] = {&b->mean2d, &b->conic, &b->opac, &b->rect, &b->depth, &b->offsets,
                    &b->key_hi[0], &b->key_lo[0], &b->val[0], &b->pair_gid, &b->pargs};
    if (dispatch_gated(b, k, VP_EMIT_PAIRS, eb, 11, w, vk_groups(n, VK_WG), VK_GATE_N)) return -1;
    vk_stamp(c, k, SP_STAGE_EMIT_PAIRS);

    /* sort: LSD radix over the bits the tile count needs (vk_sort_passes), sized on the device */
    int passes = vk_sort_passes(tiles);
    if (vk_rec_sort(b, k, passes)) return -1;
    b->cur = passes & 1; /* the set the sort ends in when every pass runs */
    vk_stamp(c, k, SP_STAGE_SORT);

    vk_fill(k, &b->range, 0, (VkDeviceSize)tiles * 8, 0);
    uint32_t tw[32] = {0};
    tw[21] = (uint32_t)tiles, tw[22] = b->base.cfg.deterministic ? (uint32_t)b->cur + 1 : 0;
    vk_buf *tb[] = {&b->key_hi[0], &b->key_hi[1], &b->val[0],   &b->val[1],
                    &b->pair_gid,  &b->range,     &b->sorted_gid, &b->pargs};
    if (vk_dispatch_indirect(c, k, VP_TILE_RANGES, tb, 8, tw, &b->pargs, VK_PA_RANGES * 4) ||
        vk_rec_masks(b, k, cam))
        return -1;
    vk_stamp(c, k, SP_STAGE_TILE_RANGES);
    return 0;
}

int vk_rec_masks(vk_backend *b, vk_cmd *k, const sp_camera *cam) {
    uint32_t w[32];
    vk_cam_words(w, cam);
    uint32_t tiles = w[18] * w[19];
    /* the chunk counts and contributor counts (and the item total's entry) that rasterize takes
     * maxima into: the masks' barrier orders the fill before it */
    vk_fill_nobarrier(k, &b->chunk_work, 0, (VkDeviceSize)(2 * tiles + 1) * 4, 0);
    vk_buf *bufs[] = {&b->key_hi[0], &b->key_hi[1], &b->sorted_gid, &b->mean2d,
                      &b->conic,     &b->opac,      &b->pargs,      &b->wmask};
    return vk_dispatch_indirect(&b->c, k, VP_WARP_MASKS, bufs, 8, w, &b->pargs, VK_PA_RANGES * 4);
}

int vk_rec_rasterize(vk_backend *b, vk_cmd *k, const sp_camera *cam, const float bg[3], int mode) {
    uint32_t w[32];
    vk_cam_words(w, cam);
    for (int i = 0; i < 3; i++) w[20 + i] = vk_f2u(bg[i]);
    w[23] = (uint32_t)(mode == 1);
    vk_buf *bufs[] = {&b->range,   &b->sorted_gid, &b->mean2d,    &b->conic,    &b->opac,       &b->color, &b->rgb,
                      &b->final_T, &b->n_contrib,  &b->chunk_st, &b->chunk_work, &b->wmask, &b->wsum};
    int weights = mode == 2;
    if (vk_dispatch(&b->c, k, weights ? VP_RASTERIZE_W : VP_RASTERIZE, bufs, weights ? 13 : 12, w,
                    w[18] * w[19] * VK_RASTER_PARTS))
        return -1;
    vk_stamp(&b->c, k, SP_STAGE_RASTERIZE);
    return 0;
}

/* Loss of rgb against the target: the float target buffer (bg NULL), or the view's RGBA8 words at
 * pix_off in pix composited over bg inside the first pass. Two dispatches over 32x32 tiles and
 * channels (shaders/loss.glsl): loss_ssim writes the SSIM maps G and per-workgroup sums of |r - t|
 * and of S, loss_grad the whole gradient into dl_drgb and the step's sums (the partials in a fixed
 * order) into ring[slot]. */
int vk_rec_loss(vk_backend *b, vk_cmd *k, int w, int h, float ssim_weight, uint32_t slot, const float *bg,
                int64_t pix_off) {
    vk_ctx *c = &b->c;
    if (w <= 0 || h <= 0) {
        vk_fill(k, &b->ring, (VkDeviceSize)slot * 8, 8, 0);
        vk_stamp(c, k, SP_STAGE_LOSS);
        return 0;
    }
    double lambda = ssim_weight, count = 3.0 * (double)w * (double)h;
    double g[SP_SSIM_WINDOW];
    sp_ssim_window(g);
    uint32_t tx = (uint32_t)((w + 31) / 32), groups = tx * (uint32_t)((h + 31) / 32) * 3;
    uint32_t lw[32] = {0};
    lw[0] = (uint32_t)w, lw[1] = (uint32_t)h;
    lw[2] = vk_f2u((float)(-lambda / count));
    lw[3] = vk_f2u((float)((1.0 - lambda) / count));
    lw[4] = vk_f2u((float)SP_SSIM_C1);
    lw[5] = vk_f2u((float)SP_SSIM_C2);
    lw[6] = tx;
    lw[7] = bg != NULL;
    for (int i = 0; i < SP_SSIM_WINDOW; i++) lw[8 + i] = vk_f2u((float)g[i]);
    lw[19] = (uint32_t)pix_off;
    lw[20] = b->alpha == SP_ALPHA_PREMULTIPLIED;
    for (int i = 0; bg && i < 3; i++) lw[21 + i] = vk_f2u(bg[i]);
    lw[24] = slot, lw[25] = groups;
    /* every binding a valid buffer: the source not read is bound as the target buffer */
    vk_buf *lb[] = {&b->rgb, &b->target, bg ? &b->pix : &b->target, &b->Gm, &b->dl_drgb, &b->part, &b->ring};
    if (vk_dispatch(c, k, VP_LOSS_SSIM, lb, 7, lw, groups) || vk_dispatch(c, k, VP_LOSS_GRAD, lb, 7, lw, groups))
        return -1;
    vk_stamp(c, k, SP_STAGE_LOSS);
    return 0;
}

int vk_rec_backward(vk_backend *b, vk_cmd *k, const sp_camera *cam, const float bg[3], int n) {
    vk_ctx *c = &b->c;
    int det = b->base.cfg.deterministic;
    uint32_t w[32];
    vk_cam_words(w, cam);
    for (int i = 0; i < 3; i++) w[20 + i] = vk_f2u(bg[i]);
    w[23] = (uint32_t)det;
    /* the whole capacity: a training step records this before the pair count is known */
    if (det) vk_fill(k, &b->slots, 0, (VkDeviceSize)b->pair_cap * 9 * 4, 0);
    else vk_fill(k, &b->pgrad, 0, (VkDeviceSize)n * 9 * 4, 0);
    /* the work list from the chunk counts rasterize left: scanned into first items, then the
     * items and the backward's workgroup count (chunk_items.comp) */
    uint32_t tiles = w[18] * w[19];
    if (rec_scan(b, k, &b->chunk_work, (int64_t)tiles + 1, 0)) return -1;
    uint32_t iw[32] = {0};
    iw[20] = tiles, iw[21] = c->max_wg_count, iw[22] = VK_PA_BWD, iw[23] = det ? 1 : VK_RASTER_PARTS;
    vk_buf *ib[] = {&b->chunk_work, &b->pargs};
    if (vk_dispatch(c, k, VP_CHUNK_ITEMS, ib, 2, iw, vk_groups(tiles, VK_WG))) return -1;
    int pipe = det ? VP_BACKWARD_DET : c->float_atomics && !b->base.cfg.cas_atomics ? VP_BACKWARD_NATIVE : VP_BACKWARD_CAS;
    vk_buf *bufs[] = {&b->range,   &b->sorted_gid, &b->mean2d,  &b->conic,       &b->opac,
                      &b->color,   &b->final_T,    &b->n_contrib, &b->dl_drgb,   &b->val[b->cur],
                      det ? &b->slots : &b->pgrad, &b->chunk_st, &b->chunk_work, &b->rgb, &b->wmask};
    if (tiles && vk_dispatch_indirect(c, k, pipe, bufs, 15, w, &b->pargs, VK_PA_BWD * 4)) return -1;
    if (det) {
        uint32_t gw[32] = {0};
        gw[20] = (uint32_t)n;
        vk_buf *gb[] = {&b->offsets, &b->slots, &b->pgrad};
        if (dispatch_gated(b, k, VP_GRAD_GATHER, gb, 3, gw, vk_groups(n, VK_WG), VK_GATE_N)) return -1;
    }
    vk_stamp(c, k, SP_STAGE_BACKWARD_RASTER);
    return 0;
}

int vk_rec_project_back(vk_backend *b, vk_cmd *k, const sp_camera *cam, int degree, int collect) {
    vk_layout l = vk_layout_of(b);
    uint32_t w[32];
    vk_cam_words(w, cam);
    w[20] = (uint32_t)b->n, w[21] = (uint32_t)b->K, w[22] = (uint32_t)vk_usable_degree(degree, b->K);
    w[23] = l.means, w[24] = l.ls, w[25] = l.quats, w[26] = l.op, w[27] = l.sh;
    w[28] = (uint32_t)collect;
    w[29] = vk_f2u(0.5f * (float)cam->width);
    w[30] = vk_f2u(0.5f * (float)cam->height);
    w[31] = (uint32_t)b->base.cfg.antialias;
    vk_buf *bufs[] = {&b->P, &b->rect, &b->clamped, &b->pgrad, &b->Gr, &b->st_accum, &b->st_count, &b->st_maxr, &b->radius};
    if (dispatch_gated(b, k, VP_PROJECT_BACK, bufs, 9, w, vk_groups(b->n, VK_PB_WG), VK_GATE_PB)) return -1;
    vk_stamp(&b->c, k, SP_STAGE_PROJECT_BACK);
    return 0;
}

static int rec_adam(vk_backend *b, vk_cmd *k, const sp_step_args *a) {
    sp_adam_bias_t bias = sp_adam_bias(a->beta1, a->beta2, a->eps, a->adam_step);
    uint32_t w[32] = {0};
    const float lr[6] = {a->lr.means, a->lr.log_scales, a->lr.quats, a->lr.opacity, a->lr.sh_dc, a->lr.sh_rest};
    for (int i = 0; i < 6; i++) w[i] = vk_f2u(sp_adam_lr(&bias, lr[i]));
    w[6] = vk_f2u(a->beta1), w[7] = vk_f2u(a->beta2), w[8] = vk_f2u(bias.eps);
    uint32_t reg[10];
    adam_regions(b, reg);
    memcpy(w + 11, reg, sizeof reg);
    w[21] = 3 * (uint32_t)b->K;
    w[22] = vk_adam_groups(reg);
    w[23] = a->adam_sparse ? 1u : 0u;
    w[9] = 1; /* this step's projection left the rectangles: in view takes the whole update */
    w[10] = sp_m16_step(a->adam_step), w[24] = b->base.cfg.moments16 ? 1u : 0u;
    vk_buf *bufs[] = {&b->P, &b->Gr, &b->M1, &b->M2, &b->rect};
    if (dispatch_gated(b, k, VP_ADAM, bufs, 5, w, vk_groups(w[22], VK_WG), VK_GATE_ADAM)) return -1;
    vk_stamp(&b->c, k, SP_STAGE_ADAM);
    return 0;
}

/* shaders/mcmc.comp over the n Gaussians: words 20-25 (mode, n, region offsets) and the mode's. */
static int rec_mcmc(vk_backend *b, vk_cmd *k, uint32_t mode, const uint32_t args[5]) {
    vk_layout l = vk_layout_of(b);
    uint32_t w[32] = {0};
    w[20] = mode, w[21] = (uint32_t)b->n, w[22] = l.means, w[23] = l.ls, w[24] = l.quats, w[25] = l.op;
    memcpy(w + 26, args, 5 * sizeof *args);
    vk_buf *bufs[] = {&b->P, &b->Gr};
    return b->n > 0 ? dispatch_gated(b, k, VP_MCMC, bufs, 2, w, vk_groups(b->n, VK_WG), VK_GATE_N) : 0;
}

int vk_rec_mcmc_reg(vk_backend *b, vk_cmd *k, float opacity_reg, float scale_reg) {
    if (b->n <= 0 || (opacity_reg == 0.0f && scale_reg == 0.0f)) return 0;
    /* the host's weights (cpu_mcmc_reg): means over the Gaussians, and over their three axes */
    uint32_t a[5] = {vk_f2u(opacity_reg / (float)b->n), vk_f2u(scale_reg / (float)(3 * b->n)), 0, 0, 0};
    return rec_mcmc(b, k, 0, a);
}

int vk_rec_mcmc_noise(vk_backend *b, vk_cmd *k, float noise_scale, uint64_t seed) {
    if (b->n <= 0 || noise_scale == 0.0f) return 0;
    uint32_t a[5] = {vk_f2u(noise_scale), (uint32_t)seed, (uint32_t)(seed >> 32), vk_f2u(SP_MCMC_GATE_K),
                     vk_f2u(SP_MCMC_GATE_X0)};
    return rec_mcmc(b, k, 1, a);
}

/* project + count (command buffer ka, waited for), then emit/sort/ranges/rasterize recorded into
 * kb, left open for the caller. */
static int forward(vk_backend *b, const sp_camera *cam, int degree, const float bg[3], int profile, int mode) {
    double *ms = profile ? b->ms : NULL;
    int tiles = ((cam->width + SP_TILE - 1) / SP_TILE) * ((cam->height + SP_TILE - 1) / SP_TILE);
    if (vk_ensure_image(b, cam->width, cam->height)) return -1;
    if (vk_cmd_begin(&b->c, &b->ka, ms, profile) || vk_rec_project(b, &b->ka, cam, degree) ||
        vk_rec_count(b, &b->ka, b->n) || vk_cmd_submit(&b->c, &b->ka) || vk_cmd_wait(&b->c, &b->ka, ms))
        return -1;
    b->np = *(const uint32_t *)b->rb.map;
    if (vk_ensure_pairs(b, b->np, tiles)) return -1;
    if (vk_cmd_begin(&b->c, &b->kb, ms, profile) || vk_rec_bins(b, &b->kb, cam, b->n) ||
        vk_rec_rasterize(b, &b->kb, cam, bg, mode))
        return -1;
    return 0;
}

/* ---- backend ops ---- */

/* With backend.profile: where the wall time went, logged once when the backend goes (the stage rows
 * are sp_profile's; this is the host's and the device's time around them). */
static void log_accounting(const vk_backend *b) {
    if (!b->base.cfg.profile || b->steps <= 0) return;
    double st = (double)b->steps;
    const vk_clock *ck = &b->c.clk;
    SP_INFO("vulkan: host per step: %.3f ms in train_step (%.3f waiting on fences, %.3f reading timestamps, "
            "%.3f in vkQueueSubmit, %.1f waits and %.1f submissions per step), %.3f in take_loss, %.3f in "
            "params_finite, %.3f in refine; %ld of %ld steps run again (their pairs outgrew the buffers)",
            b->step_ms / st, ck->wait_ms / st, ck->query_ms / st, ck->submit_ms / st, ck->waits / st,
            ck->submits / st, b->take_ms / st, b->finite_ms / st, b->ms[SP_STAGE_REFINE] / st, b->replays, b->steps);
    if (b->mc_calls > 0) {
        const double *m = b->mc_pass_ms, nc = (double)b->mc_calls;
        SP_INFO("vulkan: mcmc refine on the device: %ld calls, %.2f ms each (%.2f growing the stores and scratch, "
                "%.2f recording, running and waiting for its command buffer)",
                b->mc_calls, (b->mc_grow_ms + b->mc_cmd_ms) / nc, b->mc_grow_ms / nc, b->mc_cmd_ms / nc);
        SP_INFO("vulkan: mcmc refine passes on the device, ms per call: relocate %.3f %.3f %.3f %.3f %.3f %.3f, "
                "add %.3f %.3f %.3f %.3f %.3f %.3f (weights, blocks, finish, draw, spread, apply), clears %.3f",
                m[0] / nc, m[1] / nc, m[2] / nc, m[3] / nc, m[4] / nc, m[5] / nc, m[6] / nc, m[7] / nc, m[8] / nc,
                m[9] / nc, m[10] / nc, m[11] / nc, m[12] / nc);
    }
    if (ck->dev_last > ck->dev_first) {
        double span = (double)(ck->dev_last - ck->dev_first) * b->c.ts_period * 1e-6;
        SP_INFO("vulkan: device per step: %.3f ms from the first to the last timestamp, %.3f inside timestamped "
                "command buffers, %.3f idle between them",
                span / st, ck->dev_inside_ms / st, (span - ck->dev_inside_ms) / st);
    }
}

static void vk_destroy(sp_backend *base) {
    vk_backend *b = (vk_backend *)base;
    vk_ctx *c = &b->c;
    if (c->dev) {
        vkDeviceWaitIdle(c->dev);
        log_accounting(b);
        vk_buf *all[] = {&b->P, &b->Gr, &b->M1, &b->M2, &b->mean2d, &b->conic, &b->depth, &b->opac, &b->color,
                         &b->rect, &b->radius, &b->clamped, &b->offsets, &b->pgrad, &b->st_accum, &b->st_count,
                         &b->st_maxr, &b->key_hi[0], &b->key_hi[1], &b->key_lo[0], &b->key_lo[1], &b->val[0],
                         &b->val[1], &b->pair_gid, &b->sorted_gid, &b->wmask, &b->slots, &b->hist, &b->scan_tmp[0],
                         &b->scan_tmp[1], &b->scan_tmp[2], &b->scan_tmp[3], &b->rgb, &b->final_T, &b->n_contrib,
                         &b->target, &b->dl_drgb, &b->Gm, &b->part, &b->range, &b->chunk_st, &b->chunk_work, &b->pix,
                         &b->rb, &b->ring, &b->rsrc, &b->rtmp, &b->ro_box, &b->pargs, &b->wsum, &b->mc_prefix,
                         &b->mc_rank, &b->mc_list, &b->mc_blocks, &b->mc_drawn, &b->mc_times, &b->mc_sp,
                         &b->mc_scal, &b->mc_tab, &b->score_u8, &b->score_f64};
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) vk_buf_free(c, all[i]);
        vk_cmd_free(c, &b->ka);
        vk_cmd_free(c, &b->kb);
        vk_cmd_free(c, &b->kc[0]);
        vk_cmd_free(c, &b->kc[1]);
    }
    vk_ctx_free(c);
    free(b->view_off);
    free(b->slot_cam);
    free(b);
}

/* Views [first, last) packed as pix holds them (RGBA words) into the staging memory `to`. */
typedef struct {
    const sp_view *views;
    const int64_t *off;
    int first, last;
} pack_job;

static void pack_views(void *to, const void *user) {
    const pack_job *j = user;
    uint32_t *w = to;
    const int64_t chunk = 1 << 16, base = j->off[j->first], end = j->off[j->last];
    const int64_t chunks = (end - base + chunk - 1) / chunk;
#pragma omp parallel for schedule(static) num_threads(sp_omp_threads())
    for (int64_t c = 0; c < chunks; c++) { /* pixels [q, q_end) of the batch, across views */
        int64_t q = base + c * chunk, q_end = q + chunk < end ? q + chunk : end;
        int i = j->first;
        while (j->off[i + 1] <= q) i++;
        for (; q < q_end; i++) {
            const sp_view *v = &j->views[i];
            int64_t stop = j->off[i + 1] < q_end ? j->off[i + 1] : q_end;
            for (; q < stop; q++) {
                const uint8_t *s = v->pixels + (size_t)(q - j->off[i]) * v->channels;
                uint32_t a = v->channels == 4 ? s[3] : 255;
                w[q - base] = (uint32_t)s[0] | (uint32_t)s[1] << 8 | (uint32_t)s[2] << 16 | a << 24;
            }
        }
    }
}

#define VK_UPLOAD_BATCH ((int64_t)64 << 20) /* bytes of views per staging copy (a larger view goes alone) */

static int vk_upload_views(sp_backend *base, const sp_view *views, int n, sp_alpha_mode alpha) {
    vk_backend *b = (vk_backend *)base;
    if (vk_wait_all(b)) return -1;
    free(b->slot_cam), b->slot_cam = NULL, b->num_slots = 0, b->slot_px = 0; /* pix holds these views, not slots */
    free(b->view_off);
    b->view_off = SP_NEW(int64_t, n + 1);
    for (int i = 0; i < n; i++) b->view_off[i + 1] = b->view_off[i] + (int64_t)views[i].cam.width * views[i].cam.height;
    int64_t total = b->view_off[n];
    if (vk_buf_ensure(&b->c, &b->pix, (VkDeviceSize)(total > 0 ? total : 1) * 4, 0)) return -1;
    for (int i = 0; i < n;) { /* as many views at a time as fit in a batch, packed in the staging buffer */
        int j = i + 1;
        while (j < n && (b->view_off[j + 1] - b->view_off[i]) * 4 <= VK_UPLOAD_BATCH) j++;
        pack_job job = {views, b->view_off, i, j};
        if (vk_upload_fill(&b->c, &b->pix, (VkDeviceSize)b->view_off[i] * 4,
                           (VkDeviceSize)(b->view_off[j] - b->view_off[i]) * 4, pack_views, &job))
            return -1;
        i = j;
    }
    b->views = views;
    b->num_views = n;
    b->alpha = alpha;
    return 0;
}

/* Streamed views: the slots take pix's place (uploaded views are dropped). Staging waits for the
 * steps in flight, then goes through the upload path; growing the slots (an image larger than a
 * slot) drops what they held. */
static int slots_make(vk_backend *b, int count, int64_t px) {
    if ((uint64_t)px * (uint64_t)count * 4 > b->c.max_storage)
        return sp_error("vulkan: %d staged images of %lld pixels exceed the device's largest storage buffer "
                        "(%.0f MiB); lower data.device_cache_mb", count, (long long)px,
                        (double)b->c.max_storage / 1048576.0);
    if (vk_wait_all(b)) return -1;
    sp_camera *cams = sp_try_alloc((size_t)count, sizeof *cams, "the staged training images", "lower data.device_cache_mb");
    if (!cams) return -1;
    memset(cams, 0, (size_t)count * sizeof *cams);
    free(b->slot_cam);
    b->slot_cam = cams, b->num_slots = count, b->slot_px = px;
    b->views = NULL, b->num_views = 0;
    return vk_buf_ensure(&b->c, &b->pix, (VkDeviceSize)px * (VkDeviceSize)count * 4, 0);
}

static int vk_stage_slots(sp_backend *base, int count, size_t max_pixels, int channels) {
    vk_backend *b = (vk_backend *)base;
    if (count < SP_STAGE_SLOTS) return sp_error("stage_slots: %d slots (at least %d)", count, SP_STAGE_SLOTS);
    return slots_make(b, count, (int64_t)(max_pixels > 0 ? max_pixels : 1));
}

static int vk_stage_view(sp_backend *base, int slot, const sp_view *v, sp_alpha_mode alpha) {
    vk_backend *b = (vk_backend *)base;
    if (!v->pixels || (v->channels != 3 && v->channels != 4))
        return sp_error("stage_view: view %s has no pixels", v->path ? v->path : "?");
    int count = b->num_slots ? b->num_slots : SP_STAGE_SLOTS;
    if (slot < 0 || slot >= count) return sp_error("stage_view: slot %d out of range", slot);
    int64_t px = (int64_t)v->cam.width * v->cam.height;
    if ((b->num_views || !b->num_slots || px > b->slot_px) && slots_make(b, count, px > b->slot_px ? px : b->slot_px))
        return -1;
    if (vk_wait_all(b)) return -1;
    uint32_t *w = sp_try_realloc(NULL, (size_t)px, 4, "a staged training image", "raise data.downscale");
    if (!w) return -1;
    for (int64_t p = 0; p < px; p++) {
        const uint8_t *s = v->pixels + (size_t)p * v->channels;
        uint32_t a = v->channels == 4 ? s[3] : 255;
        w[p] = (uint32_t)s[0] | (uint32_t)s[1] << 8 | (uint32_t)s[2] << 16 | a << 24;
    }
    int rc = vk_upload(&b->c, &b->pix, (VkDeviceSize)slot * (VkDeviceSize)b->slot_px * 4, w, (VkDeviceSize)px * 4);
    free(w);
    if (rc) return -1;
    b->slot_cam[slot] = v->cam;
    b->alpha = alpha;
    return 0;
}

/* Device-local memory: the largest device-local heap (free memory is not known without an
 * extension; the whole heap is reported as free). */
static int vk_device_memory(sp_backend *base, size_t *free_bytes, size_t *total_bytes) {
    vk_backend *b = (vk_backend *)base;
    VkDeviceSize best = 0;
    for (uint32_t i = 0; i < b->c.memprops.memoryHeapCount; i++)
        if ((b->c.memprops.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) &&
            b->c.memprops.memoryHeaps[i].size > best)
            best = b->c.memprops.memoryHeaps[i].size;
    *free_bytes = *total_bytes = (size_t)best;
    return 0;
}

/* The five regions of a store (host) and of the device layout. */
static void regions(const vk_backend *b, const sp_gaussians *g, float *host[5], uint32_t off[5], size_t cnt[5]) {
    vk_layout l = vk_layout_of(b);
    size_t n = (size_t)b->n;
    float *h[5] = {g->means, g->log_scales, g->quats, g->opacity_logits, g->sh};
    uint32_t o[5] = {l.means, l.ls, l.quats, l.op, l.sh};
    size_t c[5] = {3 * n, 3 * n, 4 * n, n, 3 * (size_t)b->K * n};
    for (int i = 0; i < 5; i++) host[i] = h[i], off[i] = o[i], cnt[i] = c[i];
}

int vk_put_store(vk_backend *b, vk_buf *dst, const sp_gaussians *g) {
    float *h[5];
    uint32_t o[5];
    size_t cnt[5];
    regions(b, g, h, o, cnt);
    for (int i = 0; i < 5; i++)
        if (vk_upload(&b->c, dst, (VkDeviceSize)o[i] * 4, h[i], cnt[i] * 4)) return -1;
    return 0;
}

int vk_get_store(vk_backend *b, vk_buf *src, sp_gaussians *g) {
    if (g->cap == 0 || g->sh_degree != b->sh_degree) {
        sp_gaussians_free(g);
        sp_gaussians_init(g, b->n > 0 ? b->n : 1, b->sh_degree);
    }
    sp_gaussians_reserve(g, b->n);
    g->n = b->n;
    float *h[5];
    uint32_t o[5];
    size_t cnt[5];
    regions(b, g, h, o, cnt);
    for (int i = 0; i < 5; i++)
        if (vk_download(&b->c, src, (VkDeviceSize)o[i] * 4, h[i], cnt[i] * 4)) return -1;
    return 0;
}

static int zero_buf(vk_backend *b, vk_buf *buf) {
    if (vk_cmd_begin(&b->c, &b->ka, NULL, 0)) return -1;
    vk_fill(&b->ka, buf, 0, buf->size, 0);
    if (vk_cmd_submit(&b->c, &b->ka)) return -1;
    return vk_cmd_wait(&b->c, &b->ka, NULL);
}

static int vk_set_gaussians(sp_backend *base, const sp_gaussians *g, const sp_gaussians *m, const sp_gaussians *v) {
    vk_backend *b = (vk_backend *)base;
    if (vk_wait_all(b) || vk_ensure_gaussians(b, g->n, g->sh_degree)) return -1;
    b->n = g->n;
    if (vk_put_store(b, &b->P, g)) return -1;
    sp_gaussians pm, pv; /* adam.moments16: the moments packed (moments16_rule.h), m zeros when not given */
    memset(&pm, 0, sizeof pm), memset(&pv, 0, sizeof pv);
    int rc = 0;
    if (b->base.cfg.moments16 && (m || v)) {
        if (m) {
            sp_gaussians_clone(&pm, m);
        } else {
            rc = sp_gaussians_try_init(&pm, g->n, g->sh_degree) || sp_gaussians_try_reserve(&pm, g->n > 0 ? g->n : 1);
            if (!rc) pm.n = g->n, sp_gaussians_zero(&pm);
        }
        if (v && !rc) sp_gaussians_clone(&pv, v);
        if (!rc) {
            sp_m16_pack_model(&pm, v ? &pv : NULL);
            m = &pm;
            if (v) v = &pv;
        }
    }
    rc = rc || (m ? vk_put_store(b, &b->M1, m) : zero_buf(b, &b->M1)) ||
         (v ? vk_put_store(b, &b->M2, v) : zero_buf(b, &b->M2));
    if (pm.means) sp_gaussians_free(&pm);
    if (pv.means) sp_gaussians_free(&pv);
    if (rc) return -1;
    if (zero_buf(b, &b->st_accum) || zero_buf(b, &b->st_count) || zero_buf(b, &b->st_maxr)) return -1;
    return 0;
}

static int vk_get_gaussians(sp_backend *base, sp_gaussians *g, sp_gaussians *m, sp_gaussians *v) {
    vk_backend *b = (vk_backend *)base;
    if (vk_wait_all(b) || vk_get_store(b, &b->P, g)) return -1;
    if (m && vk_get_store(b, &b->M1, m)) return -1;
    if (v && vk_get_store(b, &b->M2, v)) return -1;
    if (b->base.cfg.moments16 && (m || v)) { /* unpacked from M1's words */
        sp_gaussians w;
        memset(&w, 0, sizeof w);
        if (!m && vk_get_store(b, &b->M1, &w)) {
            if (w.means) sp_gaussians_free(&w);
            return -1;
        }
        sp_m16_unpack_model(m ? m : &w, m, v);
        if (w.means) sp_gaussians_free(&w);
    }
    return 0;
}

static int vk_num_gaussians(sp_backend *base) { return ((vk_backend *)base)->n; }

/* Folds the device's loss sums of finished steps into the host mean. */
uint32_t vk_ring_next(const vk_backend *b) { return (uint32_t)((b->ring_head + b->ring_n) % VK_LOSS_RING); }

/* Adds the loss sums of the finished steps to loss_sum: every step's after waiting for them all
 * (all), else those of every step but the ones still in flight (the newest one or two, live
 * until their command buffer is waited for, and a skipped one with every step after it), without
 * waiting, so that the device is never left idle for a loss read-back. */
static int fold_ring(vk_backend *b, int all) {
    if (all && vk_wait_all(b)) return -1;
    int live = b->kc_step[0].live + b->kc_step[1].live, k = b->ring_n - live;
    const float *r = b->ring.map;
    for (int j = 0; j < k; j++) {
        int s = (b->ring_head + j) % VK_LOSS_RING;
        double lam = b->ring_lambda[s], cnt = b->ring_count[s];
        double loss = (1.0 - lam) * (double)r[2 * s] / cnt + lam * (1.0 - (double)r[2 * s + 1] / cnt);
        if (isfinite(loss)) b->loss_sum += loss;
        else b->loss_bad = 1;
        b->loss_steps++;
    }
    if (k > 0) b->ring_head = (b->ring_head + k) % VK_LOSS_RING, b->ring_n -= k;
    return 0;
}

/* The camera of a step's view and where its pixels start in the image buffer: an uploaded view,
 * or a staging slot (stage_view). */
static const sp_camera *step_camera(const vk_backend *b, const sp_step_args *a, int64_t *pix_off) {
    if (pix_off) *pix_off = a->staged ? a->view * b->slot_px : b->view_off[a->view];
    return a->staged ? &b->slot_cam[a->view] : &b->views[a->view].cam;
}

/* A whole training step into k (it waits for k's previous submission first): project, the pair
 * count, emit_pairs .. adam sized on the device by the count (vk_rec_bins), the model-changing
 * dispatches gated by pair_args.comp (skipped with the pair work when the pairs do not fit), then
 * the step's pair count and skip flag into its words of rb. clear: clears the skip flag first (the
 * first step run again after a skip). */
static int rec_step(vk_backend *b, int slot, const sp_step_args *a, uint32_t ring_slot, int clear) {
    vk_cmd *k = &b->kc[slot];
    vk_ctx *c = &b->c;
    int prof = b->base.cfg.profile;
    int64_t pix_off;
    const sp_camera *cam = step_camera(b, a, &pix_off);
    if (vk_cmd_begin(c, k, prof ? b->ms : NULL, prof)) return -1;
    if (clear) vk_fill(k, &b->pargs, VK_PA_OVERFLOW * 4, 4, 0);
    b->gated = 1;
    int rc = vk_rec_project(b, k, cam, a->sh_degree) || vk_rec_count(b, k, b->n) || vk_rec_bins(b, k, cam, b->n) ||
             vk_rec_rasterize(b, k, cam, a->bg, 1);
    rc = rc || vk_rec_loss(b, k, cam->width, cam->height, a->ssim_weight, ring_slot, a->bg, pix_off) ||
         vk_rec_backward(b, k, cam, a->bg, b->n) || vk_rec_project_back(b, k, cam, a->sh_degree, a->collect_stats);
    if (!rc && (a->opacity_reg != 0.0f || a->scale_reg != 0.0f)) { /* MCMC: into the gradients, before Adam */
        rc = vk_rec_mcmc_reg(b, k, a->opacity_reg, a->scale_reg);
        vk_stamp(c, k, SP_STAGE_PROJECT_BACK);
    }
    rc = rc || rec_adam(b, k, a);
    if (!rc && a->noise_scale != 0.0f) { /* MCMC: after the update, as the reference; profiled under adam */
        rc = vk_rec_mcmc_noise(b, k, a->noise_scale, a->noise_seed);
        vk_stamp(c, k, SP_STAGE_ADAM);
    }
    b->gated = 0;
    if (rc) return -1;
    VkDeviceSize st = (VkDeviceSize)(VK_RB_STEP + 2 * slot) * 4;
    vk_copy(k, &b->offsets, (VkDeviceSize)b->n * 4, &b->rb, st, 4);
    vk_copy(k, &b->pargs, VK_PA_OVERFLOW * 4, &b->rb, st + 4, 4);
    b->kc_step[slot].live = 1;
    b->kc_step[slot].skipped = 0;
    b->kc_step[slot].args = *a;
    b->kc_step[slot].ring_slot = ring_slot;
    return vk_cmd_submit(c, k);
}

/* The steps the device skipped (vk_wait_all, every command buffer waited for), recorded again over
 * pair buffers grown for the largest count they read, and submitted in their order; the first
 * clears the skip flag. They are the last steps submitted (a skip stops every later step), so
 * running them now keeps the order of the updates. */
static int replay(vk_backend *b) {
    int order[2], m = 0;
    for (int i = 0; i < 2; i++)
        if (b->kc_step[i].live && b->kc_step[i].skipped) order[m++] = i;
    if (m == 2 && b->kc_step[order[0]].seq > b->kc_step[order[1]].seq) order[0] = 1, order[1] = 0;
    b->replaying = 1;
    int rc = vk_ensure_pairs(b, b->np_seen + b->np_seen / 8, 0);
    for (int j = 0; j < m && !rc; j++) {
        int i = order[j];
        rc = rec_step(b, i, &b->kc_step[i].args, b->kc_step[i].ring_slot, j == 0);
        b->replays++;
    }
    b->skipped = 0;
    b->replaying = 0;
    return rc;
}

/* A step: one command buffer, submitted at once (rec_step). Before it is recorded, its command
 * buffer's previous step (two steps ago) is waited for, the device still busy with the step in
 * between; that step's status comes back then: when the device skipped it, the skipped steps run
 * again first (vk_wait_all); when its pair count comes near the pair buffers' capacity, they grow
 * (with the device idle) before they are outgrown. */
static int vk_train_step(sp_backend *base, const sp_step_args *a) {
    vk_backend *b = (vk_backend *)base;
    if (a->view < 0 || a->view >= (a->staged ? b->num_slots : b->num_views) ||
        (a->staged && b->slot_cam[a->view].width <= 0))
        return sp_error("train_step: %s %d out of range", a->staged ? "staging slot" : "view", a->view);
    if (a->accumulate) /* project_back overwrites the gradients: no sums over views yet */
        return sp_error("vulkan: trainer.batch > 1 (gradients summed over views) is not supported by this backend; "
                        "use trainer.batch = 1, or the cpu or cuda backend");
    const sp_camera *cam = step_camera(b, a, NULL);
    double t_enter = sp_now();
    if (b->ring_n == VK_LOSS_RING && fold_ring(b, 1)) return -1;
    int slot = b->kc_next;
    if (kc_wait(b, slot) || (b->skipped && vk_wait_all(b))) return -1;
    if (b->np_seen > b->pair_cap - b->pair_cap / 8 && vk_ensure_pairs(b, b->np_seen + b->np_seen / 4, 0)) return -1;
    if (vk_ensure_image(b, cam->width, cam->height)) return -1;
    uint32_t ring_slot = vk_ring_next(b);
    b->kc_step[slot].seq = b->steps;
    if (rec_step(b, slot, a, ring_slot, 0)) return -1;
    b->kc_next = 1 - b->kc_next;
    b->ring_lambda[ring_slot] = a->ssim_weight;
    b->ring_count[ring_slot] = 3.0 * (double)cam->width * cam->height;
    b->ring_n++;
    b->steps++;
    b->step_ms += 1e3 * (sp_now() - t_enter);
    return 0;
}

static int vk_take_loss(sp_backend *base, double *mean_loss, int *steps) {
    vk_backend *b = (vk_backend *)base;
    double t0 = sp_now();
    int rc = fold_ring(b, 0);
    b->take_ms += 1e3 * (sp_now() - t0);
    if (rc) return -1;
    *steps = b->loss_steps;
    *mean_loss = b->loss_bad ? NAN : (b->loss_steps ? b->loss_sum / b->loss_steps : 0.0);
    b->loss_sum = 0;
    b->loss_steps = 0;
    b->loss_bad = 0;
    return 0;
}

/* Refine: decisions on the host from the small per-Gaussian fields, SH rows and moments gathered
 * on the device (vk_refine.c); its host time (after the steps in flight) is the `refine` row. */
static int vk_refine(sp_backend *base, const sp_refine_args *a, sp_refine_result *r) {
    vk_backend *b = (vk_backend *)base;
    if (vk_wait_all(b)) return -1; /* the steps in flight are their own rows */
    double t0 = sp_now();
    int rc = vk_refine_run(b, a, r);
    b->ms[SP_STAGE_REFINE] += 1e3 * (sp_now() - t0);
    return rc;
}

/* On the device (vk_reorder.c); its host time, the device's work included, is the `refine` row,
 * as refine's. */
static int vk_reorder(sp_backend *base) {
    vk_backend *b = (vk_backend *)base;
    if (vk_wait_all(b)) return -1; /* the steps in flight are their own rows */
    double t0 = sp_now();
    int rc = vk_reorder_run(b);
    b->ms[SP_STAGE_REFINE] += 1e3 * (sp_now() - t0);
    return rc;
}

static int vk_mcmc_read(sp_backend *base, float *opacity_logits, float *log_scales) {
    vk_backend *b = (vk_backend *)base;
    vk_layout l = vk_layout_of(b);
    size_t n = (size_t)b->n;
    if (vk_wait_all(b)) return -1;
    if (n == 0) return 0;
    return vk_download(&b->c, &b->P, (VkDeviceSize)l.op * 4, opacity_logits, n * 4) ||
                   vk_download(&b->c, &b->P, (VkDeviceSize)l.ls * 4, log_scales, 3 * n * 4)
               ? -1
               : 0;
}

/* Its host time is the `refine` row, as refine's. */
static int vk_mcmc_apply(sp_backend *base, const sp_mcmc_plan *p) {
    vk_backend *b = (vk_backend *)base;
    if (vk_wait_all(b)) return -1;
    double t0 = sp_now();
    int rc = vk_mcmc_apply_run(b, p);
    b->ms[SP_STAGE_REFINE] += 1e3 * (sp_now() - t0);
    return rc;
}

/* Decided on the device (vk_mcmc.c); its host time, the device's work included, is the `refine`
 * row, as refine's. */
static void vk_mcmc_prepare(sp_backend *base) { vk_lazy_start(&((vk_backend *)base)->c); }

static int vk_mcmc_refine(sp_backend *base, float dead_opacity, int add, uint64_t seed, int *relocated, int *added) {
    vk_backend *b = (vk_backend *)base;
    if (vk_wait_all(b)) return -1; /* the steps in flight are their own rows */
    double t0 = sp_now();
    int rc = vk_mcmc_refine_run(b, dead_opacity, add, seed, relocated, added);
    b->ms[SP_STAGE_REFINE] += 1e3 * (sp_now() - t0);
    return rc;
}

static int vk_render(sp_backend *base, const sp_camera *cam, int sh_degree, const float bg[3], float *rgb) {
    vk_backend *b = (vk_backend *)base;
    if (vk_wait_all(b) || forward(b, cam, sh_degree, bg, 0, 0) || vk_cmd_submit(&b->c, &b->kb) || vk_wait_all(b))
        return -1;
    return vk_download(&b->c, &b->rgb, 0, rgb, (size_t)cam->width * cam->height * 3 * 4);
}

/* One forward pass per camera with rasterize_w adding into b->wsum, one download at the end. */
static int vk_blend_weights(sp_backend *base, const sp_camera *cams, int count, float *weight) {
    vk_backend *b = (vk_backend *)base;
    int n = b->n;
    if (n == 0) return 0;
    VkDeviceSize bytes = (VkDeviceSize)n * 8;
    const float bg[3] = {0.0f, 0.0f, 0.0f};
    if (vk_wait_all(b) || vk_buf_ensure(&b->c, &b->wsum, bytes, 0) || vk_cmd_begin(&b->c, &b->ka, NULL, 0)) return -1;
    vk_fill(&b->ka, &b->wsum, 0, bytes, 0);
    if (vk_cmd_submit(&b->c, &b->ka) || vk_cmd_wait(&b->c, &b->ka, NULL)) return -1;
    for (int c = 0; c < count; c++)
        if (forward(b, &cams[c], 0, bg, 0, 2) || vk_cmd_submit(&b->c, &b->kb) || vk_wait_all(b)) return -1;
    uint64_t *h = sp_try_alloc((size_t)n, sizeof(uint64_t), "blend weights", NULL);
    if (!h) return -1;
    int rc = vk_download(&b->c, &b->wsum, 0, h, (size_t)bytes);
    if (rc == 0)
        for (int i = 0; i < n; i++) weight[i] = (float)((double)h[i] / SP_BLEND_WEIGHT_UNIT);
    free(h);
    return rc;
}

/* Whether every parameter is finite: decided on the device (finite.comp), one word read back
 * (word 1 of rb) instead of the whole store. */
static int finite_on_device(vk_backend *b);

static int vk_params_finite(sp_backend *base) {
    vk_backend *b = (vk_backend *)base;
    double t0 = sp_now();
    int ok = finite_on_device(b);
    b->finite_ms += 1e3 * (sp_now() - t0);
    return ok;
}

static int finite_on_device(vk_backend *b) {
    if (b->n == 0) return 1;
    vk_layout l = vk_layout_of(b);
    uint32_t n = (uint32_t)b->n, w[32] = {0};
    uint32_t reg[10] = {l.means, 3 * n, l.ls, 3 * n, l.quats, 4 * n, l.op, n, l.sh, 3 * (uint32_t)b->K * n};
    memcpy(w, reg, sizeof reg);
    w[10] = n * (uint32_t)sp_gaussian_floats(b->K);
    w[11] = 1;
    vk_buf *bufs[] = {&b->P, &b->rb};
    if (vk_wait_all(b) || vk_cmd_begin(&b->c, &b->ka, NULL, 0)) return 0;
    vk_fill(&b->ka, &b->rb, 4, 4, 0);
    if (vk_dispatch(&b->c, &b->ka, VP_FINITE, bufs, 2, w, vk_groups(w[10], VK_WG)) || vk_cmd_submit(&b->c, &b->ka) ||
        vk_cmd_wait(&b->c, &b->ka, NULL))
        return 0;
    return ((const uint32_t *)b->rb.map)[1] == 0;
}

static int vk_get_profile(sp_backend *base, sp_profile *p) {
    vk_backend *b = (vk_backend *)base;
    if (vk_wait_all(b)) return -1;
    memset(p, 0, sizeof *p);
    p->num_stages = SP_STAGE_COUNT;
    for (int i = 0; i < SP_STAGE_COUNT; i++) {
        p->name[i] = sp_stage_name(i);
        p->ms[i] = b->ms[i];
        p->busy_ms += b->ms[i];
    }
    p->calls = b->steps;
    p->peak_bytes = b->c.peak_bytes;
    return 0;
}

/* backend.h's score: the render stays on the device, where score.comp quantizes and scores it (see
 * there); one command buffer with the render, the ground truth and the table going up through the
 * staging buffer, and the partial sums (and p8, when asked for) coming down through it. The sums
 * are added here in workgroup order, as CUDA's cu_score adds its blocks'. */
static int vk_score(sp_backend *base, const sp_camera *cam, int sh_degree, const float bg[3], const uint8_t *g8,
                    uint8_t *p8, uint64_t *sse, double *ssim) {
    vk_backend *b = (vk_backend *)base;
    vk_ctx *c = &b->c;
    int w = cam->width, h = cam->height;
    if (w <= 0 || h <= 0) return sp_error("vulkan: score: empty camera %dx%d", w, h);
    size_t bytes = (size_t)w * h * 3;
    uint32_t tx = (uint32_t)((w + VK_SCORE_TILE - 1) / VK_SCORE_TILE);
    uint32_t groups = tx * (uint32_t)((h + VK_SCORE_TILE - 1) / VK_SCORE_TILE) * 3;
    /* staging: [0, gb) the ground truth (then p8), [gb, gb + tb) the table, then the partial sums */
    VkDeviceSize gb = (bytes + 15) & ~(size_t)15, tb = VK_SCORE_TAB * sizeof(double), pb = (VkDeviceSize)groups * 16;
    if (vk_wait_all(b) || vk_buf_ensure(c, &b->score_u8, 2 * gb, 0) || vk_buf_ensure(c, &b->score_f64, tb + pb, 0) ||
        vk_buf_ensure(c, &c->staging, gb + tb + pb, 1) || forward(b, cam, sh_degree, bg, 0, 0))
        return -1;
    char *st = c->staging.map;
    memcpy(st, g8, bytes);
    double *tab = (double *)(st + gb);
    for (int v = 0; v < VK_SCORE_WIN; v++) tab[v] = (double)((float)v / 255.0f); /* as sp_ssim_u8 */
    sp_ssim_window(tab + VK_SCORE_WIN);
    tab[VK_SCORE_C1] = SP_SSIM_C1, tab[VK_SCORE_C2] = SP_SSIM_C2;
    vk_cmd *k = &b->kb; /* forward left it open after rasterize */
    vk_copy(k, &c->staging, 0, &b->score_u8, 0, gb);
    vk_copy(k, &c->staging, gb, &b->score_f64, 0, tb);
    if (p8) vk_fill(k, &b->score_u8, gb, gb, 0);
    uint32_t words[32] = {(uint32_t)w, (uint32_t)h, tx, groups, p8 != NULL, (uint32_t)(gb / 4)};
    vk_buf *bufs[] = {&b->rgb, &b->score_u8, &b->score_f64};
    if (vk_dispatch(c, k, VP_SCORE, bufs, 3, words, groups)) return -1;
    vk_copy(k, &b->score_f64, tb, &c->staging, gb + tb, pb);
    if (p8) vk_copy(k, &b->score_u8, gb, &c->staging, 0, gb);
    if (vk_cmd_submit(c, k) || vk_wait_all(b)) return -1;
    const double *part = (const double *)(st + gb + tb);
    double sum = 0.0;
    uint64_t s = 0;
    for (uint32_t g = 0; g < groups; g++) {
        sum += part[2 * g];
        s += (uint64_t)part[2 * g + 1];
    }
    *sse = s;
    *ssim = sum / (3.0 * (double)w * (double)h);
    if (p8) memcpy(p8, st, bytes);
    return 0;
}

static const sp_backend_ops vk_ops = {
    .name = "vulkan",
    .destroy = vk_destroy,
    .upload_views = vk_upload_views,
    .stage_view = vk_stage_view,
    .stage_slots = vk_stage_slots,
    .device_memory = vk_device_memory,
    .set_gaussians = vk_set_gaussians,
    .get_gaussians = vk_get_gaussians,
    .num_gaussians = vk_num_gaussians,
    .train_step = vk_train_step,
    .take_loss = vk_take_loss,
    .refine = vk_refine,
    .render = vk_render,
    .params_finite = vk_params_finite,
    .get_profile = vk_get_profile,
    .blend_weights = vk_blend_weights,
    .mcmc_read = vk_mcmc_read,
    .mcmc_apply = vk_mcmc_apply,
    .mcmc_refine = vk_mcmc_refine,
    .mcmc_prepare = vk_mcmc_prepare,
    .score = vk_score,
    .reorder = vk_reorder,
    .stages = &vk_stage_ops,
};

static sp_backend *vk_create(const sp_backend_config *cfg) {
    vk_backend *b = SP_NEW(vk_backend, 1);
    b->ops = vk_ops;
    b->base.ops = &b->ops;
    b->base.cfg = *cfg;
    if (vk_ctx_init(&b->c, cfg->device, !cfg->cas_atomics)) {
        free(b);
        return NULL;
    }
    /* Without 64-bit floats (Metal has none: MoltenVK; some Intel GPUs) the evaluation downloads
     * each render and scores it on the host, as for any backend without the op: the same scores. */
    if (!b->c.float64) b->ops.score = NULL;
    if (!b->c.ts_period && cfg->profile) SP_WARN("vulkan: the device has no timestamps; profile rows stay 0");
    if (vk_cmd_init(&b->c, &b->ka) || vk_cmd_init(&b->c, &b->kb) || vk_cmd_init(&b->c, &b->kc[0]) ||
        vk_cmd_init(&b->c, &b->kc[1]) || vk_buf_ensure(&b->c, &b->rb, VK_RB_WORDS * 4, 1) ||
        vk_buf_ensure(&b->c, &b->ring, VK_LOSS_RING * 8, 1) || vk_buf_ensure(&b->c, &b->pargs, VK_PA_WORDS * 4, 0) || vk_ensure_gaussians(b, 1, 0) ||
        vk_ensure_image(b, 16, 16) || vk_ensure_pairs(b, 1024, 1) || zero_buf(b, &b->pargs)) {
        vk_destroy(&b->base);
        return NULL;
    }
    return &b->base;
}

static int vk_kind_describe(const sp_backend_config *cfg, char *out, size_t n) {
    if (vk_describe(cfg->device, cfg->cas_atomics, out, n) == 0) return 0;
    snprintf(out, n, "vulkan: %s", sp_last_error());
    return -1;
}

/* auto picks a hardware device only (software Vulkan is slower than the cpu backend); the parity
 * harness runs on any, lavapipe included. */
const sp_backend_kind sp_kind_vulkan = {
    .name = "vulkan",
    .gpu = 1,
    .variants = SP_VARIANT_DETERMINISTIC | SP_VARIANT_CAS_ATOMICS,
    .mcmc = 1,
    .available = vk_available,
    .auto_pick = vk_hardware_available,
    .create = vk_create,
    .describe = vk_kind_describe,
};
