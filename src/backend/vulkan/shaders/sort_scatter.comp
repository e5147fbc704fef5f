#version 450
// sort_scatter.comp — one stable pass of the `sort` radix sort: each workgroup sorts its chunk of
// VK_SORT_CHUNK keys by the pass's 8-bit digit in shared memory, then writes every digit's keys
// to that digit's first output position for the chunk (sort_scan.comp) onwards: the keys of one
// digit leave as one contiguous run, consecutive invocations on consecutive words.
// The chunk's order is the subgroups' own, whatever their mapping to invocations: subgroup s holds
// keys [s * 8 * size, (s + 1) * 8 * size), lane l key s * 8 * size + r * size + l of round r. A
// key's rank among the equal digits before it:
//   - within its subgroup's round, the lanes with the same digit found by 8 ballots (one per digit
//     bit), the lower of them counted;
//   - over the rounds before, a counter per digit in shared memory that the lowest of those lanes
//     advances (between two subgroup barriers);
//   - the subgroups share VK_SORT_SLOTS sets of 256 counters: with more subgroups than sets (a
//     subgroup size under 32 at 256 invocations) the subgroups of a set, whose keys follow each
//     other, take turns, one workgroup barrier per turn; otherwise each subgroup has its own set
//     and they all rank at once;
//   - then per digit an exclusive scan over the sets gives each set's first rank, and one over the
//     digits each digit's first position in the chunk.
// Equal digits keep their order (LSD radix sort needs that), so the sort is stable and exact.
// The pass reads the set of buffers the sort's plan names (sort_const.glsl) and writes the other;
// the last pass that runs does not write the low key words (nothing reads them after the sort).
// One-word keys (sort_const.glsl, VK_PA_KEY) have no high words: only key_lo and the values are
// read and written, and the last pass writes the keys into key_hi's set instead.
// Any power-of-two subgroup size up to 128 works.
// The key count and the chunk count come from args (pair_args.comp: words 18, 19); the dispatch
// is indirect, from the plan (no workgroups for a skipped pass).
// Args: pass, shift, which word holds the digit (0 low, 1 high).
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_ballot : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "common.glsl"
#include "sort_const.glsl"

layout(std430, binding = 0) buffer B0 { uint lo0[]; };
layout(std430, binding = 1) buffer B1 { uint hi0[]; };
layout(std430, binding = 2) buffer B2 { uint val0[]; };
layout(std430, binding = 3) buffer B3 { uint lo1[]; };
layout(std430, binding = 4) buffer B4 { uint hi1[]; };
layout(std430, binding = 5) buffer B5 { uint val1[]; };
layout(std430, binding = 6) readonly buffer B6 { uint hist[]; };
layout(std430, binding = 7) readonly buffer B7 { uint args[]; };

#define KPT VK_SORT_KPT
shared uint s_buf[VK_SORT_CHUNK]; // the rank counters [set][256], then the chunk staged in order
shared uint s_goff[256];          // per digit: output position minus position in the sorted chunk
shared uint s_loff[256];          // per digit: first position in the sorted chunk
shared uint s_part[WG];           // per subgroup: sums of the digit scan

// the chunk's keys and values into registers, from the set of buffers the pass reads
#define LOAD(LO, HI, VA)                                                                                    \
    [[unroll]] for (uint r = 0u; r < KPT; r++) {                                                           \
        uint e = first + r * size;                                                                         \
        if (e < nv) lo[r] = LO[base + e], hi[r] = two ? HI[base + e] : 0u, va[r] = VA[base + e];           \
    }
// the staged chunk (s_buf) out to OUT, position i to to[k] (i = k * WG + t)
#define STORE(OUT)                                                                                         \
    [[unroll]] for (uint k = 0u; k < KPT; k++) {                                                           \
        uint i = k * WG + t;                                                                               \
        if (i < nv) OUT[to[k]] = s_buf[i];                                                                 \
    }

// word 0 low, 1 high, 2 value, into set `set`
void store(uint word, uint set, uint to[KPT], uint nv, uint t) {
    if (set == 0u) {
        if (word == 0u) STORE(lo0) else if (word == 1u) STORE(hi0) else STORE(val0)
    } else {
        if (word == 0u) STORE(lo1) else if (word == 1u) STORE(hi1) else STORE(val1)
    }
}

void main() {
    uint wg = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x, t = gl_LocalInvocationID.x;
    uint n = args[18], chunks = args[19], p = pc.u[ARG(0)], shift = pc.u[ARG(1)], word = pc.u[ARG(2)];
    if (wg >= chunks) return; // padding of a dispatch spread over y (the whole workgroup)
    uint src = args[VK_PA_SORT_PLAN + 8u * p + 6u], dst = src ^ 1u;
    bool write_lo = args[VK_PA_SORT_PLAN + 8u * p + 7u] != 0u;
    bool two = args[VK_PA_KEY + 1u] >= 32u; // one-word keys: no high words, the last pass writes the keys there
    uint size = gl_SubgroupSize, nsg = gl_NumSubgroups, sg = gl_SubgroupID, lane = gl_SubgroupInvocationID;
    uint li = sg * size + lane; // digits in subgroup order, so that the digit scan follows them
    uint sets = min(nsg, VK_SORT_SLOTS), turns = nsg / sets, set = sg / turns, turn = sg % turns;
    uint base = wg * VK_SORT_CHUNK, nv = min(VK_SORT_CHUNK, n - base);
    for (uint i = t; i < sets * 256u; i += WG) s_buf[i] = 0u;
    s_goff[li] = hist[li * chunks + wg];
    uint first = sg * KPT * size + lane; // this lane's key of round 0 in the chunk
    uint lo[KPT], hi[KPT], va[KPT], at[KPT];
    [[unroll]] for (uint r = 0u; r < KPT; r++) lo[r] = 0u, hi[r] = 0u, va[r] = 0u;
    if (src == 0u) {
        LOAD(lo0, hi0, val0)
    } else {
        LOAD(lo1, hi1, val1)
    }
    barrier();
    // at[r]: the key's rank among the equal digits before it in its set's keys
    for (uint tn = 0u; tn < turns; tn++) {
        if (tn == turn) {
            [[unroll]] for (uint r = 0u; r < KPT; r++) {
                bool ok = first + r * size < nv;
                uint d = ((word == 0u ? lo[r] : hi[r]) >> shift) & 255u;
                uvec4 eq = subgroupBallot(ok);
                [[unroll]] for (uint b = 0u; b < 8u; b++) {
                    bool on = ((d >> b) & 1u) != 0u;
                    uvec4 bb = subgroupBallot(on);
                    eq &= on ? bb : ~bb;
                }
                uint rank = subgroupBallotExclusiveBitCount(eq), c = set * 256u + d;
                uint before = ok ? s_buf[c] : 0u;
                subgroupBarrier(); // every lane has read its counter before the lowest advances it
                if (ok && rank == 0u) s_buf[c] = before + subgroupBallotBitCount(eq);
                subgroupBarrier();
                at[r] = before + rank;
            }
        }
        barrier();
    }
    // per digit li: the sets' first ranks (exclusive scan over the sets), the digit's first position
    uint tot = 0u;
    for (uint s = 0u; s < sets; s++) {
        uint x = s_buf[s * 256u + li];
        s_buf[s * 256u + li] = tot;
        tot += x;
    }
    uint loff = subgroupExclusiveAdd(tot);
    if (lane == size - 1u) s_part[sg] = loff + tot;
    barrier();
    for (uint k = 0u; k < sg; k++) loff += s_part[k];
    s_loff[li] = loff;
    s_goff[li] -= loff;
    barrier();
    // at[r]: the key's position in the chunk sorted by digit
    [[unroll]] for (uint r = 0u; r < KPT; r++) {
        uint d = ((word == 0u ? lo[r] : hi[r]) >> shift) & 255u;
        if (first + r * size < nv) at[r] += s_loff[d] + s_buf[set * 256u + d];
    }
    barrier(); // the counters are read: s_buf holds the staged chunk from here
    // the digit's word: staged in order and written out; each position's destination is kept
    uint to[KPT];
    [[unroll]] for (uint r = 0u; r < KPT; r++)
        if (first + r * size < nv) s_buf[at[r]] = word == 0u ? lo[r] : hi[r];
    barrier();
    [[unroll]] for (uint k = 0u; k < KPT; k++) {
        uint i = k * WG + t;
        to[k] = i < nv ? s_goff[(s_buf[i] >> shift) & 255u] + i : 0u;
    }
    if (two) {
        if (word == 1u || write_lo) store(word, dst, to, nv, t);
    } else {
        store(write_lo ? 0u : 1u, dst, to, nv, t);
    }
    // the other key word (the low one only when it is written), then the value
    if (two && (word == 0u || write_lo)) {
        barrier();
        [[unroll]] for (uint r = 0u; r < KPT; r++)
            if (first + r * size < nv) s_buf[at[r]] = word == 0u ? hi[r] : lo[r];
        barrier();
        store(word ^ 1u, dst, to, nv, t);
    }
    barrier();
    [[unroll]] for (uint r = 0u; r < KPT; r++)
        if (first + r * size < nv) s_buf[at[r]] = va[r];
    barrier();
    store(2u, dst, to, nv, t);
}
