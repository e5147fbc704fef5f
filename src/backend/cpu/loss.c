/* loss.c — the `loss` stage of docs/math.md on the CPU: fused L1 + D-SSIM and its exact
 * gradient with respect to the rendered image, plus mean SSIM for evaluation.
 *
 *   L = (1 - λ) mean|r - t| + λ (1 - mean SSIM(r, t)),   means over all 3·H·W values.
 *
 * SSIM per channel and pixel p uses five window sums (11×11 Gaussian, σ 1.5, zero padding):
 *   mx = W*x, my = W*y, sxx = W*x², syy = W*y², sxy = W*(x y)
 * with σx² = sxx − mx², σy² = syy − my², σxy = sxy − mx my and
 *   S = A B / (C D),  A = 2 mx my + C1,  B = 2 σxy + C2,  C = mx² + my² + C1,  D = σx² + σy² + C2.
 * Only x (the render) needs a gradient. Differentiating S with respect to the sums:
 *   ∂S/∂mx  = 2 (my (B − A) − mx S (D − C)) / (C D)
 *   ∂S/∂sxx = −S / D
 *   ∂S/∂sxy = 2 A / (C D)
 * With G_k(p) = ∂L/∂S(p) · ∂S/∂k(p), the window sums are transposed back onto the pixels:
 *   ∂L/∂x(q) = (W*G_mx)(q) + 2 x(q) (W*G_sxx)(q) + y(q) (W*G_sxy)(q)
 * (the window is symmetric, so its transpose is the same blur with zero padding).
 *
 * The work is done one channel at a time on planar double-precision maps; every blur is
 * separable (a horizontal pass into a map, then a vertical pass fused with what follows).
 * OpenMP splits rows; every sum has a fixed order and the per-row partial sums are added
 * serially, so results do not depend on the thread count. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/loss.h"
#include "backend/cpu/stages.h"
#include "core/core.h"

#define R SP_SSIM_RADIUS
#define WIN SP_SSIM_WINDOW

void sp_ssim_window(double g[WIN]) {
    double sum = 0.0;
    for (int k = 0; k < WIN; k++) {
        double d = (double)(k - R);
        g[k] = exp(-d * d / (2.0 * SP_SSIM_SIGMA * SP_SSIM_SIGMA));
        sum += g[k];
    }
    for (int k = 0; k < WIN; k++) g[k] /= sum;
}

/* Horizontal blur of one row given as a zero-padded copy (pad[R + i] = row[i]): out[i] =
 * Σ_k g[k] pad[i + k]. Taps outer, pixels inner, so the inner loop vectorizes. */
static void hblur_padded(const double *pad, double *out, int w, const double g[WIN]) {
    for (int i = 0; i < w; i++) out[i] = 0.0;
    for (int k = 0; k < WIN; k++) {
        const double *src = pad + k;
        double gk = g[k];
        for (int i = 0; i < w; i++) out[i] += gk * src[i];
    }
}

/* Horizontal pass of the five forward sums: out[j] = row blur of x, y, x², y², x y. */
static void hblur_forward(const double *x, const double *y, double *const out[5], int w, int h,
                          const double g[WIN]) {
#pragma omp parallel
    {
        size_t pw = (size_t)w + 2 * R;
        double *pad = SP_NEW(double, 5 * pw); /* zero ends stay zero */
#pragma omp for schedule(static)
        for (int row = 0; row < h; row++) {
            const double *xr = x + (size_t)row * w, *yr = y + (size_t)row * w;
            for (int i = 0; i < w; i++) {
                double a = xr[i], b = yr[i];
                pad[R + i] = a;
                pad[pw + R + i] = b;
                pad[2 * pw + R + i] = a * a;
                pad[3 * pw + R + i] = b * b;
                pad[4 * pw + R + i] = a * b;
            }
            for (int j = 0; j < 5; j++) hblur_padded(pad + j * pw, out[j] + (size_t)row * w, w, g);
        }
        free(pad);
    }
}

/* Horizontal pass of n maps (backward). */
static void hblur(const double *const in[], double *const out[], int n, int w, int h, const double g[WIN]) {
#pragma omp parallel
    {
        double *pad = SP_NEW(double, (size_t)w + 2 * R);
#pragma omp for schedule(static)
        for (int row = 0; row < h; row++) {
            for (int j = 0; j < n; j++) {
                memcpy(pad + R, in[j] + (size_t)row * w, (size_t)w * sizeof(double));
                hblur_padded(pad, out[j] + (size_t)row * w, w, g);
            }
        }
        free(pad);
    }
}

/* Vertical pass for one output row: acc = column blur of map at row `row`. */
static void vblur_row(const double *map, double *acc, int row, int w, int h, const double g[WIN]) {
    int k0 = sp_maxi(0, R - row), k1 = sp_mini(WIN - 1, h - 1 - row + R);
    for (int i = 0; i < w; i++) acc[i] = 0.0;
    for (int k = k0; k <= k1; k++) {
        const double *src = map + (size_t)(row + k - R) * w;
        double gk = g[k];
        for (int i = 0; i < w; i++) acc[i] += gk * src[i];
    }
}

typedef struct {
    int w, h;
    double g[WIN];
    double *x, *y;    /* planar channel of the render and the target */
    double *hm[5];    /* horizontal sums (forward), reused by the backward pass */
    double *gm[3];    /* ∂L/∂S · ∂S/∂{mx, sxx, sxy} per pixel */
    double *row_sum;  /* [h] per-row sums of S */
} ssim_work;

static void work_init(ssim_work *ws, int w, int h, int want_grad) {
    memset(ws, 0, sizeof *ws);
    ws->w = w;
    ws->h = h;
    sp_ssim_window(ws->g);
    size_t n = (size_t)w * h;
    ws->x = sp_malloc(n * sizeof(double));
    ws->y = sp_malloc(n * sizeof(double));
    for (int j = 0; j < 5; j++) ws->hm[j] = sp_malloc(n * sizeof(double));
    if (want_grad)
        for (int j = 0; j < 3; j++) ws->gm[j] = sp_malloc(n * sizeof(double));
    ws->row_sum = sp_malloc((size_t)h * sizeof(double));
}

static void work_free(ssim_work *ws) {
    free(ws->x);
    free(ws->y);
    for (int j = 0; j < 5; j++) free(ws->hm[j]);
    for (int j = 0; j < 3; j++) free(ws->gm[j]);
    free(ws->row_sum);
}

/* SSIM of channel c of two interleaved [H][W][3] images. Returns the sum of the SSIM map.
 * When dl_drgb != NULL, adds dS_scale · ∂(Σ S)/∂a into channel c of dl_drgb. */
static double ssim_channel(ssim_work *ws, const float *a, const float *b, int c, double dS_scale,
                           float *dl_drgb) {
    const int w = ws->w, h = ws->h;
    const size_t n = (size_t)w * h;
    const double *g = ws->g;
    double *x = ws->x, *y = ws->y;
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) {
        x[i] = a[3 * i + c];
        y[i] = b[3 * i + c];
    }
    hblur_forward(x, y, ws->hm, w, h, g);

    const int grad = dl_drgb != NULL;
#pragma omp parallel
    {
        double *acc = sp_malloc((size_t)5 * w * sizeof(double));
#pragma omp for schedule(static)
        for (int row = 0; row < h; row++) {
            for (int j = 0; j < 5; j++) vblur_row(ws->hm[j], acc + (size_t)j * w, row, w, h, g);
            const double *mx = acc, *my = acc + w, *sxx = acc + 2 * (size_t)w, *syy = acc + 3 * (size_t)w,
                         *sxy = acc + 4 * (size_t)w;
            double rs = 0.0;
            for (int i = 0; i < w; i++) {
                double vx = sxx[i] - mx[i] * mx[i], vy = syy[i] - my[i] * my[i];
                double cxy = sxy[i] - mx[i] * my[i];
                double A = 2.0 * mx[i] * my[i] + SP_SSIM_C1, B = 2.0 * cxy + SP_SSIM_C2;
                double C = mx[i] * mx[i] + my[i] * my[i] + SP_SSIM_C1, D = vx + vy + SP_SSIM_C2;
                double CD = C * D, S = A * B / CD;
                rs += S;
                if (grad) {
                    size_t o = (size_t)row * w + i;
                    ws->gm[0][o] = dS_scale * 2.0 * (my[i] * (B - A) - mx[i] * S * (D - C)) / CD;
                    ws->gm[1][o] = dS_scale * (-S / D);
                    ws->gm[2][o] = dS_scale * 2.0 * A / CD;
                }
            }
            ws->row_sum[row] = rs;
        }
        free(acc);
    }
    double total = 0.0;
    for (int row = 0; row < h; row++) total += ws->row_sum[row];
    if (!grad) return total;

    /* Backward: transpose the window sums (horizontal pass into hm[0..2], vertical fused). */
    hblur((const double *const *)ws->gm, ws->hm, 3, w, h, g);
#pragma omp parallel
    {
        double *acc = sp_malloc((size_t)3 * w * sizeof(double));
#pragma omp for schedule(static)
        for (int row = 0; row < h; row++) {
            for (int j = 0; j < 3; j++) vblur_row(ws->hm[j], acc + (size_t)j * w, row, w, h, g);
            for (int i = 0; i < w; i++) {
                size_t o = (size_t)row * w + i;
                double d = acc[i] + 2.0 * x[o] * acc[w + i] + y[o] * acc[2 * (size_t)w + i];
                dl_drgb[3 * o + c] = (float)((double)dl_drgb[3 * o + c] + d);
            }
        }
        free(acc);
    }
    return total;
}

double sp_ssim(const float *a, const float *b, int w, int h) {
    if (w <= 0 || h <= 0) return 1.0;
    ssim_work ws;
    work_init(&ws, w, h, 0);
    double sum = 0.0;
    for (int c = 0; c < 3; c++) sum += ssim_channel(&ws, a, b, c, 0.0, NULL);
    work_free(&ws);
    return sum / (3.0 * (double)w * (double)h);
}

double cpu_loss(const float *rgb, const float *target, int w, int h, float ssim_weight, float *dl_drgb) {
    if (w <= 0 || h <= 0) return 0.0;
    const double lambda = ssim_weight, count = 3.0 * (double)w * (double)h;
    const double l1_scale = (1.0 - lambda) / count;
    const float l1_g = (float)l1_scale;

    /* L1 (and its gradient: ±(1 − λ)/N, 0 where equal). */
    double *row_sum = sp_malloc((size_t)h * sizeof(double));
#pragma omp parallel for schedule(static)
    for (int row = 0; row < h; row++) {
        double s = 0.0;
        for (int i = 0; i < 3 * w; i++) {
            size_t o = (size_t)row * w * 3 + i;
            double d = (double)rgb[o] - (double)target[o];
            s += fabs(d);
            if (dl_drgb) dl_drgb[o] = d > 0.0 ? l1_g : d < 0.0 ? -l1_g : 0.0f;
        }
        row_sum[row] = s;
    }
    double l1 = 0.0;
    for (int row = 0; row < h; row++) l1 += row_sum[row];
    free(row_sum);
    double loss = (1.0 - lambda) * l1 / count;
    if (lambda == 0.0) return loss;

    /* D-SSIM: ∂L/∂S(p) = −λ / N for every pixel and channel. */
    ssim_work ws;
    work_init(&ws, w, h, dl_drgb != NULL);
    double ssim_sum = 0.0;
    for (int c = 0; c < 3; c++) ssim_sum += ssim_channel(&ws, rgb, target, c, -lambda / count, dl_drgb);
    work_free(&ws);
    return loss + lambda * (1.0 - ssim_sum / count);
}
