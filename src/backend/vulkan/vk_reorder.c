/* vk_reorder.c — backend.h's reorder on the Vulkan device, one command buffer and one wait, nothing
 * per Gaussian crossing to the host: the box of the means (shaders/reorder_box.comp: integer
 * atomics on the floats' ordered bits, exact in any order), every Gaussian's Morton code
 * (shaders/reorder_codes.comp, backend/morton_rule.h's arithmetic), the pair sort (vk_rec_sort) of
 * (code, index) over the codes' low word, stable, and the three stores (parameters, both Adam
 * moments) gathered into that order (shaders/reorder_gather.comp) through the gradient buffer:
 * the reorder drops the gradients (as refine does), so that buffer is free, and after each
 * gather the two swap. The sort's scratch is the pair buffers, grown to n pairs if smaller. */
#include "backend/morton_rule.h"
#include "backend/vulkan/vk_backend.h"

_Static_assert(3 * SP_MORTON_BITS <= 32, "the reorder sorts one-word keys");

#define RO_BOX_GROUPS 1024u /* workgroups of the box at most (each strides over the rest) */

/* The sort's sizes for n pairs (pair_args.comp, reading the count n from offsets[0] as the stage
 * harness's sort does), its keys one word (pargs VK_PA_KEY + 1 below 32: key_lo only). */
static int rec_sort_args(vk_backend *b, vk_cmd *k, int n) {
    vk_fill_nobarrier(k, &b->offsets, 0, 4, (uint32_t)n);
    vk_fill(k, &b->pargs, VK_PA_OVERFLOW * 4, 4, 0); /* nothing in flight (vk_wait_all): no step to skip */
    uint32_t aw[32] = {0}; /* count at offsets[0]; no gated dispatch; two-word layout, made one-word next */
    aw[21] = b->c.max_wg_count;
    aw[22] = b->pair_cap < 0xffffffffll ? (uint32_t)b->pair_cap : 0xffffffffu;
    vk_buf *ab[] = {&b->offsets, &b->pargs};
    if (vk_dispatch(&b->c, k, VP_PAIR_ARGS, ab, 2, aw, 1)) return -1;
    vk_fill(k, &b->pargs, (VK_PA_KEY + 1) * 4, 4, 0);
    return 0;
}

int vk_reorder_run(vk_backend *b) {
    vk_ctx *c = &b->c;
    vk_cmd *k = &b->ka;
    int n = b->n;
    if (vk_wait_all(b) || (n > 1 && (vk_ensure_pairs(b, n, 1) || vk_buf_ensure(c, &b->ro_box, 32, 0))) ||
        vk_cmd_begin(c, k, NULL, 0))
        return -1;
    if (n > 1) {
        vk_layout l = vk_layout_of(b);
        uint32_t w[32] = {0};
        w[20] = (uint32_t)n, w[21] = l.means;
        vk_fill_nobarrier(k, &b->ro_box, 0, 12, 0xffffffffu);
        vk_fill(k, &b->ro_box, 12, 12, 0);
        uint32_t groups = vk_groups(n, VK_WG);
        vk_buf *bb[] = {&b->P, &b->ro_box}, *cb[] = {&b->P, &b->ro_box, &b->key_lo[0], &b->val[0]};
        if (vk_dispatch(c, k, VP_REORDER_BOX, bb, 2, w, groups < RO_BOX_GROUPS ? groups : RO_BOX_GROUPS) ||
            vk_dispatch(c, k, VP_REORDER_CODES, cb, 4, w, groups) || rec_sort_args(b, k, n) ||
            vk_rec_sort(b, k, 4))
            return -1;
        uint32_t gw[32] = {0};
        gw[20] = (uint32_t)n, gw[21] = 3 * (uint32_t)b->K;
        gw[22] = l.means, gw[23] = l.ls, gw[24] = l.quats, gw[25] = l.op, gw[26] = l.sh;
        uint32_t ggroups = vk_groups((int64_t)n * (11 + 3 * (int64_t)b->K), VK_WG);
        vk_buf *store[3] = {&b->P, &b->M1, &b->M2};
        for (int s = 0; s < 3; s++) {
            vk_buf *gb[] = {store[s], &b->Gr, &b->val[0], &b->val[1], &b->pargs};
            if (vk_dispatch(c, k, VP_REORDER_GATHER, gb, 5, gw, ggroups)) return -1;
            vk_buf t = *store[s]; /* each holds the capacity's layout (vk_ensure_gaussians) */
            *store[s] = b->Gr, b->Gr = t;
        }
    }
    /* fresh gradients and statistics, as refine leaves them */
    vk_fill(k, &b->Gr, 0, b->Gr.size, 0);
    vk_fill(k, &b->st_accum, 0, b->st_accum.size, 0);
    vk_fill(k, &b->st_count, 0, b->st_count.size, 0);
    vk_fill(k, &b->st_maxr, 0, b->st_maxr.size, 0);
    if (vk_cmd_submit(c, k)) return -1;
    return vk_cmd_wait(c, k, NULL);
}
