/* backend.h — the interface between the trainer and a compute backend (cpu, cuda, ...).
 *
 * A backend owns its buffers: the Gaussian parameters, their Adam moments, gradients,
 * densification statistics and the training images. The trainer drives it through this table
 * of functions and never touches backend memory. One training step is one call (train_step)
 * running the stages of docs/math.md in order (SP_STAGES below):
 *   project, emit_pairs, sort, tile_ranges, rasterize, loss, backward_raster, project_back, adam
 * and refine is its own call. The stage names are used for kernels and profiling rows.
 *
 * Each backend lives in its own folder (src/backend/NAME/), declares its entry points in a header
 * there and describes itself in one kind row (sp_backend_kind); backend.c lists the rows. */
#ifndef SPLAT_BACKEND_H
#define SPLAT_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "scene/camera.h"
#include "scene/dataset.h"
#include "scene/gaussians.h"

typedef struct sp_backend sp_backend;
struct sp_stage_ops; /* backend/stage_ops.h: single stages over host arrays, for the parity harness */

typedef struct {
    int threads;       /* CPU threads (0 = all cores) */
    int deterministic; /* fixed-order reductions: bit-identical results for identical inputs */
    int profile;       /* record per-stage device time */
    int device;        /* GPU ordinal */
    int num_devices;   /* cuda: > 1 = one replica per id of devices[] (data-parallel over NCCL) */
    int devices[16];
    int check_replicas; /* replicated: compare a checksum of every replica's parameters after refine */
    int reduce_chunks;  /* replicated: the gradient all-reduce in up to this many chunks (0: 4) */
    /* several processes: rank, world size and the NCCL id file (world 1 = this process alone) */
    int rank, world;
    const char *dist_file;
    int cas_atomics;    /* GPU: float atomic add through a compare-and-swap loop even where the device
                           has native float atomics (tests the fallback path) */
    int antialias;      /* project: opacity-compensated low-pass filter (render.antialias, docs/math.md) */
    int split_update;   /* cpu, cuda: project_back and the parameter update as separate passes even where a
                           step fuses them (A/B measurements; the parity harness checks the two agree) */
    int moments16;      /* adam.moments16: Adam's moments packed 16 bits each in one word, in the first
                           moment store (backend/moments16_rule.h); set_gaussians and get_gaussians take
                           and give float moments. -1 = auto: sp_backend_create picks the kind's
                           default (on for cuda), so a backend's cfg holds 0 or 1 */
} sp_backend_config;

typedef struct {
    float means, log_scales, quats, opacity, sh_dc, sh_rest;
} sp_lrs;

/* Staging slots for streamed training images (stage_view): a view is staged while the step
 * before it runs, so two slots let the copy overlap the computation. */
#define SP_STAGE_SLOTS 2

typedef struct {
    int view;          /* index into the uploaded training views (staged: the staging slot) */
    int staged;        /* 1: train on the view staged in slot `view` (stage_view) */
    int sh_degree;     /* active SH degree this step */
    float bg[3];       /* background this step (random backgrounds are drawn by the trainer) */
    float ssim_weight; /* loss = (1 - w) L1 + w (1 - SSIM) */
    /* Adam */
    int adam_step; /* 1-based, for bias correction */
    float beta1, beta2, eps;
    /* 1 = sparse Adam (adam.sparse): a Gaussian out of view in every view of the update (its
     * screen rectangle empty) keeps each value whose gradient sum is exactly 0, its moments not
     * decayed and no momentum step taken; a Gaussian in view takes the whole update. */
    int adam_sparse;
    sp_lrs lr;
    int collect_stats; /* accumulate densification statistics this step */
    /* Batches: 1 = add this view's gradients to the running sum and stop before Adam; the next
     * step (of either kind) adds to the same sum. 0 = add this view, then one Adam update with the
     * sum, which starts a new one. A batch of B views is B-1 accumulate steps and one full step. */
    int accumulate;
    /* refine.strategy = "mcmc" (docs/math.md, "MCMC"); all 0 = off. Every call adds the regularizer
     * gradients (opacity_reg * mean sigmoid(logit) + scale_reg * mean exp(log_scale)) to the
     * gradient sum; a call that ends with Adam then adds the position noise of stream
     * (noise_seed, index) scaled by noise_scale (= noise_lr * the means learning rate). */
    float opacity_reg, scale_reg, noise_scale;
    uint64_t noise_seed;
} sp_step_args;

typedef struct {
    /* clone / split (densify != 0) */
    int densify;
    float grad_threshold;  /* on the mean NDC-space 2D mean gradient norm */
    float clone_max_scale; /* world units: max scale <= this clones, above splits */
    int split_count;       /* new Gaussians per split (2) */
    float split_shrink;    /* scales divided by this (1.6 = 0.8 * 2) */
    /* prune */
    float prune_opacity;     /* remove sigmoid(opacity) < this */
    float prune_world_scale; /* remove max scale > this (0 = off) */
    /* opacity */
    float opacity_decay;  /* after densify: opacity *= (1 - decay) (0 = off) */
    float opacity_reset;  /* > 0: opacity = min(opacity, opacity_reset) */
    int capacity;         /* max Gaussians after refine */
    uint64_t seed;        /* split sampling: per-Gaussian streams from (seed, index) */
    /* NULL, or one flag per Gaussian: 1 = remove it (pruning by blend weight, train/prune.h); only
     * with densify off */
    const uint8_t *drop;
} sp_refine_args;

typedef struct {
    int cloned, split, pruned, n_before, n_after;
} sp_refine_result;

/* MCMC relocation / growth, decided on the host (train/mcmc.h) and applied by the backend. Entry k
 * writes Gaussian dst[k] (< n_after): means, quats and SH copied from src[k] (< the current count),
 * opacity logit and log-scales set to the entry's values, Adam moments zeroed. A Gaussian is the
 * dst of at most one entry, and a src is never the dst of another entry (it may be its own: then
 * only its opacity, scales and moments change), so entries are independent. n_after > n appends
 * Gaussians (each one the dst of an entry). */
typedef struct {
    int n_after, count;
    const int32_t *dst, *src;
    const float *opacity_logit; /* [count] */
    const float *log_scales;    /* [count][3] */
} sp_mcmc_plan;

/* The stages of docs/math.md in the order a step runs them: the one list of stage names, for
 * kernels, profiling rows (sp_profile) and their enum, SP_STAGE_PROJECT .. SP_STAGE_REFINE. */
#define SP_STAGES(X)                           \
    X(PROJECT, "project")                      \
    X(EMIT_PAIRS, "emit_pairs")                \
    X(SORT, "sort")                            \
    X(TILE_RANGES, "tile_ranges")              \
    X(RASTERIZE, "rasterize")                  \
    X(LOSS, "loss")                            \
    X(BACKWARD_RASTER, "backward_raster")      \
    X(PROJECT_BACK, "project_back")            \
    X(ADAM, "adam")                            \
    X(REFINE, "refine")
#define SP_STAGE_ENUM_(id, name) SP_STAGE_##id,
typedef enum { SP_STAGES(SP_STAGE_ENUM_) SP_STAGE_COUNT } sp_stage;
#undef SP_STAGE_ENUM_
/* "project", "emit_pairs", ...: the name of a stage; NULL outside 0 .. SP_STAGE_COUNT - 1. */
const char *sp_stage_name(int stage);

/* Per-stage timing, filled when profile is on. Rows are named by sp_stage_name (a backend that runs
 * consecutive stages as one may time them in one row named "first+...+last"). */
#define SP_MAX_STAGES 16
typedef struct {
    int num_stages;
    const char *name[SP_MAX_STAGES];
    double ms[SP_MAX_STAGES]; /* total device (or CPU) milliseconds since creation */
    long calls;               /* train steps profiled */
    double busy_ms;           /* total device busy time (sum over stages on one stream) */
    int64_t peak_bytes;       /* peak backend memory (device memory for GPU backends) */
} sp_profile;

typedef struct sp_backend_ops {
    const char *name; /* "cpu", "cuda", "vulkan" */
    void (*destroy)(sp_backend *b);
    /* Training images, kept by the backend for the whole run. */
    int (*upload_views)(sp_backend *b, const sp_view *views, int n, sp_alpha_mode alpha);
    /* Parameters and Adam moments (m, v may be NULL: zeros). Resets densification statistics. */
    int (*set_gaussians)(sp_backend *b, const sp_gaussians *g, const sp_gaussians *m, const sp_gaussians *v);
    /* Copies out parameters (and moments when m, v are not NULL); the stores are resized. */
    int (*get_gaussians)(sp_backend *b, sp_gaussians *g, sp_gaussians *m, sp_gaussians *v);
    int (*num_gaussians)(sp_backend *b);
    /* One training step (may run asynchronously). */
    int (*train_step)(sp_backend *b, const sp_step_args *a);
    /* Mean loss over the steps since the last call, and how many; non-finite if any step's loss
     * was not finite. A backend that runs steps ahead may leave the newest ones, still running,
     * to a later call (*steps says how many were counted); after params_finite every step is. */
    int (*take_loss)(sp_backend *b, double *mean_loss, int *steps);
    /* Densification, pruning, opacity decay/reset; resets statistics. */
    int (*refine)(sp_backend *b, const sp_refine_args *a, sp_refine_result *r);
    /* Renders a camera into host RGB float [h][w][3], background composited. */
    int (*render)(sp_backend *b, const sp_camera *cam, int sh_degree, const float bg[3], float *rgb);
    /* 1 if every parameter is finite. */
    int (*params_finite)(sp_backend *b);
    int (*get_profile)(sp_backend *b, sp_profile *p);
    /* Single stages over host arrays (backend/stage_ops.h); NULL if the backend has none. */
    const struct sp_stage_ops *stages;
    /* Streamed training images (data.cache_mb), instead of upload_views: copies one view's camera
     * and pixels into staging slot `slot` (0 <= slot < the slot count, SP_STAGE_SLOTS unless
     * stage_slots set another) for a coming train_step with `staged` set. The caller may reuse
     * v->pixels when it returns; the slot's new image is seen by steps issued after this call
     * only (steps issued before still read the old one). The device holds as many images as
     * there are slots, whatever the capture. */
    int (*stage_view)(sp_backend *b, int slot, const sp_view *v, sp_alpha_mode alpha);
    /* Renders count cameras into rgb[0..count-1] (each as render writes it), possibly several at
     * once (the replicated cuda backend renders camera j on device j % devices); the images are
     * those render gives one by one. NULL: sp_backend_render_many calls render for each. */
    int (*render_many)(sp_backend *b, const sp_camera *const *cams, int count, int sh_degree, const float bg[3],
                       float *const *rgb);
    /* refine.strategy = "mcmc" (NULL: the backend has no MCMC; the trainer refuses the strategy).
     * mcmc_read copies out the opacity logits [n] and log-scales [n][3]; mcmc_apply applies a plan
     * (statistics reset, gradients of a pending batch dropped, as refine does). */
    int (*mcmc_read)(sp_backend *b, float *opacity_logits, float *log_scales);
    int (*mcmc_apply)(sp_backend *b, const sp_mcmc_plan *p);
    /* Each Gaussian's blending weights (alpha T as rasterize composites them) summed over the
     * pixels of cams[0..count) into weight[i], i < num_gaussians (overwritten): how much of those
     * views it makes (refine.prune_weight). The same sums for any schedule. NULL: the trainer
     * computes them on the host (train/prune.h). */
    int (*blend_weights)(sp_backend *b, const sp_camera *cams, int count, float *weight);
#define SP_BLEND_WEIGHT_UNIT 16777216.0 /* GPU backends sum blend weights as integers of 1/2^24 */
    /* The evaluation's scores of one view without the render leaving the device: renders cam as
     * render does, quantizes it as sp_image_quantize (into p8 [h][w][3] when not NULL) and scores
     * it against g8 (the ground truth composited and quantized, [h][w][3]): *sse = Σ (p8 − g8)²
     * over every value, exactly, and *ssim = sp_ssim_u8(p8, g8), to rounding (eval/metrics.h).
     * NULL: the evaluation downloads each render and scores it on the host. */
    int (*score)(sp_backend *b, const sp_camera *cam, int sh_degree, const float bg[3], const uint8_t *g8,
                 uint8_t *p8, uint64_t *sse, double *ssim);
    /* Streamed views: count staging slots (>= SP_STAGE_SLOTS; before any call there are
     * SP_STAGE_SLOTS), each taking an image of up to max_pixels pixels of up to `channels`
     * channels, reserved now (an error when the device lacks the memory). Views staged before are
     * dropped. With more slots than two the device keeps that many training images at once: the
     * trainer decides which view a slot holds (data.device_cache_mb, train/stream.c). NULL: the
     * backend has SP_STAGE_SLOTS slots only. */
    int (*stage_slots)(sp_backend *b, int count, size_t max_pixels, int channels);
    /* MCMC decided on the device (refine.strategy = "mcmc"): relocates the dead Gaussians
     * (sigmoid(logit) < dead_opacity) onto live ones, then adds `add` after the last, both drawn by
     * opacity, seed this refine's (seed 1 and 2 of it for the two phases), exactly as train/mcmc.c
     * decides on the host from mcmc_read and applies through mcmc_apply (backend/mcmc_rule.h: the
     * same Gaussians move and are added; their values equal to double rounding), without the
     * parameters leaving the device. NULL: the trainer decides on the host. */
    int (*mcmc_refine)(sp_backend *b, float dead_opacity, int add, uint64_t seed, int *relocated, int *added);
    /* The device's free and total memory in bytes; NULL for a backend whose buffers are host memory. */
    int (*device_memory)(sp_backend *b, size_t *free_bytes, size_t *total_bytes);
    /* The training will call mcmc_refine: a backend that makes what it needs for it at the first
     * call may start making it now, beside the views' and the model's upload and the first steps.
     * NULL: nothing to start. */
    void (*mcmc_prepare)(sp_backend *b);
    /* The Gaussians put in Morton order of their means (backend/morton_rule.h; the order
     * backend/ref/reorder.c gives, exactly): parameters and Adam moments move with their Gaussian;
     * the densification statistics are reset and a pending batch's gradients dropped, as refine
     * does. Gaussians near in space then sit near in memory, so a tile's pairs read fewer cache
     * lines (refine.reorder). NULL: the backend keeps the order it has. */
    int (*reorder)(sp_backend *b);
} sp_backend_ops;

struct sp_backend {
    const sp_backend_ops *ops;
    sp_backend_config cfg;
};

/* A backend kind: what a backend says of itself, in one row defined in its own folder (the row of
 * the cpu backend is sp_kind_cpu in cpu/cpu_backend.c). backend.c lists the rows compiled in, in the
 * order `auto` tries them (GPU kinds first, cpu last); the parity harness and the end-to-end test
 * enumerate them. */
enum {
    SP_VARIANT_DETERMINISTIC = 1,   /* cfg.deterministic changes what runs (fixed-order reductions) */
    SP_VARIANT_CAS_ATOMICS = 4,     /* cfg.cas_atomics forces the compare-and-swap float atomics */
};
typedef struct {
    const char *name;       /* backend.kind value */
    int gpu;                /* tested against the cpu reference */
    unsigned variants;      /* SP_VARIANT_* switches this kind honours */
    int mcmc;               /* has MCMC densification on one device (ops->mcmc_read, mcmc_apply) */
    int (*available)(void); /* 1 if a usable device is present (a software device counts: it is tested) */
    int (*auto_pick)(void); /* 1 if `auto` should choose this kind here (NULL: when available) */
    sp_backend *(*create)(const sp_backend_config *cfg);
    /* One line naming the device cfg selects and the limits that matter (`splat check`); -1 with the
     * reason in out when it cannot run. Called only when available() says 1. */
    int (*describe)(const sp_backend_config *cfg, char *out, size_t n);
    /* Several devices or processes (cfg->num_devices > 1 or cfg->world > 1): create and describe
     * as above; NULL for a kind that trains on one device. */
    sp_backend *(*create_several)(const sp_backend_config *cfg);
    int (*describe_several)(const sp_backend_config *cfg, char *out, size_t n);
} sp_backend_kind;

/* The kinds compiled in, in the order `auto` tries them; *count receives their number. */
const sp_backend_kind *const *sp_backend_kinds(int *count);
/* The kind named name, or NULL if this build has none of that name. */
const sp_backend_kind *sp_backend_find_kind(const char *name);

/* The kind `kind` names, or for "auto" the one sp_backend_create picks; NULL if this build has no
 * kind of that name. */
const sp_backend_kind *sp_backend_resolve_kind(const char *kind);

/* render_many where the backend has it, else render for each camera in turn. */
int sp_backend_render_many(sp_backend *b, const sp_camera *const *cams, int count, int sh_degree, const float bg[3],
                           float *const *rgb);

/* adam.moments16 = auto (cfg->moments16 -1) on the kind named kind_name: 1 = 16-bit moments. */
int sp_backend_moments16_auto(const char *kind_name);
/* kind: a name of the table, or "auto" (the first kind with a usable device). NULL on error. */
sp_backend *sp_backend_create(const char *kind, const sp_backend_config *cfg);
/* One line naming the device `kind` resolves to and the limits that matter (for `splat check`);
 * -1 (with the reason in out) when that backend cannot run here. */
int sp_backend_describe(const char *kind, const sp_backend_config *cfg, char *out, size_t n);

/* backend.kind's choices for the configuration schema: "auto|cpu|cuda|..." — auto and every kind
 * splat has, whether this build has it or not (backend.c, SP_KINDS). */
extern const char sp_backend_kind_choices[];

#endif
