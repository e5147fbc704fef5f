/* progress.c — one live line on a terminal (step, loss, Gaussians, steps/s, elapsed, ETA), plain
 * periodic lines otherwise. The final report says "done in". */
#include <math.h>
#include <stdio.h>
#include <unistd.h>

#include "cli/cli.h"
#include "core/core.h"

static void fmt_duration(double s, char *buf, size_t n) {
    if (!isfinite(s) || s < 0) {
        snprintf(buf, n, "-");
        return;
    }
    int t = (int)(s + 0.5);
    if (t >= 3600) snprintf(buf, n, "%dh%02dm", t / 3600, (t / 60) % 60);
    else if (t >= 60) snprintf(buf, n, "%dm%02ds", t / 60, t % 60);
    else snprintf(buf, n, "%ds", t);
}

/* "elapsed 12s, ETA 1m05s" while running; "done in 1m17s" at the end. */
static void fmt_times(const sp_progress *p, char *buf, size_t n) {
    char el[32], eta[32];
    fmt_duration(p->elapsed_s, el, sizeof el);
    fmt_duration(p->eta_s, eta, sizeof eta);
    if (p->final) snprintf(buf, n, "done in %s", el);
    else snprintf(buf, n, "elapsed %s, ETA %s", el, eta);
}

void sp_cli_progress(const sp_progress *p, void *user) {
    (void)user;
    static int tty = -1;
    static double last_plain = -1, last_tty = -1;
    if (tty < 0) tty = isatty(STDERR_FILENO);
    char times[96], loss[32], psnr[32] = "";
    fmt_times(p, times, sizeof times);
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
        sp_log_set_live_line(!p->final);
        return;
    }
    /* plain: at most one line every 5 seconds, and the final one */
    if (!p->final && last_plain >= 0 && p->elapsed_s >= last_plain && p->elapsed_s - last_plain < 5.0) return;
    last_plain = p->elapsed_s;
    fprintf(stderr, "step %d/%d (%d%%), loss %s, %d Gaussians, %.1f steps/s, %s%s\n", p->step, p->max_steps, pct,
            loss, p->num_gaussians, p->steps_per_s, times, psnr);
}
