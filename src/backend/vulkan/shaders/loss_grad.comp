#version 450
// loss_grad.comp — `loss`, step 4: vertical window sums of GH, then the chain rule through x, x²
// and x y, added to dl_drgb. Words: 0 width, 1 height, 8-18 window.
#include "common.glsl"

layout(std430, binding = 0) readonly buffer B0 { float rgb[]; };
layout(std430, binding = 1) readonly buffer B1 { float target[]; };
layout(std430, binding = 2) readonly buffer B2 { float GH[]; };
layout(std430, binding = 3) buffer B3 { float dl_drgb[]; };

void main() {
    uint p = gid();
    int w = pi(0), h = pi(1);
    if (p >= uint(w * h)) return;
    int x = int(p) % w, y = int(p) / w;
    float s[9] = float[9](0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
    for (int k = 0; k < 11; k++) {
        int yy = y + k - 5;
        if (yy < 0 || yy >= h) continue;
        uint q = uint(yy * w + x);
        float g = pf(8 + k);
        for (int m = 0; m < 9; m++) s[m] += g * GH[9 * q + m];
    }
    for (int c = 0; c < 3; c++) {
        float d = s[3 * c] + 2.0 * rgb[3 * p + c] * s[3 * c + 1] + target[3 * p + c] * s[3 * c + 2];
        dl_drgb[3 * p + c] += d;
    }
}
