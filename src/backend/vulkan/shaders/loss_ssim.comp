#version 450
// loss_ssim.comp — `loss`, forward: one workgroup per 16x16 pixel tile. Per channel, the render x
// and the target y of the tile and its 5-pixel border go into shared memory (zero outside the
// image: the window's zero padding), the horizontal window sums of x, y, x², y², x y are formed
// for the tile's 26 rows, and the vertical sums of those give each pixel's SSIM terms
// (backend/ref/loss.c). Writes the per-pixel sums of |r - t| and of S (for the loss), the L1
// gradient into dl_drgb, and the maps G = dL/dS · dS/d(mx, sxx, sxy) for the SSIM gradient
// (loss_grad.comp). Words: 0 width, 1 height, 2 dL/dS (-lambda / N), 3 L1 gradient
// (1 - lambda) / N, 4 C1, 5 C2, 6 tiles across, 8-18 window.
#include "common.glsl"

layout(std430, binding = 0) readonly buffer B0 { float rgb[]; };
layout(std430, binding = 1) readonly buffer B1 { float target[]; };
layout(std430, binding = 3) writeonly buffer B3 { float Gm[]; };
layout(std430, binding = 4) writeonly buffer B4 { float dl_drgb[]; };
layout(std430, binding = 5) writeonly buffer B5 { float part[]; };

#define T 16
#define R 5
#define E (T + 2 * R) // 26: tile and border
shared float sx[E * E], sy[E * E];
shared float sh[5][E * T]; // horizontal sums, rows of the border included

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
    float kS = pf(2), l1g = pf(3), C1 = pf(4), C2 = pf(5);
    float l1 = 0.0, ssum = 0.0;
    for (int c = 0; c < 3; c++) {
        for (int i = t; i < E * E; i += WG) {
            int xx = x0 - R + i % E, yy = y0 - R + i / E;
            bool in_img = xx >= 0 && xx < w && yy >= 0 && yy < h;
            uint q = uint(yy * w + xx);
            sx[i] = in_img ? rgb[3 * q + c] : 0.0;
            sy[i] = in_img ? target[3 * q + c] : 0.0;
        }
        barrier();
        for (int i = t; i < E * T; i += WG) {
            int r = i / T, cx = i % T;
            float s[5] = float[5](0.0, 0.0, 0.0, 0.0, 0.0);
            [[unroll]] for (int k = 0; k < 11; k++) {
                float a = sx[r * E + cx + k], b = sy[r * E + cx + k], gk = pf(8 + k);
                s[0] += gk * a; s[1] += gk * b; s[2] += gk * (a * a); s[3] += gk * (b * b); s[4] += gk * (a * b);
            }
            [[unroll]] for (int m = 0; m < 5; m++) sh[m][i] = s[m];
        }
        barrier();
        if (inside) {
            float s[5] = float[5](0.0, 0.0, 0.0, 0.0, 0.0);
            [[unroll]] for (int k = 0; k < 11; k++) {
                float gk = pf(8 + k);
                [[unroll]] for (int m = 0; m < 5; m++) s[m] += gk * sh[m][(ly + k) * T + lx];
            }
            float mx = s[0], my = s[1];
            float vx = s[2] - mx * mx, vy = s[3] - my * my, cxy = s[4] - mx * my;
            float A = 2.0 * mx * my + C1, B = 2.0 * cxy + C2;
            float C = mx * mx + my * my + C1, D = vx + vy + C2;
            float inv = 1.0 / (C * D), S = A * B * inv;
            ssum += S;
            Gm[9 * p + 3 * c] = kS * 2.0 * (my * (B - A) - mx * S * (D - C)) * inv;
            Gm[9 * p + 3 * c + 1] = -kS * S * C * inv;
            Gm[9 * p + 3 * c + 2] = kS * 2.0 * A * inv;
            float d = sx[(ly + R) * E + lx + R] - sy[(ly + R) * E + lx + R];
            l1 += abs(d);
            dl_drgb[3 * p + c] = d > 0.0 ? l1g : d < 0.0 ? -l1g : 0.0;
        }
        barrier(); // the next channel overwrites shared memory
    }
    if (inside) {
        part[2 * p] = l1;
        part[2 * p + 1] = ssum;
    }
}
