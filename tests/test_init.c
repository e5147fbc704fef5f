/* test_init.c — initial Gaussians: the nearest-neighbour scale rule against brute force on uniform,
 * clustered, flat and duplicated clouds, determinism across runs and thread counts, the parameter
 * layout (quats, opacity, SH DC colour round trip), degenerate clouds and rejected inputs, and the
 * cameras' focus point that centres random initialization of captured scenes. */
#include "testutil.h"

#include <math.h>
#include <omp.h>

#include "scene/dataset.h"
#include "scene/gaussians.h"
#include "scene/init.h"

/* Mean squared distance from point i to its min(3, n-1) nearest others, by full scan, with the
 * same float arithmetic as the tree. */
static float brute_knn3(const float *x, int n, int i) {
    float b[3] = {INFINITY, INFINITY, INFINITY};
    for (int j = 0; j < n; j++) {
        if (j == i) continue;
        float dx = x[3 * i] - x[3 * j], dy = x[3 * i + 1] - x[3 * j + 1], dz = x[3 * i + 2] - x[3 * j + 2];
        float d = dx * dx + dy * dy + dz * dz;
        if (d < b[2]) {
            b[2] = d;
            for (int k = 2; k > 0 && b[k] < b[k - 1]; k--) {
                float t = b[k];
                b[k] = b[k - 1];
                b[k - 1] = t;
            }
        }
    }
    int k = n - 1 < 3 ? n - 1 : 3;
    float s = 0;
    for (int j = 0; j < k; j++) s += b[j];
    return k ? s / (float)k : 0.0f;
}

static void check_against_brute(const float *x, int n, int stride) {
    float *d = malloc((size_t)n * sizeof *d);
    sp_knn3_mean_dist2(x, n, d);
    for (int i = 0; i < n; i += stride) {
        float want = brute_knn3(x, n, i);
        if (!(fabsf(d[i] - want) <= 1e-6f * want)) fail_msg("point %d: tree %.9g, brute force %.9g", i, d[i], want);
    }
    free(d);
}

static void test_knn_uniform(void **state) {
    (void)state;
    sp_rng r;
    sp_rng_seed(&r, 1, 0);
    int n = 2000;
    float *x = malloc((size_t)n * 3 * sizeof *x);
    tu_fill_uniform(&r, x, (size_t)n * 3, -1.0f, 1.0f);
    check_against_brute(x, n, 1);
    free(x);
}

/* Clusters of very different density, far outliers, exact duplicates and points on a plane. */
static void test_knn_hard_clouds(void **state) {
    (void)state;
    sp_rng r;
    sp_rng_seed(&r, 2, 0);
    int n = 2000;
    float *x = malloc((size_t)n * 3 * sizeof *x);
    for (int i = 0; i < n; i++) {
        float *p = x + 3 * i;
        if (i < 800) { /* tight cluster */
            for (int k = 0; k < 3; k++) p[k] = 0.5f + 1e-3f * sp_rng_normal(&r);
        } else if (i < 1400) { /* plane z = 0 on a coarse grid (many equal coordinates) */
            p[0] = (float)((i - 800) % 25) * 0.1f;
            p[1] = (float)((i - 800) / 25) * 0.1f;
            p[2] = 0.0f;
        } else if (i < 1500) { /* far outliers */
            for (int k = 0; k < 3; k++) p[k] = 1000.0f * sp_rng_normal(&r);
        } else if (i < 1800) { /* duplicates of earlier points */
            int j = (int)(sp_rng_u32(&r) % 1400u);
            memcpy(p, x + 3 * j, 3 * sizeof(float));
        } else { /* a line */
            p[0] = p[1] = -3.0f;
            p[2] = (float)(i - 1800) * 0.01f;
        }
    }
    check_against_brute(x, n, 1);
    free(x);
}

/* A larger cloud, checked on a sample of points. */
static void test_knn_large_sampled(void **state) {
    (void)state;
    sp_rng r;
    sp_rng_seed(&r, 3, 0);
    int n = 50000;
    float *x = malloc((size_t)n * 3 * sizeof *x);
    for (int i = 0; i < n; i++) { /* anisotropic: a thin slab */
        x[3 * i] = 10.0f * sp_rng_uniform(&r);
        x[3 * i + 1] = 2.0f * sp_rng_uniform(&r);
        x[3 * i + 2] = 0.01f * sp_rng_uniform(&r);
    }
    check_against_brute(x, n, 499);
    free(x);
}

static void test_knn_thread_independent(void **state) {
    (void)state;
    sp_rng r;
    sp_rng_seed(&r, 4, 0);
    int n = 30000;
    float *x = malloc((size_t)n * 3 * sizeof *x);
    float *a = malloc((size_t)n * sizeof *a), *b = malloc((size_t)n * sizeof *b);
    tu_fill_uniform(&r, x, (size_t)n * 3, -2.0f, 2.0f);
    for (int i = 0; i < n; i += 7) memcpy(x + 3 * (i / 2), x + 3 * i, 3 * sizeof(float)); /* some duplicates */
    int threads = omp_get_max_threads();
    omp_set_num_threads(1);
    sp_knn3_mean_dist2(x, n, a);
    omp_set_num_threads(threads > 1 ? threads : 2);
    sp_knn3_mean_dist2(x, n, b);
    omp_set_num_threads(threads);
    assert_memory_equal(a, b, (size_t)n * sizeof *a);
    free(x);
    free(a);
    free(b);
}

static void test_from_points_layout(void **state) {
    (void)state;
    sp_rng r;
    sp_rng_seed(&r, 5, 0);
    int n = 500;
    float *x = malloc((size_t)n * 3 * sizeof *x);
    uint8_t *rgb = malloc((size_t)n * 3);
    tu_fill_uniform(&r, x, (size_t)n * 3, -1.0f, 1.0f);
    for (int i = 0; i < n * 3; i++) rgb[i] = (uint8_t)(sp_rng_u32(&r) & 255u);
    rgb[0] = 0, rgb[1] = 255, rgb[2] = 128;
    sp_gaussians g;
    assert_int_equal(sp_init_from_points(&g, x, rgb, n, 3, 0.1f, 0.0f), 0);
    assert_int_equal(g.n, n);
    assert_int_equal(g.sh_degree, 3);
    assert_int_equal(g.K, 16);
    assert_true(sp_gaussians_finite(&g));
    for (int i = 0; i < n; i++) {
        assert_memory_equal(g.means + 3 * i, x + 3 * i, 3 * sizeof(float));
        float want = logf(sqrtf(fmaxf(brute_knn3(x, n, i), 1e-7f)));
        for (int k = 0; k < 3; k++) assert_true(fabsf(g.log_scales[3 * i + k] - want) < 1e-5f);
        assert_true(g.quats[4 * i] == 1.0f && g.quats[4 * i + 1] == 0.0f && g.quats[4 * i + 2] == 0.0f &&
                    g.quats[4 * i + 3] == 0.0f);
        assert_true(fabsf(sp_sigmoidf(g.opacity_logits[i]) - 0.1f) < 1e-6f);
        const float *sh = g.sh + (size_t)i * 16 * 3;
        for (int c = 0; c < 3; c++) { /* DC colour round trip to 8 bits */
            float col = sh[c] * SP_SH_C0 + 0.5f;
            assert_int_equal((int)lrintf(col * 255.0f), rgb[3 * i + c]);
        }
        for (int k = 3; k < 16 * 3; k++) assert_true(sh[k] == 0.0f);
    }
    assert_true(fabsf(g.sh[0] - (-0.5f / SP_SH_C0)) < 1e-6f); /* black */
    assert_true(fabsf(g.sh[1] - (0.5f / SP_SH_C0)) < 1e-6f);  /* full */
    sp_gaussians_free(&g);

    /* fixed scale and no colours (grey) */
    assert_int_equal(sp_init_from_points(&g, x, NULL, n, 0, 0.5f, 0.02f), 0);
    assert_int_equal(g.K, 1);
    for (int i = 0; i < n; i++) {
        for (int k = 0; k < 3; k++) assert_true(fabsf(g.log_scales[3 * i + k] - logf(0.02f)) < 1e-6f);
        for (int c = 0; c < 3; c++) assert_true(g.sh[3 * i + c] == 0.0f);
        assert_true(fabsf(g.opacity_logits[i]) < 1e-6f);
    }
    sp_gaussians_free(&g);
    free(x);
    free(rgb);
}

static void test_random(void **state) {
    (void)state;
    float lo[3] = {-1.0f, 0.0f, 2.0f}, hi[3] = {1.0f, 0.5f, 2.25f};
    sp_gaussians a, b, c;
    assert_int_equal(sp_init_random(&a, 3000, lo, hi, 1, 0.1f, 0.0f, 42, NULL, 0), 0);
    assert_int_equal(sp_init_random(&b, 3000, lo, hi, 1, 0.1f, 0.0f, 42, NULL, 0), 0);
    assert_int_equal(sp_init_random(&c, 3000, lo, hi, 1, 0.1f, 0.0f, 43, NULL, 0), 0);
    assert_int_equal(a.n, 3000);
    assert_int_equal(a.K, 4);
    assert_memory_equal(a.means, b.means, 3000 * 3 * sizeof(float));
    assert_memory_equal(a.log_scales, b.log_scales, 3000 * 3 * sizeof(float));
    assert_memory_equal(a.sh, b.sh, 3000 * 4 * 3 * sizeof(float));
    assert_memory_equal(a.opacity_logits, b.opacity_logits, 3000 * sizeof(float));
    assert_true(memcmp(a.means, c.means, 3000 * 3 * sizeof(float)) != 0);
    /* inside the box, colours in [0, 1] with mean near 0.5, scales from the neighbour rule */
    double mean_col = 0;
    for (int i = 0; i < a.n; i++) {
        for (int k = 0; k < 3; k++) assert_true(a.means[3 * i + k] >= lo[k] && a.means[3 * i + k] <= hi[k]);
        for (int ch = 0; ch < 3; ch++) {
            float col = a.sh[(size_t)i * 12 + ch] * SP_SH_C0 + 0.5f;
            assert_true(col >= -1e-6f && col <= 1.0f + 1e-6f);
            mean_col += col;
        }
        for (int k = 3; k < 12; k++) assert_true(a.sh[(size_t)i * 12 + k] == 0.0f);
        float want = logf(sqrtf(fmaxf(brute_knn3(a.means, a.n, i), 1e-7f)));
        assert_true(fabsf(a.log_scales[3 * i] - want) < 1e-5f);
    }
    mean_col /= 3.0 * a.n;
    assert_true(fabs(mean_col - 0.5) < 0.02);
    sp_gaussians_free(&a);
    sp_gaussians_free(&b);
    sp_gaussians_free(&c);

    /* a flat box (min == max on one axis) is allowed */
    float flat_hi[3] = {1.0f, 0.5f, 2.0f};
    assert_int_equal(sp_init_random(&a, 100, lo, flat_hi, 0, 0.1f, 0.0f, 1, NULL, 0), 0);
    for (int i = 0; i < a.n; i++) assert_true(a.means[3 * i + 2] == 2.0f);
    assert_true(sp_gaussians_finite(&a));
    sp_gaussians_free(&a);
}

static void test_degenerate_clouds(void **state) {
    (void)state;
    sp_gaussians g;
    /* one point: the lone scale (or the fixed one) */
    float one[3] = {1.0f, 2.0f, 3.0f};
    assert_int_equal(sp_init_from_points(&g, one, NULL, 1, 0, 0.1f, 0.0f), 0);
    assert_int_equal(g.n, 1);
    assert_true(fabsf(g.log_scales[0] - logf(SP_INIT_LONE_SCALE)) < 1e-6f);
    sp_gaussians_free(&g);
    assert_int_equal(sp_init_from_points(&g, one, NULL, 1, 0, 0.1f, 0.3f), 0);
    assert_true(fabsf(g.log_scales[0] - logf(0.3f)) < 1e-6f);
    sp_gaussians_free(&g);
    /* two and three points: the mean over the n - 1 others */
    float two[6] = {0, 0, 0, 3, 4, 0};
    assert_int_equal(sp_init_from_points(&g, two, NULL, 2, 0, 0.1f, 0.0f), 0);
    assert_true(fabsf(g.log_scales[0] - logf(5.0f)) < 1e-5f && fabsf(g.log_scales[3] - logf(5.0f)) < 1e-5f);
    sp_gaussians_free(&g);
    float three[9] = {0, 0, 0, 1, 0, 0, 3, 0, 0};
    assert_int_equal(sp_init_from_points(&g, three, NULL, 3, 0, 0.1f, 0.0f), 0);
    assert_true(fabsf(g.log_scales[0] - logf(sqrtf((1.0f + 9.0f) / 2.0f))) < 1e-5f);
    assert_true(fabsf(g.log_scales[3] - logf(sqrtf((1.0f + 4.0f) / 2.0f))) < 1e-5f);
    assert_true(fabsf(g.log_scales[6] - logf(sqrtf((4.0f + 9.0f) / 2.0f))) < 1e-5f);
    sp_gaussians_free(&g);
    /* all points identical: the floor */
    float *same = malloc(1000 * 3 * sizeof *same);
    for (int i = 0; i < 1000; i++) same[3 * i] = 0.25f, same[3 * i + 1] = -1.0f, same[3 * i + 2] = 7.0f;
    assert_int_equal(sp_init_from_points(&g, same, NULL, 1000, 0, 0.1f, 0.0f), 0);
    for (int i = 0; i < 1000 * 3; i++) assert_true(fabsf(g.log_scales[i] - logf(sqrtf(1e-7f))) < 1e-5f);
    sp_gaussians_free(&g);
    /* a pair of duplicates far from the rest: two neighbours at 0, one far away */
    float dup[12] = {0, 0, 0, 0, 0, 0, 10, 0, 0, 0, 0, 2};
    assert_int_equal(sp_init_from_points(&g, dup, NULL, 4, 0, 0.1f, 0.0f), 0);
    assert_true(fabsf(g.log_scales[0] - logf(sqrtf((0.0f + 4.0f + 100.0f) / 3.0f))) < 1e-5f);
    sp_gaussians_free(&g);
    free(same);
}

static void test_bad_inputs(void **state) {
    (void)state;
    sp_gaussians g;
    float pts[12] = {0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1};
    float lo[3] = {0, 0, 0}, hi[3] = {1, 1, 1};
    assert_int_equal(sp_init_from_points(&g, pts, NULL, 0, 0, 0.1f, 0.0f), -1);
    tu_assert_contains(sp_last_error(), "no points to initialize from (n = 0)");
    assert_int_equal(sp_init_from_points(&g, pts, NULL, -3, 0, 0.1f, 0.0f), -1);
    tu_assert_contains(sp_last_error(), "n = -3");
    assert_int_equal(sp_init_from_points(&g, NULL, NULL, 4, 0, 0.1f, 0.0f), -1);
    tu_assert_contains(sp_last_error(), "no point coordinates");
    assert_int_equal(sp_init_from_points(&g, pts, NULL, 4, 4, 0.1f, 0.0f), -1);
    tu_assert_contains(sp_last_error(), "SH degree 4");
    assert_int_equal(sp_init_from_points(&g, pts, NULL, 4, 0, 1.0f, 0.0f), -1);
    tu_assert_contains(sp_last_error(), "opacity 1 is not in (0, 1)");
    assert_int_equal(sp_init_from_points(&g, pts, NULL, 4, 0, 0.0f, 0.0f), -1);
    tu_assert_contains(sp_last_error(), "opacity 0");
    assert_int_equal(sp_init_from_points(&g, pts, NULL, 4, 0, 0.1f, -1.0f), -1);
    tu_assert_contains(sp_last_error(), "fixed scale -1");
    assert_int_equal(sp_init_from_points(&g, pts, NULL, 4, 0, 0.1f, NAN), -1);
    tu_assert_contains(sp_last_error(), "fixed scale");
    pts[7] = INFINITY;
    assert_int_equal(sp_init_from_points(&g, pts, NULL, 4, 0, 0.1f, 0.0f), -1);
    tu_assert_contains(sp_last_error(), "point 2 is not finite");
    pts[7] = 1.0f;
    assert_int_equal(sp_init_random(&g, 0, lo, hi, 0, 0.1f, 0.0f, 1, NULL, 0), -1);
    tu_assert_contains(sp_last_error(), "count = 0");
    hi[1] = -1.0f;
    assert_int_equal(sp_init_random(&g, 10, lo, hi, 0, 0.1f, 0.0f, 1, NULL, 0), -1);
    tu_assert_contains(sp_last_error(), "not a finite box");
    hi[1] = NAN;
    assert_int_equal(sp_init_random(&g, 10, lo, hi, 0, 0.1f, 0.0f, 1, NULL, 0), -1);
    tu_assert_contains(sp_last_error(), "not a finite box");
    /* the store is usable after a rejected call followed by a good one */
    assert_int_equal(sp_init_from_points(&g, pts, NULL, 4, 0, 0.1f, 0.0f), 0);
    assert_int_equal(g.n, 4);
    sp_gaussians_free(&g);
}

/* Camera at C looking along f (unit), OpenCV axes, world up = +z. */
static void camera_looking(sp_camera *c, const float C[3], const float f[3]) {
    memset(c, 0, sizeof *c);
    c->width = c->height = 64;
    c->fx = c->fy = 70.0f, c->cx = c->cy = 32.0f;
    float r[3] = {f[1], -f[0], 0.0f}; /* f x (0,0,1) */
    float rl = sqrtf(r[0] * r[0] + r[1] * r[1]);
    for (int k = 0; k < 3; k++) r[k] /= rl;
    float dn[3] = {f[1] * r[2] - f[2] * r[1], f[2] * r[0] - f[0] * r[2], f[0] * r[1] - f[1] * r[0]};
    for (int k = 0; k < 3; k++) c->R[k] = r[k], c->R[3 + k] = dn[k], c->R[6 + k] = f[k];
    for (int k = 0; k < 3; k++) c->t[k] = -(c->R[3 * k] * C[0] + c->R[3 * k + 1] * C[1] + c->R[3 * k + 2] * C[2]);
}

static void test_focus(void **state) {
    (void)state;
    sp_dataset d;
    memset(&d, 0, sizeof d);
    d.train.n = 12;
    d.train.views = SP_NEW(sp_view, 12);
    const float P[3] = {1.0f, -2.0f, 0.5f};
    /* an arc of cameras at distance 4 looking at P (a phone capture of an object) */
    for (int i = 0; i < 12; i++) {
        float az = 0.25f * i, el = 0.3f + 0.02f * i;
        float dir[3] = {cosf(el) * cosf(az), cosf(el) * sinf(az), sinf(el)};
        float C[3], f[3];
        for (int k = 0; k < 3; k++) C[k] = P[k] + 4.0f * dir[k], f[k] = -dir[k];
        camera_looking(&d.train.views[i].cam, C, f);
    }
    float focus[3], dist;
    assert_int_equal(sp_dataset_focus(&d, focus, &dist), 0);
    for (int k = 0; k < 3; k++) assert_float_equal(focus[k], P[k], 1e-4);
    assert_float_equal(dist, 4.0f, 1e-4);
    /* forward-facing: parallel axes have no focus point */
    for (int i = 0; i < 12; i++) {
        float C[3] = {0.3f * (i % 4), 0.0f, 0.2f * (i / 4)}, f[3] = {0.0f, 1.0f, 0.0f};
        camera_looking(&d.train.views[i].cam, C, f);
    }
    focus[0] = 123.0f;
    assert_int_equal(sp_dataset_focus(&d, focus, &dist), -1);
    assert_true(focus[0] == 123.0f);
    /* cameras looking away from each other: the least-squares point lies behind them */
    for (int i = 0; i < 12; i++) {
        float az = 0.5f * i, dir[3] = {cosf(az), sinf(az), 0.1f};
        float n = sqrtf(dir[0] * dir[0] + dir[1] * dir[1] + dir[2] * dir[2]);
        for (int k = 0; k < 3; k++) dir[k] /= n;
        float C[3] = {2.0f * dir[0], 2.0f * dir[1], 2.0f * dir[2]};
        camera_looking(&d.train.views[i].cam, C, dir);
    }
    assert_int_equal(sp_dataset_focus(&d, focus, &dist), -1);
    free(d.train.views);
}

/* Random points weighted by the views that see them: every point is seen by some camera, they
 * gather where the views overlap, and the draw is deterministic in the seed. */
static void test_random_by_views(void **state) {
    (void)state;
    enum { NC = 12, N = 4000 };
    sp_camera cams[NC];
    const float P[3] = {1.0f, -2.0f, 0.5f};
    for (int i = 0; i < NC; i++) {
        float az = 0.25f * i, el = 0.3f;
        float dir[3] = {cosf(el) * cosf(az), cosf(el) * sinf(az), sinf(el)};
        float C[3], f[3];
        for (int k = 0; k < 3; k++) C[k] = P[k] + 4.0f * dir[k], f[k] = -dir[k];
        camera_looking(&cams[i], C, f);
    }
    float lo[3], hi[3];
    for (int k = 0; k < 3; k++) lo[k] = P[k] - 4.0f, hi[k] = P[k] + 4.0f;
    sp_gaussians a, b, u;
    assert_int_equal(sp_init_random(&a, N, lo, hi, 0, 0.1f, 0.0f, 5, cams, NC), 0);
    assert_int_equal(sp_init_random(&b, N, lo, hi, 0, 0.1f, 0.0f, 5, cams, NC), 0);
    assert_int_equal(sp_init_random(&u, N, lo, hi, 0, 0.1f, 0.0f, 5, NULL, 0), 0);
    assert_memory_equal(a.means, b.means, sizeof(float) * 3 * N);
    int central[2] = {0, 0};
    for (int i = 0; i < N; i++) {
        const float *x = a.means + 3 * i;
        int seen = 0;
        for (int c = 0; c < NC; c++) {
            const sp_camera *k = &cams[c];
            float q[3];
            for (int r = 0; r < 3; r++)
                q[r] = k->R[3 * r] * x[0] + k->R[3 * r + 1] * x[1] + k->R[3 * r + 2] * x[2] + k->t[r];
            float px = k->fx * q[0] / q[2] + k->cx, py = k->fy * q[1] / q[2] + k->cy;
            seen += q[2] > 0 && px >= 0 && px < k->width && py >= 0 && py < k->height;
        }
        assert_true(seen > 0);
        for (int s = 0; s < 2; s++) {
            const float *y = (s ? u.means : a.means) + 3 * i;
            int in = 1;
            for (int k = 0; k < 3; k++) in &= fabsf(y[k] - P[k]) < 1.0f;
            central[s] += in;
        }
    }
    /* the central eighth-width cube holds 1/64 of uniform points; weighted ones gather there */
    printf("central cube: %d weighted, %d uniform of %d\n", central[0], central[1], N);
    assert_true(central[0] > 2 * central[1]);
    sp_gaussians_free(&a), sp_gaussians_free(&b), sp_gaussians_free(&u);
}

/* Thousands of cameras: SP_INIT_MAX_CAMS evenly spaced ones weigh the points, exactly as when
 * that subset is given (a 10,000-view capture starts in bounded time). */
static void test_random_many_views(void **state) {
    (void)state;
    enum { NC = 3000, N = 2000 };
    sp_camera *cams = sp_malloc(sizeof(sp_camera) * NC), some[SP_INIT_MAX_CAMS];
    const float P[3] = {0.0f, 0.0f, 0.0f};
    for (int i = 0; i < NC; i++) {
        float az = 6.2831853f * (float)i / NC, el = 0.2f + 0.5f * (float)(i % 7) / 7.0f;
        float dir[3] = {cosf(el) * cosf(az), cosf(el) * sinf(az), sinf(el)};
        float C[3], f[3];
        for (int k = 0; k < 3; k++) C[k] = P[k] + 4.0f * dir[k], f[k] = -dir[k];
        camera_looking(&cams[i], C, f);
    }
    for (int j = 0; j < SP_INIT_MAX_CAMS; j++) some[j] = cams[(int64_t)j * NC / SP_INIT_MAX_CAMS];
    float lo[3] = {-4, -4, -4}, hi[3] = {4, 4, 4};
    sp_gaussians a, b;
    assert_int_equal(sp_init_random(&a, N, lo, hi, 0, 0.1f, 0.0f, 9, cams, NC), 0);
    assert_int_equal(sp_init_random(&b, N, lo, hi, 0, 0.1f, 0.0f, 9, some, SP_INIT_MAX_CAMS), 0);
    assert_memory_equal(a.means, b.means, sizeof(float) * 3 * N);
    sp_gaussians_free(&a), sp_gaussians_free(&b);
    free(cams);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_many_views),
        cmocka_unit_test(test_knn_uniform),        cmocka_unit_test(test_knn_hard_clouds),
        cmocka_unit_test(test_knn_large_sampled),  cmocka_unit_test(test_knn_thread_independent),
        cmocka_unit_test(test_from_points_layout), cmocka_unit_test(test_random),
        cmocka_unit_test(test_degenerate_clouds),  cmocka_unit_test(test_bad_inputs),
        cmocka_unit_test(test_focus), cmocka_unit_test(test_random_by_views),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
