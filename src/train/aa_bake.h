/* aa_bake.h — the antialias filter baked into opacities (docs/math.md, "Antialiasing"). A model
 * trained with the opacity-compensated filter and rendered without it shows every small Gaussian at
 * its full opacity instead of opacity x rho (rho = sqrt(det Sigma' / det(Sigma' + 0.3 I)), which
 * depends on the view). Multiplying each Gaussian's opacity by the mean of rho over the views that
 * see its centre gives the standard renderer the filtered image exactly for one view, and the best
 * single opacity for several (`splat export` of a run trained with the filter, splat_bake_antialias).
 * Sub-pixel Gaussians seen from very different distances keep part of the difference. */
#ifndef SPLAT_TRAIN_AA_BAKE_H
#define SPLAT_TRAIN_AA_BAKE_H

#include "scene/dataset.h"
#include "scene/gaussians.h"

typedef struct {
    int seen;         /* Gaussians whose centre some view sees (the others keep their opacity) */
    double rho_min;   /* smallest mean factor applied */
    double rho_mean;  /* mean of the factors applied, over the seen Gaussians */
    int below_half;   /* Gaussians whose opacity was at least halved */
} sp_aa_bake_result;

/* Mean of rho over the cameras of `views` whose image contains the Gaussian's projected centre (in
 * front of the near plane), for Gaussian i of g; *seen_by receives how many cameras that is (the
 * mean is 0 when none). */
double sp_aa_bake_rho(const sp_gaussians *g, int i, const sp_split *views, int *seen_by);

/* Scales the opacity of every Gaussian some view sees by its mean rho (the logit moves accordingly,
 * down to an opacity of 1e-7 for a degenerate covariance, rho 0); the others keep theirs. Threads:
 * sp_omp_threads(). */
void sp_aa_bake(sp_gaussians *g, const sp_split *views, sp_aa_bake_result *out);

#endif
