/* viewsched.c — the per-epoch view permutation of the training schedule (viewsched.h). */
#include "train/viewsched.h"

#include <stdlib.h>

#include "core/core.h"

void sp_view_sched_init(sp_view_sched *s, uint64_t seed, int n) {
    s->seed = seed;
    s->n = n;
    s->epoch = -1;
    s->perm = SP_NEW(int, n > 0 ? n : 1);
}

int sp_view_sched_at(sp_view_sched *s, int step) {
    int n = s->n, epoch = (step - 1) / n;
    if (epoch != s->epoch) {
        sp_rng r;
        sp_rng_seed(&r, s->seed, 0x5e1ec7ull + (uint64_t)epoch);
        for (int i = 0; i < n; i++) s->perm[i] = i;
        for (int i = n - 1; i > 0; i--) {
            int j = (int)(sp_rng_u32(&r) % (uint32_t)(i + 1));
            int t = s->perm[i];
            s->perm[i] = s->perm[j];
            s->perm[j] = t;
        }
        s->epoch = epoch;
    }
    return s->perm[(step - 1) % n];
}

void sp_view_sched_free(sp_view_sched *s) {
    free(s->perm);
    s->perm = NULL;
}
