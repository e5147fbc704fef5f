/* api_run.c — the public API's work calls (include/splat.h): training, cancelling, cameras and
 * the dataset's images, rendering any camera into RGBA8 or float pixels (or a PNG file),
 * evaluating a split. */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_internal.h"
#include "backend/dist.h"
#include "eval/eval.h"
#include "io/export.h"
#include "io/image.h"
#include "io/loader.h"
#include "io/viewload.h"
#include "scene/campath.h"
#include "train/aa_bake.h"
#include "train/checkpoint.h"
#include "train/mcmc.h"
#include "train/report.h"
#include "train/schedule.h"
#include "train/train.h"

/* ---- training ---- */

typedef struct {
    splat_context *ctx;
    splat_train_opts opts;
} train_call;

static int train_cancel(void *user) {
    train_call *tc = user;
    if (atomic_load(&tc->ctx->cancel)) return 1;
    return tc->opts.cancel && tc->opts.cancel(tc->opts.user);
}

/* Live view: the model goes into opts.live_model when its owner asks and it is not busy. */
static int train_want_model(void *user) {
    train_call *tc = user;
    return tc->opts.live_model && tc->opts.want_model && tc->opts.want_model(tc->opts.user);
}

static void train_take_model(sp_gaussians *g, int step, void *user) {
    train_call *tc = user;
    splat_context *live = tc->opts.live_model;
    (void)step;
    if (live == tc->ctx || pthread_mutex_trylock(&live->lock) != 0) return; /* busy: next time */
    api_set_model(live, g);
    pthread_mutex_unlock(&live->lock);
}

static void train_progress(const sp_progress *p, void *user) {
    train_call *tc = user;
    if (!tc->opts.progress) return;
    splat_progress q = {.step = p->step, .max_steps = p->max_steps, .loss = p->loss,
                        .num_gaussians = p->num_gaussians, .steps_per_s = p->steps_per_s,
                        .elapsed_s = p->elapsed_s, .eta_s = p->eta_s, .psnr = p->psnr, .final = p->final};
    tc->opts.progress(tc->opts.user, &q);
}

/* The model a run folder holds: point_cloud.ply, else the checkpoint's parameters. */
static int read_run_model(const char *dir, sp_gaussians *g) {
    char *ply = sp_path_join(dir, "point_cloud.ply"), *ckp = sp_path_join(dir, "checkpoint.bin");
    int rc;
    if (sp_file_exists(ply)) {
        rc = sp_model_read(ply, g);
    } else {
        sp_checkpoint ck;
        rc = sp_checkpoint_read(ckp, &ck);
        if (rc == 0) {
            *g = ck.g;
            memset(&ck.g, 0, sizeof ck.g);
            sp_checkpoint_free(&ck);
        }
    }
    free(ply);
    free(ckp);
    return rc;
}

splat_status splat_train(splat_context *ctx, const splat_train_opts *opts) {
    if (!ctx) return SPLAT_INVALID;
    if (api_enter(ctx)) return SPLAT_INVALID;
    train_call tc = {.ctx = ctx};
    if (opts) tc.opts = *opts;
    sp_config cfg = ctx->cfg;
    if (tc.opts.resume_dir) snprintf(cfg.output.run_dir, sizeof cfg.output.run_dir, "%s", tc.opts.resume_dir);
    splat_status st = SPLAT_OK;
    sp_problems probs = {0};
    if (tc.opts.resume_dir && tc.opts.force)
        st = api_fail(SPLAT_INVALID, "force replaces a run and resume_dir continues one: give only one");
    else if (tc.opts.resume_dir && !cfg.data.path[0])
        st = api_fail(SPLAT_INVALID, "resume_dir %s: the context has no data.path, so it does not hold the run's "
                      "configuration; load it first (splat_config_load_file with %s/config.toml), then set what "
                      "changes", tc.opts.resume_dir, tc.opts.resume_dir);
    else if (sp_config_validate_for_training(&cfg, &probs)) {
        sp_error("%s", probs.items[0]);
        for (int i = 1; i < probs.n; i++) sp_error("%s\n%s", sp_last_error(), probs.items[i]);
        st = SPLAT_INVALID;
    }
    sp_problems_free(&probs);
    if (st != SPLAT_OK) {
        atomic_store(&ctx->cancel, 0);
        return api_leave(ctx, st);
    }
    free(ctx->run_dir);
    ctx->run_dir = tc.opts.resume_dir ? sp_strdup(tc.opts.resume_dir) : sp_train_run_dir(&cfg);
    sp_train_opts o = {.resume_dir = tc.opts.resume_dir, .force = tc.opts.force, .progress = train_progress,
                       .cancel = train_cancel, .user = &tc, .want_model = train_want_model,
                       .take_model = train_take_model};
    sp_gaussians g;
    o.model = &g;
    int rc = sp_train(&cfg, &o);
    atomic_store(&ctx->cancel, 0);
    if (rc == SP_TRAIN_FAILED) {
        st = api_status_for_error(SPLAT_ERROR);
        /* the trainer's own line says what is kept of the run as well */
        if (ctx->last_logged_error) sp_error("%s", ctx->last_logged_error);
        sp_gaussians_free(&g);
        return api_leave(ctx, st);
    }
    sp_clear_error();
    /* the model the run saved last (what point_cloud.ply holds), else the run folder's (a run
     * already complete, or stopped before this call saved one) */
    int have = g.n > 0 || read_run_model(ctx->run_dir, &g) == 0;
    if (have) api_set_model(ctx, &g);
    if (rc == SP_TRAIN_INTERRUPTED) {
        if (have)
            sp_error("training cancelled; the model and a checkpoint are saved in %s (resume_dir continues it)",
                     ctx->run_dir);
        else
            sp_error("training cancelled before it started; nothing was written to %s", ctx->run_dir);
        return api_leave(ctx, SPLAT_CANCELLED);
    }
    if (!have) return api_leave(ctx, api_status_for_error(SPLAT_ERROR)); /* output.save_ply off and no checkpoint */
    return api_leave(ctx, SPLAT_OK);
}

void splat_cancel(splat_context *ctx) {
    if (ctx) atomic_store(&ctx->cancel, 1);
}

const char *splat_run_dir(splat_context *ctx) { return ctx ? ctx->run_dir : ""; }

/* What sp_train resolves before its first step, resolved the same way without a backend or a
 * pixel: the kind (several devices or processes: the replicated cuda backend), the strategy, the
 * mcmc budget from the training pixels, the scaled refine schedule. */
splat_status splat_train_plan(splat_context *ctx, splat_plan *plan) {
    if (!ctx) return SPLAT_INVALID;
    if (api_enter(ctx)) return SPLAT_INVALID;
    if (!plan) return api_leave(ctx, api_fail(SPLAT_INVALID, "splat_train_plan: no plan (NULL)"));
    memset(plan, 0, sizeof *plan);
    sp_config cfg = ctx->cfg;
    sp_problems probs = {0};
    if (sp_config_validate_for_training(&cfg, &probs)) {
        sp_error("%s", probs.items[0]);
        for (int i = 1; i < probs.n; i++) sp_error("%s\n%s", sp_last_error(), probs.items[i]);
        sp_problems_free(&probs);
        return api_leave(ctx, SPLAT_INVALID);
    }
    sp_problems_free(&probs);
    sp_backend_config bc = {.threads = cfg.backend.threads};
    sp_dist dist = {0};
    if (sp_dist_current(&dist) || sp_dist_backend_config(&bc, cfg.backend.devices, 0, &dist))
        return api_leave(ctx, SPLAT_INVALID);
    int several = bc.num_devices > 1 || dist.world > 1;
    const sp_backend_kind *k = sp_backend_resolve_kind(several ? "cuda" : cfg.backend.kind);
    if (!k) return api_leave(ctx, api_fail(SPLAT_ERROR, "backend.kind = \"%s\" is not in this build", cfg.backend.kind));
    if (sp_config_resolve_strategy(&cfg, k->mcmc && !several)) return api_leave(ctx, SPLAT_INVALID);
    sp_dataset d;
    sp_load_opts lo = {.downscale = cfg.data.downscale, .threads = cfg.backend.threads, .load_pixels = 0,
                       .header_only = 1, .images = cfg.data.images, .holdout_every = cfg.data.holdout_every,
                       .allow_outside_images = cfg.data.allow_outside_images};
    memset(&d, 0, sizeof d);
    int rc = sp_dataset_load(cfg.data.path, cfg.data.format, &lo, &d, &probs);
    if (rc || !d.train.n) {
        if (probs.n) {
            sp_error("%s", probs.items[0]);
            for (int i = 1; i < probs.n; i++) sp_error("%s\n%s", sp_last_error(), probs.items[i]);
        } else {
            sp_error("cannot load the dataset %s", cfg.data.path);
        }
        sp_problems_free(&probs);
        sp_dataset_free(&d);
        return api_leave(ctx, SPLAT_ERROR);
    }
    sp_problems_free(&probs);
    if (sp_config_check_mcmc_init(&cfg, d.num_points)) { /* as training decides it (train/strategy.c) */
        sp_dataset_free(&d);
        return api_leave(ctx, SPLAT_INVALID);
    }
    double px = 0;
    for (int i = 0; i < d.train.n; i++) px += (double)d.train.views[i].cam.width * d.train.views[i].cam.height;
    int mcmc = !strcmp(cfg.refine.strategy, "mcmc");
    int points = sp_config_init_from_points(&cfg, d.num_points);
    sp_schedule sc;
    sp_schedule_make(&cfg, &sc);
    plan->max_steps = cfg.trainer.max_steps;
    snprintf(plan->backend, sizeof plan->backend, "%s", k->name);
    if (!strcmp(k->name, "cpu")) plan->threads = cfg.backend.threads > 0 ? cfg.backend.threads : omp_get_num_procs();
    snprintf(plan->strategy, sizeof plan->strategy, "%s", mcmc ? "mcmc" : "adc");
    plan->initial_gaussians = points ? d.num_points : cfg.init.count;
    plan->max_gaussians = !mcmc                         ? cfg.refine.capacity
                          : cfg.refine.max_gaussians > 0 ? cfg.refine.max_gaussians
                                                         : sp_mcmc_auto_budget(px, d.num_points, 0, NULL);
    plan->grow = mcmc ? cfg.refine.mcmc_grow : 0.0;
    plan->refine_start = sc.refine_start;
    plan->refine_stop = sc.refine_stop;
    plan->refine_every = sc.refine_every;
    plan->train_views = d.train.n;
    plan->view_pixels = px / d.train.n;
    sp_dataset_free(&d);
    return api_leave(ctx, SPLAT_OK);
}

/* ---- cameras ---- */

static void cross3(const float a[3], const float b[3], float c[3]) {
    c[0] = a[1] * b[2] - a[2] * b[1];
    c[1] = a[2] * b[0] - a[0] * b[2];
    c[2] = a[0] * b[1] - a[1] * b[0];
}

static int normalize3(float v[3]) {
    float n = sqrtf(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
    if (!(n > 1e-12f) || !isfinite(n)) return -1;
    for (int k = 0; k < 3; k++) v[k] /= n;
    return 0;
}

splat_status splat_camera_look_at(splat_camera *cam, int width, int height, float fov_x, const float eye[3],
                                  const float target[3], const float up[3]) {
    if (!cam || !eye || !target || !up || width <= 0 || height <= 0 || !(fov_x > 0 && fov_x < 3.14159f))
        return SPLAT_INVALID;
    float f[3] = {target[0] - eye[0], target[1] - eye[1], target[2] - eye[2]}, r[3], d[3];
    if (normalize3(f)) return SPLAT_INVALID;
    cross3(f, up, r); /* right = forward x up; down = forward x right (OpenCV: x right, y down) */
    if (normalize3(r)) return SPLAT_INVALID;
    cross3(f, r, d);
    memset(cam, 0, sizeof *cam);
    cam->width = width;
    cam->height = height;
    cam->fx = cam->fy = 0.5f * (float)width / tanf(0.5f * fov_x);
    cam->cx = 0.5f * (float)width;
    cam->cy = 0.5f * (float)height;
    for (int k = 0; k < 3; k++) {
        cam->R[k] = r[k];
        cam->R[3 + k] = d[k];
        cam->R[6 + k] = f[k];
    }
    for (int i = 0; i < 3; i++)
        cam->t[i] = -(cam->R[3 * i] * eye[0] + cam->R[3 * i + 1] * eye[1] + cam->R[3 * i + 2] * eye[2]);
    return SPLAT_OK;
}

static int split_name_ok(const char *s) { return s && (!strcmp(s, "train") || !strcmp(s, "val") || !strcmp(s, "test")); }

int api_load_dataset(const sp_config *c, int pixels, sp_dataset *d) {
    sp_load_opts lo = {.downscale = c->data.downscale, .threads = c->backend.threads, .load_pixels = pixels,
                       .images = c->data.images, .holdout_every = c->data.holdout_every,
                       .allow_outside_images = c->data.allow_outside_images};
    sp_problems probs = {0};
    memset(d, 0, sizeof *d);
    if (!c->data.path[0]) return sp_error("data.path is not set: configure the dataset first");
    int rc = sp_dataset_load(c->data.path, c->data.format, &lo, d, &probs);
    if (rc && probs.n) {
        sp_error("%s", probs.items[0]);
        for (int i = 1; i < probs.n; i++) sp_error("%s\n%s", sp_last_error(), probs.items[i]);
    } else if (rc && !sp_has_error()) {
        sp_error("cannot load the dataset %s", c->data.path);
    }
    sp_problems_free(&probs);
    if (rc) sp_dataset_free(d);
    return rc ? -1 : 0;
}

static void to_public(const sp_camera *c, splat_camera *o) {
    o->width = c->width;
    o->height = c->height;
    o->fx = c->fx;
    o->fy = c->fy;
    o->cx = c->cx;
    o->cy = c->cy;
    memcpy(o->R, c->R, sizeof o->R);
    memcpy(o->t, c->t, sizeof o->t);
}

splat_status api_cameras(splat_context *ctx, sp_dataset **d) {
    if (!ctx->have_cams) {
        if (api_load_dataset(&ctx->cfg, 0, &ctx->cams)) return api_status_for_error(SPLAT_ERROR);
        ctx->have_cams = 1;
    }
    *d = &ctx->cams;
    return SPLAT_OK;
}

/* View `index` of a split of the cached cameras, or NULL with the error set. */
static const sp_view *dataset_view(splat_context *ctx, const char *split, int index, splat_status *st) {
    sp_dataset *d = NULL;
    if (!split_name_ok(split)) {
        *st = api_fail(SPLAT_INVALID, "split must be train, val or test");
        return NULL;
    }
    if ((*st = api_cameras(ctx, &d)) != SPLAT_OK) return NULL;
    sp_split *s = sp_dataset_split(d, split);
    if (index < 0 || index >= s->n) {
        *st = api_fail(SPLAT_INVALID, "%s: view %d of the %s split does not exist (it has %d)", ctx->cfg.data.path,
                       index, split, s->n);
        return NULL;
    }
    return &s->views[index];
}

splat_status splat_dataset_views(splat_context *ctx, const char *split, int *count) {
    if (!ctx) return SPLAT_INVALID;
    if (api_enter(ctx)) return SPLAT_INVALID;
    if (!split_name_ok(split) || !count)
        return api_leave(ctx, api_fail(SPLAT_INVALID, "split must be train, val or test"));
    sp_dataset *d = NULL;
    splat_status st = api_cameras(ctx, &d);
    if (st == SPLAT_OK) *count = sp_dataset_split(d, split)->n;
    return api_leave(ctx, st);
}

splat_status splat_bake_antialias(splat_context *ctx, double *mean_factor) {
    if (!ctx) return SPLAT_INVALID;
    if (api_enter(ctx)) return SPLAT_INVALID;
    if (!ctx->have_model) return api_leave(ctx, api_fail(SPLAT_NO_MODEL, "no model to bake: load or train one first"));
    sp_dataset *d = NULL;
    splat_status st = api_cameras(ctx, &d);
    if (st != SPLAT_OK) return api_leave(ctx, st);
    if (!d->train.n)
        return api_leave(ctx, api_fail(SPLAT_INVALID, "%s: no training cameras to bake the antialias filter with",
                                       ctx->cfg.data.path));
    api_drop_backend(ctx); /* it holds the opacities before the bake */
    sp_aa_bake_result r;
    sp_aa_bake(&ctx->g, &d->train, &r);
    if (mean_factor) *mean_factor = r.rho_mean;
    return api_leave(ctx, SPLAT_OK);
}

splat_status splat_dataset_camera(splat_context *ctx, const char *split, int index, splat_camera *cam) {
    if (!ctx) return SPLAT_INVALID;
    if (api_enter(ctx)) return SPLAT_INVALID;
    if (!cam) return api_leave(ctx, api_fail(SPLAT_INVALID, "splat_dataset_camera: no camera (NULL)"));
    splat_status st;
    const sp_view *v = dataset_view(ctx, split, index, &st);
    if (v) to_public(&v->cam, cam);
    return api_leave(ctx, st);
}

splat_status splat_dataset_view_name(splat_context *ctx, const char *split, int index, char *buf, size_t n) {
    if (!ctx) return SPLAT_INVALID;
    if (api_enter(ctx)) return SPLAT_INVALID;
    if (!buf || !n) return api_leave(ctx, api_fail(SPLAT_INVALID, "splat_dataset_view_name: no buffer"));
    splat_status st;
    const sp_view *v = dataset_view(ctx, split, index, &st);
    if (v && strlen(v->name) + 1 > n)
        st = api_fail(SPLAT_INVALID, "the name of view %d needs %zu bytes, the buffer has %zu", index,
                      strlen(v->name) + 1, n);
    else if (v)
        memcpy(buf, v->name, strlen(v->name) + 1);
    return api_leave(ctx, st);
}

splat_status splat_camera_path(splat_context *ctx, const char *kind, int frames, splat_camera *cams) {
    if (!ctx) return SPLAT_INVALID;
    if (api_enter(ctx)) return SPLAT_INVALID;
    sp_path_kind k;
    if (!kind || sp_path_kind_parse(kind, &k)) return api_leave(ctx, SPLAT_INVALID);
    if (frames < 1 || frames > 1000000 || !cams)
        return api_leave(ctx, api_fail(SPLAT_INVALID, "splat_camera_path: frames must be 1..1000000, cams not NULL"));
    sp_dataset *d = NULL;
    splat_status st = api_cameras(ctx, &d);
    if (st != SPLAT_OK) return api_leave(ctx, st);
    sp_camera *c = sp_try_alloc((size_t)frames, sizeof *c, "the camera path", "ask for fewer frames");
    if (!c) return api_leave(ctx, SPLAT_NOMEM);
    if (sp_campath_make(d, k, frames, c)) {
        free(c);
        return api_leave(ctx, api_status_for_error(SPLAT_ERROR));
    }
    for (int j = 0; j < frames; j++) to_public(&c[j], &cams[j]);
    free(c);
    return api_leave(ctx, SPLAT_OK);
}

/* ---- rendering ---- */

/* The backend of the configuration, holding the model. */
static splat_status ensure_backend(splat_context *ctx) {
    if (!ctx->have_model) return api_fail(SPLAT_NO_MODEL, "no model: load or train one first");
    if (ctx->b) return SPLAT_OK;
    const sp_config *c = &ctx->cfg;
    sp_backend_config bc = {.threads = c->backend.threads, .deterministic = c->backend.deterministic,
                            .antialias = c->render.antialias};
    ctx->b = sp_backend_create(c->backend.kind, &bc);
    if (!ctx->b) return api_status_for_error(SPLAT_ERROR);
    if (ctx->b->ops->set_gaussians(ctx->b, &ctx->g, NULL, NULL)) {
        splat_status st = api_status_for_error(SPLAT_ERROR);
        api_drop_backend(ctx);
        return st;
    }
    return SPLAT_OK;
}

static splat_status check_camera(const splat_camera *cam) {
    if (!cam) return api_fail(SPLAT_INVALID, "splat_render: no camera (NULL)");
    if (cam->width <= 0 || cam->height <= 0 || cam->width > SP_IMAGE_MAX_SIDE || cam->height > SP_IMAGE_MAX_SIDE ||
        (long long)cam->width * cam->height > SP_IMAGE_MAX_PIXELS)
        return api_fail(SPLAT_INVALID, "splat_render: image size %dx%d is outside 1..%d a side, %lld pixels",
                        cam->width, cam->height, SP_IMAGE_MAX_SIDE, (long long)SP_IMAGE_MAX_PIXELS);
    if (!(cam->fx > 0) || !(cam->fy > 0) || !isfinite(cam->fx) || !isfinite(cam->fy) || !isfinite(cam->cx) ||
        !isfinite(cam->cy))
        return api_fail(SPLAT_INVALID, "splat_render: focal lengths must be positive and finite (fx %g, fy %g)",
                        (double)cam->fx, (double)cam->fy);
    for (int k = 0; k < 9; k++)
        if (!isfinite(cam->R[k]) || (k < 3 && !isfinite(cam->t[k])))
            return api_fail(SPLAT_INVALID, "splat_render: the camera pose is not finite");
    return SPLAT_OK;
}

static float clamp01(float v) { return v < 0.0f ? 0.0f : v > 1.0f ? 1.0f : v; }

static void store_pixel(void *row, int x, splat_pixel_format fmt, const float rgba[4]) {
    if (fmt == SPLAT_RGBA_F32) {
        float *p = (float *)row + 4 * (size_t)x;
        for (int k = 0; k < 4; k++) p[k] = clamp01(rgba[k]);
    } else {
        uint8_t *p = (uint8_t *)row + 4 * (size_t)x;
        for (int k = 0; k < 4; k++) p[k] = (uint8_t)(clamp01(rgba[k]) * 255.0f + 0.5f);
    }
}

/* splat_render's work, inside a call. */
static splat_status render_into(splat_context *ctx, const splat_camera *cam, const float *background,
                                splat_pixel_format format, void *pixels, size_t stride) {
    splat_status st = check_camera(cam);
    if (st == SPLAT_OK && format != SPLAT_RGBA8 && format != SPLAT_RGBA_F32)
        st = api_fail(SPLAT_INVALID, "splat_render: unknown pixel format %d", (int)format);
    size_t row_bytes = cam ? (size_t)cam->width * (format == SPLAT_RGBA_F32 ? 16 : 4) : 0;
    if (st == SPLAT_OK && (!pixels || (stride && stride < row_bytes)))
        st = api_fail(SPLAT_INVALID, "splat_render: no pixel buffer, or a row stride under %zu bytes", row_bytes);
    if (st == SPLAT_OK && background)
        for (int k = 0; k < 3; k++)
            if (!isfinite(background[k])) st = api_fail(SPLAT_INVALID, "splat_render: the background is not finite");
    if (st == SPLAT_OK) st = ensure_backend(ctx);
    if (st != SPLAT_OK) return st;
    if (!stride) stride = row_bytes;

    sp_camera c = {.width = cam->width, .height = cam->height, .fx = cam->fx, .fy = cam->fy, .cx = cam->cx,
                   .cy = cam->cy};
    memcpy(c.R, cam->R, sizeof c.R);
    memcpy(c.t, cam->t, sizeof c.t);
    size_t px = (size_t)c.width * c.height;
    const char *what = "a render", *hint = "render a smaller image";
    float *a = sp_try_alloc(px * 3, sizeof(float), what, hint), *b = NULL;
    if (!a) return SPLAT_NOMEM;
    const float black[3] = {0, 0, 0}, white[3] = {1, 1, 1};
    int deg = ctx->g.sh_degree, rc;
    if (ctx->render_sh_limit > 0 && ctx->render_sh_limit - 1 < deg) deg = ctx->render_sh_limit - 1;
    if (background) {
        rc = ctx->b->ops->render(ctx->b, &c, deg, background, a);
    } else { /* colour over black and over white: their difference is the transmittance */
        b = sp_try_alloc(px * 3, sizeof(float), what, hint);
        if (!b) {
            free(a);
            return SPLAT_NOMEM;
        }
        rc = ctx->b->ops->render(ctx->b, &c, deg, black, a);
        if (rc == 0) rc = ctx->b->ops->render(ctx->b, &c, deg, white, b);
    }
    if (rc == 0) {
        for (int y = 0; y < c.height; y++) {
            void *row = (uint8_t *)pixels + (size_t)y * stride;
            for (int x = 0; x < c.width; x++) {
                size_t i = 3 * ((size_t)y * c.width + x);
                float rgba[4] = {a[i], a[i + 1], a[i + 2], 1.0f};
                if (!background) {
                    float T = ((b[i] - a[i]) + (b[i + 1] - a[i + 1]) + (b[i + 2] - a[i + 2])) / 3.0f;
                    float alpha = clamp01(1.0f - T);
                    for (int k = 0; k < 3; k++) rgba[k] = alpha > 1e-6f ? a[i + k] / alpha : 0.0f;
                    rgba[3] = alpha;
                }
                store_pixel(row, x, format, rgba);
            }
        }
    }
    free(a);
    free(b);
    return rc ? api_status_for_error(SPLAT_ERROR) : SPLAT_OK;
}

splat_status splat_render(splat_context *ctx, const splat_camera *cam, const float *background,
                          splat_pixel_format format, void *pixels, size_t stride) {
    if (!ctx) return SPLAT_INVALID;
    if (api_enter(ctx)) return SPLAT_INVALID;
    return api_leave(ctx, render_into(ctx, cam, background, format, pixels, stride));
}

/* RGBA8 pixels (packed) as an RGB (drop alpha) or RGBA PNG. */
static int save_png(const char *path, uint8_t *rgba, int w, int h, int rgb) {
    if (rgb)
        for (size_t i = 0; i < (size_t)w * h; i++) memmove(rgba + 3 * i, rgba + 4 * i, 3);
    sp_image img = {w, h, rgb ? 3 : 4, rgba};
    return sp_image_save_png(path, &img);
}

splat_status splat_render_png(splat_context *ctx, const splat_camera *cam, const float *background,
                              const char *path) {
    if (!ctx) return SPLAT_INVALID;
    if (api_enter(ctx)) return SPLAT_INVALID;
    if (!path) return api_leave(ctx, api_fail(SPLAT_INVALID, "splat_render_png: no path (NULL)"));
    splat_status st = check_camera(cam);
    if (st != SPLAT_OK) return api_leave(ctx, st);
    uint8_t *rgba = sp_try_alloc((size_t)cam->width * cam->height, 4, "a render", "render a smaller image");
    if (!rgba) return api_leave(ctx, SPLAT_NOMEM);
    st = render_into(ctx, cam, background, SPLAT_RGBA8, rgba, 0);
    if (st == SPLAT_OK && save_png(path, rgba, cam->width, cam->height, background != NULL))
        st = api_status_for_error(SPLAT_ERROR);
    free(rgba);
    return api_leave(ctx, st);
}

splat_status splat_set_render_sh_degree(splat_context *ctx, int max_degree) {
    if (!ctx) return SPLAT_INVALID;
    if (api_enter(ctx)) return SPLAT_INVALID;
    if (max_degree < -1 || max_degree > 3)
        return api_leave(ctx, api_fail(SPLAT_INVALID, "SH degree must be -1 (the model's) or 0..3, got %d", max_degree));
    ctx->render_sh_limit = max_degree + 1;
    return api_leave(ctx, SPLAT_OK);
}

/* ---- the dataset's images ---- */

splat_status splat_dataset_image(splat_context *ctx, const char *split, int index, const float *background,
                                 splat_pixel_format format, void *pixels, size_t stride) {
    if (!ctx) return SPLAT_INVALID;
    if (api_enter(ctx)) return SPLAT_INVALID;
    splat_status st;
    const sp_view *v = dataset_view(ctx, split, index, &st);
    if (!v) return api_leave(ctx, st);
    if (format != SPLAT_RGBA8 && format != SPLAT_RGBA_F32)
        return api_leave(ctx, api_fail(SPLAT_INVALID, "splat_dataset_image: unknown pixel format %d", (int)format));
    size_t row_bytes = (size_t)v->cam.width * (format == SPLAT_RGBA_F32 ? 16 : 4);
    if (!pixels || (stride && stride < row_bytes))
        return api_leave(ctx, api_fail(SPLAT_INVALID, "splat_dataset_image: no pixel buffer, or a row stride under "
                                                      "%zu bytes", row_bytes));
    if (background)
        for (int k = 0; k < 3; k++)
            if (!isfinite(background[k]))
                return api_leave(ctx, api_fail(SPLAT_INVALID, "splat_dataset_image: the background is not finite"));
    if (!stride) stride = row_bytes;
    sp_view view = *v; /* the cached camera, with its pixels decoded now */
    if (sp_view_load_pixels(v, &view.pixels)) return api_leave(ctx, api_status_for_error(SPLAT_ERROR));
    int w = view.cam.width, h = view.cam.height, c = view.channels;
    float *rgb = NULL;
    if (background) {
        rgb = sp_try_alloc((size_t)w * h * 3, sizeof(float), "a dataset image", "");
        if (!rgb) {
            free(view.pixels);
            return api_leave(ctx, SPLAT_NOMEM);
        }
        sp_alpha_mode alpha =
            !strcmp(ctx->cfg.data.alpha, "premultiplied") ? SP_ALPHA_PREMULTIPLIED : SP_ALPHA_STRAIGHT;
        sp_view_composite(&view, alpha, background, rgb);
    }
    for (int y = 0; y < h; y++) {
        void *row = (uint8_t *)pixels + (size_t)y * stride;
        for (int x = 0; x < w; x++) {
            size_t i = (size_t)y * w + x;
            const uint8_t *p = view.pixels + i * c;
            float rgba[4] = {p[0] / 255.0f, p[1] / 255.0f, p[2] / 255.0f, c == 4 ? p[3] / 255.0f : 1.0f};
            if (rgb) rgba[0] = rgb[3 * i], rgba[1] = rgb[3 * i + 1], rgba[2] = rgb[3 * i + 2], rgba[3] = 1.0f;
            store_pixel(row, x, format, rgba);
        }
    }
    free(rgb);
    free(view.pixels);
    return api_leave(ctx, SPLAT_OK);
}

/* ---- evaluation ---- */

splat_status splat_evaluate(splat_context *ctx, const char *split, splat_eval_result *out) {
    if (!ctx) return SPLAT_INVALID;
    if (api_enter(ctx)) return SPLAT_INVALID;
    if (!split_name_ok(split) || !out)
        return api_leave(ctx, api_fail(SPLAT_INVALID, "split must be train, val or test"));
    memset(out, 0, sizeof *out);
    splat_status st = ensure_backend(ctx);
    if (st != SPLAT_OK) return api_leave(ctx, st);
    sp_dataset d;
    if (api_load_dataset(&ctx->cfg, 1, &d)) return api_leave(ctx, api_status_for_error(SPLAT_ERROR));
    sp_split *s = sp_dataset_split(&d, split);
    if (!s->n) {
        sp_dataset_free(&d);
        return api_leave(ctx, api_fail(SPLAT_INVALID, "%s: the dataset has no %s views", ctx->cfg.data.path, split));
    }
    const sp_config *c = &ctx->cfg;
    float v = !strcmp(c->data.background, "black") ? 0.0f : 1.0f, bg[3] = {v, v, v};
    sp_alpha_mode alpha = !strcmp(c->data.alpha, "premultiplied") ? SP_ALPHA_PREMULTIPLIED : SP_ALPHA_STRAIGHT;
    sp_eval_result r;
    int rc = sp_eval_views(ctx->b, s, alpha, ctx->g.sh_degree, bg, NULL, &r);
    sp_dataset_free(&d);
    if (rc) {
        sp_eval_result_free(&r);
        return api_leave(ctx, api_status_for_error(SPLAT_ERROR));
    }
    for (int i = 0; i < ctx->eval_n; i++) free(ctx->eval_names[i]);
    free(ctx->eval_names);
    free(ctx->eval_psnr);
    free(ctx->eval_ssim);
    ctx->eval_n = r.n;
    ctx->eval_gaussians = ctx->g.n;
    ctx->eval_seconds = r.seconds;
    snprintf(ctx->eval_split, sizeof ctx->eval_split, "%s", split);
    ctx->eval_names = r.names;
    ctx->eval_psnr = r.psnr;
    ctx->eval_ssim = r.ssim;
    out->num_views = r.n;
    out->psnr = r.mean_psnr;
    out->ssim = r.mean_ssim;
    out->seconds = r.seconds;
    out->view_psnr = r.psnr;
    out->view_ssim = r.ssim;
    out->view_names = (const char *const *)r.names;
    return api_leave(ctx, SPLAT_OK);
}

splat_status splat_eval_save(splat_context *ctx, const char *path) {
    if (!ctx) return SPLAT_INVALID;
    if (api_enter(ctx)) return SPLAT_INVALID;
    if (!path) return api_leave(ctx, api_fail(SPLAT_INVALID, "splat_eval_save: no path (NULL)"));
    if (!ctx->eval_names) return api_leave(ctx, api_fail(SPLAT_INVALID, "splat_eval_save: nothing evaluated yet"));
    sp_eval_result r = {.n = ctx->eval_n, .names = ctx->eval_names, .psnr = ctx->eval_psnr, .ssim = ctx->eval_ssim,
                       .seconds = ctx->eval_seconds};
    for (int i = 0; i < r.n; i++) {
        r.mean_psnr += r.psnr[i] / r.n;
        r.mean_ssim += r.ssim[i] / r.n;
    }
    int rc = sp_report_write_eval(path, ctx->eval_split, &r, ctx->eval_gaussians);
    return api_leave(ctx, rc ? api_status_for_error(SPLAT_ERROR) : SPLAT_OK);
}
