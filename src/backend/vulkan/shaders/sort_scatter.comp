#version 450
// sort_scatter.comp — one stable pass of the radix sort: each key goes to its digit's scanned
// base (sort_hist.comp + scan) plus its rank among the equal digits before it in the chunk, so
// equal digits keep their order (LSD radix sort needs that). A chunk is 4 sub-blocks of WG keys;
// in a sub-block, key (subgroup s, lane l) is the s * size + l-th, so the order is the subgroups'
// own whatever their mapping to invocations. Within a subgroup the lanes holding the same digit
// are found with 9 ballots (one per bit of the digit, 256 meaning no key) and ranked by counting
// the lower lanes among them; the subgroups then take and advance their digits' bases in order.
// Any power-of-two subgroup size up to 128 works.
// The key count and the chunk count come from args (pair_args.comp: words 18, 19).
// Args: -, shift, -, which word holds the digit (0 lo, 1 hi).
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_ballot : require
#include "common.glsl"

layout(std430, binding = 0) readonly buffer B0 { uint in_lo[]; };
layout(std430, binding = 1) readonly buffer B1 { uint in_hi[]; };
layout(std430, binding = 2) readonly buffer B2 { uint in_val[]; };
layout(std430, binding = 3) writeonly buffer B3 { uint out_lo[]; };
layout(std430, binding = 4) writeonly buffer B4 { uint out_hi[]; };
layout(std430, binding = 5) writeonly buffer B5 { uint out_val[]; };
layout(std430, binding = 6) readonly buffer B6 { uint hist[]; };
layout(std430, binding = 7) readonly buffer B7 { uint args[]; };

shared uint s_base[256];

void main() {
    uint wg = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x, t = gl_LocalInvocationID.x;
    uint n = args[18], shift = pc.u[ARG(1)], groups = args[19], which = pc.u[ARG(3)];
    if (wg >= groups) return; // padding of a dispatch spread over y (the whole workgroup)
    uint sg = gl_SubgroupID, nsg = gl_NumSubgroups;
    uint lane_pos = sg * gl_SubgroupSize + gl_SubgroupInvocationID;
    s_base[t] = hist[t * groups + wg];
    barrier();
    for (uint k = 0; k < 4; k++) {
        uint i = wg * 4 * WG + k * WG + lane_pos;
        uint d = 256u, lo = 0, hi = 0;
        if (i < n) {
            lo = in_lo[i];
            hi = in_hi[i];
            d = ((which == 0u ? lo : hi) >> shift) & 255u;
        }
        uvec4 eq = subgroupBallot(true);
        for (uint bit = 0; bit < 9u; bit++) {
            bool on = ((d >> bit) & 1u) != 0u;
            uvec4 bb = subgroupBallot(on);
            eq &= on ? bb : ~bb;
        }
        uint rank = subgroupBallotBitCount(eq & gl_SubgroupLtMask);
        bool last = rank + 1u == subgroupBallotBitCount(eq);
        for (uint s = 0; s < nsg; s++) {
            if (sg == s) {
                uint o = d < 256u ? s_base[d] + rank : 0u;
                subgroupBarrier(); // every lane has read its base before the last ones advance it
                if (d < 256u) {
                    if (last) s_base[d] = o + 1u;
                    out_lo[o] = lo;
                    out_hi[o] = hi;
                    out_val[o] = in_val[i];
                }
            }
            barrier();
        }
    }
}
