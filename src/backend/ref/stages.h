/* stages.h — the training stages of docs/math.md as plain functions over host arrays: the
 * reference math of src/backend/ref/. The CPU backend (src/backend/cpu/) runs them; every GPU kernel
 * is tested against them on random inputs; the trainer, the evaluation and the tests call them.
 * Multithreaded with OpenMP; results are bit-identical for identical inputs, whatever the thread
 * count (no stage sums across threads in a schedule-dependent order). The per-Gaussian and
 * per-pixel math lives in stage_math.h, written once over a real type (float here, double in the
 * gradient tests). */
#ifndef SPLAT_REF_STAGES_H
#define SPLAT_REF_STAGES_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "backend/moments16_rule.h"
#include "scene/camera.h"
#include "scene/gaussians.h"

#define SP_TILE 16

/* Read-only view of parameters (layout of scene/gaussians.h). K = coefficients stored per
 * channel; only the first (sh_degree + 1)^2 are used. */
typedef struct {
    int n, K;
    const float *means, *log_scales, *quats, *opacity_logits, *sh;
} sp_params;

/* Gradients w.r.t. parameters, same layout (writable). */
typedef struct {
    int n, K;
    float *means, *log_scales, *quats, *opacity_logits, *sh;
} sp_params_grad;

/* Output of `project`, one entry per Gaussian. A Gaussian that is not visible (behind the near
 * plane z < 0.2, zero quaternion, degenerate or non-finite 2D covariance, opacity < 1/255, or a
 * tile rect outside the image) has every field 0, and an empty rect. */
typedef struct {
    float *mean2d;    /* [N][2] pixels */
    float *conic;     /* [N][3] (a, b, c): inverse of the 2D covariance incl. low-pass */
    float *depth;     /* [N] camera-space z */
    float *opacity;   /* [N] sigmoid(logit) */
    float *color;     /* [N][3] max(0, SH + 0.5) */
    int32_t *rect;    /* [N][4] tile rect x0, y0, x1, y1 (half-open); empty => not visible */
    float *radius;    /* [N] screen radius in pixels (max of the two half-extents), 0 if not visible */
    uint8_t *clamped; /* [N][3] 1 where SH + 0.5 < 0 (colour gradient is zero there) */
} sp_proj;

/* Gaussian i's raster record, the copy of its projection that the CUDA backend's raster kernels
 * gather in one piece (cu_proj.splat): mean2d x, y, conic a, b | conic c, opacity, colour r, g |
 * colour b, 0, 0, 0. */
static inline void sp_proj_record(const sp_proj *p, size_t i, float r[12]) {
    const float *m = p->mean2d + 2 * i, *c = p->conic + 3 * i, *col = p->color + 3 * i;
    r[0] = m[0], r[1] = m[1], r[2] = c[0], r[3] = c[1];
    r[4] = c[2], r[5] = p->opacity[i], r[6] = col[0], r[7] = col[1];
    r[8] = col[2], r[9] = r[10] = r[11] = 0.0f;
}

/* Gradients w.r.t. the projected quantities (output of backward_raster). */
typedef struct {
    float *mean2d;  /* [N][2] */
    float *conic;   /* [N][3] */
    float *opacity; /* [N]  w.r.t. sigmoid opacity */
    float *color;   /* [N][3] */
} sp_proj_grad;

/* Per-tile front-to-back lists (emit_pairs + sort + tile_ranges). Zero-initialize before the
 * first cpu_bin; cpu_bin grows ids as needed and sp_bins_free releases them. */
typedef struct {
    int tiles_x, tiles_y;
    int64_t num_pairs;
    uint32_t *ids;   /* [num_pairs] Gaussian index per pair, tile-major, depth order inside a tile */
    uint32_t *range; /* [tiles][2] start, end into ids */
    int64_t cap;     /* allocated pairs */
} sp_bins;

typedef struct {
    float *rgb;        /* [H][W][3] colour with background */
    float *final_T;    /* [H][W] transmittance after the last blended Gaussian */
    int32_t *n_contrib; /* [H][W] 1 + position (in its tile list) of the last blended Gaussian; 0 if none */
} sp_raster_out;

/* Allocation helpers (sizes from n or the camera): 0, or -1 with an out-of-memory error
 * (core.h) and nothing left allocated. */
int sp_proj_alloc(sp_proj *p, int n);
void sp_proj_free(sp_proj *p);
int sp_proj_grad_alloc(sp_proj_grad *g, int n);
void sp_proj_grad_zero(sp_proj_grad *g, int n);
void sp_proj_grad_free(sp_proj_grad *g);
int sp_raster_out_alloc(sp_raster_out *r, int w, int h);
void sp_raster_out_free(sp_raster_out *r);
void sp_bins_free(sp_bins *b);

/* SH colour for one Gaussian: out = sum_k sh[k] Y_k(dir), dir unit, degree 0..3 (no +0.5). */
void sp_sh_eval(int degree, const float *sh /*[K][3]*/, const float dir[3], float out[3]);
/* Backward of sp_sh_eval: adds dL/dsh (coefficients used) and dL/ddir. */
void sp_sh_eval_back(int degree, const float *sh, const float dir[3], const float dl_dout[3], float *dl_dsh,
                     float dl_ddir[3]);

/* project: per Gaussian, world -> camera, EWA 2D covariance + low-pass, depth, tile rect, SH -> RGB.
 * sh_degree is capped to what p->K coefficients hold. */
void cpu_project(const sp_params *p, const sp_camera *cam, int sh_degree, sp_proj *out);
/* project with the screen-space filter chosen: antialias 0 is cpu_project (the low-pass dilation
 * alone), 1 also scales each opacity by sqrt(det Sigma' / det(Sigma' + 0.3 I)) (docs/math.md,
 * "Antialiasing"); the tile rect and visibility follow the scaled opacity. */
void cpu_project_aa(const sp_params *p, const sp_camera *cam, int sh_degree, int antialias, sp_proj *out);
/* emit_pairs + sort + tile_ranges: equal to a stable sort of the keys (tile << 32 | depth bits)
 * emitted per visible Gaussian in index order, tiles of its rect row-major. Grows bins as needed;
 * -1 with an out-of-memory error when that growth fails. */
int cpu_bin(const sp_proj *proj, int n, const sp_camera *cam, sp_bins *bins);
/* rasterize: front-to-back compositing per pixel, early stop (docs/math.md). */
void cpu_rasterize(const sp_proj *proj, const sp_bins *bins, const sp_camera *cam, const float bg[3],
                   sp_raster_out *out);
/* Adds each Gaussian's blending weights (alpha T, as rasterize composites them) summed over the
 * camera's pixels into weight[id]: how much of the image it makes. The same sums for any thread
 * count. 0, or -1 with an out-of-memory error. */
int cpu_blend_weights(const sp_proj *proj, const sp_bins *bins, const sp_camera *cam, float *weight);
/* The blend weights of p's Gaussians summed over cams[0..count) into weight[p->n] (overwritten):
 * project, bin and cpu_blend_weights per camera, in the caller's scratch (proj allocated for p->n;
 * bins as cpu_bin takes them). */
int cpu_blend_weights_views(const sp_params *p, int antialias, const sp_camera *cams, int count, sp_proj *proj,
                            sp_bins *bins, float *weight);
/* backward_raster: gradients w.r.t. projected quantities, ADDED into g (the caller zeroes it).
 * Each tile sums its pixels in row-major order into one slot per (Gaussian, tile) pair; each
 * Gaussian's slots are then summed in row-major tile order: a fixed order, the same for any thread
 * count. Uses num_pairs x 40 bytes of scratch. */
void cpu_backward_raster(const sp_proj *proj, const sp_bins *bins, const sp_camera *cam, const float bg[3],
                         const sp_raster_out *fwd, const float *dl_drgb, sp_proj_grad *g);
/* project_back: chain rule to parameters; grads are accumulated into out (caller zeroes).
 * Gaussians with an empty rect in proj get nothing. When the Jacobian direction is clamped
 * (step 3 of project), tx = u z with u constant: no gradient to p.x, and d tx/d z = u. The
 * densification statistics are left to the caller (they need only g->mean2d and proj->radius). */
void cpu_project_back(const sp_params *p, const sp_camera *cam, int sh_degree, const sp_proj *proj,
                      const sp_proj_grad *g, sp_params_grad *out);
/* project_back of cpu_project_aa: g->opacity is w.r.t. the (scaled) opacity project wrote; the
 * scale's dependence on the 2D covariance reaches means, scales and rotations. */
void cpu_project_back_aa(const sp_params *p, const sp_camera *cam, int sh_degree, int antialias, const sp_proj *proj,
                         const sp_proj_grad *g, sp_params_grad *out);
/* project_back fused with the step's update (K <= 16: SH degree 3 at most), one Gaussian at a time
 * (its gradients never reach memory): project_back into zeroed gradients, MCMC's regularizer terms (when either weight is not
 * 0), Adam with the rates lr (means, log_scales, quats, opacity, SH DC, SH rest), then MCMC's
 * position noise (noise_scale 0: none). p's values and the moments m, v are updated in place. The
 * same arithmetic in the same order as cpu_project_back_aa, cpu_mcmc_reg, cpu_adam / cpu_adam_sh
 * and cpu_mcmc_noise, so the same bits. */
typedef struct {
    float lr[6], beta1, beta2, eps;
    int step, sparse;
    int moments16; /* adam.moments16: m's SH floats hold the packed moments (cpu_adam_sh) */
    float opacity_reg, scale_reg, noise_scale;
    uint64_t noise_seed;
} sp_update_args;
void cpu_project_back_update(sp_params_grad *p, sp_params_grad *m, sp_params_grad *v, const sp_camera *cam,
                             int sh_degree, int antialias, const sp_proj *proj, const sp_proj_grad *g,
                             const sp_update_args *u);

/* loss: fused L1 + D-SSIM. Returns the loss; writes dL/drgb [H][W][3] when dl_drgb != NULL. */
double cpu_loss(const float *rgb, const float *target, int w, int h, float ssim_weight, float *dl_drgb);
/* Mean SSIM of two [H][W][3] images (11x11 Gaussian window, sigma 1.5, zero padding). */
double sp_ssim(const float *a, const float *b, int w, int h);

/* adam: one update over a flat array (bias-corrected). sparse = 1 (adam.sparse): an element whose
 * gradient is exactly 0 is left alone (value and moments) unless its Gaussian was in view: seen
 * (NULL: none was) holds a flag per Gaussian, element i belonging to Gaussian i / per. m16 = -1:
 * float moments; else adam.moments16: m holds each element's packed moments
 * (backend/moments16_rule.h), v is not read, and element i's index in the packed layout is m16 + i. */
void cpu_adam(float *param, const float *grad, float *m, float *v, int64_t count, float lr, float beta1,
              float beta2, float eps, int step, int sparse, const uint8_t *seen, int per, int64_t m16);

/* adam over SH coefficients [n][K][3]: the DC coefficient (first 3 floats of each Gaussian) with
 * lr_dc, the rest with lr_rest; sparse, seen and m16 as cpu_adam's. */
void cpu_adam_sh(float *sh, const float *grad, float *m, float *v, int64_t n, int K, float lr_dc, float lr_rest,
                 float beta1, float beta2, float eps, int step, int sparse, const uint8_t *seen, int64_t m16);
/* A model's moments between float (m, v) and packed (adam.moments16: the words in m's floats, v's
 * zero), count floats each: pack rounds to nearest (sp_m16_pack_nearest), unpack is exact; v NULL:
 * zeros in, nothing out; unpack's m NULL: only v out (the words still in m_words). */
void sp_m16_pack_store(float *m, float *v, int64_t count);
void sp_m16_unpack_store(const float *m_words, float *m, float *v, int64_t count);
/* The same over every array of a model's moment stores (the n Gaussians of m; v may be NULL):
 * pack in place; unpack words' arrays into m and v (either NULL: not wanted; m may be words). */
void sp_m16_pack_model(sp_gaussians *m, sp_gaussians *v);
void sp_m16_unpack_model(const sp_gaussians *words, sp_gaussians *m, sp_gaussians *v);

/* The bias correction of a step's update, folded into its learning rates and eps:
 *   p −= lr · (m / (1 − β1^t)) / (sqrt(v / (1 − β2^t)) + eps)
 *      = lr_t · m / (sqrt(v) + eps_t),  lr_t = lr · sqrt(1 − β2^t) / (1 − β1^t),  eps_t = eps · sqrt(1 − β2^t)
 * (t below 1 taken as 1): two divisions fewer per element. lr_scale is sqrt(1 − β2^t) / (1 − β1^t) in
 * double; every backend makes lr_t = sp_adam_lr(&b, lr) and eps_t = b.eps on the host, so all of them
 * update with the same floats. */
typedef struct {
    double lr_scale;
    float eps;
} sp_adam_bias_t;
sp_adam_bias_t sp_adam_bias(float beta1, float beta2, float eps, int step);
static inline float sp_adam_lr(const sp_adam_bias_t *b, float lr) { return (float)((double)lr * b->lr_scale); }
/* One element's update with a step's lr_t and eps_t (sp_adam_bias): what cpu_adam does to each
 * element (for callers that update element by element, such as the cpu backend's fused step). */
static inline void cpu_adam_one(float *p, float g, float *m, float *v, float lr_t, float beta1, float beta2,
                                float eps_t, int sparse) {
    if (sparse && g == 0.0f) return;
    float mi = beta1 * *m + (1.0f - beta1) * g;
    float vi = beta2 * *v + (1.0f - beta2) * g * g;
    *m = mi;
    *v = vi;
    *p -= lr_t * mi / (sqrtf(vi) + eps_t);
}
/* The same for an SH coefficient whose moments are the packed word *w (adam.moments16), r its random
 * bits (sp_m16_bits of the step and its index). */
static inline void cpu_adam_one_m16(float *p, float g, float *w, float lr_t, float beta1, float beta2, float eps_t,
                                     int sparse, uint32_t r) {
    if (sparse && g == 0.0f) return;
    uint32_t u;
    memcpy(&u, w, 4);
    float m = sp_m16_m(u), v = sp_m16_v(u);
    cpu_adam_one(p, g, &m, &v, lr_t, beta1, beta2, eps_t, 0);
    u = sp_m16_pack(m, v, r);
    memcpy(w, &u, 4);
}
/* The step a packed moment's random bits are drawn for (sp_adam_bias's rule: below 1 is 1). */
static inline uint32_t sp_m16_step(int step) { return (uint32_t)(step < 1 ? 1 : step); }

#endif
