#version 450
// refine_gather.comp — the SH rows of the refined stores (vk_refine.c): output Gaussian o takes
// the parameter SH of Gaussian src[2o] and, when src[2o + 1] > 0, the Adam moments' SH of
// Gaussian src[2o + 1] - 1 (zero otherwise: a new clone or split child). The rows go to tmp,
// parameters then first moments then second moments, each [n][3K]; the host copies them back.
// Args: n (output Gaussians), 3K, SH region offset (floats) in the current stores.
#include "common.glsl"

layout(std430, binding = 0) readonly buffer B0 { float P[]; };
layout(std430, binding = 1) readonly buffer B1 { float M1[]; };
layout(std430, binding = 2) readonly buffer B2 { float M2[]; };
layout(std430, binding = 3) readonly buffer B3 { uint src[]; };
layout(std430, binding = 4) writeonly buffer B4 { float tmp[]; };

void main() {
    uint x = gid(), n = pc.u[ARG(0)], k3 = pc.u[ARG(1)], sh = pc.u[ARG(2)];
    if (x >= n * k3) return;
    uint o = x / k3, f = x - o * k3, ps = src[2 * o], ms = src[2 * o + 1];
    tmp[x] = P[sh + ps * k3 + f];
    tmp[n * k3 + x] = ms > 0u ? M1[sh + (ms - 1u) * k3 + f] : 0.0;
    tmp[2u * n * k3 + x] = ms > 0u ? M2[sh + (ms - 1u) * k3 + f] : 0.0;
}
