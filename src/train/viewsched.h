/* viewsched.h — which training view each step uses: a fresh permutation of the views every epoch,
 * drawn from (seed, epoch), so a resumed run continues the same sequence and the sequence is known
 * ahead (the streaming view cache decodes along it, scene/viewcache.h, and the device image cache
 * keeps the views used soonest, train/stream.c). */
#ifndef SPLAT_VIEWSCHED_H
#define SPLAT_VIEWSCHED_H

#include <stdint.h>

typedef struct {
    uint64_t seed;
    int n;     /* training views */
    int epoch; /* epoch of perm; -1: none yet */
    int *perm; /* [n] */
    /* sp_view_sched_next: where each view stands in epochs inv_epoch and inv_epoch + 1 */
    int inv_epoch; /* -1: none yet */
    int *inv;      /* [2][n], NULL until first needed */
} sp_view_sched;

void sp_view_sched_init(sp_view_sched *s, uint64_t seed, int n);
/* The view of step (1-based). */
int sp_view_sched_at(sp_view_sched *s, int step);
/* The first step after `after` (>= 0) that uses view v (0 <= v < n): always within the epoch of
 * step after + 1 or the next one, since every epoch uses every view. */
int sp_view_sched_next(sp_view_sched *s, int v, int after);
void sp_view_sched_free(sp_view_sched *s);

#endif
