/* vk_backend.h — the Vulkan backend's state and the pieces of a training step, shared by the
 * backend (vk_backend.c) and its single-stage operations for the parity harness (vk_stages.c),
 * so that the harness runs exactly the recording code a training step runs. */
#ifndef SPLAT_VK_BACKEND_H
#define SPLAT_VK_BACKEND_H

#include "backend/vulkan/vk_internal.h"
#include "backend/vulkan/shaders/score_const.glsl"
#include "backend/vulkan/shaders/sort_const.glsl"
#include "backend/vulkan/shaders/chunk_const.glsl"

#define VK_LOSS_RING 1024 /* steps whose loss sums wait on the device for take_loss */
/* MCMC refine passes timed with backend.profile: 6 per phase (relocate, add), then the clears */
#define VK_MC_PASSES 13

typedef struct {
    sp_backend base;
    sp_backend_ops ops; /* base.ops: the backend's table, without score where the device has no doubles */
    vk_ctx c;
    /* kc: a whole training step each (two, so that the host records one while the device runs the
     * other); ka: project .. pair count of a render, and one-off work (refine, MCMC, transfers);
     * kb: the rest of a render, and the harness's single stages */
    vk_cmd ka, kb, kc[2];
    int kc_next;
    /* the step each kc holds, kept until its status is read (rb): run again when the device
     * skipped it (its pairs did not fit the pair buffers) */
    struct {
        int live, skipped;
        long seq;
        sp_step_args args;
        uint32_t ring_slot;
    } kc_step[2];
    int skipped, replaying; /* a kc_step is skipped; replaying them (vk_wait_all) */
    int64_t np_seen;        /* the largest pair count a step has read back */
    long replays;           /* steps run again (profile) */
    /* while recording a training step: the dispatches that change the model or write pairs take
     * their workgroup counts from pargs (pair_args.comp zeroes them when the pairs do not fit) */
    int gated;
    uint32_t gate_groups[3];
    /* parameters: one buffer, regions [cap][3] means, [cap][3] log_scales, [cap][4] quats,
     * [cap] opacity logits, [cap][K][3] sh; gradients and Adam moments in the same layout */
    int n, cap, K, sh_degree;
    vk_buf P, Gr, M1, M2;
    /* per Gaussian */
    vk_buf mean2d, conic, depth, opac, color, rect, radius, clamped, offsets, pgrad;
    vk_buf st_accum, st_count, st_maxr;
    vk_buf rsrc, rtmp; /* refine: per output Gaussian its sources, gathered SH rows */
    vk_buf ro_box; /* reorder: the means' box, six words (shaders/reorder_box.comp) */
    /* per pair (two key words, sort value = emission index, Gaussian index) */
    int64_t np, pair_cap;
    vk_buf key_hi[2], key_lo[2], val[2], pair_gid, sorted_gid, slots, hist;
    vk_buf wmask; /* the sorted pairs' warp masks, four a word (shaders/masks.glsl) */
    /* the set of pair buffers whose values tile_ranges leaves sorted for the deterministic
     * backward_raster (the sort itself ends in the set its plan names, on the device) */
    int cur;
    vk_buf pargs; /* sizes of sort and tile_ranges from the pair count, on the device (pair_args.comp) */
    vk_buf scan_tmp[4];
    /* per image (target: the stage table's float target; a training step composites the view
     * inside the loss; part: the loss's partial sums per 32x32 tile and channel) */
    int pix_cap, tiles_cap;
    vk_buf rgb, final_T, n_contrib, target, dl_drgb, Gm, part, range;
    /* the chunked backward_raster (shaders/chunks.glsl): per-pixel state at every chunk's start,
     * sized for pair_cap and tiles_cap (vk_chunk_slots), and the work list */
    vk_buf chunk_st, chunk_work;
    vk_buf wsum; /* blend weights (refine.prune_weight): 64-bit sums per Gaussian, made when asked for */
    /* MCMC decided on the device (vk_mcmc.c): prefix sums, dead ranks and list, block totals, draws,
     * draw counts, spread values, the phases' scalars, the table of sqrt(j) and 1 / c */
    vk_buf mc_prefix, mc_rank, mc_list, mc_blocks, mc_drawn, mc_times, mc_sp, mc_scal, mc_tab;
    int mc_tab_ready;
    /* the evaluation's score (score.comp): the ground truth's bytes then p8's, four a word; the
     * table (score_const.glsl) then the partial sums */
    vk_buf score_u8, score_f64;
    /* training views: RGBA8 words, all views back to back */
    const sp_view *views;
    int num_views;
    int64_t *view_off;
    sp_alpha_mode alpha;
    vk_buf pix;
    /* streamed views (stage_view): pix then holds num_slots slots of slot_px words; a slot whose
     * camera has width 0 holds no image */
    sp_camera *slot_cam;
    int num_slots;
    int64_t slot_px;
    /* host-visible: pair count, loss sums of unread steps: ring_n entries from ring_head on,
     * circularly (vk_ring_next gives the next one's slot) */
    vk_buf rb, ring;
    int ring_head, ring_n;
    float ring_lambda[VK_LOSS_RING];
    double ring_count[VK_LOSS_RING];
    double loss_sum;
    int loss_steps, loss_bad;
    /* profile */
    double ms[SP_STAGE_COUNT];
    long steps;
    /* where the wall time goes (profile): host time inside train_step, take_loss, params_finite */
    double step_ms, take_ms, finite_ms;
    /* MCMC refines on the device: calls, host time growing the stores and scratch, and in the
     * command buffer (submission to the end of its wait) */
    long mc_calls;
    double mc_grow_ms, mc_cmd_ms;
    double mc_pass_ms[VK_MC_PASSES]; /* device time of each pass (profile): per phase six, then the clears */
} vk_backend;

/* Words of rb (host-visible): 0 the pair count, 1 params_finite's flag, from VK_RB_MCMC the eight
 * scalars of mcmc_refine (per phase: total weight (2), dead count, draw count), from VK_RB_STEP
 * two per kc: its step's pair count and overflow flag. */
#define VK_RB_MCMC 8
#define VK_RB_STEP 16
#define VK_RB_WORDS 64

/* Words of pargs (pair_args.comp): workgroups (x, y, 1) of sort_count and of tile_ranges; the
 * pair count; the sort's chunk count; the pair keys' layout (VK_PA_SPAN, VK_PA_KEY:
 * shaders/sort_const.glsl); backward_raster's workgroups (chunk_items.comp); the
 * workgroups of the three gated dispatch sizes; the overflow flag (a training step's pairs did not
 * fit: it and every later step skipped until the host runs them again); then the sort's plan and
 * digit counts (shaders/sort_const.glsl). */
enum { VK_PA_SORT = 0, VK_PA_RANGES = 3, VK_PA_NP = 18, VK_PA_CHUNKS = 19, VK_PA_BWD = 24, VK_PA_GATE = 27,
       VK_PA_OVERFLOW = 36, VK_PA_WORDS = VK_PA_SORT_END };
/* The gated dispatch sizes (pargs words VK_PA_GATE + 3 g): per Gaussian in workgroups of VK_WG and of
 * VK_PB_WG, and adam's over the stores. */
enum { VK_GATE_N, VK_GATE_PB, VK_GATE_ADAM };

/* The chunked backward_raster (shaders/chunks.glsl, its chunk size VK_BWD_CHUNK in
 * shaders/chunk_const.glsl): the state slots (each VK_WG vec4) and work-list items that np pairs
 * over `tiles` tiles need at most. */
static inline int64_t vk_chunk_slots(int64_t np, int tiles) { return np / VK_BWD_CHUNK + tiles + 2; }

/* Parameter region offsets (floats) for the current capacity. */
typedef struct {
    uint32_t means, ls, quats, op, sh;
} vk_layout;
vk_layout vk_layout_of(const vk_backend *b);

/* The capacity that n Gaussians get: room to grow, a multiple of 4 (so that every region of
 * vk_layout starts on a 16-byte boundary, which shaders/adam.comp reads in groups of four). */
int vk_cap_for(int n);
/* shaders/adam.comp's groups of four for its five regions (start, length) x 5. */
uint32_t vk_adam_groups(const uint32_t reg[10]);
/* Buffers for n Gaussians (contents kept only when no growth happens: callers upload after). */
int vk_ensure_gaussians(vk_backend *b, int n, int sh_degree);
int vk_ensure_image(vk_backend *b, int w, int h);
int vk_ensure_pairs(vk_backend *b, int64_t np, int tiles);

/* The 20 camera words of every camera-using shader. */
void vk_cam_words(uint32_t w[32], const sp_camera *cam);

/* Recording pieces (into an open command buffer). */
int vk_rec_project(vk_backend *b, vk_cmd *k, const sp_camera *cam, int degree);
int vk_rec_count(vk_backend *b, vk_cmd *k, int n); /* emit_count + scan, pair total into rb */
/* emit_pairs, sort, tile_ranges for n Gaussians: sized on the device from the pair count that
 * vk_rec_count left (indirect dispatches), so it may be recorded before the count is known; the
 * pair buffers must hold the count when it runs (b->pair_cap). */
int vk_rec_bins(vk_backend *b, vk_cmd *k, const sp_camera *cam, int n);
/* The sorted pairs' warp masks (warp_masks.comp, sized by the pair count in pargs as tile_ranges
 * is), recorded by vk_rec_bins after tile_ranges; it also zeroes the chunk counts and
 * contributor counts that a training rasterize takes maxima into (shaders/chunks.glsl). */
int vk_rec_masks(vk_backend *b, vk_cmd *k, const sp_camera *cam);
/* Needs the masks (vk_rec_masks) of the pairs it reads.
 * mode 1 (training): also the state and chunk counts the chunked backward reads
 * (shaders/chunks.glsl); mode 2: also adds each splat's blend weights to b->wsum (rasterize_w). */
int vk_rec_rasterize(vk_backend *b, vk_cmd *k, const sp_camera *cam, const float bg[3], int mode);
/* the loss sums into ring[ring_slot], the gradient into dl_drgb; the target: the float target
 * buffer (bg NULL) or the view's words at pix_off in pix composited over bg */
int vk_rec_loss(vk_backend *b, vk_cmd *k, int w, int h, float ssim_weight, uint32_t ring_slot, const float *bg,
                int64_t pix_off);
/* The work list from the chunk counts of a training rasterize (vk_rec_rasterize with train),
 * then backward_raster over it, dispatched indirectly. */
int vk_rec_backward(vk_backend *b, vk_cmd *k, const sp_camera *cam, const float bg[3], int n);
int vk_rec_project_back(vk_backend *b, vk_cmd *k, const sp_camera *cam, int degree, int collect);
/* Refine (vk_refine.c): decisions on the host from the small per-Gaussian fields, SH rows
 * gathered on the device. */
int vk_refine_run(vk_backend *b, const sp_refine_args *a, sp_refine_result *r);
/* MCMC (refine.strategy = "mcmc"): a relocation / growth plan applied the way refine is (vk_refine.c:
 * the copies decided on the small fields, SH rows and moments gathered on the device); the
 * regularizer gradients added to Gr and the position noise on P's means (shaders/mcmc.comp). */
int vk_mcmc_apply_run(vk_backend *b, const sp_mcmc_plan *p);
/* MCMC decided on the device (vk_mcmc.c, shaders/mcmc_*.comp): backend.h's mcmc_refine. */
int vk_mcmc_refine_run(vk_backend *b, float dead_opacity, int add, uint64_t seed, int *relocated, int *added);
/* backend.h's reorder on the device (vk_reorder.c): the Gaussians in Morton order of their means,
 * gradients and statistics cleared. */
int vk_reorder_run(vk_backend *b);
int vk_rec_mcmc_reg(vk_backend *b, vk_cmd *k, float opacity_reg, float scale_reg);
int vk_rec_mcmc_noise(vk_backend *b, vk_cmd *k, float noise_scale, uint64_t seed);
/* A store (parameters, gradients or moments: the layout of P) up to or down from a buffer. */
int vk_put_store(vk_backend *b, vk_buf *dst, const sp_gaussians *g);
int vk_get_store(vk_backend *b, vk_buf *src, sp_gaussians *g);
/* Radix passes of the pair sort for a tile count. */
int vk_sort_passes(int tiles);
/* The sort of pair_args' count of pairs from set 0 of the pair buffers (key_lo, key_hi, val), in
 * `passes` 8-bit digits (4 of the low word, then the high word's): it ends in the set pargs word
 * VK_PA_SORT_FINAL names, the low words not written by its last pass (one-word keys: key_lo only,
 * the last pass writing them into key_hi; shaders/sort_const.glsl, VK_PA_KEY). */
int vk_rec_sort(vk_backend *b, vk_cmd *k, int passes);
/* Waits for everything submitted; training steps the device skipped (their pairs did not fit) are
 * recorded again over grown pair buffers and run, in order, first. */
int vk_wait_all(vk_backend *b);
/* The loss ring's slot for the next step's sums. */
uint32_t vk_ring_next(const vk_backend *b);
/* Capped SH degree for the stored coefficients. */
int vk_usable_degree(int degree, int K);

extern const struct sp_stage_ops vk_stage_ops;

#endif
