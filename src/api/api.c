/* api.c — the context of the public API (include/splat.h): opening and closing, errors, the log
 * callback, the program's settings, the configuration, loading and exporting models, the
 * procedural scenes. Training, rendering and evaluation are in api_run.c; checks before
 * training, several processes and benchmark chains in api_check.c. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_internal.h"
#include "core/paths.h"
#include "io/export.h"
#include "io/image.h"
#include "scene/synth.h"
#include "train/checkpoint.h"

/* ---- calls: lock, log sink, errors ---- */

static void sink_to_callback(sp_log_level level, const char *message, void *user) {
    splat_context *ctx = user;
    if (level >= SP_LOG_ERROR) {
        free(ctx->last_logged_error);
        ctx->last_logged_error = sp_strdup(message);
    }
    if (ctx->log_fn && level >= (sp_log_level)ctx->sink.level) ctx->log_fn(ctx->log_user, (splat_log_level)level, message);
}

/* The contexts this thread is inside a call of (a callback runs inside one), innermost last. */
#define INSIDE_MAX 16
static _Thread_local splat_context *t_inside[INSIDE_MAX];
static _Thread_local int t_depth;
/* The message of this thread's last call, and the context it was on. */
static _Thread_local const splat_context *t_err_ctx;
static _Thread_local char t_err[SPLAT_ERRMSG_MAX];

static void set_thread_message(const splat_context *ctx, const char *msg) {
    t_err_ctx = ctx;
    snprintf(t_err, sizeof t_err, "%s", msg);
}

int api_enter(splat_context *ctx) {
    for (int i = 0; i < t_depth && i < INSIDE_MAX; i++)
        if (t_inside[i] == ctx) { /* the lock is this thread's own: waiting for it would never end */
            set_thread_message(ctx, "a call on a context from inside one of its own callbacks (log, progress or "
                                    "cancel) is not allowed: the context is busy with the call that runs the "
                                    "callback; use another context, or call after it returns");
            return -1;
        }
    pthread_mutex_lock(&ctx->lock);
    if (t_depth < INSIDE_MAX) t_inside[t_depth] = ctx;
    t_depth++;
    /* errors are always seen by the sink (to keep the last one); the callback filters by level */
    ctx->sink.fn = sink_to_callback;
    ctx->sink.user = ctx;
    ctx->sink.file = NULL;
    ctx->sink.quiet = false;
    ctx->sink.live = false;
    ctx->saved_sink = sp_log_use(&ctx->sink);
    ctx->saved_dist = sp_dist_use(&ctx->dist);
    ctx->saved_fp = sp_fp_enter();
    free(ctx->last_logged_error);
    ctx->last_logged_error = NULL;
    sp_clear_error();
    return 0;
}

splat_status api_leave(splat_context *ctx, splat_status status) {
    const char *msg = status == SPLAT_OK       ? ""
                      : sp_has_error()         ? sp_last_error()
                      : ctx->last_logged_error ? ctx->last_logged_error
                                               : splat_status_name(status);
    snprintf(ctx->err, sizeof ctx->err, "%s", msg);
    set_thread_message(ctx, msg);
    if (t_depth > 0) t_depth--;
    sp_log_use(ctx->saved_sink);
    ctx->saved_sink = NULL;
    sp_dist_use(ctx->saved_dist);
    ctx->saved_dist = NULL;
    sp_fp_leave(ctx->saved_fp);
    sp_clear_error();
    pthread_mutex_unlock(&ctx->lock);
    return status;
}

splat_status api_fail(splat_status status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    sp_verror(fmt, ap);
    va_end(ap);
    return status;
}

splat_status api_status_for_error(splat_status otherwise) {
    return sp_has_error() && !strncmp(sp_last_error(), "out of memory", 13) ? SPLAT_NOMEM : otherwise;
}

void api_drop_backend(splat_context *ctx) {
    if (ctx->b) ctx->b->ops->destroy(ctx->b);
    ctx->b = NULL;
}

void api_drop_cameras(splat_context *ctx) {
    if (ctx->have_cams) sp_dataset_free(&ctx->cams);
    ctx->have_cams = 0;
}

void api_set_model(splat_context *ctx, sp_gaussians *g) {
    api_drop_backend(ctx);
    if (ctx->have_model) sp_gaussians_free(&ctx->g);
    ctx->g = *g;
    memset(g, 0, sizeof *g);
    ctx->have_model = 1;
}

/* ---- context ---- */

splat_status splat_open(splat_context **out) {
    if (!out) return SPLAT_INVALID;
    splat_context *ctx = calloc(1, sizeof *ctx);
    *out = NULL;
    if (!ctx) return SPLAT_NOMEM;
    if (pthread_mutex_init(&ctx->lock, NULL) != 0) {
        free(ctx);
        return SPLAT_NOMEM;
    }
    sp_config_defaults(&ctx->cfg);
    ctx->dist.world = 1;
    ctx->sink.level = SP_LOG_INFO;
    atomic_init(&ctx->cancel, 0);
    ctx->run_dir = sp_strdup("");
    *out = ctx;
    return SPLAT_OK;
}

static void free_eval(splat_context *ctx) {
    for (int i = 0; i < ctx->eval_n; i++) free(ctx->eval_names[i]);
    free(ctx->eval_names);
    free(ctx->eval_psnr);
    free(ctx->eval_ssim);
    ctx->eval_names = NULL;
    ctx->eval_psnr = ctx->eval_ssim = NULL;
    ctx->eval_n = 0;
}

void splat_close(splat_context *ctx) {
    if (!ctx) return;
    api_drop_backend(ctx);
    api_drop_cameras(ctx);
    if (ctx->have_model) sp_gaussians_free(&ctx->g);
    free_eval(ctx);
    api_drop_chain(ctx);
    if (t_err_ctx == ctx) t_err_ctx = NULL;
    free(ctx->last_logged_error);
    free(ctx->run_dir);
    pthread_mutex_destroy(&ctx->lock);
    free(ctx);
}

const char *splat_errmsg(const splat_context *ctx) {
    if (!ctx) return "no context (NULL)";
    /* this thread's own last call on ctx: its copy, which no other thread's call changes */
    if (t_err_ctx == ctx) return t_err;
    return ctx->err;
}

const char *splat_status_name(splat_status s) {
    switch (s) {
    case SPLAT_OK: return "ok";
    case SPLAT_ERROR: return "error";
    case SPLAT_INVALID: return "invalid";
    case SPLAT_NO_MODEL: return "no model";
    case SPLAT_CANCELLED: return "cancelled";
    case SPLAT_NOMEM: return "out of memory";
    }
    return "unknown status";
}

const char *splat_version(void) { return sp_version(); }
const char *splat_commit(void) { return sp_commit(); }
int splat_version_number(void) { return SPLAT_VERSION_NUMBER; }

/* ---- the program's settings ---- */

/* splat_oom_fn and core's sp_oom_handler are the same function type. */
void splat_set_oom_handler(splat_oom_fn fn, void *user) { sp_set_oom_handler(fn, user); }

void splat_set_alloc_limit(size_t bytes) { sp_set_alloc_limit(bytes); }

splat_status splat_set_log(splat_context *ctx, splat_log_fn fn, void *user, splat_log_level min_level) {
    if (!ctx) return SPLAT_INVALID;
    if (api_enter(ctx)) return SPLAT_INVALID;
    if (min_level < SPLAT_LOG_DEBUG || min_level > SPLAT_LOG_ERROR)
        return api_leave(ctx, api_fail(SPLAT_INVALID, "splat_set_log: level %d is not a splat_log_level", (int)min_level));
    ctx->log_fn = fn;
    ctx->log_user = user;
    ctx->sink.level = (sp_log_level)min_level;
    return api_leave(ctx, SPLAT_OK);
}

/* ---- configuration ---- */

splat_status api_problems_status(sp_problems *p) {
    if (!p->n) return SPLAT_OK;
    size_t len = 0;
    for (int i = 0; i < p->n; i++) len += strlen(p->items[i]) + 1;
    char *msg = sp_malloc(len + 1), *w = msg;
    for (int i = 0; i < p->n; i++) w += sprintf(w, "%s%s", i ? "\n" : "", p->items[i]);
    sp_error("%s", msg);
    free(msg);
    sp_problems_free(p);
    return SPLAT_INVALID;
}

/* The backend is made from the configuration: any change may concern it. */
splat_status api_config_changed(splat_context *ctx, splat_status st) {
    api_drop_backend(ctx);
    api_drop_cameras(ctx);
    return st;
}

splat_status splat_config_reset(splat_context *ctx) {
    if (!ctx) return SPLAT_INVALID;
    if (api_enter(ctx)) return SPLAT_INVALID;
    sp_config_defaults(&ctx->cfg);
    return api_leave(ctx, api_config_changed(ctx, SPLAT_OK));
}

splat_status splat_config_load_file(splat_context *ctx, const char *path) {
    if (!ctx) return SPLAT_INVALID;
    if (api_enter(ctx)) return SPLAT_INVALID;
    if (!path) return api_leave(ctx, api_fail(SPLAT_INVALID, "splat_config_load_file: no path (NULL)"));
    sp_problems p = {0};
    sp_config_apply_file(path, &ctx->cfg, &p);
    return api_leave(ctx, api_config_changed(ctx, api_problems_status(&p)));
}

splat_status splat_config_load_string(splat_context *ctx, const char *toml, const char *name) {
    if (!ctx) return SPLAT_INVALID;
    if (api_enter(ctx)) return SPLAT_INVALID;
    if (!toml) return api_leave(ctx, api_fail(SPLAT_INVALID, "splat_config_load_string: no text (NULL)"));
    sp_problems p = {0};
    sp_config_apply_text(toml, name ? name : "<string>", &ctx->cfg, &p);
    return api_leave(ctx, api_config_changed(ctx, api_problems_status(&p)));
}

splat_status splat_config_set(splat_context *ctx, const char *assignment) {
    if (!ctx) return SPLAT_INVALID;
    if (api_enter(ctx)) return SPLAT_INVALID;
    if (!assignment) return api_leave(ctx, api_fail(SPLAT_INVALID, "splat_config_set: no assignment (NULL)"));
    sp_problems p = {0};
    sp_config_set(&ctx->cfg, assignment, &p);
    return api_leave(ctx, api_config_changed(ctx, api_problems_status(&p)));
}

/* A field's value as TOML text. */
static char *field_toml(const sp_config *c, const sp_config_field *f) {
    const char *base = (const char *)c + f->offset;
    switch (f->type) {
    case SP_CFG_INT: return sp_strfmt("%d", *(const int *)base);
    case SP_CFG_FLOAT: return sp_strfmt("%.17g", *(const double *)base);
    case SP_CFG_BOOL: return sp_strdup(*(const bool *)base ? "true" : "false");
    case SP_CFG_STRING: break;
    }
    size_t n = strnlen(base, f->size);
    char *s = sp_malloc(2 * n + 3), *w = s;
    *w++ = '"';
    for (size_t i = 0; i < n; i++) {
        if (base[i] == '"' || base[i] == '\\') *w++ = '\\';
        *w++ = base[i];
    }
    *w++ = '"';
    *w = 0;
    return s;
}

/* The schema row of "section.key", or NULL with the thread's error set. */
static const sp_config_field *find_key(const char *key) {
    const char *dot = key ? strchr(key, '.') : NULL;
    char section[64];
    const sp_config_field *f = NULL;
    if (dot && (size_t)(dot - key) < sizeof section) {
        memcpy(section, key, (size_t)(dot - key));
        section[dot - key] = 0;
        f = sp_config_find(section, dot + 1);
    }
    if (!f) sp_error("unknown configuration key '%s' (docs/config.md)", key ? key : "(NULL)");
    return f;
}

splat_status api_copy_out(const char *what, const char *text, char *buf, size_t n, size_t *needed) {
    size_t len = strlen(text) + 1;
    if (needed) *needed = len;
    if (!buf || len > n) return api_fail(SPLAT_INVALID, "%s needs %zu bytes, the buffer has %zu", what, len, n);
    memcpy(buf, text, len);
    return SPLAT_OK;
}

splat_status splat_config_get(splat_context *ctx, const char *key, char *buf, size_t n) {
    if (!ctx) return SPLAT_INVALID;
    if (api_enter(ctx)) return SPLAT_INVALID;
    if (!key || !buf || !n) return api_leave(ctx, api_fail(SPLAT_INVALID, "splat_config_get: no key or buffer"));
    const sp_config_field *f = find_key(key);
    if (!f) return api_leave(ctx, SPLAT_INVALID);
    char *v = field_toml(&ctx->cfg, f);
    splat_status st = SPLAT_OK;
    if (strlen(v) + 1 > n) st = api_fail(SPLAT_INVALID, "%s: the value needs %zu bytes, the buffer has %zu", key,
                                         strlen(v) + 1, n);
    else memcpy(buf, v, strlen(v) + 1);
    free(v);
    return api_leave(ctx, st);
}

static const char *type_name(sp_config_type t) {
    switch (t) {
    case SP_CFG_INT: return "an integer";
    case SP_CFG_FLOAT: return "a number";
    case SP_CFG_BOOL: return "a boolean";
    case SP_CFG_STRING: break;
    }
    return "a string";
}

/* The field of key if its type is one of a and b, else NULL with the thread's error set. */
static const void *typed_field(const sp_config *c, const char *key, sp_config_type a, sp_config_type b,
                               const sp_config_field **out) {
    const sp_config_field *f = find_key(key);
    if (!f) return NULL;
    if (f->type != a && f->type != b) {
        sp_error("%s is %s, not %s", key, type_name(f->type), type_name(a));
        return NULL;
    }
    *out = f;
    return (const char *)c + f->offset;
}

splat_status splat_config_get_int(splat_context *ctx, const char *key, int *value) {
    if (!ctx) return SPLAT_INVALID;
    if (api_enter(ctx)) return SPLAT_INVALID;
    const sp_config_field *f;
    const void *p = value ? typed_field(&ctx->cfg, key, SP_CFG_INT, SP_CFG_INT, &f)
                          : (sp_error("splat_config_get_int: no value (NULL)"), NULL);
    if (!p) return api_leave(ctx, SPLAT_INVALID);
    *value = *(const int *)p;
    return api_leave(ctx, SPLAT_OK);
}

splat_status splat_config_get_double(splat_context *ctx, const char *key, double *value) {
    if (!ctx) return SPLAT_INVALID;
    if (api_enter(ctx)) return SPLAT_INVALID;
    const sp_config_field *f = NULL;
    const void *p = value ? typed_field(&ctx->cfg, key, SP_CFG_FLOAT, SP_CFG_INT, &f)
                          : (sp_error("splat_config_get_double: no value (NULL)"), NULL);
    if (!p) return api_leave(ctx, SPLAT_INVALID);
    *value = f->type == SP_CFG_INT ? (double)*(const int *)p : *(const double *)p;
    return api_leave(ctx, SPLAT_OK);
}

splat_status splat_config_get_bool(splat_context *ctx, const char *key, int *value) {
    if (!ctx) return SPLAT_INVALID;
    if (api_enter(ctx)) return SPLAT_INVALID;
    const sp_config_field *f;
    const void *p = value ? typed_field(&ctx->cfg, key, SP_CFG_BOOL, SP_CFG_BOOL, &f)
                          : (sp_error("splat_config_get_bool: no value (NULL)"), NULL);
    if (!p) return api_leave(ctx, SPLAT_INVALID);
    *value = *(const bool *)p ? 1 : 0;
    return api_leave(ctx, SPLAT_OK);
}

splat_status splat_config_get_string(splat_context *ctx, const char *key, char *buf, size_t n) {
    if (!ctx) return SPLAT_INVALID;
    if (api_enter(ctx)) return SPLAT_INVALID;
    const sp_config_field *f;
    const char *p = buf && n ? typed_field(&ctx->cfg, key, SP_CFG_STRING, SP_CFG_STRING, &f)
                             : (sp_error("splat_config_get_string: no buffer"), NULL);
    if (!p) return api_leave(ctx, SPLAT_INVALID);
    char *v = sp_strfmt("%.*s", (int)strnlen(p, f->size), p);
    splat_status st = api_copy_out(key, v, buf, n, NULL);
    free(v);
    return api_leave(ctx, st);
}

splat_status splat_config_set_string(splat_context *ctx, const char *key, const char *value) {
    if (!ctx) return SPLAT_INVALID;
    if (api_enter(ctx)) return SPLAT_INVALID;
    const sp_config_field *f;
    if (!value) return api_leave(ctx, api_fail(SPLAT_INVALID, "splat_config_set_string: no value (NULL)"));
    if (!typed_field(&ctx->cfg, key, SP_CFG_STRING, SP_CFG_STRING, &f)) return api_leave(ctx, SPLAT_INVALID);
    /* as `--set key=value`: an unquoted value is taken literally, unless quotes or spaces at its
     * ends would make it read otherwise; then it goes quoted and escaped */
    size_t n = strlen(value);
    int literal = n && !strchr("\"' \t", value[0]) && !strchr(" \t", value[n - 1]);
    char *set;
    if (literal) {
        set = sp_strfmt("%s=%s", key, value);
    } else {
        set = sp_malloc(strlen(key) + 2 * n + 4);
        char *w = set + sprintf(set, "%s=\"", key);
        for (size_t i = 0; i < n; i++) {
            if (value[i] == '"' || value[i] == '\\') *w++ = '\\';
            *w++ = value[i];
        }
        strcpy(w, "\"");
    }
    sp_problems p = {0};
    sp_config_set(&ctx->cfg, set, &p);
    free(set);
    return api_leave(ctx, api_config_changed(ctx, api_problems_status(&p)));
}

splat_status splat_config_text(splat_context *ctx, char *buf, size_t n, size_t *needed) {
    if (!ctx) return SPLAT_INVALID;
    if (api_enter(ctx)) return SPLAT_INVALID;
    char *text = sp_config_to_toml(&ctx->cfg);
    splat_status st = api_copy_out("the configuration text", text, buf, n, needed);
    free(text);
    return api_leave(ctx, st);
}

splat_status splat_config_diff(splat_context *ctx, const char *path, char *buf, size_t n, size_t *needed) {
    if (!ctx) return SPLAT_INVALID;
    if (api_enter(ctx)) return SPLAT_INVALID;
    if (!path) return api_leave(ctx, api_fail(SPLAT_INVALID, "splat_config_diff: no path (NULL)"));
    sp_config *run = SP_NEW(sp_config, 1);
    sp_problems p = {0};
    splat_status st;
    if (sp_config_load(path, run, &p)) {
        api_problems_status(&p); /* the file's problems are the message */
        st = SPLAT_ERROR;
    } else {
        sp_problems_free(&p);
        /* A run's config.toml holds the values its strategy resolved (init.opacity and
         * init.scale_factor 0 become the strategy's); sp_chain_config_diff resolves them only
         * for refine.strategy = "auto", so an explicit strategy's are resolved here first (it
         * would otherwise report 0 against the run's resolved values). */
        sp_config *want = SP_NEW(sp_config, 1);
        *want = ctx->cfg;
        if (strcmp(want->refine.strategy, "auto")) sp_config_resolve_strategy(want, 0);
        sp_clear_error(); /* an mcmc budget problem is not this call's */
        char *diff = sp_chain_config_diff(run, want);
        free(want);
        st = api_copy_out("the configuration difference", diff ? diff : "", buf, n, needed);
        free(diff);
    }
    free(run);
    return api_leave(ctx, st);
}

splat_status splat_config_check(splat_context *ctx) {
    if (!ctx) return SPLAT_INVALID;
    if (api_enter(ctx)) return SPLAT_INVALID;
    sp_problems p = {0};
    sp_config_validate_for_training(&ctx->cfg, &p);
    return api_leave(ctx, api_problems_status(&p));
}

splat_status splat_config_save(splat_context *ctx, const char *path) {
    if (!ctx) return SPLAT_INVALID;
    if (api_enter(ctx)) return SPLAT_INVALID;
    if (!path) return api_leave(ctx, api_fail(SPLAT_INVALID, "splat_config_save: no path (NULL)"));
    return api_leave(ctx, sp_config_write(&ctx->cfg, path) ? SPLAT_ERROR : SPLAT_OK);
}

/* ---- the model ---- */

static int ends_with(const char *s, const char *tail) {
    size_t a = strlen(s), b = strlen(tail);
    return a >= b && !strcmp(s + a - b, tail);
}

/* A checkpoint's parameters (its Adam moments and curves are dropped). */
static int read_checkpoint_model(const char *path, sp_gaussians *g) {
    sp_checkpoint ck;
    if (sp_checkpoint_read(path, &ck)) return -1;
    *g = ck.g;
    memset(&ck.g, 0, sizeof ck.g);
    sp_checkpoint_free(&ck);
    return 0;
}

splat_status splat_load_model(splat_context *ctx, const char *path) { return splat_load_model_as(ctx, path, NULL); }

splat_status splat_load_model_as(splat_context *ctx, const char *path, const char *format) {
    if (!ctx) return SPLAT_INVALID;
    if (api_enter(ctx)) return SPLAT_INVALID;
    if (!path) return api_leave(ctx, api_fail(SPLAT_INVALID, "splat_load_model: no path (NULL)"));
    sp_model_spec spec;
    if (sp_model_spec_parse(format ? format : "spz", &spec)) return api_leave(ctx, api_status_for_error(SPLAT_INVALID));
    sp_gaussians g;
    memset(&g, 0, sizeof g);
    int rc;
    if (sp_dir_exists(path)) {
        char *ply = sp_path_join(path, "point_cloud.ply"), *ck = sp_path_join(path, "checkpoint.bin");
        if (sp_file_exists(ply)) rc = sp_model_read(ply, &g);
        else if (sp_file_exists(ck)) rc = read_checkpoint_model(ck, &g);
        else rc = sp_error("%s: neither point_cloud.ply nor checkpoint.bin (not a run folder)", path);
        free(ply);
        free(ck);
    } else if (ends_with(path, ".bin")) {
        rc = read_checkpoint_model(path, &g);
    } else {
        rc = sp_model_read_spec(path, &spec, &g);
    }
    if (rc) return api_leave(ctx, api_status_for_error(SPLAT_ERROR));
    api_set_model(ctx, &g);
    return api_leave(ctx, SPLAT_OK);
}

splat_status splat_model_info(splat_context *ctx, int *num_gaussians, int *sh_degree) {
    if (!ctx) return SPLAT_INVALID;
    if (api_enter(ctx)) return SPLAT_INVALID;
    if (!ctx->have_model) return api_leave(ctx, api_fail(SPLAT_NO_MODEL, "no model: load or train one first"));
    if (num_gaussians) *num_gaussians = ctx->g.n;
    if (sh_degree) *sh_degree = ctx->g.sh_degree;
    return api_leave(ctx, SPLAT_OK);
}

splat_status splat_export(splat_context *ctx, const char *path, const char *format) {
    if (!ctx) return SPLAT_INVALID;
    if (api_enter(ctx)) return SPLAT_INVALID;
    if (!path) return api_leave(ctx, api_fail(SPLAT_INVALID, "splat_export: no path (NULL)"));
    if (!ctx->have_model) return api_leave(ctx, api_fail(SPLAT_NO_MODEL, "no model to export: load or train one first"));
    sp_model_spec spec;
    if (format) {
        if (sp_model_spec_parse(format, &spec)) {
            char msg[512];
            snprintf(msg, sizeof msg, "%s", sp_last_error());
            return api_leave(ctx, api_fail(SPLAT_INVALID, "export format must be ply, splat, spz, glb or sog: %s", msg));
        }
    } else {
        sp_model_spec_parse("spz", &spec);
        spec.format = sp_model_format_from_path(path);
        if (spec.format == SP_MODEL_UNKNOWN)
            return api_leave(ctx, api_fail(SPLAT_INVALID, "cannot tell the format from '%s': give ply, splat, spz, glb or sog", path));
    }
    if (sp_model_write_spec(path, &spec, &ctx->g)) return api_leave(ctx, api_status_for_error(SPLAT_ERROR));
    return api_leave(ctx, SPLAT_OK);
}

const char *splat_model_format(const char *path) {
    if (!path) return NULL;
    sp_model_format f = sp_model_format_from_path(path);
    return f == SP_MODEL_UNKNOWN ? NULL : sp_model_format_name(f);
}

char *splat_path_resolve(const char *path) { return path ? sp_path_resolve(path) : NULL; }

int splat_path_within(const char *path, const char *parent) {
    return path && parent && sp_path_within(path, parent) ? 1 : 0;
}

int splat_encode_jpeg(const uint8_t *rgb, int w, int h, int quality, unsigned char **out, unsigned long *n) {
    if (!out || !n) return -1;
    *out = NULL;
    *n = 0;
    if (!rgb || w <= 0 || h <= 0 || quality < 1 || quality > 100) return -1;
    return sp_image_encode_jpeg(rgb, w, h, quality, out, n) ? -1 : 0;
}

/* ---- the procedural scenes ---- */

/* The options as synth.h takes them, or -1 with the thread's error naming the bad one. */
static int synth_options(const splat_synth_opts *in, sp_synth_opts *o) {
    if (!in) return sp_error("splat_synth_scene: no options (NULL)");
    int capture = in->scene && !strcmp(in->scene, "capture");
    if (!in->scene || (!capture && strcmp(in->scene, "objects")))
        return sp_error("splat_synth_scene: scene must be \"objects\" or \"capture\", got \"%s\"",
                        in->scene ? in->scene : "(NULL)");
    if (capture) sp_synth_capture_defaults(o);
    else sp_synth_defaults(o);
    if (in->width < 8 || in->width > 8192 || in->height < 8 || in->height > 8192)
        return sp_error("splat_synth_scene: image size %dx%d is outside 8..8192 a side", in->width, in->height);
    if (in->num_train < 1 || in->num_val < 0 || in->num_test < 0 || in->num_train > 100000 || in->num_val > 100000 ||
        in->num_test > 100000)
        return sp_error("splat_synth_scene: at least 1 train view, counts up to 100000");
    if (capture && (in->num_val || in->num_test))
        return sp_error("splat_synth_scene: the capture scene takes train views only (num_val and num_test 0): its "
                        "loader holds out every 8th view");
    o->width = in->width;
    o->height = in->height;
    o->num_train = in->num_train;
    o->num_val = in->num_val;
    o->num_test = in->num_test;
    o->samples = in->samples;
    o->seed = in->seed;
    return 0;
}

splat_status splat_synth_defaults(splat_synth_opts *opts, const char *scene) {
    if (!opts || !scene || (strcmp(scene, "objects") && strcmp(scene, "capture"))) return SPLAT_INVALID;
    sp_synth_opts o;
    int capture = !strcmp(scene, "capture");
    if (capture) sp_synth_capture_defaults(&o);
    else sp_synth_defaults(&o);
    memset(opts, 0, sizeof *opts);
    opts->scene = capture ? "capture" : "objects";
    opts->width = o.width;
    opts->height = o.height;
    opts->num_train = o.num_train;
    opts->num_val = o.num_val;
    opts->num_test = o.num_test;
    opts->samples = o.samples;
    opts->seed = o.seed;
    return SPLAT_OK;
}

splat_status splat_synth_scene(splat_context *ctx, const char *dir, const splat_synth_opts *opts) {
    if (!ctx) return SPLAT_INVALID;
    if (api_enter(ctx)) return SPLAT_INVALID;
    if (!dir) return api_leave(ctx, api_fail(SPLAT_INVALID, "splat_synth_scene: no folder (NULL)"));
    sp_synth_opts o;
    if (synth_options(opts, &o)) return api_leave(ctx, SPLAT_INVALID);
    return api_leave(ctx, sp_synth_write(dir, &o) ? api_status_for_error(SPLAT_ERROR) : SPLAT_OK);
}

splat_status splat_synth(splat_context *ctx, const char *dir, int size, int num_train, int num_val, int num_test,
                         uint64_t seed) {
    if (!ctx) return SPLAT_INVALID;
    if (api_enter(ctx)) return SPLAT_INVALID;
    if (!dir) return api_leave(ctx, api_fail(SPLAT_INVALID, "splat_synth: no folder (NULL)"));
    if (size < 8 || size > 8192)
        return api_leave(ctx, api_fail(SPLAT_INVALID, "splat_synth: size %d is outside 8..8192", size));
    if (num_train < 1 || num_val < 0 || num_test < 0 || num_train > 100000 || num_val > 100000 || num_test > 100000)
        return api_leave(ctx, api_fail(SPLAT_INVALID, "splat_synth: at least 1 train view, counts up to 100000"));
    sp_synth_opts o;
    sp_synth_defaults(&o);
    o.width = o.height = size;
    o.num_train = num_train;
    o.num_val = num_val;
    o.num_test = num_test;
    o.seed = seed;
    return api_leave(ctx, sp_synth_write(dir, &o) ? api_status_for_error(SPLAT_ERROR) : SPLAT_OK);
}
