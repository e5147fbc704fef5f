/* autothreads.h — the CPU backend's thread count when backend.threads = 0. It starts with every
 * core and, now and then, times a few steps with half (or twice) the threads, keeping whichever
 * is clearly faster. On a busy machine a team larger than the free cores waits at every barrier
 * for a descheduled thread (bench/RESULTS.md: 4.7x slower than one thread); this settles on the
 * count the machine actually gives. Results never depend on the count (stages.h), so switching
 * is safe. The trials cost well under 1 % of the steps on an idle machine. */
#ifndef SPLAT_AUTOTHREADS_H
#define SPLAT_AUTOTHREADS_H

typedef struct {
    int max;      /* upper bound: the cores (OpenMP's default) or backend.threads */
    int fixed;    /* backend.threads was set: always max */
    int cur;      /* count in use */
    int trial;    /* count being timed */
    int state;    /* waiting, timing cur, timing trial */
    int left;     /* steps left in the state */
    int interval; /* steps between trials; doubles after each trial that loses */
    int window;   /* steps timed on each side of a trial */
    int up;       /* next trial goes up (else down) */
    double base_s, trial_s;
    int switches;
} sp_autothreads;

void sp_autothreads_init(sp_autothreads *a, int max, int fixed);
/* The count for the next step. */
int sp_autothreads_next(const sp_autothreads *a);
/* Reports that step's wall time. Returns 0, or after a trial 1 when its count was kept (cur
 * changed) and 2 when it was not; base_s and trial_s then hold the two windows' times. */
int sp_autothreads_done(sp_autothreads *a, double seconds);

#endif
