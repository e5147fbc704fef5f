/* mcmc.c — host decisions of MCMC densification (mcmc.h): dead Gaussians relocated onto live ones
 * and new ones added, both drawn with probability proportional to opacity, each source and its
 * copies given the opacity and scales that keep what the source rendered (the arithmetic is
 * backend/mcmc_rule.h's, which the CUDA backend's device decisions share). */
#include "train/mcmc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"

int sp_mcmc_sample(const float *weight, int n, int count, uint64_t seed, uint64_t stream, int32_t *out) {
    if (n <= 0 || count <= 0) return 0;
    uint64_t *prefix = sp_try_alloc((size_t)n, sizeof(uint64_t), "the MCMC sampling table", "lower refine.max_gaussians");
    if (!prefix) return -1;
    uint64_t total = 0; /* weights quantized to 24 bits (mcmc_rule.h): exact integer sums */
    for (int i = 0; i < n; i++) {
        float w = weight[i];
        if (isfinite(w) && w > 0.0f) total += (uint32_t)((w < 1.0f ? w : 1.0f) * SP_MCMC_WEIGHT_ONE);
        prefix[i] = total;
    }
    if (total == 0) {
        free(prefix);
        return 0;
    }
    for (int k = 0; k < count; k++) out[k] = sp_mcmc_pick(prefix, n, sp_mcmc_draw_point(seed, stream, (uint64_t)k, total));
    free(prefix);
    return count;
}

static int buf_reserve(sp_mcmc_buf *b, int count) {
    if (count <= b->cap) return 0;
    int cap = count + count / 2 + 16;
    const char *w = "the MCMC plan", *hint = "lower refine.max_gaussians";
    int32_t *d = sp_try_realloc(b->dst, (size_t)cap, sizeof(int32_t), w, hint);
    if (!d) return -1;
    b->dst = d;
    int32_t *s = sp_try_realloc(b->src, (size_t)cap, sizeof(int32_t), w, hint);
    if (!s) return -1;
    b->src = s;
    float *o = sp_try_realloc(b->opacity_logit, (size_t)cap, sizeof(float), w, hint);
    if (!o) return -1;
    b->opacity_logit = o;
    float *l = sp_try_realloc(b->log_scales, (size_t)cap * 3, sizeof(float), w, hint);
    if (!l) return -1;
    b->log_scales = l;
    b->cap = cap;
    return 0;
}

static void push(sp_mcmc_buf *b, int dst, int src, float logit, const float ls[3]) {
    int k = b->count++;
    b->dst[k] = dst;
    b->src[k] = src;
    b->opacity_logit[k] = logit;
    memcpy(b->log_scales + 3 * (size_t)k, ls, 3 * sizeof(float));
}

/* Entries for sources drawn[0..k-1] (with repeats) copied onto dests[0..k-1]: each distinct
 * source once (itself), then every copy, all with the spread opacity and scales. */
static int spread(sp_mcmc_buf *b, int n, const float *logits, const float *log_scales, const int32_t *drawn,
                  const int32_t *dests, int k, float min_opacity) {
    int32_t *times = sp_try_alloc((size_t)n, sizeof(int32_t), "the MCMC counts", "lower refine.max_gaussians");
    if (!times) return -1;
    if (buf_reserve(b, b->count + 2 * k)) {
        free(times);
        return -1;
    }
    for (int j = 0; j < k; j++) times[drawn[j]]++;
    for (int j = 0; j < k; j++) {
        int s = drawn[j];
        float logit, ls[3];
        sp_mcmc_spread(logits[s], log_scales + 3 * (size_t)s, times[s] < 0 ? -times[s] - 1 : times[s], min_opacity,
                       &logit, ls);
        if (times[s] > 0) { /* first time this source is met: its own entry, then mark it */
            push(b, s, s, logit, ls);
            times[s] = -times[s] - 1;
        }
        push(b, dests[j], s, logit, ls);
    }
    free(times);
    return 0;
}

int sp_mcmc_relocate(sp_mcmc_buf *buf, int n, const float *logits, const float *log_scales, float dead_opacity,
                     uint64_t seed) {
    if (buf->n_after < n) buf->n_after = n;
    if (n <= 0) return 0;
    float *w = sp_try_alloc((size_t)n, sizeof(float), "the MCMC weights", "lower refine.max_gaussians");
    int32_t *dead = sp_try_alloc((size_t)n, sizeof(int32_t), "the MCMC dead list", "lower refine.max_gaussians");
    int32_t *drawn = sp_try_alloc((size_t)n, sizeof(int32_t), "the MCMC draws", "lower refine.max_gaussians");
    int rc = -1, nd = 0;
    if (!w || !dead || !drawn) goto out;
    for (int i = 0; i < n; i++) {
        int is_dead = sp_mcmc_dead(logits[i], dead_opacity);
        w[i] = is_dead ? 0.0f : sp_mcmc_opacity_of(logits[i]);
        if (is_dead) dead[nd++] = i;
    }
    rc = 0;
    if (nd == 0 || nd == n) goto out; /* nothing dead, or nothing alive to move onto */
    int got = sp_mcmc_sample(w, n, nd, seed, 1, drawn);
    if (got < 0) rc = -1;
    else if (got > 0) rc = spread(buf, n, logits, log_scales, drawn, dead, nd, dead_opacity) ? -1 : nd;
out:
    free(w), free(dead), free(drawn);
    return rc;
}

int sp_mcmc_add(sp_mcmc_buf *buf, int n, const float *logits, const float *log_scales, int add, float min_opacity,
                uint64_t seed) {
    if (buf->n_after < n) buf->n_after = n;
    if (n <= 0 || add <= 0) return 0;
    float *w = sp_try_alloc((size_t)n, sizeof(float), "the MCMC weights", "lower refine.max_gaussians");
    int32_t *drawn = sp_try_alloc((size_t)add, sizeof(int32_t), "the MCMC draws", "lower refine.max_gaussians");
    int32_t *dests = sp_try_alloc((size_t)add, sizeof(int32_t), "the MCMC draws", "lower refine.max_gaussians");
    int rc = -1;
    if (!w || !drawn || !dests) goto out;
    for (int i = 0; i < n; i++) w[i] = isfinite(logits[i]) ? sp_mcmc_opacity_of(logits[i]) : 0.0f;
    int got = sp_mcmc_sample(w, n, add, seed, 2, drawn);
    if (got <= 0) {
        rc = got;
        goto out;
    }
    for (int k = 0; k < add; k++) dests[k] = buf->n_after + k;
    if (spread(buf, n, logits, log_scales, drawn, dests, add, min_opacity)) goto out;
    buf->n_after += add;
    rc = add;
out:
    free(w), free(drawn), free(dests);
    return rc;
}

int sp_mcmc_auto_budget(double train_pixels, int num_points, double device_free_bytes, const char **why) {
    const char *w = "the training pixels";
    double b = SP_MCMC_BUDGET_BASE * train_pixels / SP_MCMC_BUDGET_PIXELS;
    if (b < SP_MCMC_BUDGET_BASE) b = SP_MCMC_BUDGET_BASE, w = "the floor";
    if (b < 2.0 * num_points) b = 2.0 * num_points, w = "twice the sparse points";
    if (b > SP_MCMC_BUDGET_MAX) b = SP_MCMC_BUDGET_MAX, w = "the ceiling";
    double fits = device_free_bytes > 0 ? 0.5 * device_free_bytes / SP_MCMC_BYTES_PER_GAUSSIAN : INFINITY;
    if (b > fits) b = fits, w = "half of the device's free memory";
    if (why) *why = w;
    int n = (int)(floor(b / 1000.0) * 1000.0);
    return n > 1000 ? n : 1000;
}

int sp_mcmc_add_count(int n, double grow, int max_gaussians) {
    if (n >= max_gaussians || !(grow > 0.0)) return 0;
    double want = floor(grow * (double)n);
    double room = (double)max_gaussians - (double)n;
    return (int)(want < room ? want : room);
}

void sp_mcmc_apply_host(const sp_mcmc_buf *buf, float *logits, float *log_scales) {
    for (int k = 0; k < buf->count; k++) {
        int d = buf->dst[k];
        logits[d] = buf->opacity_logit[k];
        memcpy(log_scales + 3 * (size_t)d, buf->log_scales + 3 * (size_t)k, 3 * sizeof(float));
    }
}

sp_mcmc_plan sp_mcmc_plan_of(const sp_mcmc_buf *buf) {
    sp_mcmc_plan p = {buf->n_after, buf->count, buf->dst, buf->src, buf->opacity_logit, buf->log_scales};
    return p;
}

void sp_mcmc_buf_clear(sp_mcmc_buf *buf) {
    buf->count = 0;
    buf->n_after = 0;
}

void sp_mcmc_buf_free(sp_mcmc_buf *buf) {
    free(buf->dst), free(buf->src), free(buf->opacity_logit), free(buf->log_scales);
    memset(buf, 0, sizeof *buf);
}

void sp_mcmc_prepare(sp_backend *b) {
    if (b->ops->mcmc_refine && b->ops->mcmc_prepare) b->ops->mcmc_prepare(b);
}

int sp_mcmc_refine(sp_backend *b, float dead_opacity, double grow, int max_gaussians, uint64_t seed,
                   sp_mcmc_result *res) {
    memset(res, 0, sizeof *res);
    if (!b->ops->mcmc_read || !b->ops->mcmc_apply)
        return sp_error("refine.strategy = \"mcmc\": the %s backend has no MCMC densification", b->ops->name);
    int n = b->ops->num_gaussians(b);
    res->n_before = res->n_after = n;
    int add = sp_mcmc_add_count(n, grow, max_gaussians);
    if (b->ops->mcmc_refine) { /* the same decisions, made on the device */
        if (b->ops->mcmc_refine(b, dead_opacity, add, seed, &res->relocated, &res->added)) return -1;
        res->n_after = n + res->added;
        return 0;
    }
    size_t cap = (size_t)(n + add > 0 ? n + add : 1);
    float *logits = sp_try_alloc(cap, sizeof(float), "the MCMC opacities", "lower refine.max_gaussians");
    float *ls = sp_try_alloc(cap * 3, sizeof(float), "the MCMC scales", "lower refine.max_gaussians");
    sp_mcmc_buf buf = {0};
    int rc = -1;
    if (!logits || !ls || b->ops->mcmc_read(b, logits, ls)) goto out;
    int moved = sp_mcmc_relocate(&buf, n, logits, ls, dead_opacity, sp_hash64(seed, 1));
    if (moved < 0) goto out;
    if (moved > 0) {
        sp_mcmc_plan p = sp_mcmc_plan_of(&buf);
        if (b->ops->mcmc_apply(b, &p)) goto out;
        sp_mcmc_apply_host(&buf, logits, ls);
    }
    res->relocated = moved;
    sp_mcmc_buf_clear(&buf);
    int added = sp_mcmc_add(&buf, n, logits, ls, add, dead_opacity, sp_hash64(seed, 2));
    if (added < 0) goto out;
    if (added > 0) {
        sp_mcmc_plan p = sp_mcmc_plan_of(&buf);
        if (b->ops->mcmc_apply(b, &p)) goto out;
    }
    res->added = added;
    res->n_after = n + added;
    rc = 0;
out:
    free(logits), free(ls);
    sp_mcmc_buf_free(&buf);
    return rc;
}
