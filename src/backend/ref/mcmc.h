/* mcmc.h — the MCMC densification terms on host arrays (refine.strategy = "mcmc", docs/math.md
 * "MCMC"): a plan applied to the stores, the regularizer gradients and the position noise. The
 * CPU backend runs them; the GPU backends are tested against them. */
#ifndef SPLAT_REF_MCMC_H
#define SPLAT_REF_MCMC_H

#include "backend/backend.h"

/* Sigmoid gate of the noise on 1 - opacity: 1 / (1 + exp(-K (1 - o - X0))), nearly 1 only for
 * nearly transparent Gaussians. */
#define SP_MCMC_GATE_K 100.0f
#define SP_MCMC_GATE_X0 0.995f

/* Applies plan p to parameters g and moments m, v (resized to p->n_after; appended Gaussians are
 * all written by the plan). -1 with an error naming the entry when the plan is invalid, or out of
 * memory (then nothing has changed). */
int cpu_mcmc_apply(sp_gaussians *g, sp_gaussians *m, sp_gaussians *v, const sp_mcmc_plan *p);
/* grad += d/dparams of opacity_reg * mean_i sigmoid(logit_i) + scale_reg * mean_ik exp(log_scale_ik). */
void cpu_mcmc_reg(const sp_gaussians *g, sp_gaussians *grad, float opacity_reg, float scale_reg);
/* means_i += noise_scale * gate(o_i) * Sigma_i e_i, e_i three normals of stream (seed, i). */
void cpu_mcmc_noise(sp_gaussians *g, float noise_scale, uint64_t seed);
/* The same, one Gaussian at a time (the cpu backend's fused step): the weights per value
 * (opacity_reg / n, scale_reg / 3n), Gaussian i's regularizer terms added to its gradients, and its
 * noise added to its mean (i: its index, the noise stream's). */
void cpu_mcmc_weights(float opacity_reg, float scale_reg, int64_t n, float *wo, float *ws);
void cpu_mcmc_reg_one(float logit, const float ls[3], float wo, float ws, float *g_logit, float g_ls[3]);
void cpu_mcmc_noise_one(float means[3], const float q[4], const float ls[3], float logit, float noise_scale,
                        uint64_t seed, int64_t i);
/* The checks mcmc_apply makes on a plan for a store of n Gaussians; -1 with the error. */
int sp_mcmc_plan_check(const sp_mcmc_plan *p, int n);

#endif
