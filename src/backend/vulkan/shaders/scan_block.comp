#version 450
// scan_block.comp — exclusive prefix sum of uint, in place, over blocks of 4 * WG elements; each
// block's total goes to sums[block] (scan_add.comp adds the scanned totals back). Integer sums:
// the result does not depend on the order. Args: n.
#include "common.glsl"

layout(std430, binding = 0) buffer B0 { uint data[]; };
layout(std430, binding = 1) writeonly buffer B1 { uint sums[]; };

shared uint s[WG];

void main() {
    uint wg = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x, t = gl_LocalInvocationID.x;
    uint n = pc.u[ARG(0)], base = wg * 4 * WG + 4 * t;
    uint v[4];
    uint tot = 0;
    for (int k = 0; k < 4; k++) { v[k] = base + k < n ? data[base + k] : 0u; tot += v[k]; }
    s[t] = tot;
    barrier();
    for (uint off = 1; off < WG; off <<= 1) {
        uint add = t >= off ? s[t - off] : 0u;
        barrier();
        s[t] += add;
        barrier();
    }
    uint run = s[t] - tot;
    for (int k = 0; k < 4; k++) {
        if (base + k < n) data[base + k] = run;
        run += v[k];
    }
    if (t == WG - 1) sums[wg] = s[t];
}
