/* test_aa_bake.c — the antialias filter baked into opacities (train/aa_bake.h): with one view the
 * baked model rendered without the filter is the filtered render of the original (same opacity per
 * Gaussian); the factor is the mean over the views that see a Gaussian's centre; Gaussians no view
 * sees keep their opacity; large Gaussians barely change, sub-pixel ones a lot. */
#include "testutil.h"

#include <math.h>

#include "backend/backend.h"
#include "train/aa_bake.h"

#define W 64
#define H 48

/* A camera looking down +z from z = -dist (world origin at the image centre). */
static sp_camera camera_at(float dist) { return tu_camera_z(W, H, 60.0f, dist); }

/* n Gaussians with centres inside the view of camera_at(4) (|x|, |y| < 1), log-scales in
 * [lo, hi], random rotations and opacities, SH degree 0. */
static void make_gaussians(sp_gaussians *g, int n, float lo, float hi, uint64_t seed) {
    sp_rng r;
    sp_rng_seed(&r, seed, 0);
    sp_gaussians_init(g, n, 0);
    g->n = n;
    for (int i = 0; i < n; i++) {
        g->means[3 * i] = 2.0f * sp_rng_uniform(&r) - 1.0f;
        g->means[3 * i + 1] = 1.4f * sp_rng_uniform(&r) - 0.7f;
        g->means[3 * i + 2] = sp_rng_uniform(&r) - 0.5f;
        for (int k = 0; k < 3; k++) g->log_scales[3 * i + k] = lo + (hi - lo) * sp_rng_uniform(&r);
        for (int k = 0; k < 4; k++) g->quats[4 * i + k] = sp_rng_uniform(&r) - 0.5f;
        g->opacity_logits[i] = 4.0f * sp_rng_uniform(&r) - 1.0f;
        for (int k = 0; k < 3; k++) g->sh[3 * i + k] = 2.0f * sp_rng_uniform(&r) - 1.0f;
    }
}

static sp_split split_of(sp_view *v, const sp_camera *cams, int n) {
    for (int j = 0; j < n; j++) {
        memset(&v[j], 0, sizeof v[j]);
        v[j].cam = cams[j];
    }
    return (sp_split){.views = v, .n = n};
}

static float *render_with(const sp_gaussians *g, const sp_camera *cam, int antialias) {
    sp_backend_config bc = {.threads = 1, .antialias = antialias};
    sp_backend *b = sp_backend_create("cpu", &bc);
    assert_non_null(b);
    assert_int_equal(b->ops->set_gaussians(b, g, NULL, NULL), 0);
    float *rgb = sp_malloc((size_t)W * H * 3 * sizeof(float)), bg[3] = {1.0f, 1.0f, 1.0f};
    assert_int_equal(b->ops->render(b, cam, 0, bg, rgb), 0);
    b->ops->destroy(b);
    return rgb;
}

/* One view: the standard render of the baked model is the filtered render of the original. */
static void test_one_view_is_the_filtered_render(void **state) {
    (void)state;
    sp_gaussians g, baked;
    make_gaussians(&g, 300, -6.0f, -2.5f, 7); /* sub-pixel to a few pixels at distance 4 */
    sp_gaussians_clone(&baked, &g);
    sp_camera cam = camera_at(4.0f);
    sp_view v[1];
    sp_split s = split_of(v, &cam, 1);
    sp_aa_bake_result br;
    sp_aa_bake(&baked, &s, &br);
    assert_int_equal(br.seen, 300);
    assert_true(br.rho_min < 0.2);  /* the sub-pixel ones lose most of their opacity */
    assert_true(br.below_half > 30);
    float *filtered = render_with(&g, &cam, 1), *standard = render_with(&baked, &cam, 0),
          *unbaked = render_with(&g, &cam, 0);
    double max_d = 0, sum_d = 0, sum_u = 0;
    for (int i = 0; i < W * H * 3; i++) {
        double d = fabs((double)filtered[i] - standard[i]);
        max_d = d > max_d ? d : max_d;
        sum_d += d;
        sum_u += fabs((double)filtered[i] - unbaked[i]);
    }
    /* only float rounding of the opacity and the 1/255 cut of borderline Gaussians differ */
    assert_true(max_d < 5e-3);
    assert_true(sum_d / (W * H * 3) < 1e-5);
    assert_true(sum_u / (W * H * 3) > 100 * (sum_d / (W * H * 3) + 1e-9)); /* and the filter mattered */
    free(filtered), free(standard), free(unbaked);
    sp_gaussians_free(&g), sp_gaussians_free(&baked);
}

/* Several views: the factor is the mean of the views that see the centre; unseen Gaussians keep
 * their opacity; a Gaussian much larger than a pixel keeps nearly all of it. */
static void test_mean_over_views(void **state) {
    (void)state;
    sp_gaussians g;
    make_gaussians(&g, 40, -5.0f, -3.0f, 11);
    g.means[0] = 50.0f; /* Gaussian 0: outside every view */
    g.log_scales[3] = g.log_scales[4] = g.log_scales[5] = 0.0f; /* Gaussian 1: scale 1, far above a pixel */
    sp_camera cams[3] = {camera_at(3.0f), camera_at(6.0f), camera_at(12.0f)};
    sp_view v[3], v1[1];
    sp_split all = split_of(v, cams, 3);
    for (int i = 1; i < g.n; i++) {
        int by, by1;
        double mean = sp_aa_bake_rho(&g, i, &all, &by), sum = 0;
        int seen = 0;
        for (int j = 0; j < 3; j++) {
            sp_split one = split_of(v1, &cams[j], 1);
            double r1 = sp_aa_bake_rho(&g, i, &one, &by1);
            if (by1) sum += r1, seen++;
            assert_true(!by1 || (r1 > 0 && r1 <= 1));
        }
        assert_int_equal(by, seen);
        assert_true(seen > 0);
        assert_true(fabs(mean - sum / seen) < 1e-12);
    }
    int by0;
    assert_true(sp_aa_bake_rho(&g, 0, &all, &by0) == 0.0 && by0 == 0);
    float logit0 = g.opacity_logits[0], logit1 = g.opacity_logits[1];
    sp_aa_bake_result br;
    sp_aa_bake(&g, &all, &br);
    assert_int_equal(br.seen, 39);
    assert_true(g.opacity_logits[0] == logit0);
    double o1 = 1 / (1 + exp(-(double)logit1)), o1b = 1 / (1 + exp(-(double)g.opacity_logits[1]));
    assert_true(o1b < o1 && o1b > 0.98 * o1);
    sp_gaussians_free(&g);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_view_is_the_filtered_render),
        cmocka_unit_test(test_mean_over_views),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
