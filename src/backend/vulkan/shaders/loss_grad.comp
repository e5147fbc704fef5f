#version 450
// loss_grad.comp — `loss`, backward: one workgroup per 32x32 pixel tile and colour channel
// (loss.glsl). The three G maps of loss_ssim.comp over the tile's 42x42 region go into shared
// memory, their horizontal window sums are formed for the region's 42 rows (the window's transpose
// is itself) and written over the region, and the vertical sums go through the chain rule for x,
// x² and x y; with the L1 gradient ±(1 - lambda) / N (the sign of r - t, the target read or
// composited as in loss_ssim.comp) that is dl_drgb, written once per value. Workgroup 0 then sums
// the forward pass's per-workgroup partials (each invocation a strided run in order, then
// wg_sum's fixed order) into the step's slot of the loss ring. Shared memory: 3 x 42 x 43 floats
// (21672 bytes).
#define LOSS_SHARED (3 * LE * LEP)
#include "loss.glsl"

layout(std430, binding = 3) readonly buffer B3 { float Gm[]; };
layout(std430, binding = 4) writeonly buffer B4 { float dl_drgb[]; };
layout(std430, binding = 5) readonly buffer B5 { vec2 part[]; };
layout(std430, binding = 6) buffer B6 { vec2 ring[]; };

#if LNSEG > 2 * WG || 3 * LE * LTP > LOSS_SHARED || 2 * WG + 2 * (WG / 16) > LOSS_SHARED
#error "loss_grad: the tiling does not fit the workgroup"
#endif

void main() {
    int x0, y0, c;
    if (!loss_tile(x0, y0, c)) return;
    int w = pi(0), h = pi(1), t = int(gl_LocalInvocationIndex);
    uint plane = uint(w) * uint(h);

    // the region of the three maps: every load issued before the first store
    float gv[3][LLOADS];
    [[unroll]] for (int i = 0; i < LLOADS; i++) {
        int p = region_pixel(region_place(i), x0, y0);
        uint q = p >= 0 ? uint(p) : 0u;
        [[unroll]] for (int m = 0; m < 3; m++) {
            float a = Gm[uint(3 * m + c) * plane + q];
            gv[m][i] = p >= 0 ? a : 0.0;
        }
    }
    [[unroll]] for (int i = 0; i < LLOADS; i++) {
        int pl = region_place(i);
        if (pl >= 0) {
            int o = (pl / LE) * LEP + pl % LE;
            [[unroll]] for (int m = 0; m < 3; m++) sm[m * LE * LEP + o] = gv[m][i];
        }
    }
    // this invocation's pixels (column lx of the tile, rows ly0 .. ly0 + 3) of x and y, loaded
    // while the window sums run
    int lx = t % LT, ly0 = (t / LT) * LROWS, px = x0 + lx;
    float xs[LROWS], ys[LROWS];
    [[unroll]] for (int o = 0; o < LROWS; o++) {
        int py = y0 + ly0 + o;
        uint q = px < w && py < h ? uint(py * w + px) : 0u;
        xs[o] = rgb[3u * q + uint(c)];
        ys[o] = target_at(q, c);
    }
    barrier();

    // horizontal sums of the three maps, up to two segments per invocation, kept in registers
    float hs[2][LSEG][3];
    [[unroll]] for (int it = 0; it < 2; it++) {
        [[unroll]] for (int o = 0; o < LSEG; o++)
            [[unroll]] for (int m = 0; m < 3; m++) hs[it][o][m] = 0.0;
        int s = t + it * WG;
        if (s < LNSEG) {
            int base = (s / (LT / LSEG)) * LEP + (s % (LT / LSEG)) * LSEG;
            [[unroll]] for (int j = 0; j < LHALF; j++) {
                float r[3];
                [[unroll]] for (int m = 0; m < 3; m++) r[m] = sm[m * LE * LEP + base + j];
                [[unroll]] for (int o = 0; o < LSEG; o++) {
                    int k = j - o;
                    if (k >= 0 && k <= 2 * LR) {
                        float gk = win(k);
                        [[unroll]] for (int m = 0; m < 3; m++) hs[it][o][m] += gk * r[m];
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
                [[unroll]] for (int m = 0; m < 3; m++) sm[m * LE * LTP + base + o] = hs[it][o][m];
        }
    }
    barrier();

    // vertical sums: four outputs of column lx, then the chain rule and the L1 term
    float v[LROWS][3];
    [[unroll]] for (int o = 0; o < LROWS; o++)
        [[unroll]] for (int m = 0; m < 3; m++) v[o][m] = 0.0;
    [[unroll]] for (int j = 0; j < LROWS + 2 * LR; j++) {
        float r[3];
        [[unroll]] for (int m = 0; m < 3; m++) r[m] = sm[m * LE * LTP + (ly0 + j) * LTP + lx];
        [[unroll]] for (int o = 0; o < LROWS; o++) {
            int k = j - o;
            if (k >= 0 && k <= 2 * LR) {
                float gk = win(k);
                [[unroll]] for (int m = 0; m < 3; m++) v[o][m] += gk * r[m];
            }
        }
    }
    float l1g = pf(3);
    [[unroll]] for (int o = 0; o < LROWS; o++) {
        int py = y0 + ly0 + o;
        if (px >= w || py >= h) continue;
        float d = xs[o] - ys[o];
        float g = d > 0.0 ? l1g : d < 0.0 ? -l1g : 0.0;
        dl_drgb[3u * uint(py * w + px) + uint(c)] = g + (v[o][0] + 2.0 * xs[o] * v[o][1] + ys[o] * v[o][2]);
    }

    // the step's loss sums: workgroup 0, after the forward pass has written every partial
    if (gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x == 0u) {
        barrier(); // every read of the sums is done: wg_sum uses the floats
        vec2 acc = vec2(0.0);
        for (uint i = uint(t); i < pc.u[25]; i += WG) acc += part[i];
        vec2 tot = wg_sum(acc);
        if (t == 0) ring[pc.u[24]] = tot;
    }
}
