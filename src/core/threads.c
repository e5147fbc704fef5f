/* threads.c — the calling thread's OpenMP thread count (threads.h). */
#include "core/threads.h"

#include <omp.h>

static _Thread_local int tl_threads;

int sp_omp_threads(void) { return tl_threads > 0 ? tl_threads : omp_get_max_threads(); }

int sp_omp_threads_set(int n) {
    int old = tl_threads;
    tl_threads = n > 0 ? n : 0;
    return old;
}
