/* backend_ops_reorder.h — the parity harness's check of a backend's reorder (backend.h: the
 * Gaussians in Morton order of their means) against the host's (backend/ref/reorder.c), exactly:
 * parameters and both Adam moments come back bit-identical to cpu_reorder's. Cases: one Gaussian;
 * thousands in a box with many equal means (ties keep index order) and non-finite coordinates
 * (outside the box, cell 0); a flat axis (every y equal); and 300,000 at SH degree 0, enough for a
 * GPU's box reduction to loop over its grid. A training step after the reorder runs on what it
 * left (fresh gradients) and stays finite. Included once, by test_backend_ops.c. */
#ifndef SPLAT_BACKEND_OPS_REORDER_H
#define SPLAT_BACKEND_OPS_REORDER_H

#include "backend/ref/reorder.h"

static int step_reorder(const tcase *c, sp_backend *b) {
    const char *stage = "reorder";
    if (!b->ops->reorder) {
        printf("%s: no reorder (the backend keeps its order): skipped\n", c->label);
        return 1;
    }
    static const struct {
        const char *name;
        int n, deg, kind;
    } cases[] = {{"one Gaussian", 1, 3, 0},
                 {"ties and non-finite means", 5000, 3, 1},
                 {"a flat axis", 2000, 1, 2},
                 {"300k Gaussians", 300000, 0, 0}};
    sp_rng r = pt_rng(930);
    int ok = 1;
    for (size_t ci = 0; ci < sizeof cases / sizeof *cases; ci++) {
        int n = cases[ci].n;
        sp_gaussians g, m, v, out[3];
        pt_random_gaussians(&g, &r, n, cases[ci].deg, 2.0f);
        if (cases[ci].kind == 1) {
            for (int i = 0; i < n / 10; i++) memcpy(g.means + 3 * (size_t)(i * 7 % n), g.means + 3 * 5, 12);
            g.means[3 * 17] = nanf(""), g.means[3 * 18 + 1] = INFINITY, g.means[3 * 19 + 2] = -INFINITY;
        }
        if (cases[ci].kind == 2)
            for (int i = 0; i < n; i++) g.means[3 * i + 1] = 0.25f;
        sp_gaussians_init(&m, n, cases[ci].deg), sp_gaussians_init(&v, n, cases[ci].deg);
        m.n = v.n = n;
        fill_store(&r, &m, -0.1f, 0.1f, 0);
        fill_store(&r, &v, 0.0f, 0.01f, 0);
        memset(out, 0, sizeof out);
        int rc = b->ops->set_gaussians(b, &g, &m, &v);
        rc = rc || b->ops->reorder(b) || b->ops->get_gaussians(b, &out[0], &out[1], &out[2]);
        assert_int_equal(cpu_reorder(&g, &m, &v), 0);
        char what[96];
        snprintf(what, sizeof what, "%s: parameters and moments", cases[ci].name);
        int same = !rc && pt_stores_equal(&out[0], &g) && pt_stores_equal(&out[1], &m) && pt_stores_equal(&out[2], &v);
        if (rc) printf("  %s\n", sp_last_error());
        ok &= pt_report(same, c->label, stage, what, "bit-identical to the host's order (1=yes)", same, 1);
        for (int k = 0; k < 3; k++) sp_gaussians_free(&out[k]);
        sp_gaussians_free(&g), sp_gaussians_free(&m), sp_gaussians_free(&v);
    }
    /* a step after a reorder: gradients start from zero, the model stays finite */
    sp_gaussians g;
    pt_random_gaussians(&g, &r, 800, 1, 1.0f);
    sp_view view;
    memset(&view, 0, sizeof view);
    pt_look_at(&view.cam, 40, 30, 0.3f, 0.2f, 4.0f);
    view.channels = 3;
    view.pixels = calloc(40 * 30 * 3, 1);
    sp_step_args a = step_args(1, 0);
    int rc = b->ops->set_gaussians(b, &g, NULL, NULL) || b->ops->upload_views(b, &view, 1, SP_ALPHA_STRAIGHT) ||
             b->ops->reorder(b) || b->ops->train_step(b, &a) || b->ops->reorder(b) || b->ops->train_step(b, &a);
    int finite = !rc && b->ops->params_finite(b);
    ok &= pt_report(finite, c->label, stage, "two steps, each after a reorder", "finite (1=yes)", finite, 1);
    free(view.pixels);
    sp_gaussians_free(&g);
    return ok;
}

#endif
