/* vk_mcmc.c — MCMC's relocation and growth decided on the Vulkan device (the backend's
 * mcmc_refine, refine.strategy = "mcmc"): the decisions train/mcmc.c makes on the host and
 * cuda/mcmc.cu on its device, with backend/mcmc_rule.h's arithmetic reproduced by the shaders
 * (shaders/mcmc_*.comp: mcmc_refine.glsl, mcmc_rule.glsl), so the same Gaussians move and are added, with the
 * same values. Both phases (relocate, then add) are one command buffer and one wait: the device
 * decides on its own whether a phase changes anything (the host's rules: nothing dead, nothing
 * alive, no weight at all), and the host reads back four words at the end (how many were
 * relocated and added). The stores grow before, when the additions might not fit, keeping their
 * contents. */
#include <math.h>
#include <string.h>

#include "backend/mcmc_rule.h"
#include "backend/vulkan/shaders/mcmc_const.glsl"
#include "backend/vulkan/vk_backend.h"
#include "core/core.h"

/* mcmc_const.glsl against mcmc_rule.h: what the header names, at compile time */
_Static_assert(VK_MCMC_MAX_COPIES == SP_MCMC_MAX_COPIES, "mcmc_const.glsl: VK_MCMC_MAX_COPIES");
_Static_assert((long)SP_MCMC_WEIGHT_ONE == 1L << VK_MCMC_WEIGHT_BITS, "mcmc_const.glsl: VK_MCMC_WEIGHT_BITS");

#define MC_BLOCK (4 * VK_WG) /* Gaussians per workgroup of the weights pass */
#define MC_TAB 128           /* doubles in the table: sqrt(j) at j, 1 / c at 64 + c */

static uint64_t w64(uint32_t lo, uint32_t hi) { return (uint64_t)hi << 32 | lo; }

static uint64_t const_mix(uint64_t z) {
    z = (z ^ (z >> 30)) * w64(VK_MCMC_MIX1_LO, VK_MCMC_MIX1_HI);
    z = (z ^ (z >> 27)) * w64(VK_MCMC_MIX2_LO, VK_MCMC_MIX2_HI);
    return z ^ (z >> 31);
}

/* The rest of mcmc_const.glsl against mcmc_rule.h: draw points computed with its constants the
 * way the shader does must be mcmc_rule.h's, and its 1e-6 the double 1e-6. */
static int check_constants(void) {
    uint64_t z = 0x243F6A8885A308D3ull;
    for (int t = 0; t < 64; t++) {
        z = const_mix(z + (uint64_t)t);
        uint64_t seed = z, total = (z >> 20) | 1, stream = 1 + (uint64_t)(t & 1), k = (uint64_t)t * 977;
        uint64_t h = const_mix(const_mix(seed ^ (stream * w64(VK_MCMC_STREAM_LO, VK_MCMC_STREAM_HI))) +
                               k * w64(VK_MCMC_DRAW_LO, VK_MCMC_DRAW_HI) + 1);
        uint64_t x = (uint64_t)(((unsigned __int128)h * total) >> 64);
        if (x != sp_mcmc_draw_point(seed, stream, k, total))
            return sp_error("vulkan: shaders/mcmc_const.glsl's hash constants differ from backend/mcmc_rule.h's");
    }
    double eps = 1e-6;
    uint64_t bits;
    memcpy(&bits, &eps, sizeof bits);
    if (bits != w64(VK_MCMC_EPS_LO, VK_MCMC_EPS_HI)) return sp_error("vulkan: shaders/mcmc_const.glsl: VK_MCMC_EPS");
    return 0;
}

/* The table the spread reads: the doubles the host's sqrt and division give. */
static int upload_table(vk_backend *b) {
    double t[MC_TAB] = {0};
    for (int j = 1; j <= SP_MCMC_MAX_COPIES; j++) t[j] = sqrt((double)j), t[64 + j] = 1.0 / (double)j;
    if (check_constants() || vk_buf_ensure(&b->c, &b->mc_tab, sizeof t, 0) ||
        vk_upload(&b->c, &b->mc_tab, 0, t, sizeof t))
        return -1;
    b->mc_tab_ready = 1;
    return 0;
}

/* Grows the stores to hold at least n_new Gaussians, keeping the parameters and moments of the
 * b->n there are (their regions move with the capacity); gradients and statistics start at zero
 * (the caller clears them). Nothing changes when the memory is not there. */
static int grow_keep(vk_backend *b, int n_new) {
    if (n_new <= b->cap) return 0;
    vk_ctx *c = &b->c;
    if (vk_wait_all(b)) return -1;
    int cap = vk_cap_for(n_new);
    VkDeviceSize bytes = (VkDeviceSize)cap * (VkDeviceSize)sp_gaussian_floats(b->K) * 4;
    vk_buf nw[3];
    memset(nw, 0, sizeof nw);
    for (int j = 0; j < 3; j++)
        if (vk_buf_ensure(c, &nw[j], bytes, 0)) {
            for (int i = 0; i < 3; i++) vk_buf_free(c, &nw[i]);
            return -1;
        }
    vk_layout lo = vk_layout_of(b);
    uint32_t cn = (uint32_t)cap, n = (uint32_t)b->n, k3 = 3 * (uint32_t)b->K;
    VkDeviceSize from[5] = {lo.means, lo.ls, lo.quats, lo.op, lo.sh}, to[5] = {0, 3 * cn, 6 * cn, 10 * cn, 11 * cn};
    VkDeviceSize cnt[5] = {3 * n, 3 * n, 4 * n, n, k3 * n};
    vk_buf *old[3] = {&b->P, &b->M1, &b->M2};
    if (vk_cmd_begin(c, &b->ka, NULL, 0)) return -1;
    for (int j = 0; j < 3; j++)
        for (int i = 0; i < 5; i++) vk_copy(&b->ka, old[j], from[i] * 4, &nw[j], to[i] * 4, cnt[i] * 4);
    if (vk_cmd_submit(c, &b->ka) || vk_cmd_wait(c, &b->ka, NULL)) {
        for (int i = 0; i < 3; i++) vk_buf_free(c, &nw[i]);
        return -1;
    }
    for (int j = 0; j < 3; j++) {
        vk_buf_free(c, old[j]);
        *old[j] = nw[j];
    }
    return vk_ensure_gaussians(b, n_new, b->sh_degree); /* the rest at the new capacity (cap as above) */
}

/* Scratch for one refine over n Gaussians adding `add`. */
static int ensure_scratch(vk_backend *b, int n, int add) {
    vk_ctx *c = &b->c;
    VkDeviceSize N = (VkDeviceSize)n, nb = (VkDeviceSize)vk_groups(n, MC_BLOCK);
    VkDeviceSize draws = (VkDeviceSize)(add > n ? add : n);
    return vk_buf_ensure(c, &b->mc_prefix, N * 8, 0) || vk_buf_ensure(c, &b->mc_rank, N * 4, 0) ||
                   vk_buf_ensure(c, &b->mc_list, N * 4, 0) || vk_buf_ensure(c, &b->mc_blocks, nb * 16, 0) ||
                   vk_buf_ensure(c, &b->mc_drawn, draws * 4, 0) || vk_buf_ensure(c, &b->mc_times, N * 4, 0) ||
                   vk_buf_ensure(c, &b->mc_sp, N * 16, 0) || vk_buf_ensure(c, &b->mc_scal, 64, 0)
               ? -1
               : 0;
}

/* One phase (0: relocate, 1: add) over the n Gaussians: the six passes of mcmc_refine.glsl. */
static int rec_phase(vk_backend *b, vk_cmd *k, int phase, int n, int add, uint64_t seed, float dead_opacity) {
    uint32_t w[32] = {0};
    w[21] = (uint32_t)n, w[22] = (uint32_t)phase, w[23] = (uint32_t)add, w[24] = (uint32_t)b->cap;
    w[25] = 3 * (uint32_t)b->K, w[26] = (uint32_t)seed, w[27] = (uint32_t)(seed >> 32);
    w[28] = vk_f2u(dead_opacity), w[29] = vk_groups(n, MC_BLOCK);
    vk_buf *bufs[] = {&b->P,       &b->M1,      &b->M2,    &b->mc_prefix, &b->mc_rank, &b->mc_list,
                      &b->mc_blocks, &b->mc_drawn, &b->mc_times, &b->mc_sp, &b->mc_scal, &b->mc_tab};
    int draws = phase ? add : n, most = add > n ? add : n;
    const int pipe[6] = {VP_MCMC_WEIGHTS, VP_MCMC_BLOCKS, VP_MCMC_FINISH, VP_MCMC_DRAW, VP_MCMC_SPREAD, VP_MCMC_APPLY};
    uint32_t groups[6] = {w[29], 1, vk_groups(n, VK_WG), vk_groups(draws, VK_WG), vk_groups(n, VK_WG),
                          vk_groups(most, VK_WG)};
    for (int p = 0; p < 6; p++) {
        if (vk_dispatch(&b->c, k, pipe[p], bufs, 12, w, groups[p])) return -1;
        vk_stamp(&b->c, k, 6 * phase + p); /* with backend.profile: mc_pass_ms */
    }
    return 0;
}

int vk_mcmc_refine_run(vk_backend *b, float dead_opacity, int add, uint64_t seed, int *relocated, int *added) {
    vk_ctx *c = &b->c;
    int n = b->n;
    *relocated = *added = 0;
    if (n <= 0) return 0;
    if (add < 0) add = 0;
    double t0 = sp_now();
    if (vk_wait_all(b) || (!b->mc_tab_ready && upload_table(b)) || grow_keep(b, n + add) ||
        ensure_scratch(b, n, add) || vk_cmd_begin(c, &b->ka, NULL, b->base.cfg.profile))
        return -1;
    double t1 = sp_now();
    /* the seeds of train/mcmc.c's two phases */
    if (rec_phase(b, &b->ka, 0, n, 0, sp_hash64(seed, 1), dead_opacity) ||
        (add > 0 && rec_phase(b, &b->ka, 1, n, add, sp_hash64(seed, 2), dead_opacity)))
        return -1;
    /* fresh gradients and statistics, as mcmc_apply leaves them */
    vk_fill(&b->ka, &b->Gr, 0, b->Gr.size, 0);
    vk_fill(&b->ka, &b->st_accum, 0, b->st_accum.size, 0);
    vk_fill(&b->ka, &b->st_count, 0, b->st_count.size, 0);
    vk_fill(&b->ka, &b->st_maxr, 0, b->st_maxr.size, 0);
    vk_copy(&b->ka, &b->mc_scal, 0, &b->rb, VK_RB_MCMC * 4, 32);
    vk_stamp(c, &b->ka, 12);
    if (vk_cmd_submit(c, &b->ka) || vk_cmd_wait(c, &b->ka, b->mc_pass_ms)) return -1;
    b->mc_calls++;
    b->mc_grow_ms += 1e3 * (t1 - t0);
    b->mc_cmd_ms += 1e3 * (sp_now() - t1);
    const uint32_t *r = (const uint32_t *)b->rb.map + VK_RB_MCMC;
    *relocated = (int)r[3];
    *added = add > 0 ? (int)r[7] : 0;
    b->n = n + *added;
    return 0;
}
