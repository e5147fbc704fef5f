/* chain.c — benchmark chains (chain.h): reading a chain file into per-scene configurations,
 * reading each scene's result.toml back, and writing the chain's summary files and plot. */
#include "train/chain.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/paths.h"
#include "eval/plot.h"
#include "io/toml.h"

/* ---- the chain file ---- */

static const sp_toml_value *get_typed(const sp_toml_doc *d, const char *table, const char *key, sp_toml_type t,
                                      const char *path, sp_problems *pr) {
    const sp_toml_value *v = sp_toml_get(d, table, key);
    if (v && v->type != t) {
        sp_problems_add(pr, "%s:%d: %s.%s must be %s, not %s", path, v->line, table, key, sp_toml_type_name(t),
                        sp_toml_type_name(v->type));
        return NULL;
    }
    return v;
}

/* Applies an array of "key=value" strings; problems name the chain file and line. */
static void apply_sets(sp_config *cfg, const sp_toml_value *arr, const char *table, const char *path,
                       sp_problems *pr) {
    if (!arr) return;
    for (int i = 0; i < arr->n; i++) {
        const sp_toml_value *it = &arr->items[i];
        if (it->type != SP_TOML_STRING) {
            sp_problems_add(pr, "%s:%d: %s.set: every item is a \"section.key=value\" string", path, it->line,
                            table);
            continue;
        }
        int before = pr->n;
        sp_config_set(cfg, it->s, pr);
        for (int k = before; k < pr->n; k++) { /* "x: ..." -> "chain.toml:7: scene.set x: ..." */
            char *m = sp_strfmt("%s:%d: %s.set %s", path, it->line, table, pr->items[k]);
            free(pr->items[k]);
            pr->items[k] = m;
        }
    }
}

static int name_ok(const char *s) {
    if (!*s || !strcmp(s, ".") || !strcmp(s, "..") || strlen(s) >= 64) return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || strchr("-_.", *s)))
            return 0;
    return 1;
}

/* "bench/chains/nerf.toml" -> "runs/nerf" */
static char *default_out(const char *path) {
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    size_t n = strlen(b);
    if (n > 5 && !strcmp(b + n - 5, ".toml")) n -= 5;
    return sp_strfmt("runs/%.*s", (int)n, b);
}

static void check_keys(const sp_toml_doc *d, int table, const char *const *known, const char *path,
                       sp_problems *pr) {
    for (int e = 0; e < d->n; e++) {
        if (d->entries[e].table != table) continue;
        int ok = 0;
        for (int k = 0; known[k]; k++) ok |= !strcmp(d->entries[e].key, known[k]);
        if (!ok)
            sp_problems_add(pr, "%s:%d: unknown key '%s' in [%s]", path, d->entries[e].line, d->entries[e].key,
                            d->tables[table].name);
    }
}

int sp_chain_load(const char *path, const char *const *sets, int n_sets, const char *out_override, sp_chain *c,
                  sp_problems *pr) {
    memset(c, 0, sizeof *c);
    int before = pr->n;
    sp_toml_doc d;
    if (sp_toml_load(path, &d)) {
        sp_problems_add(pr, "%s", sp_last_error());
        return -1;
    }
    c->path = sp_strdup(path);
    static const char *const chain_keys[] = {"out", "config", "set", NULL};
    static const char *const scene_keys[] = {"path", "config", "set", NULL};
    const sp_toml_value *out = NULL, *base = NULL, *shared = NULL;
    for (int t = 0; t < d.ntables; t++) {
        const char *tn = d.tables[t].name;
        if (!strcmp(tn, "chain")) {
            check_keys(&d, t, chain_keys, path, pr);
            out = get_typed(&d, "chain", "out", SP_TOML_STRING, path, pr);
            base = get_typed(&d, "chain", "config", SP_TOML_STRING, path, pr);
            shared = get_typed(&d, "chain", "set", SP_TOML_ARRAY, path, pr);
        } else if (!strncmp(tn, "scene.", 6)) {
            check_keys(&d, t, scene_keys, path, pr);
            c->n++;
        } else if (t == 0) {
            for (int e = 0; e < d.n; e++)
                if (d.entries[e].table == 0)
                    sp_problems_add(pr, "%s:%d: '%s' belongs in [chain] or a [scene.NAME] table", path,
                                    d.entries[e].line, d.entries[e].key);
        } else {
            sp_problems_add(pr, "%s:%d: unknown table [%s] (a chain has [chain] and [scene.NAME] tables)", path,
                            d.tables[t].line, tn);
        }
    }
    if (!c->n) sp_problems_add(pr, "%s: no scenes (add a [scene.NAME] table with a path for each)", path);
    c->out = out_override ? sp_strdup(out_override) : out ? sp_strdup(out->s) : default_out(path);
    c->scenes = SP_NEW(sp_chain_scene, c->n > 0 ? c->n : 1);
    int k = 0;
    for (int t = 0; t < d.ntables; t++) {
        const char *tn = d.tables[t].name;
        if (strncmp(tn, "scene.", 6)) continue;
        sp_chain_scene *s = &c->scenes[k++];
        snprintf(s->name, sizeof s->name, "%s", tn + 6);
        if (!name_ok(tn + 6))
            sp_problems_add(pr, "%s:%d: scene name '%s': use letters, digits, '-', '_' or '.' (it names a folder)",
                            path, d.tables[t].line, tn + 6);
        for (int j = 0; j < k - 1; j++)
            if (!strcmp(c->scenes[j].name, s->name))
                sp_problems_add(pr, "%s:%d: scene '%s' appears twice", path, d.tables[t].line, s->name);
        sp_config *cfg = &s->cfg;
        sp_config_defaults(cfg);
        const sp_toml_value *own = get_typed(&d, tn, "config", SP_TOML_STRING, path, pr);
        const char *cfile = own ? own->s : base ? base->s : NULL;
        if (cfile) sp_config_load(cfile, cfg, pr);
        apply_sets(cfg, shared, "chain", path, pr);
        const sp_toml_value *dp = get_typed(&d, tn, "path", SP_TOML_STRING, path, pr);
        if (dp) snprintf(cfg->data.path, sizeof cfg->data.path, "%s", dp->s);
        else sp_problems_add(pr, "%s:%d: [%s] needs path = \"DATASET_DIR\"", path, d.tables[t].line, tn);
        snprintf(cfg->experiment.name, sizeof cfg->experiment.name, "%s", s->name);
        apply_sets(cfg, get_typed(&d, tn, "set", SP_TOML_ARRAY, path, pr), tn, path, pr);
        for (int i = 0; i < n_sets; i++) sp_config_set(cfg, sets[i], pr);
        char *rd = sp_path_join(c->out, s->name);
        snprintf(cfg->output.run_dir, sizeof cfg->output.run_dir, "%s", rd);
        free(rd);
        if (dp && !sp_dir_exists(cfg->data.path))
            sp_problems_add(pr, "%s:%d: [%s] path: %s: no such directory", path, dp->line, tn, cfg->data.path);
        sp_config_validate_for_training(cfg, pr);
    }
    sp_toml_free(&d);
    return pr->n > before ? -1 : 0;
}

void sp_chain_free(sp_chain *c) {
    free(c->path);
    free(c->out);
    free(c->scenes);
    memset(c, 0, sizeof *c);
}

/* ---- results ---- */

static int num(const sp_toml_value *v, double *out) {
    if (!v) return 0;
    if (v->type == SP_TOML_FLOAT) *out = v->f;
    else if (v->type == SP_TOML_INT) *out = (double)v->i;
    else return 0;
    return 1;
}

static void read_curve(const sp_toml_doc *d, const char *xk, const char *yk, sp_series *s) {
    const sp_toml_value *x = sp_toml_get(d, "curves", xk), *y = sp_toml_get(d, "curves", yk);
    if (!x || !y || x->type != SP_TOML_ARRAY || y->type != SP_TOML_ARRAY) return;
    for (int i = 0; i < x->n && i < y->n; i++) {
        double a, b;
        if (num(&x->items[i], &a) && num(&y->items[i], &b)) sp_series_push(s, a, b);
    }
}

int sp_chain_read_result(const char *run_dir, sp_chain_result *r) {
    memset(r, 0, sizeof *r);
    r->psnr = r->ssim = r->train_seconds = NAN;
    char *p = sp_path_join(run_dir, "result.toml");
    int exists = sp_file_exists(p);
    sp_toml_doc d;
    int rc = exists ? sp_toml_load(p, &d) : sp_error("%s: no result yet", p);
    free(p);
    if (rc) return -1;
    const sp_toml_value *st = sp_toml_get(&d, "run", "status");
    snprintf(r->status, sizeof r->status, "%s", st && st->type == SP_TOML_STRING ? st->s : "unknown");
    double v;
    if (num(sp_toml_get(&d, "metrics", "test_psnr"), &r->psnr)) {
        snprintf(r->split, sizeof r->split, "test");
        num(sp_toml_get(&d, "metrics", "test_ssim"), &r->ssim);
    } else if (num(sp_toml_get(&d, "metrics", "val_psnr"), &r->psnr)) {
        snprintf(r->split, sizeof r->split, "val");
        num(sp_toml_get(&d, "metrics", "val_ssim"), &r->ssim);
    }
    if (num(sp_toml_get(&d, "metrics", "num_gaussians"), &v)) r->gaussians = (long)v;
    if (num(sp_toml_get(&d, "metrics", "steps"), &v)) r->steps = (long)v;
    num(sp_toml_get(&d, "metrics", "train_seconds"), &r->train_seconds);
    read_curve(&d, "psnr_step", "psnr", &r->psnr_curve);
    read_curve(&d, "loss_step", "loss", &r->loss_curve);
    sp_toml_free(&d);
    r->have = 1;
    return 0;
}

void sp_chain_result_free(sp_chain_result *r) {
    sp_series_free(&r->psnr_curve);
    sp_series_free(&r->loss_curve);
    memset(r, 0, sizeof *r);
}

/* ---- summary ---- */

static double round_to(double v, int decimals) {
    if (!isfinite(v)) return v;
    char b[64];
    snprintf(b, sizeof b, "%.*f", decimals, v);
    return strtod(b, NULL);
}

/* Means over the complete scenes with a score. */
typedef struct {
    int n;
    double psnr, ssim, gaussians, seconds;
} chain_mean;

static chain_mean mean_of(const sp_chain *c, const sp_chain_result *res) {
    chain_mean m = {0};
    for (int i = 0; i < c->n; i++) {
        const sp_chain_result *r = &res[i];
        if (!r->have || strcmp(r->status, "complete") || !isfinite(r->psnr)) continue;
        m.n++;
        m.psnr += r->psnr;
        m.ssim += r->ssim;
        m.gaussians += (double)r->gaussians;
        m.seconds += r->train_seconds;
    }
    if (m.n) {
        m.psnr /= m.n;
        m.ssim /= m.n;
        m.gaussians /= m.n;
        m.seconds /= m.n;
    }
    return m;
}

static int write_toml(const sp_chain *c, const sp_chain_result *res, const chain_mean *m) {
    sp_toml_writer w;
    sp_tomlw_init(&w);
    sp_tomlw_comment(&w, "splat bench chain summary: one table per scene (PSNR/SSIM on the test views, or val "
                         "when a scene has none), and the mean over the complete scenes.");
    sp_tomlw_table(&w, "chain");
    sp_tomlw_string(&w, "file", c->path);
    const char **names = SP_NEW(const char *, c->n > 0 ? c->n : 1);
    for (int i = 0; i < c->n; i++) names[i] = c->scenes[i].name;
    sp_tomlw_string_array(&w, "scenes", names, c->n);
    free(names);
    sp_tomlw_int(&w, "complete", m->n);
    sp_tomlw_table(&w, "mean");
    if (m->n) {
        sp_tomlw_float(&w, "psnr", round_to(m->psnr, 3));
        sp_tomlw_float(&w, "ssim", round_to(m->ssim, 4));
        sp_tomlw_int(&w, "gaussians", (int64_t)llround(m->gaussians));
        sp_tomlw_float(&w, "train_seconds", round_to(m->seconds, 2));
    }
    for (int i = 0; i < c->n; i++) {
        const sp_chain_result *r = &res[i];
        char t[96];
        snprintf(t, sizeof t, "scene.%s", c->scenes[i].name);
        sp_tomlw_table(&w, t);
        sp_tomlw_string(&w, "dataset", c->scenes[i].cfg.data.path);
        sp_tomlw_string(&w, "status", r->have ? r->status : "not run");
        if (!r->have) continue;
        if (r->split[0]) {
            sp_tomlw_string(&w, "split", r->split);
            sp_tomlw_float(&w, "psnr", round_to(r->psnr, 3));
            sp_tomlw_float(&w, "ssim", round_to(r->ssim, 4));
        }
        sp_tomlw_int(&w, "gaussians", r->gaussians);
        sp_tomlw_int(&w, "steps", r->steps);
        sp_tomlw_float(&w, "train_seconds", round_to(r->train_seconds, 2));
    }
    char *p = sp_path_join(c->out, "summary.toml");
    int rc = sp_tomlw_save(&w, p);
    free(p);
    sp_tomlw_free(&w);
    return rc;
}

static int write_md(const sp_chain *c, const sp_chain_result *res, const chain_mean *m) {
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) return sp_error("summary.md: out of memory");
    fprintf(f, "# %s\n\n", c->path);
    fprintf(f, "| scene | status | PSNR (dB) | SSIM | Gaussians | steps | train s |\n");
    fprintf(f, "|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < c->n; i++) {
        const sp_chain_result *r = &res[i];
        if (!r->have) {
            fprintf(f, "| %s | not run | | | | | |\n", c->scenes[i].name);
            continue;
        }
        char ps[48] = "", ss[24] = "";
        if (r->split[0]) {
            snprintf(ps, sizeof ps, "%.2f%s", r->psnr, strcmp(r->split, "test") ? " (val)" : "");
            snprintf(ss, sizeof ss, "%.4f", r->ssim);
        }
        fprintf(f, "| %s | %s | %s | %s | %ld | %ld | %.1f |\n", c->scenes[i].name, r->status, ps, ss, r->gaussians,
                r->steps, r->train_seconds);
    }
    if (m->n)
        fprintf(f, "| **mean** (%d complete) | | %.2f | %.4f | %.0f | | %.1f |\n", m->n, m->psnr, m->ssim, m->gaussians,
                m->seconds);
    fprintf(f, "\nPSNR and SSIM on the test views (val where a scene has none), renders quantized to 8 bits.\n");
    fclose(f);
    char *p = sp_path_join(c->out, "summary.md");
    int rc = sp_write_file_atomic(p, text, len);
    free(p);
    free(text);
    return rc;
}

static int write_plot(const sp_chain *c, const sp_chain_result *res) {
    sp_plot_series psnr[SP_PLOT_MAX_LINES - 1], loss[SP_PLOT_MAX_LINES - 1];
    int k = 0;
    for (int i = 0; i < c->n && k < SP_PLOT_MAX_LINES - 1; i++) {
        if (!res[i].have) continue;
        psnr[k] = (sp_plot_series){.title = c->scenes[i].name, .x = res[i].psnr_curve.x, .y = res[i].psnr_curve.y,
                                   .n = res[i].psnr_curve.n};
        loss[k] = (sp_plot_series){.title = c->scenes[i].name, .x = res[i].loss_curve.x, .y = res[i].loss_curve.y,
                                   .n = res[i].loss_curve.n};
        k++;
    }
    sp_plot_series panels[2] = {
        {.title = "eval PSNR (dB)", .lines = psnr, .num_lines = k},
        {.title = "loss (log scale)", .log_y = 1, .lines = loss, .num_lines = k, .x_label = "step"},
    };
    char *p = sp_path_join(c->out, "curves.png");
    int rc = sp_plot_write_png(p, panels, 2, 800, 700);
    free(p);
    return rc;
}

int sp_chain_write_summary(const sp_chain *c, const sp_chain_result *res) {
    if (sp_mkdir_p(c->out)) return -1;
    chain_mean m = mean_of(c, res);
    if (write_toml(c, res, &m) || write_md(c, res, &m)) return -1;
    return write_plot(c, res);
}

/* Keys that do not change what a run computes: where it writes, what it logs, how fast. */
static bool result_neutral(const sp_config_field *f, const sp_config *want) {
    if (!strcmp(f->section, "output") || (!strcmp(f->section, "experiment") && !strcmp(f->key, "name"))) return true;
    if (!strcmp(f->section, "backend") &&
        (!strcmp(f->key, "threads") || !strcmp(f->key, "profile") || !strcmp(f->key, "check_replicas")))
        return true;
    if (!strcmp(f->section, "backend") && !strcmp(f->key, "kind") && !strcmp(want->backend.kind, "auto")) return true;
    if (!strcmp(f->section, "refine") && !strcmp(f->key, "max_gaussians") && want->refine.max_gaussians == 0)
        return true; /* auto: resolved from the dataset the run records */
    if (!strcmp(f->section, "data") && (!strcmp(f->key, "device_cache_mb") || !strcmp(f->key, "decode_threads")))
        return true; /* where streamed images are kept and who decodes them: the same images */
    return strstr(f->key, "log_every") != NULL;
}

static void field_text(const sp_config *c, const sp_config_field *f, char *out, size_t n) {
    const char *p = (const char *)c + f->offset;
    switch (f->type) {
    case SP_CFG_STRING: snprintf(out, n, "\"%s\"", p); break;
    case SP_CFG_INT: snprintf(out, n, "%d", *(const int *)p); break;
    case SP_CFG_FLOAT: snprintf(out, n, "%.17g", *(const double *)p); break;
    case SP_CFG_BOOL: snprintf(out, n, "%s", *(const bool *)p ? "true" : "false"); break;
    }
}

char *sp_chain_config_diff(const sp_config *run, const sp_config *want_in) {
    sp_config *want = SP_NEW(sp_config, 1);
    *want = *want_in;
    /* what the run resolved by strategy (refine.strategy auto, init values 0 = by strategy) */
    if (!strcmp(want->refine.strategy, "auto")) sp_config_resolve_strategy(want, !strcmp(run->refine.strategy, "mcmc"));
    char *list = NULL;
    for (int k = 0; k < sp_config_schema_len; k++) {
        const sp_config_field *f = &sp_config_schema[k];
        if (result_neutral(f, want)) continue;
        char a[1100], b[1100];
        field_text(run, f, a, sizeof a);
        field_text(want, f, b, sizeof b);
        bool same = !strcmp(a, b);
        if (!same && !strcmp(f->section, "data") && !strcmp(f->key, "path")) { /* one folder, two spellings */
            char *ra = sp_path_resolve(run->data.path), *rb = sp_path_resolve(want->data.path);
            same = ra && rb && !strcmp(ra, rb);
            free(ra);
            free(rb);
        }
        if (same) continue;
        char *l = sp_strfmt("%s%s%s.%s = %s (the run has %s)", list ? list : "", list ? ", " : "", f->section, f->key,
                            b, a);
        free(list);
        list = l;
    }
    free(want);
    return list;
}
