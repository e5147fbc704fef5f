/* backend.c — picks a backend by name: "cpu", "cuda", "vulkan", or "auto" (cuda when a CUDA GPU
 * is visible, else vulkan when a hardware Vulkan device is, else cpu), and describes the choice
 * for `splat check`. */
#include "backend/backend.h"

#include <omp.h>
#include <stdio.h>
#include <string.h>

#include "core/core.h"

int sp_backend_cuda_available(void) {
#ifdef SPLAT_HAVE_CUDA
    return sp_cuda_device_count() > 0;
#else
    return 0;
#endif
}

int sp_backend_vulkan_available(void) {
#ifdef SPLAT_HAVE_VULKAN
    return sp_vulkan_hardware_available();
#else
    return 0;
#endif
}

/* What "auto" means on this machine. Software Vulkan (lavapipe) is never picked by auto: the
 * CPU backend is faster there. */
static const char *resolve(const char *kind) {
    if (strcmp(kind, "auto")) return kind;
    if (sp_backend_cuda_available()) return "cuda";
    if (sp_backend_vulkan_available()) return "vulkan";
    return "cpu";
}

sp_backend *sp_backend_create(const char *kind, const sp_backend_config *cfg) {
    kind = resolve(kind);
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
    if (!strcmp(kind, "vulkan")) {
#ifdef SPLAT_HAVE_VULKAN
        return sp_vulkan_backend_create(cfg);
#else
        sp_error("backend.kind = \"vulkan\" but this build has no Vulkan backend (Vulkan headers or glslc were "
                 "not found at build time; see docs/vulkan.md)");
        return NULL;
#endif
    }
    sp_error("unknown backend kind \"%s\" (expected auto, cpu, cuda or vulkan)", kind);
    return NULL;
}

int sp_backend_describe(const char *kind, const sp_backend_config *cfg, char *out, size_t n) {
    kind = resolve(kind);
    if (!strcmp(kind, "cpu")) {
        snprintf(out, n, "cpu (%d threads)", cfg->threads > 0 ? cfg->threads : omp_get_num_procs());
        return 0;
    }
    if (!strcmp(kind, "cuda")) {
#ifdef SPLAT_HAVE_CUDA
        int d = sp_cuda_device_count();
        if (d > 0) {
            snprintf(out, n, "cuda (%d GPU%s visible, device %d)", d, d == 1 ? "" : "s", cfg->device);
            return 0;
        }
#endif
        snprintf(out, n, "cuda: not available in this build or no GPU visible");
        return -1;
    }
    if (!strcmp(kind, "vulkan")) {
#ifdef SPLAT_HAVE_VULKAN
        if (sp_vulkan_describe(cfg->device, cfg->cas_atomics, out, n) == 0) return 0;
        snprintf(out, n, "vulkan: %s", sp_last_error());
        return -1;
#else
        snprintf(out, n, "vulkan: not in this build (no Vulkan headers or glslc at build time)");
        return -1;
#endif
    }
    snprintf(out, n, "unknown backend kind \"%s\"", kind);
    return -1;
}
