/* test_prune.c — pruning by blend weight (train/prune.h): which Gaussians the pick removes, and
 * the blend weights themselves: summed over all Gaussians they are the image's coverage, the sum
 * over pixels of 1 - final T of the CPU rasterize; a view adds its own weights (two cameras give
 * the sum of each alone); a transparent Gaussian weighs 0. */
#include "testutil.h"

#include <math.h>

#include "backend/ref/stages.h"
#include "parity.h"
#include "train/prune.h"

static void test_pick_smallest_ties_by_index(void **state) {
    (void)state;
    const float w[6] = {3.0f, 1.0f, 2.0f, 1.0f, 0.0f, 5.0f};
    uint8_t drop[6];
    assert_int_equal(sp_prune_pick(w, 6, 3, drop), 0);
    const uint8_t want[6] = {0, 1, 0, 1, 1, 0}; /* 0.0 (4), 1.0 (1), 1.0 (3) */
    assert_memory_equal(drop, want, 6);
    assert_int_equal(sp_prune_pick(w, 6, 2, drop), 0);
    const uint8_t want2[6] = {0, 1, 0, 0, 1, 0}; /* of the tied 1.0s the lower index goes */
    assert_memory_equal(drop, want2, 6);
    assert_int_equal(sp_prune_pick(w, 6, 0, drop), 0);
    const uint8_t none[6] = {0};
    assert_memory_equal(drop, none, 6);
    assert_int_equal(sp_prune_pick(w, 6, 99, drop), 0); /* clamped: all go */
    for (int i = 0; i < 6; i++) assert_int_equal(drop[i], 1);
}

static double coverage(const pt_scene *s, const sp_camera *cam) {
    sp_proj proj;
    sp_proj_alloc(&proj, s->n);
    cpu_project(&s->p, cam, 1, &proj);
    sp_bins bins = {0};
    cpu_bin(&proj, s->n, cam, &bins);
    sp_raster_out out;
    sp_raster_out_alloc(&out, cam->width, cam->height);
    const float bg[3] = {0, 0, 0};
    cpu_rasterize(&proj, &bins, cam, bg, &out);
    double c = 0.0;
    for (int p = 0; p < cam->width * cam->height; p++) c += 1.0 - out.final_T[p];
    sp_raster_out_free(&out);
    sp_bins_free(&bins);
    sp_proj_free(&proj);
    return c;
}

static double sum(const float *w, int n) {
    double s = 0.0;
    for (int i = 0; i < n; i++) s += w[i];
    return s;
}

static void test_weights_sum_to_coverage(void **state) {
    (void)state;
    sp_rng r = pt_rng(17);
    pt_scene s;
    pt_scene_make(&s, &r, 800, 96, 72, 1);
    sp_gaussians g;
    pt_scene_store(&s, &g);
    sp_camera cams[2] = {s.cam, s.cam};
    cams[1].width = 64, cams[1].height = 40; /* another view: the top-left part of the image */
    float *w0 = sp_malloc(sizeof(float) * s.n), *w1 = sp_malloc(sizeof(float) * s.n),
          *both = sp_malloc(sizeof(float) * s.n);
    assert_int_equal(sp_blend_weights_host(&g, 0, &cams[0], 1, w0), 0);
    assert_int_equal(sp_blend_weights_host(&g, 0, &cams[1], 1, w1), 0);
    assert_int_equal(sp_blend_weights_host(&g, 0, cams, 2, both), 0);
    double c0 = coverage(&s, &cams[0]), c1 = coverage(&s, &cams[1]);
    assert_true(c0 > 100.0); /* the scene covers a good part of the image */
    assert_true(fabs(sum(w0, s.n) - c0) <= 1e-4 * c0);
    assert_true(fabs(sum(w1, s.n) - c1) <= 1e-4 * c1);
    int seen = 0;
    for (int i = 0; i < s.n; i++) {
        assert_true(w0[i] >= 0.0f);
        assert_true(fabsf(both[i] - (w0[i] + w1[i])) <= 1e-5f * (1.0f + both[i]));
        seen += w0[i] > 0.0f;
    }
    assert_true(seen > s.n / 4 && seen < s.n); /* some Gaussians blend, some are off screen or hidden */
    /* a Gaussian that blended weighs nothing once it is transparent (opacity below 1/255) */
    int k = 0;
    while (w0[k] <= 0.0f) k++;
    g.opacity_logits[k] = -30.0f;
    assert_int_equal(sp_blend_weights_host(&g, 0, &cams[0], 1, w1), 0);
    assert_true(w1[k] == 0.0f);
    free(w0), free(w1), free(both);
    sp_gaussians_free(&g);
    pt_scene_free(&s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pick_smallest_ties_by_index),
        cmocka_unit_test(test_weights_sum_to_coverage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
