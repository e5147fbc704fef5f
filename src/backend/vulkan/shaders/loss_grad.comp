#version 450
// loss_grad.comp — `loss`, backward: one workgroup per 16x16 pixel tile. Per channel, the three G
// maps of loss_ssim.comp over the tile and its 5-pixel border go into shared memory (zero outside
// the image), their horizontal window sums are formed for the tile's 26 rows (the window's
// transpose is itself), and the vertical sums of those go through the chain rule for x, x² and
// x y into dl_drgb. Words: 0 width, 1 height, 6 tiles across, 8-18 window.
#include "common.glsl"

layout(std430, binding = 0) readonly buffer B0 { float rgb[]; };
layout(std430, binding = 1) readonly buffer B1 { float target[]; };
layout(std430, binding = 2) readonly buffer B2 { float Gm[]; };
layout(std430, binding = 3) buffer B3 { float dl_drgb[]; };

#define T 16
#define R 5
#define E (T + 2 * R)
shared float sg[3][E * E];
shared float sh[3][E * T];

void main() {
    int w = pi(0), h = pi(1), tx = pi(6);
    uint g = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    int th = (h + T - 1) / T;
    if (g >= uint(tx * th)) return; // whole workgroups only
    int x0 = int(g % uint(tx)) * T, y0 = int(g / uint(tx)) * T;
    int t = int(gl_LocalInvocationIndex), lx = t % T, ly = t / T;
    int x = x0 + lx, y = y0 + ly;
    bool inside = x < w && y < h;
    uint p = uint(y * w + x);
    for (int c = 0; c < 3; c++) {
        for (int i = t; i < E * E; i += WG) {
            int xx = x0 - R + i % E, yy = y0 - R + i / E;
            bool in_img = xx >= 0 && xx < w && yy >= 0 && yy < h;
            uint q = uint(yy * w + xx);
            [[unroll]] for (int m = 0; m < 3; m++) sg[m][i] = in_img ? Gm[9 * q + 3 * c + m] : 0.0;
        }
        barrier();
        for (int i = t; i < E * T; i += WG) {
            int r = i / T, cx = i % T;
            float s[3] = float[3](0.0, 0.0, 0.0);
            [[unroll]] for (int k = 0; k < 11; k++) {
                float gk = pf(8 + k);
                [[unroll]] for (int m = 0; m < 3; m++) s[m] += gk * sg[m][r * E + cx + k];
            }
            [[unroll]] for (int m = 0; m < 3; m++) sh[m][i] = s[m];
        }
        barrier();
        if (inside) {
            float s[3] = float[3](0.0, 0.0, 0.0);
            [[unroll]] for (int k = 0; k < 11; k++) {
                float gk = pf(8 + k);
                [[unroll]] for (int m = 0; m < 3; m++) s[m] += gk * sh[m][(ly + k) * T + lx];
            }
            float d = s[0] + 2.0 * rgb[3 * p + c] * s[1] + target[3 * p + c] * s[2];
            dl_drgb[3 * p + c] += d;
        }
        barrier();
    }
}
