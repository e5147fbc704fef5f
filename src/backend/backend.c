/* backend.c — the table of backend kinds compiled in, and picking one by name: "cpu", "cuda",
 * "vulkan", or "auto" (the first kind of the table whose device is present and that auto may pick:
 * cuda, then vulkan on a hardware GPU (never software Vulkan, which is slower than the cpu
 * backend), then cpu); a one-line description of the chosen device for `splat check`; and
 * rendering several cameras through a backend's render_many, or render one by one. */
#include "backend/backend.h"

#include <omp.h>
#include <stdio.h>
#include <string.h>

#include "core/core.h"

static int always(void) { return 1; }

int sp_backend_cuda_available(void) {
#ifdef SPLAT_HAVE_CUDA
    return sp_cuda_device_count() > 0;
#else
    return 0;
#endif
}

/* GPU kinds first, in the order auto prefers them; cpu last. A new backend adds its row here (under
 * its build switch) and is then picked by auto, listed by `test_backend_ops --list`, and run through
 * the parity harness and tests/e2e_backends.sh. */
static const sp_backend_kind k_kinds[] = {
#ifdef SPLAT_HAVE_CUDA
    {"cuda", 1, SP_VARIANT_DETERMINISTIC | SP_VARIANT_BACKWARD_SPLAT, 1, sp_backend_cuda_available, NULL,
     sp_cuda_backend_create},
#endif
#ifdef SPLAT_HAVE_VULKAN
    {"vulkan", 1, SP_VARIANT_DETERMINISTIC | SP_VARIANT_CAS_ATOMICS, 1, sp_vulkan_available, sp_vulkan_hardware_available,
     sp_vulkan_backend_create},
#endif
    {"cpu", 0, 0, 1, always, NULL, sp_cpu_backend_create},
};

const sp_backend_kind *sp_backend_kinds(int *count) {
    *count = (int)(sizeof k_kinds / sizeof *k_kinds);
    return k_kinds;
}

const sp_backend_kind *sp_backend_find_kind(const char *name) {
    for (size_t i = 0; i < sizeof k_kinds / sizeof *k_kinds; i++)
        if (!strcmp(k_kinds[i].name, name)) return &k_kinds[i];
    return NULL;
}

const sp_backend_kind *sp_backend_resolve_kind(const char *kind) {
    if (strcmp(kind, "auto")) return sp_backend_find_kind(kind);
    for (size_t i = 0; i < sizeof k_kinds / sizeof *k_kinds; i++)
        if (k_kinds[i].auto_pick ? k_kinds[i].auto_pick() : k_kinds[i].available()) return &k_kinds[i];
    return sp_backend_find_kind("cpu");
}

/* Several devices or processes: the cuda backend replicated over NCCL. */
static int wants_replicas(const sp_backend_config *cfg) { return cfg->num_devices > 1 || cfg->world > 1; }

/* What asks for the replicated backend, in the settings' words (the process settings come from
 * the program: splat_set_dist). */
#define SEVERAL "several devices or processes (backend.devices, or world_size above 1 in the process settings)"

static int replicas_need_cuda(const char *kind, char *out, size_t n) {
    if (!strcmp(kind, "cuda") || !strcmp(kind, "auto")) {
#ifdef SPLAT_HAVE_CUDA
        if (sp_backend_cuda_available()) return 0;
        snprintf(out, n, SEVERAL " need a CUDA GPU; none is visible");
#else
        snprintf(out, n, SEVERAL " need the cuda backend, "
                         "which this build lacks (nvcc was not found at build time)");
#endif
        return -1;
    }
    snprintf(out, n, SEVERAL " need backend.kind = \"cuda\" "
                     "(or auto); the %s backend trains on one device", kind);
    return -1;
}

int sp_backend_render_many(sp_backend *b, const sp_camera *const *cams, int count, int sh_degree, const float bg[3],
                           float *const *rgb) {
    if (b->ops->render_many) return b->ops->render_many(b, cams, count, sh_degree, bg, rgb);
    for (int i = 0; i < count; i++)
        if (b->ops->render(b, cams[i], sh_degree, bg, rgb[i])) return -1;
    return 0;
}

sp_backend *sp_backend_create(const char *kind, const sp_backend_config *cfg) {
    if (wants_replicas(cfg)) {
        char why[256];
        if (replicas_need_cuda(kind, why, sizeof why)) {
            sp_error("%s", why);
            return NULL;
        }
#ifdef SPLAT_HAVE_CUDA
        return sp_replicated_create(cfg);
#endif
    }
    const sp_backend_kind *k = sp_backend_resolve_kind(kind);
    if (!k) {
        if (!strcmp(kind, "cuda"))
            sp_error("backend.kind = \"cuda\" but this build has no CUDA backend (nvcc was not found at build time)");
        else if (!strcmp(kind, "vulkan"))
            sp_error("backend.kind = \"vulkan\" but this build has no Vulkan backend (Vulkan headers or glslc were "
                     "not found at build time; docs/vulkan.md)");
        else
            sp_error("unknown backend kind \"%s\" (expected auto, cpu, cuda or vulkan)", kind);
        return NULL;
    }
    if (!k->available()) {
        sp_error("backend.kind = \"%s\" but no %s device is available", kind, kind);
        return NULL;
    }
    return k->create(cfg);
}

int sp_backend_describe(const char *kind, const sp_backend_config *cfg, char *out, size_t n) {
    const sp_backend_kind *k = NULL;
    if (wants_replicas(cfg)) {
        if (replicas_need_cuda(kind, out, n)) return -1;
#ifdef SPLAT_HAVE_CUDA
        return sp_replicated_describe(cfg, out, n);
#endif
    }
    k = sp_backend_resolve_kind(kind);
    if (!k) {
        snprintf(out, n, "%s: not in this build", kind);
        return -1;
    }
    if (!k->available()) {
        snprintf(out, n, "%s: no usable device", k->name);
        return -1;
    }
#ifdef SPLAT_HAVE_VULKAN
    if (!strcmp(k->name, "vulkan")) {
        if (sp_vulkan_describe(cfg->device, cfg->cas_atomics, out, n) == 0) return 0;
        snprintf(out, n, "vulkan: %s", sp_last_error());
        return -1;
    }
#endif
    if (!strcmp(k->name, "cpu")) snprintf(out, n, "cpu (%d threads)", cfg->threads > 0 ? cfg->threads : omp_get_num_procs());
    else snprintf(out, n, "%s (device %d)", k->name, cfg->device);
    return 0;
}
