/* init.h — initial Gaussians: one per point of a point cloud, or random points in a box.
 *
 * Every Gaussian starts isotropic and unrotated, with the given opacity and its colour as the SH DC
 * term (higher bands zero). Its scale is the root of the mean squared distance to its 3 nearest
 * other points (fewer when the cloud has fewer than 4 points), floored at sqrt(1e-7), unless a fixed
 * scale is given. The neighbour search is an exact k-d tree query, parallel and deterministic. */
#ifndef SPLAT_INIT_H
#define SPLAT_INIT_H

#include <stdint.h>

#include "scene/camera.h"
#include "scene/gaussians.h"

#define SP_INIT_MIN_DIST2 1e-7f   /* floor of the mean squared neighbour distance */
#define SP_INIT_LONE_SCALE 0.01f  /* scale of the only Gaussian of a one-point cloud */

/* Fills g (its previous contents are not freed: pass a fresh or freed store) with n Gaussians
 * at xyz[n][3], colours rgb[n][3] (0..255; NULL: mid grey), SH degree sh_degree (0..3), opacity in
 * (0, 1), and scale fixed_scale when > 0, else the neighbour rule above. */
int sp_init_from_points(sp_gaussians *g, const float *xyz, const uint8_t *rgb, int n, int sh_degree, float opacity,
                        float fixed_scale);

/* count points uniform in [box_min, box_max], grey colours, then as above.
 * Deterministic in seed. With cams (ncams > 0), a uniform candidate is kept with probability the
 * fraction of cameras that see it (in front, projecting inside the image): the points gather
 * where the views overlap, fewer where only some views look, none where no camera looks. After
 * 64 x count candidates the rest are taken uniformly. Of more than SP_INIT_MAX_CAMS cameras, that
 * many evenly spaced ones estimate the fraction (the cost stays bounded for captures of
 * thousands of views). */
#define SP_INIT_MAX_CAMS 256
int sp_init_random(sp_gaussians *g, int count, const float box_min[3], const float box_max[3], int sh_degree,
                   float opacity, float fixed_scale, uint64_t seed, const sp_camera *cams, int ncams);

/* For every point, the mean squared distance to its min(3, n - 1) nearest other points (duplicates
 * count, at distance 0); 0 when n == 1. Points must be finite. Exposed for tests and tools. */
void sp_knn3_mean_dist2(const float *xyz, int n, float *out);

#endif
