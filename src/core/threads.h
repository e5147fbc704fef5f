/* threads.h — how many OpenMP threads the parallel regions started by the calling thread use.
 * A backend sets it around its work (the CPU backend adapts it to how busy the machine is) and
 * every hot `omp parallel` carries num_threads(sp_omp_threads()). The value belongs to the
 * calling thread only (thread-local): nothing process-wide changes, and two trainings on two
 * threads do not see each other's counts. */
#ifndef SPLAT_THREADS_H
#define SPLAT_THREADS_H

/* The count set on this thread, or OpenMP's default (omp_get_max_threads()) when none is. */
int sp_omp_threads(void);
/* Sets this thread's count (0 = OpenMP's default); returns the previous setting. */
int sp_omp_threads_set(int n);

#endif
