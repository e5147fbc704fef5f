/* test_api.c — the public API (include/splat.h): statuses and per-context messages, the log
 * callback, configuration, loading and exporting models, cancelling, resuming with the context's
 * configuration, the training plan, rendering any camera, and two contexts training on two
 * threads at once with the same results as one at a time, the live model a viewer asks for while
 * training, the render SH degree; and API 2: the versions, the program's out-of-memory handler
 * and allocation limit, the caller's floating-point mode kept, typed configuration, its text,
 * resolution and difference from a run's, several processes, the dataset and backend checks,
 * dataset images, PNG renders, model formats, synth options, run results and benchmark chains. */
#include "testutil.h"

#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#define HAVE_MXCSR 1
#define FTZ_DAZ 0x8040u
#endif

#include "core/core.h"
#include "io/image.h"
#include "io/ply.h"
#include "io/toml.h"
#include "scene/gaussians.h"
#include "splat.h"

/* One tiny demo scene for the whole file. */
static char *g_tmp, *g_scene;

static int setup(void **state) {
    (void)state;
    g_tmp = tu_tmpdir();
    if (!g_tmp) return -1;
    g_scene = sp_path_join(g_tmp, "scene");
    splat_context *ctx;
    if (splat_open(&ctx) != SPLAT_OK) return -1;
    splat_status st = splat_synth(ctx, g_scene, 24, 8, 1, 2, 3);
    splat_close(ctx);
    return st == SPLAT_OK ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    sp_remove_tree(g_tmp);
    free(g_tmp);
    free(g_scene);
    return 0;
}

/* A context configured for a short CPU run on the scene into g_tmp/<run> (adc: the refine schedule is
 * written for it). */
static splat_context *tiny_context(const char *run, int seed, int steps) {
    splat_context *ctx;
    assert_int_equal(splat_open(&ctx), SPLAT_OK);
    char *set = sp_strfmt("data.path=%s", g_scene);
    assert_int_equal(splat_config_set(ctx, set), SPLAT_OK);
    free(set);
    char *dir = sp_path_join(g_tmp, run);
    set = sp_strfmt("output.run_dir=%s", dir);
    assert_int_equal(splat_config_set(ctx, set), SPLAT_OK);
    free(set);
    free(dir);
    char *toml = sp_strfmt("[experiment]\nseed = %d\n[init]\ncount = 400\n[trainer]\nmax_steps = %d\n"
                           "sh_interval = 40\n[refine]\nstrategy = \"adc\"\nstart = 20\nstop = 100\nevery = 20\n"
                           "[output]\nsave_renders = false\n[backend]\nkind = \"cpu\"\n",
                           seed, steps);
    assert_int_equal(splat_config_load_string(ctx, toml, "tiny"), SPLAT_OK);
    free(toml);
    return ctx;
}

static char *read_all(const char *path, size_t *n) {
    char *d = NULL;
    assert_int_equal(sp_read_file(path, &d, n), 0);
    return d;
}

/* ---- statuses, messages, configuration ---- */

/* A message made from the one before it (sp_error("%s; ...", sp_last_error())) keeps that text:
 * the messages of several problems, or an error with what it stopped. */
static void test_error_from_itself(void **state) {
    (void)state;
    sp_error("first: %s", "a/b.png");
    sp_error("%s; second %d", sp_last_error(), 2);
    assert_string_equal(sp_last_error(), "first: a/b.png; second 2");
    sp_error("%s\n%s", sp_last_error(), "third");
    assert_string_equal(sp_last_error(), "first: a/b.png; second 2\nthird");
}

static void test_errors_name_what_failed(void **state) {
    (void)state;
    assert_int_equal(splat_config_set(NULL, "trainer.max_steps=1"), SPLAT_INVALID);
    assert_string_equal(splat_errmsg(NULL), "no context (NULL)");
    splat_context *a, *b;
    assert_int_equal(splat_open(&a), SPLAT_OK);
    assert_int_equal(splat_open(&b), SPLAT_OK);
    assert_string_equal(splat_errmsg(a), "");

    assert_int_equal(splat_config_set(a, "trainer.max_stepz=10"), SPLAT_INVALID);
    tu_assert_contains(splat_errmsg(a), "trainer.max_stepz");
    assert_string_equal(splat_errmsg(b), ""); /* messages are per context */

    assert_int_equal(splat_load_model(b, "/nonexistent/model.ply"), SPLAT_ERROR);
    tu_assert_contains(splat_errmsg(b), "/nonexistent/model.ply");
    tu_assert_contains(splat_errmsg(a), "trainer.max_stepz");

    /* every problem of a text, each with its name and line */
    assert_int_equal(splat_config_load_string(a, "[trainer]\nmax_steps = -3\n[nope]\nx = 1\n", "mine.toml"),
                     SPLAT_INVALID);
    tu_assert_contains(splat_errmsg(a), "mine.toml:2:");
    tu_assert_contains(splat_errmsg(a), "mine.toml:3: unknown section [nope]");

    assert_int_equal(splat_model_info(a, NULL, NULL), SPLAT_NO_MODEL);
    float px[4];
    splat_camera cam;
    const float eye[3] = {0, -4, 0}, at[3] = {0, 0, 0}, up[3] = {0, 0, 1};
    assert_int_equal(splat_camera_look_at(&cam, 1, 1, 0.7f, eye, at, up), SPLAT_OK);
    assert_int_equal(splat_render(a, &cam, NULL, SPLAT_RGBA_F32, px, 0), SPLAT_NO_MODEL);
    tu_assert_contains(splat_errmsg(a), "no model");
    assert_int_equal(splat_export(a, "x.ply", NULL), SPLAT_NO_MODEL);
    /* looking along up has no image orientation */
    const float above[3] = {0, 0, 5};
    assert_int_equal(splat_camera_look_at(&cam, 8, 8, 0.7f, above, at, up), SPLAT_INVALID);
    /* a success clears the message */
    assert_int_equal(splat_config_set(a, "trainer.max_steps=10"), SPLAT_OK);
    assert_string_equal(splat_errmsg(a), "");
    assert_string_equal(splat_status_name(SPLAT_NOMEM), "out of memory");
    splat_close(a);
    splat_close(b);
}

static void test_config_get_set_save(void **state) {
    (void)state;
    splat_context *ctx;
    assert_int_equal(splat_open(&ctx), SPLAT_OK);
    char buf[256];
    assert_int_equal(splat_config_get(ctx, "trainer.max_steps", buf, sizeof buf), SPLAT_OK);
    assert_string_equal(buf, "20000");
    assert_int_equal(splat_config_set(ctx, "data.path=/some/where"), SPLAT_OK);
    assert_int_equal(splat_config_get(ctx, "data.path", buf, sizeof buf), SPLAT_OK);
    assert_string_equal(buf, "\"/some/where\"");
    assert_int_equal(splat_config_set(ctx, "loss.ssim_weight=0.25"), SPLAT_OK);
    assert_int_equal(splat_config_get(ctx, "loss.ssim_weight", buf, sizeof buf), SPLAT_OK);
    assert_float_equal(atof(buf), 0.25, 1e-12);
    assert_int_equal(splat_config_get(ctx, "output.save_ply", buf, sizeof buf), SPLAT_OK);
    assert_string_equal(buf, "true");
    assert_int_equal(splat_config_get(ctx, "trainer.max_steps", buf, 3), SPLAT_INVALID);
    assert_int_equal(splat_config_get(ctx, "trainer", buf, sizeof buf), SPLAT_INVALID);
    tu_assert_contains(splat_errmsg(ctx), "unknown configuration key 'trainer'");
    /* what training needs of the whole configuration */
    splat_context *empty;
    assert_int_equal(splat_open(&empty), SPLAT_OK);
    assert_int_equal(splat_config_check(empty), SPLAT_INVALID);
    tu_assert_contains(splat_errmsg(empty), "data.path");
    assert_int_equal(splat_eval_save(empty, "/tmp/never.toml"), SPLAT_INVALID);
    splat_close(empty);
    assert_int_equal(splat_config_check(ctx), SPLAT_OK);

    /* saved, reset, loaded back */
    char *path = sp_path_join(g_tmp, "saved.toml");
    assert_int_equal(splat_config_save(ctx, path), SPLAT_OK);
    assert_int_equal(splat_config_reset(ctx), SPLAT_OK);
    assert_int_equal(splat_config_get(ctx, "loss.ssim_weight", buf, sizeof buf), SPLAT_OK);
    assert_float_equal(atof(buf), 0.1, 1e-12);
    assert_int_equal(splat_config_load_file(ctx, path), SPLAT_OK);
    assert_int_equal(splat_config_get(ctx, "loss.ssim_weight", buf, sizeof buf), SPLAT_OK);
    assert_float_equal(atof(buf), 0.25, 1e-12);
    assert_int_equal(splat_config_load_file(ctx, "/nonexistent.toml"), SPLAT_INVALID);
    tu_assert_contains(splat_errmsg(ctx), "/nonexistent.toml");
    free(path);
    splat_close(ctx);
}

/* ---- logging ---- */

typedef struct {
    int infos, errors;
    char last[512];
} log_counts;

static void count_log(void *user, splat_log_level level, const char *message) {
    log_counts *c = user;
    if (level == SPLAT_LOG_INFO) c->infos++;
    if (level == SPLAT_LOG_ERROR) c->errors++;
    snprintf(c->last, sizeof c->last, "%s", message);
}

static void test_log_callback_per_call(void **state) {
    (void)state;
    splat_context *ctx = tiny_context("logrun", 1, 30);
    log_counts c = {0};
    assert_int_equal(splat_set_log(ctx, count_log, &c, SPLAT_LOG_INFO), SPLAT_OK);
    splat_train_opts o = {.force = 1};
    assert_int_equal(splat_train(ctx, &o), SPLAT_OK);
    assert_true(c.infos > 0);
    assert_int_equal(c.errors, 0);
    /* the sink is the context's only during its calls: a message of this thread afterwards
     * does not reach the callback */
    int before = c.infos;
    sp_log_sink quiet = {.level = SP_LOG_ERROR};
    sp_log_sink *old = sp_log_use(&quiet);
    SP_INFO("not for the context");
    sp_log_use(old);
    assert_int_equal(c.infos, before);
    /* warnings only */
    assert_int_equal(splat_set_log(ctx, count_log, &c, SPLAT_LOG_WARN), SPLAT_OK);
    assert_int_equal(splat_train(ctx, &o), SPLAT_OK);
    assert_int_equal(c.infos, before);
    /* a failed run: its error goes to the callback and is the context's message */
    char *set = sp_strfmt("data.path=%s/none", g_tmp);
    assert_int_equal(splat_config_set(ctx, set), SPLAT_OK);
    free(set);
    assert_int_equal(splat_train(ctx, &o), SPLAT_ERROR);
    assert_true(c.errors > 0);
    tu_assert_contains(splat_errmsg(ctx), "/none");
    splat_close(ctx);
}

/* ---- models ---- */

static void test_load_export_formats(void **state) {
    (void)state;
    splat_context *ctx = tiny_context("models", 2, 40);
    splat_train_opts o = {.force = 1};
    assert_int_equal(splat_train(ctx, &o), SPLAT_OK);
    int n, deg;
    assert_int_equal(splat_model_info(ctx, &n, &deg), SPLAT_OK);
    assert_true(n > 0);
    assert_int_equal(deg, 3);
    char *run = sp_path_join(g_tmp, "models");
    tu_assert_contains(splat_run_dir(ctx), "models");
    const char *names[] = {"m.ply", "m.splat", "m.spz"};
    for (int i = 0; i < 3; i++) {
        char *p = sp_path_join(g_tmp, names[i]);
        assert_int_equal(splat_export(ctx, p, NULL), SPLAT_OK);
        splat_context *other;
        assert_int_equal(splat_open(&other), SPLAT_OK);
        assert_int_equal(splat_load_model(other, p), SPLAT_OK);
        int n2, d2;
        assert_int_equal(splat_model_info(other, &n2, &d2), SPLAT_OK);
        assert_int_equal(n2, n);
        assert_int_equal(d2, i == 1 ? 0 : 3); /* .splat keeps the base colour only */
        splat_close(other);
        free(p);
    }
    /* the ply export equals the run's point_cloud.ply byte for byte */
    char *a = sp_path_join(g_tmp, "m.ply"), *b = sp_path_join(run, "point_cloud.ply");
    size_t na, nb;
    char *da = read_all(a, &na), *db = read_all(b, &nb);
    assert_int_equal(na, nb);
    assert_memory_equal(da, db, na);
    free(da);
    free(db);
    /* the context's model (handed over by the trainer) is what reading point_cloud.ply gives: the
     * .ply read back and written again is the same file */
    splat_context *back;
    char *again = sp_path_join(g_tmp, "m_again.ply");
    assert_int_equal(splat_open(&back), SPLAT_OK);
    assert_int_equal(splat_load_model(back, b), SPLAT_OK);
    assert_int_equal(splat_export(back, again, NULL), SPLAT_OK);
    da = read_all(a, &na), db = read_all(again, &nb);
    assert_int_equal(na, nb);
    assert_memory_equal(da, db, na);
    splat_close(back);
    free(again);
    free(da);
    free(db);
    free(a);
    free(b);
    /* a run folder and its checkpoint load too */
    assert_int_equal(splat_load_model(ctx, run), SPLAT_OK);
    char *ck = sp_path_join(run, "checkpoint.bin");
    assert_int_equal(splat_load_model(ctx, ck), SPLAT_OK);
    assert_int_equal(splat_model_info(ctx, &deg, NULL), SPLAT_OK);
    assert_int_equal(deg, n);
    free(ck);
    assert_int_equal(splat_load_model(ctx, g_tmp), SPLAT_ERROR);
    tu_assert_contains(splat_errmsg(ctx), "not a run folder");
    assert_int_equal(splat_export(ctx, "/tmp/x.obj", NULL), SPLAT_INVALID);
    assert_int_equal(splat_export(ctx, "/tmp/x.ply", "obj"), SPLAT_INVALID);
    free(run);
    splat_close(ctx);
}

/* ---- cancelling ---- */

static int cancel_at_30(void *user) {
    int *step = user;
    return *step >= 30;
}

static void note_step(void *user, const splat_progress *p) { *(int *)user = p->step; }

static void test_cancel(void **state) {
    (void)state;
    splat_context *ctx = tiny_context("cancelled", 1, 500);
    /* before the run: nothing is written */
    splat_cancel(ctx);
    splat_train_opts o = {.force = 1};
    assert_int_equal(splat_train(ctx, &o), SPLAT_CANCELLED);
    tu_assert_contains(splat_errmsg(ctx), "before it started");
    char *ply = sp_path_join(g_tmp, "cancelled/point_cloud.ply");
    assert_false(sp_file_exists(ply));
    assert_int_equal(splat_model_info(ctx, NULL, NULL), SPLAT_NO_MODEL);
    /* the request was consumed; a callback stops the next run mid-way, model and checkpoint kept */
    int step = 0;
    splat_train_opts o2 = {.force = 1, .progress = note_step, .cancel = cancel_at_30, .user = &step};
    assert_int_equal(splat_train(ctx, &o2), SPLAT_CANCELLED);
    tu_assert_contains(splat_errmsg(ctx), "saved in");
    assert_true(step >= 30 && step < 500);
    assert_true(sp_file_exists(ply));
    assert_int_equal(splat_model_info(ctx, NULL, NULL), SPLAT_OK);
    /* and it resumes to the end */
    char *run = sp_path_join(g_tmp, "cancelled");
    assert_int_equal(splat_config_set(ctx, "trainer.max_steps=60"), SPLAT_OK);
    splat_train_opts o3 = {.resume_dir = run};
    assert_int_equal(splat_train(ctx, &o3), SPLAT_OK);
    free(run);
    free(ply);
    splat_close(ctx);
}

/* What splat.h says of resume_dir: the context's configuration is used as it is (not replaced by
 * the run's config.toml, and unchanged afterwards); a context that holds no configuration is told
 * to load the run's, and the run folder is left as it was. */
static void test_resume_uses_the_context_config(void **state) {
    (void)state;
    splat_context *ctx = tiny_context("resumed", 6, 500);
    int step = 0;
    splat_train_opts o = {.force = 1, .progress = note_step, .cancel = cancel_at_30, .user = &step};
    assert_int_equal(splat_train(ctx, &o), SPLAT_CANCELLED);
    splat_close(ctx);
    char *run = sp_path_join(g_tmp, "resumed"), *ck = sp_path_join(run, "checkpoint.bin");
    char *cfg = sp_path_join(run, "config.toml");
    size_t n0, n1;
    char *before = read_all(ck, &n0);

    splat_context *fresh;
    assert_int_equal(splat_open(&fresh), SPLAT_OK);
    splat_train_opts r = {.resume_dir = run};
    assert_int_equal(splat_train(fresh, &r), SPLAT_INVALID);
    tu_assert_contains(splat_errmsg(fresh), "config.toml");
    tu_assert_contains(splat_errmsg(fresh), "splat_config_load_file");
    char *after = read_all(ck, &n1);
    assert_int_equal(n0, n1);
    assert_memory_equal(before, after, n0);
    free(after);

    /* the run's configuration loaded, one key changed: that key is used and stays in the context */
    assert_int_equal(splat_config_load_file(fresh, cfg), SPLAT_OK);
    assert_int_equal(splat_config_set(fresh, "trainer.max_steps=60"), SPLAT_OK);
    assert_int_equal(splat_train(fresh, &r), SPLAT_OK);
    char buf[32];
    assert_int_equal(splat_config_get(fresh, "trainer.max_steps", buf, sizeof buf), SPLAT_OK);
    assert_string_equal(buf, "60");
    char *res = sp_path_join(run, "result.toml"), *text = read_all(res, NULL), *saved = read_all(cfg, NULL);
    tu_assert_contains(text, "steps = 60");
    tu_assert_contains(saved, "max_steps = 60"); /* written as the run's config.toml */
    free(res);
    free(text);
    free(saved);
    free(before);
    free(cfg);
    free(ck);
    free(run);
    splat_close(fresh);
}

/* splat_train_plan: the strategy, budget and schedule a run would use, as the trainer resolves them. */
static void test_train_plan(void **state) {
    (void)state;
    splat_plan p;
    splat_context *none;
    assert_int_equal(splat_open(&none), SPLAT_OK);
    assert_int_equal(splat_train_plan(none, &p), SPLAT_INVALID); /* no data.path */
    tu_assert_contains(splat_errmsg(none), "data.path");
    assert_int_equal(splat_train_plan(none, NULL), SPLAT_INVALID);
    splat_close(none);

    splat_context *ctx = tiny_context("plan", 1, 100);
    assert_int_equal(splat_train_plan(ctx, &p), SPLAT_OK);
    assert_string_equal(p.backend, "cpu");
    assert_true(p.threads >= 1);
    assert_string_equal(p.strategy, "adc");
    assert_int_equal(p.max_steps, 100);
    assert_int_equal(p.initial_gaussians, 400);
    assert_int_equal(p.max_gaussians, 3000000); /* adc: refine.capacity */
    assert_true(p.grow == 0.0);
    assert_int_equal(p.refine_start, 20);
    assert_int_equal(p.refine_stop, 100);
    assert_int_equal(p.refine_every, 20);
    assert_int_equal(p.train_views, 8);
    assert_true(fabs(p.view_pixels - 24 * 24) < 1e-9);

    /* mcmc with the automatic budget (the floor for this tiny capture), schedules scaled 3000 -> 30000 */
    assert_int_equal(splat_config_load_string(ctx, "[trainer]\nmax_steps = 3000\nschedule_steps = 30000\n"
                                                   "[refine]\nstrategy = \"auto\"\nstart = 500\nmax_gaussians = 0\n",
                                              NULL),
                     SPLAT_OK);
    assert_int_equal(splat_train_plan(ctx, &p), SPLAT_OK);
    assert_string_equal(p.strategy, "mcmc");
    assert_int_equal(p.max_gaussians, 340000);
    assert_true(fabs(p.grow - 0.05) < 1e-12);
    assert_int_equal(p.refine_start, 50);
    assert_int_equal(p.refine_stop, 1667); /* refine.mcmc_stop 16667, scaled */
    assert_int_equal(splat_config_set(ctx, "refine.max_gaussians=5000"), SPLAT_OK);
    assert_int_equal(splat_train_plan(ctx, &p), SPLAT_OK);
    assert_int_equal(p.max_gaussians, 5000);
    /* a dataset that is not there */
    assert_int_equal(splat_config_set(ctx, "data.path=/nonexistent/scene"), SPLAT_OK);
    assert_int_equal(splat_train_plan(ctx, &p), SPLAT_ERROR);
    tu_assert_contains(splat_errmsg(ctx), "/nonexistent/scene");
    splat_close(ctx);
}

/* ---- rendering ---- */

static void test_render_cameras(void **state) {
    (void)state;
    splat_context *ctx = tiny_context("render", 4, 120);
    splat_train_opts o = {.force = 1};
    assert_int_equal(splat_train(ctx, &o), SPLAT_OK);
    int nt;
    assert_int_equal(splat_dataset_views(ctx, "test", &nt), SPLAT_OK);
    assert_int_equal(nt, 2);
    splat_camera cam;
    assert_int_equal(splat_dataset_camera(ctx, "test", 5, &cam), SPLAT_INVALID);
    assert_int_equal(splat_dataset_camera(ctx, "test", 0, &cam), SPLAT_OK);
    assert_int_equal(cam.width, 24);

    /* look_at from the same centre (the demo cameras look at the origin, world z up) gives the
     * dataset's camera */
    float c[3];
    for (int i = 0; i < 3; i++) c[i] = -(cam.R[i] * cam.t[0] + cam.R[3 + i] * cam.t[1] + cam.R[6 + i] * cam.t[2]);
    splat_camera la;
    const float at[3] = {0, 0, 0}, up[3] = {0, 0, 1};
    assert_int_equal(splat_camera_look_at(&la, 24, 24, 0.6911112f, c, at, up), SPLAT_OK);
    for (int k = 0; k < 9; k++) assert_float_equal(la.R[k], cam.R[k], 1e-4);
    for (int k = 0; k < 3; k++) assert_float_equal(la.t[k], cam.t[k], 1e-4);
    assert_float_equal(la.fx, cam.fx, 1e-3);

    /* on white: RGBA8 against the float render, and PSNR against the test image as evaluate
     * scores it */
    const float white[3] = {1, 1, 1};
    uint8_t px8[24 * 24 * 4];
    float pxf[24 * 24 * 4];
    assert_int_equal(splat_render(ctx, &cam, white, SPLAT_RGBA8, px8, 0), SPLAT_OK);
    assert_int_equal(splat_render(ctx, &cam, white, SPLAT_RGBA_F32, pxf, 0), SPLAT_OK);
    for (int i = 0; i < 24 * 24 * 4; i++) assert_int_equal(px8[i], (int)(pxf[i] * 255.0f + 0.5f));
    for (int i = 0; i < 24 * 24; i++) assert_int_equal(px8[4 * i + 3], 255);
    splat_eval_result ev;
    assert_int_equal(splat_evaluate(ctx, "test", &ev), SPLAT_OK);
    assert_int_equal(ev.num_views, 2);
    char *img = sp_path_join(g_scene, "test/r_0.png");
    sp_image gt;
    assert_int_equal(sp_image_load(img, &gt), 0);
    double se = 0;
    for (int i = 0; i < 24 * 24; i++) {
        float a = gt.pixels[4 * i + 3] / 255.0f;
        for (int k = 0; k < 3; k++) {
            float g = gt.pixels[4 * i + k] / 255.0f * a + (1 - a); /* straight alpha over white */
            int g8 = (int)(g * 255.0f + 0.5f);
            se += (double)(g8 - px8[4 * i + k]) * (g8 - px8[4 * i + k]);
        }
    }
    double psnr = 10 * log10(255.0 * 255.0 / (se / (24 * 24 * 3)));
    assert_float_equal(psnr, ev.view_psnr[0], 1e-6);
    assert_true(ev.psnr > 12.0); /* it learned something in 120 steps */
    sp_image_free(&gt);
    free(img);

    /* transparent: the alpha follows the demo scene's coverage; colour over white recomposes */
    float pxt[24 * 24 * 4];
    assert_int_equal(splat_render(ctx, &cam, NULL, SPLAT_RGBA_F32, pxt, 0), SPLAT_OK);
    double max_diff = 0;
    int clear = 0, solid = 0;
    for (int i = 0; i < 24 * 24; i++) {
        float a = pxt[4 * i + 3];
        assert_true(a >= 0 && a <= 1);
        clear += a < 0.1f;
        solid += a > 0.9f;
        for (int k = 0; k < 3; k++) {
            double d = fabs(pxt[4 * i + k] * a + (1 - a) - pxf[4 * i + k]);
            if (d > max_diff) max_diff = d;
        }
    }
    assert_true(clear > 0 && solid > 0);
    assert_true(max_diff < 1e-3);

    /* view names, camera paths and the saved evaluation */
    char name[64];
    assert_int_equal(splat_dataset_view_name(ctx, "test", 1, name, sizeof name), SPLAT_OK);
    assert_string_equal(name, "./test/r_1");
    assert_int_equal(splat_dataset_view_name(ctx, "test", 1, name, 4), SPLAT_INVALID);
    assert_string_equal(ev.view_names[1], "./test/r_1");
    splat_camera path[5];
    assert_int_equal(splat_camera_path(ctx, "orbit", 5, path), SPLAT_OK);
    for (int j = 0; j < 5; j++) {
        assert_int_equal(path[j].width, 24);
        float cz = -(path[j].R[2] * path[j].t[0] + path[j].R[5] * path[j].t[1] + path[j].R[8] * path[j].t[2]);
        assert_true(cz > 0); /* the demo cameras are all above the ground plane: so is the orbit */
    }
    assert_int_equal(splat_camera_path(ctx, "zigzag", 5, path), SPLAT_INVALID);
    tu_assert_contains(splat_errmsg(ctx), "zigzag");
    char *saved = sp_path_join(g_tmp, "render/eval_test.toml");
    assert_int_equal(splat_eval_save(ctx, saved), SPLAT_OK);
    char *text = read_all(saved, NULL);
    tu_assert_contains(text, "r_1");
    char mean[64], shortest[32]; /* as the writer puts it: 3 decimals, TOML's shortest form (30.120: 30.12) */
    snprintf(mean, sizeof mean, "%.3f", ev.psnr);
    sp_toml_format_float(strtod(mean, NULL), shortest);
    snprintf(mean, sizeof mean, "test_psnr = %s\n", shortest);
    tu_assert_contains(text, mean);
    free(text);
    free(saved);

    /* a padded stride leaves the padding alone */
    uint8_t padded[24 * 100];
    memset(padded, 0xAB, sizeof padded);
    assert_int_equal(splat_render(ctx, &cam, white, SPLAT_RGBA8, padded, 100), SPLAT_OK);
    for (int y = 0; y < 24; y++) {
        assert_memory_equal(padded + y * 100, px8 + y * 96, 96);
        assert_int_equal(padded[y * 100 + 96], 0xAB);
    }
    assert_int_equal(splat_render(ctx, &cam, white, SPLAT_RGBA8, padded, 50), SPLAT_INVALID);
    cam.fx = -1;
    assert_int_equal(splat_render(ctx, &cam, white, SPLAT_RGBA8, px8, 0), SPLAT_INVALID);
    tu_assert_contains(splat_errmsg(ctx), "focal");
    splat_close(ctx);
}

/* ---- two contexts on two threads ---- */

typedef struct {
    const char *run;
    int seed, steps;
    splat_status st;
    char msg[512];
} job;

static void *run_job(void *arg) {
    job *j = arg;
    splat_context *ctx = tiny_context(j->run, j->seed, j->steps);
    splat_train_opts o = {.force = 1};
    j->st = splat_train(ctx, &o);
    snprintf(j->msg, sizeof j->msg, "%s", splat_errmsg(ctx));
    splat_close(ctx);
    return NULL;
}

/* A model trained with render.antialias: the run's config.toml records it, a context that loads that
 * config and the .ply scores what training scored, rendering the same model without the filter
 * (what a standard viewer does) scores lower, and splat_bake_antialias recovers part of it. */
static void test_antialias_model(void **state) {
    (void)state;
    splat_context *ctx = tiny_context("aa", 6, 150);
    assert_int_equal(splat_config_set(ctx, "render.antialias=true"), SPLAT_OK);
    splat_train_opts o = {.force = 1};
    assert_int_equal(splat_train(ctx, &o), SPLAT_OK);
    splat_eval_result with, again, without;
    assert_int_equal(splat_evaluate(ctx, "test", &with), SPLAT_OK);
    char *dir = sp_path_join(g_tmp, "aa"), *cfg = sp_path_join(dir, "config.toml");
    char *ply = sp_path_join(dir, "point_cloud.ply");
    size_t n;
    char *text = read_all(cfg, &n);
    tu_assert_contains(text, "[render]");
    tu_assert_contains(text, "antialias = true");
    free(text);
    splat_context *c2;
    assert_int_equal(splat_open(&c2), SPLAT_OK);
    assert_int_equal(splat_config_load_file(c2, cfg), SPLAT_OK);
    assert_int_equal(splat_load_model(c2, ply), SPLAT_OK);
    assert_int_equal(splat_evaluate(c2, "test", &again), SPLAT_OK);
    assert_float_equal(again.psnr, with.psnr, 1e-9);
    assert_int_equal(splat_config_set(c2, "render.antialias=false"), SPLAT_OK);
    assert_int_equal(splat_evaluate(c2, "test", &without), SPLAT_OK);
    printf("antialias model: test PSNR %.3f dB with the filter, %.3f dB rendered without it\n", with.psnr,
           without.psnr);
    assert_true(without.psnr < with.psnr);
    /* baked for renderers without the filter: between the two */
    splat_eval_result baked;
    double mean = 0.0;
    assert_int_equal(splat_bake_antialias(c2, &mean), SPLAT_OK);
    assert_true(mean > 0.0 && mean <= 1.0);
    assert_int_equal(splat_evaluate(c2, "test", &baked), SPLAT_OK);
    printf("antialias model baked (mean factor %.3f): %.3f dB without the filter\n", mean, baked.psnr);
    assert_true(baked.psnr > without.psnr);
    splat_close(c2);
    splat_context *c3;
    assert_int_equal(splat_open(&c3), SPLAT_OK);
    assert_int_equal(splat_bake_antialias(c3, NULL), SPLAT_NO_MODEL);
    splat_close(c3);
    splat_close(ctx);
    free(dir), free(cfg), free(ply);
}

static void test_two_contexts_two_threads(void **state) {
    (void)state;
    job seq[2] = {{.run = "seq_a", .seed = 11, .steps = 150}, {.run = "seq_b", .seed = 12, .steps = 110}};
    job par[2] = {{.run = "par_a", .seed = 11, .steps = 150}, {.run = "par_b", .seed = 12, .steps = 110}};
    for (int i = 0; i < 2; i++) {
        run_job(&seq[i]);
        assert_int_equal(seq[i].st, SPLAT_OK);
    }
    pthread_t t[2];
    for (int i = 0; i < 2; i++) assert_int_equal(pthread_create(&t[i], NULL, run_job, &par[i]), 0);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    for (int i = 0; i < 2; i++) {
        if (par[i].st != SPLAT_OK) fail_msg("%s: %s", par[i].run, par[i].msg);
        char *a = sp_strfmt("%s/%s/point_cloud.ply", g_tmp, seq[i].run);
        char *b = sp_strfmt("%s/%s/point_cloud.ply", g_tmp, par[i].run);
        size_t na, nb;
        char *da = read_all(a, &na), *db = read_all(b, &nb);
        assert_int_equal(na, nb);
        assert_memory_equal(da, db, na);
        free(da);
        free(db);
        free(a);
        free(b);
        /* each run's log has its own lines only */
        char *lp = sp_strfmt("%s/%s/log.txt", g_tmp, par[i].run);
        char *log = read_all(lp, NULL);
        tu_assert_contains(log, par[i].run);
        assert_null(strstr(log, par[1 - i].run));
        free(log);
        free(lp);
    }
    /* the two configurations did give different models */
    char *a = sp_strfmt("%s/seq_a/point_cloud.ply", g_tmp), *b = sp_strfmt("%s/seq_b/point_cloud.ply", g_tmp);
    size_t na, nb;
    char *da = read_all(a, &na), *db = read_all(b, &nb);
    assert_true(na != nb || memcmp(da, db, na) != 0);
    free(da);
    free(db);
    free(a);
    free(b);
}

/* ---- calls from callbacks, messages per thread, one run folder for two runs ---- */

typedef struct {
    splat_context *ctx;
    splat_status inner;
    char msg[1024];
    int calls;
} reentry;

static void progress_calls_back(void *user, const splat_progress *p) {
    reentry *r = user;
    if (r->calls++) return;
    int n = 0;
    r->inner = splat_model_info(r->ctx, &n, NULL); /* the same context, from its own callback */
    snprintf(r->msg, sizeof r->msg, "%s", splat_errmsg(r->ctx));
}

/* A call on a context from inside its own callback fails at once (it used to wait for itself
 * forever), and the outer call goes on to the end. */
static void test_reentrant_call_fails(void **state) {
    (void)state;
    splat_context *ctx = tiny_context("reentry", 3, 40);
    reentry r = {.ctx = ctx, .inner = SPLAT_OK};
    splat_train_opts o = {.force = 1, .progress = progress_calls_back, .user = &r};
    assert_int_equal(splat_train(ctx, &o), SPLAT_OK);
    assert_true(r.calls > 0);
    assert_int_equal(r.inner, SPLAT_INVALID);
    tu_assert_contains(r.msg, "from inside one of its own callbacks");
    assert_string_equal(splat_errmsg(ctx), ""); /* the outer call succeeded */
    int n = 0;
    assert_int_equal(splat_model_info(ctx, &n, NULL), SPLAT_OK);
    assert_true(n > 0);
    splat_close(ctx);
}

typedef struct {
    splat_context *ctx;
    int fail, rounds, wrong;
} msg_job;

static void *message_rounds(void *arg) {
    msg_job *j = arg;
    for (int i = 0; i < j->rounds; i++) {
        if (j->fail) {
            if (splat_config_set(j->ctx, "trainer.no_such_key=1") != SPLAT_INVALID ||
                !strstr(splat_errmsg(j->ctx), "no_such_key"))
                j->wrong++;
        } else {
            if (splat_config_set(j->ctx, "trainer.max_steps=100") != SPLAT_OK || splat_errmsg(j->ctx)[0]) j->wrong++;
        }
    }
    return NULL;
}

/* Two threads share a context: each reads the message of its own last call, never the other's. */
static void test_messages_per_thread(void **state) {
    (void)state;
    splat_context *ctx;
    assert_int_equal(splat_open(&ctx), SPLAT_OK);
    msg_job jobs[2] = {{.ctx = ctx, .fail = 1, .rounds = 3000}, {.ctx = ctx, .fail = 0, .rounds = 3000}};
    pthread_t t[2];
    for (int i = 0; i < 2; i++) assert_int_equal(pthread_create(&t[i], NULL, message_rounds, &jobs[i]), 0);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    assert_int_equal(jobs[0].wrong, 0);
    assert_int_equal(jobs[1].wrong, 0);
    splat_close(ctx);
}

typedef struct {
    splat_context *ctx;
    splat_status st;
    int started;
} slow_job;

static int slow_cancel(void *user) {
    slow_job *j = user;
    j->started = 1;
    struct timespec ts = {0, 2000000};
    nanosleep(&ts, NULL); /* a slow run, so that the second one starts while it trains */
    return 0;
}

static void *slow_train(void *arg) {
    slow_job *j = arg;
    splat_train_opts o = {.force = 1, .cancel = slow_cancel, .user = j};
    j->st = splat_train(j->ctx, &o);
    return NULL;
}

/* Two contexts training into one run folder: the second is refused (the folder's lock), with
 * --force too, and the first is not disturbed. */
static void test_one_folder_two_runs(void **state) {
    (void)state;
    splat_context *a = tiny_context("shared", 5, 150), *b = tiny_context("shared", 6, 150);
    slow_job j = {.ctx = a};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, slow_train, &j), 0);
    char *log = sp_path_join(g_tmp, "shared/log.txt");
    for (int i = 0; i < 2000 && !(j.started && sp_file_exists(log)); i++) {
        struct timespec ts = {0, 5000000};
        nanosleep(&ts, NULL);
    }
    assert_true(j.started);
    splat_train_opts o = {.force = 1};
    assert_int_equal(splat_train(b, &o), SPLAT_ERROR);
    tu_assert_contains(splat_errmsg(b), "another training is writing this run folder");
    pthread_join(t, NULL);
    assert_int_equal(j.st, SPLAT_OK);
    char *res = sp_path_join(g_tmp, "shared/result.toml"), *cfg = sp_path_join(g_tmp, "shared/config.toml");
    char *text = read_all(res, NULL);
    tu_assert_contains(text, "status = \"complete\"");
    free(text);
    text = read_all(cfg, NULL); /* the first run's settings, not the refused one's */
    tu_assert_contains(text, "seed = 5");
    free(text);
    free(res);
    free(cfg);
    free(log);
    splat_close(a);
    splat_close(b);
}

/* ---- live model (viewers) and the render SH degree ---- */

static int want_always(void *user) {
    (*(int *)user)++;
    return 1;
}

static int want_never(void *user) {
    (*(int *)user)++;
    return 0;
}

static void test_live_model(void **state) {
    (void)state;
    splat_context *ctx = tiny_context("live", 5, 120), *live, *quiet;
    assert_int_equal(splat_open(&live), SPLAT_OK);
    assert_int_equal(splat_open(&quiet), SPLAT_OK);
    int asked = 0;
    /* never asked: nothing is copied, though the trainer polls */
    splat_train_opts o = {.force = 1, .live_model = quiet, .want_model = want_never, .user = &asked};
    assert_int_equal(splat_train(ctx, &o), SPLAT_OK);
    assert_true(asked > 0);
    assert_int_equal(splat_model_info(quiet, NULL, NULL), SPLAT_NO_MODEL);
    /* asked every time: the live context holds a model of the run (training never waits for it) */
    asked = 0;
    splat_train_opts o2 = {.force = 1, .live_model = live, .want_model = want_always, .user = &asked};
    assert_int_equal(splat_train(ctx, &o2), SPLAT_OK);
    assert_true(asked >= 5);
    int n = 0, deg = -1;
    assert_int_equal(splat_model_info(live, &n, &deg), SPLAT_OK);
    assert_true(n > 0);
    assert_int_equal(deg, 3);

    /* the render SH degree: bad values refused, 0 differs from the model's, -1 restores it */
    assert_int_equal(splat_set_render_sh_degree(ctx, 4), SPLAT_INVALID);
    tu_assert_contains(splat_errmsg(ctx), "SH degree");
    assert_int_equal(splat_set_render_sh_degree(ctx, -2), SPLAT_INVALID);
    splat_camera cam;
    assert_int_equal(splat_dataset_camera(ctx, "test", 0, &cam), SPLAT_OK);
    size_t bytes = (size_t)cam.width * cam.height * 4;
    uint8_t *full = malloc(bytes), *dc = malloc(bytes), *again = malloc(bytes);
    const float white[3] = {1, 1, 1};
    assert_int_equal(splat_render(ctx, &cam, white, SPLAT_RGBA8, full, 0), SPLAT_OK);
    assert_int_equal(splat_set_render_sh_degree(ctx, 0), SPLAT_OK);
    assert_int_equal(splat_render(ctx, &cam, white, SPLAT_RGBA8, dc, 0), SPLAT_OK);
    assert_true(memcmp(full, dc, bytes) != 0);
    assert_int_equal(splat_set_render_sh_degree(ctx, -1), SPLAT_OK);
    assert_int_equal(splat_render(ctx, &cam, white, SPLAT_RGBA8, again, 0), SPLAT_OK);
    assert_memory_equal(full, again, bytes);
    free(full);
    free(dc);
    free(again);
    splat_close(quiet);
    splat_close(live);
    splat_close(ctx);
}


/* ---- API 2: versions and the program's settings ---- */

static void test_versions(void **state) {
    (void)state;
    assert_int_equal(SPLAT_API_VERSION, 2);
    assert_int_equal(splat_version_number(), SPLAT_VERSION_NUMBER);
    assert_string_equal(splat_version(), SPLAT_VERSION_STRING);
    int major = -1, minor = -1, patch = -1;
    assert_int_equal(sscanf(splat_version(), "%d.%d.%d", &major, &minor, &patch), 3);
    assert_int_equal(major, SPLAT_VERSION_MAJOR);
    assert_int_equal(minor, SPLAT_VERSION_MINOR);
    assert_int_equal(patch, SPLAT_VERSION_PATCH);
    assert_int_equal(splat_version_number(), major * 10000 + minor * 100 + patch);
    assert_true(splat_version_number() >= 200); /* API 2 came with 0.2 */
    assert_true(strlen(splat_commit()) > 0);
}

static jmp_buf g_oom_jump;
static size_t g_oom_bytes;
static void *g_oom_user;
static void api_oom(void *user, size_t bytes) {
    g_oom_user = user;
    g_oom_bytes = bytes;
    longjmp(g_oom_jump, 1);
}

static void test_oom_handler_and_limit(void **state) {
    (void)state;
    /* the program's handler gets its pointer and the size when a bookkeeping allocation fails
     * (count * size overflowing: no real allocation is tried) */
    int token = 7;
    splat_set_oom_handler(api_oom, &token);
    g_oom_bytes = 0;
    g_oom_user = NULL;
    if (setjmp(g_oom_jump) == 0) {
        void *volatile p = sp_calloc(SIZE_MAX / 8, 16);
        (void)p;
        fail_msg("sp_calloc returned on overflow");
    }
    assert_ptr_equal(g_oom_user, &token);
    assert_true(g_oom_bytes > 0);
    /* NULL: the default again, which prints and aborts (in a child) */
    splat_set_oom_handler(NULL, NULL);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (!freopen("/dev/null", "w", stderr)) _exit(3);
        void *volatile p = sp_calloc(SIZE_MAX / 8, 16);
        (void)p;
        _exit(0); /* not reached */
    }
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFSIGNALED(st));
    assert_int_equal(WTERMSIG(st), SIGABRT);

    /* the allocation limit: data-sized allocations over it fail the call with SPLAT_NOMEM */
    splat_context *ctx;
    assert_int_equal(splat_open(&ctx), SPLAT_OK);
    char *ply = sp_path_join(g_tmp, "oom.ply");
    sp_gaussians g;
    sp_gaussians_init(&g, 50, 0);
    g.n = 50;
    for (int i = 0; i < 50; i++) {
        g.quats[4 * i] = 1.0f;
        for (int k = 0; k < 3; k++) g.log_scales[3 * i + k] = -3.0f;
    }
    assert_int_equal(sp_ply_write(ply, &g), 0);
    sp_gaussians_free(&g);
    assert_int_equal(splat_load_model(ctx, ply), SPLAT_OK);
    assert_int_equal(splat_config_set(ctx, "backend.kind=cpu"), SPLAT_OK);
    splat_camera cam;
    const float eye[3] = {0, 0, -3}, at[3] = {0, 0, 0}, up[3] = {0, -1, 0}, white[3] = {1, 1, 1};
    assert_int_equal(splat_camera_look_at(&cam, 400, 300, 0.8f, eye, at, up), SPLAT_OK);
    uint8_t *px = malloc(400 * 300 * 4);
    splat_set_alloc_limit(100000); /* a 400x300 float render needs 1.4 MB */
    assert_int_equal(splat_render(ctx, &cam, white, SPLAT_RGBA8, px, 0), SPLAT_NOMEM);
    tu_assert_contains(splat_errmsg(ctx), "out of memory");
    splat_set_alloc_limit(0);
    assert_int_equal(splat_render(ctx, &cam, white, SPLAT_RGBA8, px, 0), SPLAT_OK);
    free(px);
    free(ply);
    splat_close(ctx);
}

#ifdef HAVE_MXCSR
static unsigned g_mode_in_call;
static void note_mode(void *user, const splat_progress *p) {
    (void)user;
    (void)p;
    g_mode_in_call = _mm_getcsr();
}
#endif

/* The library's CPU work flushes denormals (FTZ and DAZ), but the calling thread has its own mode
 * back when each call returns, whatever it was. */
static void test_caller_fp_mode_kept(void **state) {
    (void)state;
#ifdef HAVE_MXCSR
    unsigned mine = _mm_getcsr();
    _mm_setcsr(mine & ~FTZ_DAZ);
    unsigned before = _mm_getcsr();
    splat_context *ctx = tiny_context("fpmode", 3, 20);
    splat_train_opts o = {.force = 1, .progress = note_mode};
    g_mode_in_call = 0;
    assert_int_equal(splat_train(ctx, &o), SPLAT_OK); /* creates the CPU backend: its threads flush */
    assert_int_equal(g_mode_in_call & FTZ_DAZ, FTZ_DAZ); /* inside the call: the library's mode */
    assert_int_equal(_mm_getcsr(), before);
    splat_camera cam;
    assert_int_equal(splat_dataset_camera(ctx, "test", 0, &cam), SPLAT_OK);
    uint8_t *px = malloc((size_t)cam.width * cam.height * 4);
    const float white[3] = {1, 1, 1};
    assert_int_equal(splat_render(ctx, &cam, white, SPLAT_RGBA8, px, 0), SPLAT_OK);
    assert_int_equal(_mm_getcsr(), before);
    /* a failed call too */
    assert_int_equal(splat_render(ctx, NULL, white, SPLAT_RGBA8, px, 0), SPLAT_INVALID);
    assert_int_equal(_mm_getcsr(), before);
    /* a caller that flushes itself keeps it, and another rounding mode stays as it was */
    _mm_setcsr(before | FTZ_DAZ | _MM_ROUND_TOWARD_ZERO);
    unsigned flushing = _mm_getcsr();
    assert_int_equal(splat_render(ctx, &cam, white, SPLAT_RGBA8, px, 0), SPLAT_OK);
    assert_int_equal(_mm_getcsr(), flushing);
    _mm_setcsr(mine);
    free(px);
    splat_close(ctx);
#else
    skip();
#endif
}

/* ---- API 2: configuration ---- */

static void test_typed_config(void **state) {
    (void)state;
    splat_context *ctx;
    assert_int_equal(splat_open(&ctx), SPLAT_OK);
    int i = 0, b = -1;
    double d = 0;
    char buf[64];
    assert_int_equal(splat_config_get_int(ctx, "trainer.max_steps", &i), SPLAT_OK);
    assert_int_equal(i, 20000);
    assert_int_equal(splat_config_get_double(ctx, "trainer.max_steps", &d), SPLAT_OK); /* an integer as a double */
    assert_true(d == 20000.0);
    assert_int_equal(splat_config_get_double(ctx, "loss.ssim_weight", &d), SPLAT_OK);
    assert_float_equal(d, 0.1, 1e-12);
    assert_int_equal(splat_config_get_bool(ctx, "output.save_ply", &b), SPLAT_OK);
    assert_int_equal(b, 1);
    assert_int_equal(splat_config_get_string(ctx, "backend.kind", buf, sizeof buf), SPLAT_OK);
    assert_string_equal(buf, "auto");
    /* wrong types and unknown keys */
    assert_int_equal(splat_config_get_int(ctx, "loss.ssim_weight", &i), SPLAT_INVALID);
    tu_assert_contains(splat_errmsg(ctx), "loss.ssim_weight is a number, not an integer");
    assert_int_equal(splat_config_get_string(ctx, "trainer.max_steps", buf, sizeof buf), SPLAT_INVALID);
    tu_assert_contains(splat_errmsg(ctx), "not a string");
    assert_int_equal(splat_config_get_bool(ctx, "trainer.max_stepz", &b), SPLAT_INVALID);
    tu_assert_contains(splat_errmsg(ctx), "unknown configuration key 'trainer.max_stepz'");
    assert_int_equal(splat_config_get_int(ctx, "trainer.max_steps", NULL), SPLAT_INVALID);
    /* strings set exactly as given: spaces, quotes, backslashes, leading quotes, empty */
    const char *values[] = {"/my scans/lego", " padded ", "a \"quoted\" name", "\"lead", "back\\slash", ""};
    for (size_t k = 0; k < sizeof values / sizeof *values; k++) {
        char got[256];
        assert_int_equal(splat_config_set_string(ctx, "data.path", values[k]), SPLAT_OK);
        assert_int_equal(splat_config_get_string(ctx, "data.path", got, sizeof got), SPLAT_OK);
        assert_string_equal(got, values[k]);
    }
    assert_int_equal(splat_config_set_string(ctx, "data.path", "/x/y"), SPLAT_OK);
    assert_int_equal(splat_config_get_string(ctx, "data.path", buf, 4), SPLAT_INVALID); /* does not fit */
    assert_int_equal(splat_config_set_string(ctx, "trainer.max_steps", "7"), SPLAT_INVALID);
    tu_assert_contains(splat_errmsg(ctx), "not a string");
    assert_int_equal(splat_config_set_string(ctx, "backend.kind", "quantum"), SPLAT_INVALID); /* checked as --set is */
    tu_assert_contains(splat_errmsg(ctx), "backend.kind");
    assert_int_equal(splat_config_get_string(ctx, "backend.kind", buf, sizeof buf), SPLAT_OK);
    assert_string_equal(buf, "auto"); /* unchanged */

    /* the text is what splat_config_save writes */
    size_t need = 0;
    assert_int_equal(splat_config_text(ctx, NULL, 0, &need), SPLAT_INVALID);
    assert_true(need > 1000);
    char *text = malloc(need);
    assert_int_equal(splat_config_text(ctx, text, need - 1, NULL), SPLAT_INVALID);
    assert_int_equal(splat_config_text(ctx, text, need, NULL), SPLAT_OK);
    assert_int_equal(strlen(text) + 1, need);
    char *path = sp_path_join(g_tmp, "text.toml");
    assert_int_equal(splat_config_save(ctx, path), SPLAT_OK);
    size_t n;
    char *saved = read_all(path, &n);
    assert_int_equal(n, need - 1);
    assert_memory_equal(saved, text, n);
    free(saved);
    free(text);

    /* the difference from a run's configuration (resolved, as training writes it): only what
     * changes results */
    assert_int_equal(splat_config_set(ctx, "backend.kind=cpu"), SPLAT_OK);
    assert_int_equal(splat_config_resolve(ctx), SPLAT_OK);
    assert_int_equal(splat_config_save(ctx, path), SPLAT_OK);
    assert_int_equal(splat_config_set(ctx, "refine.strategy=auto"), SPLAT_OK); /* resolved alike */
    char *diff = malloc(4096);
    assert_int_equal(splat_config_diff(ctx, path, diff, 4096, &need), SPLAT_OK);
    assert_string_equal(diff, "");
    assert_int_equal(need, 1);
    assert_int_equal(splat_config_set(ctx, "trainer.max_steps=60"), SPLAT_OK);
    assert_int_equal(splat_config_set(ctx, "output.run_dir=/elsewhere"), SPLAT_OK); /* not a result */
    assert_int_equal(splat_config_diff(ctx, path, diff, 4096, &need), SPLAT_OK);
    assert_string_equal(diff, "trainer.max_steps = 60 (the run has 20000)");
    assert_int_equal(need, strlen(diff) + 1);
    assert_int_equal(splat_config_diff(ctx, path, diff, 5, &need), SPLAT_INVALID);
    tu_write_text(path, "[trainer]\nmax_steps = \"many\"\n");
    assert_int_equal(splat_config_diff(ctx, path, diff, 4096, NULL), SPLAT_ERROR);
    tu_assert_contains(splat_errmsg(ctx), "text.toml:2");
    free(diff);
    free(path);

    /* what training resolves once the backend is known */
    assert_int_equal(splat_config_load_string(ctx, "[refine]\nstrategy = \"auto\"\n[init]\nopacity = 0.0\n", NULL),
                     SPLAT_OK);
    assert_int_equal(splat_config_resolve(ctx), SPLAT_OK);
    assert_int_equal(splat_config_get_string(ctx, "refine.strategy", buf, sizeof buf), SPLAT_OK);
    assert_string_equal(buf, "mcmc");
    assert_int_equal(splat_config_get_double(ctx, "init.opacity", &d), SPLAT_OK);
    assert_float_equal(d, 0.5, 1e-12);
    assert_int_equal(splat_config_load_string(ctx, "[refine]\nstrategy = \"auto\"\n[init]\nopacity = 0.0\n", NULL),
                     SPLAT_OK);
    assert_int_equal(splat_config_set(ctx, "backend.devices=2"), SPLAT_OK); /* two devices: no mcmc */
    assert_int_equal(splat_config_resolve(ctx), SPLAT_OK);
    assert_int_equal(splat_config_get_string(ctx, "refine.strategy", buf, sizeof buf), SPLAT_OK);
    assert_string_equal(buf, "adc");
    assert_int_equal(splat_config_get_double(ctx, "init.opacity", &d), SPLAT_OK);
    assert_float_equal(d, 0.1, 1e-12);
    assert_int_equal(splat_config_load_string(ctx, "[backend]\ndevices = \"1\"\n[refine]\nstrategy = \"mcmc\"\n"
                                                   "max_gaussians = 1000\n[init]\ncount = 5000\n", NULL),
                     SPLAT_OK);
    assert_int_equal(splat_config_resolve(ctx), SPLAT_OK); /* init.method auto: decided with the dataset */
    assert_int_equal(splat_config_set(ctx, "init.method=random"), SPLAT_OK);
    assert_int_equal(splat_config_resolve(ctx), SPLAT_INVALID);
    tu_assert_contains(splat_errmsg(ctx), "refine.max_gaussians");
    splat_close(ctx);
}

/* ---- API 2: checks before training ---- */

static void test_backend_and_dataset_checks(void **state) {
    (void)state;
    splat_context *ctx = tiny_context("checks", 1, 30);
    char line[512];
    assert_int_equal(splat_backend_describe(ctx, line, sizeof line), SPLAT_OK);
    tu_assert_contains(line, "cpu (");
    assert_int_equal(splat_backend_describe(ctx, line, 3), SPLAT_INVALID); /* does not fit */
    /* two devices need the replicated cuda backend, which the cpu kind is not */
    assert_int_equal(splat_config_set(ctx, "backend.devices=2"), SPLAT_OK);
    assert_int_equal(splat_backend_describe(ctx, line, sizeof line), SPLAT_ERROR);
    tu_assert_contains(line, "need backend.kind = \"cuda\"");
    tu_assert_contains(splat_errmsg(ctx), "backend.devices");
    /* bad devices */
    assert_int_equal(splat_config_set(ctx, "backend.devices=1,1"), SPLAT_OK);
    assert_int_equal(splat_backend_describe(ctx, line, sizeof line), SPLAT_INVALID);
    tu_assert_contains(splat_errmsg(ctx), "listed twice");
    tu_assert_contains(line, "listed twice");
    assert_int_equal(splat_config_set(ctx, "backend.devices=1"), SPLAT_OK);

    /* the dataset, every image decoded */
    splat_dataset_info info;
    assert_int_equal(splat_dataset_check(ctx, &info), SPLAT_OK);
    assert_string_equal(info.format, "blender");
    assert_int_equal(info.has_alpha, 1);
    assert_int_equal(info.train.views, 8);
    assert_int_equal(info.val.views, 1);
    assert_int_equal(info.test.views, 2);
    assert_int_equal(info.train.width, 24);
    assert_int_equal(info.train.height, 24);
    assert_int_equal(info.train.channels, 4);
    assert_true(info.train.fx > 0 && fabsf(info.train.cx - 12.0f) < 1e-4f);
    assert_int_equal(info.num_points, 0);
    assert_true(info.extent > 0 && info.init_max[0] > info.init_min[0]);
    assert_int_equal(splat_config_set(ctx, "data.downscale=2"), SPLAT_OK);
    assert_int_equal(splat_dataset_check(ctx, &info), SPLAT_OK);
    assert_int_equal(info.test.width, 12);
    /* a damaged image: every problem named */
    char *copy = sp_path_join(g_tmp, "damaged");
    assert_int_equal(splat_synth(ctx, copy, 24, 2, 0, 1, 9), SPLAT_OK);
    char *png = sp_path_join(copy, "train/r_1.png");
    tu_write_text(png, "not a png");
    char *set = sp_strfmt("data.path=%s", copy);
    assert_int_equal(splat_config_set(ctx, set), SPLAT_OK);
    assert_int_equal(splat_dataset_check(ctx, &info), SPLAT_ERROR);
    tu_assert_contains(splat_errmsg(ctx), "r_1.png");
    assert_int_equal(splat_config_set(ctx, "data.path="), SPLAT_OK);
    assert_int_equal(splat_dataset_check(ctx, &info), SPLAT_INVALID);
    assert_string_equal(info.format, "");
    assert_int_equal(splat_dataset_check(ctx, NULL), SPLAT_INVALID);
    free(set);
    free(png);
    free(copy);
    splat_close(ctx);
}

/* ---- API 2: several processes ---- */

static void test_several_processes(void **state) {
    (void)state;
    splat_context *ctx = tiny_context("processes", 1, 30);
    char line[512];
    /* the environment is the program's: the library takes nothing from it */
    setenv("SPLAT_RANK", "1", 1);
    setenv("SPLAT_WORLD_SIZE", "2", 1);
    assert_int_equal(splat_backend_describe(ctx, line, sizeof line), SPLAT_OK);
    tu_assert_contains(line, "cpu (");
    splat_plan p;
    assert_int_equal(splat_train_plan(ctx, &p), SPLAT_OK);
    assert_string_equal(p.backend, "cpu");
    unsetenv("SPLAT_RANK");
    unsetenv("SPLAT_WORLD_SIZE");

    /* bad placements are refused, naming the setting, and change nothing */
    splat_dist d = {.rank = 2, .world_size = 2, .id_file = "/shared/id"};
    assert_int_equal(splat_set_dist(ctx, &d), SPLAT_INVALID);
    tu_assert_contains(splat_errmsg(ctx), "rank = 2 is outside [0, world_size = 2)");
    d = (splat_dist){.rank = 0, .world_size = 0};
    assert_int_equal(splat_set_dist(ctx, &d), SPLAT_INVALID);
    tu_assert_contains(splat_errmsg(ctx), "world_size = 0");
    d = (splat_dist){.rank = 0, .world_size = 2, .local_rank = -1, .id_file = "/shared/id"};
    assert_int_equal(splat_set_dist(ctx, &d), SPLAT_INVALID);
    tu_assert_contains(splat_errmsg(ctx), "local_rank = -1");
    d = (splat_dist){.rank = 1, .world_size = 2};
    assert_int_equal(splat_set_dist(ctx, &d), SPLAT_INVALID);
    tu_assert_contains(splat_errmsg(ctx), "no id_file");
    assert_null(strstr(splat_errmsg(ctx), "SPLAT_"));
    assert_null(strstr(splat_errmsg(ctx), "--dist-file"));
    char id[1100];
    memset(id, 'x', sizeof id - 1);
    id[sizeof id - 1] = 0;
    d = (splat_dist){.rank = 1, .world_size = 2, .id_file = id};
    assert_int_equal(splat_set_dist(ctx, &d), SPLAT_INVALID); /* a path too long to keep */
    tu_assert_contains(splat_errmsg(ctx), "too long");
    assert_int_equal(splat_backend_describe(ctx, line, sizeof line), SPLAT_OK); /* still alone */
    /* two processes (this one the writer): the replicated cuda backend, which the cpu kind is
     * not; no mcmc */
    d.rank = 0;
    d.id_file = "/shared/id";
    assert_int_equal(splat_set_dist(ctx, &d), SPLAT_OK);
    assert_int_equal(splat_backend_describe(ctx, line, sizeof line), SPLAT_ERROR);
    tu_assert_contains(line, "need backend.kind = \"cuda\"");
    tu_assert_contains(splat_errmsg(ctx), "world_size above 1");
    assert_int_equal(splat_config_set(ctx, "refine.strategy=auto"), SPLAT_OK);
    assert_int_equal(splat_config_resolve(ctx), SPLAT_OK);
    char buf[64];
    assert_int_equal(splat_config_get_string(ctx, "refine.strategy", buf, sizeof buf), SPLAT_OK);
    assert_string_equal(buf, "adc");
    /* training refuses it before writing anything */
    splat_train_opts o = {.force = 1};
    assert_int_equal(splat_train(ctx, &o), SPLAT_ERROR);
    tu_assert_contains(splat_errmsg(ctx), "need backend.kind = \"cuda\"");
    char *run = sp_path_join(g_tmp, "processes");
    assert_false(sp_dir_exists(run));
    free(run);
    /* alone again */
    assert_int_equal(splat_set_dist(ctx, NULL), SPLAT_OK);
    assert_int_equal(splat_backend_describe(ctx, line, sizeof line), SPLAT_OK);
    assert_int_equal(splat_config_set(ctx, "refine.strategy=auto"), SPLAT_OK);
    assert_int_equal(splat_config_resolve(ctx), SPLAT_OK);
    assert_int_equal(splat_config_get_string(ctx, "refine.strategy", buf, sizeof buf), SPLAT_OK);
    assert_string_equal(buf, "mcmc");
    splat_close(ctx);
}

/* ---- API 2: images ---- */

static void test_dataset_image_and_png(void **state) {
    (void)state;
    splat_context *ctx = tiny_context("png", 6, 30);
    splat_train_opts o = {.force = 1};
    assert_int_equal(splat_train(ctx, &o), SPLAT_OK);
    splat_camera cam;
    assert_int_equal(splat_dataset_camera(ctx, "train", 3, &cam), SPLAT_OK);
    char name[256];
    assert_int_equal(splat_dataset_view_name(ctx, "train", 3, name, sizeof name), SPLAT_OK);
    /* the image as stored (RGBA PNG of the demo scene) */
    char *file = sp_strfmt("%s/%s.png", g_scene, name);
    sp_image img;
    assert_int_equal(sp_image_load(file, &img), 0);
    assert_int_equal(img.channels, 4);
    size_t px = (size_t)cam.width * cam.height;
    uint8_t *rgba = malloc(px * 4);
    assert_int_equal(splat_dataset_image(ctx, "train", 3, NULL, SPLAT_RGBA8, rgba, 0), SPLAT_OK);
    assert_memory_equal(rgba, img.pixels, px * 4);
    /* on a background: straight alpha composited, alpha 1; floats the same before quantization */
    const float bg[3] = {1.0f, 0.0f, 0.25f};
    float *f = malloc(px * 16);
    assert_int_equal(splat_dataset_image(ctx, "train", 3, bg, SPLAT_RGBA_F32, f, 0), SPLAT_OK);
    int partial = 0;
    for (size_t i = 0; i < px; i++) {
        float a = img.pixels[4 * i + 3] / 255.0f;
        for (int k = 0; k < 3; k++)
            assert_float_equal(f[4 * i + k], img.pixels[4 * i + k] / 255.0f * a + bg[k] * (1 - a), 1e-5);
        assert_true(f[4 * i + 3] == 1.0f);
        partial += a > 0 && a < 1;
    }
    assert_true(partial > 0);
    /* a row stride: the same rows */
    uint8_t *wide = malloc(px * 8);
    assert_int_equal(splat_dataset_image(ctx, "train", 3, NULL, SPLAT_RGBA8, wide, (size_t)cam.width * 8), SPLAT_OK);
    for (int y = 0; y < cam.height; y++)
        assert_memory_equal(wide + (size_t)y * cam.width * 8, rgba + (size_t)y * cam.width * 4, (size_t)cam.width * 4);
    assert_int_equal(splat_dataset_image(ctx, "train", 99, NULL, SPLAT_RGBA8, rgba, 0), SPLAT_INVALID);
    assert_int_equal(splat_dataset_image(ctx, "train", 3, NULL, SPLAT_RGBA8, rgba, 8), SPLAT_INVALID);
    assert_int_equal(splat_dataset_image(ctx, "side", 0, NULL, SPLAT_RGBA8, rgba, 0), SPLAT_INVALID);
    sp_image_free(&img);

    /* a render into a PNG: the pixels splat_render gives (RGB on a background, RGBA without) */
    const float white[3] = {1, 1, 1};
    char *out = sp_path_join(g_tmp, "render.png");
    assert_int_equal(splat_render_png(ctx, &cam, white, out), SPLAT_OK);
    assert_int_equal(splat_render(ctx, &cam, white, SPLAT_RGBA8, rgba, 0), SPLAT_OK);
    assert_int_equal(sp_image_load(out, &img), 0);
    assert_int_equal(img.channels, 3);
    assert_int_equal(img.width, cam.width);
    for (size_t i = 0; i < px; i++) assert_memory_equal(img.pixels + 3 * i, rgba + 4 * i, 3);
    sp_image_free(&img);
    assert_int_equal(splat_render_png(ctx, &cam, NULL, out), SPLAT_OK);
    assert_int_equal(splat_render(ctx, &cam, NULL, SPLAT_RGBA8, rgba, 0), SPLAT_OK);
    assert_int_equal(sp_image_load(out, &img), 0);
    assert_int_equal(img.channels, 4);
    assert_memory_equal(img.pixels, rgba, px * 4);
    sp_image_free(&img);
    char *nowhere = sp_path_join(g_tmp, "no/such/dir/r.png");
    assert_int_equal(splat_render_png(ctx, &cam, white, nowhere), SPLAT_ERROR);
    tu_assert_contains(splat_errmsg(ctx), "no/such/dir/r.png");
    assert_int_equal(splat_render_png(ctx, &cam, white, NULL), SPLAT_INVALID);

    /* the formats splat_export picks from a name */
    assert_string_equal(splat_model_format("a.ply"), "ply");
    assert_string_equal(splat_model_format("dir.x/A.SPZ"), "spz");
    assert_string_equal(splat_model_format("m.splat"), "splat");
    assert_string_equal(splat_model_format("m.glb"), "glb");
    assert_string_equal(splat_model_format("scene.sog"), "sog");
    assert_string_equal(splat_model_format("out/meta.json"), "sog");
    assert_null(splat_model_format("a.obj"));
    assert_null(splat_model_format("ply"));
    assert_null(splat_model_format("dir.ply/model"));
    assert_null(splat_model_format(NULL));
    free(nowhere);
    free(out);
    free(wide);
    free(f);
    free(rgba);
    free(file);
    splat_close(ctx);
}

/* ---- API 2: path and JPEG helpers ---- */

/* splat_path_resolve names one file one way (".", "..", symlinks, not yet existing tails);
 * splat_path_within; splat_encode_jpeg decodes back to the image it was given, within JPEG's
 * loss, and refuses what it cannot encode. */
static void test_path_and_jpeg_helpers(void **state) {
    (void)state;
    char *dir = sp_path_join(g_tmp, "paths"), *link = sp_path_join(g_tmp, "paths-link");
    assert_int_equal(sp_mkdir_p(dir), 0);
    assert_int_equal(symlink(dir, link), 0);
    char *a = splat_path_resolve(dir), *b = sp_strfmt("%s/./x/../", link), *rb = splat_path_resolve(b);
    assert_non_null(a);
    assert_string_equal(a, rb);
    char *tail = sp_strfmt("%s/not/yet", link), *rt = splat_path_resolve(tail), *want = sp_strfmt("%s/not/yet", a);
    assert_string_equal(rt, want);
    assert_int_equal(splat_path_within(tail, dir), 1);
    assert_int_equal(splat_path_within(dir, dir), 1);
    assert_int_equal(splat_path_within(g_tmp, dir), 0);
    assert_int_equal(splat_path_within(NULL, dir), 0);
    assert_null(splat_path_resolve(NULL));
    free(a), free(b), free(rb), free(tail), free(rt), free(want), free(dir), free(link);

    enum { W = 40, H = 24 };
    uint8_t rgb[W * H * 3];
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            uint8_t *p = rgb + 3 * (y * W + x);
            p[0] = (uint8_t)(x * 6), p[1] = (uint8_t)(y * 10), p[2] = 128;
        }
    unsigned char *jpg = NULL;
    unsigned long n = 0;
    assert_int_equal(splat_encode_jpeg(rgb, W, H, 95, &jpg, &n), 0);
    assert_true(n > 100 && jpg[0] == 0xFF && jpg[1] == 0xD8);
    sp_image img;
    assert_int_equal(sp_image_decode("x.jpg", jpg, n, 1 << 20, &img), 0);
    assert_int_equal(img.width, W);
    assert_int_equal(img.height, H);
    int worst = 0;
    for (int i = 0; i < W * H * 3; i++) worst = abs((int)img.pixels[i] - (int)rgb[i]) > worst ? abs((int)img.pixels[i] - (int)rgb[i]) : worst;
    assert_true(worst <= 12);
    sp_image_free(&img);
    free(jpg);
    assert_int_equal(splat_encode_jpeg(rgb, 0, H, 95, &jpg, &n), -1);
    assert_null(jpg);
    assert_int_equal(splat_encode_jpeg(rgb, W, H, 0, &jpg, &n), -1);
    assert_int_equal(splat_encode_jpeg(NULL, W, H, 90, &jpg, &n), -1);
}

/* ---- API 2: synth options ---- */

static void test_synth_options(void **state) {
    (void)state;
    splat_synth_opts o;
    assert_int_equal(splat_synth_defaults(&o, "objects"), SPLAT_OK);
    assert_string_equal(o.scene, "objects");
    assert_int_equal(o.width, 128);
    assert_int_equal(o.height, 128);
    assert_int_equal(o.num_train, 100);
    assert_int_equal(o.num_val, 25);
    assert_int_equal(o.num_test, 25);
    assert_int_equal(o.samples, 4);
    assert_true(o.seed == 0);
    assert_int_equal(splat_synth_defaults(&o, "capture"), SPLAT_OK);
    assert_string_equal(o.scene, "capture");
    assert_int_equal(o.width, 1600);
    assert_int_equal(o.height, 1200);
    assert_int_equal(o.num_train, 1000);
    assert_int_equal(o.num_val + o.num_test, 0);
    assert_int_equal(o.samples, 1);
    assert_int_equal(splat_synth_defaults(&o, "cave"), SPLAT_INVALID);

    /* the objects scene equals splat_synth's with the same options, file for file */
    splat_context *ctx;
    assert_int_equal(splat_open(&ctx), SPLAT_OK);
    char *a = sp_path_join(g_tmp, "synth_a"), *b = sp_path_join(g_tmp, "synth_b");
    assert_int_equal(splat_synth(ctx, a, 16, 2, 0, 1, 5), SPLAT_OK);
    assert_int_equal(splat_synth_defaults(&o, "objects"), SPLAT_OK);
    o.width = o.height = 16;
    o.num_train = 2, o.num_val = 0, o.num_test = 1, o.seed = 5;
    assert_int_equal(splat_synth_scene(ctx, b, &o), SPLAT_OK);
    const char *files[] = {"transforms_train.json", "transforms_test.json", "train/r_1.png", "test/r_0.png"};
    for (int k = 0; k < 4; k++) {
        char *pa = sp_path_join(a, files[k]), *pb = sp_path_join(b, files[k]);
        size_t na, nb;
        char *da = read_all(pa, &na), *db = read_all(pb, &nb);
        assert_int_equal(na, nb);
        assert_memory_equal(da, db, na);
        free(da);
        free(db);
        free(pa);
        free(pb);
    }
    /* a non-square size and one sample differ */
    o.width = 20, o.samples = 1;
    assert_int_equal(splat_synth_scene(ctx, b, &o), SPLAT_OK);
    char *png = sp_path_join(b, "train/r_0.png");
    sp_image img;
    assert_int_equal(sp_image_load(png, &img), 0);
    assert_int_equal(img.width, 20);
    assert_int_equal(img.height, 16);
    sp_image_free(&img);
    /* the capture scene: transforms.json and JPEGs; train views only */
    char *c = sp_path_join(g_tmp, "synth_capture");
    assert_int_equal(splat_synth_defaults(&o, "capture"), SPLAT_OK);
    o.width = 32, o.height = 24, o.num_train = 3;
    assert_int_equal(splat_synth_scene(ctx, c, &o), SPLAT_OK);
    char *tj = sp_path_join(c, "transforms.json"), *jpg = sp_path_join(c, "images/00002.jpg");
    assert_true(sp_file_exists(tj));
    assert_int_equal(sp_image_load(jpg, &img), 0);
    assert_int_equal(img.width, 32);
    assert_int_equal(img.channels, 3);
    sp_image_free(&img);
    o.num_val = 1;
    assert_int_equal(splat_synth_scene(ctx, c, &o), SPLAT_INVALID);
    tu_assert_contains(splat_errmsg(ctx), "every 8th");
    o.num_val = 0, o.width = 4;
    assert_int_equal(splat_synth_scene(ctx, c, &o), SPLAT_INVALID);
    o.width = 32, o.scene = "cave";
    assert_int_equal(splat_synth_scene(ctx, c, &o), SPLAT_INVALID);
    tu_assert_contains(splat_errmsg(ctx), "cave");
    assert_int_equal(splat_synth_scene(ctx, c, NULL), SPLAT_INVALID);
    free(tj);
    free(jpg);
    free(c);
    free(png);
    free(a);
    free(b);
    splat_close(ctx);
}

/* ---- API 2: run folders and chains ---- */

static void test_results_and_chains(void **state) {
    (void)state;
    const char *const *files = splat_run_files();
    int have_config = 0, have_ck = 0, have_renders = 0, n = 0;
    for (; files[n]; n++) {
        have_config |= !strcmp(files[n], "config.toml");
        have_ck |= !strcmp(files[n], "checkpoint.bin");
        have_renders |= !strcmp(files[n], "renders/");
    }
    assert_true(n >= 5 && have_config && have_ck && have_renders);

    splat_context *ctx;
    assert_int_equal(splat_open(&ctx), SPLAT_OK);
    char *chain = sp_path_join(g_tmp, "chain.toml"), *out = sp_path_join(g_tmp, "chain_out");
    char *text = sp_strfmt("[chain]\nset = [\"trainer.max_steps=20\", \"init.count=200\", "
                           "\"output.save_renders=false\", \"backend.kind=cpu\", \"refine.strategy=adc\"]\n"
                           "[scene.first]\npath = \"%s\"\n"
                           "[scene.second]\npath = \"%s\"\nset = [\"data.downscale=2\"]\n",
                           g_scene, g_scene);
    tu_write_text(chain, text);
    free(text);
    int scenes = 0;
    const char *dir = NULL, *name = NULL, *run = NULL;
    assert_int_equal(splat_chain_info(ctx, &scenes, &dir), SPLAT_INVALID); /* none loaded */
    const char *sets[] = {"trainer.log_every=10"};
    assert_int_equal(splat_chain_load(ctx, chain, sets, 1, out), SPLAT_OK);
    assert_int_equal(splat_chain_info(ctx, &scenes, &dir), SPLAT_OK);
    assert_int_equal(scenes, 2);
    assert_string_equal(dir, out);
    assert_int_equal(splat_chain_scene(ctx, 1, &name, &run), SPLAT_OK);
    assert_string_equal(name, "second");
    char *want = sp_path_join(out, "second");
    assert_string_equal(run, want);
    free(want);
    assert_int_equal(splat_chain_scene(ctx, 2, &name, NULL), SPLAT_INVALID);
    /* a scene's configuration becomes the context's */
    assert_int_equal(splat_chain_use_scene(ctx, 1), SPLAT_OK);
    int v = 0;
    assert_int_equal(splat_config_get_int(ctx, "data.downscale", &v), SPLAT_OK);
    assert_int_equal(v, 2);
    assert_int_equal(splat_config_get_int(ctx, "trainer.log_every", &v), SPLAT_OK);
    assert_int_equal(v, 10);
    assert_int_equal(splat_chain_use_scene(ctx, 0), SPLAT_OK);
    assert_int_equal(splat_config_get_int(ctx, "data.downscale", &v), SPLAT_OK);
    assert_int_equal(v, 1);
    /* train the first; its result, and the summary with it and the second not run */
    assert_int_equal(splat_chain_scene(ctx, 0, NULL, &run), SPLAT_OK);
    splat_run_result r;
    assert_int_equal(splat_read_result(ctx, run, &r), SPLAT_ERROR);
    tu_assert_contains(splat_errmsg(ctx), "result.toml");
    assert_int_equal(splat_train(ctx, NULL), SPLAT_OK);
    assert_int_equal(splat_read_result(ctx, run, &r), SPLAT_OK);
    assert_string_equal(r.status, "complete");
    assert_string_equal(r.split, "test");
    assert_int_equal(r.steps, 20);
    assert_true(isfinite(r.psnr) && r.psnr > 5 && r.ssim > 0 && r.ssim <= 1);
    assert_true(r.gaussians > 0 && r.train_seconds >= 0);
    int include[2] = {1, 0};
    assert_int_equal(splat_chain_write_summary(ctx, include), SPLAT_OK);
    char *summary = sp_path_join(out, "summary.md");
    size_t len;
    char *md = read_all(summary, &len);
    tu_assert_contains(md, "| first | complete |");
    tu_assert_contains(md, "second");
    tu_assert_contains(md, "not run");
    free(md);
    char *curves = sp_path_join(out, "curves.png"), *toml = sp_path_join(out, "summary.toml");
    assert_true(sp_file_exists(curves) && sp_file_exists(toml));
    /* the run's configuration equals what the chain asks, until the chain asks for more steps */
    char *cfg = sp_path_join(run, "config.toml");
    char diff[512];
    assert_int_equal(splat_config_diff(ctx, cfg, diff, sizeof diff, NULL), SPLAT_OK);
    assert_string_equal(diff, "");
    const char *more[] = {"trainer.max_steps=25"};
    assert_int_equal(splat_chain_load(ctx, chain, more, 1, out), SPLAT_OK);
    assert_int_equal(splat_chain_use_scene(ctx, 0), SPLAT_OK);
    assert_int_equal(splat_config_diff(ctx, cfg, diff, sizeof diff, NULL), SPLAT_OK);
    tu_assert_contains(diff, "trainer.max_steps = 25 (the run has 20)");
    /* a chain with problems: each named with its line, the loaded chain kept */
    tu_write_text(chain, "[chain]\nset = [\"trainer.max_stepz=3\"]\n[scene.x]\npath = 7\n");
    assert_int_equal(splat_chain_load(ctx, chain, NULL, 0, NULL), SPLAT_INVALID);
    tu_assert_contains(splat_errmsg(ctx), "chain.toml:2");
    tu_assert_contains(splat_errmsg(ctx), "chain.toml:4");
    assert_int_equal(splat_chain_info(ctx, &scenes, NULL), SPLAT_OK);
    assert_int_equal(scenes, 2);
    free(cfg);
    free(curves);
    free(toml);
    free(summary);
    free(chain);
    free(out);
    splat_close(ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_errors_name_what_failed),
        cmocka_unit_test(test_error_from_itself),
        cmocka_unit_test(test_config_get_set_save),
        cmocka_unit_test(test_log_callback_per_call),
        cmocka_unit_test(test_load_export_formats),
        cmocka_unit_test(test_cancel),
        cmocka_unit_test(test_resume_uses_the_context_config),
        cmocka_unit_test(test_train_plan),
        cmocka_unit_test(test_render_cameras),
        cmocka_unit_test(test_antialias_model),
        cmocka_unit_test(test_two_contexts_two_threads),
        cmocka_unit_test(test_reentrant_call_fails),
        cmocka_unit_test(test_messages_per_thread),
        cmocka_unit_test(test_one_folder_two_runs),
        cmocka_unit_test(test_live_model),
        cmocka_unit_test(test_versions),
        cmocka_unit_test(test_oom_handler_and_limit),
        cmocka_unit_test(test_caller_fp_mode_kept),
        cmocka_unit_test(test_typed_config),
        cmocka_unit_test(test_backend_and_dataset_checks),
        cmocka_unit_test(test_several_processes),
        cmocka_unit_test(test_dataset_image_and_png),
        cmocka_unit_test(test_synth_options),
        cmocka_unit_test(test_path_and_jpeg_helpers),
        cmocka_unit_test(test_results_and_chains),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
