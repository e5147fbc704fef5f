/* test_loss.c — the `loss` stage (cpu_loss, sp_ssim) against an independent double-precision
 * reference written here: L1 + D-SSIM with a direct (non-separable) 11×11 window sum.
 * Checks the forward value, every pixel's gradient by central finite differences, the
 * identities ssim(x, x) = 1 and loss(x, x) = 0, both ends of ssim_weight, and determinism
 * across thread counts. */
#include <math.h>
#include <omp.h>

#include "testutil.h"

#include "backend/ref/loss.h"
#include "backend/ref/stages.h"

/* ---- reference ---- */

static double ref_win[11][11];

static void ref_init(void) {
    double s = 0;
    for (int a = 0; a < 11; a++)
        for (int b = 0; b < 11; b++) {
            double dy = a - 5, dx = b - 5;
            ref_win[a][b] = exp(-(dx * dx + dy * dy) / (2 * 1.5 * 1.5));
            s += ref_win[a][b];
        }
    for (int a = 0; a < 11; a++)
        for (int b = 0; b < 11; b++) ref_win[a][b] /= s;
}

/* SSIM map value at pixel (px, py), channel c, images [h][w][3] in double. */
static double ref_ssim_at(const double *x, const double *y, int w, int h, int px, int py, int c) {
    double mx = 0, my = 0, sxx = 0, syy = 0, sxy = 0;
    for (int a = 0; a < 11; a++) {
        int qy = py + a - 5;
        if (qy < 0 || qy >= h) continue;
        for (int b = 0; b < 11; b++) {
            int qx = px + b - 5;
            if (qx < 0 || qx >= w) continue;
            double g = ref_win[a][b], u = x[(qy * w + qx) * 3 + c], v = y[(qy * w + qx) * 3 + c];
            mx += g * u;
            my += g * v;
            sxx += g * u * u;
            syy += g * v * v;
            sxy += g * u * v;
        }
    }
    const double C1 = 0.01 * 0.01, C2 = 0.03 * 0.03;
    double vx = sxx - mx * mx, vy = syy - my * my, cxy = sxy - mx * my;
    return (2 * mx * my + C1) * (2 * cxy + C2) / ((mx * mx + my * my + C1) * (vx + vy + C2));
}

static double ref_ssim(const double *x, const double *y, int w, int h) {
    double s = 0;
    for (int py = 0; py < h; py++)
        for (int px = 0; px < w; px++)
            for (int c = 0; c < 3; c++) s += ref_ssim_at(x, y, w, h, px, py, c);
    return s / (3.0 * w * h);
}

static double ref_loss(const double *x, const double *y, int w, int h, double lambda) {
    double l1 = 0;
    for (int i = 0; i < 3 * w * h; i++) l1 += fabs(x[i] - y[i]);
    return (1 - lambda) * l1 / (3.0 * w * h) + lambda * (1 - ref_ssim(x, y, w, h));
}

/* Sum of the SSIM map over the pixels whose window contains (qx, qy), channel c: the only part
 * of the loss that changes when x at (qx, qy, c) does. */
static double ref_ssim_local(const double *x, const double *y, int w, int h, int qx, int qy, int c) {
    double s = 0;
    for (int py = sp_maxi(0, qy - 5); py <= sp_mini(h - 1, qy + 5); py++)
        for (int px = sp_maxi(0, qx - 5); px <= sp_mini(w - 1, qx + 5); px++) s += ref_ssim_at(x, y, w, h, px, py, c);
    return s;
}

/* ---- helpers ---- */

typedef struct {
    int w, h;
    float *x, *y;
    double *xd, *yd;
} pair;

/* Random render and target in [0, 1], values at least 2e-3 apart (away from the L1 kink). Some
 * flat dark patches make the SSIM denominators small. */
static pair make_pair(int w, int h, uint64_t seed) {
    pair p = {w, h, NULL, NULL, NULL, NULL};
    size_t n = (size_t)w * h * 3;
    p.x = sp_malloc(n * sizeof(float));
    p.y = sp_malloc(n * sizeof(float));
    p.xd = sp_malloc(n * sizeof(double));
    p.yd = sp_malloc(n * sizeof(double));
    sp_rng r;
    sp_rng_seed(&r, seed, 7);
    for (size_t i = 0; i < n; i++) {
        int px = (int)((i / 3) % w), py = (int)((i / 3) / w);
        int flat = px < w / 3 && py < h / 3;
        float a = flat ? 0.01f + 0.005f * sp_rng_uniform(&r) : sp_rng_uniform(&r);
        float b = flat ? 0.02f + 0.005f * sp_rng_uniform(&r) : sp_rng_uniform(&r);
        if (fabsf(a - b) < 2e-3f) b = a < 0.5f ? a + 0.01f : a - 0.01f;
        p.x[i] = a;
        p.y[i] = b;
        p.xd[i] = a;
        p.yd[i] = b;
    }
    return p;
}

static void free_pair(pair *p) {
    free(p->x);
    free(p->y);
    free(p->xd);
    free(p->yd);
}

/* ---- tests ---- */

static double worst_forward;

static void check_forward(int w, int h, double lambda, uint64_t seed) {
    pair p = make_pair(w, h, seed);
    double ref = ref_loss(p.xd, p.yd, w, h, (double)(float)lambda); /* cpu_loss takes λ as float */
    double got = cpu_loss(p.x, p.y, w, h, (float)lambda, NULL);
    float *g = sp_malloc((size_t)w * h * 3 * sizeof(float));
    double got_g = cpu_loss(p.x, p.y, w, h, (float)lambda, g);
    worst_forward = fmax(worst_forward, fabs(got - ref) / fabs(ref));
    /* The contract asks for 1e-6; both sides compute in double, so far tighter holds. */
    if (fabs(got - ref) > 1e-12 * fabs(ref)) fail_msg("%dx%d λ=%g: loss %.12g, reference %.12g", w, h, lambda, got, ref);
    assert_true(got == got_g); /* computing the gradient does not change the value */
    double s_ref = ref_ssim(p.xd, p.yd, w, h), s = sp_ssim(p.x, p.y, w, h);
    if (fabs(s - s_ref) > 1e-9) fail_msg("%dx%d: ssim %.12g, reference %.12g", w, h, s, s_ref);
    free(g);
    free_pair(&p);
}

static void test_forward_matches_reference(void **state) {
    (void)state;
    check_forward(13, 9, 0.2, 1);
    check_forward(32, 32, 0.2, 2);
    check_forward(7, 5, 0.2, 3);  /* smaller than the window */
    check_forward(1, 1, 0.2, 4);
    check_forward(40, 3, 0.5, 5);
    check_forward(13, 9, 0.0, 6);
    check_forward(13, 9, 1.0, 7);
    print_message("worst relative error of the loss: %.2g\n", worst_forward);
}

/* Central differences of the reference (only the part of the loss that the value touches)
 * against cpu_loss's gradient, for every value. Returns the worst error relative to the
 * largest gradient magnitude. */
static double check_gradient(int w, int h, double lambda, uint64_t seed) {
    pair p = make_pair(w, h, seed);
    size_t n = (size_t)w * h * 3;
    float *g = sp_malloc(n * sizeof(float));
    cpu_loss(p.x, p.y, w, h, (float)lambda, g);
    double *fd = sp_malloc(n * sizeof(double));
    const double eps = 1e-4, N = 3.0 * w * h;
    double gmax = 0;
    for (size_t i = 0; i < n; i++) {
        int c = (int)(i % 3), qx = (int)((i / 3) % w), qy = (int)((i / 3) / w);
        double x0 = p.xd[i], t = p.yd[i];
        double d = (1 - lambda) / N * (fabs(x0 + eps - t) - fabs(x0 - eps - t)) / (2 * eps);
        if (lambda != 0) {
            p.xd[i] = x0 + eps;
            double sp = ref_ssim_local(p.xd, p.yd, w, h, qx, qy, c);
            p.xd[i] = x0 - eps;
            double sm = ref_ssim_local(p.xd, p.yd, w, h, qx, qy, c);
            p.xd[i] = x0;
            d += -lambda / N * (sp - sm) / (2 * eps);
        }
        fd[i] = d;
        gmax = fmax(gmax, fabs(d));
    }
    /* Tolerance: float rounding of the gradient plus the O(eps²) truncation of the differences. */
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        double err = fabs(g[i] - fd[i]);
        double tol = 1e-5 * gmax + 1e-4 * fabs(fd[i]);
        worst = fmax(worst, err / gmax);
        if (err > tol)
            fail_msg("%dx%d λ=%g: value %zu (x %d, y %d, ch %zu): gradient %.9g, finite difference %.9g", w, h,
                     lambda, i, (int)((i / 3) % w), (int)((i / 3) / w), i % 3, g[i], fd[i]);
    }
    free(g);
    free(fd);
    free_pair(&p);
    return worst;
}

static void test_gradient_finite_differences(void **state) {
    (void)state;
    double w1 = check_gradient(13, 9, 0.2, 11);
    double w2 = check_gradient(32, 32, 0.2, 12);
    double w3 = check_gradient(13, 9, 1.0, 13);
    double w4 = check_gradient(13, 9, 0.0, 14);
    double w5 = check_gradient(4, 17, 0.5, 15);
    print_message("worst |g - fd| / max|fd|: %.2g %.2g %.2g %.2g %.2g\n", w1, w2, w3, w4, w5);
}

static void test_identical_images(void **state) {
    (void)state;
    int w = 23, h = 17;
    pair p = make_pair(w, h, 21);
    size_t n = (size_t)w * h * 3;
    assert_true(fabs(sp_ssim(p.x, p.x, w, h) - 1.0) < 1e-12);
    float *g = sp_malloc(n * sizeof(float));
    double l = cpu_loss(p.x, p.x, w, h, 0.2f, g);
    assert_true(fabs(l) < 1e-12);
    /* SSIM has its maximum and L1 its kink at equality: the gradient is 0 (up to rounding). */
    for (size_t i = 0; i < n; i++)
        if (fabsf(g[i]) > 1e-9f) fail_msg("gradient %g at value %zu of identical images", g[i], i);
    /* Constant images, black included (the SSIM constants keep it finite). */
    float *z = SP_NEW(float, n);
    assert_true(fabs(sp_ssim(z, z, w, h) - 1.0) < 1e-12);
    assert_true(cpu_loss(z, z, w, h, 0.2f, g) == 0.0);
    for (size_t i = 0; i < n; i++) assert_true(g[i] == 0.0f);
    free(z);
    free(g);
    free_pair(&p);
}

static void test_weight_ends(void **state) {
    (void)state;
    int w = 19, h = 11;
    pair p = make_pair(w, h, 31);
    size_t n = (size_t)w * h * 3;
    float *g = sp_malloc(n * sizeof(float));
    /* λ = 0: mean L1, gradient ±1/N. */
    double l1 = 0;
    for (size_t i = 0; i < n; i++) l1 += fabs(p.xd[i] - p.yd[i]);
    l1 /= (double)n;
    double l = cpu_loss(p.x, p.y, w, h, 0.0f, g);
    assert_true(fabs(l - l1) < 1e-12);
    for (size_t i = 0; i < n; i++) assert_true(g[i] == (p.x[i] > p.y[i] ? 1.0f : -1.0f) / (float)n);
    /* λ = 1: exactly 1 − SSIM. */
    l = cpu_loss(p.x, p.y, w, h, 1.0f, g);
    assert_true(fabs(l - (1.0 - sp_ssim(p.x, p.y, w, h))) < 1e-12);
    /* Mixed weights are the blend. */
    double lm = cpu_loss(p.x, p.y, w, h, 0.25f, NULL);
    assert_true(fabs(lm - (0.75 * l1 + 0.25 * l)) < 1e-12);
    free(g);
    free_pair(&p);
}

/* Bitwise identical results for any thread count, including bands thinner than the window
 * radius and more threads than rows. */
static void test_deterministic(void **state) {
    (void)state;
    const int sizes[][2] = {{57, 43}, {30, 12}, {9, 4}, {3, 1}};
    const int thread_counts[] = {2, 3, 5, 8};
    int threads = omp_get_max_threads();
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        int w = sizes[s][0], h = sizes[s][1];
        pair p = make_pair(w, h, 41 + s);
        size_t n = (size_t)w * h * 3;
        float *g1 = sp_malloc(n * sizeof(float)), *g2 = sp_malloc(n * sizeof(float));
        omp_set_num_threads(1);
        double l1 = cpu_loss(p.x, p.y, w, h, 0.2f, g1), s1 = sp_ssim(p.x, p.y, w, h);
        for (size_t t = 0; t < sizeof thread_counts / sizeof *thread_counts; t++) {
            omp_set_num_threads(thread_counts[t]);
            for (int rep = 0; rep < 2; rep++) {
                double l2 = cpu_loss(p.x, p.y, w, h, 0.2f, g2);
                if (l1 != l2) fail_msg("%dx%d, %d threads: loss %.17g != %.17g", w, h, thread_counts[t], l2, l1);
                assert_memory_equal(g1, g2, n * sizeof(float));
                assert_true(sp_ssim(p.x, p.y, w, h) == s1);
            }
        }
        omp_set_num_threads(threads);
        free(g1);
        free(g2);
        free_pair(&p);
    }
}

static void test_empty_image(void **state) {
    (void)state;
    float dummy = 7.0f;
    assert_true(cpu_loss(&dummy, &dummy, 0, 5, 0.2f, &dummy) == 0.0);
    assert_true(dummy == 7.0f);
    assert_true(sp_ssim(&dummy, &dummy, 5, 0) == 1.0);
}

static void test_window(void **state) {
    (void)state;
    double g[SP_SSIM_WINDOW], s = 0;
    sp_ssim_window(g);
    for (int k = 0; k < SP_SSIM_WINDOW; k++) s += g[k];
    assert_true(fabs(s - 1.0) < 1e-15);
    assert_true(g[5] > g[4] && g[4] == g[6] && g[0] == g[10]);
    assert_true(fabs(g[5] * g[5] - ref_win[5][5]) < 1e-15);
}

int main(void) {
    ref_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_window),
        cmocka_unit_test(test_forward_matches_reference),
        cmocka_unit_test(test_gradient_finite_differences),
        cmocka_unit_test(test_identical_images),
        cmocka_unit_test(test_weight_ends),
        cmocka_unit_test(test_deterministic),
        cmocka_unit_test(test_empty_image),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
