/* progress.c — one live line on a terminal (step, loss, Gaussians, steps/s, elapsed, ETA), plain
 * periodic lines otherwise. The ETA follows the run's plan (estimate.c): the measured step time
 * grows with the Gaussian count the plan expects. Once the speed is known, a line states the
 * estimate of the whole run (and, for a long CPU run, the shorter recipe). The final report says
 * "done in" for a run that reached its last step and "stopped at step N after" for one that did
 * not (Ctrl-C, an error). */
#include <math.h>
#include <stdio.h>
#include <unistd.h>

#include "cli/cli.h"

/* adc: the growth per step is measured over windows of this many refine intervals. */
#define SLOPE_REFINES 3
/* The estimate line waits for this many steps of the session or this many seconds. */
#define ANNOUNCE_STEPS 100
#define ANNOUNCE_SECONDS 30.0

/* A new run on this clock (the first report, or a step below the last: splat bench's next scene). */
static void clock_start(cli_clock *c, const splat_progress *p) {
    c->started = 1;
    c->announced = 0;
    c->first_step = p->step;
    c->ref_step = p->step;
    c->ref_n = p->num_gaussians;
    c->adc_slope = 0;
}

/* The remaining seconds: the measured step time, scaled with the count the plan expects. */
static double clock_eta(cli_clock *c, const splat_progress *p) {
    if (!c->started || p->step < c->last_step) clock_start(c, p);
    c->last_step = p->step;
    if (!c->have_plan || p->final || !isfinite(p->eta_s) || !(p->steps_per_s > 0)) return p->eta_s;
    splat_plan *pl = &c->plan;
    pl->max_steps = p->max_steps;
    double n = p->num_gaussians;
    if (pl->grow <= 0) { /* adc: how fast the count grew over the last window, extrapolated */
        int window = SLOPE_REFINES * (pl->refine_every > 0 ? pl->refine_every : 100);
        if (p->step - c->ref_step >= window) {
            double slope = (n - c->ref_n) / (p->step - c->ref_step);
            c->adc_slope = slope > 0 ? slope : 0;
            c->ref_step = p->step;
            c->ref_n = n;
        }
    }
    double t = 1.0 / p->steps_per_s, f = cli_est_fixed_share(pl, n);
    double fixed = f * t, per_g = n > 0 ? (1.0 - f) * t / n : 0.0;
    return cli_est_seconds(pl, p->step, n, c->adc_slope, fixed, per_g);
}

/* Once, with the first ETA: the whole run's estimate, and the shorter recipe for a long CPU run. */
static void announce(cli_clock *c, const splat_progress *p, double eta, int tty) {
    if (!c || !c->announce || c->announced || !c->have_plan || !isfinite(eta) || p->final) return;
    /* not from the first few steps: a random start's large Gaussians make them slower than the rest */
    if (p->step - c->first_step < ANNOUNCE_STEPS && p->elapsed_s < ANNOUNCE_SECONDS) return;
    c->announced = 1;
    char total[32];
    cli_fmt_duration(p->elapsed_s + eta, total, sizeof total);
    const splat_plan *pl = &c->plan;
    double n = p->num_gaussians, end_n = cli_est_count(pl, p->step, n, c->adc_slope, p->max_steps);
    char growth[160] = "";
    if (pl->grow > 0 && end_n > n * 1.01)
        snprintf(growth, sizeof growth, "; each step slows as the Gaussians grow to %.0f by step %d", end_n,
                 cli_est_growth_end(pl, p->step, n, c->adc_slope));
    else if (pl->grow <= 0 && p->step < pl->refine_stop)
        snprintf(growth, sizeof growth, "; adc: the ETA follows the Gaussian count as densification changes it");
    if (tty) fputs("\r\033[K", stderr);
    if (c->resumed)
        fprintf(stderr, "estimate: this session takes about %s (to step %d) at %.1f steps/s now%s\n", total,
                p->max_steps, p->steps_per_s, growth);
    else
        fprintf(stderr, "estimate: the run takes about %s (%d steps) at %.1f steps/s now%s\n", total, p->max_steps,
                p->steps_per_s, growth);
    const char *recipe = cli_est_short_recipe(pl);
    if (recipe && p->elapsed_s + eta > 1800) fprintf(stderr, "note: %s\n", recipe);
}

/* "elapsed 12s, ETA 1m05s" while running; "done in 1m17s" or "stopped at step N after 40s" at the
 * end (a resumed run's times are this session's). */
static void fmt_times(const splat_progress *p, const cli_clock *c, double eta_s, char *buf, size_t n) {
    char el[32], eta[32];
    cli_fmt_duration(p->elapsed_s, el, sizeof el);
    cli_fmt_duration(eta_s, eta, sizeof eta);
    const char *session = c && c->resumed ? " (this session)" : "";
    if (p->final && p->step < p->max_steps) snprintf(buf, n, "stopped at step %d after %s%s", p->step, el, session);
    else if (p->final) snprintf(buf, n, "done in %s%s", el, session);
    else snprintf(buf, n, "elapsed %s, ETA %s", el, eta);
}

void sp_cli_progress(const splat_progress *p, void *user) {
    cli_clock *c = user;
    static int tty = -1;
    static double last_plain = -1, last_tty = -1;
    if (tty < 0) tty = isatty(STDERR_FILENO);
    double eta = c ? clock_eta(c, p) : p->eta_s;
    announce(c, p, eta, tty);
    char times[128], loss[32], psnr[32] = "";
    fmt_times(p, c, eta, times, sizeof times);
    if (isfinite(p->loss)) snprintf(loss, sizeof loss, "%.4f", p->loss);
    else snprintf(loss, sizeof loss, "-");
    if (isfinite(p->psnr)) snprintf(psnr, sizeof psnr, " | PSNR %.2f dB", p->psnr);
    int pct = p->max_steps ? (int)(100.0 * p->step / p->max_steps) : 0;
    if (tty) {
        /* at most ten redraws a second */
        if (!p->final && last_tty >= 0 && p->elapsed_s >= last_tty && p->elapsed_s - last_tty < 0.1) return;
        last_tty = p->elapsed_s;
        fprintf(stderr, "\r\033[K%3d%% step %d/%d | loss %s | %d Gaussians | %.1f steps/s | %s%s", pct, p->step,
                p->max_steps, loss, p->num_gaussians, p->steps_per_s, times, psnr);
        if (p->final) fputc('\n', stderr);
        fflush(stderr);
        cli_set_live_line(!p->final);
        return;
    }
    /* plain: at most one line every 5 seconds, and the final one */
    if (!p->final && last_plain >= 0 && p->elapsed_s >= last_plain && p->elapsed_s - last_plain < 5.0) return;
    last_plain = p->elapsed_s;
    fprintf(stderr, "step %d/%d (%d%%), loss %s, %d Gaussians, %.1f steps/s, %s%s\n", p->step, p->max_steps, pct,
            loss, p->num_gaussians, p->steps_per_s, times, psnr);
}
