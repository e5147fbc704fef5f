#version 450
// sort_hist.comp — one pass of the `sort` radix sort (8-bit digits of one 32-bit key word):
// each workgroup counts the digits of its chunk of 4 * WG keys into hist[digit * groups + group].
// The key count and the chunk count come from args (pair_args.comp: words 18, 19), so the pass
// can be recorded before the count is known. Args: -, shift.
#include "common.glsl"

layout(std430, binding = 0) readonly buffer B0 { uint keyw[]; };
layout(std430, binding = 1) writeonly buffer B1 { uint hist[]; };
layout(std430, binding = 2) readonly buffer B2 { uint args[]; };

shared uint cnt[256];

void main() {
    uint wg = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x, t = gl_LocalInvocationID.x;
    uint n = args[18], shift = pc.u[ARG(1)], groups = args[19];
    if (wg >= groups) return; // padding of a dispatch spread over y (the whole workgroup)
    cnt[t] = 0;
    barrier();
    for (uint k = 0; k < 4; k++) {
        uint i = wg * 4 * WG + k * WG + t;
        if (i < n) atomicAdd(cnt[(keyw[i] >> shift) & 255u], 1u);
    }
    barrier();
    hist[t * groups + wg] = cnt[t];
}
