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

/* renders_dir: when not NULL, writes renders_dir/<index>_<name>.png as [prediction | ground truth]. */
int sp_eval_views(sp_backend *b, const sp_split *split, sp_alpha_mode alpha, int sh_degree, const float bg[3],
                  const char *renders_dir, sp_eval_result *out);
void sp_eval_result_free(sp_eval_result *r);

#endif
