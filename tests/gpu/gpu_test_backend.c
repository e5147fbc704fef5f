/* gpu_test_backend.c — the CUDA backend through backend.h: training on a synthetic scene lowers
 * the loss, deterministic mode repeats bit for bit, refine (prune order, clones, splits, the
 * capacity cap) follows docs/math.md, profiling rows add up, and errors are reported, not crashed
 * on. Fresh random inputs every run (seed printed; SPLAT_TEST_SEED=<n> repeats). Without a GPU
 * every test prints "no GPU" and is skipped. */
#include "testutil.h"

#include <math.h>
#include <time.h>

#include "backend/backend.h"

#ifdef SPLAT_HAVE_CUDA
static uint64_t g_seed;
static int g_have_gpu;

#define SKIP_WITHOUT_GPU()              \
    do {                                \
        if (!g_have_gpu) {              \
            printf("no GPU: skipped\n"); \
            skip();                     \
        }                               \
    } while (0)

static int report(int ok, const char *what, const char *detail) {
    printf("%s %s: %s\n", ok ? "PASS" : "FAIL", what, detail);
    fflush(stdout);
    return ok;
}

static sp_backend *make_backend(int deterministic, int profile) {
    sp_backend_config cfg = {0, deterministic, profile, 0, 0};
    sp_backend *b = sp_cuda_backend_create(&cfg);
    if (!b) printf("backend creation failed: %s\n", sp_last_error());
    assert_non_null(b);
    return b;
}

/* Camera at distance d around the origin, looking at it (OpenCV axes, world up = +z). */
static void look_at(sp_camera *c, int w, int h, float az, float el, float d) {
    memset(c, 0, sizeof *c);
    c->width = w, c->height = h;
    c->fx = c->fy = 1.1f * w;
    c->cx = 0.5f * w, c->cy = 0.5f * h;
    float C[3] = {d * cosf(el) * cosf(az), d * cosf(el) * sinf(az), d * sinf(el)};
    float f[3] = {-C[0] / d, -C[1] / d, -C[2] / d};
    float r[3] = {f[1] * 1.0f - f[2] * 0.0f, f[2] * 0.0f - f[0] * 1.0f, 0.0f}; /* f x (0,0,1) */
    float rl = sqrtf(r[0] * r[0] + r[1] * r[1] + r[2] * r[2]);
    for (int k = 0; k < 3; k++) r[k] /= rl;
    float dn[3] = {f[1] * r[2] - f[2] * r[1], f[2] * r[0] - f[0] * r[2], f[0] * r[1] - f[1] * r[0]};
    for (int k = 0; k < 3; k++) c->R[k] = r[k], c->R[3 + k] = dn[k], c->R[6 + k] = f[k];
    for (int k = 0; k < 3; k++) c->t[k] = -(c->R[3 * k] * C[0] + c->R[3 * k + 1] * C[1] + c->R[3 * k + 2] * C[2]);
}

static void random_gaussians(sp_gaussians *g, sp_rng *r, int n, int deg, float spread) {
    sp_gaussians_init(g, n, deg);
    g->n = n;
    for (int i = 0; i < n; i++) {
        for (int k = 0; k < 3; k++) g->means[3 * i + k] = spread * (2.0f * sp_rng_uniform(r) - 1.0f);
        for (int k = 0; k < 3; k++) g->log_scales[3 * i + k] = logf(0.03f + 0.1f * sp_rng_uniform(r));
        for (int k = 0; k < 4; k++) g->quats[4 * i + k] = sp_rng_normal(r);
        g->opacity_logits[i] = -2.0f + 4.0f * sp_rng_uniform(r);
        for (int k = 0; k < 3 * g->K; k++) g->sh[3 * g->K * i + k] = (k < 3 ? 1.5f : 0.2f) * (sp_rng_uniform(r) - 0.5f);
    }
}

#define NVIEWS 4
typedef struct {
    sp_view views[NVIEWS];
} view_set;

/* Renders ground-truth Gaussians into 8-bit RGB views. */
static void make_views(view_set *vs, const sp_gaussians *gt, int w, int h) {
    sp_backend *b = make_backend(0, 0);
    assert_int_equal(b->ops->set_gaussians(b, gt, NULL, NULL), 0);
    float *rgb = sp_malloc((size_t)w * h * 3 * 4);
    float bg[3] = {1.0f, 1.0f, 1.0f};
    for (int v = 0; v < NVIEWS; v++) {
        sp_view *vw = &vs->views[v];
        memset(vw, 0, sizeof *vw);
        vw->name = sp_strfmt("synthetic_%d", v);
        look_at(&vw->cam, w, h, 1.57f * v + 0.3f, 0.35f, 4.0f);
        vw->channels = 3;
        vw->pixels = sp_malloc((size_t)w * h * 3);
        assert_int_equal(b->ops->render(b, &vw->cam, gt->sh_degree, bg, rgb), 0);
        for (size_t i = 0; i < (size_t)w * h * 3; i++) {
            float x = rgb[i] < 0.0f ? 0.0f : (rgb[i] > 1.0f ? 1.0f : rgb[i]);
            vw->pixels[i] = (uint8_t)(x * 255.0f + 0.5f);
        }
    }
    free(rgb);
    b->ops->destroy(b);
}

static void free_views(view_set *vs) {
    for (int v = 0; v < NVIEWS; v++) {
        free(vs->views[v].name);
        free(vs->views[v].pixels);
    }
}

static sp_step_args step_args(int step, int view) {
    sp_step_args a;
    memset(&a, 0, sizeof a);
    a.view = view;
    a.sh_degree = 1;
    a.bg[0] = a.bg[1] = a.bg[2] = 1.0f;
    a.ssim_weight = 0.2f;
    a.adam_step = step;
    a.beta1 = 0.9f, a.beta2 = 0.999f, a.eps = 1e-15f;
    /* faster than the training recipe, so a short test run moves visibly */
    a.lr.means = 0.004f, a.lr.log_scales = 0.01f, a.lr.quats = 0.002f, a.lr.opacity = 0.05f;
    a.lr.sh_dc = 0.01f, a.lr.sh_rest = 0.0005f;
    a.collect_stats = 1;
    return a;
}

static void test_train_and_profile(void **state) {
    (void)state;
    SKIP_WITHOUT_GPU();
    sp_rng r;
    sp_rng_seed(&r, g_seed, 1);
    sp_gaussians gt, init;
    random_gaussians(&gt, &r, 400, 1, 0.8f);
    random_gaussians(&init, &r, 400, 1, 0.8f);
    view_set vs;
    make_views(&vs, &gt, 96, 80);
    sp_backend *b = make_backend(0, 1);
    assert_int_equal(b->ops->upload_views(b, vs.views, NVIEWS, SP_ALPHA_STRAIGHT), 0);
    assert_int_equal(b->ops->set_gaussians(b, &init, NULL, NULL), 0);
    double first = 0.0, last = 0.0;
    int steps = 0, total = 300;
    for (int s = 1; s <= total; s++) {
        sp_step_args a = step_args(s, s % NVIEWS);
        assert_int_equal(b->ops->train_step(b, &a), 0);
        if (s == 20) {
            assert_int_equal(b->ops->take_loss(b, &first, &steps), 0);
            assert_int_equal(steps, 20);
        }
    }
    assert_int_equal(b->ops->take_loss(b, &last, &steps), 0);
    char buf[160];
    snprintf(buf, sizeof buf, "mean loss steps 1-20 %.5f, steps 21-%d %.5f", first, total, last);
    int ok = report(isfinite(first) && isfinite(last) && last < 0.9 * first, "train loss decreases", buf);
    ok &= report(b->ops->params_finite(b) == 1, "params finite", "after training");
    sp_profile p;
    assert_int_equal(b->ops->get_profile(b, &p), 0);
    double sum = 0.0;
    int all_positive = 1;
    for (int i = 0; i < p.num_stages; i++) {
        printf("INFO profile %-16s %9.3f ms\n", p.name[i], p.ms[i]);
        sum += p.ms[i];
        if (strcmp(p.name[i], "refine") && !(p.ms[i] > 0.0)) all_positive = 0;
    }
    snprintf(buf, sizeof buf, "rows %.4f ms, busy %.4f ms, calls %ld, peak %lld bytes", sum, p.busy_ms, p.calls,
             (long long)p.peak_bytes);
    ok &= report(fabs(sum - p.busy_ms) <= 1e-9 * fmax(1.0, sum) && p.calls == total && p.peak_bytes > 0 &&
                     all_positive,
                 "profile", buf);
    b->ops->destroy(b);
    free_views(&vs);
    sp_gaussians_free(&gt);
    sp_gaussians_free(&init);
    assert_true(ok);
}

static int stores_equal(const sp_gaussians *a, const sp_gaussians *b) {
    if (a->n != b->n || a->K != b->K) return 0;
    size_t n = (size_t)a->n;
    return !memcmp(a->means, b->means, n * 12) && !memcmp(a->log_scales, b->log_scales, n * 12) &&
           !memcmp(a->quats, b->quats, n * 16) && !memcmp(a->opacity_logits, b->opacity_logits, n * 4) &&
           !memcmp(a->sh, b->sh, n * 12 * (size_t)a->K);
}

static void test_deterministic(void **state) {
    (void)state;
    SKIP_WITHOUT_GPU();
    sp_rng r;
    sp_rng_seed(&r, g_seed, 2);
    sp_gaussians gt, init, out[2];
    random_gaussians(&gt, &r, 300, 1, 0.8f);
    random_gaussians(&init, &r, 600, 1, 0.8f);
    view_set vs;
    make_views(&vs, &gt, 80, 64);
    double loss[2];
    memset(out, 0, sizeof out);
    for (int k = 0; k < 2; k++) {
        sp_backend *b = make_backend(1, 0);
        assert_int_equal(b->ops->upload_views(b, vs.views, NVIEWS, SP_ALPHA_STRAIGHT), 0);
        assert_int_equal(b->ops->set_gaussians(b, &init, NULL, NULL), 0);
        for (int s = 1; s <= 40; s++) {
            sp_step_args a = step_args(s, s % NVIEWS);
            assert_int_equal(b->ops->train_step(b, &a), 0);
        }
        sp_refine_args ra = {1, 1e-4f, 0.05f, 2, 1.6f, 0.005f, 0.0f, 0.0f, 0.01f, 0.0f, 2000, 7};
        sp_refine_result rr;
        assert_int_equal(b->ops->refine(b, &ra, &rr), 0);
        for (int s = 41; s <= 60; s++) {
            sp_step_args a = step_args(s, s % NVIEWS);
            assert_int_equal(b->ops->train_step(b, &a), 0);
        }
        int steps;
        assert_int_equal(b->ops->take_loss(b, &loss[k], &steps), 0);
        assert_int_equal(b->ops->get_gaussians(b, &out[k], NULL, NULL), 0);
        b->ops->destroy(b);
    }
    char buf[160];
    snprintf(buf, sizeof buf, "two runs: %d / %d Gaussians, loss %.9g / %.9g", out[0].n, out[1].n, loss[0], loss[1]);
    int ok = report(stores_equal(&out[0], &out[1]) && loss[0] == loss[1], "deterministic mode bit-identical", buf);
    for (int k = 0; k < 2; k++) sp_gaussians_free(&out[k]);
    free_views(&vs);
    sp_gaussians_free(&gt);
    sp_gaussians_free(&init);
    assert_true(ok);
}

static sp_refine_args refine_none(void) {
    sp_refine_args a;
    memset(&a, 0, sizeof a);
    a.split_count = 2;
    a.split_shrink = 1.6f;
    a.seed = 11;
    return a;
}

static void test_refine_prune_and_reset(void **state) {
    (void)state;
    SKIP_WITHOUT_GPU();
    sp_rng r;
    sp_rng_seed(&r, g_seed, 3);
    sp_gaussians g, out;
    random_gaussians(&g, &r, 1000, 2, 1.0f);
    memset(&out, 0, sizeof out);
    sp_backend *b = make_backend(0, 0);
    assert_int_equal(b->ops->set_gaussians(b, &g, NULL, NULL), 0);
    sp_refine_args a = refine_none();
    a.prune_opacity = 0.5f;
    a.prune_world_scale = 0.1f;
    sp_refine_result res;
    assert_int_equal(b->ops->refine(b, &a, &res), 0);
    assert_int_equal(b->ops->get_gaussians(b, &out, NULL, NULL), 0);
    /* expected survivors, in original order */
    int ok = 1, j = 0;
    for (int i = 0; i < g.n; i++) {
        float sig = sp_sigmoidf(g.opacity_logits[i]);
        float ms = fmaxf(expf(g.log_scales[3 * i]), fmaxf(expf(g.log_scales[3 * i + 1]), expf(g.log_scales[3 * i + 2])));
        if (sig < 0.5f || ms > 0.1f) continue;
        if (j >= out.n || memcmp(out.means + 3 * j, g.means + 3 * i, 12) ||
            out.opacity_logits[j] != g.opacity_logits[i] || memcmp(out.sh + 3 * out.K * j, g.sh + 3 * g.K * i, 12 * g.K))
            ok = 0;
        j++;
    }
    char buf[160];
    snprintf(buf, sizeof buf, "%d -> %d (expected %d), pruned %d", g.n, out.n, j, res.pruned);
    ok = report(ok && j == out.n && res.n_after == out.n && res.pruned == g.n - j && res.n_before == g.n,
                "refine prune keeps survivors in order", buf);
    /* reset: sigma = min(sigma, 0.6) */
    a = refine_none();
    a.opacity_reset = 0.6f;
    assert_int_equal(b->ops->refine(b, &a, &res), 0);
    sp_gaussians out2;
    memset(&out2, 0, sizeof out2);
    assert_int_equal(b->ops->get_gaussians(b, &out2, NULL, NULL), 0);
    double worst = 0.0;
    for (int i = 0; i < out2.n; i++) {
        double want = fmin(sp_sigmoidf(out.opacity_logits[i]), 0.6);
        worst = fmax(worst, fabs(sp_sigmoidf(out2.opacity_logits[i]) - want));
    }
    snprintf(buf, sizeof buf, "max |sigma - min(sigma, 0.6)| = %.3g (tol 1e-6), n %d -> %d", worst, out.n, out2.n);
    ok &= report(worst <= 1e-6 && out2.n == out.n, "refine opacity reset", buf);
    b->ops->destroy(b);
    sp_gaussians_free(&g);
    sp_gaussians_free(&out);
    sp_gaussians_free(&out2);
    assert_true(ok);
}

static void test_refine_clone_split_capacity(void **state) {
    (void)state;
    SKIP_WITHOUT_GPU();
    sp_rng r;
    sp_rng_seed(&r, g_seed, 4);
    sp_gaussians g, out;
    random_gaussians(&g, &r, 500, 1, 1.0f);
    for (int i = 0; i < g.n; i++) g.opacity_logits[i] = 2.0f; /* nobody pruned */
    memset(&out, 0, sizeof out);
    int ok = 1;
    char buf[200];
    sp_refine_result res;
    /* threshold 0: every Gaussian is a candidate (mean gradient >= 0 even without statistics) */
    for (int mode = 0; mode < 3; mode++) {
        sp_backend *b = make_backend(0, 0);
        assert_int_equal(b->ops->set_gaussians(b, &g, NULL, NULL), 0);
        sp_refine_args a = refine_none();
        a.densify = 1;
        a.grad_threshold = 0.0f;
        a.clone_max_scale = mode == 1 ? 0.0f : 1e9f; /* 0: clone, 1: split, 2: clone under a cap */
        a.capacity = mode == 2 ? g.n + 37 : 10 * g.n;
        assert_int_equal(b->ops->refine(b, &a, &res), 0);
        assert_int_equal(b->ops->get_gaussians(b, &out, NULL, NULL), 0);
        if (mode == 0) {
            int good = out.n == 2 * g.n && res.cloned == g.n;
            for (int i = 0; good && i < g.n; i++)
                good = !memcmp(out.means + 3 * i, g.means + 3 * i, 12) &&
                       !memcmp(out.means + 3 * (g.n + i), g.means + 3 * i, 12) &&
                       !memcmp(out.quats + 4 * (g.n + i), g.quats + 4 * i, 16);
            snprintf(buf, sizeof buf, "%d -> %d, cloned %d", g.n, out.n, res.cloned);
            ok &= report(good, "refine clone: originals then exact copies", buf);
        } else if (mode == 1) {
            double worst_mean = 0.0, worst_scale = 0.0;
            int good = out.n == 2 * g.n && res.split == g.n;
            for (int i = 0; good && i < g.n; i++) {
                sp_rng sr;
                sp_rng_seed(&sr, a.seed, (uint64_t)i);
                const float *q = g.quats + 4 * i;
                float ql = sqrtf(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
                float w = q[0] / ql, x = q[1] / ql, y = q[2] / ql, z = q[3] / ql;
                float R[9] = {1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y),
                              2 * (x * y + w * z),     1 - 2 * (x * x + z * z), 2 * (y * z - w * x),
                              2 * (x * z - w * y),     2 * (y * z + w * x), 1 - 2 * (x * x + y * y)};
                for (int c = 0; c < 2; c++) {
                    int d = 2 * i + c;
                    float e[3];
                    for (int k = 0; k < 3; k++) e[k] = sp_rng_normal(&sr) * expf(g.log_scales[3 * i + k]);
                    for (int k = 0; k < 3; k++) {
                        float want = g.means[3 * i + k] + R[3 * k] * e[0] + R[3 * k + 1] * e[1] + R[3 * k + 2] * e[2];
                        worst_mean = fmax(worst_mean, fabs(out.means[3 * d + k] - want));
                        worst_scale = fmax(worst_scale,
                                           fabs(out.log_scales[3 * d + k] - (g.log_scales[3 * i + k] - logf(1.6f))));
                    }
                }
            }
            snprintf(buf, sizeof buf, "%d -> %d, split %d, max mean err %.3g (tol 1e-5), max log-scale err %.3g", g.n,
                     out.n, res.split, worst_mean, worst_scale);
            ok &= report(good && worst_mean <= 1e-5 && worst_scale <= 1e-6, "refine split: children from (seed, index)",
                         buf);
        } else {
            snprintf(buf, sizeof buf, "capacity %d: %d -> %d, cloned %d", a.capacity, g.n, out.n, res.cloned);
            ok &= report(out.n == a.capacity && res.cloned == 37, "refine capacity cap", buf);
        }
        b->ops->destroy(b);
    }
    sp_gaussians_free(&g);
    sp_gaussians_free(&out);
    assert_true(ok);
}

static void test_errors(void **state) {
    (void)state;
    SKIP_WITHOUT_GPU();
    sp_backend_config cfg = {0, 0, 0, 999, 0};
    assert_null(sp_cuda_backend_create(&cfg));
    tu_assert_contains(sp_last_error(), "device 999 does not exist");
    sp_backend *b = make_backend(0, 0);
    sp_step_args a = step_args(1, 3);
    assert_int_equal(b->ops->train_step(b, &a), -1);
    tu_assert_contains(sp_last_error(), "view 3 out of range");
    sp_view v;
    memset(&v, 0, sizeof v);
    v.name = "two_channel.png";
    v.channels = 2;
    assert_int_equal(b->ops->upload_views(b, &v, 1, SP_ALPHA_STRAIGHT), -1);
    tu_assert_contains(sp_last_error(), "two_channel.png: 2 channels");
    /* out of device memory: a clear error, no crash */
    sp_gaussians g;
    sp_rng r;
    sp_rng_seed(&r, g_seed, 5);
    random_gaussians(&g, &r, 100, 0, 1.0f);
    assert_int_equal(b->ops->set_gaussians(b, &g, NULL, NULL), 0);
    sp_camera huge;
    look_at(&huge, 200000, 200000, 0.0f, 0.3f, 4.0f);
    float dummy[3] = {0.0f, 0.0f, 0.0f}, bg[3] = {0.0f, 0.0f, 0.0f};
    assert_int_equal(b->ops->render(b, &huge, 0, bg, dummy), -1);
    printf("INFO out-of-memory message: %s\n", sp_last_error());
    tu_assert_contains(sp_last_error(), "out of device memory");
    tu_assert_contains(sp_last_error(), "100 Gaussians");
    /* the backend still works afterwards */
    sp_camera small;
    look_at(&small, 32, 32, 0.0f, 0.3f, 4.0f);
    float *img = sp_malloc(32 * 32 * 3 * sizeof(float));
    assert_int_equal(b->ops->render(b, &small, 0, bg, img), 0);
    free(img);
    sp_gaussians_free(&g);
    b->ops->destroy(b);
    printf("PASS errors: bad device, bad view index, bad channel count, out of memory reported\n");
}

int main(void) {
    const char *e = getenv("SPLAT_TEST_SEED");
    g_seed = (e && *e) ? strtoull(e, NULL, 10) : (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 16);
    g_have_gpu = sp_cuda_device_count() > 0;
    if (!g_have_gpu) printf("no GPU: every CUDA backend test is skipped\n");
    else printf("backend test seed %llu\n", (unsigned long long)g_seed);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_train_and_profile),
        cmocka_unit_test(test_deterministic),
        cmocka_unit_test(test_refine_prune_and_reset),
        cmocka_unit_test(test_refine_clone_split_capacity),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
#else
int main(void) {
    printf("no GPU: built without CUDA, backend tests skipped\n");
    return 0;
}
#endif
