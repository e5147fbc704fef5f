#version 450
// reorder_box.comp — the box of the means for the reorder (backend/morton_rule.h; vk_reorder.c):
// per axis the least and greatest finite mean, taken as the floats' order-preserving bits by
// integer atomics into box[0..2] (the least, starting at 0xffffffff) and box[3..5] (the greatest,
// starting at 0). Min and max are exact in any order, so the box is the host's. No finite value
// maps to either start: an axis still at its start has no finite mean (reorder_codes.comp).
// Each invocation strides over the Gaussians, each subgroup reduces its invocations' values, one
// shared atomic per subgroup and one global atomic per workgroup and word.
// Args: n, the means' region offset (floats).
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "common.glsl"

layout(std430, binding = 0) readonly buffer B0 { uint P[]; };
layout(std430, binding = 1) buffer B1 { uint box[]; };

shared uint s_box[6];

// -inf < ... < -0 < +0 < ... < +inf as unsigned integers
uint ordered(uint u) { return (u & 0x80000000u) != 0u ? ~u : u | 0x80000000u; }

void main() {
    uint t = gl_LocalInvocationID.x, n = pc.u[ARG(0)], at = pc.u[ARG(1)];
    if (t < 6u) s_box[t] = t < 3u ? 0xffffffffu : 0u;
    barrier();
    uint lo[3], hi[3];
    [[unroll]] for (uint k = 0u; k < 3u; k++) lo[k] = 0xffffffffu, hi[k] = 0u;
    for (uint i = gl_GlobalInvocationID.x; i < n; i += gl_NumWorkGroups.x * WG) {
        [[unroll]] for (uint k = 0u; k < 3u; k++) {
            uint u = P[at + 3u * i + k];
            if ((u & 0x7f800000u) == 0x7f800000u) continue; // NaN or infinite (the bits: no driver's isnan)
            lo[k] = min(lo[k], ordered(u));
            hi[k] = max(hi[k], ordered(u));
        }
    }
    [[unroll]] for (uint k = 0u; k < 3u; k++) {
        uint a = subgroupMin(lo[k]), b = subgroupMax(hi[k]);
        if (subgroupElect()) {
            atomicMin(s_box[k], a);
            atomicMax(s_box[3u + k], b);
        }
    }
    barrier();
    if (t < 3u) atomicMin(box[t], s_box[t]);
    else if (t < 6u) atomicMax(box[t], s_box[t]);
}
