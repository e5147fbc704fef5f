/* eval.h — renders held-out views with a backend and scores them: PSNR and SSIM on 8-bit
 * quantized renders against the 8-bit composited ground truth; optional side-by-side PNGs. */
#ifndef SPLAT_EVAL_H
#define SPLAT_EVAL_H

#include "backend/backend.h"
#include "scene/dataset.h"

typedef struct {
    int n;
    char **names;
    double *psnr, *ssim;
    double mean_psnr, mean_ssim;
    double seconds;
} sp_eval_result;

/* renders_dir: when not NULL, writes renders_dir/<index>_<name>.png as [prediction | ground truth].
 * Views are rendered SP_EVAL_BATCH at a time on the calling thread (GPU backends keep per-thread
 * device state) and scored by OpenMP's default team; on a GPU backend the next batch renders while
 * the team scores the last one; a backend with ops->score scores each view on its device (the
 * team prepares the ground truths and writes the pictures). Results do not depend on the schedule
 * or the thread count (the device's SSIM equals the host's to rounding). On
 * failure (-1) the error is that of the first view that failed (its file named) and out is left
 * empty; sp_eval_result_free may still be called on it. */
int sp_eval_views(sp_backend *b, const sp_split *split, sp_alpha_mode alpha, int sh_degree, const float bg[3],
                  const char *renders_dir, sp_eval_result *out);
/* How to stop an evaluation early: fn(user) nonzero stops it before its next batch of views. */
typedef struct {
    int (*fn)(void *user);
    void *user;
} sp_eval_cancel;
/* sp_eval_views that stops when cancel says so (NULL: never): returns 1 then, out left empty. */
int sp_eval_views_cancel(sp_backend *b, const sp_split *split, sp_alpha_mode alpha, int sh_degree, const float bg[3],
                         const char *renders_dir, const sp_eval_cancel *cancel, sp_eval_result *out);

#define SP_EVAL_BATCH 32
/* sp_eval_views with its schedule given (tests run both on the cpu backend): overlap 1 renders a
 * batch while the previous one is scored (what GPU backends get), 0 renders a batch, then scores
 * it (the cpu backend, whose render is a parallel loop itself); batch: views per batch, 1 to
 * SP_EVAL_BATCH (other values: SP_EVAL_BATCH). */
int sp_eval_views_sched(sp_backend *b, const sp_split *split, sp_alpha_mode alpha, int sh_degree, const float bg[3],
                        const char *renders_dir, int overlap, int batch, const sp_eval_cancel *cancel,
                        sp_eval_result *out);
void sp_eval_result_free(sp_eval_result *r);

#endif
