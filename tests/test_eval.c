/* test_eval.c — sp_eval_views: every schedule (render then score, as the cpu backend does; render
 * the next batch while the last one is scored, as GPU backends do; scores from the backend's
 * ops->score, as the cuda backend gives them; several batch sizes) gives each
 * view exactly the PSNR and SSIM of the plain recipe (render, composite, quantize both, score) and
 * writes byte-identical pictures holding exactly those 8-bit images; ground truths of every
 * (value, alpha) pair in both alpha modes; streamed views; renders of the next batch never
 * land in the buffers of the batch being scored; errors: the first failing view's file
 * is named whatever the schedule, a failed render is reported after the scores before it, renders
 * stay on the calling thread, and a failed evaluation leaves its result empty. */
#include "testutil.h"

#include <pthread.h>

#include "backend/backend.h"
#include "eval/eval.h"
#include "eval/metrics.h"
#include "io/image.h"
#include "io/loader.h"
#include "io/viewload.h"
#include "scene/synth.h"

/* The schedules compared: overlap, views per batch, scored through ops->score (a GPU backend's
 * device scores, here host_score: the path the evaluation takes for them). */
static const int k_sched[][3] = {{0, SP_EVAL_BATCH, 0}, {0, 3, 0}, {1, SP_EVAL_BATCH, 0}, {1, 3, 0}, {1, 1, 0},
                                 {0, SP_EVAL_BATCH, 1}, {0, 3, 1}, {0, 1, 1}};
#define NSCHED ((int)(sizeof k_sched / sizeof *k_sched))

/* What ops->score gives (backend.h), from the backend's own render and the host's metrics. */
static int host_score(sp_backend *b, const sp_camera *cam, int sh_degree, const float bg[3], const uint8_t *g8,
                      uint8_t *p8, uint64_t *sse, double *ssim) {
    int w = cam->width, h = cam->height;
    size_t n = (size_t)w * h * 3;
    float *pred = sp_malloc(n * sizeof(float));
    uint8_t *q = sp_malloc(n);
    int rc = b->ops->render(b, cam, sh_degree, bg, pred);
    if (rc == 0) {
        sp_image_quantize(pred, w, h, q);
        uint64_t s = 0;
        for (size_t i = 0; i < n; i++) s += (uint64_t)(((int)q[i] - g8[i]) * ((int)q[i] - g8[i]));
        *sse = s;
        *ssim = sp_ssim_u8(q, g8, w, h);
        if (p8) memcpy(p8, q, n);
    }
    free(pred);
    free(q);
    return rc;
}

/* sp_eval_views_sched under schedule c (b scores through host_score when the schedule says so). */
static int eval_sched_cancel(sp_backend *b, const sp_split *s, sp_alpha_mode alpha, int sh_degree, const float bg[3],
                             const char *dir, int c, const sp_eval_cancel *cancel, sp_eval_result *r) {
    const sp_backend_ops *own = b->ops;
    sp_backend_ops scored = *own;
    scored.score = host_score;
    if (k_sched[c][2]) b->ops = &scored;
    int rc = sp_eval_views_sched(b, s, alpha, sh_degree, bg, dir, k_sched[c][0], k_sched[c][1], cancel, r);
    b->ops = own;
    return rc;
}

static int eval_sched(sp_backend *b, const sp_split *s, sp_alpha_mode alpha, int sh_degree, const float bg[3],
                      const char *dir, int c, sp_eval_result *r) {
    return eval_sched_cancel(b, s, alpha, sh_degree, bg, dir, c, NULL, r);
}

/* A synthetic capture of n test views of w x h (RGBA, soft alpha edges). */
static char *make_capture(int w, int h, int n) {
    char *dir = tu_tmpdir();
    assert_non_null(dir);
    sp_synth_opts o;
    sp_synth_defaults(&o);
    o.width = w, o.height = h;
    o.num_train = 1, o.num_val = 0, o.num_test = n;
    o.samples = 2;
    assert_int_equal(sp_synth_write(dir, &o), 0);
    return dir;
}

static void load(const char *dir, int pixels, sp_dataset *d) {
    sp_load_opts lo = {.downscale = 1, .threads = 1, .load_pixels = pixels, .header_only = !pixels};
    sp_problems probs = {0};
    int rc = sp_dataset_load(dir, "auto", &lo, d, &probs);
    if (rc) fail_msg("load %s: %s", dir, probs.n ? probs.items[0] : sp_last_error());
    sp_problems_free(&probs);
}

/* A cpu backend holding n random Gaussians of SH degree 1 around the origin (where the synthetic
 * capture's cameras and camera_at look). */
static sp_backend *make_backend(int n) {
    sp_backend_config bc = {.threads = 0};
    sp_backend *b = sp_backend_create("cpu", &bc);
    assert_non_null(b);
    sp_gaussians g;
    sp_gaussians_init(&g, n, 1);
    g.n = n;
    sp_rng r;
    sp_rng_seed(&r, 11, 0);
    tu_fill_uniform(&r, g.means, (size_t)3 * n, -1.0f, 1.0f);
    tu_fill_uniform(&r, g.log_scales, (size_t)3 * n, -4.0f, -1.5f);
    tu_fill_uniform(&r, g.quats, (size_t)4 * n, -0.5f, 0.5f);
    tu_fill_uniform(&r, g.opacity_logits, n, -1.0f, 3.0f);
    tu_fill_uniform(&r, g.sh, (size_t)n * g.K * 3, -1.0f, 1.0f);
    assert_int_equal(b->ops->set_gaussians(b, &g, NULL, NULL), 0);
    sp_gaussians_free(&g);
    return b;
}

static sp_camera camera_at(int w, int h) { return tu_camera_z(w, h, 40.0f, 4.0f); }

/* An 8192 x 8 view whose pixel i holds channel values (i, i + 85, i + 170) mod 256 and, with 4
 * channels, alpha i / 256: every (value, alpha) pair in every channel. */
static sp_view all_pairs_view(int channels, const char *name) {
    sp_view v = {.name = sp_strdup(name), .path = sp_strdup(name), .cam = camera_at(8192, 8), .channels = channels};
    v.pixels = sp_malloc((size_t)8192 * 8 * channels);
    for (int i = 0; i < 8192 * 8; i++) {
        uint8_t *p = v.pixels + (size_t)i * channels;
        for (int k = 0; k < 3; k++) p[k] = (uint8_t)(i + 85 * k);
        if (channels == 4) p[3] = (uint8_t)(i >> 8);
    }
    return v;
}

/* The plain recipe for view v: 8-bit render and 8-bit composited ground truth, and their scores. */
static void reference(sp_backend *b, const sp_view *v, sp_alpha_mode alpha, const float bg[3], uint8_t **p8,
                      uint8_t **g8, double *psnr, double *ssim) {
    int w = v->cam.width, h = v->cam.height;
    size_t px = (size_t)w * h;
    float *pred = sp_malloc(px * 3 * sizeof(float)), *gt = sp_malloc(px * 3 * sizeof(float));
    assert_int_equal(b->ops->render(b, &v->cam, 1, bg, pred), 0);
    sp_view dv = *v;
    if (!v->pixels) assert_int_equal(sp_view_load_pixels(v, &dv.pixels), 0);
    sp_view_composite(&dv, alpha, bg, gt);
    if (!v->pixels) free(dv.pixels);
    *p8 = sp_malloc(px * 3);
    *g8 = sp_malloc(px * 3);
    sp_image_quantize(pred, w, h, *p8);
    sp_image_quantize(gt, w, h, *g8);
    *psnr = sp_psnr_u8(*p8, *g8, w, h);
    *ssim = sp_ssim_u8(*p8, *g8, w, h);
    free(pred);
    free(gt);
}

static char *picture_path(const char *dir, int i, const char *base) { return sp_strfmt("%s/%03d_%s.png", dir, i, base); }

/* Every schedule on split s: scores equal to the reference exactly, and pictures (too small for
 * labels: [prediction | ground truth] as they are) holding the reference's bytes. */
static void check_split(sp_backend *b, const sp_split *s, const char **bases, sp_alpha_mode alpha, const float bg[3]) {
    int n = s->n;
    uint8_t **p8 = sp_malloc(n * sizeof *p8), **g8 = sp_malloc(n * sizeof *g8);
    double *psnr = sp_malloc(n * sizeof *psnr), *ssim = sp_malloc(n * sizeof *ssim);
    for (int i = 0; i < n; i++) reference(b, &s->views[i], alpha, bg, &p8[i], &g8[i], &psnr[i], &ssim[i]);
    for (int c = 0; c < NSCHED; c++) {
        char *dir = tu_tmpdir();
        sp_eval_result r;
        assert_int_equal(eval_sched(b, s, alpha, 1, bg, dir, c, &r), 0);
        assert_int_equal(r.n, n);
        double mean = 0.0;
        for (int i = 0; i < n; i++) {
            if (r.psnr[i] != psnr[i] || r.ssim[i] != ssim[i])
                fail_msg("schedule %d view %d: PSNR %.17g SSIM %.17g, reference %.17g %.17g", c, i, r.psnr[i],
                         r.ssim[i], psnr[i], ssim[i]);
            assert_string_equal(r.names[i], s->views[i].name);
            mean += psnr[i] / n;
            const sp_view *v = &s->views[i];
            int w = v->cam.width, h = v->cam.height;
            char *file = picture_path(dir, i, bases[i]);
            sp_image img;
            assert_int_equal(sp_image_load(file, &img), 0);
            assert_int_equal(img.width, 2 * w);
            assert_int_equal(img.height, h);
            assert_int_equal(img.channels, 3);
            for (int y = 0; y < h; y++) {
                assert_memory_equal(img.pixels + (size_t)y * 6 * w, p8[i] + (size_t)y * 3 * w, (size_t)3 * w);
                assert_memory_equal(img.pixels + (size_t)y * 6 * w + 3 * w, g8[i] + (size_t)y * 3 * w, (size_t)3 * w);
            }
            sp_image_free(&img);
            free(file);
        }
        assert_true(r.mean_psnr == mean);
        sp_eval_result_free(&r);
        tu_rm_rf(dir);
    }
    for (int i = 0; i < n; i++) free(p8[i]), free(g8[i]);
    free(p8), free(g8), free(psnr), free(ssim);
}

/* Synthetic views (in memory and streamed) and the all-pairs views, both alpha modes, white and
 * a coloured background: every schedule scores and draws exactly what the plain recipe gives. */
static void test_schedules_match_reference(void **state) {
    (void)state;
    char *cap = make_capture(40, 12, 7);
    sp_dataset full, lazy;
    load(cap, 1, &full);
    load(cap, 0, &lazy);
    assert_int_equal(full.test.n, 7);
    sp_backend *b = make_backend(400);
    sp_view pairs4 = all_pairs_view(4, "pairs_rgba.png"), pairs3 = all_pairs_view(3, "pairs_rgb.png");
    /* 7 in memory, 7 streamed, the two all-pairs views: 16 views, batches of 3 end part-full */
    sp_view views[16];
    const char *bases[16];
    char *names[7];
    for (int i = 0; i < 7; i++) {
        views[i] = full.test.views[i];
        views[7 + i] = lazy.test.views[i];
        const char *slash = strrchr(full.test.views[i].name, '/');
        names[i] = sp_strdup(slash ? slash + 1 : full.test.views[i].name);
        bases[i] = bases[7 + i] = names[i];
    }
    views[14] = pairs4, views[15] = pairs3;
    bases[14] = "pairs_rgba", bases[15] = "pairs_rgb";
    sp_split s = {views, 16};
    const float bgs[2][3] = {{1.0f, 1.0f, 1.0f}, {0.2f, 0.55f, 0.9f}};
    for (int a = 0; a < 2; a++)
        for (int k = 0; k < 2; k++) check_split(b, &s, bases, a ? SP_ALPHA_PREMULTIPLIED : SP_ALPHA_STRAIGHT, bgs[k]);
    for (int i = 0; i < 7; i++) free(names[i]);
    sp_view_free(&pairs4), sp_view_free(&pairs3);
    b->ops->destroy(b);
    sp_dataset_free(&full), sp_dataset_free(&lazy);
    sp_remove_tree(cap);
    free(cap);
}

/* Views large enough for the labels: the public entry and every schedule write the same bytes
 * and the same scores. */
static void test_labelled_pictures_identical(void **state) {
    (void)state;
    char *cap = make_capture(120, 40, 5);
    sp_dataset d;
    load(cap, 1, &d);
    sp_backend *b = make_backend(300);
    const float bg[3] = {1.0f, 1.0f, 1.0f};
    char *dirs[NSCHED + 1];
    sp_eval_result r[NSCHED + 1];
    for (int c = 0; c <= NSCHED; c++) {
        dirs[c] = tu_tmpdir();
        int rc = c == NSCHED ? sp_eval_views(b, &d.test, SP_ALPHA_STRAIGHT, 1, bg, dirs[c], &r[c])
                             : eval_sched(b, &d.test, SP_ALPHA_STRAIGHT, 1, bg, dirs[c], c, &r[c]);
        assert_int_equal(rc, 0);
    }
    for (int i = 0; i < d.test.n; i++) {
        const char *slash = strrchr(d.test.views[i].name, '/');
        char *first = picture_path(dirs[0], i, slash ? slash + 1 : d.test.views[i].name);
        size_t n0;
        char *bytes0;
        assert_int_equal(sp_read_file(first, &bytes0, &n0), 0);
        for (int c = 1; c <= NSCHED; c++) {
            assert_memory_equal(&r[c].psnr[i], &r[0].psnr[i], sizeof(double));
            assert_memory_equal(&r[c].ssim[i], &r[0].ssim[i], sizeof(double));
            char *other = picture_path(dirs[c], i, slash ? slash + 1 : d.test.views[i].name);
            size_t n1;
            char *bytes1;
            assert_int_equal(sp_read_file(other, &bytes1, &n1), 0);
            assert_int_equal(n1, n0);
            assert_memory_equal(bytes1, bytes0, n0);
            free(bytes1);
            free(other);
        }
        free(bytes0);
        free(first);
    }
    for (int c = 0; c <= NSCHED; c++) {
        sp_eval_result_free(&r[c]);
        tu_rm_rf(dirs[c]);
    }
    b->ops->destroy(b);
    sp_dataset_free(&d);
    sp_remove_tree(cap);
    free(cap);
}

/* A backend that only renders: a flat colour per view, failing at call fail_at (-1: never); it
 * records whether every render ran on the thread that started the evaluation. */
typedef struct {
    sp_backend base;
    int calls, fail_at, off_thread;
    pthread_t caller;
} fake_backend;

static int fake_render(sp_backend *b, const sp_camera *cam, int sh_degree, const float bg[3], float *rgb) {
    fake_backend *f = (fake_backend *)b;
    if (!pthread_equal(pthread_self(), f->caller)) f->off_thread = 1;
    if (f->calls++ == f->fail_at) return sp_error("fake render: device lost at call %d", f->fail_at);
    /* a pattern of its own for each call: a render written into the buffers of a batch still
     * being scored changes that batch's scores */
    for (size_t i = 0; i < (size_t)cam->width * cam->height * 3; i++)
        rgb[i] = (float)((i * 7 + (size_t)f->calls * 13) % 256) / 255.0f;
    return 0;
}

static const sp_backend_ops k_fake_ops = {.name = "fake", .render = fake_render};

/* Runs schedule c on the fake backend; returns its status, the error in err, the scores in psnr
 * and ssim when not NULL. */
static int run_fake(const sp_split *s, int c, int fail_at, const char *renders_dir, char *err, size_t n, double *psnr,
                    double *ssim) {
    fake_backend f = {.base = {.ops = &k_fake_ops}, .fail_at = fail_at, .caller = pthread_self()};
    const float bg[3] = {1.0f, 1.0f, 1.0f};
    sp_eval_result r;
    int rc = eval_sched(&f.base, s, SP_ALPHA_STRAIGHT, 0, bg, renders_dir, c, &r);
    snprintf(err, n, "%s", rc ? sp_last_error() : "");
    assert_int_equal(f.off_thread, 0);
    if (rc) { /* a failed evaluation leaves its result empty */
        assert_int_equal(r.n, 0);
        assert_null(r.names);
        assert_null(r.psnr);
    } else {
        assert_int_equal(f.calls, s->n); /* each view rendered once */
        if (psnr) memcpy(psnr, r.psnr, s->n * sizeof *psnr);
        if (ssim) memcpy(ssim, r.ssim, s->n * sizeof *ssim);
    }
    sp_eval_result_free(&r);
    return rc;
}

/* Renders that come at once (the fake backend's) while the scores of the batch before take a
 * while: each schedule scores every view against its own render, as rendering all then scoring
 * all does. */
static void test_overlap_keeps_batches(void **state) {
    (void)state;
    char *cap = make_capture(96, 64, 13);
    sp_dataset d;
    load(cap, 1, &d);
    int n = d.test.n;
    double *psnr0 = sp_malloc(n * sizeof(double)), *ssim0 = sp_malloc(n * sizeof(double));
    double *psnr = sp_malloc(n * sizeof(double)), *ssim = sp_malloc(n * sizeof(double));
    char err[2048];
    assert_int_equal(run_fake(&d.test, 0, -1, NULL, err, sizeof err, psnr0, ssim0), 0);
    for (int i = 1; i < n; i++) assert_true(psnr0[i] != psnr0[i - 1]); /* the renders differ */
    for (int rep = 0; rep < 3; rep++)
        for (int c = 1; c < NSCHED; c++) {
            assert_int_equal(run_fake(&d.test, c, -1, NULL, err, sizeof err, psnr, ssim), 0);
            for (int i = 0; i < n; i++)
                if (psnr[i] != psnr0[i] || ssim[i] != ssim0[i])
                    fail_msg("schedule %d view %d: PSNR %.17g SSIM %.17g, one batch %.17g %.17g", c, i, psnr[i],
                             ssim[i], psnr0[i], ssim0[i]);
        }
    free(psnr0), free(ssim0), free(psnr), free(ssim);
    sp_dataset_free(&d);
    sp_remove_tree(cap);
    free(cap);
}

/* A cancel that fires on its `at`-th check (0: never). */
typedef struct {
    int calls, at;
} stopper;
static int stop_at(void *user) {
    stopper *st = user;
    return st->at > 0 && ++st->calls >= st->at;
}

/* A cancelled evaluation stops before a batch and returns 1 with nothing kept, under every
 * schedule; one that is not cancelled before its last batch scores every view. */
static void test_cancel_stops(void **state) {
    (void)state;
    char *cap = make_capture(24, 16, 13);
    sp_dataset d;
    load(cap, 1, &d);
    sp_backend *b = make_backend(400);
    for (int c = 0; c < NSCHED; c++)
        for (int at = 0; at <= 2; at++) {
            stopper st = {0, at};
            sp_eval_cancel cancel = {stop_at, &st};
            sp_eval_result r;
            int rc = eval_sched_cancel(b, &d.test, SP_ALPHA_STRAIGHT, 0, (const float[3]){1.0f, 1.0f, 1.0f}, NULL, c,
                                       &cancel, &r);
            int batches = (d.test.n + k_sched[c][1] - 1) / k_sched[c][1]; /* one check before each */
            if (at == 0 || at > batches) {
                assert_int_equal(rc, 0);
                assert_int_equal(r.n, d.test.n);
            } else {
                if (rc != 1 || r.n != 0) fail_msg("schedule %d, cancelled at check %d: rc %d, %d views", c, at, rc, r.n);
                assert_int_equal(st.calls, at); /* no check after the stop */
            }
            sp_eval_result_free(&r);
        }
    b->ops->destroy(b);
    sp_dataset_free(&d);
    sp_remove_tree(cap);
    free(cap);
}

/* Streamed views whose files vanished, renders that fail: each schedule reports the first failure
 * (a failed score before the failed render of a later batch), naming the file. */
static void test_errors_first_failure(void **state) {
    (void)state;
    char *cap = make_capture(24, 16, 11);
    sp_dataset d;
    load(cap, 0, &d);
    char err[2048];
    for (int c = 0; c < NSCHED; c++) /* all present: no failure, renders on the calling thread */
        assert_int_equal(run_fake(&d.test, c, -1, NULL, err, sizeof err, NULL, NULL), 0);
    for (int c = 0; c < NSCHED; c++) { /* render of view 7 fails */
        assert_int_equal(run_fake(&d.test, c, 7, NULL, err, sizeof err, NULL, NULL), -1);
        assert_string_equal(err, "fake render: device lost at call 7");
    }
    /* views 4, 5 and 9 gone (4 and 5 in one batch of 3) */
    const int gone[] = {9, 5, 4};
    for (int g = 0; g < 3; g++) assert_int_equal(remove(d.test.views[gone[g]].path), 0);
    for (int rep = 0; rep < 3; rep++)
        for (int c = 0; c < NSCHED; c++) {
            char *dir = tu_tmpdir();
            assert_int_equal(run_fake(&d.test, c, -1, dir, err, sizeof err, NULL, NULL), -1);
            tu_assert_contains(err, d.test.views[4].path);
            if (strstr(err, d.test.views[5].path) || strstr(err, d.test.views[9].path))
                fail_msg("schedule %d: \"%s\" names a later view", c, err);
            /* views up to the failing batch were scored and drawn (those present); none after it,
             * or, overlapping, after the batch that follows it */
            int batch = k_sched[c][1], after = (4 / batch + 1 + k_sched[c][0]) * batch;
            for (int i = 0; i < d.test.n; i++) {
                const char *slash = strrchr(d.test.views[i].name, '/');
                char *pi = picture_path(dir, i, slash ? slash + 1 : d.test.views[i].name);
                if (i < 4 && !sp_file_exists(pi)) fail_msg("schedule %d: %s missing", c, pi);
                if (i >= after && sp_file_exists(pi)) fail_msg("schedule %d: %s written after the failure", c, pi);
                free(pi);
            }
            tu_rm_rf(dir);
        }
    /* a score fails in the batch before a failed render: the score's error (the render came later;
     * overlapping, it has already happened when the score fails) */
    for (int c = 0; c < NSCHED; c++) {
        int fail_at = (4 / k_sched[c][1] + 1) * k_sched[c][1]; /* the first view of the next batch */
        if (fail_at >= d.test.n) continue;                      /* one batch: its render fails first */
        assert_int_equal(run_fake(&d.test, c, fail_at, NULL, err, sizeof err, NULL, NULL), -1);
        tu_assert_contains(err, d.test.views[4].path);
    }
    sp_dataset_free(&d);
    sp_remove_tree(cap);
    free(cap);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_schedules_match_reference),
        cmocka_unit_test(test_labelled_pictures_identical),
        cmocka_unit_test(test_overlap_keeps_batches),
        cmocka_unit_test(test_errors_first_failure),
        cmocka_unit_test(test_cancel_stops),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
