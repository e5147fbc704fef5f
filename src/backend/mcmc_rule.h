/* mcmc_rule.h — the arithmetic of MCMC's decisions (refine.strategy = "mcmc", docs/math.md "MCMC"),
 * written once for the host (train/mcmc.c, which decides for the cpu and vulkan backends) and the
 * CUDA kernels (cuda/mcmc.cu, which decide on the device), so both draw the same Gaussians:
 *
 *   - a Gaussian's weight is its opacity quantized to 24 bits (sigmoid of the logit through a
 *     double exp rounded to float, as on the device; 0 for a non-finite logit or below a floor),
 *     so sums of weights are exact integers whatever order adds them;
 *   - draw k of stream s picks the first index whose inclusive prefix sum exceeds
 *     x_k = floor(h(seed, s, k) * total / 2^64), h a 64-bit mix of (seed, s, k): every draw is
 *     independent of the others, so a device makes them all at once;
 *   - a source drawn c times keeps c + 1 copies (itself included, at most SP_MCMC_MAX_COPIES), each
 *     with the opacity and scales of sp_mcmc_spread, computed in double from the source's values. */
#ifndef SPLAT_MCMC_RULE_H
#define SPLAT_MCMC_RULE_H

#include <math.h>
#include <stdint.h>

#if defined(__CUDACC__)
#define SP_MR_FN __host__ __device__ static inline
#else
#define SP_MR_FN static inline
#endif

/* Copies of one Gaussian at most (itself included) whose opacity and scale the formulas spread:
 * a source drawn more often keeps this many copies' worth (the alternating sum stays exact in
 * double up to here). */
#define SP_MCMC_MAX_COPIES 51
#define SP_MCMC_WEIGHT_ONE 16777216.0f /* the weight of opacity 1 */

/* sigmoid(logit) in float, through a double exp rounded to float (what the device computes too). */
SP_MR_FN float sp_mcmc_opacity_of(float logit) {
    float e = (float)exp(-(double)logit);
#if defined(__CUDA_ARCH__)
    return __fdiv_rn(1.0f, __fadd_rn(1.0f, e));
#else
    return 1.0f / (1.0f + e);
#endif
}

/* The quantized weight of a Gaussian: 0 when the logit is not finite or the opacity is below floor. */
SP_MR_FN uint32_t sp_mcmc_weight(float logit, float floor_opacity) {
    if (!isfinite(logit)) return 0;
    float o = sp_mcmc_opacity_of(logit);
    if (!(o >= floor_opacity)) return 0;
    return (uint32_t)(o * SP_MCMC_WEIGHT_ONE);
}

/* 1 if the Gaussian is dead: relocated onto a live one. */
SP_MR_FN int sp_mcmc_dead(float logit, float dead_opacity) {
    return !isfinite(logit) || !(sp_mcmc_opacity_of(logit) >= dead_opacity);
}

SP_MR_FN uint64_t sp_mcmc_mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* x_k in [0, total): where draw k of stream s falls in the prefix sums. */
SP_MR_FN uint64_t sp_mcmc_draw_point(uint64_t seed, uint64_t stream, uint64_t k, uint64_t total) {
    uint64_t h = sp_mcmc_mix(sp_mcmc_mix(seed ^ (stream * 0x9E3779B97F4A7C15ULL)) + k * 0xD1B54A32D192ED03ULL + 1);
#if defined(__CUDA_ARCH__)
    return __umul64hi(h, total);
#else
    return (uint64_t)(((unsigned __int128)h * total) >> 64);
#endif
}

/* The first i in [0, n) with prefix[i] > x (prefix: inclusive sums, x < prefix[n - 1]). */
SP_MR_FN int sp_mcmc_pick(const uint64_t *prefix, int n, uint64_t x) {
    int lo = 0, hi = n - 1;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (prefix[mid] > x) hi = mid;
        else lo = mid + 1;
    }
    return lo;
}

/* New opacity of each of `copies` Gaussians standing where one of opacity o stood:
 * 1 - (1 - o)^(1/copies), so the stack's peak opacity 1 - (1 - o')^copies equals o. */
SP_MR_FN double sp_mcmc_opacity(double o, int copies) {
    if (copies <= 1) return o;
    return 1.0 - pow(1.0 - o, 1.0 / copies);
}

/* Factor on the scales of those copies (o' as sp_mcmc_opacity gives it): o / sum_{j=1..copies}
 * (-1)^(j-1) C(copies, j) o'^j / sqrt(j), which keeps the integral of the stack's opacity profile
 * along any line through the centre equal to the single Gaussian's. Stacking copies of peak
 * opacity o' and profile g(x) = exp(-x^2 / 2s^2) gives 1 - (1 - o' g)^copies; the integral of g^j
 * along a line is s sqrt(2 pi) / sqrt(j). */
SP_MR_FN double sp_mcmc_scale_factor(double o, double o_new, int copies) {
    if (copies <= 1) return 1.0;
    double sum = 0.0, binom = 1.0, pw = 1.0;
    for (int j = 1; j <= copies; j++) {
        binom = binom * (double)(copies - j + 1) / (double)j;
        pw *= o_new;
        double term = binom * pw / sqrt((double)j);
        sum += (j & 1) ? term : -term;
    }
    return sum > 0.0 ? o / sum : 1.0;
}

/* The logit and log-scales every copy of a source (logit, ls) drawn `drawn` times gets; the
 * opacity kept within [max(min_opacity, 1e-6), 1 - 1e-6]. */
SP_MR_FN void sp_mcmc_spread(float logit, const float *ls, int drawn, float min_opacity, float *out_logit,
                             float *out_ls) {
    int copies = drawn + 1 < SP_MCMC_MAX_COPIES ? drawn + 1 : SP_MCMC_MAX_COPIES;
    double o = 1.0 / (1.0 + exp(-(double)logit));
    double on = sp_mcmc_opacity(o, copies);
    double f = sp_mcmc_scale_factor(o, on, copies);
    double lo = (double)min_opacity > 1e-6 ? (double)min_opacity : 1e-6, hi = 1.0 - 1e-6;
    on = on < lo ? lo : on > hi ? hi : on;
    *out_logit = (float)log(on / (1.0 - on));
    double lf = log(f);
    for (int c = 0; c < 3; c++) out_ls[c] = (float)((double)ls[c] + lf);
}

#endif
