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
 * Every blur is separable and computed in double. Each thread streams through its own band of
 * rows, one channel at a time: a row of input gives one row of horizontal sums (kept in a ring
 * of 11 rows); 11 of those give one row of SSIM values and G; rows of horizontally blurred G
 * (another ring) give one row of gradient. Nothing image-sized is allocated and each thread
 * works in its cache; the few rows at band edges are computed by both neighbours, identically.
 * Every value is a fixed-order sum and the per-row SSIM sums are added serially, so results do
 * not depend on the thread count. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "backend/ref/loss.h"
#include "backend/ref/stages.h"
#include "core/core.h"
#include "core/threads.h"

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

/* out[i] = Σ_k g[k] src[k][i], k ascending: the one blur kernel. The 11 terms are written out
 * so that the loop over i vectorizes with the sum kept in registers. */
/* Compiled twice (AVX2 and the baseline), picked at load time: the same operations in the same order,
 * so the same results bit for bit (no FMA contraction under -std=c11), twice the lanes where the CPU
 * has AVX2. */
__attribute__((target_clones("avx2", "default"))) static void blur11(const double *const src[WIN],
                                                                      double *restrict out, int w,
                                                                      const double g[WIN]) {
    /* restrict: out never overlaps the inputs (which may be the same row: the zero row), so the
     * loop vectorizes without run-time overlap checks over twelve pointers */
    const double *restrict s0 = src[0], *restrict s1 = src[1], *restrict s2 = src[2], *restrict s3 = src[3],
                           *restrict s4 = src[4], *restrict s5 = src[5], *restrict s6 = src[6], *restrict s7 = src[7],
                           *restrict s8 = src[8], *restrict s9 = src[9], *restrict s10 = src[10];
    const double g0 = g[0], g1 = g[1], g2 = g[2], g3 = g[3], g4 = g[4], g5 = g[5], g6 = g[6], g7 = g[7],
                 g8 = g[8], g9 = g[9], g10 = g[10];
    for (int i = 0; i < w; i++) {
        double s = g0 * s0[i];
        s += g1 * s1[i];
        s += g2 * s2[i];
        s += g3 * s3[i];
        s += g4 * s4[i];
        s += g5 * s5[i];
        s += g6 * s6[i];
        s += g7 * s7[i];
        s += g8 * s8[i];
        s += g9 * s9[i];
        s += g10 * s10[i];
        out[i] = s;
    }
}

/* Horizontal blur of one row given as a zero-padded copy (pad[R + i] = row[i]). */
static void hblur_padded(const double *pad, double *out, int w, const double g[WIN]) {
    const double *src[WIN];
    for (int k = 0; k < WIN; k++) src[k] = pad + k;
    blur11(src, out, w, g);
}

/* Vertical blur at row `row` of a map whose rows live in a ring of WIN slots (row q in slot
 * q % WIN, each `w` long); rows outside [0, h) read as `zero` (a row of zeros). */
static void vblur_ring(const double *ring, const double *zero, double *acc, int row, int w, int h,
                       const double g[WIN]) {
    const double *src[WIN];
    for (int k = 0; k < WIN; k++) {
        int q = row + k - R;
        src[k] = q < 0 || q >= h ? zero : ring + (size_t)(q % WIN) * w;
    }
    blur11(src, acc, w, g);
}

typedef struct {
    const float *a, *b; /* render and target, [h][w][3] */
    int w, h, c;        /* size, channel */
    double g[WIN];
    double dS_scale;    /* ∂L/∂S, the same for every pixel */
    float *dl_drgb;     /* NULL: no gradient */
    double *row_sum;    /* [h] Σ_x S per row */
} ssim_job;

/* Per-thread rows: rings of horizontal sums (5 maps) and of blurred G (3 maps), plus scratch. */
typedef struct {
    double *hring, *gring, *acc, *grow, *pad, *zero;
} ssim_rows;

static void rows_alloc(ssim_rows *r, int w, int grad) {
    size_t pw = (size_t)w + 2 * R;
    r->hring = sp_malloc((size_t)5 * WIN * w * sizeof(double));
    r->gring = grad ? sp_malloc((size_t)3 * WIN * w * sizeof(double)) : NULL;
    r->acc = sp_malloc((size_t)5 * w * sizeof(double));
    r->grow = sp_malloc((size_t)3 * w * sizeof(double));
    r->pad = SP_NEW(double, 5 * pw); /* the R zeros at both ends stay zero */
    r->zero = SP_NEW(double, w);
}

static void rows_free(ssim_rows *r) {
    free(r->hring);
    free(r->gring);
    free(r->acc);
    free(r->grow);
    free(r->pad);
    free(r->zero);
}

/* Horizontal sums of x, y, x², y², x y for input row `row` into its ring slot. */
static void forward_hrow(const ssim_job *jb, ssim_rows *r, int row) {
    const int w = jb->w, c = jb->c;
    const size_t pw = (size_t)w + 2 * R, ring_map = (size_t)WIN * w;
    const float *ar = jb->a + (size_t)row * w * 3 + c, *br = jb->b + (size_t)row * w * 3 + c;
    for (int i = 0; i < w; i++) {
        double x = ar[3 * i], y = br[3 * i];
        r->pad[R + i] = x;
        r->pad[pw + R + i] = y;
        r->pad[2 * pw + R + i] = x * x;
        r->pad[3 * pw + R + i] = y * y;
        r->pad[4 * pw + R + i] = x * y;
    }
    size_t slot = (size_t)(row % WIN) * w;
    for (int m = 0; m < 5; m++) hblur_padded(r->pad + m * pw, r->hring + m * ring_map + slot, w, jb->g);
}

/* SSIM values of row `row` (its sum is returned); with a gradient, the row of G blurred
 * horizontally goes into its ring slot. Needs horizontal sums of rows row−R .. row+R. */
static double ssim_row(const ssim_job *jb, ssim_rows *r, int row) {
    const int w = jb->w, h = jb->h;
    const size_t ring_map = (size_t)WIN * w;
    for (int m = 0; m < 5; m++) vblur_ring(r->hring + m * ring_map, r->zero, r->acc + (size_t)m * w, row, w, h, jb->g);
    const double *mx = r->acc, *my = r->acc + w, *sxx = r->acc + 2 * (size_t)w, *syy = r->acc + 3 * (size_t)w,
                 *sxy = r->acc + 4 * (size_t)w;
    const int grad = jb->dl_drgb != NULL;
    const double k = jb->dS_scale;
    double *g_mx = r->grow, *g_sxx = r->grow + w, *g_sxy = r->grow + 2 * (size_t)w;
    double sum = 0.0;
    for (int i = 0; i < w; i++) {
        double vx = sxx[i] - mx[i] * mx[i], vy = syy[i] - my[i] * my[i];
        double cxy = sxy[i] - mx[i] * my[i];
        double A = 2.0 * mx[i] * my[i] + SP_SSIM_C1, B = 2.0 * cxy + SP_SSIM_C2;
        double C = mx[i] * mx[i] + my[i] * my[i] + SP_SSIM_C1, D = vx + vy + SP_SSIM_C2;
        double inv = 1.0 / (C * D), S = A * B * inv;
        sum += S;
        if (grad) { /* one division per pixel: S / D = S C / (C D) */
            g_mx[i] = k * 2.0 * (my[i] * (B - A) - mx[i] * S * (D - C)) * inv;
            g_sxx[i] = -k * S * C * inv;
            g_sxy[i] = k * 2.0 * A * inv;
        }
    }
    if (grad) {
        size_t slot = (size_t)(row % WIN) * w;
        for (int m = 0; m < 3; m++) {
            memcpy(r->pad + R, r->grow + (size_t)m * w, (size_t)w * sizeof(double));
            hblur_padded(r->pad, r->gring + m * ring_map + slot, w, jb->g);
        }
    }
    return sum;
}

/* Gradient of row `row`: vertical blur of the G ring, then the chain rule through x, x², x y,
 * added to channel c of dl_drgb. Needs blurred G of rows row−R .. row+R. */
static void gradient_row(const ssim_job *jb, ssim_rows *r, int row) {
    const int w = jb->w, h = jb->h, c = jb->c;
    const size_t ring_map = (size_t)WIN * w;
    for (int m = 0; m < 3; m++) vblur_ring(r->gring + m * ring_map, r->zero, r->acc + (size_t)m * w, row, w, h, jb->g);
    const float *ar = jb->a + (size_t)row * w * 3 + c, *br = jb->b + (size_t)row * w * 3 + c;
    float *out = jb->dl_drgb + (size_t)row * w * 3 + c;
    for (int i = 0; i < w; i++) {
        double d = r->acc[i] + 2.0 * ar[3 * i] * r->acc[w + i] + br[3 * i] * r->acc[2 * (size_t)w + i];
        out[3 * i] = (float)((double)out[3 * i] + d);
    }
}

/* One thread's band of output rows [a, b): SSIM row sums of its rows and, with a gradient,
 * their gradient. Horizontal sums are produced just ahead of their use. */
static void ssim_band(const ssim_job *jb, ssim_rows *r, int a, int b) {
    const int h = jb->h, grad = jb->dl_drgb != NULL;
    /* SSIM rows needed: the band, plus R on each side for the gradient's window. */
    int j0 = grad ? sp_maxi(0, a - R) : a, j1 = grad ? sp_mini(h - 1, b - 1 + R) : b - 1;
    int next_h = sp_maxi(0, j0 - R);
    for (int j = j0; j <= j1; j++) {
        for (; next_h <= sp_mini(h - 1, j + R); next_h++) forward_hrow(jb, r, next_h);
        double s = ssim_row(jb, r, j);
        if (j >= a && j < b) jb->row_sum[j] = s;
        if (!grad) continue;
        /* Row j − R now has all the G rows it needs; at the bottom edge so do the last ones. */
        int first = j - R, last = j == h - 1 ? h - 1 : j - R;
        for (int row = sp_maxi(first, a); row <= last && row < b; row++) gradient_row(jb, r, row);
    }
}

/* SSIM of channel c of two interleaved [H][W][3] images. Returns the sum of the SSIM map.
 * When dl_drgb != NULL, adds dS_scale · ∂(Σ S)/∂a into channel c of dl_drgb. */
static double ssim_channel(const float *a, const float *b, int w, int h, int c, double dS_scale, float *dl_drgb,
                           double *row_sum) {
    ssim_job jb = {a, b, w, h, c, {0}, dS_scale, dl_drgb, row_sum};
    sp_ssim_window(jb.g);
#pragma omp parallel num_threads(sp_omp_threads())
    {
        int t = 0, nt = 1;
#ifdef _OPENMP
        t = omp_get_thread_num();
        nt = omp_get_num_threads();
#endif
        int r0 = (int)((int64_t)h * t / nt), r1 = (int)((int64_t)h * (t + 1) / nt);
        if (r0 < r1) {
            ssim_rows rows;
            rows_alloc(&rows, w, dl_drgb != NULL);
            ssim_band(&jb, &rows, r0, r1);
            rows_free(&rows);
        }
    }
    double total = 0.0;
    for (int row = 0; row < h; row++) total += row_sum[row];
    return total;
}

double sp_ssim(const float *a, const float *b, int w, int h) {
    if (w <= 0 || h <= 0) return 1.0;
    double *row_sum = sp_malloc((size_t)h * sizeof(double));
    double sum = 0.0;
    for (int c = 0; c < 3; c++) sum += ssim_channel(a, b, w, h, c, 0.0, NULL, row_sum);
    free(row_sum);
    return sum / (3.0 * (double)w * (double)h);
}

double cpu_loss(const float *rgb, const float *target, int w, int h, float ssim_weight, float *dl_drgb) {
    if (w <= 0 || h <= 0) return 0.0;
    const double lambda = ssim_weight, count = 3.0 * (double)w * (double)h;
    const float l1_g = (float)((1.0 - lambda) / count);

    /* L1 (and its gradient: ±(1 − λ)/N, 0 where equal). */
    double *row_sum = sp_malloc((size_t)h * sizeof(double));
#pragma omp parallel for schedule(static) num_threads(sp_omp_threads())
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
    double loss = (1.0 - lambda) * l1 / count;

    /* D-SSIM: ∂L/∂S(p) = −λ / N for every pixel and channel. */
    if (lambda != 0.0) {
        double ssim_sum = 0.0;
        for (int c = 0; c < 3; c++) ssim_sum += ssim_channel(rgb, target, w, h, c, -lambda / count, dl_drgb, row_sum);
        loss += lambda * (1.0 - ssim_sum / count);
    }
    free(row_sum);
    return loss;
}
