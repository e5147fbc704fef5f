/* loss.cu — the `loss` stage on the GPU: the training target composited on the step's background
 * from the 8-bit view, then fused L1 + D-SSIM (docs/math.md): value and gradient w.r.t. the
 * rendered image. SSIM moments use separable 11x11 Gaussian windows over 16x16 tiles with a 5-pixel
 * halo in shared memory (zero padding). The gradient of mean SSIM goes through three per-pixel maps
 * (dS/dmu_x, dS/dE[x^2], dS/dE[xy]) convolved back with the same window. Sums are per-block
 * partials reduced in a fixed order, so the loss is deterministic. */
#include <math.h>

#include "backend/cuda/cuda_internal.h"

#define LW 11
#define LR 5
#define LH (CU_TILE + 2 * LR) /* 26 */

typedef struct {
    float w[LW];
} cu_window;

static cu_window ssim_window(void) {
    cu_window win;
    double g[LW], sum = 0.0;
    for (int k = 0; k < LW; k++) {
        double d = k - LR;
        g[k] = exp(-d * d / (2.0 * 1.5 * 1.5));
        sum += g[k];
    }
    for (int k = 0; k < LW; k++) win.w[k] = (float)(g[k] / sum);
    return win;
}

__global__ void k_composite(const uint8_t *pix, int channels, int premul, int n, float3 bg, float *target) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const uint8_t *p = pix + (size_t)i * channels;
    float r = p[0] * (1.0f / 255.0f), g = p[1] * (1.0f / 255.0f), b = p[2] * (1.0f / 255.0f);
    if (channels == 4) {
        float a = p[3] * (1.0f / 255.0f);
        if (premul) r = r + bg.x * (1.0f - a), g = g + bg.y * (1.0f - a), b = b + bg.z * (1.0f - a);
        else r = r * a + bg.x * (1.0f - a), g = g * a + bg.y * (1.0f - a), b = b * a + bg.z * (1.0f - a);
    }
    target[3 * (size_t)i] = r, target[3 * (size_t)i + 1] = g, target[3 * (size_t)i + 2] = b;
}

void cuda_composite_target(const uint8_t *pix, int channels, int premultiplied, int w, int h, float3 bg,
                           float *target, cudaStream_t s) {
    int n = w * h;
    if (n <= 0) return;
    k_composite<<<CU_GRID(n, 256), 256, 0, s>>>(pix, channels, premultiplied, n, bg, target);
}

int cuda_loss_partials(int w, int h) {
    return ((w + CU_TILE - 1) / CU_TILE) * ((h + CU_TILE - 1) / CU_TILE) * 3;
}

/* Block-wide sum of two doubles (fixed order); result valid in thread 0. */
__device__ static void block_sum2(double a, double b, double *out_a, double *out_b) {
    __shared__ double sa[CU_BLOCK], sb[CU_BLOCK];
    sa[threadIdx.x] = a, sb[threadIdx.x] = b;
    __syncthreads();
    for (int o = CU_BLOCK / 2; o > 0; o >>= 1) {
        if ((int)threadIdx.x < o) sa[threadIdx.x] += sa[threadIdx.x + o], sb[threadIdx.x] += sb[threadIdx.x + o];
        __syncthreads();
    }
    if (threadIdx.x == 0) *out_a = sa[0], *out_b = sb[0];
}

/* Forward: SSIM map, partial sums, and the three gradient maps (work[3][3][h][w]). */
__global__ void __launch_bounds__(CU_BLOCK) k_ssim_fwd(const float *x, const float *y, int w, int h, cu_window win,
                                                        float *work, double *partials) {
    __shared__ float sx[LH][LH], sy[LH][LH];
    __shared__ float hs[5][LH][CU_TILE];
    int ch = blockIdx.z;
    int ox = blockIdx.x * CU_TILE - LR, oy = blockIdx.y * CU_TILE - LR;
    for (int t = threadIdx.x; t < LH * LH; t += CU_BLOCK) {
        int r = t / LH, c = t % LH;
        int gx = ox + c, gy = oy + r;
        float vx = 0.0f, vy = 0.0f;
        if (gx >= 0 && gx < w && gy >= 0 && gy < h) {
            size_t idx = 3 * ((size_t)gy * w + gx) + ch;
            vx = x[idx], vy = y[idx];
        }
        sx[r][c] = vx, sy[r][c] = vy;
    }
    __syncthreads();
    for (int t = threadIdx.x; t < LH * CU_TILE; t += CU_BLOCK) {
        int r = t / CU_TILE, c = t % CU_TILE;
        float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f, a4 = 0.0f;
        for (int k = 0; k < LW; k++) {
            float wk = win.w[k], vx = sx[r][c + k], vy = sy[r][c + k];
            a0 += wk * vx, a1 += wk * vy, a2 += wk * vx * vx, a3 += wk * vy * vy, a4 += wk * vx * vy;
        }
        hs[0][r][c] = a0, hs[1][r][c] = a1, hs[2][r][c] = a2, hs[3][r][c] = a3, hs[4][r][c] = a4;
    }
    __syncthreads();
    int lx = threadIdx.x % CU_TILE, ly = threadIdx.x / CU_TILE;
    int px = blockIdx.x * CU_TILE + lx, py = blockIdx.y * CU_TILE + ly;
    double l1 = 0.0, ss = 0.0;
    if (px < w && py < h) {
        float m[5] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
        for (int k = 0; k < LW; k++)
            for (int q = 0; q < 5; q++) m[q] += win.w[k] * hs[q][ly + k][lx];
        float mx = m[0], my = m[1];
        float vxx = m[2] - mx * mx, vyy = m[3] - my * my, vxy = m[4] - mx * my;
        const float C1 = 0.01f * 0.01f, C2 = 0.03f * 0.03f;
        float ln = 2.0f * mx * my + C1, ld = mx * mx + my * my + C1;
        float cn = 2.0f * vxy + C2, cd = vxx + vyy + C2;
        float s = ln * cn / (ld * cd);
        float ds_dmx = 2.0f * my * cn / (ld * cd) - s * 2.0f * mx / ld;
        float ds_dvxx = -s / cd;
        float ds_dvxy = 2.0f * ln / (ld * cd);
        size_t plane = (size_t)w * h, pix = (size_t)py * w + px;
        work[(0 * 3 + ch) * plane + pix] = ds_dmx - 2.0f * mx * ds_dvxx - my * ds_dvxy;
        work[(1 * 3 + ch) * plane + pix] = ds_dvxx;
        work[(2 * 3 + ch) * plane + pix] = ds_dvxy;
        ss = (double)s;
        l1 = (double)fabsf(sx[ly + LR][lx + LR] - sy[ly + LR][lx + LR]);
    }
    double bl1, bss;
    block_sum2(l1, ss, &bl1, &bss);
    if (threadIdx.x == 0) {
        int b = (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
        partials[2 * b] = bl1, partials[2 * b + 1] = bss;
    }
}

/* Backward: convolve the maps back and add the L1 term. */
__global__ void __launch_bounds__(CU_BLOCK) k_ssim_bwd(const float *x, const float *y, int w, int h, cu_window win,
                                                        const float *work, float l1_scale, float ssim_scale,
                                                        float *dl_dx) {
    __shared__ float sm[3][LH][LH];
    __shared__ float hs[3][LH][CU_TILE];
    int ch = blockIdx.z;
    int ox = blockIdx.x * CU_TILE - LR, oy = blockIdx.y * CU_TILE - LR;
    size_t plane = (size_t)w * h;
    for (int t = threadIdx.x; t < LH * LH; t += CU_BLOCK) {
        int r = t / LH, c = t % LH;
        int gx = ox + c, gy = oy + r;
        int ok = gx >= 0 && gx < w && gy >= 0 && gy < h;
        size_t pix = ok ? (size_t)gy * w + gx : 0;
        for (int q = 0; q < 3; q++) sm[q][r][c] = ok ? work[(q * 3 + ch) * plane + pix] : 0.0f;
    }
    __syncthreads();
    for (int t = threadIdx.x; t < LH * CU_TILE; t += CU_BLOCK) {
        int r = t / CU_TILE, c = t % CU_TILE;
        float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f;
        for (int k = 0; k < LW; k++) {
            float wk = win.w[k];
            a0 += wk * sm[0][r][c + k], a1 += wk * sm[1][r][c + k], a2 += wk * sm[2][r][c + k];
        }
        hs[0][r][c] = a0, hs[1][r][c] = a1, hs[2][r][c] = a2;
    }
    __syncthreads();
    int lx = threadIdx.x % CU_TILE, ly = threadIdx.x / CU_TILE;
    int px = blockIdx.x * CU_TILE + lx, py = blockIdx.y * CU_TILE + ly;
    if (px >= w || py >= h) return;
    float c0 = 0.0f, c1 = 0.0f, c2 = 0.0f;
    for (int k = 0; k < LW; k++) {
        float wk = win.w[k];
        c0 += wk * hs[0][ly + k][lx], c1 += wk * hs[1][ly + k][lx], c2 += wk * hs[2][ly + k][lx];
    }
    size_t idx = 3 * ((size_t)py * w + px) + ch;
    float xv = x[idx], yv = y[idx];
    float dS = c0 + 2.0f * xv * c1 + yv * c2;
    float d = xv - yv;
    float sgn = d > 0.0f ? 1.0f : (d < 0.0f ? -1.0f : 0.0f);
    dl_dx[idx] = l1_scale * sgn - ssim_scale * dS;
}

/* Sums the partials in a fixed order and accumulates the loss. */
__global__ void k_loss_finalize(const double *partials, int nb, double inv_count, double lambda, double *acc,
                                double *value) {
    double a = 0.0, b = 0.0;
    for (int i = threadIdx.x; i < nb; i += CU_BLOCK) a += partials[2 * i], b += partials[2 * i + 1];
    double sa, sb;
    block_sum2(a, b, &sa, &sb);
    if (threadIdx.x == 0) {
        double loss = (1.0 - lambda) * sa * inv_count + lambda * (1.0 - sb * inv_count);
        if (value) *value = loss;
        acc[0] += loss;
        acc[1] += 1.0;
        if (!isfinite(loss)) acc[2] += 1.0;
    }
}

void cuda_loss(const float *rgb, const float *target, int w, int h, float ssim_weight, float *dl_drgb, float *work,
               double *partials, double *acc, double *value, cudaStream_t s) {
    if (w <= 0 || h <= 0) return;
    cu_window win = ssim_window();
    dim3 grid((w + CU_TILE - 1) / CU_TILE, (h + CU_TILE - 1) / CU_TILE, 3);
    k_ssim_fwd<<<grid, CU_BLOCK, 0, s>>>(rgb, target, w, h, win, work, partials);
    double count = 3.0 * (double)w * (double)h;
    if (dl_drgb)
        k_ssim_bwd<<<grid, CU_BLOCK, 0, s>>>(rgb, target, w, h, win, work, (float)((1.0 - ssim_weight) / count),
                                              (float)(ssim_weight / count), dl_drgb);
    k_loss_finalize<<<1, CU_BLOCK, 0, s>>>(partials, cuda_loss_partials(w, h), 1.0 / count, (double)ssim_weight,
                                           acc, value);
}
