/* refine.h — the `refine` stage on host arrays: densification statistics → clone / split /
 * prune, opacity decay or reset, capacity cap (docs/math.md, "refine"). */
#ifndef SPLAT_REF_REFINE_H
#define SPLAT_REF_REFINE_H

#include "backend/backend.h"

/* Densification statistics, one entry per Gaussian. */
typedef struct {
    float *grad_accum;
    int32_t *grad_count;
    float *max_radius;
    int cap;
} sp_refine_stats;

/* -1 with an out-of-memory error (core.h) when the growth fails. */
int sp_refine_stats_reserve(sp_refine_stats *s, int cap);
int sp_refine_stats_reset(sp_refine_stats *s, int n);
void sp_refine_stats_free(sp_refine_stats *s);

/* Applies refine to parameters g and Adam moments m, v (same layout; new Gaussians get zero
 * moments). Statistics are reset for the new count. -1 with an out-of-memory error when the
 * stores cannot grow (then nothing has changed). */
int cpu_refine(sp_gaussians *g, sp_gaussians *m, sp_gaussians *v, sp_refine_stats *st, const sp_refine_args *a,
               sp_refine_result *r);

/* Gaussian i of s set to all zeros (a new Gaussian's Adam moments). */
void cpu_zero_gaussian(sp_gaussians *s, int i);

#endif
