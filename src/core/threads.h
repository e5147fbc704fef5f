/* threads.h — how many OpenMP threads the parallel regions started by the calling thread use.
 * A backend sets it around its work (the CPU backend adapts it to how busy the machine is) and
 * every hot `omp parallel` carries num_threads(sp_omp_threads()). The value belongs to the
 * calling thread only (thread-local): nothing process-wide changes, and two trainings on two
 * threads do not see each other's counts. */
#ifndef SPLAT_THREADS_H
#define SPLAT_THREADS_H

/* The count set on this thread, or OpenMP's default (omp_get_max_threads()) when none is; never
 * more threads than the process could start when this thread last tried (OpenMP would end the
 * process on a failed thread creation: the count is tried with plain threads first, and a
 * shortfall is a warning and a smaller count). Every `omp parallel` in the library takes it. */
int sp_omp_threads(void);
/* n threads (n <= 0: sp_omp_threads()), as many of them as can be started. */
int sp_omp_threads_for(int n);
/* Sets this thread's count (0 = OpenMP's default); returns the previous setting. */
int sp_omp_threads_set(int n);

#endif
