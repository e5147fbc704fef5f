/* refine.c — densification on the host: clone small Gaussians with large view-space gradients,
 * split large ones, prune transparent / huge ones, decay or reset opacity, cap the count.
 * Deterministic: split noise comes from per-Gaussian hashed streams (seed, index). */
#include "backend/ref/refine.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"

int sp_refine_stats_reserve(sp_refine_stats *s, int cap) {
    if (cap <= s->cap) return 0;
    const char *w = "the densification statistics", *hint = "lower refine.capacity";
    float *ga = sp_try_realloc(s->grad_accum, (size_t)cap, sizeof(float), w, hint);
    if (!ga) return -1;
    s->grad_accum = ga;
    int32_t *gc = sp_try_realloc(s->grad_count, (size_t)cap, sizeof(int32_t), w, hint);
    if (!gc) return -1;
    s->grad_count = gc;
    float *mr = sp_try_realloc(s->max_radius, (size_t)cap, sizeof(float), w, hint);
    if (!mr) return -1;
    s->max_radius = mr;
    s->cap = cap;
    return 0;
}

int sp_refine_stats_reset(sp_refine_stats *s, int n) {
    if (sp_refine_stats_reserve(s, n)) return -1;
    if (n <= 0) return 0; /* an empty model: nothing to clear (and no buffers yet) */
    memset(s->grad_accum, 0, (size_t)n * sizeof(float));
    memset(s->grad_count, 0, (size_t)n * sizeof(int32_t));
    memset(s->max_radius, 0, (size_t)n * sizeof(float));
    return 0;
}

void sp_refine_stats_free(sp_refine_stats *s) {
    free(s->grad_accum);
    free(s->grad_count);
    free(s->max_radius);
    memset(s, 0, sizeof *s);
}

static float max_scale(const sp_gaussians *g, int i) {
    const float *l = g->log_scales + 3 * (size_t)i;
    float m = fmaxf(l[0], fmaxf(l[1], l[2]));
    return expf(m);
}

static void quat_to_rot(const float *q, float R[9]) {
    float w = q[0], x = q[1], y = q[2], z = q[3];
    float n = sqrtf(w * w + x * x + y * y + z * z);
    if (n > 0) w /= n, x /= n, y /= n, z /= n;
    R[0] = 1 - 2 * (y * y + z * z), R[1] = 2 * (x * y - w * z), R[2] = 2 * (x * z + w * y);
    R[3] = 2 * (x * y + w * z), R[4] = 1 - 2 * (x * x + z * z), R[5] = 2 * (y * z - w * x);
    R[6] = 2 * (x * z - w * y), R[7] = 2 * (y * z + w * x), R[8] = 1 - 2 * (x * x + y * y);
}

typedef struct {
    float g;
    int i;
} cand;

static int cand_cmp(const void *a, const void *b) {
    const cand *x = a, *y = b;
    if (x->g != y->g) return x->g > y->g ? -1 : 1;
    return x->i - y->i;
}

void cpu_zero_gaussian(sp_gaussians *m, int i) {
    memset(m->means + 3 * (size_t)i, 0, 3 * sizeof(float));
    memset(m->log_scales + 3 * (size_t)i, 0, 3 * sizeof(float));
    memset(m->quats + 4 * (size_t)i, 0, 4 * sizeof(float));
    m->opacity_logits[i] = 0;
    memset(m->sh + 3 * (size_t)m->K * i, 0, 3 * (size_t)m->K * sizeof(float));
}

int cpu_refine(sp_gaussians *g, sp_gaussians *m, sp_gaussians *v, sp_refine_stats *st, const sp_refine_args *a,
               sp_refine_result *r) {
    int n = g->n;
    memset(r, 0, sizeof *r);
    r->n_before = n;
    if (a->drop && a->densify) return sp_error("refine: drop flags come without densification");
    /* 1. densify candidates: 1 = clone, 2 = split */
    uint8_t *action = sp_try_alloc((size_t)n, 1, "the refine actions", "lower refine.capacity");
    if (!action) return -1;
    int nclone = 0, nsplit = 0;
    if (a->densify) {
        cand *c = sp_try_alloc((size_t)n, sizeof(cand), "the densification candidates", "lower refine.capacity");
        if (!c) {
            free(action);
            return -1;
        }
        int nc = 0;
        for (int i = 0; i < n; i++) {
            float gm = st->grad_accum[i] / (float)(st->grad_count[i] > 0 ? st->grad_count[i] : 1);
            if (gm >= a->grad_threshold) c[nc++] = (cand){gm, i};
        }
        qsort(c, (size_t)nc, sizeof *c, cand_cmp);
        long count = n;
        for (int k = 0; k < nc; k++) {
            int i = c[k].i;
            int split = max_scale(g, i) > a->clone_max_scale;
            long add = split ? a->split_count - 1 : 1;
            if (count + add > a->capacity) continue;
            count += add;
            action[i] = split ? 2 : 1;
            if (split) nsplit++;
            else nclone++;
        }
        free(c);
    }
    int total = n + nclone + nsplit * a->split_count;
    /* growth first: if the memory is not there, nothing has changed yet */
    if (sp_gaussians_try_reserve(g, total) || sp_gaussians_try_reserve(m, total) ||
        sp_gaussians_try_reserve(v, total)) {
        free(action);
        return -1;
    }
    /* 2. append clones, then split children (parents marked for removal) */
    int w = n;
    for (int i = 0; i < n; i++)
        if (action[i] == 1) {
            sp_gaussians_copy_one(g, w, g, i);
            cpu_zero_gaussian(m, w);
            cpu_zero_gaussian(v, w);
            w++;
        }
    float shrink = logf(a->split_shrink);
    for (int i = 0; i < n; i++) {
        if (action[i] != 2) continue;
        float R[9], s[3];
        quat_to_rot(g->quats + 4 * (size_t)i, R);
        for (int k = 0; k < 3; k++) s[k] = expf(g->log_scales[3 * (size_t)i + k]);
        sp_rng rng;
        sp_rng_seed(&rng, a->seed, (uint64_t)i);
        for (int c = 0; c < a->split_count; c++) {
            sp_gaussians_copy_one(g, w, g, i);
            float e[3];
            for (int k = 0; k < 3; k++) e[k] = s[k] * sp_rng_normal(&rng);
            for (int k = 0; k < 3; k++) {
                g->means[3 * (size_t)w + k] += R[k * 3 + 0] * e[0] + R[k * 3 + 1] * e[1] + R[k * 3 + 2] * e[2];
                g->log_scales[3 * (size_t)w + k] -= shrink;
            }
            cpu_zero_gaussian(m, w);
            cpu_zero_gaussian(v, w);
            w++;
        }
    }
    g->n = m->n = v->n = w;
    /* 3. opacity decay / reset */
    if (a->opacity_decay > 0 || a->opacity_reset > 0) {
        for (int i = 0; i < w; i++) {
            float o = sp_sigmoidf(g->opacity_logits[i]);
            if (a->opacity_decay > 0) o *= 1.0f - a->opacity_decay;
            if (a->opacity_reset > 0 && o > a->opacity_reset) o = a->opacity_reset;
            o = fminf(fmaxf(o, 1e-6f), 1.0f - 1e-6f);
            g->opacity_logits[i] = sp_logitf(o);
            if (a->opacity_reset > 0) m->opacity_logits[i] = v->opacity_logits[i] = 0; /* restart Adam too */
        }
    }
    /* 4. prune (split parents always go), compacting in order */
    int out = 0;
    for (int i = 0; i < w; i++) {
        int remove = i < n && action[i] == 2;
        if (!remove) {
            float o = sp_sigmoidf(g->opacity_logits[i]);
            if (o < a->prune_opacity) remove = 1;
            else if (a->prune_world_scale > 0 && max_scale(g, i) > a->prune_world_scale) remove = 1;
            else if (a->drop && i < n && a->drop[i]) remove = 1;
            if (remove) r->pruned++;
        }
        if (remove) continue;
        if (out != i) {
            sp_gaussians_copy_one(g, out, g, i);
            sp_gaussians_copy_one(m, out, m, i);
            sp_gaussians_copy_one(v, out, v, i);
        }
        out++;
    }
    g->n = m->n = v->n = out;
    free(action);
    r->cloned = nclone;
    r->split = nsplit;
    r->n_after = out;
    return sp_refine_stats_reset(st, out);
}
