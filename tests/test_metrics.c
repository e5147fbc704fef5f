/* test_metrics.c — evaluation scores (PSNR/SSIM on 8-bit images, per-view means) and the
 * training-curve plot (rendering, edge cases, PNG round trip, errors). */
#include <math.h>

#include "testutil.h"

#include "backend/ref/stages.h"
#include "eval/metrics.h"
#include "eval/plot.h"
#include "io/image.h"

static uint8_t *random_u8(int w, int h, uint64_t seed, int lo, int hi) {
    size_t n = (size_t)w * h * 3;
    uint8_t *a = sp_malloc(n);
    sp_rng r;
    sp_rng_seed(&r, seed, 3);
    for (size_t i = 0; i < n; i++) a[i] = (uint8_t)(lo + sp_rng_u32(&r) % (uint32_t)(hi - lo + 1));
    return a;
}

static void test_psnr_known_mse(void **state) {
    (void)state;
    int w = 31, h = 17;
    size_t n = (size_t)w * h * 3;
    uint8_t *a = random_u8(w, h, 1, 0, 253), *b = sp_malloc(n);
    /* One level everywhere: MSE 1, PSNR = 20 log10(255) = 48.1308 dB. */
    for (size_t i = 0; i < n; i++) b[i] = a[i] + 1;
    assert_true(fabs(sp_psnr_u8(a, b, w, h) - 48.130803608679102) < 1e-9);
    assert_true(fabs(sp_psnr_u8(b, a, w, h) - 48.130803608679102) < 1e-9);
    /* Two levels on a quarter of the values: MSE 1 → same PSNR. */
    memcpy(b, a, n);
    for (size_t i = 0; i < n; i += 4) b[i] = a[i] + 2;
    double mse = 4.0 * (double)((n + 3) / 4) / (double)n;
    assert_true(fabs(sp_psnr_u8(a, b, w, h) - 10 * log10(255.0 * 255.0 / mse)) < 1e-9);
    /* Black against white: 0 dB. */
    memset(a, 0, n);
    memset(b, 255, n);
    assert_true(fabs(sp_psnr_u8(a, b, w, h)) < 1e-12);
    free(a);
    free(b);
}

static void test_identical_images(void **state) {
    (void)state;
    int w = 20, h = 14;
    uint8_t *a = random_u8(w, h, 2, 0, 255);
    assert_true(sp_psnr_u8(a, a, w, h) == SP_PSNR_IDENTICAL);
    assert_true(fabs(sp_ssim_u8(a, a, w, h) - 1.0) < 1e-12);
    assert_true(sp_psnr_u8(a, a, 0, 0) == SP_PSNR_IDENTICAL);
    free(a);
}

static void test_ssim_u8_is_sp_ssim(void **state) {
    (void)state;
    int w = 25, h = 19;
    size_t n = (size_t)w * h * 3;
    uint8_t *a = random_u8(w, h, 3, 0, 255), *b = random_u8(w, h, 4, 30, 200);
    float *fa = sp_malloc(n * sizeof(float)), *fb = sp_malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) {
        fa[i] = a[i] / 255.0f;
        fb[i] = b[i] / 255.0f;
    }
    double s = sp_ssim_u8(a, b, w, h);
    assert_true(s == sp_ssim(fa, fb, w, h));
    assert_true(s < 0.5); /* independent noise */
    free(a), free(b), free(fa), free(fb);
}

/* Float renders are scored after quantization: a difference below half a level is invisible. */
static void test_eval_images_quantizes(void **state) {
    (void)state;
    int w = 16, h = 12;
    size_t n = (size_t)w * h * 3;
    float *r = sp_malloc(n * sizeof(float)), *t = sp_malloc(n * sizeof(float));
    sp_rng rng;
    sp_rng_seed(&rng, 5, 0);
    for (size_t i = 0; i < n; i++) {
        t[i] = (float)(sp_rng_u32(&rng) % 256) / 255.0f;
        r[i] = t[i] + 0.3f / 255.0f;
    }
    double psnr, ssim;
    sp_eval_images(r, t, w, h, &psnr, &ssim);
    assert_true(psnr == SP_PSNR_IDENTICAL);
    assert_true(fabs(ssim - 1.0) < 1e-12);
    for (size_t i = 0; i < n; i++) r[i] = t[i] + 1.0f / 255.0f; /* one level (clamped at 255) */
    sp_eval_images(r, t, w, h, &psnr, NULL);
    assert_true(psnr > 48.13 && psnr < 60.0);
    sp_eval_images(r, t, w, h, NULL, &ssim);
    assert_true(ssim < 1.0 && ssim > 0.99);
    free(r);
    free(t);
}

/* ---- plot ---- */

static int non_white_in_rows(const uint8_t *rgb, int w, int y0, int y1) {
    int count = 0;
    for (int y = y0; y < y1; y++)
        for (int x = 0; x < w; x++) {
            const uint8_t *p = rgb + ((size_t)y * w + x) * 3;
            if (p[0] != 255 || p[1] != 255 || p[2] != 255) count++;
        }
    return count;
}

/* Pixels of the panel's line colour (dominant channel) in rows [y0, y1). */
static int colored_in_rows(const uint8_t *rgb, int w, int y0, int y1) {
    int count = 0;
    for (int y = y0; y < y1; y++)
        for (int x = 0; x < w; x++) {
            const uint8_t *p = rgb + ((size_t)y * w + x) * 3;
            int mx = p[0] > p[1] ? (p[0] > p[2] ? p[0] : p[2]) : (p[1] > p[2] ? p[1] : p[2]);
            int mn = p[0] < p[1] ? (p[0] < p[2] ? p[0] : p[2]) : (p[1] < p[2] ? p[1] : p[2]);
            if (mx - mn > 60) count++;
        }
    return count;
}

enum { NPTS = 300 };
static double xs[NPTS], loss[NPTS], psnr[NPTS], count[NPTS];

static void make_curves(void) {
    for (int i = 0; i < NPTS; i++) {
        xs[i] = 100.0 * i;
        loss[i] = 0.3 * exp(-i / 60.0) + 0.02;
        psnr[i] = 12.0 + 18.0 * (1 - exp(-i / 80.0));
        count[i] = 1e5 + 2e5 * (1 - exp(-i / 100.0));
    }
}

static void test_plot_panels(void **state) {
    (void)state;
    make_curves();
    sp_plot_series p[3] = {
        {.title = "loss", .x = xs, .y = loss, .n = NPTS, .log_y = 1},
        {.title = "PSNR (dB)", .x = xs, .y = psnr, .n = NPTS, .log_y = 0},
        {.title = "Gaussians", .x = xs, .y = count, .n = NPTS, .log_y = 0},
    };
    int w = 640, h = 720;
    uint8_t *rgb = sp_malloc((size_t)w * h * 3);
    assert_int_equal(sp_plot_render(p, 3, w, h, rgb), 0);
    for (int k = 0; k < 3; k++) {
        int y0 = k * h / 3, y1 = (k + 1) * h / 3;
        assert_true(non_white_in_rows(rgb, w, y0, y1) > 1000);
        assert_true(colored_in_rows(rgb, w, y0, y1) > 300); /* the curve spans the panel */
    }
    free(rgb);
}

static void test_plot_edge_cases(void **state) {
    (void)state;
    double x1[1] = {5}, y1[1] = {0.25};
    double xc[4] = {0, 1, 2, 3}, yc[4] = {7, 7, 7, 7};
    double xn[6] = {0, 1, NAN, 3, 4, INFINITY}, yn[6] = {1, NAN, 2, 3, -1, 5};
    double yneg[3] = {-1, 0, NAN};
    double xbig[3] = {-1e300, 0, 1e300}, ybig[3] = {1e-300, 1, 1e300};
    sp_plot_series cases[][2] = {
        {{.title = "empty", .x = NULL, .y = NULL, .n = 0, .log_y = 0}, {.title = NULL, .x = xs, .y = loss, .n = 0, .log_y = 1}},
        {{.title = "one point", .x = x1, .y = y1, .n = 1, .log_y = 0}, {.title = "one point log", .x = x1, .y = y1, .n = 1, .log_y = 1}},
        {{.title = "constant", .x = xc, .y = yc, .n = 4, .log_y = 0}, {.title = "constant log", .x = xc, .y = yc, .n = 4, .log_y = 1}},
        {{.title = "nan and inf", .x = xn, .y = yn, .n = 6, .log_y = 0}, {.title = "log of non-positive", .x = xc, .y = yneg, .n = 3, .log_y = 1}},
        {{.title = "huge range", .x = xbig, .y = ybig, .n = 3, .log_y = 0}, {.title = "huge range log", .x = xbig, .y = ybig, .n = 3, .log_y = 1}},
    };
    int w = 300, h = 240;
    uint8_t *rgb = sp_malloc((size_t)w * h * 3);
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        assert_int_equal(sp_plot_render(cases[c], 2, w, h, rgb), 0);
        assert_true(non_white_in_rows(rgb, w, 0, h / 2) > 100);
        assert_true(non_white_in_rows(rgb, w, h / 2, h) > 100);
    }
    /* The lone point is drawn. */
    sp_plot_series one = {.title = "one point", .x = x1, .y = y1, .n = 1, .log_y = 0};
    assert_int_equal(sp_plot_render(&one, 1, w, h, rgb), 0);
    assert_true(colored_in_rows(rgb, w, 0, h) >= 9);
    free(rgb);
}

static void test_plot_errors(void **state) {
    (void)state;
    make_curves();
    sp_plot_series p[5] = {{.title = "a", .x = xs, .y = loss, .n = NPTS, .log_y = 0}, {.title = "b", .x = xs, .y = loss, .n = NPTS, .log_y = 0}, {.title = "c", .x = xs, .y = loss, .n = NPTS, .log_y = 0},
                           {.title = "d", .x = xs, .y = loss, .n = NPTS, .log_y = 0}, {.title = "e", .x = xs, .y = loss, .n = NPTS, .log_y = 0}};
    uint8_t *rgb = sp_malloc(800 * 800 * 3);
    assert_int_equal(sp_plot_render(p, 0, 400, 300, rgb), -1);
    tu_assert_contains(sp_last_error(), "0 panels");
    assert_int_equal(sp_plot_render(p, 5, 800, 800, rgb), -1);
    tu_assert_contains(sp_last_error(), "5 panels");
    assert_int_equal(sp_plot_render(p, 3, 100, 600, rgb), -1);
    tu_assert_contains(sp_last_error(), "too small");
    assert_int_equal(sp_plot_render(p, 3, 400, 200, rgb), -1);
    tu_assert_contains(sp_last_error(), "at least 160x300");
    free(rgb);
    assert_int_equal(sp_plot_write_png("/nonexistent-dir/curves.png", p, 1, 400, 300), -1);
    tu_assert_contains(sp_last_error(), "/nonexistent-dir/curves.png");
    assert_int_equal(sp_plot_write_png("x.png", p, 1, 0, 300), -1);
    tu_assert_contains(sp_last_error(), "x.png: cannot draw a 0x300 plot");
    assert_int_equal(sp_plot_write_png("y.png", p, 3, 400, 200), -1);
    tu_assert_contains(sp_last_error(), "y.png: plot: 400x200 is too small");
    assert_false(sp_file_exists("y.png"));
}

/* Leftmost and rightmost columns with line colour in rows [y0, y1). */
static void colored_span(const uint8_t *rgb, int w, int y0, int y1, int *lo, int *hi) {
    *lo = w;
    *hi = -1;
    for (int y = y0; y < y1; y++)
        for (int x = 0; x < w; x++) {
            const uint8_t *p = rgb + ((size_t)y * w + x) * 3;
            int mx = p[0] > p[1] ? (p[0] > p[2] ? p[0] : p[2]) : (p[1] > p[2] ? p[1] : p[2]);
            int mn = p[0] < p[1] ? (p[0] < p[2] ? p[0] : p[2]) : (p[1] < p[2] ? p[1] : p[2]);
            if (mx - mn > 60) {
                if (x < *lo) *lo = x;
                if (x > *hi) *hi = x;
            }
        }
}

/* Panels share one x range; a panel with a note and one point shows the note, not a dot. */
static void test_plot_shared_x_and_note(void **state) {
    (void)state;
    make_curves();
    double x2[2] = {xs[NPTS / 2], xs[NPTS - 1]}, y2[2] = {20, 25}, x1[1] = {xs[NPTS - 1]}, y1[1] = {28};
    sp_plot_series p[3] = {
        {.title = "loss (log scale)", .x = xs, .y = loss, .n = NPTS, .log_y = 1},
        {.title = "half", .x = x2, .y = y2, .n = 2},
        {.title = "PSNR", .x = x1, .y = y1, .n = 1, .note = "one evaluation only", .x_label = "step"},
    };
    int w = 640, h = 720;
    uint8_t *rgb = sp_malloc((size_t)w * h * 3);
    assert_int_equal(sp_plot_render(p, 3, w, h, rgb), 0);
    int lo0, hi0, lo1, hi1, lo2, hi2;
    colored_span(rgb, w, 0, h / 3, &lo0, &hi0);
    colored_span(rgb, w, h / 3, 2 * h / 3, &lo1, &hi1);
    colored_span(rgb, w, 2 * h / 3, h, &lo2, &hi2);
    assert_true(hi0 > lo0 + 300);
    assert_true(abs(hi1 - hi0) <= 3);                  /* same last step, same column */
    assert_true(abs(lo1 - (lo0 + hi0) / 2) <= 4);      /* half way along the shared range */
    assert_int_equal(hi2, -1);                         /* no dot: the note instead */
    assert_true(non_white_in_rows(rgb, w, 2 * h / 3 + 60, h - 60) > 200);
    free(rgb);
}

/* Extra lines get their own colours and a legend. */
static void test_plot_lines_legend(void **state) {
    (void)state;
    make_curves();
    sp_plot_series lines[2] = {{.title = "lego", .x = xs, .y = psnr, .n = NPTS},
                               {.title = "mic", .x = xs, .y = count, .n = NPTS}};
    sp_plot_series p = {.title = "test PSNR", .lines = lines, .num_lines = 2, .x_label = "step"};
    int w = 400, h = 300;
    uint8_t *rgb = sp_malloc((size_t)w * h * 3);
    assert_int_equal(sp_plot_render(&p, 1, w, h, rgb), 0);
    int red = 0, green = 0;
    for (int i = 0; i < w * h; i++) {
        const uint8_t *q = rgb + 3 * (size_t)i;
        red += q[0] == 200 && q[1] == 60 && q[2] == 40;
        green += q[0] == 40 && q[1] == 150 && q[2] == 70;
    }
    assert_true(red > 100);
    assert_true(green > 100);
    free(rgb);
}

/* sp_plot_label puts the text on a box. */
static void test_plot_label(void **state) {
    (void)state;
    int w = 80, h = 20;
    uint8_t *rgb = calloc((size_t)w * h * 3, 1);
    const uint8_t ink[3] = {0, 0, 0}, box[3] = {255, 255, 255};
    sp_plot_label(rgb, w, h, 4, 4, 1, "ground truth", ink, box);
    assert_int_equal(rgb[(3 * w + 3) * 3], 255);                 /* box corner */
    assert_int_equal(rgb[(4 * w + 4 + sp_plot_text_width("ground truth", 1)) * 3], 255);
    assert_int_equal(rgb[(15 * w + 40) * 3], 0);                 /* below the box: untouched */
    free(rgb);
}

static void test_plot_png_round_trip(void **state) {
    (void)state;
    make_curves();
    sp_plot_series p[3] = {
        {.title = "loss", .x = xs, .y = loss, .n = NPTS, .log_y = 1},
        {.title = "PSNR (dB)", .x = xs, .y = psnr, .n = NPTS, .log_y = 0},
        {.title = "Gaussians", .x = xs, .y = count, .n = NPTS, .log_y = 0},
    };
    char *dir = tu_tmpdir();
    assert_non_null(dir);
    char *path = sp_path_join(dir, "curves.png");
    assert_int_equal(sp_plot_write_png(path, p, 3, 800, 900), 0);
    sp_image img;
    assert_int_equal(sp_image_load(path, &img), 0);
    assert_int_equal(img.width, 800);
    assert_int_equal(img.height, 900);
    assert_int_equal(img.channels, 3);
    uint8_t *rgb = sp_malloc(800 * 900 * 3);
    assert_int_equal(sp_plot_render(p, 3, 800, 900, rgb), 0);
    assert_memory_equal(rgb, img.pixels, 800 * 900 * 3);
    free(rgb);
    sp_image_free(&img);
    remove(path);
    rmdir(dir);
    free(path);
    free(dir);
}

static void test_font(void **state) {
    (void)state;
    int w = 200, h = 20;
    uint8_t *rgb = sp_malloc((size_t)w * h * 3);
    memset(rgb, 255, (size_t)w * h * 3);
    const uint8_t black[3] = {0, 0, 0};
    assert_int_equal(sp_plot_text_width("1.5e+03", 1), 41);
    assert_int_equal(sp_plot_text_width("", 2), 0);
    assert_int_equal(sp_plot_text(rgb, w, h, 2, 2, 1, "0123456789", black), 59);
    int ink = non_white_in_rows(rgb, w, 0, h);
    assert_true(ink > 100 && ink < 350);
    /* A space draws nothing; unknown characters are drawn (as '?'); clipping never writes outside. */
    memset(rgb, 255, (size_t)w * h * 3);
    sp_plot_text(rgb, w, h, 0, 0, 1, "   ", black);
    assert_int_equal(non_white_in_rows(rgb, w, 0, h), 0);
    sp_plot_text(rgb, w, h, 0, 0, 1, "\x01", black);
    assert_true(non_white_in_rows(rgb, w, 0, h) > 5);
    sp_plot_text(rgb, w, h, -7, 15, 3, "Wide text off the edges", black);
    sp_plot_text(rgb, w, h, 0, 0, 1, NULL, black);
    free(rgb);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_psnr_known_mse),
        cmocka_unit_test(test_identical_images),
        cmocka_unit_test(test_ssim_u8_is_sp_ssim),
        cmocka_unit_test(test_eval_images_quantizes),
        cmocka_unit_test(test_plot_panels),
        cmocka_unit_test(test_plot_edge_cases),
        cmocka_unit_test(test_plot_errors),
        cmocka_unit_test(test_plot_png_round_trip),
        cmocka_unit_test(test_plot_shared_x_and_note),
        cmocka_unit_test(test_plot_lines_legend),
        cmocka_unit_test(test_plot_label),
        cmocka_unit_test(test_font),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
