/* vk_refine.c — the `refine` stage of the Vulkan backend without a round trip of the whole model.
 * One transfer brings down what the decisions need: the parameters' small fields (means,
 * log-scales, quaternions, opacity logits: 11 of the 59 floats of a degree-3 Gaussian) and the
 * three densification statistics. The host runs cpu_refine on them, so the decisions, the order
 * and the new values are the CPU reference's exactly. Each Gaussian carries, as a tag in the DC
 * slot of the SH-less parameter copy, the index it came from; the SH-less moment copy carries
 * only a tag too (in its first mean: cpu_refine moves it with the Gaussian and zeroes it for a
 * new clone or split child). The rest never leaves the device: the parameters' SH rows and the
 * whole Adam moments are gathered by those indices (refine_gather.comp) and only the new small
 * fields of the parameters go up, with the indices, in one transfer. */
#include <stdlib.h>
#include <string.h>

#include "backend/ref/mcmc.h"
#include "backend/ref/refine.h"
#include "backend/vulkan/vk_backend.h"
#include "core/core.h"

static void put_tag(float *dst, uint32_t t) { memcpy(dst, &t, sizeof t); }

static uint32_t get_tag(const float *src) {
    uint32_t t;
    memcpy(&t, src, sizeof t);
    return t;
}

/* The parameters' small fields of g->n Gaussians and the statistics, in one transfer through the
 * staging buffer. */
static int download(vk_backend *b, sp_gaussians *g, sp_refine_stats *st) {
    vk_ctx *c = &b->c;
    vk_layout l = vk_layout_of(b);
    size_t n = (size_t)g->n;
    if (n == 0) return 0;
    void *h[7] = {g->means, g->log_scales, g->quats, g->opacity_logits, st->grad_accum, st->grad_count,
                  st->max_radius};
    vk_buf *from[7] = {&b->P, &b->P, &b->P, &b->P, &b->st_accum, &b->st_count, &b->st_maxr};
    VkDeviceSize off[7] = {l.means, l.ls, l.quats, l.op, 0, 0, 0}, cnt[7] = {3 * n, 3 * n, 4 * n, n, n, n, n};
    if (vk_buf_ensure(c, &c->staging, 14 * n * 4, 1) || vk_cmd_begin(c, &b->ka, NULL, 0)) return -1;
    VkDeviceSize at = 0;
    for (int i = 0; i < 7; i++) {
        vk_copy(&b->ka, from[i], off[i] * 4, &c->staging, at, cnt[i] * 4);
        at += cnt[i] * 4;
    }
    if (vk_cmd_submit(c, &b->ka) || vk_cmd_wait(c, &b->ka, NULL)) return -1;
    at = 0;
    for (int i = 0; i < 7; i++) {
        memcpy(h[i], (const char *)c->staging.map + at, cnt[i] * 4);
        at += cnt[i] * 4;
    }
    return 0;
}

/* Records the gather of the N refined Gaussians (indices in rsrc) into rtmp, from the stores as
 * they are. */
static int rec_gather(vk_backend *b, vk_cmd *k, int N, int reset) {
    vk_layout l = vk_layout_of(b);
    uint32_t k3 = 3 * (uint32_t)b->K, w[32] = {0};
    w[20] = (uint32_t)N, w[21] = k3;
    w[22] = l.means, w[23] = l.ls, w[24] = l.quats, w[25] = l.op, w[26] = l.sh, w[27] = (uint32_t)reset;
    vk_buf *bufs[] = {&b->P, &b->M1, &b->M2, &b->rsrc, &b->rtmp};
    return vk_dispatch(&b->c, k, VP_REFINE_GATHER, bufs, 5, w, vk_groups((int64_t)N * (11 + k3), VK_WG));
}

/* Records the new stores (current layout, n == N): the parameters' small fields from the staging
 * buffer (after the indices), the SH rows and the moments from rtmp; statistics cleared. */
static void rec_put(vk_backend *b, vk_cmd *k, int N) {
    vk_ctx *c = &b->c;
    vk_layout l = vk_layout_of(b);
    VkDeviceSize n = (VkDeviceSize)N, k3 = 3 * (VkDeviceSize)b->K, F = 11 + k3;
    VkDeviceSize reg[5] = {l.means, l.ls, l.quats, l.op, l.sh}, cnt[5] = {3 * n, 3 * n, 4 * n, n, k3 * n};
    VkDeviceSize up = 2 * n * 4; /* the small fields follow the indices in staging */
    for (int i = 0; i < 4; i++) {
        vk_copy(k, &c->staging, up, &b->P, reg[i] * 4, cnt[i] * 4);
        up += cnt[i] * 4;
    }
    vk_copy(k, &b->rtmp, 0, &b->P, reg[4] * 4, cnt[4] * 4);
    vk_buf *mom[2] = {&b->M1, &b->M2};
    for (int j = 0; j < 2; j++) {
        VkDeviceSize from = (k3 * n + (VkDeviceSize)j * F * n) * 4;
        for (int i = 0; i < 5; i++) {
            vk_copy(k, &b->rtmp, from, mom[j], reg[i] * 4, cnt[i] * 4);
            from += cnt[i] * 4;
        }
    }
    vk_fill(k, &b->st_accum, 0, b->st_accum.size, 0);
    vk_fill(k, &b->st_count, 0, b->st_count.size, 0);
    vk_fill(k, &b->st_maxr, 0, b->st_maxr.size, 0);
}

/* Indices and small fields of the N refined Gaussians up; gather, (regrow,) write back. */
static int upload_and_apply(vk_backend *b, const sp_gaussians *g, const sp_gaussians *m, int reset) {
    vk_ctx *c = &b->c;
    int N = g->n;
    size_t n = (size_t)N;
    VkDeviceSize k3 = 3 * (VkDeviceSize)b->K, F = 11 + k3;
    if (vk_buf_ensure(c, &c->staging, 13 * n * 4, 1) || vk_buf_ensure(c, &b->rsrc, n * 8, 0) ||
        vk_buf_ensure(c, &b->rtmp, (k3 + 2 * F) * n * 4, 0))
        return -1;
    uint32_t *src = c->staging.map;
    for (size_t o = 0; o < n; o++) {
        src[2 * o] = get_tag(&g->sh[3 * o]) - 1; /* every output has a source */
        src[2 * o + 1] = get_tag(&m->means[3 * o]); /* 0: moments start at zero */
    }
    const float *h[4] = {g->means, g->log_scales, g->quats, g->opacity_logits};
    size_t cnt[4] = {3 * n, 3 * n, 4 * n, n};
    char *at = (char *)c->staging.map + 2 * n * 4;
    for (int i = 0; i < 4; i++) {
        memcpy(at, h[i], cnt[i] * 4);
        at += cnt[i] * 4;
    }
    if (vk_cmd_begin(c, &b->ka, NULL, 0)) return -1;
    vk_copy(&b->ka, &c->staging, 0, &b->rsrc, 0, n * 8);
    if (rec_gather(b, &b->ka, N, reset)) return -1;
    if (N > b->cap) { /* the stores grow (their contents are lost): gather first, then write back */
        if (vk_cmd_submit(c, &b->ka) || vk_cmd_wait(c, &b->ka, NULL) || vk_ensure_gaussians(b, N, b->sh_degree) ||
            vk_cmd_begin(c, &b->ka, NULL, 0))
            return -1;
    }
    b->n = N;
    rec_put(b, &b->ka, N);
    if (vk_cmd_submit(c, &b->ka)) return -1;
    return vk_cmd_wait(c, &b->ka, NULL);
}

/* The host side of a refine or an MCMC plan: s[0] the parameters' small fields with each
 * Gaussian's index + 1 as a tag in the DC slot, s[1] moments carrying only that tag (in the first
 * mean), s[2] unused; st the statistics. Freed by free_tagged, also after a failure. */
static int tagged_download(vk_backend *b, sp_gaussians s[3], sp_refine_stats *st) {
    int n = b->n;
    memset(s, 0, 3 * sizeof *s);
    memset(st, 0, sizeof *st);
    if (vk_wait_all(b)) return -1;
    for (int j = 0; j < 3; j++) {
        if (sp_gaussians_try_init(&s[j], n > 0 ? n : 1, 0)) return -1;
        s[j].n = n;
    }
    if (sp_refine_stats_reserve(st, n > 0 ? n : 1) || download(b, &s[0], st)) return -1;
    for (int i = 0; i < n; i++) {
        put_tag(&s[0].sh[3 * (size_t)i], (uint32_t)i + 1);
        put_tag(&s[1].means[3 * (size_t)i], (uint32_t)i + 1);
    }
    return 0;
}

static void free_tagged(sp_gaussians s[3], sp_refine_stats *st) {
    for (int j = 0; j < 3; j++) sp_gaussians_free(&s[j]);
    sp_refine_stats_free(st);
}

int vk_refine_run(vk_backend *b, const sp_refine_args *a, sp_refine_result *r) {
    int rc = -1;
    sp_gaussians s[3];
    sp_refine_stats st;
    if (tagged_download(b, s, &st) || cpu_refine(&s[0], &s[1], &s[2], &st, a, r)) goto out;
    if (s[0].n == 0) { /* nothing survives */
        b->n = 0;
        rc = 0;
        goto out;
    }
    rc = upload_and_apply(b, &s[0], &s[1], a->opacity_reset > 0);
out:
    free_tagged(s, &st);
    return rc;
}

/* The plan on the small fields the way refine's decisions are made: cpu_mcmc_apply moves the
 * source tags with the copies it makes (and zeroes a copy's moment tag), so the gather brings each
 * copy its source's SH rows and zero moments, the rest their own. */
int vk_mcmc_apply_run(vk_backend *b, const sp_mcmc_plan *p) {
    int n = b->n, rc = -1;
    if (sp_mcmc_plan_check(p, n)) return -1;
    sp_gaussians s[3];
    sp_refine_stats st;
    if (tagged_download(b, s, &st) || cpu_mcmc_apply(&s[0], &s[1], &s[2], p)) goto out;
    for (int i = n; i < p->n_after; i++)
        if (get_tag(&s[0].sh[3 * (size_t)i]) == 0) {
            sp_error("mcmc: the plan adds Gaussian %d but copies nothing into it", i);
            goto out;
        }
    rc = p->n_after > 0 ? upload_and_apply(b, &s[0], &s[1], 0) : 0;
out:
    free_tagged(s, &st);
    return rc;
}
