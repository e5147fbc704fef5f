/* autothreads.c — trial-and-keep choice of the CPU backend's thread count (autothreads.h). */
#include "backend/cpu/autothreads.h"

enum { WAITING, TIMING_CUR, TIMING_TRIAL };
enum {
    WARMUP = 5,        /* steps before the first trial (first steps allocate and fault pages) */
    WINDOW = 8,        /* steps timed per side */
    FIRST_GAP = 100,   /* steps between trials after a change */
    MAX_GAP = 1600     /* longest gap between trials */
};
#define KEEP_RATIO 0.8 /* the trial must take under 80 % of the time to be kept */

void sp_autothreads_init(sp_autothreads *a, int max, int fixed) {
    *a = (sp_autothreads){0};
    a->max = max > 0 ? max : 1;
    a->fixed = fixed;
    a->cur = a->max;
    a->state = WAITING;
    a->left = WARMUP;
    a->interval = FIRST_GAP;
    a->window = WINDOW;
}

int sp_autothreads_next(const sp_autothreads *a) { return a->state == TIMING_TRIAL ? a->trial : a->cur; }

static int pick_trial(sp_autothreads *a) {
    int down = a->cur > 1 ? a->cur / 2 : 0;
    int up = a->cur < a->max ? (a->cur * 2 < a->max ? a->cur * 2 : a->max) : 0;
    int t = a->up ? (up ? up : down) : (down ? down : up);
    a->up = !a->up;
    return t;
}

int sp_autothreads_done(sp_autothreads *a, double seconds) {
    if (a->fixed || a->max == 1) return 0;
    if (--a->left > 0) {
        if (a->state == TIMING_CUR) a->base_s += seconds;
        if (a->state == TIMING_TRIAL) a->trial_s += seconds;
        return 0;
    }
    int changed = 0;
    switch (a->state) {
    case WAITING:
        a->state = TIMING_CUR;
        a->base_s = 0;
        a->left = a->window;
        break;
    case TIMING_CUR:
        a->base_s += seconds;
        a->trial = pick_trial(a);
        a->state = TIMING_TRIAL;
        a->trial_s = 0;
        a->left = a->window;
        break;
    case TIMING_TRIAL:
        a->trial_s += seconds;
        if (a->trial_s < KEEP_RATIO * a->base_s) {
            a->cur = a->trial;
            a->interval = FIRST_GAP;
            a->switches++;
            changed = 1;
        } else {
            if (a->interval < MAX_GAP) a->interval *= 2;
            changed = 2;
        }
        a->state = WAITING;
        a->left = a->interval;
        break;
    }
    return changed;
}
