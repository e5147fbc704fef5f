/* report.h — result.toml (metrics, per-view scores, curves, profile, settings) and the profile
 * table printed at the end of a run. */
#ifndef SPLAT_REPORT_H
#define SPLAT_REPORT_H

#include <stdio.h>

#include "backend/backend.h"
#include "eval/eval.h"
#include "train/checkpoint.h"
#include "train/config.h"

typedef struct {
    const sp_config *cfg;
    const char *status; /* complete | interrupted | diverged */
    const char *version, *commit, *backend;
    int steps, num_gaussians;
    /* docs/runs.md: train_seconds (training steps) and total_seconds (wall time) count every session
     * of the run, session_seconds this one's wall time; NaN: unknown (left out, and said so) */
    double train_seconds, total_seconds, session_seconds;
    const sp_eval_result *test, *val; /* NULL when not evaluated */
    const sp_series *curves;          /* [SP_CURVES] */
    const sp_series *eval_seconds;    /* training seconds at each PSNR curve point, NaN where unknown (may be NULL) */
    const sp_profile *profile;
    double profile_seconds; /* training seconds the profile covers (this session's; 0: train_seconds) */
    double peak_host_mib; /* peak resident host memory of the process (> 0: written) */
} sp_report;

int sp_report_write(const char *path, const sp_report *r);
/* eval_<split>.toml written by `splat eval --run`. */
int sp_report_write_eval(const char *path, const char *split, const sp_eval_result *e, int num_gaussians);
/* The first point of the PSNR curve at or above target (> 0): its step and the training seconds
 * then (NaN if unknown). Returns 1 if reached, 0 if not (or target <= 0). */
int sp_report_target(const sp_series *psnr, const sp_series *seconds, double target, int *step, double *secs);
/* Peak resident memory of this process so far, in MiB (getrusage ru_maxrss); 0 if unknown. */
double sp_report_peak_host_mib(void);
void sp_report_print_profile(FILE *f, const sp_profile *p, double wall_seconds);

#endif
