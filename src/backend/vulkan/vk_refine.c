/* vk_refine.c — the `refine` stage of the Vulkan backend without a round trip of the whole model.
 * Only the small per-Gaussian fields (means, log-scales, quaternions, opacity logits of the
 * parameters and of both Adam moments) and the densification statistics come down. The host runs
 * cpu_refine on them, so the decisions, the order and the new values are the CPU reference's
 * exactly; each Gaussian carries, as a tag in the DC slot of these SH-less copies, the index of the
 * Gaussian it came from (cpu_refine copies it with the Gaussian, and zeroes it in the moments of
 * a new clone or split child). The SH rows, most of a Gaussian (48 of 59 floats at degree 3), are
 * then gathered on the device by those indices (refine_gather.comp) and only the small fields go
 * back up. */
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/refine.h"
#include "backend/vulkan/vk_backend.h"
#include "core/core.h"

static void put_tag(float *dst, uint32_t t) { memcpy(dst, &t, sizeof t); }

static uint32_t get_tag(const float *src) {
    uint32_t t;
    memcpy(&t, src, sizeof t);
    return t;
}

/* The small fields of g->n Gaussians between store buf (current layout) and g: down or up. */
static int small_fields(vk_backend *b, vk_buf *buf, sp_gaussians *g, int down) {
    vk_layout l = vk_layout_of(b);
    size_t n = (size_t)g->n;
    float *h[4] = {g->means, g->log_scales, g->quats, g->opacity_logits};
    uint32_t o[4] = {l.means, l.ls, l.quats, l.op};
    size_t cnt[4] = {3 * n, 3 * n, 4 * n, n};
    for (int i = 0; i < 4 && n > 0; i++) {
        int rc = down ? vk_download(&b->c, buf, (VkDeviceSize)o[i] * 4, h[i], cnt[i] * 4)
                      : vk_upload(&b->c, buf, (VkDeviceSize)o[i] * 4, h[i], cnt[i] * 4);
        if (rc) return -1;
    }
    return 0;
}

/* SH rows of the N refined Gaussians into rtmp (parameters, first, second moments). */
static int gather_sh(vk_backend *b, const uint32_t *src, int N) {
    vk_ctx *c = &b->c;
    uint32_t k3 = 3 * (uint32_t)b->K;
    VkDeviceSize rows = (VkDeviceSize)N * k3 * 4;
    if (vk_buf_ensure(c, &b->rsrc, (VkDeviceSize)N * 8, 0) || vk_buf_ensure(c, &b->rtmp, 3 * rows, 0) ||
        vk_upload(c, &b->rsrc, 0, src, (VkDeviceSize)N * 8))
        return -1;
    uint32_t w[32] = {0};
    w[20] = (uint32_t)N, w[21] = k3, w[22] = vk_layout_of(b).sh;
    vk_buf *bufs[] = {&b->P, &b->M1, &b->M2, &b->rsrc, &b->rtmp};
    if (vk_cmd_begin(c, &b->ka, NULL, 0) ||
        vk_dispatch(c, &b->ka, VP_REFINE_GATHER, bufs, 5, w, vk_groups((int64_t)N * k3, VK_WG)) ||
        vk_cmd_submit(c, &b->ka))
        return -1;
    return vk_cmd_wait(c, &b->ka, NULL);
}

/* The gathered rows into the (possibly regrown) stores; statistics cleared. */
static int put_sh(vk_backend *b, int N) {
    vk_ctx *c = &b->c;
    VkDeviceSize rows = (VkDeviceSize)N * 3 * (VkDeviceSize)b->K * 4, sh = (VkDeviceSize)vk_layout_of(b).sh * 4;
    vk_buf *store[3] = {&b->P, &b->M1, &b->M2};
    if (vk_cmd_begin(c, &b->ka, NULL, 0)) return -1;
    for (int j = 0; j < 3 && N > 0; j++) vk_copy(&b->ka, &b->rtmp, (VkDeviceSize)j * rows, store[j], sh, rows);
    vk_fill(&b->ka, &b->st_accum, 0, b->st_accum.size, 0);
    vk_fill(&b->ka, &b->st_count, 0, b->st_count.size, 0);
    vk_fill(&b->ka, &b->st_maxr, 0, b->st_maxr.size, 0);
    if (vk_cmd_submit(c, &b->ka)) return -1;
    return vk_cmd_wait(c, &b->ka, NULL);
}

int vk_refine_run(vk_backend *b, const sp_refine_args *a, sp_refine_result *r) {
    int n = b->n, rc = -1;
    sp_gaussians s[3]; /* parameters, first and second moments: small fields, source tag in sh */
    memset(s, 0, sizeof s);
    vk_buf *store[3] = {&b->P, &b->M1, &b->M2};
    sp_refine_stats st = {0};
    uint32_t *src = NULL;
    if (vk_wait_all(b)) return -1;
    for (int j = 0; j < 3; j++) {
        if (sp_gaussians_try_init(&s[j], n > 0 ? n : 1, 0)) goto out;
        s[j].n = n;
        if (small_fields(b, store[j], &s[j], 1)) goto out;
        for (int i = 0; i < n; i++) put_tag(&s[j].sh[3 * (size_t)i], (uint32_t)i + 1);
    }
    if (sp_refine_stats_reserve(&st, n > 0 ? n : 1)) goto out;
    if (n > 0 && (vk_download(&b->c, &b->st_accum, 0, st.grad_accum, (size_t)n * 4) ||
                  vk_download(&b->c, &b->st_count, 0, st.grad_count, (size_t)n * 4) ||
                  vk_download(&b->c, &b->st_maxr, 0, st.max_radius, (size_t)n * 4)))
        goto out;
    if (cpu_refine(&s[0], &s[1], &s[2], &st, a, r)) goto out;
    int N = s[0].n;
    src = sp_try_alloc(2 * (size_t)N + 2, sizeof(uint32_t), "the refine sources", "lower refine.capacity");
    if (!src) goto out;
    for (int o = 0; o < N; o++) {
        src[2 * o] = get_tag(&s[0].sh[3 * (size_t)o]) - 1;  /* every output has a source */
        src[2 * o + 1] = get_tag(&s[1].sh[3 * (size_t)o]); /* 0: moments start at zero */
    }
    if (N > 0 && gather_sh(b, src, N)) goto out;
    if (vk_ensure_gaussians(b, N, b->sh_degree)) goto out; /* may regrow: everything is rewritten below */
    b->n = N;
    for (int j = 0; j < 3; j++)
        if (small_fields(b, store[j], &s[j], 0)) goto out;
    rc = put_sh(b, N);
out:
    for (int j = 0; j < 3; j++) sp_gaussians_free(&s[j]);
    sp_refine_stats_free(&st);
    free(src);
    return rc;
}
