/* fuzz_ply.c — the 3DGS .ply reader: any file reads or fails naming it; what reads writes back
 * and reads again to the same Gaussians, bit for bit. */
#include "fuzz_util.h"

#include "io/ply.h"

static int same(const float *a, const float *b, size_t n) { return n == 0 || !memcmp(a, b, n * sizeof(float)); }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *path = fz_write("in.ply", data, size);
    sp_gaussians g;
    if (sp_ply_read(path, &g) == 0) {
        char *out = sp_path_join(fz_dir(), "out.ply");
        sp_gaussians h;
        if (sp_ply_write(out, &g) || sp_ply_read(out, &h)) abort();
        size_t n = (size_t)g.n;
        if (h.n != g.n || h.K != g.K || !same(g.means, h.means, 3 * n) || !same(g.quats, h.quats, 4 * n) ||
            !same(g.log_scales, h.log_scales, 3 * n) || !same(g.opacity_logits, h.opacity_logits, n) ||
            !same(g.sh, h.sh, 3 * n * (size_t)g.K))
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
