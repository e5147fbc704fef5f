#version 450
// loss_h.comp — `loss`, step 1: horizontal window sums (11 taps, zero padding) of x, y, x², y², x y
// per pixel and channel (x render, y target): H[p][channel][5]. Words: 0 width, 1 height, 8-18 window.
#include "common.glsl"

layout(std430, binding = 0) readonly buffer B0 { float rgb[]; };
layout(std430, binding = 1) readonly buffer B1 { float target[]; };
layout(std430, binding = 2) writeonly buffer B2 { float H[]; };

void main() {
    uint p = gid();
    int w = pi(0), h = pi(1);
    if (p >= uint(w * h)) return;
    int x = int(p) % w, y = int(p) / w;
    for (int c = 0; c < 3; c++) {
        float s[5] = float[5](0.0, 0.0, 0.0, 0.0, 0.0);
        for (int k = 0; k < 11; k++) {
            int xx = x + k - 5;
            if (xx < 0 || xx >= w) continue;
            uint q = uint(y * w + xx);
            float a = rgb[3 * q + c], b = target[3 * q + c], g = pf(8 + k);
            s[0] += g * a; s[1] += g * b; s[2] += g * (a * a); s[3] += g * (b * b); s[4] += g * (a * b);
        }
        for (int m = 0; m < 5; m++) H[15 * p + 5 * c + m] = s[m];
    }
}
