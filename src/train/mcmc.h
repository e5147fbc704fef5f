/* mcmc.h — the host decisions of MCMC densification (refine.strategy = "mcmc", docs/math.md
 * "MCMC"): which Gaussians are dead, which live ones receive them or the new ones (drawn with
 * probability proportional to opacity), and the opacity and scales that keep the rendered sum of a
 * Gaussian and its copies. Pure functions of host arrays and a seed: every backend applies the same
 * plan (sp_mcmc_plan in backend/backend.h), so CPU and GPU runs make identical decisions. */
#ifndef SPLAT_TRAIN_MCMC_H
#define SPLAT_TRAIN_MCMC_H

#include <stdint.h>

#include "backend/backend.h"
#include "backend/mcmc_rule.h" /* the arithmetic shared with the device: weights, draws, spread */

/* A plan under construction (owns its arrays); plan() gives the view the backends take. */
typedef struct {
    int n_after, count, cap;
    int32_t *dst, *src;
    float *opacity_logit, *log_scales;
} sp_mcmc_buf;

/* Draws count indices in [0, n) with replacement, index i with probability weight[i] / sum
 * (weights in [0, 1] quantized to 24 bits; non-finite counts as 0), draw k a pure function of
 * (seed, stream, k) (backend/mcmc_rule.h). Returns the number drawn: count, or 0 when every weight
 * is 0; -1 when out of memory. */
int sp_mcmc_sample(const float *weight, int n, int count, uint64_t seed, uint64_t stream, int32_t *out);

/* Relocation: every Gaussian with sigmoid(logit) < dead_opacity (or a non-finite logit) moves onto
 * a live one drawn by opacity. Appends the entries to buf (n_after = n). Returns the number moved,
 * -1 on out of memory. */
int sp_mcmc_relocate(sp_mcmc_buf *buf, int n, const float *logits, const float *log_scales, float dead_opacity,
                     uint64_t seed);
/* Growth: add Gaussians (n_after = n + add) as copies of ones drawn by opacity. Returns the number
 * added (0 when every opacity is 0), -1 on out of memory. */
int sp_mcmc_add(sp_mcmc_buf *buf, int n, const float *logits, const float *log_scales, int add, float min_opacity,
                uint64_t seed);
/* refine.max_gaussians = 0 (auto): SP_MCMC_BUDGET_BASE Gaussians per SP_MCMC_BUDGET_PIXELS training
 * pixels (lego's 100 views of 800x800, 64M pixels, need 340k with the 20k-step default: 310k gave
 * 0.03 dB less, bench/RESULTS.md session 21; fox's 118M measured no better with 514k than 280k at 30k
 * steps, session 15), never fewer than SP_MCMC_BUDGET_BASE nor than
 * twice the sparse points the model may start from, at most SP_MCMC_BUDGET_MAX, and no more than
 * half of device_free_bytes holds at SP_MCMC_BYTES_PER_GAUSSIAN (device_free_bytes 0: no such
 * bound). Rounded to thousands. *why (may be NULL) receives which bound decided. */
#define SP_MCMC_BUDGET_BASE 340000
#define SP_MCMC_BUDGET_PIXELS 128e6
#define SP_MCMC_BUDGET_MAX 20000000
#define SP_MCMC_BYTES_PER_GAUSSIAN 1536 /* parameters, gradients and Adam moments at SH degree 3, pairs */
int sp_mcmc_auto_budget(double train_pixels, int num_points, double device_free_bytes, const char **why);

/* How many a refine adds: floor(grow * n), but not past max_gaussians. */
int sp_mcmc_add_count(int n, double grow, int max_gaussians);

/* The plan's effect on host copies of the opacity logits and log-scales (sized for n_after). */
void sp_mcmc_apply_host(const sp_mcmc_buf *buf, float *logits, float *log_scales);

/* One MCMC refine on a backend: reads the opacities and scales, relocates the dead, applies that,
 * then adds sp_mcmc_add_count(n, grow, max_gaussians) and applies that. seed: this refine's. */
typedef struct {
    int relocated, added, n_before, n_after;
} sp_mcmc_result;
int sp_mcmc_refine(sp_backend *b, float dead_opacity, double grow, int max_gaussians, uint64_t seed,
                   sp_mcmc_result *res);
/* A run that will refine with sp_mcmc_refine says so before its first step: a backend that
 * decides on its device may start making what that needs (ops->mcmc_prepare). */
void sp_mcmc_prepare(sp_backend *b);

sp_mcmc_plan sp_mcmc_plan_of(const sp_mcmc_buf *buf);
void sp_mcmc_buf_clear(sp_mcmc_buf *buf);
void sp_mcmc_buf_free(sp_mcmc_buf *buf);

#endif
