/* mcmc.c — MCMC densification on host stores (mcmc.h): the plan the trainer decided (relocated
 * and new Gaussians), the opacity and scale regularizer gradients, the position noise. */
#include "backend/ref/mcmc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/ref/refine.h"
#include "core/core.h"
#include "core/threads.h"

int sp_mcmc_plan_check(const sp_mcmc_plan *p, int n) {
    if (p->n_after < n || p->count < 0 || (p->count > 0 && (!p->dst || !p->src || !p->opacity_logit || !p->log_scales)))
        return sp_error("mcmc: invalid plan (%d entries, %d -> %d Gaussians)", p->count, n, p->n_after);
    if ((int64_t)p->n_after - n > p->count)
        return sp_error("mcmc: the plan adds %d Gaussians but has %d entries", p->n_after - n, p->count);
    for (int k = 0; k < p->count; k++)
        if (p->dst[k] < 0 || p->dst[k] >= p->n_after || p->src[k] < 0 || p->src[k] >= n)
            return sp_error("mcmc: plan entry %d copies Gaussian %d to %d, outside %d -> %d", k, p->src[k], p->dst[k],
                            n, p->n_after);
    return 0;
}

int cpu_mcmc_apply(sp_gaussians *g, sp_gaussians *m, sp_gaussians *v, const sp_mcmc_plan *p) {
    int n = g->n;
    if (sp_mcmc_plan_check(p, n)) return -1;
    if (sp_gaussians_try_reserve(g, p->n_after) || sp_gaussians_try_reserve(m, p->n_after) ||
        sp_gaussians_try_reserve(v, p->n_after))
        return -1;
    g->n = m->n = v->n = p->n_after;
    for (int i = n; i < p->n_after; i++) cpu_zero_gaussian(g, i);
    /* entries are independent (backend.h): a copy reads only its source's means, quats and SH,
     * which no entry writes */
    for (int k = 0; k < p->count; k++) {
        int d = p->dst[k], s = p->src[k];
        if (d != s) {
            memcpy(g->means + 3 * (size_t)d, g->means + 3 * (size_t)s, 3 * sizeof(float));
            memcpy(g->quats + 4 * (size_t)d, g->quats + 4 * (size_t)s, 4 * sizeof(float));
            memcpy(g->sh + 3 * (size_t)g->K * d, g->sh + 3 * (size_t)g->K * s, 3 * (size_t)g->K * sizeof(float));
        }
        g->opacity_logits[d] = p->opacity_logit[k];
        memcpy(g->log_scales + 3 * (size_t)d, p->log_scales + 3 * (size_t)k, 3 * sizeof(float));
        cpu_zero_gaussian(m, d);
        cpu_zero_gaussian(v, d);
    }
    return 0;
}

void cpu_mcmc_weights(float opacity_reg, float scale_reg, int64_t n, float *wo, float *ws) {
    *wo = n > 0 ? opacity_reg / (float)n : 0.0f;
    *ws = n > 0 ? scale_reg / (float)(3 * n) : 0.0f;
}

void cpu_mcmc_reg_one(float logit, const float ls[3], float wo, float ws, float *g_logit, float g_ls[3]) {
    /* sigma (1 - sigma) = e / (1 + e)^2 with e = exp(-|logit|): 1 - sigma would cancel for opaque
     * Gaussians, turning an ulp of sigma into 1e-5 of the term */
    float e = expf(-fabsf(logit)), d = 1.0f + e;
    *g_logit += wo * (e / (d * d));
    for (int k = 0; k < 3; k++) g_ls[k] += ws * expf(ls[k]);
}

void cpu_mcmc_reg(const sp_gaussians *g, sp_gaussians *grad, float opacity_reg, float scale_reg) {
    int64_t n = g->n;
    if (n <= 0 || (opacity_reg == 0.0f && scale_reg == 0.0f)) return;
    float wo, ws;
    cpu_mcmc_weights(opacity_reg, scale_reg, n, &wo, &ws);
#pragma omp parallel for schedule(static) if (n >= 4096) num_threads(sp_omp_threads())
    for (int64_t i = 0; i < n; i++)
        cpu_mcmc_reg_one(g->opacity_logits[i], g->log_scales + 3 * i, wo, ws, grad->opacity_logits + i,
                         grad->log_scales + 3 * i);
}

void cpu_mcmc_noise_one(float means[3], const float q[4], const float ls[3], float logit, float noise_scale,
                        uint64_t seed, int64_t i) {
    float o = 1.0f / (1.0f + expf(-logit));
    float gate = 1.0f / (1.0f + expf(-SP_MCMC_GATE_K * ((1.0f - o) - SP_MCMC_GATE_X0)));
    float f = noise_scale * gate;
    if (f == 0.0f) return; /* adds exactly nothing: skip drawing */
    float qn = sqrtf(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
    float w = q[0] / qn, x = q[1] / qn, y = q[2] / qn, z = q[3] / qn;
    float R[9] = {1.0f - 2.0f * (y * y + z * z), 2.0f * (x * y - w * z), 2.0f * (x * z + w * y),
                  2.0f * (x * y + w * z), 1.0f - 2.0f * (x * x + z * z), 2.0f * (y * z - w * x),
                  2.0f * (x * z - w * y), 2.0f * (y * z + w * x), 1.0f - 2.0f * (x * x + y * y)};
    sp_rng r;
    sp_rng_seed(&r, seed, (uint64_t)i);
    float e[3], t[3];
    for (int k = 0; k < 3; k++) e[k] = sp_rng_normal(&r);
    /* Sigma e = R diag(s^2) R^T e */
    for (int k = 0; k < 3; k++) {
        float s = expf(ls[k]);
        t[k] = s * s * (R[k] * e[0] + R[3 + k] * e[1] + R[6 + k] * e[2]);
    }
    for (int k = 0; k < 3; k++) means[k] += f * (R[3 * k] * t[0] + R[3 * k + 1] * t[1] + R[3 * k + 2] * t[2]);
}

void cpu_mcmc_noise(sp_gaussians *g, float noise_scale, uint64_t seed) {
    int64_t n = g->n;
    if (n <= 0 || noise_scale == 0.0f) return;
#pragma omp parallel for schedule(static) if (n >= 4096) num_threads(sp_omp_threads())
    for (int64_t i = 0; i < n; i++)
        cpu_mcmc_noise_one(g->means + 3 * i, g->quats + 4 * i, g->log_scales + 3 * i, g->opacity_logits[i],
                           noise_scale, seed, i);
}
