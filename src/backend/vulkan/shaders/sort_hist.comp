#version 450
// sort_hist.comp — per pass of the `sort` radix sort after the first (sort_count.comp counts the
// first's): each workgroup counts the digits of its chunk of VK_SORT_CHUNK keys into
// hist[digit * chunks + chunk], for sort_scan.comp. It reads only the key word that holds the
// digit, from the set of buffers the sort's plan names for the pass (sort_const.glsl); a
// subgroup whose keys all have the same digit counts them with one shared-memory atomic.
// The key count and the chunk count come from args (pair_args.comp: words 18, 19); the dispatch
// is indirect, from the plan (no workgroups for a skipped pass). Args: pass, shift.
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_vote : require
#extension GL_KHR_shader_subgroup_ballot : require
#include "common.glsl"
#include "sort_const.glsl"

layout(std430, binding = 0) readonly buffer B0 { uint keyw0[]; }; // the digit's word, set 0
layout(std430, binding = 1) readonly buffer B1 { uint keyw1[]; }; // and set 1
layout(std430, binding = 2) writeonly buffer B2 { uint hist[]; };
layout(std430, binding = 3) readonly buffer B3 { uint args[]; };

shared uint cnt[256];

void main() {
    uint wg = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x, t = gl_LocalInvocationID.x;
    uint n = args[18], chunks = args[19], p = pc.u[ARG(0)], shift = pc.u[ARG(1)];
    if (wg >= chunks) return; // padding of a dispatch spread over y (the whole workgroup)
    uint src = args[VK_PA_SORT_PLAN + 8u * p + 6u];
    cnt[t] = 0u;
    barrier();
    uint w[VK_SORT_KPT];
    [[unroll]] for (uint k = 0u; k < VK_SORT_KPT; k++) { // every load issued first
        uint i = wg * VK_SORT_CHUNK + k * WG + t;
        w[k] = i >= n ? 0u : src == 0u ? keyw0[i] : keyw1[i];
    }
    [[unroll]] for (uint k = 0u; k < VK_SORT_KPT; k++) {
        if (wg * VK_SORT_CHUNK + k * WG + t < n) {
            uint d = (w[k] >> shift) & 255u;
            if (subgroupAllEqual(d)) {
                uint m = subgroupBallotBitCount(subgroupBallot(true));
                if (subgroupElect()) atomicAdd(cnt[d], m);
            } else {
                atomicAdd(cnt[d], 1u);
            }
        }
    }
    barrier();
    hist[t * chunks + wg] = cnt[t];
}
