#version 450
// score.comp — backend.h's `score`: the evaluation's scores of one render without the render
// leaving the device. One workgroup per 16x16 output tile and colour channel (workgroup g: tile
// g / 3, channel g % 3), as in CUDA's score.cu and on the host (eval/metrics.c, backend/ref/loss.c):
// - the render quantized to 8 bits as sp_image_quantize does (x 255 + 0.5 in float, clamped,
//   truncated), for the tile and its 5-pixel border (a border value is quantized again by each
//   workgroup that reads it: the same float gives the same byte); the tile's own bytes go into p8
//   when asked for (words 4, 5), OR-ed into their word (three channels' workgroups share a word;
//   the host zeroes p8 first), and their squared differences with the ground truth g8 are summed;
// - SSIM on v / 255 in double: the values from the host's table (binding 2: v / 255 rounded to
//   float as sp_ssim_u8 takes it, the window, C1 and C2), so that no division by 255 is left to a
//   driver; zero outside the image (the window's zero padding); the horizontal sums of x, y, x²,
//   y², x y over the tile's 26 rows, then the vertical ones, each over the 11 taps in ascending
//   order, then the host's formula. Every operation `precise` (no fused multiply-add; built
//   without spirv-opt, which loses that in the loops it unrolls: Makefile, GLSL_OPT), so each
//   pixel's SSIM is the host's bit for bit where the driver's double division is correctly
//   rounded (ddiv below), and within about 1e-13 relative of it where the division is as loose as
//   Vulkan allows;
// - the workgroup's SSIM sum and squared-difference sum (an integer, exact in a double) by a
//   fixed tree over its 256 invocations into part[g]: the host adds the partials in workgroup
//   order, so a view's score repeats bit for bit.
// Needs shaderFloat64: made only on a device that has it (vk_ctx.c); elsewhere the evaluation
// scores on the host. Words: 0 width, 1 height, 2 tiles across, 3 workgroups (tiles x 3),
// 4 p8 wanted, 5 where p8 starts in binding 1 (words). Shared memory: 3432 doubles (27456 bytes).
#include "common.glsl"
#include "score_const.glsl"

#define ST VK_SCORE_TILE
#define SR 5                           // window radius
#define SW (2 * SR + 1)                // window taps
#define SE (ST + 2 * SR)               // 26: input region edge
#define SLOADS ((SE * SE + WG - 1) / WG) // 3: region values per invocation
#define SHORZ ((SE * ST + WG - 1) / WG)  // 2: horizontal outputs per invocation
#define SY (SE * SE)                   // where the ground truth's region starts in sm
#define SH (2 * SE * SE)               // where the horizontal sums start: map m, row r, column q at SH + (m SE + r) ST + q

#if ST * ST != WG
#error "score: one invocation per output pixel"
#endif

layout(std430, binding = 0) readonly buffer B0 { float rgb[]; };
layout(std430, binding = 1) buffer B1 { uint u8[]; }; // g8's bytes, four a word, then p8's
layout(std430, binding = 2) buffer B2 {
    double tab[VK_SCORE_TAB];
    dvec2 part[]; // per workgroup: SSIM sum, squared-difference sum
};

shared double sm[SH + 5 * SE * ST];

uint quant8(float x) {
    precise float v = x * 255.0 + 0.5;
    return uint(v < 0.0 ? 0.0 : v > 255.0 ? 255.0 : v);
}

// a / b rounded as IEEE division is: common.glsl's fdiv in double (Vulkan asks of a double
// division only single precision's 2.5 ulp), the residual found with Dekker's split at 2^27 + 1.
double ddiv(double a, double b) {
    precise double q = a / b;
    precise double cq = 134217729.0lf * q, qh = cq - (cq - q), ql = q - qh;
    precise double cb = 134217729.0lf * b, bh = cb - (cb - b), bl = b - bh;
    precise double p = q * b;
    precise double e = ((qh * bh - p) + qh * bl + ql * bh) + ql * bl; // q * b == p + e exactly
    precise double r = (a - p) - e;
    precise double res = q + r / b;
    return res;
}

void main() {
    uint g = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    if (g >= pc.u[3]) return; // a surplus workgroup (the dispatch spread over y)
    int w = pi(0), h = pi(1), t = int(gl_LocalInvocationIndex), c = int(g % 3u);
    uint tile = g / 3u;
    int x0 = int(tile % pc.u[2]) * ST, y0 = int(tile / pc.u[2]) * ST;
    double win[SW];
    [[unroll]] for (int j = 0; j < SW; j++) win[j] = tab[VK_SCORE_WIN + j];

    // the region: render bytes a, ground truth bytes b (0 outside the image), as v / 255
    uint sse = 0u;
    [[unroll]] for (int i = 0; i < SLOADS; i++) {
        int pl = t + i * WG;
        if (pl >= SE * SE) break;
        int r = pl / SE, q = pl % SE, x = x0 - SR + q, y = y0 - SR + r;
        uint a = 0u, b = 0u;
        if (x >= 0 && x < w && y >= 0 && y < h) {
            uint at = (uint(y) * uint(w) + uint(x)) * 3u + uint(c);
            a = quant8(rgb[at]);
            b = (u8[at >> 2] >> (8u * (at & 3u))) & 255u;
            if (r >= SR && r < SR + ST && q >= SR && q < SR + ST) { // the tile's own
                int d = int(a) - int(b);
                sse += uint(d * d);
                if (pc.u[4] != 0u) atomicOr(u8[pc.u[5] + (at >> 2)], a << (8u * (at & 3u)));
            }
        }
        sm[pl] = tab[a];
        sm[SY + pl] = tab[b];
    }
    barrier();

    // horizontal sums of x, y, x², y², x y: row r of the region, column q of the tile
    [[unroll]] for (int i = 0; i < SHORZ; i++) {
        int o = t + i * WG;
        if (o >= SE * ST) break;
        int r = o / ST, q = o % ST;
        precise double s[5];
        [[unroll]] for (int j = 0; j < SW; j++) {
            double x = sm[r * SE + q + j], y = sm[SY + r * SE + q + j];
            precise double v[5];
            v[0] = x, v[1] = y, v[2] = x * x, v[3] = y * y, v[4] = x * y;
            if (j == 0) {
                [[unroll]] for (int m = 0; m < 5; m++) s[m] = win[0] * v[m];
            } else {
                [[unroll]] for (int m = 0; m < 5; m++) s[m] = s[m] + win[j] * v[m];
            }
        }
        [[unroll]] for (int m = 0; m < 5; m++) sm[SH + (m * SE + r) * ST + q] = s[m];
    }
    barrier();

    // this invocation's pixel: the vertical sums, then its SSIM (backend/ref/loss.c's ssim_row)
    int lx = t % ST, ly = t / ST;
    precise double S = 0.0lf;
    if (x0 + lx < w && y0 + ly < h) {
        precise double v[5];
        [[unroll]] for (int m = 0; m < 5; m++) {
            v[m] = win[0] * sm[SH + (m * SE + ly) * ST + lx];
            [[unroll]] for (int j = 1; j < SW; j++) v[m] = v[m] + win[j] * sm[SH + (m * SE + ly + j) * ST + lx];
        }
        double mx = v[0], my = v[1], C1 = tab[VK_SCORE_C1], C2 = tab[VK_SCORE_C2];
        precise double vx = v[2] - mx * mx, vy = v[3] - my * my, cxy = v[4] - mx * my;
        precise double A = 2.0lf * mx * my + C1, B = 2.0lf * cxy + C2;
        precise double C = mx * mx + my * my + C1, D = vx + vy + C2;
        S = A * B * ddiv(1.0lf, C * D);
    }

    // the workgroup's sums, a fixed tree (the region and the sums are read by now)
    barrier();
    sm[t] = S;
    sm[WG + t] = double(sse);
    barrier();
    for (int o = WG / 2; o > 0; o >>= 1) {
        if (t < o) {
            sm[t] = sm[t] + sm[t + o];
            sm[WG + t] = sm[WG + t] + sm[WG + t + o];
        }
        barrier();
    }
    if (t == 0) part[g] = dvec2(sm[0], sm[WG]);
}
