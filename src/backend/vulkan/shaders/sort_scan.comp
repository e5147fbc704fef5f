#version 450
// sort_scan.comp — per pass of the `sort` radix sort, the scan of its histogram (hist[digit * chunks
// + chunk]: sort_count.comp for pass 0, sort_hist.comp for the others): one workgroup per digit
// turns its row into each chunk's first output position for the digit, the digit's global offset
// (the keys of the lower digits, from sort_count's counts over all keys) plus the digit's keys in
// the chunks before. A pass whose digit is the same for every key (some digit holds all n keys;
// no key at all included) changes nothing: it is skipped, and the workgroups return.
// The first pass's workgroup 0 also writes the sort's plan into args (sort_const.glsl): per pass,
// from the counts, whether it runs, the set of buffers it reads (the passes that run alternate
// between the two sets, starting from set 0), sort_hist's and sort_scatter's workgroups (0 for a
// skipped pass; the dispatches after read them indirectly) and whether it writes the low key words
// (not the last pass that runs: nothing reads them after the sort); then the set holding the
// sorted keys, which tile_ranges reads. One-word keys (sort_const.glsl, VK_PA_KEY) are written
// into key_hi's set by the last pass that runs, so with those at least pass 0 runs. Integer sums:
// the same for any order.
// The key count and the chunk count come from args (pair_args.comp: words 18, 19).
// Args: pass, number of passes, the device's workgroup limit per dimension.
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "common.glsl"
#include "sort_const.glsl"

layout(std430, binding = 0) buffer B0 { uint hist[]; };
layout(std430, binding = 1) buffer B1 { uint args[]; };

shared uint s_part[WG];
shared uint s_skip[VK_SORT_MAX_PASSES];

#include "grid.glsl"

void main() {
    uint d = gl_WorkGroupID.x, t = gl_LocalInvocationID.x;
    uint n = args[18], chunks = args[19], p = pc.u[ARG(0)], passes = pc.u[ARG(1)];
    uint sg = gl_SubgroupID, lane = gl_SubgroupInvocationID, nsg = gl_NumSubgroups;
    uint li = sg * gl_SubgroupSize + lane; // digits in subgroup order, so that the scans below follow them
    bool plan = p == 0u && d == 0u;
    if (t < VK_SORT_MAX_PASSES) s_skip[t] = 0u;
    barrier();
    uint q0 = p == 0u ? 0u : p, q1 = p == 0u ? passes : p + 1u; // pass 0's workgroups: all passes
    for (uint q = q0; q < q1; q++)
        if (args[VK_PA_SORT_DIGITS + q * 256u + li] == n) atomicOr(s_skip[q], 1u);
    uint c = args[VK_PA_SORT_DIGITS + p * 256u + li];
    uint below = subgroupAdd(li < d ? c : 0u);
    if (lane == 0u) s_part[sg] = below;
    barrier();
    if (p == 0u && t == 0u && args[VK_PA_KEY + 1u] < 32u) {
        bool any = false;
        for (uint q = 0u; q < passes; q++) any = any || s_skip[q] == 0u;
        if (!any) s_skip[0] = 0u;
    }
    barrier();
    if (plan && t == 0u) {
        uint last = 0u, cur = 0u;
        for (uint q = 0u; q < passes; q++)
            if (s_skip[q] == 0u) last = q;
        for (uint q = 0u; q < passes; q++) {
            bool run = s_skip[q] == 0u;
            uint at = VK_PA_SORT_PLAN + 8u * q;
            write_grid(at, run && q > 0u ? chunks : 0u, pc.u[ARG(2)]);
            write_grid(at + 3u, run ? chunks : 0u, pc.u[ARG(2)]);
            args[at + 6u] = cur;
            args[at + 7u] = q != last ? 1u : 0u;
            if (run) cur ^= 1u;
        }
        args[VK_PA_SORT_FINAL] = cur;
    }
    if (s_skip[p] != 0u) return; // the whole workgroup
    uint carry = 0u;
    for (uint k = 0u; k < nsg; k++) carry += s_part[k];
    uint base = d * chunks;
    for (uint blk = 0u; blk < chunks; blk += 4u * WG) {
        uint j = blk + 4u * li, v[4], s = 0u;
        [[unroll]] for (uint k = 0u; k < 4u; k++) {
            v[k] = j + k < chunks ? hist[base + j + k] : 0u;
            s += v[k];
        }
        uint ex = subgroupExclusiveAdd(s);
        barrier(); // s_part read by every invocation before it is written again
        if (lane == gl_SubgroupSize - 1u) s_part[sg] = ex + s;
        barrier();
        uint pre = 0u, tot = 0u;
        for (uint k = 0u; k < nsg; k++) {
            uint x = s_part[k];
            if (k < sg) pre += x;
            tot += x;
        }
        uint run = carry + pre + ex;
        [[unroll]] for (uint k = 0u; k < 4u; k++) {
            if (j + k < chunks) hist[base + j + k] = run;
            run += v[k];
        }
        carry += tot;
    }
}
