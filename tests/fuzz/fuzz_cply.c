/* fuzz_cply.c — PlayCanvas's compressed .ply through the .ply reader: any file reads or fails
 * naming it; what reads is finite and non-empty, and writes back as a standard .ply that reads
 * again to the same Gaussians, bit for bit. */
#include "fuzz_util.h"

#include "io/export.h"
#include "io/ply.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *path = fz_write("in.compressed.ply", data, size);
    sp_gaussians g;
    if (sp_model_read(path, &g) == 0) {
        if (g.n <= 0 || !sp_gaussians_finite(&g)) abort();
        char *out = sp_path_join(fz_dir(), "out.ply");
        sp_gaussians h;
        if (sp_ply_write(out, &g) || sp_ply_read(out, &h) || h.n != g.n || h.K != g.K ||
            memcmp(h.sh, g.sh, sizeof(float) * 3 * (size_t)g.K * (size_t)g.n) ||
            memcmp(h.means, g.means, sizeof(float) * 3 * (size_t)g.n))
            abort();
        sp_gaussians_free(&h);
        sp_gaussians_free(&g);
        free(out);
    } else {
        fz_check_error_names(path);
    }
    free(path);
    return 0;
}
