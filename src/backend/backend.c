/* backend.c — picks a backend by name: "cpu", "cuda", or "auto" (cuda when available). */
#include "backend/backend.h"

#include <string.h>

#include "core/core.h"

int sp_backend_cuda_available(void) {
#ifdef SPLAT_HAVE_CUDA
    return sp_cuda_device_count() > 0;
#else
    return 0;
#endif
}

sp_backend *sp_backend_create(const char *kind, const sp_backend_config *cfg) {
    if (!strcmp(kind, "auto")) kind = sp_backend_cuda_available() ? "cuda" : "cpu";
    if (!strcmp(kind, "cpu")) return sp_cpu_backend_create(cfg);
    if (!strcmp(kind, "cuda")) {
#ifdef SPLAT_HAVE_CUDA
        if (sp_cuda_device_count() <= 0) {
            sp_error("backend.kind = \"cuda\" but no CUDA GPU is visible");
            return NULL;
        }
        return sp_cuda_backend_create(cfg);
#else
        sp_error("backend.kind = \"cuda\" but this build has no CUDA backend (nvcc was not found at build time)");
        return NULL;
#endif
    }
    sp_error("unknown backend kind \"%s\" (expected auto, cpu or cuda)", kind);
    return NULL;
}
