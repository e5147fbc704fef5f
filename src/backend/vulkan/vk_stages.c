/* vk_stages.c — the Vulkan backend's single stages over host arrays (backend/stage_ops.h), for
 * the parity harness: each uploads its inputs into the backend's own buffers, records the same
 * pieces a training step records (vk_backend.h), waits, and reads the results back. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/stage_ops.h"
#include "backend/vulkan/vk_backend.h"
#include "core/core.h"

static int degree_of_K(int K) {
    int d = 0;
    while (d < 3 && sp_sh_coeffs(d + 1) <= K) d++;
    return d;
}

/* Runs what `rec` records in command buffer kb, waits for it. */
#define RUN(b, rec)                                                                               \
    do {                                                                                          \
        if (vk_wait_all(b) || vk_cmd_begin(&(b)->c, &(b)->kb, NULL, 0) || (rec) ||                \
            vk_cmd_submit(&(b)->c, &(b)->kb) || vk_cmd_wait(&(b)->c, &(b)->kb, NULL))              \
            return -1;                                                                            \
    } while (0)

static int up(vk_backend *b, vk_buf *d, const void *src, size_t bytes) { return vk_upload(&b->c, d, 0, src, bytes); }
static int down(vk_backend *b, vk_buf *s, void *dst, size_t bytes) { return vk_download(&b->c, s, 0, dst, bytes); }

static int put_params(vk_backend *b, const sp_params *p) {
    if (vk_wait_all(b) || vk_ensure_gaussians(b, p->n, degree_of_K(p->K))) return -1;
    if (b->K != p->K) return sp_error("vulkan stages: %d SH coefficients is not a full degree", p->K);
    b->n = p->n;
    vk_layout l = vk_layout_of(b);
    size_t n = (size_t)p->n;
    const float *h[5] = {p->means, p->log_scales, p->quats, p->opacity_logits, p->sh};
    uint32_t o[5] = {l.means, l.ls, l.quats, l.op, l.sh};
    size_t c[5] = {3 * n, 3 * n, 4 * n, n, 3 * (size_t)p->K * n};
    for (int i = 0; i < 5; i++)
        if (vk_upload(&b->c, &b->P, (VkDeviceSize)o[i] * 4, h[i], c[i] * 4)) return -1;
    return 0;
}

/* The projection fields a stage reads, for n Gaussians. */
static int put_proj(vk_backend *b, const sp_proj *pr, int n) {
    if (vk_wait_all(b) || vk_ensure_gaussians(b, n, b->sh_degree)) return -1;
    b->n = n;
    size_t m = (size_t)n;
    uint32_t *cl = sp_malloc(3 * m * 4 + 4);
    for (size_t i = 0; i < 3 * m; i++) cl[i] = pr->clamped ? pr->clamped[i] : 0;
    int rc = up(b, &b->mean2d, pr->mean2d, 2 * m * 4) || up(b, &b->conic, pr->conic, 3 * m * 4) ||
             up(b, &b->depth, pr->depth, m * 4) || up(b, &b->opac, pr->opacity, m * 4) ||
             up(b, &b->color, pr->color, 3 * m * 4) || up(b, &b->rect, pr->rect, 4 * m * 4) ||
             up(b, &b->radius, pr->radius, m * 4) || up(b, &b->clamped, cl, 3 * m * 4);
    free(cl);
    return rc ? -1 : 0;
}

/* The lists as tile_ranges leaves them, and what the warp masks (vk_rec_masks) read besides: each
 * sorted pair's tile (the sorted tile words, in set 0) and, in pargs, the pair count, the
 * workgroups of tile_ranges (pair_args.comp's words for the count), the sort's final set (0) and
 * the two-word key layout (the tile words as they are). */
static int put_bins(vk_backend *b, const sp_bins *bins) {
    int tiles = bins->tiles_x * bins->tiles_y;
    b->np = bins->num_pairs;
    if (vk_ensure_pairs(b, b->np, tiles)) return -1;
    b->cur = 0;
    uint32_t *tile = sp_malloc((size_t)(b->np > 0 ? b->np : 1) * 4);
    for (int t = 0; t < tiles; t++)
        for (uint32_t j = bins->range[2 * t]; j < bins->range[2 * t + 1]; j++) tile[j] = (uint32_t)t;
    int rc = up(b, &b->key_hi[0], tile, (size_t)b->np * 4);
    free(tile);
    uint32_t dims[3];
    vk_grid(&b->c, vk_groups(b->np, VK_WG), dims);
    uint32_t np = (uint32_t)b->np, set = 0, two_words = 32;
    if (rc || vk_upload(&b->c, &b->pargs, VK_PA_RANGES * 4, dims, sizeof dims) ||
        vk_upload(&b->c, &b->pargs, VK_PA_NP * 4, &np, 4) ||
        vk_upload(&b->c, &b->pargs, VK_PA_SORT_FINAL * 4, &set, 4) ||
        vk_upload(&b->c, &b->pargs, (VK_PA_KEY + 1) * 4, &two_words, 4))
        return -1;
    return up(b, &b->range, bins->range, (size_t)tiles * 8) || up(b, &b->sorted_gid, bins->ids, (size_t)b->np * 4) ? -1 : 0;
}

static int st_project(sp_backend *base, const sp_params *p, const sp_camera *cam, int sh_degree, sp_proj *out) {
    vk_backend *b = (vk_backend *)base;
    if (put_params(b, p)) return -1;
    RUN(b, vk_rec_project(b, &b->kb, cam, sh_degree));
    size_t m = (size_t)p->n;
    uint32_t *cl = sp_malloc(3 * m * 4 + 4);
    int rc = down(b, &b->mean2d, out->mean2d, 2 * m * 4) || down(b, &b->conic, out->conic, 3 * m * 4) ||
             down(b, &b->depth, out->depth, m * 4) || down(b, &b->opac, out->opacity, m * 4) ||
             down(b, &b->color, out->color, 3 * m * 4) || down(b, &b->rect, out->rect, 4 * m * 4) ||
             down(b, &b->radius, out->radius, m * 4) || down(b, &b->clamped, cl, 3 * m * 4);
    for (size_t i = 0; !rc && i < 3 * m; i++) out->clamped[i] = (uint8_t)cl[i];
    free(cl);
    return rc ? -1 : 0;
}

static int st_bin(sp_backend *base, const sp_proj *proj, int n, const sp_camera *cam, sp_bins *bins) {
    vk_backend *b = (vk_backend *)base;
    if (put_proj(b, proj, n)) return -1;
    RUN(b, vk_rec_count(b, &b->kb, n));
    b->np = *(const uint32_t *)b->rb.map;
    int tx = (cam->width + SP_TILE - 1) / SP_TILE, ty = (cam->height + SP_TILE - 1) / SP_TILE;
    if (vk_ensure_image(b, cam->width, cam->height) || vk_ensure_pairs(b, b->np, tx * ty)) return -1;
    RUN(b, vk_rec_bins(b, &b->kb, cam, n));
    bins->tiles_x = tx;
    bins->tiles_y = ty;
    bins->num_pairs = b->np;
    bins->range = sp_realloc(bins->range, sizeof(uint32_t) * 2 * (size_t)(tx * ty > 0 ? tx * ty : 1));
    if (b->np > bins->cap) {
        free(bins->ids);
        bins->cap = b->np + 1;
        bins->ids = sp_malloc(sizeof(uint32_t) * (size_t)bins->cap);
    }
    return down(b, &b->range, bins->range, (size_t)tx * ty * 8) || down(b, &b->sorted_gid, bins->ids, (size_t)b->np * 4)
               ? -1 : 0;
}

static int st_rasterize(sp_backend *base, const sp_proj *proj, int n, const sp_bins *bins, const sp_camera *cam,
                        const float bg[3], sp_raster_out *out) {
    vk_backend *b = (vk_backend *)base;
    if (put_proj(b, proj, n) || vk_ensure_image(b, cam->width, cam->height) || put_bins(b, bins)) return -1;
    RUN(b, vk_rec_masks(b, &b->kb, cam) || vk_rec_rasterize(b, &b->kb, cam, bg, 0));
    size_t px = (size_t)cam->width * cam->height;
    return down(b, &b->rgb, out->rgb, 3 * px * 4) || down(b, &b->final_T, out->final_T, px * 4) ||
                   down(b, &b->n_contrib, out->n_contrib, px * 4)
               ? -1 : 0;
}

static int st_backward_raster(sp_backend *base, const sp_proj *proj, int n, const sp_bins *bins, const sp_camera *cam,
                              const float bg[3], const sp_raster_out *fwd, const float *dl_drgb, sp_proj_grad *g) {
    vk_backend *b = (vk_backend *)base;
    if (put_proj(b, proj, n) || vk_ensure_image(b, cam->width, cam->height) || put_bins(b, bins)) return -1;
    /* The deterministic path needs each sorted pair's emission index (pairs of a Gaussian in
     * row-major tile order) and the per-Gaussian pair offsets: rebuilt from the lists. */
    int tiles = bins->tiles_x * bins->tiles_y;
    int64_t np = bins->num_pairs;
    uint32_t *off = SP_NEW(uint32_t, (size_t)n + 1), *cur = SP_NEW(uint32_t, (size_t)n + 1);
    uint32_t *val = sp_malloc(sizeof(uint32_t) * (size_t)(np > 0 ? np : 1));
    for (int64_t s = 0; s < np; s++) off[bins->ids[s] + 1]++;
    for (int i = 0; i < n; i++) off[i + 1] += off[i];
    for (int t = 0; t < tiles; t++)
        for (uint32_t s = bins->range[2 * t]; s < bins->range[2 * t + 1]; s++) {
            uint32_t i = bins->ids[s];
            val[s] = off[i] + cur[i]++;
        }
    size_t px = (size_t)cam->width * cam->height;
    int rc = up(b, &b->offsets, off, ((size_t)n + 1) * 4) || up(b, &b->val[0], val, (size_t)np * 4) ||
             up(b, &b->dl_drgb, dl_drgb, 3 * px * 4);
    free(off);
    free(cur);
    free(val);
    if (rc) return -1;
    /* the device's forward pass replaces fwd (the harness passes this backend's own): it leaves
     * the per-chunk state and the chunk counts that the chunked backward reads */
    (void)fwd;
    RUN(b, vk_rec_masks(b, &b->kb, cam) || vk_rec_rasterize(b, &b->kb, cam, bg, 1) ||
               vk_rec_backward(b, &b->kb, cam, bg, n));
    float *pg = sp_malloc(9 * (size_t)n * 4 + 4);
    if (down(b, &b->pgrad, pg, 9 * (size_t)n * 4)) {
        free(pg);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        const float *q = pg + 9 * (size_t)i;
        g->mean2d[2 * i] = q[0], g->mean2d[2 * i + 1] = q[1];
        g->conic[3 * i] = q[2], g->conic[3 * i + 1] = q[3], g->conic[3 * i + 2] = q[4];
        g->opacity[i] = q[5];
        g->color[3 * i] = q[6], g->color[3 * i + 1] = q[7], g->color[3 * i + 2] = q[8];
    }
    free(pg);
    return 0;
}

static int st_project_back(sp_backend *base, const sp_params *p, const sp_camera *cam, int sh_degree, const sp_proj *proj,
                           const sp_proj_grad *g, sp_params_grad *out) {
    vk_backend *b = (vk_backend *)base;
    if (put_params(b, p)) return -1;
    size_t m = (size_t)p->n;
    uint32_t *cl = sp_malloc(3 * m * 4 + 4);
    float *pg = sp_malloc(9 * m * 4 + 4);
    for (size_t i = 0; i < 3 * m; i++) cl[i] = proj->clamped[i];
    for (size_t i = 0; i < m; i++) {
        float *q = pg + 9 * i;
        q[0] = g->mean2d[2 * i], q[1] = g->mean2d[2 * i + 1];
        q[2] = g->conic[3 * i], q[3] = g->conic[3 * i + 1], q[4] = g->conic[3 * i + 2];
        q[5] = g->opacity[i];
        q[6] = g->color[3 * i], q[7] = g->color[3 * i + 1], q[8] = g->color[3 * i + 2];
    }
    int rc = up(b, &b->rect, proj->rect, 4 * m * 4) || up(b, &b->clamped, cl, 3 * m * 4) ||
             up(b, &b->radius, proj->radius, m * 4) || up(b, &b->pgrad, pg, 9 * m * 4);
    free(cl);
    free(pg);
    if (rc) return -1;
    RUN(b, vk_rec_project_back(b, &b->kb, cam, sh_degree, 0));
    vk_layout l = vk_layout_of(b);
    float *h[5] = {out->means, out->log_scales, out->quats, out->opacity_logits, out->sh};
    uint32_t o[5] = {l.means, l.ls, l.quats, l.op, l.sh};
    size_t c[5] = {3 * m, 3 * m, 4 * m, m, 3 * (size_t)p->K * m};
    for (int i = 0; i < 5; i++)
        if (vk_download(&b->c, &b->Gr, (VkDeviceSize)o[i] * 4, h[i], c[i] * 4)) return -1;
    return 0;
}

static int st_loss(sp_backend *base, const float *rgb, const float *target, int w, int h, float ssim_weight,
                   double *loss, float *dl_drgb) {
    vk_backend *b = (vk_backend *)base;
    size_t px = (size_t)w * h;
    if (vk_wait_all(b) || vk_ensure_image(b, w, h) || up(b, &b->rgb, rgb, 3 * px * 4) ||
        up(b, &b->target, target, 3 * px * 4))
        return -1;
    if (b->ring_n >= VK_LOSS_RING) return sp_error("vulkan stages: loss ring full");
    uint32_t slot = vk_ring_next(b);
    RUN(b, vk_rec_loss(b, &b->kb, w, h, ssim_weight, slot, NULL, 0));
    const float *r = (const float *)b->ring.map + 2 * slot;
    double cnt = 3.0 * (double)px, lam = ssim_weight;
    *loss = (1.0 - lam) * (double)r[0] / cnt + lam * (1.0 - (double)r[1] / cnt);
    if (dl_drgb && down(b, &b->dl_drgb, dl_drgb, 3 * px * 4)) return -1;
    return 0;
}

static int st_adam(sp_backend *base, float *param, const float *grad, float *m, float *v, int64_t count, float lr,
                   float beta1, float beta2, float eps, int step, int sparse) {
    vk_backend *b = (vk_backend *)base;
    size_t bytes = (size_t)count * 4;
    if (vk_wait_all(b) || vk_ensure_gaussians(b, (int)(count / sp_gaussian_floats(b->K)) + 1, b->sh_degree)) return -1;
    if (up(b, &b->P, param, bytes) || up(b, &b->Gr, grad, bytes) || up(b, &b->M1, m, bytes) || up(b, &b->M2, v, bytes))
        return -1;
    sp_adam_bias_t bias = sp_adam_bias(beta1, beta2, eps, step);
    uint32_t w[32] = {0};
    w[0] = vk_f2u(sp_adam_lr(&bias, lr));
    w[6] = vk_f2u(beta1), w[7] = vk_f2u(beta2), w[8] = vk_f2u(bias.eps);
    const uint32_t reg[10] = {0, (uint32_t)count};
    memcpy(w + 11, reg, sizeof reg);
    w[21] = 3, w[22] = vk_adam_groups(reg), w[23] = sparse ? 1u : 0u;
    vk_buf *bufs[] = {&b->P, &b->Gr, &b->M1, &b->M2, &b->rect}; /* word 9 = 0: no Gaussian in view */
    RUN(b, vk_dispatch(&b->c, &b->kb, VP_ADAM, bufs, 5, w, vk_groups(w[22], VK_WG)));
    return down(b, &b->P, param, bytes) || down(b, &b->M1, m, bytes) || down(b, &b->M2, v, bytes) ? -1 : 0;
}

static int st_refine(sp_backend *base, sp_gaussians *g, sp_gaussians *m, sp_gaussians *v, const float *grad_accum,
                     const int32_t *grad_count, const float *max_radius, const sp_refine_args *a, sp_refine_result *r) {
    vk_backend *b = (vk_backend *)base;
    const sp_backend_ops *ops = base->ops;
    if (ops->set_gaussians(base, g, m, v)) return -1;
    size_t n = (size_t)g->n;
    if (up(b, &b->st_accum, grad_accum, n * 4) || up(b, &b->st_count, grad_count, n * 4) ||
        up(b, &b->st_maxr, max_radius, n * 4))
        return -1;
    if (ops->refine(base, a, r)) return -1;
    return ops->get_gaussians(base, g, m, v);
}

static int st_mcmc_step(sp_backend *base, sp_gaussians *g, sp_gaussians *grad, float opacity_reg, float scale_reg,
                        float noise_scale, uint64_t seed) {
    vk_backend *b = (vk_backend *)base;
    if (base->ops->set_gaussians(base, g, NULL, NULL) || vk_put_store(b, &b->Gr, grad)) return -1;
    RUN(b, vk_rec_mcmc_reg(b, &b->kb, opacity_reg, scale_reg) || vk_rec_mcmc_noise(b, &b->kb, noise_scale, seed));
    return vk_get_store(b, &b->P, g) || vk_get_store(b, &b->Gr, grad) ? -1 : 0;
}

static int st_mcmc_apply(sp_backend *base, sp_gaussians *g, sp_gaussians *m, sp_gaussians *v, const sp_mcmc_plan *p) {
    const sp_backend_ops *ops = base->ops;
    if (ops->set_gaussians(base, g, m, v) || ops->mcmc_apply(base, p)) return -1;
    return ops->get_gaussians(base, g, m, v);
}

/* The pair sort over host arrays: the pairs into set 0 of the pair buffers and their count into
 * offsets[0], where pair_args.comp reads it (as a training step's count), then the sort; the sorted
 * high words and values come back from the set the sort's plan names. */
static int st_sort(sp_backend *base, int64_t n, int hi_bits, uint32_t *key_hi, const uint32_t *key_lo, uint32_t *val) {
    vk_backend *b = (vk_backend *)base;
    if (n < 0 || n > 0xffffffffll - VK_SORT_CHUNK || hi_bits < 0 || hi_bits > 32)
        return sp_error("vulkan stages: cannot sort %lld pairs of %d-bit high words", (long long)n, hi_bits);
    if (vk_wait_all(b) || vk_ensure_pairs(b, n, 1)) return -1;
    uint32_t count = (uint32_t)n, set = 0;
    size_t bytes = (size_t)n * 4;
    if (up(b, &b->offsets, &count, 4) ||
        (n && (up(b, &b->key_hi[0], key_hi, bytes) || up(b, &b->key_lo[0], key_lo, bytes) || up(b, &b->val[0], val, bytes))))
        return -1;
    uint32_t aw[32] = {0}; /* count at offsets[0]; no gated dispatch */
    aw[21] = b->c.max_wg_count;
    aw[22] = b->pair_cap < 0xffffffffll ? (uint32_t)b->pair_cap : 0xffffffffu;
    vk_buf *ab[] = {&b->offsets, &b->pargs};
    RUN(b, vk_dispatch(&b->c, &b->kb, VP_PAIR_ARGS, ab, 2, aw, 1) || vk_rec_sort(b, &b->kb, 4 + (hi_bits + 7) / 8));
    if (vk_download(&b->c, &b->pargs, VK_PA_SORT_FINAL * 4, &set, 4)) return -1;
    if (set > 1) return sp_error("vulkan stages: the sort's plan names set %u", set);
    return n && (down(b, &b->key_hi[set], key_hi, bytes) || down(b, &b->val[set], val, bytes)) ? -1 : 0;
}

const sp_stage_ops vk_stage_ops = {
    .project = st_project,
    .bin = st_bin,
    .rasterize = st_rasterize,
    .backward_raster = st_backward_raster,
    .project_back = st_project_back,
    .loss = st_loss,
    .adam = st_adam,
    .refine = st_refine,
    .mcmc_step = st_mcmc_step,
    .mcmc_apply = st_mcmc_apply,
    .sort = st_sort,
};
