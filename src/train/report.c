/* report.c — writes result.toml and prints the per-stage profile table. Numbers are written as a
 * person would read them: steps and counts as integers, PSNR to 0.001 dB, SSIM to 4 decimals,
 * seconds to 0.01, losses to 5 significant digits (every value still a TOML integer or float). */
#include "train/report.h"

#include <sys/resource.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/core.h"
#include "io/toml.h"

/* v rounded to `decimals` places (or, with decimals < 0, to -decimals significant digits), so that
 * the TOML writer's shortest round-trip form is the short decimal text. */
static double rounded(double v, int decimals) {
    if (!isfinite(v)) return v;
    char b[64];
    if (decimals >= 0) snprintf(b, sizeof b, "%.*f", decimals, v);
    else snprintf(b, sizeof b, "%.*g", -decimals, v);
    return strtod(b, NULL);
}

static void put_float(sp_toml_writer *w, const char *key, double v, int decimals) {
    sp_tomlw_float(w, key, rounded(v, decimals));
}

static void put_floats(sp_toml_writer *w, const char *key, const double *v, int n, int decimals) {
    double *t = SP_NEW(double, n > 0 ? n : 1);
    for (int i = 0; i < n; i++) t[i] = rounded(v[i], decimals);
    sp_tomlw_float_array(w, key, t, n);
    free(t);
}

static void put_ints(sp_toml_writer *w, const char *key, const double *v, int n) {
    int64_t *t = SP_NEW(int64_t, n > 0 ? n : 1);
    for (int i = 0; i < n; i++) t[i] = isfinite(v[i]) ? (int64_t)llround(v[i]) : 0;
    sp_tomlw_int_array(w, key, t, n);
    free(t);
}

enum { PSNR_DEC = 3, SSIM_DEC = 4, SEC_DEC = 2, LOSS_SIG = -5 };

static void eval_tables(sp_toml_writer *w, const char *split, const sp_eval_result *e) {
    char name[64];
    snprintf(name, sizeof name, "eval.%s", split);
    sp_tomlw_table(w, name);
    sp_tomlw_int(w, "views", e->n);
    put_float(w, "psnr", e->mean_psnr, PSNR_DEC);
    put_float(w, "ssim", e->mean_ssim, SSIM_DEC);
    put_float(w, "seconds", e->seconds, SEC_DEC);
    sp_tomlw_string_array(w, "view_names", (const char *const *)e->names, e->n);
    put_floats(w, "view_psnr", e->psnr, e->n, PSNR_DEC);
    put_floats(w, "view_ssim", e->ssim, e->n, SSIM_DEC);
}

/* Steps as integers; values rounded (decimals as in rounded(); INT_VALUES for counts). */
#define INT_VALUES 100
static void curve(sp_toml_writer *w, const char *xname, const char *yname, const sp_series *s, int decimals) {
    put_ints(w, xname, s->x, s->n);
    if (decimals == INT_VALUES) put_ints(w, yname, s->y, s->n);
    else put_floats(w, yname, s->y, s->n, decimals);
}

int sp_report_target(const sp_series *psnr, const sp_series *seconds, double target, int *step, double *secs) {
    if (!(target > 0) || !psnr) return 0;
    for (int i = 0; i < psnr->n; i++)
        if (psnr->y[i] >= target) {
            *step = (int)psnr->x[i];
            *secs = seconds && i < seconds->n ? seconds->y[i] : NAN;
            return 1;
        }
    return 0;
}

/* 1 if every value of s is known (not NaN). */
static int all_known(const sp_series *s) {
    for (int i = 0; i < s->n; i++)
        if (isnan(s->y[i])) return 0;
    return 1;
}

int sp_report_write(const char *path, const sp_report *r) {
    /* Clocks an older checkpoint did not record are left out and named (docs/runs.md). */
    const char *unknown[3];
    int n_unknown = 0;
    double target = r->cfg->trainer.target_psnr, tsec = NAN;
    int ts = 0;
    int reached = target > 0 && sp_report_target(&r->curves[SP_CURVE_PSNR], r->eval_seconds, target, &ts, &tsec);
    if (isnan(r->total_seconds)) unknown[n_unknown++] = "total_seconds";
    if (r->eval_seconds && !all_known(r->eval_seconds)) unknown[n_unknown++] = "psnr_seconds";
    if (reached && isnan(tsec)) unknown[n_unknown++] = "target_seconds";
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
        put_float(&w, "test_psnr", r->test->mean_psnr, PSNR_DEC);
        put_float(&w, "test_ssim", r->test->mean_ssim, SSIM_DEC);
    }
    if (r->val) {
        put_float(&w, "val_psnr", r->val->mean_psnr, PSNR_DEC);
        put_float(&w, "val_ssim", r->val->mean_ssim, SSIM_DEC);
    }
    sp_tomlw_int(&w, "num_gaussians", r->num_gaussians);
    sp_tomlw_int(&w, "steps", r->steps);
    /* every session of the run (a resumed run's earlier ones too), then this session's wall time */
    put_float(&w, "train_seconds", r->train_seconds, SEC_DEC);
    if (!isnan(r->total_seconds)) put_float(&w, "total_seconds", r->total_seconds, SEC_DEC);
    put_float(&w, "session_seconds", r->session_seconds, SEC_DEC);
    put_float(&w, "steps_per_second", r->train_seconds > 0 ? r->steps / r->train_seconds : 0, SEC_DEC);
    /* time to quality: the first evaluation at or above trainer.target_psnr */
    if (target > 0) {
        put_float(&w, "target_psnr", target, PSNR_DEC);
        if (reached) {
            sp_tomlw_int(&w, "target_step", ts);
            if (!isnan(tsec)) put_float(&w, "target_seconds", tsec, SEC_DEC);
        } else {
            sp_tomlw_bool(&w, "target_reached", false);
        }
    }
    if (n_unknown) {
        sp_tomlw_string_array(&w, "unknown", unknown, n_unknown);
        sp_tomlw_string(&w, "unknown_why", "the run was resumed from a checkpoint of an earlier splat, which did not "
                                           "record the wall time of its sessions nor when its evaluations happened");
    }
    if (r->profile && r->profile->peak_bytes > 0) sp_tomlw_int(&w, "peak_memory_bytes", r->profile->peak_bytes);
    if (r->peak_host_mib > 0) put_float(&w, "peak_host_mib", r->peak_host_mib, 1);

    if (r->test) eval_tables(&w, "test", r->test);
    if (r->val) eval_tables(&w, "val", r->val);

    sp_tomlw_table(&w, "curves");
    curve(&w, "loss_step", "loss", &r->curves[SP_CURVE_LOSS], LOSS_SIG);
    curve(&w, "gaussians_step", "gaussians", &r->curves[SP_CURVE_GAUSSIANS], INT_VALUES);
    curve(&w, "psnr_step", "psnr", &r->curves[SP_CURVE_PSNR], PSNR_DEC);
    /* training seconds (every session's) at each evaluation, when all are known */
    if (r->eval_seconds && all_known(r->eval_seconds))
        put_floats(&w, "psnr_seconds", r->eval_seconds->y, r->eval_seconds->n, SEC_DEC);
    curve(&w, "ssim_step", "ssim", &r->curves[SP_CURVE_SSIM], SSIM_DEC);

    const sp_profile *p = r->profile;
    if (p && p->num_stages > 0 && r->cfg->backend.profile) {
        sp_tomlw_table(&w, "profile");
        sp_tomlw_int(&w, "steps", p->calls);
        put_float(&w, "busy_ms", p->busy_ms, 1);
        put_float(&w, "wall_ms", 1e3 * (r->profile_seconds > 0 ? r->profile_seconds : r->train_seconds), 1);
        sp_tomlw_string_array(&w, "stages", p->name, p->num_stages);
        put_floats(&w, "stage_ms", p->ms, p->num_stages, 2);
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
    put_float(&w, key, e->mean_psnr, PSNR_DEC);
    snprintf(key, sizeof key, "%s_ssim", split);
    put_float(&w, key, e->mean_ssim, SSIM_DEC);
    sp_tomlw_int(&w, "num_gaussians", num_gaussians);
    eval_tables(&w, split, e);
    int rc = sp_tomlw_save(&w, path);
    sp_tomlw_free(&w);
    return rc;
}

double sp_report_peak_host_mib(void) {
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru)) return 0.0;
    return (double)ru.ru_maxrss / 1024.0; /* kilobytes on Linux */
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
