// mcmc_rule.glsl — backend/mcmc_rule.h for the Vulkan shaders (mcmc_*.comp): the same
// weights, draw points and spread as the host (train/mcmc.c) and the CUDA kernels, so the device
// draws the Gaussians the host would and gives them the values the host would, bit for bit.
// The host computes in double; these functions reproduce each of its double (and float)
// operations with xfloat.glsl, rounding where the host rounds (xf_dbl: to 53 bits, then xf_round(,
// 24) where it converts to float). exp, log and pow are good to a few units of 2^-63 before that
// rounding, so a result can differ from glibc's only where glibc's own (under 0.52 ulp) or ours
// sits within that distance of a rounding midpoint, and even then the float the host keeps almost
// always rounds the same. Float subnormals are not reproduced: an opacity below 2^-126 counts as
// below any weight and floor (only a dead opacity under 2^-126 could tell).
// The constants are mcmc_const.glsl's (checked against mcmc_rule.h by the C side).
#include "mcmc_const.glsl"
#include "xfloat.glsl"

// ---- the 64-bit hash of the draw points (uvec2: low, high) ----

uvec2 u64_mul_lo(uvec2 a, uvec2 b) {
    uint hi, lo;
    umulExtended(a.x, b.x, hi, lo);
    return uvec2(lo, hi + a.x * b.y + a.y * b.x);
}

// the high 64 bits of the 128-bit product
uvec2 u64_mul_hi(uvec2 a, uvec2 b) {
    uint h00, l00, h01, l01, h10, l10, h11, l11;
    umulExtended(a.x, b.x, h00, l00);
    umulExtended(a.x, b.y, h01, l01);
    umulExtended(a.y, b.x, h10, l10);
    umulExtended(a.y, b.y, h11, l11);
    uint c1, c2, c3, c4, c5;
    uint p1 = uaddCarry(h00, l01, c1);
    p1 = uaddCarry(p1, l10, c2);
    uint p2 = uaddCarry(h01, h10, c3);
    p2 = uaddCarry(p2, l11, c4);
    p2 = uaddCarry(p2, c1 + c2, c5);
    return uvec2(p2, h11 + c3 + c4 + c5);
}

// sp_mcmc_mix
uvec2 mcmc_mix(uvec2 z) {
    z = u64_mul_lo(z ^ u64_shr(z, 30u), uvec2(VK_MCMC_MIX1_LO, VK_MCMC_MIX1_HI));
    z = u64_mul_lo(z ^ u64_shr(z, 27u), uvec2(VK_MCMC_MIX2_LO, VK_MCMC_MIX2_HI));
    return z ^ u64_shr(z, 31u);
}

// sp_mcmc_draw_point(seed, stream, k, total)
uvec2 mcmc_draw_point(uvec2 seed, uint stream, uint k, uvec2 total) {
    uint c;
    uvec2 a = mcmc_mix(seed ^ u64_mul_lo(uvec2(stream, 0u), uvec2(VK_MCMC_STREAM_LO, VK_MCMC_STREAM_HI)));
    uvec2 h = u64_add(a, u64_mul_lo(uvec2(k, 0u), uvec2(VK_MCMC_DRAW_LO, VK_MCMC_DRAW_HI)), c);
    h = u64_add(h, uvec2(1u, 0u), c);
    return u64_mul_hi(mcmc_mix(h), total);
}

// ---- weights ----

bool mcmc_finite(float x) { return (floatBitsToUint(x) & 0x7f800000u) != 0x7f800000u; }

// sp_mcmc_opacity_of: 1 / (1 + e) in float, e = exp(-(double)logit) rounded to double, then to float.
xf mcmc_opacity(float logit) {
    if (logit > 17.0) return XF_ONE;   // e <= exp(-17) < 2^-24: 1 + e rounds to 1
    if (logit < -89.0) return XF_ZERO; // exp(89) > FLT_MAX: e is infinite, 1 / (1 + e) = 0
    xf e = xf_round(xf_dbl(xf_exp(xf_from_float(-logit))), 24u);
    if (e.e >= 128) return XF_ZERO; // rounds to infinity as a float
    return xf_round(xf_div_n(XF_ONE, xf_round(xf_add(XF_ONE, e), 24u), 27), 24u);
}

// sp_mcmc_weight(logit, 0) of an opacity from mcmc_opacity: (uint)(o * 2^24)
uint mcmc_weight_of(xf o) {
    if (xf_is_zero(o) || o.e < -VK_MCMC_WEIGHT_BITS) return 0u;
    return o.m.y >> uint(31 - VK_MCMC_WEIGHT_BITS - o.e);
}

// sp_mcmc_dead(logit, dead_opacity) with o = mcmc_opacity(logit)
bool mcmc_dead_of(float logit, xf o, float dead_opacity) {
    return !mcmc_finite(logit) || xf_lt(o, xf_from_float(dead_opacity));
}

// ---- the spread: new opacity and scales of each copy of a source drawn `drawn` times ----

// A double of the table (two words per double from word 2 * idx).
xf mcmc_tab(uint idx);

// sp_mcmc_spread(logit, ls, drawn, min_opacity): tables sqrt(j) (idx j) and 1 / c (idx 64 + c)
// as the host's sqrt and division give them.
void mcmc_spread(float logit, vec3 ls, uint drawn, float min_opacity, out float out_logit, out vec3 out_ls) {
    uint copies = min(drawn + 1u, uint(VK_MCMC_MAX_COPIES));
    xf o = xf_dbl(xf_div_n(XF_ONE, xf_dbl(xf_add(XF_ONE, xf_dbl(xf_exp(xf_from_float(-logit))))), 56));
    xf on = o, f = XF_ONE;
    if (copies > 1u) {
        // sp_mcmc_opacity: 1 - pow(1 - o, 1 / copies)
        xf base = xf_dbl(xf_sub(XF_ONE, o));
        xf p = xf_is_zero(base) ? XF_ZERO : xf_dbl(xf_exp(xf_mul(mcmc_tab(64u + copies), xf_log(base))));
        on = xf_dbl(xf_sub(XF_ONE, p));
        // sp_mcmc_scale_factor: binomials exact (integers below 2^53), the rest rounded as the host
        xf sum = XF_ZERO, binom = XF_ONE, pw = XF_ONE;
        for (uint j = 1u; j <= copies; j++) {
            binom = xf_div_small(xf_mul_uint(binom, copies - j + 1u), j);
            pw = xf_dbl(xf_mul(pw, on));
            xf term = xf_dbl(xf_div_n(xf_dbl(xf_mul(binom, pw)), mcmc_tab(j), 56));
            sum = xf_dbl((j & 1u) != 0u ? xf_add(sum, term) : xf_sub(sum, term));
        }
        f = xf_lt(XF_ZERO, sum) ? xf_dbl(xf_div_n(o, sum, 56)) : XF_ONE;
    }
    // clamp to [max(min_opacity, 1e-6), 1 - 1e-6]
    xf eps = xf_from_double(uvec2(VK_MCMC_EPS_LO, VK_MCMC_EPS_HI));
    xf lo = xf_from_float(min_opacity), hi = xf_dbl(xf_sub(XF_ONE, eps));
    if (!xf_lt(eps, lo)) lo = eps;
    on = xf_lt(on, lo) ? lo : xf_lt(hi, on) ? hi : on;
    xf ratio = xf_dbl(xf_div_n(on, xf_dbl(xf_sub(XF_ONE, on)), 56));
    out_logit = xf_to_float(xf_round(xf_dbl(xf_log(ratio)), 24u));
    xf lf = xf_dbl(xf_log(f));
    [[unroll]] for (int c = 0; c < 3; c++) out_ls[c] = xf_to_float(xf_round(xf_dbl(xf_add(xf_from_float(ls[c]), lf)), 24u));
}
