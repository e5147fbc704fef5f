/* loss.cu — the `loss` stage on the GPU: fused L1 + D-SSIM (docs/math.md) of the rendered image
 * against the training target (the 8-bit view composited on the step's background as the kernels
 * read it): value and gradient w.r.t. the rendered image. SSIM moments use separable 11x11 Gaussian
 * windows over 32x32 tiles with a 5-pixel halo in shared memory (zero padding). The gradient of mean
 * SSIM goes through three per-pixel maps (dS/dmu_x, dS/dE[x^2], dS/dE[xy]) convolved back with the
 * same window. Sums are per-block partials reduced in a fixed order, so the loss is deterministic. */
#include <math.h>

#include "backend/cuda/cuda_internal.h"

#define LW 11
#define LR 5
#define LT 32                        /* output tile edge */
#define LIN (LT + 2 * LR)            /* 42 */
#define LSEG 4                       /* horizontal outputs per thread */
#define LROWS (LT * LT / CU_BLOCK)   /* vertical outputs per thread: 4 */
#define LHALF (LSEG + LW - 1)        /* inputs of a horizontal segment: 14 */
#define LVERT (LROWS + LW - 1)       /* inputs of a vertical segment: 14 */

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

/* Channel ch of target pixel p: a float image, or the 8-bit view composited on the step's background
 * as sp_view_composite does it (premultiplied or straight alpha). */
__device__ __forceinline__ float target_at(const cu_target &t, long long p, int ch) {
    if (t.f) return t.f[3 * p + ch];
    const uint8_t *px = t.pix + p * t.channels;
    float col = px[ch] * (1.0f / 255.0f), bg = ch == 0 ? t.bg.x : (ch == 1 ? t.bg.y : t.bg.z);
    if (t.channels != 4) return col;
    float a = px[3] * (1.0f / 255.0f);
    return (t.premul ? col : col * a) + bg * (1.0f - a);
}

int cuda_loss_partials(int w, int h) {
    return ((w + LT - 1) / LT) * ((h + LT - 1) / LT) * 3;
}

/* Block-wide sum of two doubles over CU_BLOCK threads in a fixed order (warp shuffles, then the
 * warps in index order); the result is valid in thread 0. */
__device__ static void block_sum2(double a, double b, double *out_a, double *out_b) {
    __shared__ double wa[CU_BLOCK / 32], wb[CU_BLOCK / 32];
    for (int o = 16; o > 0; o >>= 1) a += __shfl_down_sync(0xffffffffu, a, o), b += __shfl_down_sync(0xffffffffu, b, o);
    if ((threadIdx.x & 31) == 0) wa[threadIdx.x >> 5] = a, wb[threadIdx.x >> 5] = b;
    __syncthreads();
    if (threadIdx.x == 0) {
        double sa = 0.0, sb = 0.0;
        for (int i = 0; i < CU_BLOCK / 32; i++) sa += wa[i], sb += wb[i];
        *out_a = sa, *out_b = sb;
    }
}

/* Both SSIM kernels cover an LT x LT output tile per block (one colour channel: blockIdx.z) from an
 * LIN x LIN input region (the 5-pixel halo, zero outside the image). The horizontal pass gives
 * each thread LSEG neighbouring outputs of one row (their 11-tap windows share the loaded values),
 * the vertical pass LROWS neighbouring outputs of one column. Rows of the shared arrays are padded
 * by one float so a warp's accesses fall in distinct banks. Window sums run over k = 0..10 in order,
 * as in the CPU reference. */

#define LLOADS ((LIN * LIN + CU_BLOCK - 1) / CU_BLOCK) /* region values per thread: 7 */

/* Index into an interleaved RGB image of region value i of this thread (-1: outside the region or
 * the image: zero). */
__device__ static long long region_index(int i, int w, int h, int ox, int oy) {
    int t = threadIdx.x + i * CU_BLOCK;
    if (t >= LIN * LIN) return -1;
    int gx = ox + t % LIN, gy = oy + t / LIN;
    return gx >= 0 && gx < w && gy >= 0 && gy < h ? (long long)gy * w + gx : -1;
}

/* Channel ch of the region at (ox, oy) of an interleaved RGB image and the target into sa and sb. Every load is
 * issued before the first store, so their latencies overlap. */
__device__ static void load_regions(const float *a, const cu_target &b, int w, int h, int ch, int ox, int oy,
                                    float (*sa)[LIN + 1], float (*sb)[LIN + 1]) {
    float va[LLOADS], vb[LLOADS];
#pragma unroll
    for (int i = 0; i < LLOADS; i++) {
        long long p = region_index(i, w, h, ox, oy);
        va[i] = p >= 0 ? a[3 * p + ch] : 0.0f;
        vb[i] = p >= 0 ? target_at(b, p, ch) : 0.0f;
    }
#pragma unroll
    for (int i = 0; i < LLOADS; i++) {
        int t = threadIdx.x + i * CU_BLOCK;
        if (t < LIN * LIN) sa[t / LIN][t % LIN] = va[i], sb[t / LIN][t % LIN] = vb[i];
    }
}

/* The vertical window pass of Q horizontally summed maps: out[o][q] = sum_k w[k] hs[q][ly0 + o + k][lx]
 * for the LROWS outputs of this thread's column (k ascending). */
template <int Q>
__device__ static void vertical_sums(const float (*hs)[LIN][LT + 1], int lx, int ly0, const cu_window &win,
                                     float (*out)[Q]) {
#pragma unroll
    for (int o = 0; o < LROWS; o++)
#pragma unroll
        for (int q = 0; q < Q; q++) out[o][q] = 0.0f;
#pragma unroll
    for (int j = 0; j < LVERT; j++) {
        float v[Q];
#pragma unroll
        for (int q = 0; q < Q; q++) v[q] = hs[q][ly0 + j][lx];
#pragma unroll
        for (int o = 0; o < LROWS; o++) {
            int k = j - o;
            if (k >= 0 && k < LW)
#pragma unroll
                for (int q = 0; q < Q; q++) out[o][q] += win.w[k] * v[q];
        }
    }
}

/* Forward: SSIM map, partial sums, and the three gradient maps (work[3][3][h][w]). */
__global__ void __launch_bounds__(CU_BLOCK, 5) k_ssim_fwd(const float *x, cu_target y, int w, int h, cu_window win,
                                                        float *work, double *partials) {
    __shared__ float sx[LIN][LIN + 1], sy[LIN][LIN + 1];
    __shared__ float hs[5][LIN][LT + 1];
    int ch = blockIdx.z;
    int ox = blockIdx.x * LT - LR, oy = blockIdx.y * LT - LR;
    load_regions(x, y, w, h, ch, ox, oy, sx, sy);
    __syncthreads();
    for (int t = threadIdx.x; t < LIN * (LT / LSEG); t += CU_BLOCK) {
        int r = t / (LT / LSEG), c0 = (t % (LT / LSEG)) * LSEG;
        float vx[LHALF], vy[LHALF], xx[LHALF], yy[LHALF], xy[LHALF];
#pragma unroll
        for (int j = 0; j < LHALF; j++) {
            vx[j] = sx[r][c0 + j], vy[j] = sy[r][c0 + j];
            xx[j] = vx[j] * vx[j], yy[j] = vy[j] * vy[j], xy[j] = vx[j] * vy[j];
        }
#pragma unroll
        for (int o = 0; o < LSEG; o++) {
            float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f, a4 = 0.0f;
#pragma unroll
            for (int k = 0; k < LW; k++) {
                float wk = win.w[k];
                a0 += wk * vx[o + k], a1 += wk * vy[o + k], a2 += wk * xx[o + k], a3 += wk * yy[o + k],
                    a4 += wk * xy[o + k];
            }
            hs[0][r][c0 + o] = a0, hs[1][r][c0 + o] = a1, hs[2][r][c0 + o] = a2, hs[3][r][c0 + o] = a3,
            hs[4][r][c0 + o] = a4;
        }
    }
    __syncthreads();
    int lx = threadIdx.x % LT, ly0 = (threadIdx.x / LT) * LROWS;
    float m[LROWS][5];
    vertical_sums<5>(hs, lx, ly0, win, m);
    double l1 = 0.0, ss = 0.0;
    int px = blockIdx.x * LT + lx;
    size_t plane = (size_t)w * h;
#pragma unroll
    for (int o = 0; o < LROWS; o++) {
        int py = blockIdx.y * LT + ly0 + o;
        if (px >= w || py >= h) continue;
        float mx = m[o][0], my = m[o][1];
        float vxx = m[o][2] - mx * mx, vyy = m[o][3] - my * my, vxy = m[o][4] - mx * my;
        const float C1 = 0.01f * 0.01f, C2 = 0.03f * 0.03f;
        float ln = 2.0f * mx * my + C1, ld = mx * mx + my * my + C1;
        float cn = 2.0f * vxy + C2, cd = vxx + vyy + C2;
        /* one reciprocal per denominator (a few ulp; the parity tolerance is 1e-5 relative) */
        float rd = __frcp_rn(ld * cd), rld = __frcp_rn(ld), rcd = __frcp_rn(cd);
        float s = ln * cn * rd;
        float ds_dmx = 2.0f * my * cn * rd - s * 2.0f * mx * rld;
        float ds_dvxx = -s * rcd;
        float ds_dvxy = 2.0f * ln * rd;
        size_t pix = (size_t)py * w + px;
        work[(0 * 3 + ch) * plane + pix] = ds_dmx - 2.0f * mx * ds_dvxx - my * ds_dvxy;
        work[(1 * 3 + ch) * plane + pix] = ds_dvxx;
        work[(2 * 3 + ch) * plane + pix] = ds_dvxy;
        ss += (double)s;
        l1 += (double)fabsf(sx[ly0 + o + LR][lx + LR] - sy[ly0 + o + LR][lx + LR]);
    }
    double bl1, bss;
    block_sum2(l1, ss, &bl1, &bss);
    if (threadIdx.x == 0) {
        int b = (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
        partials[2 * b] = bl1, partials[2 * b + 1] = bss;
    }
}

/* Sums the partials in a fixed order and accumulates the loss (one block of CU_BLOCK threads). */
__device__ static void loss_finalize(const double *partials, int nb, double inv_count, double lambda, double *acc,
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

typedef struct {
    const double *partials;
    int nb;
    double inv_count, lambda;
    double *acc, *value;
} cu_loss_sum;

__global__ void k_loss_finalize(cu_loss_sum L) {
    loss_finalize(L.partials, L.nb, L.inv_count, L.lambda, L.acc, L.value);
}

/* Backward: convolve the maps back and add the L1 term. The first block also sums the forward
 * pass's partials (all written: the kernels run in stream order). */
__global__ void __launch_bounds__(CU_BLOCK) k_ssim_bwd(const float *x, cu_target y, int w, int h, cu_window win,
                                                        const float *work, float l1_scale, float ssim_scale,
                                                        float *dl_dx, cu_loss_sum L) {
    __shared__ float sm[3][LIN][LIN + 1];
    __shared__ float hs[3][LIN][LT + 1];
    if (blockIdx.x == 0 && blockIdx.y == 0 && blockIdx.z == 0) {
        loss_finalize(L.partials, L.nb, L.inv_count, L.lambda, L.acc, L.value);
        __syncthreads(); /* block_sum2's shared words are free again */
    }
    int ch = blockIdx.z;
    int ox = blockIdx.x * LT - LR, oy = blockIdx.y * LT - LR;
    size_t plane = (size_t)w * h;
    {
        float v[3][LLOADS];
#pragma unroll
        for (int i = 0; i < LLOADS; i++) {
            long long p = region_index(i, w, h, ox, oy);
#pragma unroll
            for (int q = 0; q < 3; q++) v[q][i] = p >= 0 ? work[(q * 3 + ch) * plane + p] : 0.0f;
        }
#pragma unroll
        for (int i = 0; i < LLOADS; i++) {
            int t = threadIdx.x + i * CU_BLOCK;
            if (t < LIN * LIN)
#pragma unroll
                for (int q = 0; q < 3; q++) sm[q][t / LIN][t % LIN] = v[q][i];
        }
    }
    /* this thread's pixels of x and y, loaded while the window sums run */
    int lx = threadIdx.x % LT, ly0 = (threadIdx.x / LT) * LROWS;
    int px = blockIdx.x * LT + lx;
    float xs[LROWS], ys[LROWS];
#pragma unroll
    for (int o = 0; o < LROWS; o++) {
        int py = blockIdx.y * LT + ly0 + o;
        size_t idx = 3 * ((size_t)py * w + px) + ch;
        int in = px < w && py < h;
        xs[o] = in ? x[idx] : 0.0f, ys[o] = in ? target_at(y, (long long)py * w + px, ch) : 0.0f;
    }
    __syncthreads();
    for (int t = threadIdx.x; t < LIN * (LT / LSEG); t += CU_BLOCK) {
        int r = t / (LT / LSEG), c0 = (t % (LT / LSEG)) * LSEG;
#pragma unroll
        for (int q = 0; q < 3; q++) {
            float v[LHALF];
#pragma unroll
            for (int j = 0; j < LHALF; j++) v[j] = sm[q][r][c0 + j];
#pragma unroll
            for (int o = 0; o < LSEG; o++) {
                float a = 0.0f;
#pragma unroll
                for (int k = 0; k < LW; k++) a += win.w[k] * v[o + k];
                hs[q][r][c0 + o] = a;
            }
        }
    }
    __syncthreads();
    float c[LROWS][3];
    vertical_sums<3>(hs, lx, ly0, win, c);
#pragma unroll
    for (int o = 0; o < LROWS; o++) {
        int py = blockIdx.y * LT + ly0 + o;
        if (px >= w || py >= h) continue;
        size_t idx = 3 * ((size_t)py * w + px) + ch;
        float xv = xs[o], yv = ys[o];
        float dS = c[o][0] + 2.0f * xv * c[o][1] + yv * c[o][2];
        float d = xv - yv;
        float sgn = d > 0.0f ? 1.0f : (d < 0.0f ? -1.0f : 0.0f);
        dl_dx[idx] = l1_scale * sgn - ssim_scale * dS;
    }
}

void cuda_loss(const float *rgb, cu_target target, int w, int h, float ssim_weight, float *dl_drgb, float *work,
               double *partials, double *acc, double *value, cudaStream_t s) {
    if (w <= 0 || h <= 0) return;
    cu_window win = ssim_window();
    dim3 grid((w + LT - 1) / LT, (h + LT - 1) / LT, 3);
    k_ssim_fwd<<<grid, CU_BLOCK, 0, s>>>(rgb, target, w, h, win, work, partials);
    double count = 3.0 * (double)w * (double)h;
    cu_loss_sum L = {partials, cuda_loss_partials(w, h), 1.0 / count, (double)ssim_weight, acc, value};
    if (dl_drgb)
        k_ssim_bwd<<<grid, CU_BLOCK, 0, s>>>(rgb, target, w, h, win, work, (float)((1.0 - ssim_weight) / count),
                                              (float)(ssim_weight / count), dl_drgb, L);
    else
        k_loss_finalize<<<1, CU_BLOCK, 0, s>>>(L);
}
