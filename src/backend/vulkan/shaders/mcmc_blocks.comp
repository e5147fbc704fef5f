#version 450
// mcmc_blocks.comp — MCMC on the device, pass 2 of a phase (mcmc_refine.glsl), one workgroup: the
// blocks' totals scanned into their offsets; the phase's total weight, dead count and draw count in
// scal (the host's rules: nothing dead, nothing alive or no weight at all: no draws, no change).
#include "mcmc_refine.glsl"

void main() {
    uint n = mc_n(), nb = pc.u[ARG(9)], t = gl_LocalInvocationID.x, per = (nb + WG - 1u) / WG, cc;
    uint b0 = min(t * per, nb), b1 = min(b0 + per, nb);
    uvec2 w = uvec2(0u);
    uint d = 0u;
    for (uint b = b0; b < b1; b++) w = u64_add(w, blocks[b].xy, cc), d += blocks[b].z;
    uvec2 tw;
    uint td;
    wg_scan(w, d, tw, td);
    for (uint b = b0; b < b1; b++) {
        uvec4 v = blocks[b];
        blocks[b] = uvec4(w, d, 0u);
        w = u64_add(w, v.xy, cc), d += v.z;
    }
    if (t == 0u) {
        bool any_weight = tw.x != 0u || tw.y != 0u;
        uint count = mc_relocate() ? (any_weight && td > 0u && td < n ? td : 0u) : (any_weight ? pc.u[ARG(3)] : 0u);
        uint base = mc_scal();
        scal[base] = tw.x, scal[base + 1u] = tw.y, scal[base + 2u] = td, scal[base + 3u] = count;
    }
}
