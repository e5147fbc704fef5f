#version 450
// mcmc_weights.comp — MCMC on the device, pass 1 of a phase (mcmc_refine.glsl): per block of 4 * WG
// Gaussians, each one's 24-bit weight (0 if dead when relocating) and dead flag, the inclusive
// prefix sums of the weights (64-bit, two words) and the dead ranks within the block, and the
// block's totals.
#include "mcmc_refine.glsl"

void main() {
    uint n = mc_n(), c = cap_();
    bool relocate = mc_relocate();
    float dead_opacity = pf(ARG(8));
    uint blk = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x, t = gl_LocalInvocationID.x;
    uint first = blk * BLOCK + 4u * t;
    uint w[4], dead = 0u, ws = 0u;
    for (uint k = 0u; k < 4u; k++) {
        uint i = first + k;
        w[k] = 0u;
        if (i >= n) continue;
        float l = P[10u * c + i];
        xf o = mcmc_opacity(l);
        if (relocate && mcmc_dead_of(l, o, dead_opacity)) dead |= 1u << k;
        else if (mcmc_finite(l)) w[k] = mcmc_weight_of(o);
        ws += w[k];
    }
    uvec2 run = uvec2(ws, 0u), tw;
    uint dr = bitCount(dead), td;
    wg_scan(run, dr, tw, td);
    for (uint k = 0u; k < 4u; k++) {
        uint i = first + k, cc;
        if (i >= n) break;
        run = u64_add(run, uvec2(w[k], 0u), cc);
        prefix[i] = run; // inclusive, within the block
        rank[i] = ((dead >> k) & 1u) << 31 | dr;
        dr += (dead >> k) & 1u;
    }
    if (t == WG - 1u && blk < pc.u[ARG(9)]) blocks[blk] = uvec4(tw, td, 0u);
}
