/* train.h — the training loop: load, initialize, step, refine, evaluate, save. The CLI calls
 * sp_train(); progress is reported through a callback so the loop knows nothing of terminals. */
#ifndef SPLAT_TRAIN_H
#define SPLAT_TRAIN_H

#include "train/config.h"

typedef struct {
    int step, max_steps;
    double loss; /* mean loss of the last few steps, read every 10 (NaN before the first) */
    int num_gaussians;
    double steps_per_s; /* recent smoothed speed; the session's mean in the final report */
    double elapsed_s;   /* wall time of this session's loop, saves included */
    double eta_s;       /* NaN until the speed is known (after the first interval) */
    double psnr; /* latest evaluation PSNR (NaN before the first) */
    int final;   /* 1 on the last call */
} sp_progress;

typedef void (*sp_progress_fn)(const sp_progress *p, void *user);

typedef struct {
    const char *resume_dir; /* NULL for a fresh run */
    sp_progress_fn progress;
    void *user;
} sp_train_opts;

/* Exit statuses of sp_train. */
enum { SP_TRAIN_OK = 0, SP_TRAIN_FAILED = 1, SP_TRAIN_INTERRUPTED = 130 };

int sp_train(const sp_config *cfg, const sp_train_opts *opts);
/* The run folder a config resolves to (malloc'd). */
char *sp_train_run_dir(const sp_config *cfg);

#endif
