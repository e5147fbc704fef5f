/* cuda_test_api.h — single GPU stages over HOST arrays, for the parity tests (tests/gpu/).
 * Each function uploads its inputs (layouts of backend/cpu/stages.h), runs one stage of the CUDA
 * backend on the default device, copies the results back and frees everything. Returns 0, or -1
 * with sp_error set. Only available when built with CUDA (SPLAT_HAVE_CUDA). */
#ifndef SPLAT_CUDA_TEST_API_H
#define SPLAT_CUDA_TEST_API_H

#if defined(SPLAT_HAVE_CUDA) || defined(__CUDACC__)
#include <stdint.h>

#include "backend/backend.h"
#include "backend/cpu/stages.h"

#ifdef __cplusplus
extern "C" {
#endif

/* project: out allocated by the caller (sp_proj_alloc); entries of non-visible Gaussians have
 * rect 0 and radius 0, their other fields are 0. */
int cuda_test_project(const sp_params *p, const sp_camera *cam, int sh_degree, sp_proj *out);
/* project and project_back with the kernels' per-Gaussian code run on the HOST (no GPU needed). */
int cuda_test_project_on_host(const sp_params *p, const sp_camera *cam, int sh_degree, sp_proj *out);
int cuda_test_project_back_on_host(const sp_params *p, const sp_camera *cam, int sh_degree, const sp_proj *proj,
                                   const sp_proj_grad *g, sp_params_grad *out);
/* emit_pairs + sort + tile_ranges from a projection (only rect and depth are read). Fills bins
 * (ids and range malloc'd; free with sp_bins_free or free()). */
int cuda_test_bin(const sp_proj *proj, int n, const sp_camera *cam, sp_bins *bins);
/* rasterize with the given lists. */
int cuda_test_rasterize(const sp_proj *proj, int n, const sp_bins *bins, const sp_camera *cam, const float bg[3],
                        sp_raster_out *out);
/* backward_raster; g is overwritten. deterministic: fixed-order reduction. splat: the per-splat
 * variant, which runs the GPU forward pass first (its bucket state) and uses that pass's output
 * in place of fwd (compare against the CPU backward of cuda_test_rasterize's output). */
int cuda_test_backward(const sp_proj *proj, int n, const sp_bins *bins, const sp_camera *cam, const float bg[3],
                       const sp_raster_out *fwd, const float *dl_drgb, int deterministic, int splat,
                       sp_proj_grad *g);
/* project_back; out (n, K as p) is overwritten. */
int cuda_test_project_back(const sp_params *p, const sp_camera *cam, int sh_degree, const sp_proj *proj,
                           const sp_proj_grad *g, sp_params_grad *out);
/* loss: value and (when dl_drgb != NULL) gradient. */
int cuda_test_loss(const float *rgb, const float *target, int w, int h, float ssim_weight, double *loss,
                   float *dl_drgb);
/* adam over a flat array, in place. */
int cuda_test_adam(float *param, const float *grad, float *m, float *v, int64_t count, float lr, float beta1,
                   float beta2, float eps, int step);

/* refine over host stores (as cpu_refine): g, m, v are replaced by the refined stores (resized);
 * statistics given per Gaussian (grad_count as integers, like the CPU reference). */
int cuda_test_refine(sp_gaussians *g, sp_gaussians *m, sp_gaussians *v, const float *grad_accum,
                     const int32_t *grad_count, const float *max_radius, const sp_refine_args *a,
                     sp_refine_result *r);

#ifdef __cplusplus
}
#endif
#endif
#endif
