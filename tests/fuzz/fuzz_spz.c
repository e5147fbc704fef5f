/* fuzz_spz.c — the .spz reader (versions 2 and 3 in gzip, 4 with zstd streams): any file reads
 * or fails naming it, in both axis conventions; what reads is finite and non-empty, and writes
 * back as version 3 and 4 (unless its coordinates are beyond the writer's fixed-point range) and
 * reads again to the same count and SH degree. */
#include "fuzz_util.h"

#include "io/export.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *path = fz_write("in.spz", data, size);
    sp_gaussians g;
    for (int axes = 0; axes < 2; axes++) {
        if (sp_spz_read_opts(path, &g, axes ? SP_SPZ_AXES_RUB : SP_SPZ_AXES_RDF) == 0) {
            if (g.n <= 0 || !sp_gaussians_finite(&g)) abort();
            char *out = sp_path_join(fz_dir(), "out.spz");
            for (int v = 3; v <= 4; v++) {
                sp_spz_options o = {.version = v, .axes = SP_SPZ_AXES_RDF};
                sp_gaussians h;
                if (sp_spz_write_opts(out, &g, &o)) {
                    /* fewer fractional bits than the writer's 12 can hold coordinates beyond its range */
                    if (!strstr(sp_last_error(), "outside the .spz range")) abort();
                    continue;
                }
                if (sp_spz_read(out, &h) || h.n != g.n || h.sh_degree != g.sh_degree) abort();
                sp_gaussians_free(&h);
            }
            sp_gaussians_free(&g);
            free(out);
        } else {
            fz_check_error_names(path);
        }
    }
    free(path);
    return 0;
}
