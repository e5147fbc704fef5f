/* eval.c — evaluation of a split: render on the backend (a batch of views at a time, spread over
 * the devices where the backend has several), then quantize, score and save renders on the host
 * in parallel. */
#include "eval/eval.h"

#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "eval/metrics.h"
#include "eval/plot.h"
#include "io/image.h"
#include "io/viewload.h"

#define EVAL_BATCH 32

/* "./test/r_12" -> "r_12", "0009.jpg" -> "0009" (malloc'd) */
static char *base_name(const char *name) {
    const char *s = strrchr(name, '/');
    char *b = sp_strdup(s ? s + 1 : name);
    char *dot = strrchr(b, '.');
    if (dot && dot != b) *dot = 0;
    return b;
}

/* Labels the halves of a [prediction | ground truth] picture (after scoring; skipped on views too
 * small for the text). */
static void label_halves(uint8_t *rgb, int w, int h) {
    static const uint8_t ink[3] = {0, 0, 0}, box[3] = {255, 255, 255};
    int scale = w >= 600 ? 2 : 1;
    if (w < sp_plot_text_width("ground truth", scale) + 8 || h < 16) return;
    sp_plot_label(rgb, 2 * w, h, 3 * scale, 3 * scale, scale, "prediction", ink, box);
    sp_plot_label(rgb, 2 * w, h, w + 3 * scale, 3 * scale, scale, "ground truth", ink, box);
}

/* Scores one rendered view and writes [prediction | ground truth] when renders_dir is set. */
static int score_view(const sp_view *v, int index, const float *pred, sp_alpha_mode alpha, const float bg[3],
                      const char *renders_dir, double *psnr, double *ssim) {
    int w = v->cam.width, h = v->cam.height;
    size_t px = (size_t)w * h;
    const char *what = "an evaluation image", *hint = "raise data.downscale";
    float *gt = sp_try_alloc(px * 3, sizeof(float), what, hint);
    uint8_t *p8 = sp_try_alloc(px, 3, what, hint), *g8 = sp_try_alloc(px, 3, what, hint);
    if (!gt || !p8 || !g8) {
        free(gt);
        free(p8);
        free(g8);
        return -1;
    }
    if (v->pixels) {
        sp_view_composite(v, alpha, bg, gt);
    } else { /* streamed (data.cache_mb): decoded for this score only */
        sp_view dv = *v;
        if (sp_view_load_pixels(v, &dv.pixels)) {
            free(gt), free(p8), free(g8);
            return -1;
        }
        sp_view_composite(&dv, alpha, bg, gt);
        free(dv.pixels);
    }
    sp_image_quantize(pred, w, h, p8);
    sp_image_quantize(gt, w, h, g8);
    *psnr = sp_psnr_u8(p8, g8, w, h);
    *ssim = sp_ssim_u8(p8, g8, w, h);
    int rc = 0;
    if (renders_dir) {
        sp_image side = {2 * w, h, 3, sp_try_alloc(px, 6, what, hint)};
        if (!side.pixels) rc = -1;
        for (int y = 0; y < h && rc == 0; y++) {
            memcpy(side.pixels + (size_t)y * 6 * w, p8 + (size_t)y * 3 * w, (size_t)3 * w);
            memcpy(side.pixels + (size_t)y * 6 * w + 3 * w, g8 + (size_t)y * 3 * w, (size_t)3 * w);
        }
        label_halves(side.pixels, w, h);
        char *base = base_name(v->name);
        char *file = sp_strfmt("%s/%03d_%s.png", renders_dir, index, base);
        if (rc == 0) rc = sp_image_save_png(file, &side);
        free(file);
        free(base);
        free(side.pixels);
    }
    free(gt);
    free(p8);
    free(g8);
    return rc;
}

int sp_eval_views(sp_backend *b, const sp_split *split, sp_alpha_mode alpha, int sh_degree, const float bg[3],
                  const char *renders_dir, sp_eval_result *out) {
    memset(out, 0, sizeof *out);
    double t0 = sp_now();
    int n = split->n;
    out->n = n;
    out->names = SP_NEW(char *, n);
    out->psnr = SP_NEW(double, n);
    out->ssim = SP_NEW(double, n);
    for (int i = 0; i < n; i++) out->names[i] = sp_strdup(split->views[i].name);
    if (renders_dir && sp_mkdir_p(renders_dir)) return -1;
    float *pred[EVAL_BATCH] = {0};
    const sp_camera *cams[EVAL_BATCH];
    int rc = 0;
    for (int first = 0; first < n && rc == 0; first += EVAL_BATCH) {
        int count = n - first < EVAL_BATCH ? n - first : EVAL_BATCH;
        for (int k = 0; k < count && rc == 0; k++) {
            const sp_camera *c = &split->views[first + k].cam;
            float *p = sp_try_realloc(pred[k], (size_t)c->width * c->height * 3, sizeof(float),
                                      "the evaluation renders", "raise data.downscale");
            if (!p) {
                rc = -1;
                break;
            }
            pred[k] = p;
            cams[k] = c;
        }
        /* the batch's renders, spread over the devices of a replicated backend */
        if (rc == 0) rc = sp_backend_render_many(b, cams, count, sh_degree, bg, pred);
        if (rc) break;
        int failed = 0;
        char err[1024] = "";
#pragma omp parallel for schedule(dynamic, 1)
        for (int k = 0; k < count; k++) {
            int i = first + k;
            if (score_view(&split->views[i], i, pred[k], alpha, bg, renders_dir, &out->psnr[i], &out->ssim[i])) {
#pragma omp critical
                {
                    failed = 1;
                    snprintf(err, sizeof err, "%s", sp_last_error());
                }
            }
        }
        if (failed) rc = sp_error("%s", err);
    }
    for (int k = 0; k < EVAL_BATCH; k++) free(pred[k]);
    if (rc) return -1;
    for (int i = 0; i < n; i++) {
        out->mean_psnr += out->psnr[i] / n;
        out->mean_ssim += out->ssim[i] / n;
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
