/* test_autothreads.c — the CPU backend's automatic thread count, driven by simulated step times:
 * an idle machine keeps every core at a small cost, a busy one drops to the count that is
 * fastest, a machine that becomes idle again goes back up, a fixed count never changes; and the
 * calling thread's OpenMP count (core/threads.h) is per thread. */
#include "testutil.h"

#include <omp.h>

#include "backend/cpu/autothreads.h"
#include "core/threads.h"

/* Step seconds for n threads: work split over the cores, or, on a busy machine, every extra
 * thread waiting at barriers for descheduled ones (bench/RESULTS.md: 2 threads 4.6x slower). */
static double step_idle(int n) { return 0.1 / n; }
static double step_busy(int n) { return n == 1 ? 0.1 : 0.1 * 4.6 * (n - 1); }

/* Runs `steps` steps; returns the total simulated time, counts steps run at each n in at[]. */
static double simulate(sp_autothreads *a, int steps, double (*cost)(int), int at[17]) {
    double t = 0;
    for (int i = 0; i < steps; i++) {
        int n = sp_autothreads_next(a);
        assert_true(n >= 1 && n <= a->max);
        if (at) at[n]++;
        double s = cost(n);
        t += s;
        sp_autothreads_done(a, s);
    }
    return t;
}

static void test_idle_keeps_all_cores(void **state) {
    (void)state;
    sp_autothreads a;
    sp_autothreads_init(&a, 8, 0);
    int at[17] = {0};
    double t = simulate(&a, 30000, step_idle, at);
    assert_int_equal(a.cur, 8);
    assert_int_equal(a.switches, 0);
    double ideal = 30000 * step_idle(8);
    assert_true(t < ideal * 1.01); /* trials cost under 1 % */
    assert_true(at[4] > 0);        /* it did try */
}

static void test_busy_drops_to_one(void **state) {
    (void)state;
    sp_autothreads a;
    sp_autothreads_init(&a, 2, 0);
    int at[17] = {0};
    double t = simulate(&a, 2000, step_busy, at);
    assert_int_equal(a.cur, 1);
    assert_true(at[1] > 1900);
    assert_true(t < 2000 * step_busy(1) * 1.2); /* close to the best count, far from 4.6x */
}

static void test_recovers_when_idle_again(void **state) {
    (void)state;
    sp_autothreads a;
    sp_autothreads_init(&a, 4, 0);
    simulate(&a, 500, step_busy, NULL);
    assert_int_equal(a.cur, 1);
    simulate(&a, 5000, step_idle, NULL);
    assert_int_equal(a.cur, 4);
}

static void test_fixed_never_changes(void **state) {
    (void)state;
    sp_autothreads a;
    sp_autothreads_init(&a, 3, 1);
    int at[17] = {0};
    simulate(&a, 3000, step_busy, at);
    assert_int_equal(at[3], 3000);
    sp_autothreads_init(&a, 1, 0);
    memset(at, 0, sizeof at);
    simulate(&a, 300, step_idle, at);
    assert_int_equal(at[1], 300);
}

/* The count set on one thread is that thread's only, and num_threads() regions honour it. */
static void test_thread_local_count(void **state) {
    (void)state;
    int def = omp_get_max_threads();
    assert_int_equal(sp_omp_threads(), def);
    int old = sp_omp_threads_set(3);
    assert_int_equal(old, 0);
    int team = 0, other = -1;
#pragma omp parallel num_threads(sp_omp_threads())
    {
#pragma omp single
        team = omp_get_num_threads();
    }
    assert_int_equal(team, 3);
#pragma omp parallel num_threads(2)
    {
        if (omp_get_thread_num() == 1) other = sp_omp_threads(); /* another thread: not set there */
    }
    assert_int_equal(other, def);
    assert_int_equal(sp_omp_threads_set(old), 3);
    assert_int_equal(sp_omp_threads(), def);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_idle_keeps_all_cores),
        cmocka_unit_test(test_busy_drops_to_one),
        cmocka_unit_test(test_recovers_when_idle_again),
        cmocka_unit_test(test_fixed_never_changes),
        cmocka_unit_test(test_thread_local_count),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
