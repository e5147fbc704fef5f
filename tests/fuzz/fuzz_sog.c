/* fuzz_sog.c — the .sog reader, both forms: the input as a .sog archive, and as the meta.json of
 * an unbundled SOG beside valid images (made once from a small model), so the JSON is fuzzed
 * with images that decode. Any input reads or fails naming the file; what reads is finite and
 * non-empty, and writes back as .sog that reads again to the same count and SH degree. Memory
 * is capped (the fallible allocator's limit), so a count or image size the input claims cannot
 * take the machine. */
#include "fuzz_util.h"

#include "io/export.h"
#include "io/zip.h"

/* u/: the images of a 20-Gaussian, SH degree 1 model, without its meta.json. */
static void make_images(void) {
    sp_gaussians g;
    sp_gaussians_init(&g, 20, 1);
    g.n = 20;
    for (int i = 0; i < 20; i++) {
        for (int k = 0; k < 3; k++) g.means[3 * i + k] = 0.25f * (float)((i * (k + 3)) % 9) - 1, g.log_scales[3 * i + k] = -3;
        g.quats[4 * i] = 1;
        g.opacity_logits[i] = (float)(i % 5) - 2;
        for (int k = 0; k < 12; k++) g.sh[12 * i + k] = 0.125f * (float)((i + k) % 7) - 0.375f;
    }
    char *p = sp_path_join(fz_dir(), "seed.sog");
    if (sp_sog_write(p, &g)) abort();
    char *data;
    size_t n;
    if (sp_read_file(p, &data, &n)) abort();
    sp_zip z;
    if (sp_zip_open(&z, p, data, n)) abort();
    for (int i = 0; i < z.n; i++) {
        uint8_t *e;
        size_t en;
        if (sp_zip_extract(&z, &z.entries[i], &e, &en)) abort();
        char *rel = sp_strfmt("u/%s", strcmp(z.entries[i].name, "meta.json") ? z.entries[i].name : "seed_meta.json");
        free(fz_write(rel, e, en));
        free(rel), free(e);
    }
    sp_zip_close(&z);
    free(data), free(p);
    sp_gaussians_free(&g);
}

static void check(const char *path) {
    sp_gaussians g;
    if (sp_sog_read(path, &g) != 0) {
        fz_check_error_names(path);
        return;
    }
    if (g.n <= 0 || !sp_gaussians_finite(&g)) abort();
    char *out = sp_path_join(fz_dir(), "out.sog");
    sp_gaussians h;
    if (sp_sog_write(out, &g) || sp_sog_read(out, &h) || h.n != g.n || h.sh_degree != g.sh_degree) abort();
    sp_gaussians_free(&h);
    sp_gaussians_free(&g);
    free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static int ready;
    if (!ready) {
        make_images();
        ready = 1;
    }
    sp_set_alloc_limit(256u << 20);
    char *zip = fz_write("in.sog", data, size), *meta = fz_write("u/meta.json", data, size);
    check(zip);
    check(meta);
    sp_set_alloc_limit(0);
    free(zip), free(meta);
    return 0;
}
