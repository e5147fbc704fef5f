/* strategy_mcmc.c — refine.strategy = "mcmc", 3DGS-MCMC (strategy.h, docs/math.md "MCMC"): every
 * step adds the opacity and scale regularizers and, after Adam, position noise gated to nearly
 * transparent Gaussians (both computed by the backend from the step's arguments); every
 * refine.every views from refine.start to refine.mcmc_stop, dead Gaussians are relocated onto live
 * ones and the count grows by refine.mcmc_grow up to refine.max_gaussians (train/mcmc.c decides,
 * the backend applies). No densification statistics. */
#include "train/strategy.h"

#include "core/core.h"
#include "train/mcmc.h"

static const char *mcmc_unavailable(const sp_backend *b, int several) {
    return b->ops->mcmc_read && b->ops->mcmc_apply && !several ? NULL : "has no MCMC densification";
}

static void mcmc_step_args(const sp_strategy_env *e, int step, sp_step_args *a) {
    const __typeof__(e->cfg->refine) *rf = &e->cfg->refine;
    a->opacity_reg = (float)rf->mcmc_opacity_reg;
    a->scale_reg = (float)rf->mcmc_scale_reg;
    a->noise_scale = (float)(rf->mcmc_noise_lr * a->lr.means); /* the means rate of this step */
    a->noise_seed = sp_hash64((uint64_t)e->cfg->experiment.seed ^ 0x6d636d63ull, (uint64_t)step);
}

static int mcmc_collects_stats(const sp_strategy_env *e, int s) { return 0; }

static int mcmc_refine(const sp_strategy_env *e, int prev, int step) {
    int at = sp_strategy_last_due(e->sched, prev, step, sp_schedule_refine_due);
    if (!at) return 0;
    const __typeof__(e->cfg->refine) *rf = &e->cfg->refine;
    sp_mcmc_result mr;
    if (sp_mcmc_refine(e->b, (float)rf->prune_opacity, rf->mcmc_grow, rf->max_gaussians,
                       sp_hash64((uint64_t)e->cfg->experiment.seed, (uint64_t)at), &mr))
        return -1;
    sp_log_to_file("step %d refine (mcmc): %d relocated, %d added: %d -> %d Gaussians", step, mr.relocated, mr.added,
                   mr.n_before, mr.n_after);
    return 0;
}

/* A run with refines ahead lets a backend that decides on its device start making what that needs. */
static void mcmc_prepare(const sp_strategy_env *e) {
    if (e->sched->refine_start < e->sched->refine_stop && e->sched->refine_start < e->cfg->trainer.max_steps)
        sp_mcmc_prepare(e->b);
}

const sp_strategy sp_strategy_mcmc = {
    .name = "mcmc",
    .stop_key = "mcmc_stop",
    .uses_budget = 1,
    .unavailable = mcmc_unavailable,
    .step_args = mcmc_step_args,
    .collects_stats = mcmc_collects_stats,
    .refine = mcmc_refine,
    .prepare = mcmc_prepare,
};
