/* prune.c — pruning by blend weight (prune.h). */
#include "train/prune.h"

#include <stdlib.h>
#include <string.h>

#include "backend/ref/stages.h"
#include "core/core.h"

int sp_blend_weights_host(const sp_gaussians *g, int antialias, const sp_camera *cams, int count, float *weight) {
    sp_params p = {g->n, g->K, g->means, g->log_scales, g->quats, g->opacity_logits, g->sh};
    sp_proj proj;
    if (sp_proj_alloc(&proj, g->n > 0 ? g->n : 1)) return -1;
    sp_bins bins = {0};
    int rc = cpu_blend_weights_views(&p, antialias, cams, count, &proj, &bins, weight);
    sp_bins_free(&bins);
    sp_proj_free(&proj);
    return rc;
}

typedef struct {
    float w;
    int i;
} weighted;

static int by_weight(const void *a, const void *b) {
    const weighted *x = a, *y = b;
    if (x->w != y->w) return x->w < y->w ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

int sp_prune_pick(const float *weight, int n, int remove, uint8_t *drop) {
    if (n <= 0) return 0;
    memset(drop, 0, (size_t)n);
    if (remove <= 0) return 0;
    if (remove > n) remove = n;
    weighted *o = sp_try_alloc((size_t)n, sizeof(weighted), "the prune order", NULL);
    if (!o) return -1;
    for (int i = 0; i < n; i++) o[i] = (weighted){weight[i], i};
    qsort(o, (size_t)n, sizeof *o, by_weight);
    for (int k = 0; k < remove; k++) drop[o[k].i] = 1;
    free(o);
    return 0;
}

int sp_prune_by_weight(sp_backend *b, const sp_camera *cams, int count, double fraction, sp_prune_result *r) {
    double t0 = sp_now();
    int n = b->ops->num_gaussians(b);
    memset(r, 0, sizeof *r);
    r->n_before = r->n_after = n;
    int remove = (int)(fraction * n);
    if (remove <= 0 || count <= 0) return 0;
    float *weight = sp_try_alloc((size_t)n, sizeof(float), "the blend weights", NULL);
    uint8_t *drop = sp_try_alloc((size_t)n, 1, "the prune flags", NULL);
    int rc = weight && drop ? 0 : -1;
    if (rc == 0 && b->ops->blend_weights) {
        rc = b->ops->blend_weights(b, cams, count, weight);
    } else if (rc == 0) {
        sp_gaussians g = {0};
        rc = b->ops->get_gaussians(b, &g, NULL, NULL);
        if (rc == 0 && g.n != n) rc = sp_error("prune: the backend holds %d Gaussians, not %d", g.n, n);
        if (rc == 0) rc = sp_blend_weights_host(&g, b->cfg.antialias, cams, count, weight);
        sp_gaussians_free(&g);
    }
    if (rc == 0) rc = sp_prune_pick(weight, n, remove, drop);
    if (rc == 0) {
        sp_refine_args ra = {0};
        ra.drop = drop;
        ra.capacity = n;
        sp_refine_result rr;
        rc = b->ops->refine(b, &ra, &rr);
        if (rc == 0) r->n_after = rr.n_after;
    }
    free(weight);
    free(drop);
    r->seconds = sp_now() - t0;
    return rc;
}
