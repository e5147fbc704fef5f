/* api_check.c — the public API's calls around training (include/splat.h): where this process
 * stands among several, what training will resolve and find (the configuration resolved for the
 * backend, the dataset checked image by image, the backend's device), a run folder's files and
 * result, and benchmark chains (train/chain.h) held in the context. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_internal.h"
#include "io/loader.h"
#include "train/train.h"

/* ---- several processes ---- */

splat_status splat_set_dist(splat_context *ctx, const splat_dist *dist) {
    if (!ctx) return SPLAT_INVALID;
    if (api_enter(ctx)) return SPLAT_INVALID;
    sp_dist d;
    memset(&d, 0, sizeof d);
    d.world = 1;
    if (dist) {
        d.rank = dist->rank;
        d.world = dist->world_size;
        d.local_rank = dist->local_rank;
        const char *f = dist->id_file ? dist->id_file : "";
        if (strlen(f) >= sizeof d.file)
            return api_leave(ctx, api_fail(SPLAT_INVALID, "several processes: the id_file path is too long (%zu "
                                                          "bytes, at most %zu)", strlen(f), sizeof d.file - 1));
        snprintf(d.file, sizeof d.file, "%s", f);
    }
    if (sp_dist_check(&d)) return api_leave(ctx, SPLAT_INVALID);
    ctx->dist = d;
    return api_leave(ctx, api_config_changed(ctx, SPLAT_OK)); /* the backend depends on it */
}

/* The backend settings training derives from the configuration and the process placement; -1
 * with the reason when backend.devices or the placement is wrong (bc and d are filled as far as
 * they could be). */
static int backend_settings(const sp_config *c, sp_backend_config *bc, sp_dist *d) {
    memset(bc, 0, sizeof *bc);
    bc->threads = c->backend.threads;
    bc->cas_atomics = c->backend.cas_atomics;
    if (sp_dist_current(d)) return -1;
    return sp_dist_backend_config(bc, c->backend.devices, 0, d);
}

/* ---- what training will resolve and find ---- */

splat_status splat_config_resolve(splat_context *ctx) {
    if (!ctx) return SPLAT_INVALID;
    if (api_enter(ctx)) return SPLAT_INVALID;
    sp_backend_config bc;
    sp_dist d;
    backend_settings(&ctx->cfg, &bc, &d); /* bad settings: splat_backend_describe says so */
    sp_clear_error();
    /* as training resolves it (train.c), from what the kind's backend can do */
    const sp_backend_kind *k = sp_backend_resolve_kind(ctx->cfg.backend.kind);
    int several = bc.num_devices > 1 || d.world > 1;
    int rc = sp_config_resolve_strategy(&ctx->cfg, k && k->mcmc && !several);
    return api_leave(ctx, api_config_changed(ctx, rc ? SPLAT_INVALID : SPLAT_OK));
}

static void split_info(const sp_split *s, splat_split_info *o) {
    memset(o, 0, sizeof *o);
    o->views = s->n;
    if (!s->n) return;
    const sp_view *v = &s->views[0];
    o->width = v->cam.width;
    o->height = v->cam.height;
    o->channels = v->channels;
    o->fx = v->cam.fx;
    o->fy = v->cam.fy;
    o->cx = v->cam.cx;
    o->cy = v->cam.cy;
}

splat_status splat_dataset_check(splat_context *ctx, splat_dataset_info *info) {
    if (!ctx) return SPLAT_INVALID;
    if (api_enter(ctx)) return SPLAT_INVALID;
    if (!info) return api_leave(ctx, api_fail(SPLAT_INVALID, "splat_dataset_check: no info (NULL)"));
    memset(info, 0, sizeof *info);
    const sp_config *c = &ctx->cfg;
    if (!c->data.path[0])
        return api_leave(ctx, api_fail(SPLAT_INVALID, "data.path is not set: configure the dataset first"));
    sp_load_opts lo = {.downscale = c->data.downscale, .threads = c->backend.threads, .load_pixels = 1,
                       .images = c->data.images, .holdout_every = c->data.holdout_every,
                       .allow_outside_images = c->data.allow_outside_images};
    sp_dataset d;
    sp_problems probs = {0};
    int rc = sp_dataset_load(c->data.path, c->data.format, &lo, &d, &probs);
    if (d.format) snprintf(info->format, sizeof info->format, "%s", d.format);
    info->has_alpha = d.has_alpha;
    info->extent = d.extent;
    memcpy(info->center, d.center, sizeof info->center);
    info->num_points = d.num_points;
    memcpy(info->init_min, d.init_min, sizeof info->init_min);
    memcpy(info->init_max, d.init_max, sizeof info->init_max);
    split_info(&d.train, &info->train);
    split_info(&d.val, &info->val);
    split_info(&d.test, &info->test);
    sp_dataset_free(&d);
    if (!rc && !probs.n) return api_leave(ctx, SPLAT_OK);
    if (!probs.n) sp_problems_add(&probs, "%s", sp_has_error() ? sp_last_error() : "the dataset does not load");
    api_problems_status(&probs);
    return api_leave(ctx, SPLAT_ERROR);
}

splat_status splat_backend_describe(splat_context *ctx, char *buf, size_t n) {
    if (!ctx) return SPLAT_INVALID;
    if (api_enter(ctx)) return SPLAT_INVALID;
    char line[1024] = "";
    sp_backend_config bc;
    sp_dist d;
    splat_status st = SPLAT_OK;
    if (backend_settings(&ctx->cfg, &bc, &d)) {
        snprintf(line, sizeof line, "%s", sp_last_error());
        st = SPLAT_INVALID;
    } else if (sp_backend_describe(ctx->cfg.backend.kind, &bc, line, sizeof line)) {
        sp_error("%s", line);
        st = SPLAT_ERROR;
    }
    if (st == SPLAT_OK) return api_leave(ctx, api_copy_out("the description", line, buf, n, NULL));
    if (buf && n) snprintf(buf, n, "%s", line);
    return api_leave(ctx, st);
}

/* ---- run folders ---- */

const char *const *splat_run_files(void) { return sp_train_run_files; }

splat_status splat_read_result(splat_context *ctx, const char *run_dir, splat_run_result *result) {
    if (!ctx) return SPLAT_INVALID;
    if (api_enter(ctx)) return SPLAT_INVALID;
    if (!run_dir || !result) return api_leave(ctx, api_fail(SPLAT_INVALID, "splat_read_result: no folder or result"));
    memset(result, 0, sizeof *result);
    result->psnr = result->ssim = result->train_seconds = NAN;
    sp_chain_result r;
    if (sp_chain_read_result(run_dir, &r)) {
        sp_chain_result_free(&r);
        return api_leave(ctx, api_status_for_error(SPLAT_ERROR));
    }
    snprintf(result->status, sizeof result->status, "%s", r.status);
    snprintf(result->split, sizeof result->split, "%s", r.split);
    result->psnr = r.psnr;
    result->ssim = r.ssim;
    result->train_seconds = r.train_seconds;
    result->gaussians = r.gaussians;
    result->steps = r.steps;
    sp_chain_result_free(&r);
    return api_leave(ctx, SPLAT_OK);
}

/* ---- benchmark chains ---- */

void api_drop_chain(splat_context *ctx) {
    if (!ctx->chain) return;
    sp_chain_free(ctx->chain);
    free(ctx->chain);
    ctx->chain = NULL;
}

splat_status splat_chain_load(splat_context *ctx, const char *file, const char *const *sets, int num_sets,
                              const char *out) {
    if (!ctx) return SPLAT_INVALID;
    if (api_enter(ctx)) return SPLAT_INVALID;
    if (!file || num_sets < 0 || (num_sets && !sets))
        return api_leave(ctx, api_fail(SPLAT_INVALID, "splat_chain_load: no file, or num_sets without sets"));
    sp_chain *c = SP_NEW(sp_chain, 1);
    sp_problems probs = {0};
    if (sp_chain_load(file, sets, num_sets, out, c, &probs)) {
        sp_chain_free(c);
        free(c);
        if (!probs.n) sp_problems_add(&probs, "%s", sp_has_error() ? sp_last_error() : "the chain does not load");
        return api_leave(ctx, api_problems_status(&probs));
    }
    sp_problems_free(&probs);
    api_drop_chain(ctx);
    ctx->chain = c;
    return api_leave(ctx, SPLAT_OK);
}

/* The loaded chain (with scene index when index >= 0), or NULL with the thread's error set. */
static sp_chain *chain_of(splat_context *ctx, int index, int want_scene) {
    if (!ctx->chain) {
        sp_error("no chain: load one first (splat_chain_load)");
        return NULL;
    }
    if (want_scene && (index < 0 || index >= ctx->chain->n)) {
        sp_error("scene %d of the chain does not exist (it has %d)", index, ctx->chain->n);
        return NULL;
    }
    return ctx->chain;
}

splat_status splat_chain_info(splat_context *ctx, int *num_scenes, const char **out) {
    if (!ctx) return SPLAT_INVALID;
    if (api_enter(ctx)) return SPLAT_INVALID;
    sp_chain *c = chain_of(ctx, 0, 0);
    if (!c) return api_leave(ctx, SPLAT_INVALID);
    if (num_scenes) *num_scenes = c->n;
    if (out) *out = c->out;
    return api_leave(ctx, SPLAT_OK);
}

splat_status splat_chain_scene(splat_context *ctx, int index, const char **name, const char **run_dir) {
    if (!ctx) return SPLAT_INVALID;
    if (api_enter(ctx)) return SPLAT_INVALID;
    sp_chain *c = chain_of(ctx, index, 1);
    if (!c) return api_leave(ctx, SPLAT_INVALID);
    if (name) *name = c->scenes[index].name;
    if (run_dir) *run_dir = c->scenes[index].cfg.output.run_dir;
    return api_leave(ctx, SPLAT_OK);
}

splat_status splat_chain_use_scene(splat_context *ctx, int index) {
    if (!ctx) return SPLAT_INVALID;
    if (api_enter(ctx)) return SPLAT_INVALID;
    sp_chain *c = chain_of(ctx, index, 1);
    if (!c) return api_leave(ctx, SPLAT_INVALID);
    ctx->cfg = c->scenes[index].cfg;
    return api_leave(ctx, api_config_changed(ctx, SPLAT_OK));
}

splat_status splat_chain_write_summary(splat_context *ctx, const int *include) {
    if (!ctx) return SPLAT_INVALID;
    if (api_enter(ctx)) return SPLAT_INVALID;
    sp_chain *c = chain_of(ctx, 0, 0);
    if (!c) return api_leave(ctx, SPLAT_INVALID);
    sp_chain_result *res = SP_NEW(sp_chain_result, c->n > 0 ? c->n : 1);
    for (int i = 0; i < c->n; i++)
        if ((!include || include[i]) && sp_chain_read_result(c->scenes[i].cfg.output.run_dir, &res[i]))
            sp_chain_result_free(&res[i]); /* no result: listed as not run */
    sp_clear_error();
    int rc = sp_chain_write_summary(c, res);
    for (int i = 0; i < c->n; i++) sp_chain_result_free(&res[i]);
    free(res);
    return api_leave(ctx, rc ? api_status_for_error(SPLAT_ERROR) : SPLAT_OK);
}
