#version 450
// mcmc_spread.comp — MCMC on the device, pass 5 of a phase (mcmc_refine.glsl): each drawn source's
// new opacity logit and log-scales (sp_mcmc_spread, from its values now) into sp.
#include "mcmc_refine.glsl"

void main() {
    uint i = gid(), c = cap_();
    if (i >= mc_n() || times[i] == 0u) return;
    vec3 ls = vec3(P[3u * c + 3u * i], P[3u * c + 3u * i + 1u], P[3u * c + 3u * i + 2u]);
    float ol;
    vec3 ols;
    mcmc_spread(P[10u * c + i], ls, times[i], pf(ARG(8)), ol, ols);
    sp[i] = vec4(ol, ols);
}
