/* test_batch.c — batches of views: the accumulate-only step of the cpu backend (a batch of two
 * views sums their gradients, through the backend interface), the view schedule over ranks and
 * devices (every view once per epoch, the same sequence on every rank), views-seen events, the
 * Adam step count and learning-rate rule, config validation of trainer.batch and
 * backend.devices, and sp_backend_render_many (the evaluation's batch of renders). */
#include "testutil.h"

#include <math.h>

#include "backend/backend.h"
#include "parity.h"
#include "train/batch.h"
#include "train/viewsched.h"
#include "train/config.h"

/* Two views of one scene (the second camera shifted), random RGB pixels. */
static void make_views(pt_scene *s, sp_view v[2], sp_rng *r) {
    size_t np = (size_t)s->cam.width * s->cam.height;
    for (int k = 0; k < 2; k++) {
        memset(&v[k], 0, sizeof v[k]);
        v[k].name = k ? "b" : "a";
        v[k].cam = s->cam;
        v[k].cam.t[0] += 0.05f * (float)k;
        v[k].channels = 3;
        v[k].pixels = sp_malloc(np * 3);
        for (size_t i = 0; i < np * 3; i++) v[k].pixels[i] = (uint8_t)(sp_rng_u32(r) & 255);
    }
}

static sp_step_args step_args(int view, int accumulate) {
    sp_step_args a;
    memset(&a, 0, sizeof a);
    a.view = view;
    a.sh_degree = 1;
    a.bg[0] = a.bg[1] = a.bg[2] = 1.0f;
    a.ssim_weight = 0.2f;
    a.adam_step = 1;
    a.beta1 = 0.9f, a.beta2 = 0.999f, a.eps = 1e-15f;
    a.lr = (sp_lrs){1e-3f, 1e-3f, 1e-3f, 1e-3f, 1e-3f, 1e-3f};
    a.accumulate = accumulate;
    return a;
}

/* Runs the given steps from the scene on a fresh cpu backend; returns the first Adam moment m,
 * which after one update from zero moments is (1 - beta1) x the summed gradient. */
static void run_steps(pt_scene *s, sp_view *v, const sp_step_args *steps, int n, sp_gaussians *g_out,
                      sp_gaussians *m_out) {
    sp_backend_config bc = {.threads = 2};
    sp_backend *b = sp_backend_create("cpu", &bc);
    assert_non_null(b);
    sp_gaussians g;
    pt_scene_store(s, &g);
    assert_int_equal(b->ops->upload_views(b, v, 2, SP_ALPHA_STRAIGHT), 0);
    assert_int_equal(b->ops->set_gaussians(b, &g, NULL, NULL), 0);
    for (int i = 0; i < n; i++) assert_int_equal(b->ops->train_step(b, &steps[i]), 0);
    memset(g_out, 0, sizeof *g_out);
    memset(m_out, 0, sizeof *m_out);
    sp_gaussians vv = {0};
    assert_int_equal(b->ops->get_gaussians(b, g_out, m_out, &vv), 0);
    sp_gaussians_free(&vv);
    sp_gaussians_free(&g);
    b->ops->destroy(b);
}

static void test_accumulate_sums_gradients(void **state) {
    (void)state;
    sp_rng r = pt_rng(1313);
    pt_scene s;
    pt_scene_make(&s, &r, 600, 48, 40, 1);
    sp_view v[2];
    make_views(&s, v, &r);
    sp_step_args one0 = step_args(0, 0), one1 = step_args(1, 0);
    sp_step_args pair[2] = {step_args(0, 1), step_args(1, 0)};
    sp_gaussians g0, m0, g1, m1, gb, mb, ga, ma;
    run_steps(&s, v, &one0, 1, &g0, &m0);
    run_steps(&s, v, &one1, 1, &g1, &m1);
    run_steps(&s, v, pair, 2, &gb, &mb);
    /* m of the batch = m of view 0 + m of view 1, element by element */
    const float *a0[5] = {m0.means, m0.log_scales, m0.quats, m0.opacity_logits, m0.sh};
    const float *a1[5] = {m1.means, m1.log_scales, m1.quats, m1.opacity_logits, m1.sh};
    const float *ab[5] = {mb.means, mb.log_scales, mb.quats, mb.opacity_logits, mb.sh};
    size_t cnt[5] = {3, 3, 4, 1, (size_t)3 * s.K};
    double worst = 0, scale = 0;
    size_t nonzero = 0;
    for (int k = 0; k < 5; k++)
        for (size_t i = 0; i < cnt[k] * (size_t)s.n; i++) {
            double want = (double)a0[k][i] + a1[k][i];
            worst = fmax(worst, fabs(ab[k][i] - want));
            scale = fmax(scale, fabs(want));
            nonzero += a0[k][i] != 0.0f && a1[k][i] != 0.0f;
        }
    printf("INFO batch of 2: %zu moments with both views non-zero, max |m_batch - (m_0 + m_1)| = %.3g of %.3g\n",
           nonzero, worst, scale);
    assert_true(nonzero > 100); /* the two views share Gaussians: the sum is a real test */
    assert_true(scale > 0);
    assert_true(worst <= 1e-5 * scale);
    /* the batch moved the parameters once, unlike either single view */
    assert_true(memcmp(gb.means, g0.means, (size_t)s.n * 12) != 0);
    /* an accumulate-only step leaves the parameters as they were */
    sp_step_args acc = step_args(0, 1);
    run_steps(&s, v, &acc, 1, &ga, &ma);
    assert_memory_equal(ga.means, s.means, (size_t)s.n * 12);
    assert_memory_equal(ga.sh, s.sh, (size_t)s.n * 12 * s.K);
    for (size_t i = 0; i < (size_t)s.n * 3; i++) assert_true(ma.means[i] == 0.0f);
    sp_gaussians *all[] = {&g0, &m0, &g1, &m1, &gb, &mb, &ga, &ma};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) sp_gaussians_free(all[i]);
    free(v[0].pixels);
    free(v[1].pixels);
    pt_scene_free(&s);
}

/* A render_many that records its call and renders in reverse order through render. */
static int g_many_calls;
static int reverse_many(sp_backend *b, const sp_camera *const *cams, int count, int sh_degree, const float bg[3],
                        float *const *rgb) {
    g_many_calls++;
    for (int i = count - 1; i >= 0; i--)
        if (b->ops->render(b, cams[i], sh_degree, bg, rgb[i])) return -1;
    return 0;
}

/* sp_backend_render_many (the evaluation's renders): the images of render, camera by camera, both
 * through the fallback (no render_many) and through a backend's own render_many. */
static void test_render_many(void **state) {
    (void)state;
    sp_rng r = pt_rng(77);
    pt_scene s;
    pt_scene_make(&s, &r, 400, 40, 32, 1);
    sp_backend_config bc = {.threads = 2};
    sp_backend *b = sp_backend_create("cpu", &bc);
    assert_non_null(b);
    sp_gaussians g;
    pt_scene_store(&s, &g);
    assert_int_equal(b->ops->set_gaussians(b, &g, NULL, NULL), 0);
    enum { NC = 3 };
    sp_camera cam[NC];
    const sp_camera *cams[NC];
    float *one[NC], *many[NC], *mine[NC];
    size_t floats = (size_t)s.cam.width * s.cam.height * 3;
    const float bg[3] = {1.0f, 1.0f, 1.0f};
    for (int i = 0; i < NC; i++) {
        cam[i] = s.cam;
        cam[i].t[0] += 0.07f * (float)i;
        cams[i] = &cam[i];
        one[i] = sp_malloc(floats * sizeof(float));
        many[i] = sp_malloc(floats * sizeof(float));
        mine[i] = sp_malloc(floats * sizeof(float));
        assert_int_equal(b->ops->render(b, &cam[i], 1, bg, one[i]), 0);
    }
    assert_null(b->ops->render_many); /* the cpu backend renders one by one */
    assert_int_equal(sp_backend_render_many(b, cams, NC, 1, bg, many), 0);
    sp_backend_ops ops = *b->ops;
    const sp_backend_ops *orig = b->ops;
    ops.render_many = reverse_many;
    b->ops = &ops;
    g_many_calls = 0;
    assert_int_equal(sp_backend_render_many(b, cams, NC, 1, bg, mine), 0);
    assert_int_equal(g_many_calls, 1);
    b->ops = orig;
    for (int i = 0; i < NC; i++) {
        assert_memory_equal(many[i], one[i], floats * sizeof(float));
        assert_memory_equal(mine[i], one[i], floats * sizeof(float));
    }
    assert_true(memcmp(one[0], one[1], floats * sizeof(float)) != 0); /* the cameras see different images */
    for (int i = 0; i < NC; i++) free(one[i]), free(many[i]), free(mine[i]);
    sp_gaussians_free(&g);
    b->ops->destroy(b);
    pt_scene_free(&s);
}

/* Every view once per epoch over all ranks and devices; the global sequence is the one of batch 1. */
static void test_view_schedule_over_ranks(void **state) {
    (void)state;
    const int nviews = 7, steps = 3 * nviews;
    int ref[3 * 7];
    {
        sp_view_sched vs;
        sp_view_sched_init(&vs, 42, nviews);
        for (int s = 1; s <= steps; s++) ref[s - 1] = sp_view_sched_at(&vs, s);
        sp_view_sched_free(&vs);
        for (int e = 0; e < 3; e++) { /* a permutation per epoch */
            int seen[7] = {0};
            for (int i = 0; i < nviews; i++) seen[ref[e * nviews + i]]++;
            for (int i = 0; i < nviews; i++) assert_int_equal(seen[i], 1);
        }
        /* epochs differ */
        assert_true(memcmp(ref, ref + nviews, sizeof(int) * nviews) != 0);
    }
    const int cases[][3] = {{1, 1, 1}, {2, 1, 1}, {1, 2, 1}, {1, 1, 2}, {2, 2, 3}, {1, 3, 2}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        int batch = cases[c][0], dev = cases[c][1], world = cases[c][2];
        int got[3 * 7 + 64];
        for (int i = 0; i < steps; i++) got[i] = -1;
        for (int rank = 0; rank < world; rank++) {
            sp_batch_plan p;
            sp_batch_plan_init(&p, batch, dev, world, rank);
            assert_int_equal(p.global, batch * dev * world);
            sp_view_sched vs;
            sp_view_sched_init(&vs, 42, nviews);
            for (int prev = 0; prev < steps; prev += p.global) {
                int slots[64] = {0};
                for (int j = 0; j < p.local; j++) {
                    int g = sp_batch_slot(&p, j);
                    assert_true(g >= 0 && g < p.global);
                    assert_int_equal(g % (dev * world) / dev, rank); /* slot's device belongs to this rank */
                    assert_int_equal(slots[g]++, 0);
                    int s = prev + g + 1;
                    if (s > steps) continue;
                    int v = sp_view_sched_at(&vs, s);
                    assert_int_equal(got[s - 1], -1); /* no views-seen index taken twice */
                    got[s - 1] = v;
                }
            }
            sp_view_sched_free(&vs);
        }
        for (int i = 0; i < steps; i++)
            if (got[i] != ref[i]) fail_msg("batch %d, %d devices, %d ranks: index %d got view %d, want %d", batch, dev,
                                           world, i + 1, got[i], ref[i]);
    }
    /* devices of one process and single-device processes: the same slot for the same global device */
    sp_batch_plan one, two0, two1;
    sp_batch_plan_init(&one, 1, 2, 1, 0);
    sp_batch_plan_init(&two0, 1, 1, 2, 0);
    sp_batch_plan_init(&two1, 1, 1, 2, 1);
    assert_int_equal(sp_batch_slot(&one, 0), sp_batch_slot(&two0, 0));
    assert_int_equal(sp_batch_slot(&one, 1), sp_batch_slot(&two1, 0));
}

static void test_steps_events_and_lr(void **state) {
    (void)state;
    assert_int_equal(sp_batch_adam_steps(30000, 1), 30000);
    assert_int_equal(sp_batch_adam_steps(30000, 2), 15000);
    assert_int_equal(sp_batch_adam_steps(30000, 4), 7500);
    assert_int_equal(sp_batch_adam_steps(30001, 4), 7501); /* a short last batch */
    assert_int_equal(sp_batch_adam_steps(0, 4), 0);
    /* views-seen events within a batch */
    assert_int_equal(sp_batch_crossed(98, 100, 100), 1);
    assert_int_equal(sp_batch_crossed(100, 102, 100), 0);
    assert_int_equal(sp_batch_crossed(99, 103, 100), 1);
    assert_int_equal(sp_batch_crossed(0, 1, 1), 1);
    assert_int_equal(sp_batch_crossed(10, 20, 0), 0); /* 0 = off */
    int n = 0;
    for (int prev = 0; prev < 1000; prev += 3) n += sp_batch_crossed(prev, prev + 3 < 1000 ? prev + 3 : 1000, 100);
    assert_int_equal(n, 10); /* each multiple once, whatever the batch */
    assert_true(fabs(sp_batch_lr_scale("sqrt", 4) - 2.0) < 1e-12);
    assert_true(fabs(sp_batch_lr_scale("sqrt", 1) - 1.0) < 1e-12);
    assert_true(fabs(sp_batch_lr_scale("none", 8) - 1.0) < 1e-12);
}

static void test_config_batch_and_devices(void **state) {
    (void)state;
    sp_config c;
    sp_config_defaults(&c);
    assert_int_equal(c.trainer.batch, 1);
    assert_string_equal(c.backend.devices, "1");
    sp_problems p = {0};
    assert_int_equal(sp_config_set(&c, "trainer.batch=4", &p), 0);
    assert_int_equal(c.trainer.batch, 4);
    assert_int_equal(sp_config_set(&c, "trainer.batch=0", &p), -1);
    char *j0 = tu_joined(&p);
    tu_assert_contains(j0, "trainer.batch");
    free(j0);
    sp_problems_free(&p);
    assert_int_equal(sp_config_apply_text("[backend]\ndevices = 2\n", "t.toml", &c, &p), 0);
    assert_string_equal(c.backend.devices, "2");
    assert_int_equal(sp_config_set(&c, "backend.devices=0,1", &p), 0);
    assert_string_equal(c.backend.devices, "0,1");
    snprintf(c.data.path, sizeof c.data.path, "/x");
    assert_int_equal(sp_config_validate_for_training(&c, &p), 0);
    const char *bad[] = {"0", "x", "1,1", "0,a", "17", ""};
    const char *why[] = {"a count of 1 to", "a count of 1 to", "listed twice", "\"a\" is not a device id",
                         "a count of 1 to", "empty"};
    for (int i = 0; i < 6; i++) {
        snprintf(c.backend.devices, sizeof c.backend.devices, "%s", bad[i]);
        sp_problems q = {0};
        assert_int_equal(sp_config_validate_for_training(&c, &q), -1);
        char *j = tu_joined(&q);
        if (!strstr(j, why[i])) fail_msg("devices \"%s\": %s", bad[i], j);
        free(j);
        sp_problems_free(&q);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_accumulate_sums_gradients),
        cmocka_unit_test(test_view_schedule_over_ranks),
        cmocka_unit_test(test_steps_events_and_lr),
        cmocka_unit_test(test_config_batch_and_devices),
        cmocka_unit_test(test_render_many),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
