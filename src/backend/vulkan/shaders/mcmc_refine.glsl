// mcmc_refine.glsl — what the six shaders of MCMC's relocation and growth decided on the device
// share (refine.strategy = "mcmc", the backend's mcmc_refine; vk_mcmc.c records them), exactly as
// train/mcmc.c decides on the host and the CUDA kernels (cuda/mcmc.cu) on theirs: mcmc_rule.glsl
// holds the shared arithmetic. One phase (relocate the dead onto live Gaussians, or add `add` after
// the last) is one dispatch of each, in this order (separate shaders rather than one with a mode
// word: lavapipe runs every invocation of a shader at the cost of its largest path):
//   0 weights  per block of 4 * WG Gaussians: each one's 24-bit weight (0 if dead when relocating)
//              and dead flag; inclusive prefix sums of the weights (64-bit, as two words) and the
//              dead ranks within the block; the block's totals;
//   1 blocks   one workgroup: the blocks' totals scanned into their offsets; the phase's total
//              weight, dead count and draw count (0: nothing changes, the host's rules) in scal;
//   2 finish   the offsets added: global prefix sums, the dead in index order in `list`; counts zeroed;
//   3 draw     draw k: the first Gaussian whose prefix sum exceeds the hashed point of k;
//   4 spread   each drawn source's new opacity logit and log-scales (from its values now) into sp;
//   5 apply    copy k: its destination (the k-th dead, or n + k) takes the source's means, rotation
//              and SH, the spread values and zero moments; each drawn source the spread values and
//              zero moments. Copies read the sources' values before this pass changes them: the
//              spread values come from sp, and a source's means, rotation and SH are never written.
// No floats are compared or summed in an order that matters: weights are integers, the draws
// independent of each other, and every value the host computes in double is reproduced by
// xfloat.glsl. Only 32-bit integer atomics (the draw counts).
// Words (the same for all six): 21 n, 22 phase (0 relocate, 1 add), 23 add, 24 the stores'
// capacity, 25 3K, 26-27 seed (low, high), 28 dead opacity (float bits), 29 block count.
#include "common.glsl"
#include "mcmc_rule.glsl"

#define BLOCK (4u * WG)

layout(std430, binding = 0) buffer B0 { float P[]; };
layout(std430, binding = 1) buffer B1 { float M1[]; };
layout(std430, binding = 2) buffer B2 { float M2[]; };
layout(std430, binding = 3) buffer B3 { uvec2 prefix[]; };
layout(std430, binding = 4) buffer B4 { uint rank[]; }; // dead flag (bit 31) and rank in the block
layout(std430, binding = 5) buffer B5 { uint list[]; };
layout(std430, binding = 6) buffer B6 { uvec4 blocks[]; }; // (weight low, high, dead count, -)
layout(std430, binding = 7) buffer B7 { uint drawn[]; };
layout(std430, binding = 8) buffer B8 { uint times[]; };
layout(std430, binding = 9) buffer B9 { vec4 sp[]; };       // spread (logit, log-scales)
layout(std430, binding = 10) buffer B10 { uint scal[]; };   // per phase: total (2), dead, draws
layout(std430, binding = 11) readonly buffer B11 { uint tab[]; };

xf mcmc_tab(uint idx) { return xf_from_double(uvec2(tab[2u * idx], tab[2u * idx + 1u])); }

shared uint s_lo[WG], s_hi[WG], s_d[WG];

// Exclusive scan over the workgroup of (w, d); returns the workgroup's totals in tw, td.
void wg_scan(inout uvec2 w, inout uint d, out uvec2 tw, out uint td) {
    uint t = gl_LocalInvocationID.x, c;
    s_lo[t] = w.x, s_hi[t] = w.y, s_d[t] = d;
    barrier();
    for (uint off = 1u; off < WG; off <<= 1) {
        uvec2 aw = uvec2(0u);
        uint ad = 0u;
        if (t >= off) aw = uvec2(s_lo[t - off], s_hi[t - off]), ad = s_d[t - off];
        barrier();
        uvec2 s = u64_add(uvec2(s_lo[t], s_hi[t]), aw, c);
        s_lo[t] = s.x, s_hi[t] = s.y, s_d[t] += ad;
        barrier();
    }
    uvec2 incl = uvec2(s_lo[t], s_hi[t]);
    tw = uvec2(s_lo[WG - 1u], s_hi[WG - 1u]), td = s_d[WG - 1u];
    w = u64_sub(incl, w), d = s_d[t] - d;
}

uint cap_() { return pc.u[ARG(4)]; }

// Zeroes Gaussian g's Adam moments (all of its floats in both stores).
void zero_moments(uint g) {
    uint c = cap_(), k3 = pc.u[ARG(5)];
    for (uint k = 0u; k < 3u; k++) {
        M1[3u * g + k] = 0.0, M2[3u * g + k] = 0.0;                   // means
        M1[3u * c + 3u * g + k] = 0.0, M2[3u * c + 3u * g + k] = 0.0; // log-scales
    }
    for (uint k = 0u; k < 4u; k++) M1[6u * c + 4u * g + k] = 0.0, M2[6u * c + 4u * g + k] = 0.0;
    M1[10u * c + g] = 0.0, M2[10u * c + g] = 0.0;
    for (uint k = 0u; k < k3; k++) M1[11u * c + k3 * g + k] = 0.0, M2[11u * c + k3 * g + k] = 0.0;
}

void set_spread(uint g, vec4 v) {
    uint c = cap_();
    P[10u * c + g] = v.x;
    for (uint k = 0u; k < 3u; k++) P[3u * c + 3u * g + k] = v[k + 1u];
}


uint mc_n() { return pc.u[ARG(1)]; }
uint mc_phase() { return pc.u[ARG(2)]; }
bool mc_relocate() { return pc.u[ARG(2)] == 0u; }
uint mc_scal() { return 4u * pc.u[ARG(2)]; } // this phase's words of scal
