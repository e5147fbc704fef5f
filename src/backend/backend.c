/* backend.c — the table of backend kinds compiled in, and picking one by name: "cpu", "cuda",
 * "vulkan", or "auto" (the first kind of the table whose device is present and that auto may pick:
 * cuda, then vulkan on a hardware GPU (never software Vulkan, which is slower than the cpu
 * backend), then cpu); a one-line description of the chosen device for `splat check`; the names of
 * the stages; and rendering several cameras through a backend's render_many, or render one by one.
 *
 * Adding a backend: its folder src/backend/NAME/ (its code, a header with its entry points, and its
 * kind row `const sp_backend_kind sp_kind_NAME`), its line in SP_KINDS and its row in k_kinds below
 * (under its build switch), and its build switch in the Makefile. Nothing else outside its folder. */
#include "backend/backend.h"

#include <stdio.h>
#include <string.h>

#include "core/core.h"

#define SP_STAGE_NAME_(id, name) [SP_STAGE_##id] = name,
static const char *const k_stage_names[SP_STAGE_COUNT] = {SP_STAGES(SP_STAGE_NAME_)};
#undef SP_STAGE_NAME_
_Static_assert(SP_STAGE_COUNT <= SP_MAX_STAGES, "sp_profile has a row for every stage");

const char *sp_stage_name(int stage) { return stage >= 0 && stage < SP_STAGE_COUNT ? k_stage_names[stage] : NULL; }

/* Every kind splat has, whether this build has it or not, in the order backend.kind lists them:
 * X(name, its name in messages, what a build that lacks it did not find). */
#define SP_KINDS(X)                                                                             \
    X(cpu, "CPU", NULL)                                                                         \
    X(cuda, "CUDA", "nvcc was not found at build time")                                         \
    X(vulkan, "Vulkan", "Vulkan headers or glslc were not found at build time; docs/vulkan.md")

/* Each kind's row, defined in its own folder (only those compiled in are referred to). */
#define KIND_ROW_(name, title, absent) extern const sp_backend_kind sp_kind_##name;
SP_KINDS(KIND_ROW_)
#undef KIND_ROW_

/* The kinds compiled in: GPU kinds first, in the order auto prefers them; cpu last. A kind listed
 * here is picked by auto, listed by `test_backend_ops --list`, and run through the parity harness
 * and tests/e2e_backends.sh. */
static const sp_backend_kind *const k_kinds[] = {
#ifdef SPLAT_HAVE_CUDA
    &sp_kind_cuda,
#endif
#ifdef SPLAT_HAVE_VULKAN
    &sp_kind_vulkan,
#endif
    &sp_kind_cpu,
};
#define NUM_KINDS (sizeof k_kinds / sizeof *k_kinds)

#define KIND_CHOICE_(name, title, absent) "|" #name
const char sp_backend_kind_choices[] = "auto" SP_KINDS(KIND_CHOICE_);
#undef KIND_CHOICE_

typedef struct {
    const char *name, *title, *absent;
} known_kind;
#define KIND_KNOWN_(name, title, absent) {#name, title, absent},
static const known_kind k_known[] = {SP_KINDS(KIND_KNOWN_)};
#undef KIND_KNOWN_
#define NUM_KNOWN (sizeof k_known / sizeof *k_known)

static const known_kind *known(const char *name) {
    for (size_t i = 0; i < NUM_KNOWN; i++)
        if (!strcmp(k_known[i].name, name)) return &k_known[i];
    return NULL;
}

const sp_backend_kind *const *sp_backend_kinds(int *count) {
    *count = (int)NUM_KINDS;
    return k_kinds;
}

const sp_backend_kind *sp_backend_find_kind(const char *name) {
    for (size_t i = 0; i < NUM_KINDS; i++)
        if (!strcmp(k_kinds[i]->name, name)) return k_kinds[i];
    return NULL;
}

const sp_backend_kind *sp_backend_resolve_kind(const char *kind) {
    if (strcmp(kind, "auto")) return sp_backend_find_kind(kind);
    for (size_t i = 0; i < NUM_KINDS; i++)
        if (k_kinds[i]->auto_pick ? k_kinds[i]->auto_pick() : k_kinds[i]->available()) return k_kinds[i];
    return sp_backend_find_kind("cpu");
}

/* Several devices or processes: the kind that trains on several (its row has create_several), cuda
 * replicated over NCCL. */
#define SEVERAL_KIND "cuda"
static int wants_replicas(const sp_backend_config *cfg) { return cfg->num_devices > 1 || cfg->world > 1; }

/* What asks for the replicated backend, in the settings' words (the process settings come from
 * the program: splat_set_dist). */
#define SEVERAL "several devices or processes (backend.devices, or world_size above 1 in the process settings)"

/* 0 when `kind` can train on several devices here, else -1 with the reason in out. */
static int replicas_need_several(const char *kind, char *out, size_t n) {
    if (!strcmp(kind, SEVERAL_KIND) || !strcmp(kind, "auto")) {
        const sp_backend_kind *k = sp_backend_find_kind(SEVERAL_KIND);
        const known_kind *kn = known(SEVERAL_KIND);
        if (k && k->available()) return 0;
        if (k) snprintf(out, n, SEVERAL " need a %s GPU; none is visible", kn->title);
        else snprintf(out, n, SEVERAL " need the %s backend, which this build lacks (%s)", kn->name, kn->absent);
        return -1;
    }
    snprintf(out, n, SEVERAL " need backend.kind = \"%s\" (or auto); the %s backend trains on one device", SEVERAL_KIND,
             kind);
    return -1;
}

int sp_backend_render_many(sp_backend *b, const sp_camera *const *cams, int count, int sh_degree, const float bg[3],
                           float *const *rgb) {
    if (b->ops->render_many) return b->ops->render_many(b, cams, count, sh_degree, bg, rgb);
    for (int i = 0; i < count; i++)
        if (b->ops->render(b, cams[i], sh_degree, bg, rgb[i])) return -1;
    return 0;
}

/* The 16-bit moments where they were measured faster at the same quality (cuda: the update moves a
 * third fewer bytes; on the cpu the rounding's hash costs more than the bytes save; vulkan is not
 * yet timed with them). docs/speed.md. */
int sp_backend_moments16_auto(const char *kind_name) { return !strcmp(kind_name, "cuda"); }

static sp_backend_config with_moments16(const sp_backend_config *cfg, const char *kind_name) {
    sp_backend_config c = *cfg;
    if (c.moments16 < 0) c.moments16 = sp_backend_moments16_auto(kind_name);
    return c;
}

sp_backend *sp_backend_create(const char *kind, const sp_backend_config *cfg) {
    if (wants_replicas(cfg)) {
        char why[256];
        if (replicas_need_several(kind, why, sizeof why)) {
            sp_error("%s", why);
            return NULL;
        }
        sp_backend_config c = with_moments16(cfg, SEVERAL_KIND);
        return sp_backend_find_kind(SEVERAL_KIND)->create_several(&c);
    }
    const sp_backend_kind *k = sp_backend_resolve_kind(kind);
    if (!k) {
        const known_kind *kn = known(kind);
        if (kn)
            sp_error("backend.kind = \"%s\" but this build has no %s backend (%s)", kind, kn->title, kn->absent);
        else {
            char expected[128] = "auto"; /* "auto, cpu, cuda or vulkan" */
            for (size_t i = 0; i < NUM_KNOWN; i++) {
                size_t len = strlen(expected);
                snprintf(expected + len, sizeof expected - len, "%s%s", i + 1 < NUM_KNOWN ? ", " : " or ",
                         k_known[i].name);
            }
            sp_error("unknown backend kind \"%s\" (expected %s)", kind, expected);
        }
        return NULL;
    }
    if (!k->available()) {
        sp_error("backend.kind = \"%s\" but no %s device is available", kind, kind);
        return NULL;
    }
    sp_backend_config c = with_moments16(cfg, k->name);
    return k->create(&c);
}

int sp_backend_describe(const char *kind, const sp_backend_config *cfg, char *out, size_t n) {
    if (wants_replicas(cfg)) {
        if (replicas_need_several(kind, out, n)) return -1;
        return sp_backend_find_kind(SEVERAL_KIND)->describe_several(cfg, out, n);
    }
    const sp_backend_kind *k = sp_backend_resolve_kind(kind);
    if (!k) {
        snprintf(out, n, "%s: not in this build", kind);
        return -1;
    }
    if (!k->available()) {
        snprintf(out, n, "%s: no usable device", k->name);
        return -1;
    }
    return k->describe(cfg, out, n);
}
