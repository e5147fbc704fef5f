/* fuzz_splat.c — the .splat reader: any file reads or fails naming it; what reads passes the
 * shared model rules (finite, no zero quaternion) and writes back and reads again to the same
 * count. */
#include "fuzz_util.h"

#include "io/export.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *path = fz_write("in.splat", data, size);
    sp_gaussians g;
    if (sp_splat_read(path, &g) == 0) {
        if (g.n <= 0 || !sp_gaussians_finite(&g)) abort();
        char *out = sp_path_join(fz_dir(), "out.splat");
        sp_gaussians h;
        if (sp_splat_write(out, &g) || sp_splat_read(out, &h) || h.n != g.n) abort();
        sp_gaussians_free(&h);
        sp_gaussians_free(&g);
        free(out);
    } else {
        fz_check_error_names(path);
    }
    free(path);
    return 0;
}
