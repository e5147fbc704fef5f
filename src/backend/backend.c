/* backend.c — the table of backend kinds compiled in, and picking one by name: "cpu", "cuda", or
 * "auto" (the first kind of the table whose device is present; cpu always is). */
#include "backend/backend.h"

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
    {"cuda", 1, SP_VARIANT_DETERMINISTIC | SP_VARIANT_BACKWARD_SPLAT, sp_backend_cuda_available, NULL,
     sp_cuda_backend_create},
#endif
    {"cpu", 0, 0, always, NULL, sp_cpu_backend_create},
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

sp_backend *sp_backend_create(const char *kind, const sp_backend_config *cfg) {
    if (!strcmp(kind, "auto")) {
        for (size_t i = 0; i < sizeof k_kinds / sizeof *k_kinds; i++)
            if (k_kinds[i].auto_pick ? k_kinds[i].auto_pick() : k_kinds[i].available())
                return k_kinds[i].create(cfg);
        kind = "cpu";
    }
    const sp_backend_kind *k = sp_backend_find_kind(kind);
    if (!k) {
        if (!strcmp(kind, "cuda"))
            sp_error("backend.kind = \"cuda\" but this build has no CUDA backend (nvcc was not found at build time)");
        else
            sp_error("unknown backend kind \"%s\" (expected auto, cpu or cuda)", kind);
        return NULL;
    }
    if (!k->available()) {
        sp_error("backend.kind = \"%s\" but no %s device is available", kind, kind);
        return NULL;
    }
    return k->create(cfg);
}
