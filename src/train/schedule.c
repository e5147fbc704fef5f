/* schedule.c — per-step schedules of the training loop as pure functions of the config
 * (schedule.h); the loop in train.c and the refine strategies ask them what to do,
 * tests/test_schedule.c checks them. */
#include "train/schedule.h"

#include <math.h>
#include <string.h>

/* A step count written for a run of schedule_steps, scaled to max_steps (at least `lo`). */
static int scaled(const sp_config *c, int steps, int lo) {
    if (c->trainer.schedule_steps <= 0) return steps;
    double v = (double)steps * c->trainer.max_steps / c->trainer.schedule_steps;
    long r = lround(v);
    if (r < lo) r = lo;
    if (r > 2000000000L) r = 2000000000L;
    return (int)r;
}

void sp_schedule_make(const sp_config *c, sp_schedule *s) {
    s->refine_start = scaled(c, c->refine.start, 0);
    /* refine.strategy resolved first (sp_config_resolve_strategy); auto counts as adc */
    s->refine_stop = scaled(c, strcmp(c->refine.strategy, "mcmc") ? c->refine.stop : c->refine.mcmc_stop, 0);
    s->refine_every = c->refine.every;
    s->opacity_reset_every = scaled(c, c->refine.opacity_reset_every, 1);
    s->sh_interval = scaled(c, c->trainer.sh_interval, 1);
    s->prune_weight_every = c->refine.prune_weight_every > 0 ? scaled(c, c->refine.prune_weight_every, 1) : 0;
}

int sp_schedule_sh_degree(const sp_schedule *s, const sp_config *c, int step) {
    int d = step / s->sh_interval;
    return d < c->trainer.sh_degree ? d : c->trainer.sh_degree;
}

int sp_schedule_refine_due(const sp_schedule *s, int step) {
    return step > s->refine_start && step < s->refine_stop && step % s->refine_every == 0;
}

int sp_schedule_collect_stats(const sp_schedule *s, int step) { return step < s->refine_stop; }

int sp_schedule_prune_weight_due(const sp_schedule *s, int step) {
    if (step == s->refine_stop) return 1;
    return s->prune_weight_every > 0 && step > s->refine_start && step < s->refine_stop &&
           step % s->prune_weight_every == 0;
}
