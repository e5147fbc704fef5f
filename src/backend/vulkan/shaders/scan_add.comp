#version 450
// scan_add.comp — adds each block's scanned total (scan_block.comp) to its elements. Args: n.
#include "common.glsl"

layout(std430, binding = 0) buffer B0 { uint data[]; };
layout(std430, binding = 1) readonly buffer B1 { uint sums[]; };

void main() {
    uint wg = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x, t = gl_LocalInvocationID.x;
    uint n = pc.u[ARG(0)], base = wg * 4 * WG + 4 * t;
    uint add = sums[wg];
    for (uint k = 0; k < 4; k++)
        if (base + k < n) data[base + k] += add;
}
