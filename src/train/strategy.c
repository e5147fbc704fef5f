/* strategy.c — the table of refine strategies (strategy.h) and what comes before any of them
 * runs: the automatic Gaussian budget and the choice that refine.strategy = auto makes. */
#include "train/strategy.h"

#include <string.h>

#include "core/core.h"
#include "train/mcmc.h"

static const sp_strategy *const sp_strategies[] = {&sp_strategy_adc, &sp_strategy_mcmc};
#define NSTRATEGIES ((int)(sizeof sp_strategies / sizeof *sp_strategies))

const sp_strategy *sp_strategy_find(const char *name) {
    for (int i = 0; i < NSTRATEGIES; i++)
        if (!strcmp(sp_strategies[i]->name, name)) return sp_strategies[i];
    return NULL;
}

int sp_strategy_last_due(const sp_schedule *sched, int prev, int step, int (*due)(const sp_schedule *, int)) {
    int at = 0;
    for (int s = prev + 1; s <= step; s++)
        if (due(sched, s)) at = s;
    return at;
}

const sp_strategy *sp_strategy_setup(sp_config *cfg, sp_backend *b, const sp_dataset *data, int several) {
    const char *budget_why = NULL; /* refine.max_gaussians = 0 (auto): from the capture (train/mcmc.h) */
    double px = 0;
    int budget_set = cfg->refine.max_gaussians > 0;
    if (!budget_set) {
        for (int i = 0; i < data->train.n; i++)
            px += (double)data->train.views[i].cam.width * data->train.views[i].cam.height;
        size_t free_b = 0, total_b = 0;
        if (!b->ops->device_memory || b->ops->device_memory(b, &free_b, &total_b)) free_b = 0;
        cfg->refine.max_gaussians = sp_mcmc_auto_budget(px, data->num_points, (double)free_b, &budget_why);
    }
    const sp_strategy *asked = sp_strategy_find(cfg->refine.strategy); /* NULL: auto */
    const char *why_not = asked && asked->unavailable ? asked->unavailable(b, several) : NULL;
    if (why_not) {
        sp_error("refine.strategy = \"%s\": the %s backend%s %s; use refine.strategy = \"adc\" (or auto), or one "
                 "device", asked->name, b->ops->name, several ? " on several devices" : "", why_not);
        return NULL;
    }
    /* auto: mcmc where the backend runs it */
    int mcmc_runs = sp_strategy_mcmc.unavailable(b, several) == NULL;
    if (sp_config_resolve_strategy(cfg, mcmc_runs)) return NULL;
    /* a set budget and init.method = auto: random (and checked) only where the dataset has no points */
    if (budget_set && sp_config_check_mcmc_init(cfg, data->num_points)) return NULL;
    const sp_strategy *s = sp_strategy_find(cfg->refine.strategy);
    if (!asked)
        SP_INFO("refine.strategy auto: %s%s", s->name, mcmc_runs ? "" : " (this backend has no MCMC densification)");
    if (budget_why && s->uses_budget)
        SP_INFO("refine.max_gaussians auto: %d (%s decided: %.0fk per %.0fM training pixels, here %.0fM in %d views; "
                "%d sparse points)", cfg->refine.max_gaussians, budget_why, SP_MCMC_BUDGET_BASE / 1e3,
                SP_MCMC_BUDGET_PIXELS / 1e6, px / 1e6, data->train.n, data->num_points);
    return s;
}
