/* report.c — writes result.toml and prints the per-stage profile table. */
#include "train/report.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/core.h"
#include "io/toml.h"

static void eval_tables(sp_toml_writer *w, const char *split, const sp_eval_result *e) {
    char name[64];
    snprintf(name, sizeof name, "eval.%s", split);
    sp_tomlw_table(w, name);
    sp_tomlw_int(w, "views", e->n);
    sp_tomlw_float(w, "psnr", e->mean_psnr);
    sp_tomlw_float(w, "ssim", e->mean_ssim);
    sp_tomlw_float(w, "seconds", e->seconds);
    sp_tomlw_string_array(w, "view_names", (const char *const *)e->names, e->n);
    sp_tomlw_float_array(w, "view_psnr", e->psnr, e->n);
    sp_tomlw_float_array(w, "view_ssim", e->ssim, e->n);
}

static void curve(sp_toml_writer *w, const char *xname, const char *yname, const sp_series *s) {
    sp_tomlw_float_array(w, xname, s->x, s->n);
    sp_tomlw_float_array(w, yname, s->y, s->n);
}

int sp_report_write(const char *path, const sp_report *r) {
    sp_toml_writer w;
    sp_tomlw_init(&w);
    sp_tomlw_comment(&w, "splat run result. Metrics are computed on renders quantized to 8 bits.");
    time_t now = time(NULL);
    char when[64];
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));

    sp_tomlw_table(&w, "run");
    sp_tomlw_string(&w, "name", r->cfg->experiment.name);
    sp_tomlw_string(&w, "status", r->status);
    sp_tomlw_string(&w, "finished", when);
    sp_tomlw_string(&w, "version", r->version);
    sp_tomlw_string(&w, "commit", r->commit);
    sp_tomlw_string(&w, "backend", r->backend);
    sp_tomlw_string(&w, "dataset", r->cfg->data.path);
    sp_tomlw_string(&w, "background", r->cfg->data.background);
    sp_tomlw_string(&w, "alpha", r->cfg->data.alpha);
    sp_tomlw_bool(&w, "deterministic", r->cfg->backend.deterministic);

    sp_tomlw_table(&w, "metrics");
    if (r->test) {
        sp_tomlw_float(&w, "test_psnr", r->test->mean_psnr);
        sp_tomlw_float(&w, "test_ssim", r->test->mean_ssim);
    }
    if (r->val) {
        sp_tomlw_float(&w, "val_psnr", r->val->mean_psnr);
        sp_tomlw_float(&w, "val_ssim", r->val->mean_ssim);
    }
    sp_tomlw_int(&w, "num_gaussians", r->num_gaussians);
    sp_tomlw_int(&w, "steps", r->steps);
    sp_tomlw_float(&w, "train_seconds", r->train_seconds);
    sp_tomlw_float(&w, "total_seconds", r->total_seconds);
    sp_tomlw_float(&w, "steps_per_second", r->train_seconds > 0 ? r->steps / r->train_seconds : 0);
    if (r->profile && r->profile->peak_bytes > 0) sp_tomlw_int(&w, "peak_memory_bytes", r->profile->peak_bytes);

    if (r->test) eval_tables(&w, "test", r->test);
    if (r->val) eval_tables(&w, "val", r->val);

    sp_tomlw_table(&w, "curves");
    curve(&w, "loss_step", "loss", &r->curves[SP_CURVE_LOSS]);
    curve(&w, "gaussians_step", "gaussians", &r->curves[SP_CURVE_GAUSSIANS]);
    curve(&w, "psnr_step", "psnr", &r->curves[SP_CURVE_PSNR]);
    curve(&w, "ssim_step", "ssim", &r->curves[SP_CURVE_SSIM]);

    const sp_profile *p = r->profile;
    if (p && p->num_stages > 0 && r->cfg->backend.profile) {
        sp_tomlw_table(&w, "profile");
        sp_tomlw_int(&w, "steps", p->calls);
        sp_tomlw_float(&w, "busy_ms", p->busy_ms);
        sp_tomlw_float(&w, "wall_ms", 1e3 * r->train_seconds);
        sp_tomlw_string_array(&w, "stages", p->name, p->num_stages);
        sp_tomlw_float_array(&w, "stage_ms", p->ms, p->num_stages);
    }
    int rc = sp_tomlw_save(&w, path);
    sp_tomlw_free(&w);
    return rc;
}

int sp_report_write_eval(const char *path, const char *split, const sp_eval_result *e, int num_gaussians) {
    sp_toml_writer w;
    sp_tomlw_init(&w);
    sp_tomlw_table(&w, "metrics");
    char key[64];
    snprintf(key, sizeof key, "%s_psnr", split);
    sp_tomlw_float(&w, key, e->mean_psnr);
    snprintf(key, sizeof key, "%s_ssim", split);
    sp_tomlw_float(&w, key, e->mean_ssim);
    sp_tomlw_int(&w, "num_gaussians", num_gaussians);
    eval_tables(&w, split, e);
    int rc = sp_tomlw_save(&w, path);
    sp_tomlw_free(&w);
    return rc;
}

void sp_report_print_profile(FILE *f, const sp_profile *p, double wall_seconds) {
    if (p->num_stages == 0 || p->calls == 0) return;
    fprintf(f, "\n%-30s %12s %10s %7s\n", "stage", "total ms", "ms/step", "share");
    for (int i = 0; i < p->num_stages; i++)
        fprintf(f, "%-30s %12.1f %10.4f %6.1f%%\n", p->name[i], p->ms[i], p->ms[i] / (double)p->calls,
                p->busy_ms > 0 ? 100.0 * p->ms[i] / p->busy_ms : 0.0);
    fprintf(f, "%-30s %12.1f %10.4f %6.1f%%\n", "busy (sum of stages)", p->busy_ms, p->busy_ms / (double)p->calls,
            100.0);
    fprintf(f, "busy %.1f ms of %.1f ms wall (%.1f%%) over %ld steps", p->busy_ms, 1e3 * wall_seconds,
            wall_seconds > 0 ? 100.0 * p->busy_ms / (1e3 * wall_seconds) : 0.0, p->calls);
    if (p->peak_bytes > 0) fprintf(f, "; peak memory %.1f MiB", (double)p->peak_bytes / (1024.0 * 1024.0));
    fputc('\n', f);
}
