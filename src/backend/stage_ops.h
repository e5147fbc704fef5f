/* stage_ops.h — every training stage of a backend, run once over HOST arrays.
 *
 * This is what the one parity harness (tests/test_backend_ops.c) drives for every backend that is
 * compiled in and has a device: each stage on random inputs, compared with the CPU reference
 * (backend/ref/stages.h, whose array layouts these functions share). A backend fills this table
 * and the harness tests it with no test code of its own (ggml's test-backend-ops is the model).
 *
 * Each function uploads its inputs into the backend's own buffers, runs the stage exactly as a
 * training step runs it (same kernels or shaders, honouring b->cfg: deterministic, backward
 * variant, forced compare-and-swap atomics), reads the results back and returns 0, or -1 with
 * sp_error set. Functions a backend does not have are NULL (the harness reports them as missing,
 * which fails the run for a GPU backend). */
#ifndef SPLAT_STAGE_OPS_H
#define SPLAT_STAGE_OPS_H

#include <stdint.h>

#include "backend/backend.h"
#include "backend/ref/stages.h"

typedef struct sp_stage_ops {
    /* project: out allocated by the caller (sp_proj_alloc(out, p->n)); every field of a Gaussian
     * that is not visible is 0 and its rect empty. */
    int (*project)(sp_backend *b, const sp_params *p, const sp_camera *cam, int sh_degree, sp_proj *out);
    /* emit_pairs + sort + tile_ranges from a projection (only rect, depth, mean2d, conic and
     * opacity are read: tile culling). Fills bins as cpu_bin does: zeroed before the first call,
     * grown (realloc) on later ones; ids and range are heap memory, freed with sp_bins_free. */
    int (*bin)(sp_backend *b, const sp_proj *proj, int n, const sp_camera *cam, sp_bins *bins);
    /* rasterize with the given lists; out allocated by the caller. */
    int (*rasterize)(sp_backend *b, const sp_proj *proj, int n, const sp_bins *bins, const sp_camera *cam,
                     const float bg[3], sp_raster_out *out);
    /* backward_raster; g (allocated for n) is overwritten. fwd is the CPU forward output for the same
     * lists; a backend whose backward needs state of its own forward pass may recompute it. */
    int (*backward_raster)(sp_backend *b, const sp_proj *proj, int n, const sp_bins *bins, const sp_camera *cam,
                           const float bg[3], const sp_raster_out *fwd, const float *dl_drgb, sp_proj_grad *g);
    /* project_back; out (n, K as p) is overwritten. */
    int (*project_back)(sp_backend *b, const sp_params *p, const sp_camera *cam, int sh_degree, const sp_proj *proj,
                        const sp_proj_grad *g, sp_params_grad *out);
    /* loss: value and (when dl_drgb != NULL) gradient w.r.t. rgb. */
    int (*loss)(sp_backend *b, const float *rgb, const float *target, int w, int h, float ssim_weight, double *loss,
                float *dl_drgb);
    /* adam over a flat array, in place (param, m, v); sparse as cpu_adam's with no Gaussian in view. */
    int (*adam)(sp_backend *b, float *param, const float *grad, float *m, float *v, int64_t count, float lr,
                float beta1, float beta2, float eps, int step, int sparse);
    /* refine over host stores (as cpu_refine): g, m, v are replaced by the refined stores (resized);
     * statistics per Gaussian (grad_count as integers, like the CPU reference). */
    int (*refine)(sp_backend *b, sp_gaussians *g, sp_gaussians *m, sp_gaussians *v, const float *grad_accum,
                  const int32_t *grad_count, const float *max_radius, const sp_refine_args *a, sp_refine_result *r);
    /* MCMC (refine.strategy = "mcmc"; NULL where the backend has no MCMC, whose ops->mcmc_apply is
     * NULL too): mcmc_step adds the regularizer gradients of g to grad, then moves g's means by the
     * position noise, with the kernels a training step runs; mcmc_apply applies a plan to host
     * stores (resized to p->n_after), as the backend's mcmc_apply does. */
    int (*mcmc_step)(sp_backend *b, sp_gaussians *g, sp_gaussians *grad, float opacity_reg, float scale_reg,
                     float noise_scale, uint64_t seed);
    int (*mcmc_apply)(sp_backend *b, sp_gaussians *g, sp_gaussians *m, sp_gaussians *v, const sp_mcmc_plan *p);
    /* The pair sort of bin on its own (NULL where a backend has no sort of its own: the harness then
     * skips its checks): n pairs (key, val), key = key_hi << 32 | key_lo with every key_hi below
     * 2^hi_bits (0..32; a training step passes the bits of its tile count), sorted by key, stably,
     * with the kernels a training step runs. On return key_hi and val hold the sorted high words
     * and values (the sorted low words are not read back: the tile lists need only the tiles). */
    int (*sort)(sp_backend *b, int64_t n, int hi_bits, uint32_t *key_hi, const uint32_t *key_lo, uint32_t *val);
} sp_stage_ops;

#endif
