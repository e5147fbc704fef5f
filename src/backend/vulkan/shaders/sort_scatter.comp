#version 450
// sort_scatter.comp — one stable pass of the radix sort: each key goes to its digit's scanned
// base (sort_hist.comp + scan) plus its rank among the equal digits before it in the chunk, so
// equal digits keep their order (LSD radix sort needs that). Ranks are counted in shared memory
// over the 256 keys of a sub-block, without subgroup operations, so any subgroup size works.
// Args: count, shift, groups, which word holds the digit (0 lo, 1 hi).
#include "common.glsl"

layout(std430, binding = 0) readonly buffer B0 { uint in_lo[]; };
layout(std430, binding = 1) readonly buffer B1 { uint in_hi[]; };
layout(std430, binding = 2) readonly buffer B2 { uint in_val[]; };
layout(std430, binding = 3) writeonly buffer B3 { uint out_lo[]; };
layout(std430, binding = 4) writeonly buffer B4 { uint out_hi[]; };
layout(std430, binding = 5) writeonly buffer B5 { uint out_val[]; };
layout(std430, binding = 6) readonly buffer B6 { uint hist[]; };

shared uint s_d[WG];
shared uint s_base[256];
shared uint s_cnt[256];

void main() {
    uint wg = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x, t = gl_LocalInvocationID.x;
    uint n = pc.u[ARG(0)], shift = pc.u[ARG(1)], groups = pc.u[ARG(2)], which = pc.u[ARG(3)];
    s_base[t] = hist[t * groups + wg];
    s_cnt[t] = 0;
    for (uint k = 0; k < 4; k++) {
        uint i = wg * 4 * WG + k * WG + t;
        uint d = 256u, lo = 0, hi = 0;
        if (i < n) {
            lo = in_lo[i];
            hi = in_hi[i];
            d = ((which == 0u ? lo : hi) >> shift) & 255u;
        }
        s_d[t] = d;
        barrier();
        if (d < 256u) {
            uint rank = 0;
            for (uint j = 0; j < t; j++) rank += s_d[j] == d ? 1u : 0u;
            uint o = s_base[d] + rank;
            out_lo[o] = lo;
            out_hi[o] = hi;
            out_val[o] = in_val[i];
            atomicAdd(s_cnt[d], 1u);
        }
        barrier();
        s_base[t] += s_cnt[t];
        s_cnt[t] = 0;
        barrier();
    }
}
