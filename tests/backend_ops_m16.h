/* backend_ops_m16.h — Adam's moments packed 16 bits each (adam.moments16, backend/moments16_rule.h)
 * through a backend's ops, deterministic variants only (two runs must see the same gradients):
 *   - set_gaussians then get_gaussians hands back the parameters as they came and every moment
 *     rounded to the nearest 16-bit value (sp_m16_pack_nearest), bit for bit, v alike when asked
 *     for alone;
 *   - one step from moments 16 bits hold exactly (fused, and split_update; dense, and sparse;
 *     SH degree 2 of a degree-3 store, so the top band's gradients are zero), packed against float:
 *     every parameter the same, and each moment the float run's rounded by the rule with the
 *     step's random bits for its place in the packed layout. Exact on the cpu and cuda backends;
 *     vulkan's compiler may contract the two paths' arithmetic differently, so there parameters
 *     agree to 1e-6 relative and moments to one 16-bit step, and at most 1 % of the moments may
 *     differ from the rule's bits at all (other random bits would move about half of them);
 *   - refine, MCMC's decisions on the device and reorder move packed moments as float ones
 *     (step_moments16_structure), bit for bit on every backend.
 * Included once, by test_backend_ops.c, after backend_ops_steps.h. */
#ifndef SPLAT_BACKEND_OPS_M16_H
#define SPLAT_BACKEND_OPS_M16_H

/* Runs `steps` train steps (adam_step from t0) on a fresh backend of c with moments16 = packed and
 * the given split_update and sparse; the model and moments after it go to out[0..2]. -1 with the
 * backend's error. */
static int m16_run(const tcase *c, int packed, int split, int sparse, const sp_view *views,
                   const sp_gaussians *init, const sp_gaussians *m0, const sp_gaussians *v0, int t0, int steps,
                   sp_gaussians out[3]) {
    tcase dc = *c;
    dc.cfg.moments16 = packed;
    dc.cfg.split_update = split;
    sp_backend *b = make_backend(&dc, 0);
    int rc = b->ops->upload_views(b, views, NVIEWS, SP_ALPHA_STRAIGHT) || b->ops->set_gaussians(b, init, m0, v0);
    for (int s = 0; s < steps && !rc; s++) {
        sp_step_args a = step_args(t0 + s, (t0 + s) % NVIEWS);
        a.sh_degree = 2;
        a.adam_sparse = sparse;
        rc = b->ops->train_step(b, &a);
    }
    memset(out, 0, 3 * sizeof *out);
    rc = rc || b->ops->get_gaussians(b, &out[0], &out[1], &out[2]);
    b->ops->destroy(b);
    return rc ? -1 : 0;
}

static int m16_bits_equal(float a, float b) { return sp_m16_f2u(a) == sp_m16_f2u(b); }

/* Within one 16-bit step of m (vulkan's allowance). */
static int m16_near(float a, float b) {
    float d = fabsf(a - b), s = fmaxf(fabsf(a), fabsf(b));
    return d <= s * (1.0f / 128.0f) || m16_bits_equal(a, b);
}

static int step_moments16(const tcase *c, sp_backend *unused) {
    (void)unused;
    const char *stage = "adam.moments16";
    enum { NG = 501 };
    int loose = c->kind && !strcmp(c->kind->name, "vulkan");
    sp_rng r = pt_rng(977);
    sp_gaussians gt, init, m0, v0;
    pt_random_gaussians(&gt, &r, 300, 1, 0.8f);
    pt_random_gaussians(&init, &r, NG, 3, 0.8f);
    pt_random_gaussians(&m0, &r, NG, 3, 0.01f);
    pt_random_gaussians(&v0, &r, NG, 3, 0.01f);
    float *vv[5] = {v0.means, v0.log_scales, v0.quats, v0.opacity_logits, v0.sh};
    size_t cnt[5] = {3 * NG, 3 * NG, 4 * NG, NG, 3 * (size_t)v0.K * NG}, total = 0;
    for (int k = 0; k < 5; k++)
        for (size_t j = 0; j < cnt[k]; j++) vv[k][j] = 1e-4f * vv[k][j] * vv[k][j];
    for (int k = 0; k < 5; k++) total += cnt[k];
    float *mm0[5] = {m0.means, m0.log_scales, m0.quats, m0.opacity_logits, m0.sh};
    sp_view views[NVIEWS];
    make_views(views, &gt, 72, 56);
    int ok = 1;

    /* the round trip: every moment rounded to nearest, the parameters as they came */
    sp_gaussians o[3], vo; /* vo: v asked for alone */
    tcase dc = *c;
    dc.cfg.moments16 = 1;
    sp_backend *b = make_backend(&dc, 0);
    memset(o, 0, sizeof o), memset(&vo, 0, sizeof vo);
    int rc = b->ops->set_gaussians(b, &init, &m0, &v0) || b->ops->get_gaussians(b, &o[0], &o[1], &o[2]) ||
             b->ops->get_gaussians(b, &o[0], NULL, &vo);
    b->ops->destroy(b);
    if (rc) {
        ok &= pt_report(0, c->label, stage, "set and get", sp_last_error(), 1, 0);
    } else {
        int same = pt_stores_equal(&o[0], &init) && pt_stores_equal(&vo, &o[2]);
        float *om[5] = {o[1].means, o[1].log_scales, o[1].quats, o[1].opacity_logits, o[1].sh};
        float *ov[5] = {o[2].means, o[2].log_scales, o[2].quats, o[2].opacity_logits, o[2].sh};
        for (int k = 0; k < 5; k++)
            for (size_t j = 0; j < cnt[k]; j++) {
                uint32_t w = sp_m16_pack_nearest(mm0[k][j], vv[k][j]);
                same &= m16_bits_equal(om[k][j], sp_m16_m(w)) && m16_bits_equal(ov[k][j], sp_m16_v(w));
            }
        ok &= pt_report(same, c->label, stage, "set_gaussians then get_gaussians: moments to nearest 16 bits",
                        "bit-identical (1=yes)", same, 1);
    }
    for (int j = 0; j < 3; j++) sp_gaussians_free(&o[j]);
    sp_gaussians_free(&vo);

    /* one step from moments 16 bits hold, packed against float */
    for (int k = 0; k < 5; k++)
        for (size_t j = 0; j < cnt[k]; j++) {
            uint32_t w = sp_m16_pack_nearest(mm0[k][j], vv[k][j]);
            mm0[k][j] = sp_m16_m(w), vv[k][j] = sp_m16_v(w);
        }
    const int t = 5;
    for (int split = 0; split < 2; split++)
        for (int sparse = 0; sparse < 2; sparse++) {
            sp_gaussians f[3], p[3];
            char what[128];
            snprintf(what, sizeof what, "one %s %s step, packed vs float", split ? "split" : "fused",
                     sparse ? "sparse" : "dense");
            if (m16_run(c, 0, split, sparse, views, &init, &m0, &v0, t, 1, f) ||
                m16_run(c, 1, split, sparse, views, &init, &m0, &v0, t, 1, p)) {
                ok &= pt_report(0, c->label, stage, what, sp_last_error(), 1, 0);
                continue;
            }
            float *fm[5] = {f[1].means, f[1].log_scales, f[1].quats, f[1].opacity_logits, f[1].sh};
            float *fv[5] = {f[2].means, f[2].log_scales, f[2].quats, f[2].opacity_logits, f[2].sh};
            float *pm[5] = {p[1].means, p[1].log_scales, p[1].quats, p[1].opacity_logits, p[1].sh};
            float *pv[5] = {p[2].means, p[2].log_scales, p[2].quats, p[2].opacity_logits, p[2].sh};
            int rule = 1, moved = 0;
            size_t off_bits = 0;
            for (int k = 0; k < 5; k++)
                for (size_t j = 0; j < cnt[k]; j++) {
                    uint64_t e = (uint64_t)sp_m16_group_start(k, NG) + j;
                    uint32_t w = sp_m16_pack(fm[k][j], fv[k][j], sp_m16_bits((uint32_t)t, e));
                    float wm = sp_m16_m(w), wv = sp_m16_v(w);
                    int exact = m16_bits_equal(pm[k][j], wm) && m16_bits_equal(pv[k][j], wv);
                    off_bits += !exact;
                    rule &= loose ? m16_near(pm[k][j], wm) && m16_near(pv[k][j], wv) : exact;
                    moved |= !m16_bits_equal(pm[k][j], mm0[k][j]);
                }
            double worst = 0.0;
            int params;
            if (loose) {
                const float *a[5] = {f[0].means, f[0].log_scales, f[0].quats, f[0].opacity_logits, f[0].sh};
                const float *bb[5] = {p[0].means, p[0].log_scales, p[0].quats, p[0].opacity_logits, p[0].sh};
                for (int k = 0; k < 5; k++)
                    for (size_t j = 0; j < cnt[k]; j++) {
                        double d = fabs((double)a[k][j] - bb[k][j]) / fmax(fabs((double)a[k][j]), 1e-3);
                        if (d > worst) worst = d;
                    }
                params = worst <= 1e-6;
            } else {
                params = pt_stores_equal(&f[0], &p[0]);
            }
            rule &= off_bits <= total / 100;
            if (!(rule && params && moved) || off_bits)
                printf("INFO %s %s: rule %d (%zu of %zu moment pairs off the rule's bits), parameters %d (worst "
                       "%.3g), moments moved %d\n",
                       c->label, what, rule, off_bits, total, params, worst, moved);
            ok &= pt_report(rule && params && moved, c->label, stage, what,
                            loose ? "as the rule, to vulkan's allowance (1=yes)" : "bit-identical to the rule (1=yes)",
                            rule && params && moved, 1);
            for (int j = 0; j < 3; j++) sp_gaussians_free(&f[j]), sp_gaussians_free(&p[j]);
        }
    free_views(views);
    sp_gaussians_free(&gt), sp_gaussians_free(&init), sp_gaussians_free(&m0), sp_gaussians_free(&v0);
    return ok;
}

/* Refine (clones, splits, prunes, an opacity reset), MCMC's decisions on the device (relocation and
 * growth) and reorder with packed moments against float ones on the same backend: the moments start
 * at values 16 bits hold, and these ops only move, copy and zero them, so the packed run's moments
 * (unpacked) and parameters must be the float run's bit for bit (a backend that keeps no second
 * store under adam.moments16 must still carry v inside m's words through every one of them). */
static int m16_structure_run(const tcase *c, int packed, const sp_gaussians *g, const sp_gaussians *m,
                             const sp_gaussians *v, sp_gaussians out[3], int counts[4]) {
    tcase dc = *c;
    dc.cfg.moments16 = packed;
    sp_backend *b = make_backend(&dc, 0);
    sp_refine_args ra = refine_none();
    ra.densify = 1;
    ra.grad_threshold = 0.0f; /* no statistics: every Gaussian a candidate */
    ra.clone_max_scale = 0.01f;
    ra.prune_opacity = 0.001f;
    ra.opacity_reset = 0.3f;
    ra.capacity = 3 * g->n;
    sp_refine_result rr;
    memset(&rr, 0, sizeof rr);
    memset(out, 0, 3 * sizeof *out);
    memset(counts, 0, 4 * sizeof *counts);
    int rc = b->ops->set_gaussians(b, g, m, v) || b->ops->refine(b, &ra, &rr);
    if (!rc && b->ops->mcmc_refine) rc = b->ops->mcmc_refine(b, 0.005f, g->n / 10, 99, &counts[2], &counts[3]);
    else counts[2] = counts[3] = -1;
    if (!rc && b->ops->reorder) rc = b->ops->reorder(b);
    rc = rc || b->ops->get_gaussians(b, &out[0], &out[1], &out[2]);
    counts[0] = rr.cloned, counts[1] = rr.split;
    b->ops->destroy(b);
    return rc ? -1 : 0;
}

static int step_moments16_structure(const tcase *c, sp_backend *unused) {
    (void)unused;
    const char *stage = "adam.moments16";
    int n = 3000, ok = 1;
    sp_rng r = pt_rng(978);
    sp_gaussians g, m, v, f[3], p[3];
    mcmc_store(&g, &r, n, 3); /* opacities from dead to opaque, scales 1e-3 .. 0.05 */
    sp_gaussians_init(&m, n, 3), sp_gaussians_init(&v, n, 3);
    m.n = v.n = n;
    fill_store(&r, &m, -0.1f, 0.1f, 0);
    fill_store(&r, &v, 0.0f, 0.01f, 0);
    float *am[5] = {m.means, m.log_scales, m.quats, m.opacity_logits, m.sh};
    float *av[5] = {v.means, v.log_scales, v.quats, v.opacity_logits, v.sh};
    size_t cnt[5] = {3 * (size_t)n, 3 * (size_t)n, 4 * (size_t)n, (size_t)n, 3 * (size_t)m.K * n};
    for (int k = 0; k < 5; k++)
        for (size_t j = 0; j < cnt[k]; j++) {
            uint32_t w = sp_m16_pack_nearest(am[k][j], av[k][j]);
            am[k][j] = sp_m16_m(w), av[k][j] = sp_m16_v(w);
        }
    int fc[4], pc[4];
    int rc = m16_structure_run(c, 0, &g, &m, &v, f, fc) || m16_structure_run(c, 1, &g, &m, &v, p, pc);
    char what[192];
    snprintf(what, sizeof what,
             "refine (%d cloned, %d split), mcmc on the device (%d relocated, %d added), reorder: packed vs float",
             pc[0], pc[1], pc[2], pc[3]);
    if (rc) {
        ok &= pt_report(0, c->label, stage, what, sp_last_error(), 1, 0);
    } else {
        /* every op did something (MCMC's counts -1 where the backend does not decide on the device) */
        int did = pc[0] > 0 && pc[1] > 0 && pc[2] != 0 && pc[3] != 0 && !memcmp(fc, pc, sizeof fc);
        int same = did && pt_stores_equal(&p[0], &f[0]) && pt_stores_equal(&p[1], &f[1]) &&
                   pt_stores_equal(&p[2], &f[2]) && p[0].n > n;
        ok &= pt_report(same, c->label, stage, what, "parameters and moments bit-identical (1=yes)", same, 1);
    }
    for (int j = 0; j < 3; j++) sp_gaussians_free(&f[j]), sp_gaussians_free(&p[j]);
    sp_gaussians_free(&g), sp_gaussians_free(&m), sp_gaussians_free(&v);
    return ok;
}

#endif
