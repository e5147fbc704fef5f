/* metrics.h — evaluation scores of renders against ground truth, computed on what a user saves:
 * both images quantized to 8 bits (round to nearest) before scoring. PSNR over all RGB values
 * (peak 255); SSIM is the loss's SSIM (sp_ssim: 11×11 Gaussian window, σ 1.5, zero padding)
 * on the values / 255. A run's score is the mean of the per-view values. */
#ifndef SPLAT_METRICS_H
#define SPLAT_METRICS_H

#include <stdint.h>

/* PSNR of identical images (MSE 0), and of empty ones: a finite cap, so reports stay numbers. */
#define SP_PSNR_IDENTICAL 100.0

/* PSNR in dB of two 8-bit RGB [h][w][3] images: 10 log10(255² / MSE), MSE over all 3·w·h values. */
double sp_psnr_u8(const uint8_t *a, const uint8_t *b, int w, int h);
/* The same PSNR from the sum of squared differences of n 8-bit values (GPU scores). */
double sp_psnr_sse(uint64_t sse, uint64_t n);
/* Mean SSIM of two 8-bit RGB [h][w][3] images (sp_ssim on value / 255). */
double sp_ssim_u8(const uint8_t *a, const uint8_t *b, int w, int h);
/* Quantizes two float RGB [h][w][3] images in [0, 1] to 8 bits (sp_image_quantize) and scores
 * them. Either output pointer may be NULL. */
void sp_eval_images(const float *render, const float *target, int w, int h, double *psnr, double *ssim);

#endif
