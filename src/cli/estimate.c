/* estimate.c — how long a training run takes, for `splat check` before it starts and for the
 * progress line while it runs. A step costs a part that does not depend on the Gaussian count (the
 * pixels: loss, much of rasterize and backward_raster) and a part proportional to it (project,
 * project_back, adam, the pairs). The count follows the run's plan (splat_train_plan): under mcmc
 * it grows by refine.mcmc_grow at each refine step up to the budget; under adc it is extrapolated
 * from the growth seen so far until densification stops. Before a step has run, the CPU backend's
 * costs measured on the 2-core dev machine give the step time; once steps run, the measured speed
 * replaces them and the model only says how the step time changes with the count.
 * Pure functions: tests/test_estimate.c includes this file. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

/* The CPU backend on one thread (dev machine; docs/cpu.md, 2026-12-03): lego 200x200, SH
 * degree 3, 300 steps at a constant count of 80k and 280k Gaussians took 131 and 347 ms of CPU
 * time per step, about 1.1 us per Gaussian, and 20k at degree 0 took 58 ms. The rest, 45 ms there,
 * is inflated by the large Gaussians of a random start: on the demo scene under mcmc (10k growing
 * to 60k) the step time grew about as fast as the count, so the part that does not grow with it was
 * taken smaller, 0.4 us per pixel. Both scaled by 0.625 on 2026-12-04 (docs/cpu.md): the same runs
 * took 0.63 of those times, and a 2000-step lego run trained in 160 s against 247 s estimated. */
#define CPU_S_PER_PIXEL 0.25e-6
#define CPU_S_PER_GAUSSIAN 0.75e-6
/* What each thread after the first adds, assumed (not measured: on a busy machine the automatic thread
 * count drops to what the machine gives, and the progress line measures what it gets). */
#define CPU_EXTRA_THREAD 0.7
/* GPU backends: no cost model; half of a step is taken as not growing with the count. */
#define GPU_FIXED_SHARE 0.5

static int plan_cpu(const splat_plan *p) { return !strcmp(p->backend, "cpu"); }

/* The first refine step after `from` (the trainer's rule: after refine_start, a multiple of
 * refine_every, before refine_stop), or INT_MAX when none is left. */
static int next_refine(const splat_plan *p, int from) {
    if (p->refine_every <= 0) return INT_MAX;
    int after = from > p->refine_start ? from : p->refine_start;
    long long r = ((long long)after / p->refine_every + 1) * p->refine_every;
    return r < p->refine_stop ? (int)r : INT_MAX;
}

/* The count after one refine step: mcmc adds floor(grow x n) up to the budget; adc what the
 * observed slope gives over one refine interval, up to refine.capacity. */
static double grown(const splat_plan *p, double n, double adc_slope) {
    double add = p->grow > 0 ? floor(p->grow * n) : adc_slope * p->refine_every;
    if (!(add > 0)) return n;
    double cap = p->max_gaussians > 0 ? (double)p->max_gaussians : INFINITY;
    if (n >= cap) return n;
    return n + add < cap ? n + add : cap;
}

double cli_est_count(const splat_plan *p, int from, double n, double adc_slope, int step) {
    for (int r = next_refine(p, from); r <= step; r = next_refine(p, r)) {
        double m = grown(p, n, adc_slope);
        if (m == n) break; /* at the budget, or no growth: it stays */
        n = m;
    }
    return n;
}

int cli_est_growth_end(const splat_plan *p, int from, double n, double adc_slope) {
    int last = from;
    for (int r = next_refine(p, from); r < p->max_steps; r = next_refine(p, r)) {
        double m = grown(p, n, adc_slope);
        if (m == n) break;
        n = m;
        last = r;
    }
    return last;
}

double cli_est_seconds(const splat_plan *p, int from, double n, double adc_slope, double fixed_s,
                       double per_gaussian_s) {
    double total = 0;
    int s = from;
    while (s < p->max_steps) {
        int r = next_refine(p, s), end = r < p->max_steps ? r : p->max_steps;
        total += (double)(end - s) * (fixed_s + per_gaussian_s * n); /* steps s+1 .. end at count n */
        if (end == p->max_steps) break;
        double m = grown(p, n, adc_slope); /* the refine after step r changes the count */
        s = r;
        if (m == n) { /* no more growth: the rest at this count */
            total += (double)(p->max_steps - s) * (fixed_s + per_gaussian_s * n);
            break;
        }
        n = m;
    }
    return total;
}

double cli_est_fixed_share(const splat_plan *p, double n) {
    if (!plan_cpu(p)) return GPU_FIXED_SHARE;
    double a = CPU_S_PER_PIXEL * p->view_pixels, b = CPU_S_PER_GAUSSIAN * (n > 0 ? n : 0);
    return a + b > 0 ? a / (a + b) : 1.0;
}

void cli_est_cpu_costs(const splat_plan *p, double *fixed_s, double *per_gaussian_s) {
    int t = p->threads > 0 ? p->threads : 1;
    double speed = 1.0 + CPU_EXTRA_THREAD * (t - 1);
    *fixed_s = CPU_S_PER_PIXEL * p->view_pixels / speed;
    *per_gaussian_s = CPU_S_PER_GAUSSIAN / speed;
}

double cli_est_run_seconds(const splat_plan *p) {
    if (!plan_cpu(p)) return NAN;
    double a, b;
    cli_est_cpu_costs(p, &a, &b);
    return cli_est_seconds(p, 0, p->initial_gaussians, 0.0, a, b);
}

const char *cli_est_short_recipe(const splat_plan *p) {
    if (!plan_cpu(p) || p->max_steps < 20000) return NULL; /* the default's length or longer */
    return "a shorter CPU run with the same schedules in proportion: --set trainer.max_steps=7000 "
           "--set trainer.schedule_steps=20000 --set refine.max_gaussians=100000 --set loss.ssim_weight=0.2 "
           "(docs/cpu.md)";
}

void cli_fmt_duration(double s, char *buf, size_t n) {
    if (!isfinite(s) || s < 0) {
        snprintf(buf, n, "-");
        return;
    }
    long t = lround(s);
    if (t >= 3600) snprintf(buf, n, "%ldh%02ldm", t / 3600, (t / 60) % 60);
    else if (t >= 60) snprintf(buf, n, "%ldm%02lds", t / 60, t % 60);
    else snprintf(buf, n, "%lds", t);
}
