/* gaussians.h — the Gaussian parameter store on the host, structure of arrays, float32.
 *   means[N][3], log_scales[N][3], quats[N][4] (w, x, y, z; normalized where used),
 *   opacity_logits[N], sh[N][K][3] with K = (sh_degree + 1)^2, DC first.
 * The same layout holds Adam moments (one store per moment) and gradients. */
#ifndef SPLAT_GAUSSIANS_H
#define SPLAT_GAUSSIANS_H

#include <stddef.h>

typedef struct {
    int n, cap;
    int sh_degree; /* max degree stored; K = (sh_degree + 1)^2 */
    int K;
    float *means, *log_scales, *quats, *opacity_logits, *sh;
} sp_gaussians;

#define SP_SH_C0 0.28209479177387814f /* Y_0^0; DC colour c maps to sh = (c - 0.5) / SP_SH_C0 */

static inline int sp_sh_coeffs(int degree) { return (degree + 1) * (degree + 1); }
/* Floats per Gaussian over all parameter arrays. */
static inline int sp_gaussian_floats(int K) { return 3 + 3 + 4 + 1 + 3 * K; }

/* Allocates capacity cap (>= n), n = 0, zeroed. */
void sp_gaussians_init(sp_gaussians *g, int cap, int sh_degree);
void sp_gaussians_reserve(sp_gaussians *g, int cap);
/* The same, fallible (core.h): -1 with "out of memory: SIZE for the Gaussian parameters
 * (N Gaussians, SH degree D); lower refine.capacity ..." when the memory is not there. The
 * store stays valid (and unchanged in capacity) on failure. For every store whose size comes
 * from the scene; the plain versions call the process's out-of-memory handler instead. */
int sp_gaussians_try_init(sp_gaussians *g, int cap, int sh_degree);
int sp_gaussians_try_reserve(sp_gaussians *g, int cap);
void sp_gaussians_free(sp_gaussians *g);
/* Copies Gaussian src_i of s into slot dst_i of d (same sh_degree). */
void sp_gaussians_copy_one(sp_gaussians *d, int dst_i, const sp_gaussians *s, int src_i);
void sp_gaussians_zero(sp_gaussians *g); /* all parameters of the n Gaussians to 0 */
/* Deep copy (cap = src->n). */
void sp_gaussians_clone(sp_gaussians *d, const sp_gaussians *s);
/* 1 if every parameter is finite. */
int sp_gaussians_finite(const sp_gaussians *g);

#endif
