/* cu_rng.cuh — device helpers that make GPU random choices and transcendental values match the
 * host reference: PCG32 streams as in src/core/core.c (sp_rng_seed, sp_rng_normal) and exp/log/cos
 * through double, rounded once to float (what the host's nearly correctly rounded expf/logf/cosf
 * give). Used by refine.cu and mcmc.cu. */
#ifndef SPLAT_CU_RNG_CUH
#define SPLAT_CU_RNG_CUH

#include <stdint.h>

__device__ static inline float cr_expf(float x) { return (float)exp((double)x); }
__device__ static inline float cr_logf(float x) { return (float)log((double)x); }
__device__ static inline float cr_cosf(float x) { return (float)cos((double)x); }

typedef struct {
    uint64_t state, inc;
} cu_rng;

__device__ static inline uint32_t rng_u32(cu_rng *r) {
    uint64_t old = r->state;
    r->state = old * 6364136223846793005ULL + r->inc;
    uint32_t xs = (uint32_t)(((old >> 18u) ^ old) >> 27u);
    uint32_t rot = (uint32_t)(old >> 59u);
    return (xs >> rot) | (xs << ((-rot) & 31));
}

__device__ static inline void rng_seed(cu_rng *r, uint64_t seed, uint64_t stream) {
    r->state = 0;
    r->inc = (stream << 1u) | 1u;
    rng_u32(r);
    r->state += seed;
    rng_u32(r);
}

__device__ static inline float rng_normal(cu_rng *r) {
    float u1 = ((float)(rng_u32(r) >> 8) + 0.5f) * (1.0f / 16777216.0f);
    float u2 = (float)(rng_u32(r) >> 8) * (1.0f / 16777216.0f);
    return sqrtf(-2.0f * cr_logf(u1)) * cr_cosf(6.28318530718f * u2);
}

#endif
