/* metrics.c — PSNR and SSIM of 8-bit renders (quantized as a user saves them).
 * SSIM is not reimplemented here: it is sp_ssim of the `loss` stage, on value / 255. */
#include "eval/metrics.h"

#include <math.h>
#include <stdlib.h>

#include "backend/ref/stages.h"
#include "core/core.h"
#include "io/image.h"

double sp_psnr_u8(const uint8_t *a, const uint8_t *b, int w, int h) {
    if (w <= 0 || h <= 0) return SP_PSNR_IDENTICAL;
    size_t n = (size_t)w * h * 3;
    uint64_t sse = 0; /* exact: at most 255² per value */
    for (size_t i = 0; i < n; i++) {
        int d = (int)a[i] - (int)b[i];
        sse += (uint64_t)(d * d);
    }
    return sp_psnr_sse(sse, n);
}

double sp_psnr_sse(uint64_t sse, uint64_t n) {
    if (n == 0 || sse == 0) return SP_PSNR_IDENTICAL;
    double mse = (double)sse / (double)n;
    double psnr = 10.0 * log10(255.0 * 255.0 / mse);
    return psnr < SP_PSNR_IDENTICAL ? psnr : SP_PSNR_IDENTICAL;
}

static float *to_unit_float(const uint8_t *a, size_t n) {
    float *f = sp_malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) f[i] = (float)a[i] / 255.0f;
    return f;
}

double sp_ssim_u8(const uint8_t *a, const uint8_t *b, int w, int h) {
    if (w <= 0 || h <= 0) return 1.0;
    size_t n = (size_t)w * h * 3;
    float *fa = to_unit_float(a, n), *fb = to_unit_float(b, n);
    double s = sp_ssim(fa, fb, w, h);
    free(fa);
    free(fb);
    return s;
}

void sp_eval_images(const float *render, const float *target, int w, int h, double *psnr, double *ssim) {
    size_t n = w > 0 && h > 0 ? (size_t)w * h * 3 : 0;
    uint8_t *qa = sp_malloc(n + 1), *qb = sp_malloc(n + 1);
    if (n) {
        sp_image_quantize(render, w, h, qa);
        sp_image_quantize(target, w, h, qb);
    }
    if (psnr) *psnr = sp_psnr_u8(qa, qb, w, h);
    if (ssim) *ssim = sp_ssim_u8(qa, qb, w, h);
    free(qa);
    free(qb);
}
