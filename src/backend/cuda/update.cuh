/* update.cuh — the per-element arithmetic of a step's update, written once for every kernel that
 * applies it: the Adam update of one parameter (adam.cu's k_adam4, project.cu's fused
 * project_back + update), and MCMC's regularizer gradients and position noise of one Gaussian
 * (mcmc.cu's kernels, the same fused kernel). Each follows the CPU reference (backend/ref/adam.c,
 * backend/ref/mcmc.c) operation for operation. */
#ifndef SPLAT_CU_UPDATE_CUH
#define SPLAT_CU_UPDATE_CUH

#include "backend/cuda/cu_rng.cuh"
#include "backend/cuda/cuda_internal.h"
#include "backend/moments16_rule.h"

extern "C" {
#include "backend/ref/mcmc.h" /* the noise gate: SP_MCMC_GATE_K, SP_MCMC_GATE_X0 */
}

/* Adam's step lr m / (sqrt(v) + eps) with the hardware's approximate square root and division
 * (about 1 and 2 units in the last place; v >= 0 and sqrt(v) + eps >= eps_t, far above 2^-126, the
 * division's range), not the IEEE-rounded ones, whose refinement costs some twenty instructions a
 * value: with 16-bit moments the update at millions of Gaussians is bound by its instructions
 * (3M Gaussians: the update 1.86 -> 1.55 ms/step on an H100, 1.16 -> 1.00 over a whole lego run on
 * an H200; docs/speed.md). The host's backend/ref/adam.c rounds both exactly; the parity
 * harness allows 1e-6 (largest error seen 1.2e-7). */
__device__ __forceinline__ float adam_step(float lr_m, float v, float eps) {
    float s;
    asm("sqrt.approx.f32 %0, %1;" : "=f"(s) : "f"(v));
    return __fdividef(lr_m, __fadd_rn(s, eps));
}

/* One element's Adam update with the step's lr_t and eps_t (sp_adam_bias: the bias correction is
 * in them), every operation but adam_step's rounded on its own in the reference's order (no
 * contraction into fused multiply-adds, which the compiler would choose per kernel): every kernel
 * that updates gives the same bits, and m and v are backend/ref/adam.c's bit for bit. */
__device__ __forceinline__ void adam_val(float *p, float gi, float *m, float *v, float lr, const cu_adam_args *a) {
    float mi = __fadd_rn(__fmul_rn(a->beta1, *m), __fmul_rn(__fsub_rn(1.0f, a->beta1), gi));
    float vi = __fadd_rn(__fmul_rn(a->beta2, *v), __fmul_rn(__fmul_rn(__fsub_rn(1.0f, a->beta2), gi), gi));
    *m = mi;
    *v = vi;
    *p = __fsub_rn(*p, adam_step(__fmul_rn(lr, mi), vi, a->eps));
}

/* adam_val on a value whose moments are the packed word *w (adam.moments16), e its index in the
 * packed layout (backend/moments16_rule.h: the host's cpu_adam_one_m16, the same bits). */
__device__ __forceinline__ void adam_val_m16(float *p, float gi, uint32_t *w, float lr, const cu_adam_args *a,
                                              uint64_t e) {
    float m = sp_m16_m(*w), v = sp_m16_v(*w);
    adam_val(p, gi, &m, &v, lr, a);
    *w = sp_m16_pack(m, v, sp_m16_bits(a->step, e));
}

/* MCMC's regularizer gradients of one Gaussian added to its opacity-logit and log-scale gradients:
 * wo = opacity_reg / n, ws = scale_reg / 3n. sigma (1 - sigma) as e / (1 + e)^2, e = exp(-|logit|):
 * no cancellation in 1 - sigma (cpu/mcmc.c). */
__device__ __forceinline__ void mcmc_reg_one(float logit, const float *log_scales, float wo, float ws, float *g_op,
                                             float *g_ls) {
    float e = cr_expf(-fabsf(logit)), d = __fadd_rn(1.0f, e);
    *g_op = __fadd_rn(*g_op, __fmul_rn(wo, __fdiv_rn(e, __fmul_rn(d, d))));
    for (int k = 0; k < 3; k++) g_ls[k] = __fadd_rn(g_ls[k], __fmul_rn(ws, cr_expf(log_scales[k])));
}

/* MCMC's position noise of Gaussian i (after its Adam update): a normal step shaped by its
 * covariance, gated by its opacity, from the PCG32 stream (seed, i) as the host draws it. */
__device__ __forceinline__ void mcmc_noise_one(const cu_params &P, int i, float scale, uint64_t seed) {
    float o = 1.0f / (1.0f + cr_expf(-P.opacity_logits[i]));
    float gate = 1.0f / (1.0f + cr_expf(-SP_MCMC_GATE_K * ((1.0f - o) - SP_MCMC_GATE_X0)));
    float f = scale * gate;
    if (f == 0.0f) return;
    const float *q = P.quats + 4 * (size_t)i, *ls = P.log_scales + 3 * (size_t)i;
    float qn = sqrtf(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
    float w = q[0] / qn, x = q[1] / qn, y = q[2] / qn, z = q[3] / qn;
    float R[9] = {1.0f - 2.0f * (y * y + z * z), 2.0f * (x * y - w * z), 2.0f * (x * z + w * y),
                  2.0f * (x * y + w * z),        1.0f - 2.0f * (x * x + z * z), 2.0f * (y * z - w * x),
                  2.0f * (x * z - w * y),        2.0f * (y * z + w * x), 1.0f - 2.0f * (x * x + y * y)};
    cu_rng r;
    rng_seed(&r, seed, (uint64_t)i);
    float e[3], t[3];
    for (int k = 0; k < 3; k++) e[k] = rng_normal(&r);
    for (int k = 0; k < 3; k++) {
        float s = cr_expf(ls[k]);
        t[k] = s * s * (R[k] * e[0] + R[3 + k] * e[1] + R[6 + k] * e[2]);
    }
    for (int k = 0; k < 3; k++)
        P.means[3 * (size_t)i + k] += f * (R[3 * k] * t[0] + R[3 * k + 1] * t[1] + R[3 * k + 2] * t[2]);
}

#endif
