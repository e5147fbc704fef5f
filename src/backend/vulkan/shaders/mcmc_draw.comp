#version 450
// mcmc_draw.comp — MCMC on the device, pass 4 of a phase (mcmc_refine.glsl): draw k picks the first
// Gaussian whose inclusive prefix sum exceeds the hashed point of k (sp_mcmc_draw_point, sp_mcmc_pick)
// and counts itself there.
#include "mcmc_refine.glsl"

void main() {
    uint i = gid(), base = mc_scal(), n = mc_n();
    if (i >= scal[base + 3u]) return;
    uvec2 total = uvec2(scal[base], scal[base + 1u]);
    uvec2 x = mcmc_draw_point(uvec2(pc.u[ARG(6)], pc.u[ARG(7)]), mc_phase() + 1u, i, total);
    uint lo = 0u, hi = n - 1u;
    while (lo < hi) {
        uint mid = lo + (hi - lo) / 2u;
        uvec2 p = prefix[mid];
        if (p.y > x.y || (p.y == x.y && p.x > x.x)) hi = mid;
        else lo = mid + 1u;
    }
    drawn[i] = lo;
    atomicAdd(times[lo], 1u);
}
