#version 450
// loss_ssim.comp — `loss`, forward: one workgroup per 32x32 pixel tile and colour channel
// (loss.glsl). The render x and the target y of the tile's 42x42 region go into shared memory
// (the target read from the float target buffer, or composited here from the view's RGBA8 words
// over the step's background: no target image is written in a training step); the horizontal
// window sums of x, y, x², y², x y are formed for the region's 42 rows, four outputs per
// invocation, and written over the region (its values are in registers by then); the vertical sums
// give each pixel's SSIM terms (backend/ref/loss.c), four pixels of a column per invocation. Writes
// the maps G = dL/dS · dS/d(mx, sxx, sxy) for the gradient pass (loss_grad.comp), planar:
// Gm[(map * 3 + channel) * W * H + pixel], and the workgroup's sums of |r - t| and of S (in a fixed
// order) into part[workgroup]. Shared memory: 5 x 42 x 33 floats (27720 bytes).
#define LOSS_SHARED (5 * LE * LTP)
#include "loss.glsl"

layout(std430, binding = 3) writeonly buffer B3 { float Gm[]; };
layout(std430, binding = 5) writeonly buffer B5 { vec2 part[]; };

#if LNSEG > 2 * WG || 2 * LE * LEP > LOSS_SHARED || 2 * WG + 2 * (WG / 16) > LOSS_SHARED
#error "loss_ssim: the tiling does not fit the workgroup"
#endif

void main() {
    int x0, y0, c;
    if (!loss_tile(x0, y0, c)) return;
    int w = pi(0), h = pi(1), t = int(gl_LocalInvocationIndex);
    const int YOFF = LE * LEP; // where the target's region starts in sm

    // the region of x and y: every load issued before the first store
    float xv[LLOADS], yv[LLOADS];
    [[unroll]] for (int i = 0; i < LLOADS; i++) {
        int p = region_pixel(region_place(i), x0, y0);
        uint q = p >= 0 ? uint(p) : 0u;
        float a = rgb[3u * q + uint(c)], b = target_at(q, c);
        xv[i] = p >= 0 ? a : 0.0;
        yv[i] = p >= 0 ? b : 0.0;
    }
    [[unroll]] for (int i = 0; i < LLOADS; i++) {
        int pl = region_place(i);
        if (pl >= 0) {
            int o = (pl / LE) * LEP + pl % LE;
            sm[o] = xv[i];
            sm[YOFF + o] = yv[i];
        }
    }
    barrier();

    // this invocation's pixels: column lx of the tile, rows ly0 .. ly0 + 3; their L1 terms
    int lx = t % LT, ly0 = (t / LT) * LROWS, px = x0 + lx;
    float l1 = 0.0;
    [[unroll]] for (int o = 0; o < LROWS; o++) {
        int at = (ly0 + o + LR) * LEP + lx + LR;
        if (px < w && y0 + ly0 + o < h) l1 += abs(sm[at] - sm[YOFF + at]);
    }

    // horizontal sums of x, y, x², y², x y: segment s is row s / 8 of the region, columns
    // 4 (s % 8) .. + 3 of the tile; up to two segments per invocation, kept in registers
    float hs[2][LSEG][5];
    [[unroll]] for (int it = 0; it < 2; it++) {
        [[unroll]] for (int o = 0; o < LSEG; o++)
            [[unroll]] for (int m = 0; m < 5; m++) hs[it][o][m] = 0.0;
        int s = t + it * WG;
        if (s < LNSEG) {
            int base = (s / (LT / LSEG)) * LEP + (s % (LT / LSEG)) * LSEG;
            [[unroll]] for (int j = 0; j < LHALF; j++) {
                float a = sm[base + j], b = sm[YOFF + base + j];
                float aa = a * a, bb = b * b, ab = a * b;
                [[unroll]] for (int o = 0; o < LSEG; o++) {
                    int k = j - o;
                    if (k >= 0 && k <= 2 * LR) {
                        float gk = win(k);
                        hs[it][o][0] += gk * a;
                        hs[it][o][1] += gk * b;
                        hs[it][o][2] += gk * aa;
                        hs[it][o][3] += gk * bb;
                        hs[it][o][4] += gk * ab;
                    }
                }
            }
        }
    }
    barrier(); // every read of the region is done: the sums go over it
    [[unroll]] for (int it = 0; it < 2; it++) {
        int s = t + it * WG;
        if (s < LNSEG) {
            int base = (s / (LT / LSEG)) * LTP + (s % (LT / LSEG)) * LSEG;
            [[unroll]] for (int o = 0; o < LSEG; o++)
                [[unroll]] for (int m = 0; m < 5; m++) sm[m * LE * LTP + base + o] = hs[it][o][m];
        }
    }
    barrier();

    // vertical sums: four outputs of column lx
    float v[LROWS][5];
    [[unroll]] for (int o = 0; o < LROWS; o++)
        [[unroll]] for (int m = 0; m < 5; m++) v[o][m] = 0.0;
    [[unroll]] for (int j = 0; j < LROWS + 2 * LR; j++) {
        float r[5];
        [[unroll]] for (int m = 0; m < 5; m++) r[m] = sm[m * LE * LTP + (ly0 + j) * LTP + lx];
        [[unroll]] for (int o = 0; o < LROWS; o++) {
            int k = j - o;
            if (k >= 0 && k <= 2 * LR) {
                float gk = win(k);
                [[unroll]] for (int m = 0; m < 5; m++) v[o][m] += gk * r[m];
            }
        }
    }

    float kS = pf(2), C1 = pf(4), C2 = pf(5), ssum = 0.0;
    uint plane = uint(w) * uint(h);
    [[unroll]] for (int o = 0; o < LROWS; o++) {
        int py = y0 + ly0 + o;
        if (px >= w || py >= h) continue;
        uint p = uint(py * w + px);
        float mx = v[o][0], my = v[o][1];
        float vx = v[o][2] - mx * mx, vy = v[o][3] - my * my, cxy = v[o][4] - mx * my;
        float A = 2.0 * mx * my + C1, B = 2.0 * cxy + C2;
        float C = mx * mx + my * my + C1, D = vx + vy + C2;
        float inv = 1.0 / (C * D), S = A * B * inv;
        ssum += S;
        Gm[uint(c) * plane + p] = kS * 2.0 * (my * (B - A) - mx * S * (D - C)) * inv;
        Gm[uint(3 + c) * plane + p] = -kS * S * C * inv;
        Gm[uint(6 + c) * plane + p] = kS * 2.0 * A * inv;
    }

    barrier(); // every read of the sums is done: wg_sum uses the floats
    vec2 tot = wg_sum(vec2(l1, ssum));
    if (t == 0) part[gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x] = tot;
}
