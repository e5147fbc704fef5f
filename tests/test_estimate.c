/* test_estimate.c — the CLI's run-time estimate (src/cli/estimate.c, included here: the CLI is not
 * part of libsplat): the Gaussian count it expects follows the trainer's own refine rules
 * (sp_schedule_refine_due, sp_mcmc_add_count), the remaining time sums the steps at those counts,
 * a CPU run of the 30k default is hours and is told the shorter recipe, durations read well. */
#include "testutil.h"

#include <math.h>

#include "cli/estimate.c"
#include "train/mcmc.h"
#include "train/schedule.h"

/* lego 200x200 with the 30k-step recipe on the 2-core machine: mcmc from 100k random Gaussians to 280k. */
static splat_plan lego_plan(void) {
    splat_plan p;
    memset(&p, 0, sizeof p);
    p.max_steps = 30000;
    snprintf(p.backend, sizeof p.backend, "cpu");
    p.threads = 2;
    snprintf(p.strategy, sizeof p.strategy, "mcmc");
    p.initial_gaussians = 100000;
    p.max_gaussians = 280000;
    p.grow = 0.05;
    p.refine_start = 500;
    p.refine_stop = 25000;
    p.refine_every = 100;
    p.train_views = 100;
    p.view_pixels = 200.0 * 200.0;
    return p;
}

/* The trainer's rules, step by step: the count after every step, and the sum of step costs. */
static double brute_seconds(const splat_plan *p, int from, int n, double fixed, double per_g, int *n_end) {
    sp_schedule sc;
    memset(&sc, 0, sizeof sc);
    sc.refine_start = p->refine_start;
    sc.refine_stop = p->refine_stop;
    sc.refine_every = p->refine_every;
    double total = 0;
    for (int s = from + 1; s <= p->max_steps; s++) {
        total += fixed + per_g * n; /* step s runs at the count before its refine */
        if (sp_schedule_refine_due(&sc, s)) n += sp_mcmc_add_count(n, p->grow, p->max_gaussians);
    }
    if (n_end) *n_end = n;
    return total;
}

static void test_mcmc_count_follows_the_trainer(void **state) {
    (void)state;
    splat_plan p = lego_plan();
    int n_end = 0;
    brute_seconds(&p, 0, p.initial_gaussians, 0, 0, &n_end);
    assert_int_equal(n_end, 280000);
    assert_true(cli_est_count(&p, 0, 100000, 0, 500) == 100000); /* the first refine is after refine.start */
    assert_true(cli_est_count(&p, 0, 100000, 0, 600) == 105000);
    assert_true(cli_est_count(&p, 0, 100000, 0, 30000) == 280000);
    for (int step = 0; step <= 30000; step += 700) { /* every step, against the trainer's rules */
        splat_plan q = p;
        q.max_steps = step;
        int n = 0;
        brute_seconds(&q, 0, 100000, 0, 0, &n);
        assert_true(cli_est_count(&p, 0, 100000, 0, step) == n);
    }
    int end = cli_est_growth_end(&p, 0, 100000, 0);
    assert_true(cli_est_count(&p, 0, 100000, 0, end) == 280000);
    assert_true(cli_est_count(&p, 0, 100000, 0, end - 1) < 280000);
    assert_true(end > 2000 && end < 3000);
}

static void test_seconds_sum_the_steps(void **state) {
    (void)state;
    splat_plan p = lego_plan();
    /* a constant cost: the steps left */
    assert_true(fabs(cli_est_seconds(&p, 1234, 100000, 0, 1.0, 0.0) - (30000 - 1234)) < 1e-6);
    /* growing: the trainer's counts, summed step by step, from several places in the run */
    int froms[] = {0, 20, 550, 600, 2500, 24999, 25000, 29990};
    for (size_t i = 0; i < sizeof froms / sizeof *froms; i++) {
        int from = froms[i], n0 = (int)cli_est_count(&p, 0, 100000, 0, from);
        double want = brute_seconds(&p, from, n0, 0.01, 1e-6, NULL);
        double got = cli_est_seconds(&p, from, n0, 0, 0.01, 1e-6);
        assert_true(fabs(got - want) <= 1e-9 * want + 1e-9);
    }
    /* at the start, the growth makes the rest of the run much longer than the first speed says */
    double first_speed = 30000 * (0.01 + 1e-6 * 100000);
    assert_true(cli_est_seconds(&p, 0, 100000, 0, 0.01, 1e-6) > 2.0 * first_speed);
    /* nothing left */
    assert_true(cli_est_seconds(&p, 30000, 280000, 0, 1.0, 1.0) == 0.0);
}

static void test_adc_extrapolates_until_densification_stops(void **state) {
    (void)state;
    splat_plan p = lego_plan();
    snprintf(p.strategy, sizeof p.strategy, "adc");
    p.grow = 0;
    p.max_gaussians = 3000000;
    p.refine_start = 200;
    p.refine_stop = 1000;
    p.max_steps = 1500;
    /* 10 more Gaussians per step: 1000 per refine interval, refines at 300 .. 900 */
    assert_true(cli_est_count(&p, 0, 10000, 10.0, 1500) == 17000);
    assert_true(cli_est_count(&p, 950, 20000, 10.0, 1500) == 20000); /* no refine left */
    assert_true(cli_est_count(&p, 0, 10000, 0.0, 1500) == 10000);
    p.max_gaussians = 12500; /* refine.capacity caps it */
    assert_true(cli_est_count(&p, 0, 10000, 10.0, 1500) == 12500);
}

static void test_cpu_estimate_and_recipe(void **state) {
    (void)state;
    splat_plan p = lego_plan();
    double s = cli_est_run_seconds(&p);
    assert_true(s > 3600 && s < 4 * 3600); /* hours, as measured on the 2-core machine */
    const char *r = cli_est_short_recipe(&p);
    assert_non_null(r);
    tu_assert_contains(r, "trainer.schedule_steps=20000");
    tu_assert_contains(r, "trainer.max_steps=");
    p.threads = 1;
    assert_true(cli_est_run_seconds(&p) > s); /* fewer threads, longer */
    /* the fixed share falls as the count grows; a GPU has no model */
    assert_true(cli_est_fixed_share(&p, 1000) > cli_est_fixed_share(&p, 100000));
    assert_true(cli_est_fixed_share(&p, 100000) > 0 && cli_est_fixed_share(&p, 100000) < 1);
    p.max_steps = 7000;
    assert_null(cli_est_short_recipe(&p));
    p.max_steps = 30000;
    snprintf(p.backend, sizeof p.backend, "cuda");
    assert_null(cli_est_short_recipe(&p));
    assert_true(isnan(cli_est_run_seconds(&p)));
    assert_true(cli_est_fixed_share(&p, 100000) == 0.5);
}

static void test_durations(void **state) {
    (void)state;
    char b[32];
    cli_fmt_duration(3725, b, sizeof b);
    assert_string_equal(b, "1h02m");
    cli_fmt_duration(65, b, sizeof b);
    assert_string_equal(b, "1m05s");
    cli_fmt_duration(4.6, b, sizeof b);
    assert_string_equal(b, "5s");
    cli_fmt_duration(NAN, b, sizeof b);
    assert_string_equal(b, "-");
    cli_fmt_duration(-1, b, sizeof b);
    assert_string_equal(b, "-");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mcmc_count_follows_the_trainer),
        cmocka_unit_test(test_seconds_sum_the_steps),
        cmocka_unit_test(test_adc_extrapolates_until_densification_stops),
        cmocka_unit_test(test_cpu_estimate_and_recipe),
        cmocka_unit_test(test_durations),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
