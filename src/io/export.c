/* export.c — model formats by name and extension (a name ending in meta.json is an unbundled
 * .sog), the format-dispatching read/write used by
 * `splat export` and every --ply option, and snapshots in the original 3DGS run layout. */
#include "io/export.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/core.h"
#include "io/model_check.h"
#include "io/ply.h"

sp_model_format sp_model_format_from_name(const char *name) {
    if (!name) return SP_MODEL_UNKNOWN;
    if (!strcasecmp(name, "ply")) return SP_MODEL_PLY;
    if (!strcasecmp(name, "splat")) return SP_MODEL_SPLAT;
    if (!strcasecmp(name, "spz")) return SP_MODEL_SPZ;
    if (!strcasecmp(name, "glb")) return SP_MODEL_GLB;
    if (!strcasecmp(name, "sog")) return SP_MODEL_SOG;
    return SP_MODEL_UNKNOWN;
}

sp_model_format sp_model_format_from_path(const char *path) {
    size_t len = strlen(path);
    if (len >= 9 && !strcasecmp(path + len - 9, "meta.json")) return SP_MODEL_SOG; /* unbundled .sog */
    const char *slash = strrchr(path, '/');
    const char *dot = strrchr(slash ? slash + 1 : path, '.');
    return dot ? sp_model_format_from_name(dot + 1) : SP_MODEL_UNKNOWN;
}

const char *sp_model_format_name(sp_model_format f) {
    switch (f) {
    case SP_MODEL_PLY: return "ply";
    case SP_MODEL_SPLAT: return "splat";
    case SP_MODEL_SPZ: return "spz";
    case SP_MODEL_GLB: return "glb";
    case SP_MODEL_SOG: return "sog";
    default: return "unknown";
    }
}

int sp_model_spec_parse(const char *spec, sp_model_spec *out) {
    memset(out, 0, sizeof *out);
    out->spz = sp_spz_defaults();
    char *s = sp_strdup(spec ? spec : ""), *save = NULL;
    char *name = strtok_r(s, ":", &save);
    out->format = sp_model_format_from_name(name);
    int rc = 0;
    if (out->format == SP_MODEL_UNKNOWN) rc = sp_error("unknown model format '%s' (use ply, splat, spz, glb or sog)", spec ? spec : "");
    for (char *opt; rc == 0 && (opt = strtok_r(NULL, ":", &save));) {
        if (out->format != SP_MODEL_SPZ) rc = sp_error("format '%s': only spz takes options (got '%s')", spec, opt);
        else if (!strcasecmp(opt, "v3") || !strcmp(opt, "3")) out->spz.version = 3;
        else if (!strcasecmp(opt, "v4") || !strcmp(opt, "4")) out->spz.version = 4;
        else if (!strcasecmp(opt, "rdf")) out->spz.axes = SP_SPZ_AXES_RDF;
        else if (!strcasecmp(opt, "rub")) out->spz.axes = SP_SPZ_AXES_RUB;
        else rc = sp_error("format '%s': unknown spz option '%s' (v3, v4, rdf or rub)", spec, opt);
    }
    free(s);
    return rc;
}

int sp_model_write_spec(const char *path, const sp_model_spec *spec, const sp_gaussians *g) {
    if (spec->format == SP_MODEL_SPZ) return sp_spz_write_opts(path, g, &spec->spz);
    return sp_model_write(path, spec->format, g);
}

int sp_model_read_spec(const char *path, const sp_model_spec *spec, sp_gaussians *g) {
    if (sp_model_format_from_path(path) == SP_MODEL_SPZ) return sp_spz_read_opts(path, g, spec->spz.axes);
    return sp_model_read(path, g);
}

int sp_model_write(const char *path, sp_model_format f, const sp_gaussians *g) {
    switch (f) {
    case SP_MODEL_PLY: return sp_ply_write(path, g);
    case SP_MODEL_SPLAT: return sp_splat_write(path, g);
    case SP_MODEL_SPZ: return sp_spz_write(path, g);
    case SP_MODEL_GLB: return sp_glb_write(path, g);
    case SP_MODEL_SOG:
        if (strlen(path) >= 9 && !strcasecmp(path + strlen(path) - 9, "meta.json"))
            return sp_error("%s: .sog is written as one archive (NAME.sog); the unbundled meta.json form is read, not "
                            "written", path);
        return sp_sog_write(path, g);
    default: return sp_error("%s: unknown model format (use ply, splat, spz, glb or sog)", path);
    }
}

int sp_model_read(const char *path, sp_gaussians *g) {
    switch (sp_model_format_from_path(path)) {
    case SP_MODEL_SPLAT: return sp_splat_read(path, g);
    case SP_MODEL_SPZ: return sp_spz_read(path, g);
    case SP_MODEL_SOG: return sp_sog_read(path, g);
    case SP_MODEL_GLB: return sp_error("%s: .glb is written, not read (convert it to .ply with another tool)", path);
    default: return sp_ply_read(path, g);
    }
}

int sp_snapshot_write(const char *run_dir, int step, const sp_gaussians *g) {
    char *dir = sp_strfmt("%s/point_cloud/iteration_%d", run_dir, step);
    int rc = sp_mkdir_p(dir);
    if (rc == 0) {
        char *p = sp_path_join(dir, "point_cloud.ply");
        rc = sp_ply_write(p, g);
        free(p);
    }
    free(dir);
    return rc;
}
