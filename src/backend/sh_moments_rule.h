/* sh_moments_rule.h — the SH coefficients' Adam moments in 16 bits each (adam.sh_bf16), written once
 * for the host (backend/ref/adam.c and the fused update in ref/project.c, which the cpu backend
 * runs) and the CUDA kernels (cuda/adam.cu, cuda/project.cu); vulkan's shaders/adam.comp repeats it.
 *
 * The SH coefficients are 48 of a Gaussian's 59 values at degree 3, and their update is bound by
 * memory: value, m and v read and written, 24 bytes a coefficient a step. With adam.sh_bf16 the
 * word that would hold a coefficient's m holds both moments in 16 bits each and the second store's
 * SH floats are unused (zero): 16 bytes a coefficient. m is a bfloat16 (the float's top 16 bits:
 * sign, 8 exponent and 7 mantissa bits) in the low half; v, never negative, is the float's 16 bits
 * after the sign (8 exponent and 8 mantissa bits) in the high half.
 *
 *   - the arithmetic is the float update of every other value (m and v widened exactly, the new m
 *     and v and the step computed in float), then the new moments are rounded to 16 bits;
 *   - the rounding is stochastic: the bits dropped (16 of m, 15 of v) are added to as many random
 *     bits before they are cut, so a moment rounds up with probability equal to its distance from
 *     the lower value and its expectation is exact. Round-to-nearest would stop v from decaying:
 *     0.999 v rounds back to v when the change is below half a step (0.1 % to 0.2 % for v);
 *   - the random bits of coefficient e (its index in the SH store, Gaussian i's coefficient c is
 *     e = i 3K + c) at update t (the 1-based Adam step) are sp_shm_bits(t, e), one 32-bit hash: the
 *     low 16 bits round m, the top 15 v. Every backend and every split of the work (thread, block,
 *     device, range) gives the same bits;
 *   - infinities stay infinite and NaN stays NaN; zero stays zero (v's sign is dropped: -0 is 0),
 *     so zeroed moments (a new or relocated Gaussian's) are the packed zero word.
 *
 * Models move between backends and checkpoints in float: a backend unpacks (exact) when it hands
 * its moments out and packs when it takes them in, rounding to nearest (sp_shm_pack_nearest), which
 * leaves moments that came from a packed run as they were. */
#ifndef SPLAT_SH_MOMENTS_RULE_H
#define SPLAT_SH_MOMENTS_RULE_H

#include <stdint.h>
#include <string.h>

#if defined(__CUDACC__)
#define SP_SHM_FN __host__ __device__ static inline
#else
#define SP_SHM_FN static inline
#endif

SP_SHM_FN uint32_t sp_shm_f2u(float x) {
#if defined(__CUDA_ARCH__)
    return __float_as_uint(x);
#else
    uint32_t u;
    memcpy(&u, &x, 4);
    return u;
#endif
}

SP_SHM_FN float sp_shm_u2f(uint32_t u) {
#if defined(__CUDA_ARCH__)
    return __uint_as_float(u);
#else
    float x;
    memcpy(&x, &u, 4);
    return x;
#endif
}

/* The random bits of SH coefficient e at Adam step t: a multiply-xorshift mix of both. */
SP_SHM_FN uint32_t sp_shm_bits(uint32_t t, uint64_t e) {
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
SP_SHM_FN uint32_t sp_shm_round(float x, uint32_t r) {
    uint32_t u = sp_shm_f2u(x);
    if ((u & 0x7f800000u) == 0x7f800000u) /* infinity stays, NaN stays NaN */
        return (u >> 16) | ((u & 0x007fffffu) ? 0x0040u : 0u);
    return (u + r) >> 16; /* a carry moves the exponent up: still the value rounded up */
}

/* v (not negative) as its float bits 30 .. 15, its low 15 bits dropped after r (0 .. 0x7fff) is
 * added: stochastic for random r, nearest (ties up) for r = 0x4000. */
SP_SHM_FN uint32_t sp_shm_round_v(float v, uint32_t r) {
    uint32_t u = sp_shm_f2u(v) & 0x7fffffffu;
    if ((u & 0x7f800000u) == 0x7f800000u) /* infinity stays, NaN stays NaN */
        return (u >> 15) | ((u & 0x007fffffu) ? 0x0080u : 0u);
    return (u + r) >> 15;
}

SP_SHM_FN float sp_shm_m(uint32_t w) { return sp_shm_u2f(w << 16); }
SP_SHM_FN float sp_shm_v(uint32_t w) { return sp_shm_u2f((w >> 16) << 15); }

/* The word of moments m and v with random bits r (sp_shm_bits). */
SP_SHM_FN uint32_t sp_shm_pack(float m, float v, uint32_t r) {
    return sp_shm_round(m, r & 0xffffu) | sp_shm_round_v(v, r >> 17) << 16;
}

SP_SHM_FN uint32_t sp_shm_pack_nearest(float m, float v) { return sp_shm_pack(m, v, 0x80008000u); }

#endif
