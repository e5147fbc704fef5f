/* strategy_adc.c — refine.strategy = "adc", 3DGS's adaptive density control (strategy.h): the
 * backward pass accumulates each Gaussian's view-space gradient until refine.stop; every
 * refine.every views from refine.start the backend clones small and splits large Gaussians above
 * refine.grad_threshold and prunes the transparent and the huge; opacities decay a little at each
 * refine or are reset on their own schedule (refine.opacity_mode); pruning by blend weight
 * (train/prune.h) removes the Gaussians that add least to the training images. docs/math.md has
 * the rules. */
#include "train/strategy.h"

#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "train/prune.h"
#include "train/train.h"

/* Reset mode: every opacity_reset_every steps before refine.stop, and once when densification
 * starts on a white background (floaters of the random initialization would hide against it).
 * A reset needs time to recover (the opacities start again from opacity_reset_value): none
 * falls in the last opacity_reset_every steps of the run, the spacing the schedule itself gives
 * each reset before the next one. docs/config.md explains it. */
int sp_train_opacity_reset_due(const sp_config *cfg, int step) {
    sp_schedule sc; /* start, stop and spacing as scaled by trainer.schedule_steps */
    sp_schedule_make(cfg, &sc);
    if (strcmp(cfg->refine.opacity_mode, "reset") || step >= sc.refine_stop) return 0;
    int white = !strcmp(cfg->data.background, "white");
    if (step % sc.opacity_reset_every != 0 && !(white && step == sc.refine_start)) return 0;
    return cfg->trainer.max_steps - step >= sc.opacity_reset_every;
}

static int adc_collects_stats(const sp_strategy_env *e, int s) { return sp_schedule_collect_stats(e->sched, s); }

/* Clone / split / prune (and opacity decay) of the refine at views-seen index `at`. */
static int densify(const sp_strategy_env *e, int at, int step) {
    const __typeof__(e->cfg->refine) *rf = &e->cfg->refine;
    sp_refine_args ra = {0};
    ra.densify = 1;
    ra.grad_threshold = (float)rf->grad_threshold;
    ra.clone_max_scale = (float)(rf->percent_dense * e->extent);
    ra.split_count = rf->split_count;
    ra.split_shrink = (float)rf->split_shrink;
    ra.prune_opacity = (float)rf->prune_opacity;
    int late = at > e->sched->opacity_reset_every;
    ra.prune_world_scale = late && rf->prune_world_scale > 0 ? (float)(rf->prune_world_scale * e->extent) : 0;
    if (!strcmp(rf->opacity_mode, "decay")) ra.opacity_decay = (float)rf->opacity_decay;
    ra.capacity = rf->capacity;
    ra.seed = sp_hash64((uint64_t)e->cfg->experiment.seed, (uint64_t)at);
    sp_refine_result res;
    if (e->b->ops->refine(e->b, &ra, &res)) return -1;
    sp_log_to_file("step %d refine: %d cloned, %d split, %d pruned: %d -> %d Gaussians", step, res.cloned, res.split,
                   res.pruned, res.n_before, res.n_after);
    return 0;
}

/* Pruning by blend weight over every training view. */
static int prune_by_weight(const sp_strategy_env *e, int step) {
    int nc = e->train->n;
    sp_camera *cams = SP_NEW(sp_camera, nc > 0 ? nc : 1);
    for (int i = 0; i < nc; i++) cams[i] = e->train->views[i].cam;
    sp_prune_result pr;
    int rc = sp_prune_by_weight(e->b, cams, nc, e->cfg->refine.prune_weight, &pr);
    free(cams);
    if (rc) return -1;
    sp_log_to_file("step %d prune by blend weight over %d views: %d -> %d Gaussians (%.2f s)", step, nc, pr.n_before,
                   pr.n_after, pr.seconds);
    return 0;
}

static int opacity_reset(const sp_strategy_env *e, int step) {
    const __typeof__(e->cfg->refine) *rf = &e->cfg->refine;
    sp_refine_args ra = {0};
    ra.opacity_reset = (float)rf->opacity_reset_value;
    ra.capacity = rf->capacity;
    sp_refine_result res;
    if (e->b->ops->refine(e->b, &ra, &res)) return -1;
    sp_log_to_file("step %d: opacity reset to %g", step, rf->opacity_reset_value);
    return 0;
}

/* In this order, each at most once per Adam step: densify, prune by blend weight, reset. */
static int adc_refine(const sp_strategy_env *e, int prev, int step) {
    int refine_at = sp_strategy_last_due(e->sched, prev, step, sp_schedule_refine_due);
    int prune_at = e->cfg->refine.prune_weight > 0
                       ? sp_strategy_last_due(e->sched, prev, step, sp_schedule_prune_weight_due)
                       : 0;
    int reset_at = 0;
    for (int s = prev + 1; s <= step; s++)
        if (sp_train_opacity_reset_due(e->cfg, s)) reset_at = s;
    if (refine_at && densify(e, refine_at, step)) return -1;
    if (prune_at && prune_by_weight(e, step)) return -1;
    if (reset_at && opacity_reset(e, step)) return -1;
    return 0;
}

const sp_strategy sp_strategy_adc = {
    .name = "adc",
    .stop_key = "stop",
    .unavailable = NULL, /* every backend, any number of devices */
    .step_args = NULL, /* nothing added to a step */
    .collects_stats = adc_collects_stats,
    .refine = adc_refine,
};
