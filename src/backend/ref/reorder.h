/* reorder.h — backend.h's reorder on host stores: the Gaussians put in Morton order of their means
 * (backend/morton_rule.h), the reference every backend's reorder matches exactly. */
#ifndef SPLAT_REF_REORDER_H
#define SPLAT_REF_REORDER_H

#include <stdint.h>

#include "scene/gaussians.h"

/* The box of n means [n][3] (per axis the least finite value in lo, sp_morton_exponent's e). */
void cpu_morton_box(const float *means, int n, float lo[3], int e[3]);
/* order[i] = the Gaussian that goes to place i: the n Gaussians by Morton code of their means,
 * equal codes in index order. -1 with an out-of-memory error when the scratch is not there. */
int cpu_morton_order(const float *means, int n, int32_t *order);
/* Puts g and the Adam moments m, v (the same n; either may be NULL) in that order. -1 with an
 * out-of-memory error (nothing changed) when the scratch is not there. */
int cpu_reorder(sp_gaussians *g, sp_gaussians *m, sp_gaussians *v);

#endif
