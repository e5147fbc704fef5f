/* threads.c — the calling thread's OpenMP thread count (threads.h), never more than the process
 * can start. */
#include "core/threads.h"

#include <omp.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "core/core.h"

static _Thread_local int tl_threads;
/* What this thread's probes found: teams up to tl_ok threads start; tl_fail (0: none seen) did not. */
static _Thread_local int tl_ok = 1, tl_fail;

/* A probe thread lives until the caller has started them all (it waits on the caller's mutex),
 * so that they exist at the same time, as a team's threads do. */
static void *probe_wait(void *arg) {
    pthread_mutex_lock(arg);
    pthread_mutex_unlock(arg);
    return NULL;
}

/* Starts up to n - 1 threads at once, joins them; returns the number of threads a team could
 * have (those started, plus the caller). */
static int try_team(int n) {
    pthread_t *t = malloc((size_t)n * sizeof *t);
    pthread_mutex_t hold = PTHREAD_MUTEX_INITIALIZER;
    int made = 0;
    if (!t) return 1;
    pthread_mutex_lock(&hold);
    while (made < n - 1 && pthread_create(&t[made], NULL, probe_wait, &hold) == 0) made++;
    pthread_mutex_unlock(&hold);
    for (int i = 0; i < made; i++) pthread_join(t[i], NULL);
    free(t);
    pthread_mutex_destroy(&hold);
    return made + 1;
}

/* libgomp ends the process when it cannot create a team's threads, so a team of n is tried with
 * plain threads first (a limit on processes or memory shows here as an error): the count that
 * started is what the team gets. */
static int startable(int n) {
    if (n <= tl_ok) return n;
    if (tl_fail && n >= tl_fail) return tl_ok;
    int got = try_team(n);
    if (got >= n) {
        tl_ok = n;
        return n;
    }
    /* Short of threads: a joined thread can still count against a limit for a moment after the
     * join, so the smaller team is tried again after a pause before it is trusted. */
    tl_fail = n;
    for (int tries = 0; tries < 20 && got > 1; tries++) {
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL);
        int again = try_team(got);
        if (again >= got) break;
        got = again;
    }
    nanosleep(&(struct timespec){0, 2000000}, NULL);
    if (got > tl_ok) tl_ok = got;
    SP_WARN("only %d of the %d threads asked for could be started (a limit on processes, threads or memory); "
            "parallel work uses %d (backend.threads sets the count)", tl_ok, n, tl_ok);
    return tl_ok;
}

int sp_omp_threads(void) { return startable(tl_threads > 0 ? tl_threads : omp_get_max_threads()); }

int sp_omp_threads_for(int n) { return n > 0 ? startable(n) : sp_omp_threads(); }

int sp_omp_threads_set(int n) {
    int old = tl_threads;
    tl_threads = n > 0 ? n : 0;
    return old;
}
