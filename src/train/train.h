/* train.h — the training loop: load, initialize, step, refine, evaluate, save. The API calls
 * sp_train(); progress is reported through a callback so the loop knows nothing of terminals.
 * Messages speak of settings ("trainer.max_steps") and of these options ("train options: force",
 * "train options: resume_dir = DIR"); a command line may put its flags in their place. */
#ifndef SPLAT_TRAIN_H
#define SPLAT_TRAIN_H

#include "scene/gaussians.h"
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
    /* A fresh run into a folder that already holds a run is refused unless force is set; then
     * the old run's files (sp_train_run_files) are removed once everything else checked out. */
    int force;
    sp_progress_fn progress;
    /* Polled between steps (and once before anything is written): non-zero stops the run
     * cleanly, as Ctrl-C does in the CLI. NULL: never. */
    int (*cancel)(void *user);
    void *user;
    /* Live model (a viewer): polled with each progress report; when it returns non-zero the
     * current parameters are copied out and handed to take_model (which may keep them: it
     * takes g over and leaves it empty, or leaves it to be freed). NULL: never. */
    int (*want_model)(void *user);
    void (*take_model)(sp_gaussians *g, int step, void *user);
    /* Not NULL: the model of this call's last save (the end of a complete run, or a stopped or
     * failed one's) is moved there, the parameters point_cloud.ply holds; left empty when this
     * call saved none. The caller frees it. */
    sp_gaussians *model;
} sp_train_opts;

/* Exit statuses of sp_train. */
enum { SP_TRAIN_OK = 0, SP_TRAIN_FAILED = 1, SP_TRAIN_INTERRUPTED = 130 };

/* Trains a run. Everything that can be checked (the run folder, the dataset, the checkpoint
 * when resuming, the backend, the initial Gaussians) is checked BEFORE the first file is
 * written: a run that fails that far leaves an existing run folder byte-identical. */
int sp_train(const sp_config *cfg, const sp_train_opts *opts);
/* 1 if opacity reset mode lowers every opacity after `step`: every refine.opacity_reset_every
 * steps before refine.stop (and at refine.start on a white background), but never within the
 * last opacity_reset_every steps of the run, where too few steps remain to recover. */
int sp_train_opacity_reset_due(const sp_config *cfg, int step);
/* The run folder a config resolves to (malloc'd). */
char *sp_train_run_dir(const sp_config *cfg);
/* The names a run writes into its folder (NULL-terminated); directories end with '/'. A folder
 * holding any of them holds a run; force removes exactly these. */
extern const char *const sp_train_run_files[];

#endif
