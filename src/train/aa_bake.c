/* aa_bake.c — the antialias filter baked into opacities (aa_bake.h), with the projection math the
 * backends share (backend/ref/stage_math.h, in double). */
#include "train/aa_bake.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "core/threads.h"

#define SP_REAL double
#define SP_SUFFIX d
#include "backend/ref/stage_math.h"

/* Mean rho of Gaussian i over cameras cams[0..n) (see sp_aa_bake_rho). */
static double rho_over(const sp_gaussians *g, int i, const sp_mcam_d *cams, int n, int *seen_by) {
    double m[3], ls[3], q[4], sum = 0.0;
    for (int k = 0; k < 3; k++) m[k] = g->means[3 * i + k], ls[k] = g->log_scales[3 * i + k];
    for (int k = 0; k < 4; k++) q[k] = g->quats[4 * i + k];
    int seen = 0;
    for (int j = 0; j < n; j++) {
        const sp_mcam_d *cam = &cams[j];
        sp_mgeo_d geo;
        if (!sp_m_geometry_d(cam, m, ls, q, &geo)) continue;
        double z = geo.p[2];
        double x = cam->fx * geo.p[0] / z + cam->cx, y = cam->fy * geo.p[1] / z + cam->cy;
        if (!(x >= 0 && x < cam->w && y >= 0 && y < cam->h)) continue;
        sum += sp_m_aa_rho_d(&geo);
        seen++;
    }
    *seen_by = seen;
    return seen ? sum / seen : 0.0;
}

/* The views' cameras in the projection math's form, once per bake. */
static sp_mcam_d *cameras_of(const sp_split *views) {
    sp_mcam_d *cams = SP_NEW(sp_mcam_d, views->n ? views->n : 1);
    for (int j = 0; j < views->n; j++) sp_mcam_init_d(&cams[j], &views->views[j].cam);
    return cams;
}

double sp_aa_bake_rho(const sp_gaussians *g, int i, const sp_split *views, int *seen_by) {
    sp_mcam_d *cams = cameras_of(views);
    double rho = rho_over(g, i, cams, views->n, seen_by);
    free(cams);
    return rho;
}

void sp_aa_bake(sp_gaussians *g, const sp_split *views, sp_aa_bake_result *out) {
    int seen = 0, below_half = 0;
    double rmin = 1.0, rsum = 0.0;
    sp_mcam_d *cams = cameras_of(views);
#pragma omp parallel for schedule(dynamic, 256) reduction(+ : seen, below_half, rsum) reduction(min : rmin) \
    num_threads(sp_omp_threads())
    for (int i = 0; i < g->n; i++) {
        int by;
        double rho = rho_over(g, i, cams, views->n, &by);
        if (!by) continue; /* no view sees it: the filter never touched it either */
        if (!(rho <= 1.0)) rho = 1.0; /* rho <= 1 by construction; NaN parameters stay as they are */
        double o = 1.0 / (1.0 + exp(-(double)g->opacity_logits[i])) * rho;
        if (o < 1e-7) o = 1e-7;
        g->opacity_logits[i] = (float)log(o / (1.0 - o));
        seen++;
        rsum += rho;
        if (rho < rmin) rmin = rho;
        if (rho <= 0.5) below_half++;
    }
    free(cams);
    memset(out, 0, sizeof *out);
    out->seen = seen;
    out->rho_min = seen ? rmin : 1.0;
    out->rho_mean = seen ? rsum / seen : 1.0;
    out->below_half = below_half;
}
