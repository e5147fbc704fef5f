/* config.c — the configuration schema (one table row per key: type, field, range or allowed
 * words, default, doc) and everything driven by it: defaults, loading a TOML file with every
 * problem collected, section.key=value overrides (the CLI's --set), the resolved config.toml,
 * and the docs reference. Problems name the setting (and the file and line); the CLI adds its flags. */
#include "train/config.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/dist.h"
#include "core/paths.h"
#include "io/toml.h"

#define SP_MCMC_SCALE_FACTOR 0.3 /* init.scale_factor under mcmc (bench/RESULTS.md, session 13) */
#define FIELD(sec, k) #sec, #k
#define OFF(sec, k) offsetof(sp_config, sec.k), sizeof(((sp_config *)0)->sec.k)
#define ANY SP_CFG_NOLIMIT, 0, SP_CFG_NOLIMIT, 0
#define GE(a) SP_CFG_INCL, a, SP_CFG_NOLIMIT, 0
#define GT(a) SP_CFG_EXCL, a, SP_CFG_NOLIMIT, 0
#define IN(a, b) SP_CFG_INCL, a, SP_CFG_INCL, b      /* [a, b] */
#define IN_CO(a, b) SP_CFG_INCL, a, SP_CFG_EXCL, b   /* [a, b) */
#define IN_OO(a, b) SP_CFG_EXCL, a, SP_CFG_EXCL, b   /* (a, b) */
#define STR(sec, k, choices, def, doc) {FIELD(sec, k), SP_CFG_STRING, OFF(sec, k), ANY, choices, 0, def, doc, 0}
#define INT(sec, k, range, def, doc) {FIELD(sec, k), SP_CFG_INT, OFF(sec, k), range, NULL, def, NULL, doc, 0}
#define FLT(sec, k, range, def, doc) {FIELD(sec, k), SP_CFG_FLOAT, OFF(sec, k), range, NULL, def, NULL, doc, 0}
#define BOOL(sec, k, def, doc) {FIELD(sec, k), SP_CFG_BOOL, OFF(sec, k), ANY, NULL, def, NULL, doc, 0}
/* Experimental keys: switches kept for measurements and debugging (their A/B did not favour
 * them, or they test a fallback path); listed apart in docs/config.md and marked in config.toml. */
#define XSTR(sec, k, choices, def, doc) {FIELD(sec, k), SP_CFG_STRING, OFF(sec, k), ANY, choices, 0, def, doc, 1}
#define XINT(sec, k, range, def, doc) {FIELD(sec, k), SP_CFG_INT, OFF(sec, k), range, NULL, def, NULL, doc, 1}
#define XBOOL(sec, k, def, doc) {FIELD(sec, k), SP_CFG_BOOL, OFF(sec, k), ANY, NULL, def, NULL, doc, 1}

static const struct {
    const char *name, *doc;
} sections[] = {
    {"experiment", "Naming and seeding of a run."},
    {"data", "The dataset and how its images are read."},
    {"init", "The initial Gaussians."},
    {"output", "What a run writes."},
    {"trainer", "The training loop."},
    {"loss", "The photometric loss."},
    {"refine", "Densification (clone, split), pruning and opacity control."},
    {"adam", "The optimizer. Learning rates are per parameter group."},
    {"render", "How Gaussians become pixels (part of what a trained model means)."},
    {"backend", "Where and how the computation runs."},
};
#define NSECTIONS ((int)(sizeof sections / sizeof *sections))

const sp_config_field sp_config_schema[] = {
    STR(experiment, name, NULL, "splat", "Name of the run; the default output folder is runs/<name>."),
    INT(experiment, seed, GE(0), 0, "Seed of every random choice (initialization, backgrounds, view order)."),

    STR(data, path, NULL, "", "Dataset directory. Required for training."),
    STR(data, format, "auto|blender|colmap|transforms", "auto",
        "Dataset layout; auto detects it from the files present."),
    STR(data, background, "white|black|random", "white",
        "Colour behind transparent pixels of RGBA images in training and evaluation; random draws a new "
        "colour every step."),
    STR(data, alpha, "straight|premultiplied", "straight",
        "How RGBA images store colour: straight (unassociated) or premultiplied alpha."),
    INT(data, downscale, IN(1, 64), 1, "Load images at 1/N of their size (intrinsics scaled to match)."),
    STR(data, eval_split, "test|val|both", "both", "Held-out splits scored at the end; periodic evals use test (val if none)."),
    STR(data, images, NULL, "",
        "COLMAP image folder name; \"\" = automatic (images, or images_<downscale> when present)."),
    INT(data, holdout_every, GE(0), 8,
        "Captured scenes without splits: every Nth image is held out for evaluation; 0 = none."),
    INT(data, cache_mb, IN(0, 1 << 24), 0,
        "0 = decode every image into memory (the training views at load; the held-out ones while a GPU "
        "trains, before the first evaluation); N > 0 = stream training images from disk through a "
        "cache of N MiB (decoded ahead of use), for captures larger than memory (docs/config.md, \"Large "
        "captures\")."),
    INT(data, device_cache_mb, IN(-1, 1 << 24), -1,
        "Streamed images (data.cache_mb > 0) kept on the device in 8 bits, so that a step whose view is there "
        "reads nothing from the host: -1 = auto (up to a third of the device's free memory, at most every training "
        "view; none on the cpu backend), 0 = none (two staging slots), N = at most N MiB (docs/config.md, \"Large "
        "captures\")."),
    INT(data, decode_threads, IN(0, 256), 0,
        "Streamed images: threads decoding ahead of the training; 0 = one per core but one (at most 32)."),
    BOOL(data, allow_outside_images, 0,
         "Allow image paths that are absolute or leave the dataset folder through \"..\" (compared lexically)."),

    STR(init, method, "auto|random|points", "auto",
        "Initial Gaussians: points = the dataset's sparse points, random = uniform in a cube; auto = points "
        "when the dataset has them, else random."),
    INT(init, count, IN(1, 50000000), 100000, "Number of random initial Gaussians."),
    FLT(init, radius, GE(0), 0.0, "Half-size of the random-init cube in world units (centred where the dataset's box is); 0 = the dataset's box."),
    FLT(init, opacity, IN_CO(0, 1), 0.0,
        "Initial opacity of every Gaussian; 0 = by refine.strategy: 0.5 with mcmc (3DGS-MCMC), 0.1 with adc (3DGS)."),
    FLT(init, scale, GE(0), 0.0, "Initial scale in world units; 0 = from nearest-neighbour distances."),
    FLT(init, scale_factor, IN(0, 100), 0.0,
        "Factor on the initial scales from nearest-neighbour distances (init.scale = 0); 0 = by refine.strategy: "
        "0.3 with mcmc, 1 with adc (3DGS)."),

    STR(output, run_dir, NULL, "", "Output folder; \"\" = runs/<experiment.name>."),
    BOOL(output, save_renders, 1, "Save the evaluation renders as PNG files."),
    BOOL(output, save_ply, 1, "Save the trained Gaussians as a standard 3DGS .ply."),

    INT(trainer, max_steps, GE(1), 20000, "Training steps (one view per step)."),
    INT(trainer, batch, IN(1, 64), 1,
        "Views whose gradients are summed before one Adam update, per device (the global batch is batch x devices x "
        "processes). Steps count views seen, in every schedule: the run takes max_steps / global batch Adam "
        "updates. docs/scale.md."),
    STR(trainer, batch_lr, "sqrt|none", "sqrt",
        "Learning rates for a global batch B > 1: sqrt = multiplied by sqrt(B), none = unchanged."),
    INT(trainer, eval_every, GE(0), 0, "Evaluate every N steps; 0 = only at the end."),
    INT(trainer, save_every, GE(0), 0, "Save the model every N steps, plus point_cloud/iteration_N/point_cloud.ply (also at the end); 0 = only at the end."),
    INT(trainer, log_every, GE(1), 100, "Log loss and speed every N steps."),
    INT(trainer, sh_degree, IN(0, 3), 3, "Final spherical-harmonics degree."),
    INT(trainer, sh_interval, GE(1), 667, "Raise the SH degree by one every N steps, up to sh_degree."),
    INT(trainer, checkpoint_every, GE(0), 0, "Write a resumable checkpoint every N steps; 0 = none."),
    FLT(trainer, target_psnr, GE(0), 0.0,
        "Time to quality: log and record in result.toml the first evaluation at or above this PSNR (dB), drawn as a "
        "level line on curves.png; 0 = off. "
        "Set eval_every too, or only the final evaluation counts."),
    INT(trainer, schedule_steps, GE(0), 0,
        "Step schedules (refine.start, refine.stop, refine.mcmc_stop, refine.opacity_reset_every, "
        "refine.prune_weight_every, trainer.sh_interval) are written for a run of this many steps and scaled by "
        "max_steps / schedule_steps; 0 = used as written. The defaults are written for 20000 steps: 20000 makes a "
        "shorter or longer run keep their shape."),

    FLT(loss, ssim_weight, IN(0, 1), 0.1, "Loss = (1 - w) * L1 + w * (1 - SSIM)."),

    INT(refine, start, GE(0), 333, "First step of densification."),
    INT(refine, stop, GE(0), 8333, "adc: no densification after this step. mcmc stops at mcmc_stop."),
    INT(refine, every, GE(1), 100, "Densify every N steps between start and stop."),
    FLT(refine, grad_threshold, GT(0), 0.00012,
        "Densify Gaussians whose mean view-space position gradient exceeds this."),
    FLT(refine, percent_dense, GT(0), 0.01,
        "Gaussians larger than this fraction of the scene extent are split, smaller ones cloned."),
    INT(refine, split_count, IN(2, 8), 2, "Number of Gaussians a split produces."),
    FLT(refine, split_shrink, GT(1), 1.6, "Scales of split children are divided by this."),
    FLT(refine, prune_opacity, IN(0, 1), 0.005, "Prune Gaussians whose opacity is below this."),
    FLT(refine, prune_world_scale, GE(0), 0.1,
        "Prune Gaussians larger than this fraction of the scene extent; 0 = off."),
    STR(refine, opacity_mode, "decay|reset|none", "decay",
        "How unneeded Gaussians fade: decay = every opacity shrinks a little at each refine step, reset = "
        "opacities are lowered to opacity_reset_value periodically, none = neither."),
    FLT(refine, opacity_decay, IN(0, 1), 0.08, "decay mode: fraction every opacity shrinks at each refine step."),
    INT(refine, opacity_reset_every, GE(1), 2000,
        "reset mode: reset opacities every N steps, none in the last N steps of a run."),
    FLT(refine, opacity_reset_value, IN_OO(0, 1), 0.01, "reset mode: opacities above this are lowered to it."),
    INT(refine, capacity, GE(1), 3000000,
        "Maximum number of Gaussians (a budget): when a refine step's candidates do not all fit, they are taken in "
        "decreasing mean gradient, each that still fits."),
    STR(refine, strategy, "auto|adc|mcmc", "auto",
        "How the Gaussians are placed: adc = clone / split by view-space gradient and prune (3DGS's adaptive density "
        "control); mcmc = a fixed budget: dead Gaussians (opacity below prune_opacity) relocated onto live ones, new "
        "ones added up to max_gaussians, position noise and opacity / scale regularizers (3DGS-MCMC; docs/math.md); "
        "auto = mcmc where the backend runs it (one device: cpu, cuda or vulkan), else adc (several devices). adc "
        "refines from start to stop, mcmc from start to mcmc_stop, both every `every` steps. The run's config.toml "
        "records the choice."),
    INT(refine, max_gaussians, GE(0), 0,
        "mcmc: the Gaussian budget. The count grows by mcmc_grow per refine until it reaches this, and never passes "
        "it (capacity stays adc's cap). 0 = auto, from the capture: 340k per 128 million training pixels, never "
        "under 340k nor under twice the sparse points, at most 20M and what half of the device's free memory "
        "holds; the run logs the rule and config.toml records the number (docs/config.md, \"Large captures\")."),
    INT(refine, mcmc_stop, GE(0), 16667,
        "mcmc: no relocation or growth after this step (the 3DGS-MCMC schedule, 25000 of 30000 steps, scaled to 20000)."),
    FLT(refine, mcmc_grow, IN(0, 10), 0.05, "mcmc: fraction of the count added at each refine step, up to max_gaussians."),
    FLT(refine, mcmc_noise_lr, GE(0), 500000.0,
        "mcmc: position noise of every step, times the means learning rate, shaped by each Gaussian's covariance and "
        "gated to nearly transparent ones; 0 = off."),
    FLT(refine, mcmc_opacity_reg, GE(0), 0.0015, "mcmc: weight of the L1 regularizer on opacities (mean over Gaussians)."),
    FLT(refine, mcmc_scale_reg, GE(0), 0.01, "mcmc: weight of the L1 regularizer on scales (mean over Gaussians and axes)."),
    FLT(refine, prune_weight, IN_CO(0, 1), 0.2,
        "Fraction of the Gaussians removed at each prune by blend weight: those whose blending weights (alpha T) "
        "summed over the pixels of every training view are smallest (docs/math.md). 0 = off."),
    INT(refine, prune_weight_every, GE(0), 1667,
        "Prune by blend weight at refine.stop and every N steps between start and stop (scaled with them by "
        "trainer.schedule_steps); 0 = at stop only."),
    BOOL(refine, reorder, 1,
         "At the start of a new run and after each refine that adds or moves Gaussians (adc's densify, mcmc's "
         "relocation and growth), put them in Morton order of their means, so that Gaussians near in space sit "
         "near in memory and a tile's pairs read fewer cache lines; the model is the same, only its order (and "
         "the rounding of sums) changes. A backend without the operation keeps its order."),

    FLT(adam, means_lr, GT(0), 0.00016, "Learning rate of the means at step 0, relative to the scene extent."),
    FLT(adam, means_lr_final, GT(0), 0.0000016,
        "Learning rate of the means at the last step (exponential decay in between), relative to the scene extent."),
    FLT(adam, scales_lr, GT(0), 0.005, "Learning rate of the log-scales."),
    FLT(adam, quats_lr, GT(0), 0.001, "Learning rate of the rotations (quaternions)."),
    FLT(adam, opacity_lr, GT(0), 0.05, "Learning rate of the opacity logits."),
    FLT(adam, sh_dc_lr, GT(0), 0.0025, "Learning rate of the SH DC (base colour) coefficients."),
    FLT(adam, sh_rest_lr, GT(0), 0.000125, "Learning rate of the higher-degree SH coefficients."),
    FLT(adam, beta1, IN_CO(0, 1), 0.9, "Adam first-moment decay."),
    FLT(adam, beta2, IN_CO(0, 1), 0.999, "Adam second-moment decay."),
    FLT(adam, eps, GT(0), 1e-15, "Adam epsilon."),
    BOOL(adam, sparse, 0,
         "Sparse Adam: a Gaussian out of this step's view (its screen rectangle empty) keeps each value whose "
         "gradient is exactly zero, instead of taking a momentum step, and the update skips its memory traffic; a "
         "Gaussian in view takes the whole update. One device only. false = every parameter takes the dense update "
         "every step."),
    STR(adam, moments16, "auto|true|false", "auto",
        "Keep Adam's two moments of every parameter in 16 bits each, both in one 32-bit word (m a bfloat16, v its "
        "8 exponent and 8 mantissa bits), stochastically rounded so that their expectation is exact, instead of "
        "two floats: the update moves 16 bytes a value a step instead of 24, and cuda keeps no second store (a "
        "fifth less device memory at 3M Gaussians). Checkpoints keep float moments, so a run may resume with "
        "either setting. auto = true on cuda (faster at the same quality, docs/speed.md), false on cpu (the "
        "rounding costs more there than the bytes save) and vulkan; false = float moments."),

    BOOL(render, antialias, 0,
         "Opacity-compensated screen-space filter: the 0.3 px^2 low-pass keeps each Gaussian's integral, not its "
         "peak, so a model renders alike at other resolutions (docs/math.md, \"Antialiasing\"). Rendering (eval, "
         "the C API) uses the value a model was trained with; standard 3DGS viewers render without it."),

    STR(backend, kind, sp_backend_kind_choices, "auto",
        "Compute backend; auto = cuda when a CUDA GPU is present, else vulkan on a hardware Vulkan GPU, else cpu."),
    INT(backend, threads, IN(0, 1024), 0,
        "CPU threads; 0 = automatic (the cores, fewer when the machine is busy). At most 1024."),
    BOOL(backend, profile, 0, "Time every stage and report the shares."),
    XBOOL(backend, cas_atomics, 0,
          "GPU: float atomic adds through a compare-and-swap loop even where the device has native float atomics "
          "(checks the fallback path that devices without them take)."),
    XBOOL(backend, split_update, 0,
          "cpu, cuda: project_back and the parameter update (MCMC terms, Adam, noise) as separate passes, the "
          "gradients through memory, where a step fuses them (A/B measurements; the result is the same)."),
    BOOL(backend, deterministic, 0, "Fixed-order reductions: identical results for identical seeds (slower on GPU)."),
    STR(backend, devices, NULL, "1",
        "cuda: GPUs of this process, a count (\"2\": devices 0 and 1) or ids (\"0,2\"); more than one trains a "
        "replica on each and sums gradients over NCCL. docs/scale.md."),
    XINT(backend, reduce_chunks, IN(1, 8), 1,
         "Several GPUs: the gradient all-reduce in up to this many chunks, Adam on each as soon as it is summed "
         "(1 = the whole all-reduce, then Adam); the result is the same. docs/scale.md."),
    BOOL(backend, check_replicas, 0,
         "Several GPUs: after every refine, compare a checksum of every replica's parameters and stop if they "
         "differ (debugging)."),
};
const int sp_config_schema_len = (int)(sizeof sp_config_schema / sizeof *sp_config_schema);

const sp_config_field *sp_config_find(const char *section, const char *key) {
    for (int k = 0; k < sp_config_schema_len; k++)
        if (!strcmp(sp_config_schema[k].section, section) && !strcmp(sp_config_schema[k].key, key))
            return &sp_config_schema[k];
    return NULL;
}

/* ---- removed keys ---- */
/* Keys an earlier splat had. A file or --set that still gives one is told that it was removed
 * and why. The value every earlier run's config.toml recorded by default (which is also what
 * splat does now) is accepted and ignored, so run folders of earlier versions still resume and
 * evaluate. */
static const struct {
    const char *section, *key;
    double old_default;     /* a number's */
    const char *old_string; /* a string's (NULL: a number) */
    const char *why;
} removed_keys[] = {
    {"trainer", "coarse_scale", 1, NULL,
     "progressive resolution cost quality in every measurement (bench/RESULTS.md); runs train at full resolution"},
    {"trainer", "coarse_until", 0.3, NULL,
     "progressive resolution cost quality in every measurement (bench/RESULTS.md); runs train at full resolution"},
    {"refine", "prune_screen_px", 0, NULL,
     "pruning by screen radius was off by default and never measured better; refine.prune_world_scale and "
     "refine.prune_weight remain"},
    {"backend", "backward", 0, "pixel",
     "the per-splat backward pass was slower than the per-pixel one in every measurement (bench/RESULTS.md); "
     "the cuda backend has the per-pixel one only"},
};
#define NREMOVED ((int)(sizeof removed_keys / sizeof *removed_keys))

/* -1 when section.key is not a removed key; 0 when it is and v is its old default (ignored);
 * 1 when it is and v asks for something else: why gets the text after the key's name. */
static int removed_key(const char *section, const char *key, const sp_toml_value *v, char *why, size_t n) {
    for (int k = 0; k < NREMOVED; k++) {
        if (strcmp(removed_keys[k].section, section) || strcmp(removed_keys[k].key, key)) continue;
        if (removed_keys[k].old_string) {
            if (v && v->type == SP_TOML_STRING && !strcmp(v->s, removed_keys[k].old_string)) return 0;
        } else {
            double x = v && v->type == SP_TOML_INT ? (double)v->i : v && v->type == SP_TOML_FLOAT ? v->f : NAN;
            if (x == removed_keys[k].old_default) return 0;
        }
        snprintf(why, n, "was removed: %s; leave it out", removed_keys[k].why);
        return 1;
    }
    return -1;
}

static bool section_known(const char *name) {
    for (int k = 0; k < NSECTIONS; k++)
        if (!strcmp(sections[k].name, name)) return true;
    return false;
}

#define FIELD_PTR(c, f) ((char *)(c) + (f)->offset)
#define FIELD_CPTR(c, f) ((const char *)(c) + (f)->offset)

void sp_config_defaults(sp_config *c) {
    memset(c, 0, sizeof *c);
    for (int k = 0; k < sp_config_schema_len; k++) {
        const sp_config_field *f = &sp_config_schema[k];
        char *p = FIELD_PTR(c, f);
        switch (f->type) {
        case SP_CFG_STRING: snprintf(p, f->size, "%s", f->def_str); break;
        case SP_CFG_INT: *(int *)p = (int)f->def_num; break;
        case SP_CFG_FLOAT: *(double *)p = f->def_num; break;
        case SP_CFG_BOOL: *(bool *)p = f->def_num != 0; break;
        }
    }
}

/* ---- describing what is allowed ---- */
static void fmt_num(double v, char *out, size_t n) { snprintf(out, n, "%.15g", v); }

/* "one of a, b, c", ">= 1", "in (0, 1)", "between 1 and 64"; "" when anything goes. */
static void describe_allowed(const sp_config_field *f, char *out, size_t n) {
    char lo[40], hi[40];
    out[0] = 0;
    if (f->choices) {
        snprintf(out, n, "one of ");
        size_t len = strlen(out);
        for (const char *s = f->choices; *s && len + 3 < n; s++) {
            if (*s == '|') {
                out[len++] = ',';
                out[len++] = ' ';
            } else {
                out[len++] = *s;
            }
        }
        out[len] = 0;
        return;
    }
    fmt_num(f->lo, lo, sizeof lo);
    fmt_num(f->hi, hi, sizeof hi);
    if (f->lo_kind && f->hi_kind) {
        if (f->type == SP_CFG_INT) snprintf(out, n, "between %s and %s", lo, hi);
        else
            snprintf(out, n, "in %c%s, %s%c", f->lo_kind == SP_CFG_INCL ? '[' : '(', lo, hi,
                     f->hi_kind == SP_CFG_INCL ? ']' : ')');
    } else if (f->lo_kind) {
        snprintf(out, n, "%s %s", f->lo_kind == SP_CFG_INCL ? ">=" : ">", lo);
    } else if (f->hi_kind) {
        snprintf(out, n, "%s %s", f->hi_kind == SP_CFG_INCL ? "<=" : "<", hi);
    }
}

static bool in_range(const sp_config_field *f, double v) {
    if (f->lo_kind == SP_CFG_INCL && !(v >= f->lo)) return false;
    if (f->lo_kind == SP_CFG_EXCL && !(v > f->lo)) return false;
    if (f->hi_kind == SP_CFG_INCL && !(v <= f->hi)) return false;
    if (f->hi_kind == SP_CFG_EXCL && !(v < f->hi)) return false;
    return true;
}

static bool choice_ok(const char *choices, const char *s) {
    size_t n = strlen(s);
    for (const char *p = choices; *p;) {
        size_t m = strcspn(p, "|");
        if (m == n && !strncmp(p, s, n)) return true;
        p += m + (p[m] == '|');
    }
    return false;
}

/* Applies v to field f of c. On a problem writes "must be ..." (the text after the key's name)
 * into why and leaves c unchanged. */
static int apply_value(sp_config *c, const sp_config_field *f, const sp_toml_value *v, char *why, size_t n) {
    char *p = FIELD_PTR(c, f), allowed[256], got[64];
    describe_allowed(f, allowed, sizeof allowed);
    switch (f->type) {
    case SP_CFG_STRING:
        if (v->type == SP_TOML_INT && !strcmp(f->key, "devices")) { /* devices = 2 reads as "2" */
            snprintf(p, f->size, "%lld", (long long)v->i);
            return 0;
        }
        if (v->type == SP_TOML_BOOL && f->choices && choice_ok(f->choices, "true") && choice_ok(f->choices, "false")) {
            snprintf(p, f->size, "%s", v->b ? "true" : "false"); /* moments16 = true reads as "true" */
            return 0;
        }
        if (v->type != SP_TOML_STRING) {
            snprintf(why, n, "must be a string, got %s", sp_toml_type_name(v->type));
            return -1;
        }
        if (f->choices && !choice_ok(f->choices, v->s)) {
            snprintf(why, n, "must be %s; got \"%.100s\"", allowed, v->s);
            return -1;
        }
        if (strlen(v->s) >= f->size) {
            snprintf(why, n, "is too long (at most %zu bytes)", f->size - 1);
            return -1;
        }
        memcpy(p, v->s, strlen(v->s) + 1);
        return 0;
    case SP_CFG_BOOL:
        if (v->type != SP_TOML_BOOL) {
            snprintf(why, n, "must be true or false, got %s", sp_toml_type_name(v->type));
            return -1;
        }
        *(bool *)p = v->b;
        return 0;
    case SP_CFG_INT: {
        if (v->type == SP_TOML_FLOAT) {
            sp_toml_format_float(v->f, got);
            snprintf(why, n, "must be an integer, got a float (%s)", got);
            return -1;
        }
        if (v->type != SP_TOML_INT) {
            snprintf(why, n, "must be an integer, got %s", sp_toml_type_name(v->type));
            return -1;
        }
        if (!in_range(f, (double)v->i)) {
            snprintf(why, n, "must be %s, got %lld", allowed, (long long)v->i);
            return -1;
        }
        if (v->i < INT_MIN || v->i > INT_MAX) { /* every int key has a lower bound */
            snprintf(why, n, "is too large (at most %d), got %lld", INT_MAX, (long long)v->i);
            return -1;
        }
        *(int *)p = (int)v->i;
        return 0;
    }
    case SP_CFG_FLOAT: {
        if (v->type != SP_TOML_FLOAT && v->type != SP_TOML_INT) {
            snprintf(why, n, "must be a number, got %s", sp_toml_type_name(v->type));
            return -1;
        }
        double x = v->type == SP_TOML_INT ? (double)v->i : v->f;
        if (v->type == SP_TOML_INT) snprintf(got, sizeof got, "%lld", (long long)v->i);
        else sp_toml_format_float(x, got);
        if (!isfinite(x)) {
            snprintf(why, n, "must be a finite number, got %s", got);
            return -1;
        }
        if (!in_range(f, x)) {
            snprintf(why, n, "must be %s, got %s", allowed, got);
            return -1;
        }
        *(double *)p = x;
        return 0;
    }
    }
    return -1;
}

/* ---- suggestions for misspelt names ---- */
static int edit_distance(const char *a, const char *b) {
    int la = (int)strlen(a), lb = (int)strlen(b);
    if (la > 63 || lb > 63) return 99;
    int d[64][64];
    for (int i = 0; i <= la; i++) d[i][0] = i;
    for (int j = 0; j <= lb; j++) d[0][j] = j;
    for (int i = 1; i <= la; i++)
        for (int j = 1; j <= lb; j++) {
            int sub = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            int del = d[i - 1][j] + 1, ins = d[i][j - 1] + 1;
            d[i][j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
        }
    return d[la][lb];
}
static bool close_enough(const char *name, int dist) {
    int len = (int)strlen(name);
    return dist <= (len <= 4 ? 1 : len <= 8 ? 2 : 3);
}

/* Hint for an unknown section: " (did you mean [trainer]?)" or the list of sections. */
static void section_hint(const char *name, char *out, size_t n) {
    int best = -1, bestd = 99;
    for (int k = 0; k < NSECTIONS; k++) {
        int d = edit_distance(name, sections[k].name);
        if (d < bestd && close_enough(sections[k].name, d)) best = k, bestd = d;
    }
    if (best >= 0) {
        snprintf(out, n, " (did you mean [%s]?)", sections[best].name);
        return;
    }
    size_t len = (size_t)snprintf(out, n, " (sections are ");
    for (int k = 0; k < NSECTIONS && len < n; k++)
        len += (size_t)snprintf(out + len, n - len, "%s%s", sections[k].name, k + 1 < NSECTIONS ? ", " : ")");
}

/* Hint for an unknown key in a known section: a close key in that section, the same key in
 * another section, or the list of the section's keys. */
static void key_hint(const char *section, const char *key, char *out, size_t n) {
    const sp_config_field *best = NULL;
    int bestd = 99;
    for (int k = 0; k < sp_config_schema_len; k++) {
        const sp_config_field *f = &sp_config_schema[k];
        if (strcmp(f->section, section)) continue;
        int d = edit_distance(key, f->key);
        if (d < bestd && close_enough(f->key, d)) best = f, bestd = d;
    }
    if (best) {
        snprintf(out, n, " (did you mean %s.%s?)", best->section, best->key);
        return;
    }
    for (int k = 0; k < sp_config_schema_len; k++)
        if (!strcmp(sp_config_schema[k].key, key)) {
            snprintf(out, n, " (%s is in [%s])", key, sp_config_schema[k].section);
            return;
        }
    size_t len = (size_t)snprintf(out, n, " (keys in [%s]: ", section);
    const char *sep = "";
    for (int k = 0; k < sp_config_schema_len && len < n; k++)
        if (!strcmp(sp_config_schema[k].section, section)) {
            len += (size_t)snprintf(out + len, n - len, "%s%s", sep, sp_config_schema[k].key);
            sep = ", ";
        }
    if (len < n) snprintf(out + len, n - len, ")");
}

/* ---- loading ---- */
/* Syntax problems are reported with the rest: whatever parsed is still checked and applied. */
static int apply_doc(const char *path, sp_toml_doc *dp, int before, sp_config *c, sp_problems *problems) {
    sp_toml_doc d = *dp;
    char hint[1024], why[512];
    int k = 0; /* the entries of a table are contiguous, tables in order: one pass over both */
    for (int t = 0; t < d.ntables; t++) {
        const sp_toml_table *tab = &d.tables[t];
        bool known = t == 0 || section_known(tab->name);
        if (!known) {
            section_hint(tab->name, hint, sizeof hint);
            sp_problems_add(problems, "%s:%d: unknown section [%s]%s", path, tab->line, tab->name, hint);
        }
        for (; k < d.n && d.entries[k].table == t; k++) {
            const sp_toml_entry *e = &d.entries[k];
            if (!known) continue;
            if (t == 0) {
                const char *home = NULL;
                for (int j = 0; j < sp_config_schema_len && !home; j++)
                    if (!strcmp(sp_config_schema[j].key, e->key)) home = sp_config_schema[j].section;
                if (home)
                    sp_problems_add(problems, "%s:%d: key '%s' is outside any section (it belongs in [%s])", path,
                                    e->line, e->key, home);
                else
                    sp_problems_add(problems, "%s:%d: key '%s' is outside any section", path, e->line, e->key);
                continue;
            }
            const sp_config_field *f = sp_config_find(tab->name, e->key);
            int gone = f ? -1 : removed_key(tab->name, e->key, e->invalid ? NULL : &e->value, why, sizeof why);
            if (gone >= 0) {
                if (gone) sp_problems_add(problems, "%s:%d: %s.%s %s", path, e->line, tab->name, e->key, why);
                continue;
            }
            if (!f) {
                key_hint(tab->name, e->key, hint, sizeof hint);
                sp_problems_add(problems, "%s:%d: unknown key %s.%s%s", path, e->line, tab->name, e->key, hint);
                continue;
            }
            if (e->invalid) { /* reported by the parser; an unquoted string still counts as set */
                if (f->type == SP_CFG_STRING) apply_value(c, f, &e->value, why, sizeof why);
                continue;
            }
            if (apply_value(c, f, &e->value, why, sizeof why))
                sp_problems_add(problems, "%s:%d: %s.%s %s", path, e->line, f->section, f->key, why);
        }
    }
    sp_toml_free(&d);
    return problems->n > before ? -1 : 0;
}

int sp_config_apply_file(const char *path, sp_config *c, sp_problems *problems) {
    int before = problems->n;
    sp_toml_doc d;
    sp_toml_load_all(path, &d, problems);
    return apply_doc(path, &d, before, c, problems);
}

int sp_config_apply_text(const char *text, const char *name, sp_config *c, sp_problems *problems) {
    int before = problems->n;
    sp_toml_doc d;
    sp_toml_parse_all(text, strlen(text), name, &d, problems);
    return apply_doc(name, &d, before, c, problems);
}

int sp_config_load(const char *path, sp_config *c, sp_problems *problems) {
    sp_config_defaults(c);
    return sp_config_apply_file(path, c, problems);
}

static char *trim(char *s) {
    while (*s == ' ' || *s == '\t') s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t')) s[--n] = 0;
    return s;
}

int sp_config_set(sp_config *c, const char *assignment, sp_problems *problems) {
    char *buf = sp_strdup(assignment);
    char *eq = strchr(buf, '=');
    int rc = -1;
    if (!eq) {
        sp_problems_add(problems, "%s: expected section.key=value", trim(buf));
        goto done;
    }
    *eq = 0;
    char *name = trim(buf), *text = trim(eq + 1), *dot = strchr(name, '.');
    if (!dot) {
        const char *home = NULL;
        for (int j = 0; j < sp_config_schema_len && !home; j++)
            if (!strcmp(sp_config_schema[j].key, name)) home = sp_config_schema[j].section;
        if (home) sp_problems_add(problems, "%s: expected section.key=value (did you mean %s.%s?)", name, home, name);
        else sp_problems_add(problems, "%s: expected section.key=value", name);
        goto done;
    }
    *dot = 0;
    const char *section = name, *key = dot + 1;
    char hint[1024], why[512];
    if (!section_known(section)) {
        section_hint(section, hint, sizeof hint);
        sp_problems_add(problems, "%s.%s: unknown section [%s]%s", section, key, section, hint);
        goto done;
    }
    const sp_config_field *f = sp_config_find(section, key);
    if (!f) {
        sp_toml_value rv;
        int parsed = sp_toml_parse_value(text, &rv) == 0;
        if (!parsed && text[0] != '"' && text[0] != '\'') { /* an unquoted word, as for a string key */
            memset(&rv, 0, sizeof rv);
            rv.type = SP_TOML_STRING;
            rv.s = sp_strdup(text);
            parsed = 1;
        }
        int gone = removed_key(section, key, parsed ? &rv : NULL, why, sizeof why);
        if (parsed) sp_toml_value_free(&rv);
        if (gone == 0) rc = 0; /* the old default: ignored */
        if (gone > 0) sp_problems_add(problems, "%s.%s: %s", section, key, why);
        if (gone >= 0) goto done;
        key_hint(section, key, hint, sizeof hint);
        sp_problems_add(problems, "%s.%s: unknown key%s", section, key, hint);
        goto done;
    }
    sp_toml_value v;
    if (f->type == SP_CFG_STRING && text[0] != '"' && text[0] != '\'') {
        /* An unquoted word for a string key is taken literally. */
        memset(&v, 0, sizeof v);
        v.type = SP_TOML_STRING;
        v.s = sp_strdup(text);
    } else if (sp_toml_parse_value(text, &v)) {
        if (f->type == SP_CFG_STRING)
            sp_problems_add(problems, "%s.%s: %s", section, key, sp_last_error());
        else
            sp_problems_add(problems, "%s.%s: must be %s, got '%s'", section, key,
                            f->type == SP_CFG_INT ? "an integer" : f->type == SP_CFG_FLOAT ? "a number" : "true or false",
                            text);
        goto done;
    }
    rc = apply_value(c, f, &v, why, sizeof why);
    if (rc) sp_problems_add(problems, "%s.%s: %s", section, key, why);
    sp_toml_value_free(&v);
done:
    free(buf);
    return rc;
}

/* mcmc with a set budget that a random initialization (from a dataset of num_points sparse points)
 * of init.count would exceed (sp_config_check_mcmc_init). */
static int mcmc_random_init_over_budget(const sp_config *c, int num_points) {
    return !strcmp(c->refine.strategy, "mcmc") && c->refine.max_gaussians > 0 &&
           c->init.count > c->refine.max_gaussians && !sp_config_init_from_points(c, num_points);
}

int sp_config_validate_for_training(const sp_config *c, sp_problems *problems) {
    int before = problems->n;
    if (!c->data.path[0])
        sp_problems_add(problems, "data.path is required (the dataset folder to train on)");
    if (!c->output.run_dir[0] && (!c->experiment.name[0] || strchr(c->experiment.name, '/') ||
                                  !strcmp(c->experiment.name, ".") || !strcmp(c->experiment.name, "..")))
        sp_problems_add(problems, "experiment.name = \"%s\": must be a non-empty name without '/', and not \".\" or "
                                  "\"..\", when output.run_dir is \"\" (the run goes to runs/<experiment.name>)",
                        c->experiment.name);
    /* Where the run would go may not be over its parent, the dataset, or hold the dataset. */
    if (!sp_utf8_valid(c->data.path))
        sp_problems_add(problems, "data.path is not valid UTF-8: the run's config.toml and JSON files need UTF-8 "
                                  "names; rename the folder");
    if (!sp_utf8_valid(c->output.run_dir) || !sp_utf8_valid(c->experiment.name))
        sp_problems_add(problems, "%s is not valid UTF-8: the run's config.toml and JSON files need UTF-8 names",
                        sp_utf8_valid(c->output.run_dir) ? "experiment.name" : "output.run_dir");
    if (c->output.run_dir[0]) {
        const char *r = c->output.run_dir;
        size_t len = strlen(r);
        while (len > 1 && r[len - 1] == '/') len--;
        size_t start = len;
        while (start > 0 && r[start - 1] != '/') start--;
        if ((len - start == 1 && r[start] == '.') || (len - start == 2 && r[start] == '.' && r[start + 1] == '.'))
            sp_problems_add(problems, "output.run_dir = \"%s\" ends in \".\" or \"..\": the run would be written "
                                      "over an existing folder's files; name the run's own folder", r);
    }
    if (c->data.path[0] && sp_utf8_valid(c->data.path)) {
        char *run = c->output.run_dir[0] ? sp_strdup(c->output.run_dir) : sp_strfmt("runs/%s", c->experiment.name);
        if (sp_path_within(run, c->data.path))
            sp_problems_add(problems, "%s = \"%s\": the run folder %s is the dataset folder %s or inside it; "
                                      "write runs outside the dataset", c->output.run_dir[0] ? "output.run_dir" :
                                      "experiment.name", c->output.run_dir[0] ? c->output.run_dir :
                                      c->experiment.name, run, c->data.path);
        else if (sp_path_within(c->data.path, run))
            sp_problems_add(problems, "%s = \"%s\": the dataset %s lies inside the run folder %s, whose files a "
                                      "run replaces; choose another run folder", c->output.run_dir[0] ?
                                      "output.run_dir" : "experiment.name", c->output.run_dir[0] ?
                                      c->output.run_dir : c->experiment.name, c->data.path, run);
        free(run);
    }
    {
        int ids[SP_MAX_DEVICES];
        if (sp_parse_devices(c->backend.devices, 0, ids) < 0) sp_problems_add(problems, "%s", sp_last_error());
    }
    {
        int ids[SP_MAX_DEVICES];
        if (c->data.cache_mb > 0 && sp_parse_devices(c->backend.devices, 0, ids) > 1)
            sp_problems_add(problems, "data.cache_mb = %d with backend.devices = \"%s\": streamed images go to one device; "
                                      "use data.cache_mb = 0 (images in memory) to train on several GPUs",
                            c->data.cache_mb, c->backend.devices);
    }
    if (c->adam.sparse) {
        int ids[SP_MAX_DEVICES];
        if (sp_parse_devices(c->backend.devices, 0, ids) > 1)
            sp_problems_add(problems, "adam.sparse = true with backend.devices = \"%s\": sparse Adam trains on one "
                                      "device; use one device or adam.sparse = false", c->backend.devices);
    }
    if (c->trainer.batch > 1 && !strcmp(c->backend.kind, "vulkan"))
        sp_problems_add(problems, "trainer.batch = %d: the vulkan backend trains one view per Adam step (batch 1); "
                                  "batches need the cpu or cuda backend", c->trainer.batch);
    if (!strcmp(c->refine.strategy, "mcmc")) {
        int ids[SP_MAX_DEVICES];
        if (sp_parse_devices(c->backend.devices, 0, ids) > 1)
            sp_problems_add(problems, "refine.strategy = \"mcmc\" with backend.devices = \"%s\": MCMC densification "
                                      "runs on one device; use one device or refine.strategy = \"adc\"",
                            c->backend.devices);
    }
    if (!strcmp(c->init.method, "random") && mcmc_random_init_over_budget(c, 0))
        sp_problems_add(problems, "refine.strategy = \"mcmc\": init.count (%d) is larger than refine.max_gaussians "
                                  "(%d), the budget", c->init.count, c->refine.max_gaussians);
    if (c->init.count > c->refine.capacity)
        sp_problems_add(problems, "init.count (%d) is larger than refine.capacity (%d)", c->init.count,
                        c->refine.capacity);
    return problems->n > before ? -1 : 0;
}

int sp_config_resolve_strategy(sp_config *c, int mcmc_runs) {
    if (!strcmp(c->refine.strategy, "auto")) snprintf(c->refine.strategy, sizeof c->refine.strategy, "%s", mcmc_runs ? "mcmc" : "adc");
    int mcmc = !strcmp(c->refine.strategy, "mcmc");
    if (c->init.opacity == 0.0) c->init.opacity = mcmc ? 0.5 : 0.1;
    if (c->init.scale_factor == 0.0) c->init.scale_factor = mcmc ? SP_MCMC_SCALE_FACTOR : 1.0;
    if (mcmc && !strcmp(c->init.method, "random")) return sp_config_check_mcmc_init(c, 0);
    return 0;
}

int sp_config_init_from_points(const sp_config *c, int num_points) {
    return !strcmp(c->init.method, "points") || (!strcmp(c->init.method, "auto") && num_points > 0);
}

int sp_config_moments16(const sp_config *c) {
    return !strcmp(c->adam.moments16, "true") ? 1 : !strcmp(c->adam.moments16, "false") ? 0 : -1;
}

int sp_config_check_mcmc_init(const sp_config *c, int num_points) {
    if (!mcmc_random_init_over_budget(c, num_points)) return 0;
    return sp_error("refine.strategy = mcmc: init.count (%d) is larger than refine.max_gaussians (%d), the budget; "
                    "raise refine.max_gaussians, lower init.count or set refine.strategy = \"adc\"", c->init.count,
                    c->refine.max_gaussians);
}

/* ---- writing ---- */
static void write_field(sp_toml_writer *w, const sp_config *c, const sp_config_field *f) {
    const char *p = FIELD_CPTR(c, f);
    switch (f->type) {
    case SP_CFG_STRING: sp_tomlw_string(w, f->key, p); break;
    case SP_CFG_INT: sp_tomlw_int(w, f->key, *(const int *)p); break;
    case SP_CFG_FLOAT: sp_tomlw_float(w, f->key, *(const double *)p); break;
    case SP_CFG_BOOL: sp_tomlw_bool(w, f->key, *(const bool *)p); break;
    }
}

char *sp_config_to_toml(const sp_config *c) {
    sp_toml_writer w;
    sp_tomlw_init(&w);
    sp_tomlw_comment(&w, "splat configuration: every setting, defaults included (reference: docs/config.md).");
    for (int s = 0; s < NSECTIONS; s++) {
        sp_tomlw_table(&w, sections[s].name);
        sp_tomlw_comment(&w, sections[s].doc);
        for (int k = 0; k < sp_config_schema_len; k++) {
            const sp_config_field *f = &sp_config_schema[k];
            if (strcmp(f->section, sections[s].name)) continue;
            char allowed[256];
            describe_allowed(f, allowed, sizeof allowed);
            char *doc = sp_strfmt("%s%s%s%s%s", f->experimental ? "Experimental: " : "", f->doc,
                                  allowed[0] ? " Allowed: " : "", allowed, allowed[0] ? "." : "");
            sp_tomlw_comment(&w, doc);
            free(doc);
            write_field(&w, c, f);
        }
    }
    char *text = sp_strdup(sp_tomlw_text(&w));
    sp_tomlw_free(&w);
    return text;
}

int sp_config_write(const sp_config *c, const char *path) {
    char *text = sp_config_to_toml(c);
    int rc = sp_write_file_atomic(path, text, strlen(text));
    free(text);
    return rc;
}

void sp_config_print(const sp_config *c, FILE *f) {
    char *text = sp_config_to_toml(c);
    fputs(text, f);
    free(text);
}

bool sp_config_equal(const sp_config *a, const sp_config *b) {
    for (int k = 0; k < sp_config_schema_len; k++) {
        const sp_config_field *f = &sp_config_schema[k];
        const char *pa = FIELD_CPTR(a, f), *pb = FIELD_CPTR(b, f);
        bool same = true;
        switch (f->type) {
        case SP_CFG_STRING: same = !strcmp(pa, pb); break;
        case SP_CFG_INT: same = *(const int *)pa == *(const int *)pb; break;
        case SP_CFG_FLOAT: same = !memcmp(pa, pb, sizeof(double)); break;
        case SP_CFG_BOOL: same = *(const bool *)pa == *(const bool *)pb; break;
        }
        if (!same) return false;
    }
    return true;
}

/* ---- docs ---- */
typedef struct {
    char *s;
    size_t len, cap;
} mdbuf;

static void md_put(mdbuf *b, const char *s) {
    size_t n = strlen(s);
    if (b->len + n + 1 > b->cap) {
        b->cap = (b->len + n + 1) * 2 + 1024;
        b->s = sp_realloc(b->s, b->cap);
    }
    memcpy(b->s + b->len, s, n + 1);
    b->len += n;
}

/* Table cell text: characters markdown would read as markup are backslash-escaped. */
static void md_cell(mdbuf *b, const char *s) {
    for (; *s; s++) {
        char t[3] = {'\\', *s, 0};
        md_put(b, strchr("|<*", *s) ? t : t + 1);
    }
}

/* One row of a key table. */
static void md_row(mdbuf *b, const sp_config_field *f) {
    static const char *types[] = {"string", "integer", "float", "boolean"};
    char t[512], def[300];
    switch (f->type) {
    case SP_CFG_STRING: snprintf(def, sizeof def, "\"%s\"", f->def_str); break;
    case SP_CFG_INT: snprintf(def, sizeof def, "%.0f", f->def_num); break;
    case SP_CFG_FLOAT: sp_toml_format_float(f->def_num, def); break;
    case SP_CFG_BOOL: snprintf(def, sizeof def, "%s", f->def_num ? "true" : "false"); break;
    }
    snprintf(t, sizeof t, "| `%s.%s` | %s | `%s` | ", f->section, f->key, types[f->type], def);
    md_put(b, t);
    if (f->choices) {
        for (const char *p = f->choices; *p;) {
            size_t m = strcspn(p, "|");
            snprintf(t, sizeof t, "%s`%.*s`", p == f->choices ? "" : ", ", (int)m, p);
            md_put(b, t);
            p += m + (p[m] == '|');
        }
    } else {
        describe_allowed(f, t, sizeof t);
        md_cell(b, t[0] ? t : (f->type == SP_CFG_BOOL ? "true, false" : "any"));
    }
    md_put(b, " | ");
    md_cell(b, f->doc);
    md_put(b, " |\n");
}

#define MD_HEADER "\n\n| Key | Type | Default | Allowed | Meaning |\n|---|---|---|---|---|\n"

char *sp_config_docs_markdown(void) {
    mdbuf b = {0};
    char t[512];
    md_put(&b, "");
    for (int s = 0; s < NSECTIONS; s++) {
        snprintf(t, sizeof t, "%s### [%s]\n\n", s ? "\n" : "", sections[s].name);
        md_put(&b, t);
        md_cell(&b, sections[s].doc);
        md_put(&b, MD_HEADER);
        for (int k = 0; k < sp_config_schema_len; k++)
            if (!strcmp(sp_config_schema[k].section, sections[s].name) && !sp_config_schema[k].experimental)
                md_row(&b, &sp_config_schema[k]);
    }
    md_put(&b, "\n### Experimental\n\n");
    md_cell(&b, "Switches kept for measurements and debugging, not for use: their A/B did not favour them, or they "
                "exercise a fallback path. They keep their sections' names; the run's config.toml marks them.");
    md_put(&b, MD_HEADER);
    for (int k = 0; k < sp_config_schema_len; k++)
        if (sp_config_schema[k].experimental) md_row(&b, &sp_config_schema[k]);
    return b.s;
}
