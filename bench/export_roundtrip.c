/* export_roundtrip.c — how much an exported model loses: renders the test views (val when there are
 * none) of a dataset with the original model and with each re-imported export, and prints per model
 * the mean PSNR of its renders against the original's renders and against the ground truth (8-bit
 * renders, white background). Used by bench/export_lego.sh.
 *
 *   make CUDA=0 lib && cc -O3 -fopenmp -D_GNU_SOURCE -Isrc -o build/export_roundtrip \
 *       bench/export_roundtrip.c build/libsplat.a -lpng -ljpeg -lcjson -lz -lm
 *   build/export_roundtrip DATA_DIR ORIGINAL.ply MODEL.{ply,splat,spz} ... */
#include <stdio.h>
#include <stdlib.h>

#include "backend/backend.h"
#include "core/core.h"
#include "eval/metrics.h"
#include "io/export.h"
#include "io/image.h"
#include "io/loader.h"

/* 8-bit renders of every view of the split, concatenated. */
static uint8_t *render_all(const char *model, const sp_split *s, int *deg_out) {
    sp_gaussians g;
    if (sp_model_read(model, &g)) return NULL;
    sp_backend_config bc = {.threads = 0};
    sp_backend *b = sp_backend_create("cpu", &bc);
    if (!b || b->ops->set_gaussians(b, &g, NULL, NULL)) return NULL;
    const sp_camera *c0 = &s->views[0].cam;
    size_t px = (size_t)c0->width * c0->height;
    uint8_t *out = sp_malloc(px * 3 * s->n);
    float *rgb = sp_malloc(px * 3 * sizeof(float)), bg[3] = {1, 1, 1};
    for (int i = 0; i < s->n; i++) {
        if (b->ops->render(b, &s->views[i].cam, g.sh_degree, bg, rgb)) return NULL;
        sp_image_quantize(rgb, c0->width, c0->height, out + px * 3 * i);
    }
    *deg_out = g.sh_degree;
    free(rgb);
    b->ops->destroy(b);
    sp_gaussians_free(&g);
    return out;
}

static double mean_psnr(const uint8_t *a, const uint8_t *b, const sp_split *s) {
    const sp_camera *c0 = &s->views[0].cam;
    size_t px = (size_t)c0->width * c0->height;
    double sum = 0;
    for (int i = 0; i < s->n; i++) sum += sp_psnr_u8(a + px * 3 * i, b + px * 3 * i, c0->width, c0->height);
    return sum / s->n;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s DATA_DIR ORIGINAL.ply MODEL...\n", argv[0]);
        return 2;
    }
    sp_dataset d;
    sp_problems probs = {0};
    sp_load_opts lo = {.downscale = 1, .load_pixels = 1};
    if (sp_dataset_load(argv[1], "auto", &lo, &d, &probs)) {
        for (int i = 0; i < probs.n; i++) fprintf(stderr, "error: %s\n", probs.items[i]);
        return 1;
    }
    sp_split *s = d.test.n ? &d.test : &d.val;
    const sp_camera *c0 = &s->views[0].cam;
    size_t px = (size_t)c0->width * c0->height;
    uint8_t *gt = sp_malloc(px * 3 * s->n);
    float *t = sp_malloc(px * 3 * sizeof(float)), bg[3] = {1, 1, 1};
    for (int i = 0; i < s->n; i++) {
        sp_view_composite(&s->views[i], SP_ALPHA_STRAIGHT, bg, t);
        sp_image_quantize(t, c0->width, c0->height, gt + px * 3 * i);
    }
    int deg;
    uint8_t *orig = render_all(argv[2], s, &deg);
    if (!orig) {
        fprintf(stderr, "error: %s\n", sp_last_error());
        return 1;
    }
    printf("%d %s views; original %s: %.2f dB against ground truth\n", s->n, s == &d.test ? "test" : "val", argv[2],
           mean_psnr(orig, gt, s));
    printf("%-40s %-4s %-22s %s\n", "model", "SH", "PSNR vs original (dB)", "PSNR vs ground truth (dB)");
    for (int m = 3; m < argc; m++) {
        uint8_t *r = render_all(argv[m], s, &deg);
        if (!r) {
            fprintf(stderr, "error: %s\n", sp_last_error());
            return 1;
        }
        printf("%-40s %-4d %-22.2f %.2f\n", argv[m], deg, mean_psnr(r, orig, s), mean_psnr(r, gt, s));
        free(r);
    }
    return 0;
}
