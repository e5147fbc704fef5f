#version 450
// sort_count.comp — first dispatch of the `sort` radix sort (64-bit keys as two 32-bit words, 8-bit
// digits, LSD): reads every key once and counts all of its digits the sort needs, so that the
// passes know their digits' global offsets and which passes change nothing (sort_scan.comp).
// Each workgroup takes VK_SORT_COUNT_CHUNKS chunks of VK_SORT_CHUNK keys: per chunk it writes the
// chunk's counts of pass 0's digit into hist[digit * chunks + chunk] (the histogram pass 0 scans:
// pass 0 has no sort_hist dispatch), and it adds its counts of every digit into
// args[VK_PA_SORT_DIGITS + pass * 256 + digit] (32-bit atomics on words pair_args.comp zeroed:
// sums, so the same for any order). Counting in shared memory, a subgroup whose keys all have the
// same digit adds them with one atomic (the high digits are often the same for long runs).
// The key count and the chunk count come from args (pair_args.comp: words 18, 19), so the
// dispatch can be recorded before the count is known. Args: the number of passes (digits 0-3 from
// the low word, 4-7 from the high word).
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_vote : require
#extension GL_KHR_shader_subgroup_ballot : require
#include "common.glsl"
#include "sort_const.glsl"

layout(std430, binding = 0) readonly buffer B0 { uint key_lo[]; };
layout(std430, binding = 1) readonly buffer B1 { uint key_hi[]; };
layout(std430, binding = 2) writeonly buffer B2 { uint hist[]; };
layout(std430, binding = 3) buffer B3 { uint args[]; };

// [pass][256]: pass 0's counts of the current chunk, the others' over the workgroup's chunks;
// [VK_SORT_MAX_PASSES][256]: pass 0's over the workgroup's chunks
shared uint cnt[(VK_SORT_MAX_PASSES + 1u) * 256u];

// counts one key of the active invocations at cnt[at]
void count(uint at) {
    if (subgroupAllEqual(at)) {
        uint m = subgroupBallotBitCount(subgroupBallot(true));
        if (subgroupElect()) atomicAdd(cnt[at], m);
    } else {
        atomicAdd(cnt[at], 1u);
    }
}

void main() {
    uint wg = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x, t = gl_LocalInvocationID.x;
    uint n = args[18], chunks = args[19], passes = pc.u[ARG(0)];
    bool two = args[VK_PA_KEY + 1u] >= 32u; // one-word keys: key_hi unwritten, its digits counted as 0
    uint first = wg * VK_SORT_COUNT_CHUNKS;
    if (first >= chunks) return; // padding of a dispatch spread over y (the whole workgroup)
    uint last = min(first + VK_SORT_COUNT_CHUNKS, chunks);
    for (uint i = t; i < (VK_SORT_MAX_PASSES + 1u) * 256u; i += WG) cnt[i] = 0u;
    barrier();
    for (uint c = first; c < last; c++) {
        uint lo[VK_SORT_KPT], hi[VK_SORT_KPT];
        [[unroll]] for (uint k = 0u; k < VK_SORT_KPT; k++) { // every load of the chunk issued first
            uint i = c * VK_SORT_CHUNK + k * WG + t;
            lo[k] = i < n ? key_lo[i] : 0u;
            hi[k] = i < n && two ? key_hi[i] : 0u;
        }
        [[unroll]] for (uint k = 0u; k < VK_SORT_KPT; k++) {
            if (c * VK_SORT_CHUNK + k * WG + t < n) {
                for (uint p = 0u; p < passes; p++) {
                    uint w = p < 4u ? lo[k] : hi[k];
                    count(p * 256u + ((w >> (8u * (p & 3u))) & 255u));
                }
            }
        }
        barrier();
        hist[t * chunks + c] = cnt[t];
        cnt[VK_SORT_MAX_PASSES * 256u + t] += cnt[t];
        cnt[t] = 0u;
        barrier();
    }
    for (uint p = 0u; p < passes; p++) {
        uint v = cnt[(p == 0u ? VK_SORT_MAX_PASSES : p) * 256u + t];
        if (v != 0u) atomicAdd(args[VK_PA_SORT_DIGITS + p * 256u + t], v);
    }
}
