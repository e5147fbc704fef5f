/* viewsched.c — the per-epoch view permutation of the training schedule (viewsched.h). */
#include "train/viewsched.h"

#include <stdlib.h>

#include "core/core.h"

void sp_view_sched_init(sp_view_sched *s, uint64_t seed, int n) {
    s->seed = seed;
    s->n = n;
    s->epoch = -1;
    s->perm = SP_NEW(int, n > 0 ? n : 1);
    s->inv_epoch = -1;
    s->inv = NULL;
}

/* The permutation of epoch (0-based) into perm[0..n). */
static void epoch_perm(uint64_t seed, int n, int epoch, int *perm) {
    sp_rng r;
    sp_rng_seed(&r, seed, 0x5e1ec7ull + (uint64_t)epoch);
    for (int i = 0; i < n; i++) perm[i] = i;
    for (int i = n - 1; i > 0; i--) {
        int j = (int)(sp_rng_u32(&r) % (uint32_t)(i + 1));
        int t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
}

int sp_view_sched_at(sp_view_sched *s, int step) {
    int n = s->n, epoch = (step - 1) / n;
    if (epoch != s->epoch) {
        epoch_perm(s->seed, n, epoch, s->perm);
        s->epoch = epoch;
    }
    return s->perm[(step - 1) % n];
}

int sp_view_sched_next(sp_view_sched *s, int v, int after) {
    int n = s->n, epoch = after / n; /* the epoch of step after + 1 */
    if (!s->inv) s->inv = SP_NEW(int, 2 * (size_t)(n > 0 ? n : 1));
    if (epoch != s->inv_epoch) {
        int *perm = SP_NEW(int, n > 0 ? n : 1);
        for (int e = 0; e < 2; e++) {
            epoch_perm(s->seed, n, epoch + e, perm);
            for (int i = 0; i < n; i++) s->inv[e * (size_t)n + perm[i]] = i;
        }
        free(perm);
        s->inv_epoch = epoch;
    }
    int first = epoch * n + 1; /* step of the epoch's position 0 */
    int here = first + s->inv[v];
    return here > after ? here : first + n + s->inv[(size_t)n + v];
}

void sp_view_sched_free(sp_view_sched *s) {
    free(s->perm);
    free(s->inv);
    s->perm = NULL;
    s->inv = NULL;
}
