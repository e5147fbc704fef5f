/* test_schedule.c — the antialias phase of a run (trainer.antialias_until): which steps train
 * with the filter (off by default, the boundary step, render.antialias = true, runs too short to
 * have a filtered step, the last step never filtered), the config checks of the key, and
 * sp_backend_set_antialias switching a backend's renders in the middle of its life. The other
 * schedules are tested in test_progressive.c. */
#include "testutil.h"

#include <math.h>

#include "backend/backend.h"
#include "parity.h"
#include "train/config.h"
#include "train/schedule.h"

/* Number of steps 1 .. max_steps that train with the filter. */
static int filtered_steps(const sp_config *c) {
    int n = 0;
    for (int step = 1; step <= c->trainer.max_steps; step++) n += sp_schedule_antialias(c, step);
    return n;
}

static void test_off_by_default(void **state) {
    (void)state;
    sp_config c;
    sp_config_defaults(&c);
    assert_true(c.trainer.antialias_until == 0.0);
    assert_false(c.render.antialias);
    c.trainer.max_steps = 1000;
    assert_int_equal(sp_schedule_antialias_steps(&c), 0);
    assert_int_equal(filtered_steps(&c), 0);
    assert_int_equal(sp_schedule_antialias(&c, 0), 0);
    assert_int_equal(sp_schedule_antialias(&c, 1), 0);
}

/* The first round(f * max_steps) steps train with the filter, every later one without. */
static void test_boundary(void **state) {
    (void)state;
    sp_config c;
    sp_config_defaults(&c);
    c.trainer.max_steps = 1000;
    c.trainer.antialias_until = 0.5;
    assert_int_equal(sp_schedule_antialias_steps(&c), 500);
    assert_int_equal(filtered_steps(&c), 500);
    assert_int_equal(sp_schedule_antialias(&c, 1), 1);
    assert_int_equal(sp_schedule_antialias(&c, 500), 1);
    assert_int_equal(sp_schedule_antialias(&c, 501), 0);
    assert_int_equal(sp_schedule_antialias(&c, 1000), 0);
    assert_int_equal(sp_schedule_antialias(&c, 0), 0); /* no step 0 */
    /* one phase change: on, then off for good (a resume at any step lands in the same phase) */
    int changes = 0;
    for (int step = 2; step <= 1000; step++)
        changes += sp_schedule_antialias(&c, step) != sp_schedule_antialias(&c, step - 1);
    assert_int_equal(changes, 1);

    c.trainer.max_steps = 30000; /* rounding: 0.1234 * 30000 = 3702 */
    c.trainer.antialias_until = 0.1234;
    assert_int_equal(sp_schedule_antialias_steps(&c), 3702);
    assert_int_equal(sp_schedule_antialias(&c, 3702), 1);
    assert_int_equal(sp_schedule_antialias(&c, 3703), 0);
    c.trainer.max_steps = 7; /* 0.5 * 7 = 3.5 rounds up */
    c.trainer.antialias_until = 0.5;
    assert_int_equal(sp_schedule_antialias_steps(&c), 4);
    assert_int_equal(filtered_steps(&c), 4);
}

/* render.antialias = true: every step is filtered, whatever antialias_until says. */
static void test_render_antialias_on(void **state) {
    (void)state;
    sp_config c;
    sp_config_defaults(&c);
    c.trainer.max_steps = 600;
    c.render.antialias = true;
    const double untils[] = {0.0, 0.3, 0.999};
    for (size_t k = 0; k < sizeof untils / sizeof *untils; k++) {
        c.trainer.antialias_until = untils[k];
        assert_int_equal(sp_schedule_antialias_steps(&c), 600);
        assert_int_equal(filtered_steps(&c), 600);
        assert_int_equal(sp_schedule_antialias(&c, 600), 1);
    }
}

/* Short runs: a fraction that rounds to no step is off, and the last step always trains without
 * the filter (the model the run writes is a standard one). */
static void test_tiny_runs(void **state) {
    (void)state;
    sp_config c;
    sp_config_defaults(&c);
    c.trainer.max_steps = 1;
    c.trainer.antialias_until = 0.5; /* rounds to 1 = max_steps: the last step stays unfiltered */
    assert_int_equal(sp_schedule_antialias_steps(&c), 0);
    assert_int_equal(sp_schedule_antialias(&c, 1), 0);
    c.trainer.antialias_until = 0.999;
    assert_int_equal(filtered_steps(&c), 0);

    c.trainer.max_steps = 2;
    c.trainer.antialias_until = 0.5;
    assert_int_equal(sp_schedule_antialias(&c, 1), 1);
    assert_int_equal(sp_schedule_antialias(&c, 2), 0);

    c.trainer.max_steps = 3;
    c.trainer.antialias_until = 0.99; /* round(2.97) = 3, kept below the last step */
    assert_int_equal(sp_schedule_antialias_steps(&c), 2);
    assert_int_equal(sp_schedule_antialias(&c, 3), 0);

    c.trainer.max_steps = 10;
    c.trainer.antialias_until = 0.04; /* 0.4 steps: none */
    assert_int_equal(sp_schedule_antialias_steps(&c), 0);
    assert_int_equal(filtered_steps(&c), 0);

    for (int max = 1; max <= 50; max++) { /* never the last step, whatever the fraction */
        c.trainer.max_steps = max;
        for (double f = 0.0; f < 1.0; f += 0.05) {
            c.trainer.antialias_until = f;
            assert_int_equal(sp_schedule_antialias(&c, max), 0);
            assert_true(sp_schedule_antialias_steps(&c) < max);
        }
    }
}

/* The key takes [0, 1): 1 would leave no step to adapt the model to the standard renderer. */
static void test_config_key(void **state) {
    (void)state;
    sp_config c;
    sp_config_defaults(&c);
    sp_problems p = {0};
    assert_int_equal(sp_config_set(&c, "trainer.antialias_until=0.6", &p), 0);
    assert_true(c.trainer.antialias_until == 0.6);
    assert_int_equal(sp_config_set(&c, "trainer.antialias_until=0", &p), 0);
    assert_true(c.trainer.antialias_until == 0.0);
    assert_int_equal(p.n, 0);
    assert_int_equal(sp_config_set(&c, "trainer.antialias_until=1", &p), -1);
    assert_int_equal(sp_config_set(&c, "trainer.antialias_until=-0.1", &p), -1);
    assert_true(c.trainer.antialias_until == 0.0); /* unchanged by the rejected values */
    char *j = tu_joined(&p);
    tu_assert_contains(j, "--set trainer.antialias_until");
    tu_assert_contains(j, "in [0, 1)");
    free(j);
    sp_problems_free(&p);
    /* config.toml keeps it */
    assert_int_equal(sp_config_set(&c, "trainer.antialias_until=0.25", &p), 0);
    char *toml = sp_config_to_toml(&c);
    tu_assert_contains(toml, "antialias_until = 0.25");
    free(toml);
}

/* sp_backend_set_antialias: the cpu backend renders with the filter after it is switched on, and
 * exactly as before once it is switched off again. */
static void test_backend_switch(void **state) {
    (void)state;
    sp_rng r = pt_rng(91);
    pt_scene s;
    pt_scene_make(&s, &r, 300, 40, 32, 1);
    sp_backend_config bc = {.threads = 2};
    sp_backend *b = sp_backend_create("cpu", &bc);
    assert_non_null(b);
    sp_gaussians g;
    pt_scene_store(&s, &g);
    assert_int_equal(b->ops->set_gaussians(b, &g, NULL, NULL), 0);
    size_t floats = (size_t)s.cam.width * s.cam.height * 3;
    float *plain = sp_malloc(floats * sizeof(float)), *aa = sp_malloc(floats * sizeof(float));
    float *again = sp_malloc(floats * sizeof(float));
    const float bg[3] = {1.0f, 1.0f, 1.0f};
    assert_int_equal(b->ops->render(b, &s.cam, 1, bg, plain), 0);
    assert_int_equal(sp_backend_set_antialias(b, 1), 0);
    assert_int_equal(b->cfg.antialias, 1);
    assert_int_equal(b->ops->render(b, &s.cam, 1, bg, aa), 0);
    assert_int_equal(sp_backend_set_antialias(b, 0), 0);
    assert_int_equal(b->cfg.antialias, 0);
    assert_int_equal(b->ops->render(b, &s.cam, 1, bg, again), 0);
    double diff = 0;
    for (size_t i = 0; i < floats; i++) diff += fabs((double)aa[i] - plain[i]);
    printf("INFO mean |filtered - plain| = %.4g per channel\n", diff / (double)floats);
    assert_true(diff / (double)floats > 1e-4); /* the filter changes the image */
    assert_memory_equal(again, plain, floats * sizeof(float));
    free(plain);
    free(aa);
    free(again);
    sp_gaussians_free(&g);
    b->ops->destroy(b);
    pt_scene_free(&s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_off_by_default),
        cmocka_unit_test(test_boundary),
        cmocka_unit_test(test_render_antialias_on),
        cmocka_unit_test(test_tiny_runs),
        cmocka_unit_test(test_config_key),
        cmocka_unit_test(test_backend_switch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
