/* cuda_backend.h — the CUDA backend's entry points: its kind row (backend.h, sp_backend_kind),
 * which src/backend/backend.c lists when the build has CUDA (SPLAT_HAVE_CUDA), and the functions
 * behind it that the backend's own files (replicated.cu) and its GPU tests call. C and CUDA
 * alike include it. */
#ifndef SPLAT_CUDA_BACKEND_H
#define SPLAT_CUDA_BACKEND_H

#ifdef __cplusplus
extern "C" {
#endif

#include "backend/backend.h"

extern const sp_backend_kind sp_kind_cuda;

/* One backend on device cfg->device; NULL with an error when there is none or no such device. */
sp_backend *sp_cuda_backend_create(const sp_backend_config *cfg);
/* CUDA devices visible (0 when the driver or runtime has none). */
int sp_cuda_device_count(void);
/* replicated.cu: one cuda backend per device of cfg->devices (and per process of cfg->world),
 * gradients and densification statistics summed over NCCL (loaded at run time); the kind row's
 * create_several. */
sp_backend *sp_replicated_create(const sp_backend_config *cfg);
/* One line for `splat check`; -1 with the reason (no NCCL, too few devices) in out. The kind row's
 * describe_several. */
int sp_replicated_describe(const sp_backend_config *cfg, char *out, size_t n);

#ifdef __cplusplus
}
#endif

#endif
