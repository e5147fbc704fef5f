/* cuda_test_api.h — what the parity harness (tests/test_backend_ops.c) needs of the CUDA backend
 * beyond its stage table (backend/stage_ops.h, on the ops like every backend's): the project and
 * project_back kernels' per-Gaussian code run on the HOST, as a partial stage table, so their
 * arithmetic is checked against the CPU reference on a machine without a GPU. Only available when
 * built with CUDA (SPLAT_HAVE_CUDA). */
#ifndef SPLAT_CUDA_TEST_API_H
#define SPLAT_CUDA_TEST_API_H

#if defined(SPLAT_HAVE_CUDA) || defined(__CUDACC__)
#ifdef __cplusplus
extern "C" {
#endif

struct sp_stage_ops;
/* project and project_back set (they ignore their backend argument: pass NULL); the rest NULL.
 * antialias: the opacity-compensated filter on (sp_backend_config.antialias). */
const struct sp_stage_ops *cuda_host_math_stages(int antialias);

#ifdef __cplusplus
}
#endif
#endif
#endif
