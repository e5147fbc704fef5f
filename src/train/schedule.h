/* schedule.h — what the trainer does at each step, as pure functions of the config: the
 * densification window, the SH degree ramp and the opacity-reset spacing (all optionally scaled
 * to the run's length: trainer.schedule_steps). docs/config.md describes the keys. */
#ifndef SPLAT_SCHEDULE_H
#define SPLAT_SCHEDULE_H

#include "train/config.h"

typedef struct {
    /* step schedules after scaling by max_steps / schedule_steps (as written when that is 0) */
    int refine_start, refine_stop, opacity_reset_every, sh_interval;
    int prune_weight_every; /* refine.prune_weight_every scaled; 0: at refine_stop only */
    int refine_every; /* never scaled: each refine averages the statistics of this many views */
} sp_schedule;

void sp_schedule_make(const sp_config *c, sp_schedule *s);
/* Active SH degree of a step: one more every sh_interval steps, up to trainer.sh_degree. */
int sp_schedule_sh_degree(const sp_schedule *s, const sp_config *c, int step);
/* 1 if `step` ends with a densification (after refine_start, every refine_every, before
 * refine_stop), and 1 if steps collect densification statistics. */
int sp_schedule_refine_due(const sp_schedule *s, int step);
int sp_schedule_collect_stats(const sp_schedule *s, int step);
/* 1 if the step prunes by blend weight (when refine.prune_weight is on): at refine_stop, and every
 * prune_weight_every steps strictly between refine_start and refine_stop. */
int sp_schedule_prune_weight_due(const sp_schedule *s, int step);

#endif
