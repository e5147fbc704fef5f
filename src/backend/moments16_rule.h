/* moments16_rule.h — Adam's moments in 16 bits each (adam.moments16), written once for the host
 * (backend/ref/adam.c and the fused update in ref/project.c, which the cpu backend runs) and the
 * CUDA kernels (cuda/adam.cu, cuda/project.cu); vulkan's shaders/adam.comp repeats it.
 *
 * The update of a step is bound by memory at millions of Gaussians: a value, its m and its v read
 * and written, 24 bytes a value a step (59 values a Gaussian at SH degree 3). With adam.moments16
 * the word that would hold a value's m holds both moments in 16 bits each and the second store is
 * unused (zero on the cpu and vulkan backends; cuda does not allocate it): 16 bytes a value. m is
 * a bfloat16 (the float's top 16 bits: sign, 8 exponent and 7 mantissa bits) in the low half; v,
 * never negative, is the float's 16 bits after the sign (8 exponent and 8 mantissa bits) in the
 * high half.
 *
 *   - the arithmetic is the float update (m and v widened exactly, the new m and v and the step
 *     computed in float), then the new moments are rounded to 16 bits;
 *   - the rounding is stochastic: the bits dropped (16 of m, 15 of v) are added to as many random
 *     bits before they are cut, so a moment rounds up with probability equal to its distance from
 *     the lower value and its expectation is exact. Round-to-nearest would stop v from decaying:
 *     0.999 v rounds back to v when the change is below half a step (0.1 % to 0.2 % for v);
 *   - the random bits of value e at update t (the 1-based Adam step) are sp_m16_bits(t, e), one
 *     32-bit hash: the low 16 bits round m, the top 15 v. e is the value's index in the packed
 *     layout of the n Gaussians, the groups back to back: means (3n), log-scales (3n), rotations
 *     (4n), opacity logits (n), SH (3Kn); value j of Gaussian i in a group of w values a Gaussian
 *     that starts at s is e = s + w i + j (sp_m16_group_start). Every backend and every split of
 *     the work (thread, block, device, range) gives the same bits;
 *   - infinities stay infinite and NaN stays NaN; zero stays zero (v's sign is dropped: -0 is 0),
 *     so zeroed moments (a new or relocated Gaussian's, a reset opacity's) are the zero word.
 *
 * Models move between backends and checkpoints in float: a backend unpacks (exact) when it hands
 * its moments out and packs when it takes them in, rounding to nearest (sp_m16_pack_nearest), which
 * leaves moments that came from a packed run as they were. */
#ifndef SPLAT_MOMENTS16_RULE_H
#define SPLAT_MOMENTS16_RULE_H

#include <stdint.h>
#include <string.h>

#if defined(__CUDACC__)
#define SP_M16_FN __host__ __device__ static inline
#else
#define SP_M16_FN static inline
#endif

SP_M16_FN uint32_t sp_m16_f2u(float x) {
#if defined(__CUDA_ARCH__)
    return __float_as_uint(x);
#else
    uint32_t u;
    memcpy(&u, &x, 4);
    return u;
#endif
}

SP_M16_FN float sp_m16_u2f(uint32_t u) {
#if defined(__CUDA_ARCH__)
    return __uint_as_float(u);
#else
    float x;
    memcpy(&x, &u, 4);
    return x;
#endif
}

/* Where group g (0 means, 1 log-scales, 2 rotations, 3 opacity logits, 4 SH) of n Gaussians starts
 * in the packed layout. */
SP_M16_FN int64_t sp_m16_group_start(int g, int64_t n) {
    return (int64_t)(g == 0 ? 0 : g == 1 ? 3 : g == 2 ? 6 : g == 3 ? 10 : 11) * n;
}

/* The random bits of value e at Adam step t: a multiply-xorshift mix of both. */
SP_M16_FN uint32_t sp_m16_bits(uint32_t t, uint64_t e) {
    uint32_t x = (uint32_t)e * 0x9e3779b1u ^ (uint32_t)(e >> 32) * 0x7f4a7c15u;
    x += t * 0x85ebca77u;
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    x ^= x >> 16;
    return x;
}

/* x as bfloat16 bits, its low 16 bits dropped after r (0 .. 0xffff) is added: stochastic rounding
 * for random r, nearest (ties away from zero) for r = 0x8000. */
SP_M16_FN uint32_t sp_m16_round(float x, uint32_t r) {
    uint32_t u = sp_m16_f2u(x);
    if ((u & 0x7f800000u) == 0x7f800000u) /* infinity stays, NaN stays NaN */
        return (u >> 16) | ((u & 0x007fffffu) ? 0x0040u : 0u);
    return (u + r) >> 16; /* a carry moves the exponent up: still the value rounded up */
}

/* v (not negative) as its float bits 30 .. 15, its low 15 bits dropped after r (0 .. 0x7fff) is
 * added: stochastic for random r, nearest (ties up) for r = 0x4000. */
SP_M16_FN uint32_t sp_m16_round_v(float v, uint32_t r) {
    uint32_t u = sp_m16_f2u(v) & 0x7fffffffu;
    if ((u & 0x7f800000u) == 0x7f800000u) /* infinity stays, NaN stays NaN */
        return (u >> 15) | ((u & 0x007fffffu) ? 0x0080u : 0u);
    return (u + r) >> 15;
}

SP_M16_FN float sp_m16_m(uint32_t w) { return sp_m16_u2f(w << 16); }
SP_M16_FN float sp_m16_v(uint32_t w) { return sp_m16_u2f((w >> 16) << 15); }

/* The word of moments m and v with random bits r (sp_m16_bits). */
SP_M16_FN uint32_t sp_m16_pack(float m, float v, uint32_t r) {
    return sp_m16_round(m, r & 0xffffu) | sp_m16_round_v(v, r >> 17) << 16;
}

SP_M16_FN uint32_t sp_m16_pack_nearest(float m, float v) { return sp_m16_pack(m, v, 0x80008000u); }

#endif
