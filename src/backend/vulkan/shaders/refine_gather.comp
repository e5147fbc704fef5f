#version 450
// refine_gather.comp — what the refined stores take from the current ones on the device
// (vk_refine.c): output Gaussian o takes the parameter SH row of Gaussian src[2o] and, when
// src[2o + 1] > 0, the whole Adam moments (both stores, every field) of Gaussian src[2o + 1] - 1;
// zero otherwise (a new clone or split child), and a zero opacity moment after an opacity reset.
// The parameters' small fields come from the host, which decided them. Output into tmp, F = 11 + 3K
// floats per Gaussian: the parameter SH rows [n][3K], then per moment store the five regions one
// after another, [n][3] means, [n][3] log-scales, [n][4] quaternions, [n] opacity, [n][3K] SH.
// Args: n (outputs), 3K, the five region offsets (floats) of the current stores, opacity reset.
#include "common.glsl"

layout(std430, binding = 0) readonly buffer B0 { float P[]; };
layout(std430, binding = 1) readonly buffer B1 { float M1[]; };
layout(std430, binding = 2) readonly buffer B2 { float M2[]; };
layout(std430, binding = 3) readonly buffer B3 { uint src[]; };
layout(std430, binding = 4) writeonly buffer B4 { float tmp[]; };

void main() {
    uint x = gid(), n = pc.u[ARG(0)], k3 = pc.u[ARG(1)], F = 11u + k3;
    if (x >= n * F) return;
    uint o = x / F, f = x - o * F, ps = src[2 * o], ms = src[2 * o + 1];
    // field f of a Gaussian: region r, its width and the place within it
    uint r = f < 3u ? 0u : f < 6u ? 1u : f < 10u ? 2u : f < 11u ? 3u : 4u;
    uint first = r == 0u ? 0u : r == 1u ? 3u : r == 2u ? 6u : r == 3u ? 10u : 11u;
    uint width = r == 0u ? 3u : r == 1u ? 3u : r == 2u ? 4u : r == 3u ? 1u : k3;
    uint sub = f - first, region = pc.u[ARG(2) + int(r)];
    uint out_at = n * k3 + first * n + o * width + sub; // in the first moments' block of n * F floats
    float m1 = 0.0, m2 = 0.0;
    if (ms > 0u && !(r == 3u && pc.u[ARG(7)] != 0u)) {
        uint at = region + (ms - 1u) * width + sub;
        m1 = M1[at];
        m2 = M2[at];
    }
    tmp[out_at] = m1;
    tmp[out_at + n * F] = m2;
    if (r == 4u) tmp[o * k3 + sub] = P[region + ps * k3 + sub];
}
