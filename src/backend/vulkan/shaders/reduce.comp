#version 450
// reduce.comp — deterministic sum of float pairs: workgroup g sums pairs [g * chunk, (g+1) * chunk)
// (each invocation a strided run in order, then a fixed tree) into out[out_at + g]. Run twice
// (many groups, then one) it gives the loss sums of a step. Words: 0 count, 1 chunk, 2 out_at.
#include "common.glsl"

layout(std430, binding = 0) readonly buffer B0 { vec2 src[]; };
layout(std430, binding = 1) buffer B1 { vec2 dst[]; };

shared vec2 s[WG];

void main() {
    uint g = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x, t = gl_LocalInvocationID.x;
    uint n = pc.u[0], chunk = pc.u[1];
    uint a = g * chunk, b = min(a + chunk, n);
    vec2 acc = vec2(0.0);
    for (uint i = a + t; i < b; i += WG) acc += src[i];
    s[t] = acc;
    barrier();
    for (uint off = WG / 2; off > 0; off >>= 1) {
        if (t < off) s[t] += s[t + off];
        barrier();
    }
    if (t == 0u) dst[pc.u[2] + g] = s[0];
}
