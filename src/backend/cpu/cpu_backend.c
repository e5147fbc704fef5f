/* cpu_backend.c — the reference backend: runs the reference stages (backend/ref/stages.h) on host
 * memory with OpenMP. Owns parameters, Adam moments, gradients, densification statistics and images. */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/cpu/autothreads.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/ref/mcmc.h"
#include "backend/ref/refine.h"
#include "backend/ref/reorder.h"
#include "backend/ref/stages.h"
#include "backend/stage_ops.h"
#include "core/core.h"
#include "core/threads.h"

/* Profiling rows: one per stage of backend.h, except that cpu_bin runs emit_pairs, sort and tile_ranges
 * as one call, timed in one row named "emit_pairs+sort+tile_ranges". k_row_first: each row's first
 * stage; a row covers the stages up to the next row's first. */
enum { ST_PROJECT, ST_BINS, ST_RASTERIZE, ST_LOSS, ST_BACKWARD_RASTER, ST_PROJECT_BACK, ST_ADAM, ST_REFINE, ST_COUNT };
static const sp_stage k_row_first[ST_COUNT] = {SP_STAGE_PROJECT,      SP_STAGE_EMIT_PAIRS, SP_STAGE_RASTERIZE,
                                               SP_STAGE_LOSS,         SP_STAGE_BACKWARD_RASTER,
                                               SP_STAGE_PROJECT_BACK, SP_STAGE_ADAM,       SP_STAGE_REFINE};

typedef struct {
    sp_backend base;
    sp_gaussians g, m, v, grad;
    int grad_pending; /* grad holds the sum of accumulate-only steps since the last Adam update */
    uint8_t *seen;    /* sparse Adam, unfused steps: 1 = the Gaussian was in view in a step of the sum */
    int seen_cap;
    sp_refine_stats stats;
    /* training views */
    sp_view *views;
    int num_views;
    sp_alpha_mode alpha;
    sp_view *slot; /* [num_slots] staged views (stage_view): copies of camera and pixels */
    size_t *slot_cap;
    int num_slots;
    /* per-step buffers */
    sp_proj proj;
    int proj_cap;
    sp_proj_grad pgrad;
    sp_bins bins;
    sp_raster_out ro;
    int ro_pixels;
    float *target, *dl_drgb;
    /* loss */
    double loss_sum;
    int loss_steps, loss_bad;
    /* profile */
    double stage_s[ST_COUNT];
    char row_name[ST_COUNT][64];
    long steps, fused_steps; /* fused_steps: steps whose project_back and adam ran as one (one row) */
    sp_autothreads threads;
} cpu_backend;

/* Per-step buffers grow with the Gaussian count and the image size; a failed growth leaves
 * them empty (capacity 0) and returns -1 with the out-of-memory error. */
static int ensure_proj(cpu_backend *b, int n) {
    if (n <= b->proj_cap) return 0;
    sp_proj_free(&b->proj);
    sp_proj_grad_free(&b->pgrad);
    b->proj_cap = 0;
    int cap = n + n / 4 + 16;
    if (sp_proj_alloc(&b->proj, cap) || sp_proj_grad_alloc(&b->pgrad, cap)) return -1;
    b->proj_cap = cap;
    return 0;
}

static int ensure_image(cpu_backend *b, int w, int h) {
    size_t px = (size_t)w * (size_t)h;
    if ((int64_t)px <= b->ro_pixels) return 0;
    sp_raster_out_free(&b->ro);
    free(b->target);
    free(b->dl_drgb);
    b->target = b->dl_drgb = NULL;
    b->ro_pixels = 0;
    if (sp_raster_out_alloc(&b->ro, w, h) ||
        !(b->target = sp_try_alloc(px * 3, sizeof(float), "the training image buffers", "raise data.downscale")) ||
        !(b->dl_drgb = sp_try_alloc(px * 3, sizeof(float), "the training image buffers", "raise data.downscale")))
        return -1;
    b->ro_pixels = (int)px;
    return 0;
}

static sp_params params_of(const sp_gaussians *g) {
    return (sp_params){g->n, g->K, g->means, g->log_scales, g->quats, g->opacity_logits, g->sh};
}

/* A store's arrays, writable (gradients, or values and moments updated in place). */
static sp_params_grad store_of(sp_gaussians *g) {
    return (sp_params_grad){g->n, g->K, g->means, g->log_scales, g->quats, g->opacity_logits, g->sh};
}

static void cpu_destroy(sp_backend *base) {
    cpu_backend *b = (cpu_backend *)base;
    sp_gaussians_free(&b->g);
    sp_gaussians_free(&b->m);
    sp_gaussians_free(&b->v);
    sp_gaussians_free(&b->grad);
    sp_refine_stats_free(&b->stats);
    sp_proj_free(&b->proj);
    sp_proj_grad_free(&b->pgrad);
    sp_bins_free(&b->bins);
    sp_raster_out_free(&b->ro);
    free(b->target);
    free(b->dl_drgb);
    free(b->seen);
    for (int k = 0; k < b->num_slots; k++) free(b->slot[k].pixels);
    free(b->slot);
    free(b->slot_cap);
    free(b);
}

static int cpu_upload_views(sp_backend *base, const sp_view *views, int n, sp_alpha_mode alpha) {
    cpu_backend *b = (cpu_backend *)base;
    b->views = (sp_view *)views; /* borrowed: the dataset outlives the backend */
    b->num_views = n;
    b->alpha = alpha;
    return 0;
}

/* Streamed views: the step runs synchronously, so a slot is a plain copy of the pixels (made when
 * the slot is first used: the slots are host memory). */
static int cpu_stage_slots(sp_backend *base, int count, size_t max_pixels, int channels) {
    cpu_backend *b = (cpu_backend *)base;
    if (count < SP_STAGE_SLOTS) return sp_error("stage_slots: %d slots (at least %d)", count, SP_STAGE_SLOTS);
    sp_view *slot = sp_try_alloc((size_t)count, sizeof *slot, "the staged training images", "lower data.device_cache_mb");
    size_t *cap = sp_try_alloc((size_t)count, sizeof *cap, "the staged training images", "lower data.device_cache_mb");
    if (!slot || !cap) {
        free(slot), free(cap);
        return -1;
    }
    memset(slot, 0, (size_t)count * sizeof *slot);
    memset(cap, 0, (size_t)count * sizeof *cap);
    for (int k = 0; k < b->num_slots; k++) free(b->slot[k].pixels);
    free(b->slot), free(b->slot_cap);
    b->slot = slot, b->slot_cap = cap, b->num_slots = count;
    return 0;
}

static int cpu_stage_view(sp_backend *base, int slot, const sp_view *v, sp_alpha_mode alpha) {
    cpu_backend *b = (cpu_backend *)base;
    if (!b->num_slots && cpu_stage_slots(base, SP_STAGE_SLOTS, 0, 0)) return -1;
    if (slot < 0 || slot >= b->num_slots) return sp_error("stage_view: slot %d out of range", slot);
    if (!v->pixels || (v->channels != 3 && v->channels != 4))
        return sp_error("stage_view: view %s has no pixels", v->path ? v->path : "?");
    size_t bytes = (size_t)v->cam.width * v->cam.height * v->channels;
    if (bytes > b->slot_cap[slot]) {
        uint8_t *p = sp_try_realloc(b->slot[slot].pixels, bytes, 1, "a staged training image", "raise data.downscale");
        if (!p) return -1;
        b->slot[slot].pixels = p;
        b->slot_cap[slot] = bytes;
    }
    memcpy(b->slot[slot].pixels, v->pixels, bytes);
    b->slot[slot].cam = v->cam;
    b->slot[slot].channels = v->channels;
    b->alpha = alpha;
    return 0;
}

static int copy_store(sp_gaussians *d, const sp_gaussians *s, int sh_degree, int n) {
    if (d->cap == 0 || d->sh_degree != sh_degree) {
        sp_gaussians_free(d);
        if (sp_gaussians_try_init(d, n, sh_degree)) return -1;
    }
    if (sp_gaussians_try_reserve(d, n)) return -1;
    d->n = n;
    if (s) {
        for (int i = 0; i < n; i++) sp_gaussians_copy_one(d, i, s, i);
    } else {
        sp_gaussians_zero(d);
    }
    return 0;
}

static int cpu_set_gaussians(sp_backend *base, const sp_gaussians *g, const sp_gaussians *m, const sp_gaussians *v) {
    cpu_backend *b = (cpu_backend *)base;
    if (copy_store(&b->g, g, g->sh_degree, g->n) || copy_store(&b->m, m, g->sh_degree, g->n) ||
        copy_store(&b->v, v, g->sh_degree, g->n) || copy_store(&b->grad, NULL, g->sh_degree, g->n) ||
        sp_refine_stats_reset(&b->stats, g->n)) {
        b->g.n = b->m.n = b->v.n = b->grad.n = 0; /* no half-set model */
        return -1;
    }
    if (b->base.cfg.moments16) sp_m16_pack_model(&b->m, &b->v);
    b->grad_pending = 0;
    return 0;
}

static int cpu_get_gaussians(sp_backend *base, sp_gaussians *g, sp_gaussians *m, sp_gaussians *v) {
    cpu_backend *b = (cpu_backend *)base;
    if (copy_store(g, &b->g, b->g.sh_degree, b->g.n)) return -1;
    if (m && copy_store(m, &b->m, b->g.sh_degree, b->g.n)) return -1;
    if (v && copy_store(v, &b->v, b->g.sh_degree, b->g.n)) return -1;
    if (b->base.cfg.moments16 && (m || v)) sp_m16_unpack_model(&b->m, m, v);
    return 0;
}

static int cpu_num_gaussians(sp_backend *base) { return ((cpu_backend *)base)->g.n; }

static int forward(cpu_backend *b, const sp_camera *cam, int sh_degree, const float bg[3], double *t) {
    sp_params p = params_of(&b->g);
    if (ensure_proj(b, p.n) || ensure_image(b, cam->width, cam->height)) return -1;
    double t0 = sp_now();
    cpu_project_aa(&p, cam, sh_degree, b->base.cfg.antialias, &b->proj);
    double t1 = sp_now();
    if (cpu_bin(&b->proj, p.n, cam, &b->bins)) return -1;
    double t2 = sp_now();
    cpu_rasterize(&b->proj, &b->bins, cam, bg, &b->ro);
    double t3 = sp_now();
    if (t) {
        t[ST_PROJECT] += t1 - t0;
        t[ST_BINS] += t2 - t1;
        t[ST_RASTERIZE] += t3 - t2;
    }
    return 0;
}

/* seen: sparse Adam's in-view flags (one a Gaussian). moments16 (adam.moments16): the moments are
 * packed, each group's first value at its place in the packed layout (moments16_rule.h). */
static void adam_store(sp_gaussians *g, const sp_gaussians *gr, sp_gaussians *m, sp_gaussians *v,
                       const sp_step_args *a, const uint8_t *seen, int moments16) {
    int64_t n = g->n, at[5];
    for (int k = 0; k < 5; k++) at[k] = moments16 ? sp_m16_group_start(k, n) : -1;
    float b1 = a->beta1, b2 = a->beta2, eps = a->eps;
    int s = a->adam_step, sp = a->adam_sparse;
    cpu_adam(g->means, gr->means, m->means, v->means, 3 * n, a->lr.means, b1, b2, eps, s, sp, seen, 3, at[0]);
    cpu_adam(g->log_scales, gr->log_scales, m->log_scales, v->log_scales, 3 * n, a->lr.log_scales, b1, b2, eps, s,
             sp, seen, 3, at[1]);
    cpu_adam(g->quats, gr->quats, m->quats, v->quats, 4 * n, a->lr.quats, b1, b2, eps, s, sp, seen, 4, at[2]);
    cpu_adam(g->opacity_logits, gr->opacity_logits, m->opacity_logits, v->opacity_logits, n, a->lr.opacity, b1, b2,
             eps, s, sp, seen, 1, at[3]);
    /* SH: DC and rest have their own rates; coefficients are [N][K][3], DC first. */
    cpu_adam_sh(g->sh, gr->sh, m->sh, v->sh, n, g->K, a->lr.sh_dc, a->lr.sh_rest, b1, b2, eps, s, sp, seen, at[4]);
}

/* Sparse Adam on unfused steps: the Gaussians this view's projection put in view, added to the
 * flags of the steps summed since the last update (cleared when a new sum starts). */
static int mark_seen(cpu_backend *b, int n) {
    if (n > b->seen_cap) {
        uint8_t *s = sp_try_alloc((size_t)n, 1, "sparse Adam's in-view flags", "set adam.sparse = false");
        if (!s) return -1; /* (the count changes only where a pending sum is dropped: nothing to keep) */
        free(b->seen);
        b->seen = s, b->seen_cap = n;
    }
    if (!b->grad_pending) memset(b->seen, 0, (size_t)n);
#pragma omp parallel for schedule(static) num_threads(sp_omp_threads())
    for (int i = 0; i < n; i++) {
        const int32_t *r = b->proj.rect + 4 * (size_t)i;
        if (r[0] < r[2] && r[1] < r[3]) b->seen[i] = 1;
    }
    return 0;
}

static int train_step(cpu_backend *b, const sp_step_args *a);

/* Every step runs with the count autothreads picks and reports its time back. */
static int cpu_train_step(sp_backend *base, const sp_step_args *a) {
    cpu_backend *b = (cpu_backend *)base;
    int n = sp_autothreads_next(&b->threads), old = sp_omp_threads_set(n);
    double t0 = sp_now();
    int rc = train_step(b, a);
    const sp_autothreads *at = &b->threads;
    int trial = at->trial, was = at->cur, verdict = sp_autothreads_done(&b->threads, sp_now() - t0);
    if (verdict) /* in the log file only: which count the machine gives best */
        sp_log_to_file("cpu backend: %d steps took %.3f s with %d threads, %.3f s with %d: %d threads from step %ld",
                       at->window, at->base_s, was, at->trial_s, trial, at->cur, b->steps + 1);
    sp_omp_threads_set(old);
    return rc;
}

static int train_step(cpu_backend *b, const sp_step_args *a) {
    if (a->view < 0 || a->view >= (a->staged ? b->num_slots : b->num_views))
        return sp_error("train_step: %s %d out of range", a->staged ? "staging slot" : "view", a->view);
    if (a->staged && !b->slot[a->view].pixels) return sp_error("train_step: staging slot %d holds no image", a->view);
    const sp_view *view = a->staged ? &b->slot[a->view] : &b->views[a->view];
    const sp_camera *cam = &view->cam;
    int n = b->g.n, w = cam->width, h = cam->height;
    if (forward(b, cam, a->sh_degree, a->bg, b->stage_s)) return -1;

    double t0 = sp_now();
    sp_view_composite(view, b->alpha, a->bg, b->target);
    double loss = cpu_loss(b->ro.rgb, b->target, w, h, a->ssim_weight, b->dl_drgb);
    double t1 = sp_now();
    sp_proj_grad_zero(&b->pgrad, n);
    cpu_backward_raster(&b->proj, &b->bins, cam, a->bg, &b->ro, b->dl_drgb, &b->pgrad);
    double t2 = sp_now();
    /* (the fused pass holds a Gaussian's SH gradients, degree 3 at most, on its stack) */
    int fused = !a->accumulate && !b->grad_pending && !b->base.cfg.split_update && b->g.K <= 16;
    if (fused) { /* a step of its own: each Gaussian's gradients go straight into its update */
        sp_update_args u = {.lr = {a->lr.means, a->lr.log_scales, a->lr.quats, a->lr.opacity, a->lr.sh_dc,
                                   a->lr.sh_rest},
                            .beta1 = a->beta1, .beta2 = a->beta2, .eps = a->eps, .step = a->adam_step,
                            .sparse = a->adam_sparse, .moments16 = b->base.cfg.moments16, .opacity_reg = a->opacity_reg, .scale_reg = a->scale_reg,
                            .noise_scale = a->noise_scale, .noise_seed = a->noise_seed};
        sp_params_grad pp = store_of(&b->g), mm = store_of(&b->m), vv = store_of(&b->v);
        cpu_project_back_update(&pp, &mm, &vv, cam, a->sh_degree, b->base.cfg.antialias, &b->proj, &b->pgrad, &u);
        b->fused_steps++;
    } else {
        if (a->adam_sparse && mark_seen(b, n)) return -1;
        if (!b->grad_pending) sp_gaussians_zero(&b->grad); /* project_back adds to grad */
        sp_params p = params_of(&b->g);
        sp_params_grad pg = store_of(&b->grad);
        cpu_project_back_aa(&p, cam, a->sh_degree, b->base.cfg.antialias, &b->proj, &b->pgrad, &pg);
        cpu_mcmc_reg(&b->g, &b->grad, a->opacity_reg, a->scale_reg); /* MCMC only: 0 weights do nothing */
    }
    if (a->collect_stats) {
        float hw = 0.5f * (float)w, hh = 0.5f * (float)h;
        sp_refine_stats *st = &b->stats;
#pragma omp parallel for schedule(static) num_threads(sp_omp_threads())
        for (int i = 0; i < n; i++) {
            const int32_t *r = b->proj.rect + 4 * (size_t)i;
            if (r[0] >= r[2] || r[1] >= r[3]) continue;
            float gx = b->pgrad.mean2d[2 * (size_t)i] * hw, gy = b->pgrad.mean2d[2 * (size_t)i + 1] * hh;
            st->grad_accum[i] += sqrtf(gx * gx + gy * gy);
            st->grad_count[i] += 1;
            if (b->proj.radius[i] > st->max_radius[i]) st->max_radius[i] = b->proj.radius[i];
        }
    }
    double t3 = sp_now();
    b->grad_pending = a->accumulate;
    if (!a->accumulate && !fused) {
        adam_store(&b->g, &b->grad, &b->m, &b->v, a, a->adam_sparse ? b->seen : NULL, b->base.cfg.moments16);
        cpu_mcmc_noise(&b->g, a->noise_scale, a->noise_seed);
    }
    double t4 = sp_now();
    b->stage_s[ST_LOSS] += t1 - t0;
    b->stage_s[ST_BACKWARD_RASTER] += t2 - t1;
    b->stage_s[ST_PROJECT_BACK] += t3 - t2;
    b->stage_s[ST_ADAM] += t4 - t3;
    b->steps++;
    if (isfinite(loss)) b->loss_sum += loss;
    else b->loss_bad = 1;
    b->loss_steps++;
    return 0;
}

static int cpu_take_loss(sp_backend *base, double *mean_loss, int *steps) {
    cpu_backend *b = (cpu_backend *)base;
    *steps = b->loss_steps;
    *mean_loss = b->loss_bad ? NAN : (b->loss_steps ? b->loss_sum / b->loss_steps : 0.0);
    b->loss_sum = 0;
    b->loss_steps = 0;
    b->loss_bad = 0;
    return 0;
}

static int cpu_refine_op(sp_backend *base, const sp_refine_args *a, sp_refine_result *r) {
    cpu_backend *b = (cpu_backend *)base;
    double t0 = sp_now();
    int old = sp_omp_threads_set(b->threads.cur);
    int rc = cpu_refine(&b->g, &b->m, &b->v, &b->stats, a, r);
    if (rc == 0) rc = copy_store(&b->grad, NULL, b->g.sh_degree, b->g.n);
    b->grad_pending = 0; /* a refine between accumulate-only steps drops their sum */
    sp_omp_threads_set(old);
    b->stage_s[ST_REFINE] += sp_now() - t0;
    return rc;
}

static int cpu_mcmc_read(sp_backend *base, float *opacity_logits, float *log_scales) {
    cpu_backend *b = (cpu_backend *)base;
    memcpy(opacity_logits, b->g.opacity_logits, (size_t)b->g.n * sizeof(float));
    memcpy(log_scales, b->g.log_scales, (size_t)b->g.n * 3 * sizeof(float));
    return 0;
}

static int cpu_mcmc_apply_op(sp_backend *base, const sp_mcmc_plan *p) {
    cpu_backend *b = (cpu_backend *)base;
    double t0 = sp_now();
    int rc = cpu_mcmc_apply(&b->g, &b->m, &b->v, p);
    if (rc == 0) rc = copy_store(&b->grad, NULL, b->g.sh_degree, b->g.n);
    if (rc == 0) rc = sp_refine_stats_reset(&b->stats, b->g.n);
    b->grad_pending = 0;
    b->stage_s[ST_REFINE] += sp_now() - t0;
    return rc;
}

static int cpu_reorder_op(sp_backend *base) {
    cpu_backend *b = (cpu_backend *)base;
    double t0 = sp_now();
    int old = sp_omp_threads_set(b->threads.cur);
    int rc = cpu_reorder(&b->g, &b->m, &b->v);
    if (rc == 0) sp_gaussians_zero(&b->grad);
    if (rc == 0) rc = sp_refine_stats_reset(&b->stats, b->g.n);
    b->grad_pending = 0;
    sp_omp_threads_set(old);
    b->stage_s[ST_REFINE] += sp_now() - t0;
    return rc;
}

static int cpu_render(sp_backend *base, const sp_camera *cam, int sh_degree, const float bg[3], float *rgb) {
    cpu_backend *b = (cpu_backend *)base;
    int old = sp_omp_threads_set(b->threads.cur);
    if (forward(b, cam, sh_degree, bg, NULL)) {
        sp_omp_threads_set(old);
        return -1;
    }
    memcpy(rgb, b->ro.rgb, (size_t)cam->width * cam->height * 3 * sizeof(float));
    sp_omp_threads_set(old);
    return 0;
}

static int cpu_blend_weights_op(sp_backend *base, const sp_camera *cams, int count, float *weight) {
    cpu_backend *b = (cpu_backend *)base;
    int old = sp_omp_threads_set(b->threads.cur);
    sp_params p = params_of(&b->g);
    int rc = ensure_proj(b, p.n);
    if (rc == 0) rc = cpu_blend_weights_views(&p, b->base.cfg.antialias, cams, count, &b->proj, &b->bins, weight);
    sp_omp_threads_set(old);
    return rc;
}

static int cpu_params_finite(sp_backend *base) { return sp_gaussians_finite(&((cpu_backend *)base)->g); }

static int cpu_get_profile(sp_backend *base, sp_profile *p) {
    cpu_backend *b = (cpu_backend *)base;
    memset(p, 0, sizeof *p);
    for (int i = 0; i < ST_COUNT; i++) {
        int r = p->num_stages++;
        p->name[r] = b->row_name[i];
        p->ms[r] = 1e3 * b->stage_s[i];
        if (i == ST_PROJECT_BACK && b->fused_steps) { /* the fused update's row covers adam too */
            p->name[r] = "project_back+adam";
            p->ms[r] += 1e3 * b->stage_s[++i];
        }
        p->busy_ms += p->ms[r];
    }
    p->calls = b->steps;
    p->peak_bytes = 0;
    return 0;
}

/* ---- single stages (stage_ops.h): the reference functions themselves, for the harness's
 * self-check and its perf mode ---- */
static int st_project(sp_backend *b, const sp_params *p, const sp_camera *cam, int sh_degree, sp_proj *out) {
    cpu_project_aa(p, cam, sh_degree, b->cfg.antialias, out);
    return 0;
}

static int st_bin(sp_backend *b, const sp_proj *proj, int n, const sp_camera *cam, sp_bins *bins) {
    cpu_bin(proj, n, cam, bins);
    return 0;
}

static int st_rasterize(sp_backend *b, const sp_proj *proj, int n, const sp_bins *bins, const sp_camera *cam,
                        const float bg[3], sp_raster_out *out) {
    cpu_rasterize(proj, bins, cam, bg, out);
    return 0;
}

static int st_backward_raster(sp_backend *b, const sp_proj *proj, int n, const sp_bins *bins, const sp_camera *cam,
                              const float bg[3], const sp_raster_out *fwd, const float *dl_drgb, sp_proj_grad *g) {
    sp_proj_grad_zero(g, n);
    cpu_backward_raster(proj, bins, cam, bg, fwd, dl_drgb, g);
    return 0;
}

static int st_project_back(sp_backend *b, const sp_params *p, const sp_camera *cam, int sh_degree,
                           const sp_proj *proj, const sp_proj_grad *g, sp_params_grad *out) {
    size_t n = (size_t)p->n;
    memset(out->means, 0, n * 3 * sizeof(float));
    memset(out->log_scales, 0, n * 3 * sizeof(float));
    memset(out->quats, 0, n * 4 * sizeof(float));
    memset(out->opacity_logits, 0, n * sizeof(float));
    memset(out->sh, 0, n * 3 * (size_t)out->K * sizeof(float));
    cpu_project_back_aa(p, cam, sh_degree, b->cfg.antialias, proj, g, out);
    return 0;
}

static int st_loss(sp_backend *b, const float *rgb, const float *target, int w, int h, float ssim_weight,
                   double *loss, float *dl_drgb) {
    *loss = cpu_loss(rgb, target, w, h, ssim_weight, dl_drgb);
    return 0;
}

static int st_adam(sp_backend *b, float *param, const float *grad, float *m, float *v, int64_t count, float lr,
                   float beta1, float beta2, float eps, int step, int sparse) {
    cpu_adam(param, grad, m, v, count, lr, beta1, beta2, eps, step, sparse, NULL, 1, -1);
    return 0;
}

static int st_refine(sp_backend *b, sp_gaussians *g, sp_gaussians *m, sp_gaussians *v, const float *grad_accum,
                     const int32_t *grad_count, const float *max_radius, const sp_refine_args *a,
                     sp_refine_result *r) {
    sp_refine_stats st = {0};
    sp_refine_stats_reserve(&st, g->n > 0 ? g->n : 1);
    sp_refine_stats_reset(&st, g->n);
    size_t n = (size_t)g->n;
    if (n) {
        memcpy(st.grad_accum, grad_accum, n * sizeof(float));
        memcpy(st.grad_count, grad_count, n * sizeof(int32_t));
        memcpy(st.max_radius, max_radius, n * sizeof(float));
    }
    int rc = cpu_refine(g, m, v, &st, a, r);
    sp_refine_stats_free(&st);
    return rc;
}

static int st_mcmc_step(sp_backend *b, sp_gaussians *g, sp_gaussians *grad, float opacity_reg, float scale_reg,
                        float noise_scale, uint64_t seed) {
    cpu_mcmc_reg(g, grad, opacity_reg, scale_reg);
    cpu_mcmc_noise(g, noise_scale, seed);
    return 0;
}

static int st_mcmc_apply(sp_backend *b, sp_gaussians *g, sp_gaussians *m, sp_gaussians *v, const sp_mcmc_plan *p) {
    return cpu_mcmc_apply(g, m, v, p);
}

static const sp_stage_ops cpu_stage_ops = {
    .project = st_project,
    .bin = st_bin,
    .rasterize = st_rasterize,
    .backward_raster = st_backward_raster,
    .project_back = st_project_back,
    .loss = st_loss,
    .adam = st_adam,
    .refine = st_refine,
    .mcmc_step = st_mcmc_step,
    .mcmc_apply = st_mcmc_apply,
};

static const sp_backend_ops cpu_ops = {
    .name = "cpu",
    .destroy = cpu_destroy,
    .upload_views = cpu_upload_views,
    .set_gaussians = cpu_set_gaussians,
    .get_gaussians = cpu_get_gaussians,
    .num_gaussians = cpu_num_gaussians,
    .train_step = cpu_train_step,
    .take_loss = cpu_take_loss,
    .refine = cpu_refine_op,
    .render = cpu_render,
    .params_finite = cpu_params_finite,
    .get_profile = cpu_get_profile,
    .stages = &cpu_stage_ops,
    .stage_view = cpu_stage_view,
    .stage_slots = cpu_stage_slots,
    .mcmc_read = cpu_mcmc_read,
    .mcmc_apply = cpu_mcmc_apply_op,
    .blend_weights = cpu_blend_weights_op,
    .reorder = cpu_reorder_op,
};

static sp_backend *cpu_create(const sp_backend_config *cfg) {
    cpu_backend *b = SP_NEW(cpu_backend, 1);
    b->base.ops = &cpu_ops;
    b->base.cfg = *cfg;
    for (int i = 0; i < ST_COUNT; i++) {
        int last = i + 1 < ST_COUNT ? k_row_first[i + 1] - 1 : SP_STAGE_COUNT - 1;
        for (int s = k_row_first[i]; s <= last; s++) {
            size_t len = strlen(b->row_name[i]);
            snprintf(b->row_name[i] + len, sizeof b->row_name[i] - len, "%s%s", len ? "+" : "", sp_stage_name(s));
        }
    }
    /* No process-wide OpenMP setting: every region of the backend names its thread count. */
    sp_autothreads_init(&b->threads, sp_omp_threads_for(cfg->threads), cfg->threads > 0);
    int old = sp_omp_threads_set(b->threads.max);
    /* Denormals flushed to zero in every thread of the backend's regions (core.h, sp_fp_set),
     * the calling thread (thread 0) included, so that every thread count computes alike. The
     * public API gives a caller's thread its own mode back when the call returns (sp_fp_leave). */
#pragma omp parallel num_threads(sp_omp_threads())
    sp_fp_set();
    sp_omp_threads_set(old);
    sp_gaussians_init(&b->g, 1, 0);
    return &b->base;
}

static int cpu_describe(const sp_backend_config *cfg, char *out, size_t n) {
    snprintf(out, n, "cpu (%d threads)", cfg->threads > 0 ? cfg->threads : omp_get_num_procs());
    return 0;
}

static int always(void) { return 1; }

const sp_backend_kind sp_kind_cpu = {
    .name = "cpu",
    .gpu = 0,
    .variants = 0,
    .mcmc = 1,
    .available = always,
    .create = cpu_create,
    .describe = cpu_describe,
};
