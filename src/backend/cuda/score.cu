/* score.cu — evaluation scores on the GPU: the render quantized to 8 bits as sp_image_quantize
 * does, the exact sum of squared 8-bit differences against the ground truth (PSNR), and the SSIM
 * map of the two 8-bit images as sp_ssim_u8 computes it on the host (eval/metrics.c,
 * backend/ref/loss.c): values v / 255 rounded to float, then in double, an 11x11 Gaussian window
 * (σ 1.5, zero padding) applied as a horizontal then a vertical 11-tap sum in ascending tap
 * order, and the same formula. Every double operation is an explicit _rn intrinsic, so nothing is
 * fused into an FMA and each pixel's SSIM is the host's bit for bit; only the order of the final
 * sum differs (per-block partials in a fixed tree order, added on the host in block order), so
 * the mean is deterministic and within rounding of the host's. */
#include "backend/cuda/cuda_internal.h"

extern "C" {
#include "backend/ref/loss.h"
}

#define SW 11
#define SR 5
#define STX 32              /* output tile: 32 columns */
#define STY 8               /* by 8 rows (256 threads) */
#define SIX (STX + 2 * SR)  /* 42 input columns */
#define SIY (STY + 2 * SR)  /* 18 input rows */

/* The 8-bit quantization of sp_image_quantize, without FMA contraction. */
__device__ static inline uint8_t quant8(float x) {
    float v = __fadd_rn(__fmul_rn(x, 255.0f), 0.5f);
    return (uint8_t)(v < 0.0f ? 0.0f : v > 255.0f ? 255.0f : v);
}

/* p8 = quantized rgb; *sse += Σ (p8 − g8)² (integers: the order does not matter). */
__global__ void k_quant_sse(const float *rgb, const uint8_t *g8, uint8_t *p8, int64_t n, unsigned long long *sse) {
    unsigned long long s = 0;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        uint8_t q = quant8(rgb[i]);
        p8[i] = q;
        int d = (int)q - (int)g8[i];
        s += (unsigned long long)(d * d);
    }
    for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
    if ((threadIdx.x & 31) == 0 && s) atomicAdd(sse, s);
}

typedef struct {
    double g[SW];
} sc_window;

__device__ static inline double unit(uint8_t v) { return (double)__fdiv_rn((float)v, 255.0f); }

/* One 32x8 tile of one channel (blockIdx.z): the five window sums, the SSIM of each pixel, and
 * their sum over the tile (a fixed tree) in partial[(z * gridDim.y + y) * gridDim.x + x]. */
__global__ void __launch_bounds__(STX * STY) k_ssim_tiles(const uint8_t *a8, const uint8_t *b8, int w, int h,
                                                         sc_window win, double *partial) {
    __shared__ double xa[SIY][SIX], xb[SIY][SIX];
    __shared__ double hs[5][SIY][STX];
    __shared__ double red[STX * STY];
    const int c = blockIdx.z, x0 = blockIdx.x * STX - SR, y0 = blockIdx.y * STY - SR;
    const int t = threadIdx.y * STX + threadIdx.x;
    for (int k = t; k < SIY * SIX; k += STX * STY) {
        int r = k / SIX, q = k % SIX, x = x0 + q, y = y0 + r;
        int in = x >= 0 && x < w && y >= 0 && y < h;
        size_t o = in ? ((size_t)y * w + x) * 3 + c : 0;
        xa[r][q] = in ? unit(a8[o]) : 0.0;
        xb[r][q] = in ? unit(b8[o]) : 0.0;
    }
    __syncthreads();
    /* horizontal sums of x, y, x², y², x y (rows outside the image are zeros, as the host's) */
    for (int k = t; k < SIY * STX; k += STX * STY) {
        int r = k / STX, q = k % STX;
        double s[5];
        for (int m = 0; m < 5; m++) s[m] = 0.0;
        for (int j = 0; j < SW; j++) {
            double x = xa[r][q + j], y = xb[r][q + j], g = win.g[j];
            double v[5] = {x, y, __dmul_rn(x, x), __dmul_rn(y, y), __dmul_rn(x, y)};
            for (int m = 0; m < 5; m++) s[m] = j == 0 ? __dmul_rn(g, v[m]) : __dadd_rn(s[m], __dmul_rn(g, v[m]));
        }
        for (int m = 0; m < 5; m++) hs[m][r][q] = s[m];
    }
    __syncthreads();
    const int px = blockIdx.x * STX + threadIdx.x, py = blockIdx.y * STY + threadIdx.y;
    double S = 0.0;
    if (px < w && py < h) {
        double s[5];
        for (int m = 0; m < 5; m++) {
            double acc = __dmul_rn(win.g[0], hs[m][threadIdx.y][threadIdx.x]);
            for (int j = 1; j < SW; j++) acc = __dadd_rn(acc, __dmul_rn(win.g[j], hs[m][threadIdx.y + j][threadIdx.x]));
            s[m] = acc;
        }
        double mx = s[0], my = s[1];
        double vx = __dsub_rn(s[2], __dmul_rn(mx, mx)), vy = __dsub_rn(s[3], __dmul_rn(my, my));
        double cxy = __dsub_rn(s[4], __dmul_rn(mx, my));
        double A = __dadd_rn(__dmul_rn(__dmul_rn(2.0, mx), my), SP_SSIM_C1);
        double B = __dadd_rn(__dmul_rn(2.0, cxy), SP_SSIM_C2);
        double C = __dadd_rn(__dadd_rn(__dmul_rn(mx, mx), __dmul_rn(my, my)), SP_SSIM_C1);
        double D = __dadd_rn(__dadd_rn(vx, vy), SP_SSIM_C2);
        double inv = __ddiv_rn(1.0, __dmul_rn(C, D));
        S = __dmul_rn(__dmul_rn(A, B), inv);
    }
    red[t] = S;
    __syncthreads();
    for (int o = STX * STY / 2; o > 0; o >>= 1) {
        if (t < o) red[t] = __dadd_rn(red[t], red[t + o]);
        __syncthreads();
    }
    if (t == 0) partial[((size_t)c * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x] = red[0];
}

int cuda_score_partials(int w, int h) { return ((w + STX - 1) / STX) * ((h + STY - 1) / STY) * 3; }

void cuda_score_image(const float *rgb, const uint8_t *g8, uint8_t *p8, int w, int h, const double window[11],
                      double *partial, unsigned long long *sse, cudaStream_t s) {
    int64_t n = (int64_t)w * h * 3;
    if (n <= 0) return;
    cudaMemsetAsync(sse, 0, sizeof *sse, s);
    unsigned blocks = CU_GRID(n, 256);
    if (blocks > 4096) blocks = 4096;
    k_quant_sse<<<blocks, 256, 0, s>>>(rgb, g8, p8, n, sse);
    sc_window win;
    for (int k = 0; k < SW; k++) win.g[k] = window[k];
    dim3 grid((w + STX - 1) / STX, (h + STY - 1) / STY, 3), block(STX, STY);
    k_ssim_tiles<<<grid, block, 0, s>>>(p8, g8, w, h, win, partial);
}
