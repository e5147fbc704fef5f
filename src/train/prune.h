/* prune.h — pruning by blend weight (refine.prune_weight): every Gaussian's blending weights
 * (alpha T, as rasterize composites it) summed over the pixels of the training views measure how
 * much of the training images it makes; the given fraction with the smallest sums is removed by
 * the backend's refine (sp_refine_args.drop), Adam moments kept for the rest (docs/math.md,
 * "Pruning by blend weight"). */
#ifndef SPLAT_PRUNE_H
#define SPLAT_PRUNE_H

#include <stdint.h>

#include "backend/backend.h"
#include "scene/camera.h"

typedef struct {
    int n_before, n_after;
    double seconds;
} sp_prune_result;

/* The blend weights of the Gaussians g summed over cameras cams[0..count) into weight[g->n]
 * (overwritten): the host computation with the CPU reference stages, for backends without the
 * blend_weights op. */
int sp_blend_weights_host(const sp_gaussians *g, int antialias, const sp_camera *cams, int count, float *weight);

/* Which Gaussians go: drop[i] = 1 for the `remove` of n with the smallest weight, ties broken by
 * index (the lower index goes first), 0 for the rest; remove is clamped to [0, n]. */
int sp_prune_pick(const float *weight, int n, int remove, uint8_t *drop);

/* Removes floor(fraction x n) of the backend's n Gaussians, those with the smallest blend weight
 * over cams (parameters and Adam moments of the rest unchanged; densification statistics reset,
 * as by any refine). */
int sp_prune_by_weight(sp_backend *b, const sp_camera *cams, int count, double fraction, sp_prune_result *r);

#endif
