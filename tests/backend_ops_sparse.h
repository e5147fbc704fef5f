/* backend_ops_sparse.h — sparse Adam (adam.sparse) through a backend's train_step: a Gaussian in
 * view takes the whole update, a Gaussian out of view keeps every value whose gradient is zero.
 * One step at SH degree 0 (the higher SH coefficients get no gradient) from nonzero moments, half
 * the Gaussians in front of the camera and half behind it: the in-view Gaussians' higher
 * coefficients take the dense update (first moment beta1 m0, to 1e-6 relative, the value moved),
 * the Gaussians behind the camera keep their means, rotations and SH and those moments bit for bit,
 * while their opacity and scales take the MCMC regularizer terms where the backend has MCMC
 * (non-zero gradients update). Fused and unfused (split_update) steps alike. Included once, by
 * test_backend_ops.c, after backend_ops_steps.h. */
#ifndef SPLAT_BACKEND_OPS_SPARSE_H
#define SPLAT_BACKEND_OPS_SPARSE_H

static int step_sparse_in_view(const tcase *c, sp_backend *unused) {
    (void)unused;
    const char *stage = "sparse adam";
    enum { NG = 400 };
    int ok = 1;
    for (int split = 0; split < 2; split++) {
        sp_rng r = pt_rng(940);
        sp_gaussians g, m0, v0, out, om, ov;
        pt_random_gaussians(&g, &r, NG, 1, 0.8f);
        sp_view view;
        memset(&view, 0, sizeof view);
        pt_look_at(&view.cam, 64, 48, 0.3f, 0.35f, 4.0f);
        float C[3]; /* the camera centre: -R^T t */
        for (int k = 0; k < 3; k++)
            C[k] = -(view.cam.R[k] * view.cam.t[0] + view.cam.R[3 + k] * view.cam.t[1] +
                     view.cam.R[6 + k] * view.cam.t[2]);
        for (int i = NG / 2; i < NG; i++) /* behind the camera: 1.5 times its distance from the origin */
            for (int k = 0; k < 3; k++) g.means[3 * i + k] = 1.5f * C[k] + 0.2f * g.means[3 * i + k];
        pt_random_gaussians(&m0, &r, NG, 1, 0.01f);
        pt_random_gaussians(&v0, &r, NG, 1, 0.01f);
        float *vv[5] = {v0.means, v0.log_scales, v0.quats, v0.opacity_logits, v0.sh};
        size_t cnt[5] = {3 * NG, 3 * NG, 4 * NG, NG, 3 * (size_t)v0.K * NG};
        for (int k = 0; k < 5; k++)
            for (size_t j = 0; j < cnt[k]; j++) vv[k][j] = 1e-4f + vv[k][j] * vv[k][j];
        view.channels = 3;
        view.pixels = sp_malloc(64 * 48 * 3);
        memset(view.pixels, 128, 64 * 48 * 3);
        tcase dc = *c;
        dc.cfg.split_update = split;
        sp_backend *b = make_backend(&dc, 0);
        memset(&out, 0, sizeof out), memset(&om, 0, sizeof om), memset(&ov, 0, sizeof ov);
        sp_step_args a = step_args(1, 0);
        a.sh_degree = 0;
        a.adam_sparse = 1;
        int reg = b->ops->mcmc_apply != NULL;
        if (reg) a.opacity_reg = 0.01f, a.scale_reg = 0.01f;
        int rc = b->ops->upload_views(b, &view, 1, SP_ALPHA_STRAIGHT) || b->ops->set_gaussians(b, &g, &m0, &v0) ||
                 b->ops->train_step(b, &a) || b->ops->get_gaussians(b, &out, &om, &ov);
        b->ops->destroy(b);
        char what[96];
        if (rc) {
            snprintf(what, sizeof what, "%s step", split ? "unfused" : "fused");
            ok &= pt_report(0, c->label, stage, what, sp_last_error(), 1, 0);
        } else {
            size_t K3 = 3 * (size_t)g.K;
            int kept = 1, reg_moved = 1, rest_dense = 1, rest_moved = 1;
            for (int i = NG / 2; i < NG; i++) {
                size_t i3 = 3 * (size_t)i, i4 = 4 * (size_t)i, ik = K3 * (size_t)i;
                kept &= !memcmp(out.means + i3, g.means + i3, 12) && !memcmp(om.means + i3, m0.means + i3, 12) &&
                        !memcmp(out.quats + i4, g.quats + i4, 16) && !memcmp(ov.quats + i4, v0.quats + i4, 16) &&
                        !memcmp(out.sh + ik, g.sh + ik, K3 * 4) && !memcmp(om.sh + ik, m0.sh + ik, K3 * 4) &&
                        !memcmp(ov.sh + ik, v0.sh + ik, K3 * 4);
                if (reg)
                    reg_moved &= om.opacity_logits[i] != m0.opacity_logits[i] && om.log_scales[i3] != m0.log_scales[i3];
            }
            double worst = 0.0;
            for (int i = 0; i < NG / 2; i++)
                for (size_t e = 3; e < K3; e++) {
                    size_t at = K3 * i + e;
                    double want = 0.9 * (double)m0.sh[at];
                    worst = fmax(worst, fabs(om.sh[at] - want) / fabs(want));
                    rest_moved &= out.sh[at] != g.sh[at];
                }
            rest_dense = worst <= 1e-6;
            const char *how = split ? "unfused" : "fused";
            snprintf(what, sizeof what, "%s: out of view, zero-gradient values and moments kept", how);
            ok &= pt_report(kept, c->label, stage, what, "bit-identical (1=yes)", kept, 1);
            snprintf(what, sizeof what, "%s: out of view, the regularized values updated", how);
            ok &= pt_report(reg_moved, c->label, stage, what, "updated (1=yes)", reg_moved, 1);
            snprintf(what, sizeof what, "%s: in view, zero-gradient SH values take the dense update", how);
            ok &= pt_report(rest_dense && rest_moved, c->label, stage, what, "max rel err of m", worst, 1e-6);
        }
        free(view.pixels);
        sp_gaussians_free(&g), sp_gaussians_free(&m0), sp_gaussians_free(&v0);
        sp_gaussians_free(&out), sp_gaussians_free(&om), sp_gaussians_free(&ov);
    }
    return ok;
}

#endif
