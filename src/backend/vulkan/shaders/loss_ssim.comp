#version 450
// loss_ssim.comp — `loss`, step 2: vertical window sums of H give the SSIM terms of each pixel and
// channel (backend/cpu/loss.c); writes the per-pixel sums of |r - t| and of S (for the loss), the
// L1 gradient into dl_drgb, and the maps G = dL/dS · dS/d(mx, sxx, sxy) for the SSIM gradient.
// Words: 0 width, 1 height, 2 dL/dS (-lambda / N), 3 L1 gradient (1 - lambda) / N, 4 C1, 5 C2, 8-18 window.
#include "common.glsl"

layout(std430, binding = 0) readonly buffer B0 { float rgb[]; };
layout(std430, binding = 1) readonly buffer B1 { float target[]; };
layout(std430, binding = 2) readonly buffer B2 { float H[]; };
layout(std430, binding = 3) writeonly buffer B3 { float Gm[]; };
layout(std430, binding = 4) writeonly buffer B4 { float dl_drgb[]; };
layout(std430, binding = 5) writeonly buffer B5 { float part[]; };

void main() {
    uint p = gid();
    int w = pi(0), h = pi(1);
    if (p >= uint(w * h)) return;
    int x = int(p) % w, y = int(p) / w;
    float kS = pf(2), l1g = pf(3), C1 = pf(4), C2 = pf(5);
    float l1 = 0.0, ssum = 0.0;
    for (int c = 0; c < 3; c++) {
        float s[5] = float[5](0.0, 0.0, 0.0, 0.0, 0.0);
        for (int k = 0; k < 11; k++) {
            int yy = y + k - 5;
            if (yy < 0 || yy >= h) continue;
            uint q = uint(yy * w + x);
            float g = pf(8 + k);
            for (int m = 0; m < 5; m++) s[m] += g * H[15 * q + 5 * c + m];
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
        float d = rgb[3 * p + c] - target[3 * p + c];
        l1 += abs(d);
        dl_drgb[3 * p + c] = d > 0.0 ? l1g : d < 0.0 ? -l1g : 0.0;
    }
    part[2 * p] = l1;
    part[2 * p + 1] = ssum;
}
