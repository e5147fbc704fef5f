/* eval.c — evaluation of a split: render, quantize, score, optionally save renders. */
#include "eval/eval.h"

#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "eval/metrics.h"
#include "io/image.h"

/* "./test/r_12" -> "r_12" */
static const char *base_name(const char *name) {
    const char *s = strrchr(name, '/');
    return s ? s + 1 : name;
}

int sp_eval_views(sp_backend *b, const sp_split *split, sp_alpha_mode alpha, int sh_degree, const float bg[3],
                  const char *renders_dir, sp_eval_result *out) {
    memset(out, 0, sizeof *out);
    double t0 = sp_now();
    out->n = split->n;
    out->names = SP_NEW(char *, split->n);
    out->psnr = SP_NEW(double, split->n);
    out->ssim = SP_NEW(double, split->n);
    if (renders_dir && sp_mkdir_p(renders_dir)) return -1;
    for (int i = 0; i < split->n; i++) {
        const sp_view *v = &split->views[i];
        int w = v->cam.width, h = v->cam.height;
        size_t px = (size_t)w * h;
        float *pred = sp_malloc(px * 3 * sizeof(float)), *gt = sp_malloc(px * 3 * sizeof(float));
        uint8_t *p8 = sp_malloc(px * 3), *g8 = sp_malloc(px * 3);
        int rc = b->ops->render(b, &v->cam, sh_degree, bg, pred);
        if (rc == 0) {
            sp_view_composite(v, alpha, bg, gt);
            sp_image_quantize(pred, w, h, p8);
            sp_image_quantize(gt, w, h, g8);
            out->names[i] = sp_strdup(v->name);
            out->psnr[i] = sp_psnr_u8(p8, g8, w, h);
            out->ssim[i] = sp_ssim_u8(p8, g8, w, h);
            if (renders_dir) {
                sp_image side = {2 * w, h, 3, sp_malloc(px * 6)};
                for (int y = 0; y < h; y++) {
                    memcpy(side.pixels + (size_t)y * 6 * w, p8 + (size_t)y * 3 * w, (size_t)3 * w);
                    memcpy(side.pixels + (size_t)y * 6 * w + 3 * w, g8 + (size_t)y * 3 * w, (size_t)3 * w);
                }
                char *file = sp_strfmt("%s/%03d_%s.png", renders_dir, i, base_name(v->name));
                rc = sp_image_save_png(file, &side);
                free(file);
                free(side.pixels);
            }
        }
        free(pred);
        free(gt);
        free(p8);
        free(g8);
        if (rc) return -1;
        out->mean_psnr += out->psnr[i] / split->n;
        out->mean_ssim += out->ssim[i] / split->n;
    }
    out->seconds = sp_now() - t0;
    return 0;
}

void sp_eval_result_free(sp_eval_result *r) {
    for (int i = 0; i < r->n; i++) free(r->names ? r->names[i] : NULL);
    free(r->names);
    free(r->psnr);
    free(r->ssim);
    memset(r, 0, sizeof *r);
}
