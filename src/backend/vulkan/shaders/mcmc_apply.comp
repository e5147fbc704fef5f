#version 450
// mcmc_apply.comp — MCMC on the device, pass 6 of a phase (mcmc_refine.glsl): copy k's destination
// (the k-th dead, or n + k) takes its source's means, rotation and SH, the spread values and zero
// moments; each drawn source takes the spread values and zero moments itself. A copy reads its
// source's means, rotation and SH, which nothing writes, and the spread values from sp.
#include "mcmc_refine.glsl"

void main() {
    uint i = gid(), n = mc_n(), c = cap_(), k3 = pc.u[ARG(5)];
    if (i < scal[mc_scal() + 3u]) {
        uint d = mc_relocate() ? list[i] : n + i, s = drawn[i];
        for (uint k = 0u; k < 3u; k++) P[3u * d + k] = P[3u * s + k];
        for (uint k = 0u; k < 4u; k++) P[6u * c + 4u * d + k] = P[6u * c + 4u * s + k];
        for (uint k = 0u; k < k3; k++) P[11u * c + k3 * d + k] = P[11u * c + k3 * s + k];
        set_spread(d, sp[s]);
        zero_moments(d);
    }
    if (i < n && times[i] != 0u) {
        set_spread(i, sp[i]);
        zero_moments(i);
    }
}
