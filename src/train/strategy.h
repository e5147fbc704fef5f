/* strategy.h — the refine strategies (refine.strategy): how a run adds, moves and removes
 * Gaussians while it trains. Each strategy is a small table of callbacks that the loop in
 * train.c calls at fixed points of a step; the loop itself knows no strategy by name.
 *
 *   adc  (strategy_adc.c)   3DGS's adaptive density control: statistics of the view-space gradient,
 *                           clone / split / prune on schedule, opacity decay or reset, pruning by
 *                           blend weight.
 *   mcmc (strategy_mcmc.c)  3DGS-MCMC: a fixed budget, dead Gaussians relocated and new ones added
 *                           (train/mcmc.c decides), opacity and scale regularizers and position
 *                           noise every step.
 *
 * Strategies keep no state of their own: what they accumulate (the densification statistics)
 * lives in the backend, and everything else is a pure function of the config, the step and the
 * seed, so a checkpoint needs nothing from them (a resumed adc run starts its statistics afresh,
 * as it always has). Adding a strategy: one file with its table, one row in sp_strategies
 * (strategy.c), its word in refine.strategy's choices (config.c). */
#ifndef SPLAT_STRATEGY_H
#define SPLAT_STRATEGY_H

#include <stdint.h>

#include "backend/backend.h"
#include "scene/dataset.h"
#include "train/config.h"
#include "train/schedule.h"

/* What a strategy sees of the run. */
typedef struct {
    const sp_config *cfg;
    const sp_schedule *sched;
    sp_backend *b;
    const sp_split *train; /* the training views (pruning by blend weight renders them) */
    float extent;          /* scene extent: world-space thresholds are fractions of it */
} sp_strategy_env;

typedef struct sp_strategy {
    const char *name; /* the refine.strategy word */
    const char *stop_key; /* the refine key that ends its refines ("stop", "mcmc_stop") */
    int uses_budget;      /* refine.max_gaussians is its budget (the automatic one is logged) */
    /* NULL when the backend runs it; else why not (a static string). several: more than one
     * device or process. */
    const char *(*unavailable)(const sp_backend *b, int several);
    /* Once per Adam step (views prev+1 .. step), before its views: the arguments the strategy
     * adds to every view of the step (regularizers, the noise the backend applies after Adam).
     * NULL: none. */
    void (*step_args)(const sp_strategy_env *e, int step, sp_step_args *a);
    /* Per view (views-seen index s, 1-based): 1 if its backward pass accumulates the
     * densification statistics the strategy's refine reads. */
    int (*collects_stats)(const sp_strategy_env *e, int s);
    /* After the Adam step of views prev+1 .. step: the refines due in it (at most one of each
     * kind, at the last index due). Logs what it did into the run's log. */
    int (*refine)(const sp_strategy_env *e, int prev, int step);
    /* Once the backend and the schedules are known, before the views and the model go to the
     * device (e->train and e->extent set, nothing on the device yet): what the strategy's refines
     * will need, started early. NULL: nothing. */
    void (*prepare)(const sp_strategy_env *e);
} sp_strategy;

extern const sp_strategy sp_strategy_adc, sp_strategy_mcmc;

/* The strategy named by a resolved refine.strategy (adc or mcmc); NULL for another word. */
const sp_strategy *sp_strategy_find(const char *name);

/* Before the run, once the backend is known: refine.max_gaussians = 0 (auto) becomes the budget
 * the capture needs (train/mcmc.h), refine.strategy = auto becomes the strategy the backend runs
 * (sp_config_resolve_strategy), both logged. Returns the strategy, or NULL with the error set
 * (a strategy asked for that the backend cannot run). */
const sp_strategy *sp_strategy_setup(sp_config *cfg, sp_backend *b, const sp_dataset *data, int several);

/* The last views-seen index in prev+1 .. step for which due(sched, s) holds; 0 if none. */
int sp_strategy_last_due(const sp_schedule *sched, int prev, int step, int (*due)(const sp_schedule *, int));

#endif
