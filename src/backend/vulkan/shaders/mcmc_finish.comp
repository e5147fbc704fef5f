#version 450
// mcmc_finish.comp — MCMC on the device, pass 3 of a phase (mcmc_refine.glsl): the block offsets
// added, so prefix holds the global inclusive sums and `list` the dead in index order; the draw
// counts zeroed.
#include "mcmc_refine.glsl"

void main() {
    uint i = gid();
    if (i >= mc_n()) return;
    uvec4 off = blocks[i / BLOCK];
    uint cc, r = rank[i];
    prefix[i] = u64_add(prefix[i], off.xy, cc);
    if ((r >> 31) != 0u) list[off.z + (r & 0x7fffffffu)] = i;
    times[i] = 0u;
}
