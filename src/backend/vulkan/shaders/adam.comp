#version 450
// adam.comp — stage `adam`: one bias-corrected Adam update over every parameter group of the
// parameter buffer at once (backend/ref/adam.c). Five regions (start, length) with their own
// learning rates; in the SH region the first 3 floats of each Gaussian (DC) take lr_dc.
// Words (no camera here): 0-5 lr means, log_scales, quats, opacity, sh dc, sh rest;
// 6 beta1, 7 beta2, 8 eps, 9 1-beta1^t, 10 1-beta2^t; 11-20 (start, length) x 5; 21 floats per
// Gaussian's SH (3K); 22 total floats to visit; 23 sparse (1: an element whose gradient is exactly
// 0 keeps its value and moments, adam.sparse).
#include "common.glsl"

layout(std430, binding = 0) buffer B0 { float P[]; };
layout(std430, binding = 1) readonly buffer B1 { float Gr[]; };
layout(std430, binding = 2) buffer B2 { float M1[]; };
layout(std430, binding = 3) buffer B3 { float M2[]; };

void main() {
    uint e = gid();
    if (e >= pc.u[22]) return;
    float lr = -1.0;
    for (int r = 0; r < 5; r++) {
        uint s = pc.u[11 + 2 * r], l = pc.u[12 + 2 * r];
        if (e >= s && e < s + l) {
            lr = pf(r);
            if (r == 4 && (e - s) % pc.u[21] >= 3u) lr = pf(5);
        }
    }
    if (lr < 0.0) return;
    float b1 = pf(6), b2 = pf(7), eps = pf(8), bc1 = pf(9), bc2 = pf(10);
    float g = Gr[e];
    if (pc.u[23] != 0u && g == 0.0) return;
    float mi = b1 * M1[e] + (1.0 - b1) * g;
    float vi = b2 * M2[e] + (1.0 - b2) * g * g;
    M1[e] = mi;
    M2[e] = vi;
    P[e] -= lr * (mi / bc1) / (sqrt(vi / bc2) + eps);
}
