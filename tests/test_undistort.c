/* test_undistort.c — lens model, inverse, border crop and image undistortion against a known
 * projection. */
#include <math.h>

#include "testutil.h"
#include "io/undistort.h"

static sp_lens test_lens(double k1, double k2, double k3, double p1, double p2) {
    sp_lens l = {.width = 160, .height = 120, .fx = 120, .fy = 118, .cx = 80.3, .cy = 59.6};
    l.k1 = k1, l.k2 = k2, l.k3 = k3, l.p1 = p1, l.p2 = p2;
    return l;
}

static void test_identity(void **state) {
    (void)state;
    sp_rng r;
    sp_rng_seed(&r, 7, 1);
    for (int ch = 3; ch <= 4; ch++) {
        sp_lens l = test_lens(0, 0, 0, 0, 0);
        sp_image src = {l.width, l.height, ch, sp_malloc((size_t)l.width * l.height * ch)}, dst;
        for (int i = 0; i < l.width * l.height * ch; i++) src.pixels[i] = (uint8_t)(sp_rng_u32(&r) & 255);
        if (ch == 4) /* opaque, so premultiplied sampling is exact too */
            for (int i = 0; i < l.width * l.height; i++) src.pixels[i * 4 + 3] = 255;
        sp_crop c;
        assert_int_equal(sp_undistort_crop(&l, &c), 0);
        assert_int_equal(c.left | c.top | c.right | c.bottom, 0);
        assert_int_equal(sp_undistort_image(&src, &l, &c, &dst), 0);
        assert_int_equal(dst.width, l.width);
        assert_int_equal(dst.height, l.height);
        assert_int_equal(dst.channels, ch);
        assert_memory_equal(dst.pixels, src.pixels, (size_t)l.width * l.height * ch);
        sp_image_free(&src);
        sp_image_free(&dst);
    }
}

static void test_inverse(void **state) {
    (void)state;
    sp_lens l = test_lens(-0.2, 0.05, 0.01, 0.002, -0.003);
    double pts[][2] = {{0, 0}, {0.3, -0.2}, {-0.5, 0.4}, {0.6, 0.45}};
    for (size_t i = 0; i < sizeof pts / sizeof *pts; i++) {
        double xd, yd, x, y;
        sp_lens_distort(&l, pts[i][0], pts[i][1], &xd, &yd);
        assert_int_equal(sp_lens_undistort_point(&l, xd, yd, &x, &y), 0);
        assert_true(fabs(x - pts[i][0]) < 1e-9 && fabs(y - pts[i][1]) < 1e-9);
    }
    /* k1 alone: a point moves radially by the factor 1 + k1 r² */
    sp_lens r = test_lens(0.1, 0, 0, 0, 0);
    double xd, yd;
    sp_lens_distort(&r, 0.3, 0.4, &xd, &yd);
    assert_true(fabs(xd - 0.3 * 1.025) < 1e-12 && fabs(yd - 0.4 * 1.025) < 1e-12);
}

/* Draws a Gaussian dot (sigma 1.2 px) centred at continuous pixel position (u, v). */
static void draw_dot(sp_image *im, double u, double v) {
    memset(im->pixels, 0, (size_t)im->width * im->height * im->channels);
    for (int j = 0; j < im->height; j++)
        for (int i = 0; i < im->width; i++) {
            double dx = i + 0.5 - u, dy = j + 0.5 - v;
            double val = 255.0 * exp(-(dx * dx + dy * dy) / (2 * 1.2 * 1.2));
            for (int c = 0; c < 3; c++) im->pixels[(j * im->width + i) * 3 + c] = (uint8_t)(val + 0.5);
        }
}

/* Intensity-weighted centroid (continuous pixel position) in a window around (u, v). */
static void centroid(const sp_image *im, double u, double v, double *cu, double *cv) {
    double s = 0, su = 0, sv = 0;
    for (int j = (int)v - 6; j <= (int)v + 6; j++)
        for (int i = (int)u - 6; i <= (int)u + 6; i++) {
            if (i < 0 || j < 0 || i >= im->width || j >= im->height) continue;
            double w = im->pixels[(j * im->width + i) * im->channels];
            s += w, su += w * (i + 0.5), sv += w * (j + 0.5);
        }
    assert_true(s > 0);
    *cu = su / s, *cv = sv / s;
}

static void check_dots(const sp_lens *l) {
    sp_crop c;
    assert_int_equal(sp_undistort_crop(l, &c), 0);
    sp_image src = {l->width, l->height, 3, sp_malloc((size_t)l->width * l->height * 3)}, dst;
    /* camera-space points, projected with the distortion model into the photo */
    double P[][3] = {{0.6, -0.4, 2.0}, {-1.0, 0.6, 2.5}, {0.0, 0.0, 3.0}, {1.1, 0.7, 2.2}, {-0.9, -0.8, 2.4}};
    for (size_t k = 0; k < sizeof P / sizeof *P; k++) {
        double x = P[k][0] / P[k][2], y = P[k][1] / P[k][2], xd, yd;
        sp_lens_distort(l, x, y, &xd, &yd);
        draw_dot(&src, l->fx * xd + l->cx, l->fy * yd + l->cy);
        assert_int_equal(sp_undistort_image(&src, l, &c, &dst), 0);
        assert_int_equal(dst.width, l->width - c.left - c.right);
        assert_int_equal(dst.height, l->height - c.top - c.bottom);
        /* the pinhole projection in the output camera (fx, fy, cx - left, cy - top) */
        double eu = l->fx * x + l->cx - c.left, ev = l->fy * y + l->cy - c.top, gu, gv;
        centroid(&dst, eu, ev, &gu, &gv);
        if (fabs(gu - eu) > 0.5 || fabs(gv - ev) > 0.5)
            fail_msg("point %zu: dot at (%.2f, %.2f), pinhole projection (%.2f, %.2f)", k, gu, gv, eu, ev);
        sp_image_free(&dst);
    }
    sp_image_free(&src);
}

static void test_known_projection_barrel(void **state) {
    (void)state;
    sp_lens l = test_lens(-0.18, 0.04, 0.005, 0.002, -0.0015);
    check_dots(&l);
}

static void test_known_projection_pincushion(void **state) {
    (void)state;
    sp_lens l = test_lens(0.08, 0.02, 0, -0.001, 0.002);
    sp_crop c;
    assert_int_equal(sp_undistort_crop(&l, &c), 0);
    /* outward distortion pushes the border out of the photo: some crop on every side */
    assert_true(c.left > 0 && c.top > 0 && c.right > 0 && c.bottom > 0);
    /* every kept pixel centre maps inside the photo */
    for (int j = c.top; j < l.height - c.bottom; j++)
        for (int i = c.left; i < l.width - c.right; i++) {
            double xd, yd;
            sp_lens_distort(&l, (i + 0.5 - l.cx) / l.fx, (j + 0.5 - l.cy) / l.fy, &xd, &yd);
            double u = l.fx * xd + l.cx, v = l.fy * yd + l.cy;
            assert_true(u >= 0 && u <= l.width && v >= 0 && v <= l.height);
        }
    /* and the crop is tight: one more pixel on the left would need a source outside */
    int bad = 0;
    for (int j = c.top; j < l.height - c.bottom; j++) {
        double xd, yd;
        sp_lens_distort(&l, (c.left - 1 + 0.5 - l.cx) / l.fx, (j + 0.5 - l.cy) / l.fy, &xd, &yd);
        bad |= l.fx * xd + l.cx < 0;
    }
    assert_true(bad);
    check_dots(&l);
}

static void test_too_strong(void **state) {
    (void)state;
    sp_lens l = test_lens(3.0, 0, 0, 0, 0);
    sp_crop c;
    assert_int_equal(sp_undistort_crop(&l, &c), -1);
    tu_assert_contains(sp_last_error(), "less than half");
    /* strong barrel distortion folds back on itself: also refused */
    sp_lens f = test_lens(-1.5, 0, 0, 0, 0);
    assert_int_equal(sp_undistort_crop(&f, &c), -1);
    tu_assert_contains(sp_last_error(), "do not fit");
}

static void test_size_mismatch(void **state) {
    (void)state;
    sp_lens l = test_lens(0.01, 0, 0, 0, 0);
    sp_image src = {10, 10, 3, sp_calloc(300, 1)}, dst;
    sp_crop c = {0};
    assert_int_equal(sp_undistort_image(&src, &l, &c, &dst), -1);
    tu_assert_contains(sp_last_error(), "10x10");
    sp_image_free(&src);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_identity),
        cmocka_unit_test(test_inverse),
        cmocka_unit_test(test_known_projection_barrel),
        cmocka_unit_test(test_known_projection_pincushion),
        cmocka_unit_test(test_too_strong),
        cmocka_unit_test(test_size_mismatch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
