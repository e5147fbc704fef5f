/* backend_ops_steps.h — the whole-step checks of the parity harness (test_backend_ops.c), through
 * a backend's ops (backend.h) rather than its stage table: render and one train_step against the
 * CPU stages (also over small image shapes, alpha modes and SSIM weights), refine's prune / reset /
 * clone / split / capacity rules, a short training run whose loss falls and whose profile rows add
 * up, and two deterministic runs that agree bit for bit.
 * Included once, by test_backend_ops.c (it uses that file's tcase). */
#ifndef SPLAT_BACKEND_OPS_STEPS_H
#define SPLAT_BACKEND_OPS_STEPS_H

static sp_backend *make_backend(const tcase *c, int profile) {
    sp_backend_config cfg = c->cfg;
    cfg.profile = profile;
    sp_backend *b = c->kind->create(&cfg);
    if (!b) fail_msg("%s: backend creation failed: %s", c->label, sp_last_error());
    return b;
}

/* One train_step of scene s on view v (uploaded with alpha) against the CPU stages: the loss of the
 * CPU render against the view composited on bg (sp_view_composite) with ssim_weight lambda, 1e-5
 * relative, and the gradients read back through Adam's first moment (m = (1 - beta1) g after step
 * 1), relative L2 < 1e-3 per group. The update agrees with the moments read back: v = (1 - beta2) g^2
 * and p_before - p_after = lr m^ / (sqrt(v^) + eps), each to 1e-5 relative plus a float's rounding of
 * p (the backend's Adam, fused with its backward pass or not). proj, bins and fwd are the CPU's project, bin and rasterize of
 * s. The backend's parameters after the step go to gp (when not NULL) and the CPU's gradients, as a
 * store, to cg (when not NULL); the caller frees them. */
static int train_step_vs_cpu(const tcase *c, sp_backend *b, const pt_scene *s, const sp_proj *proj,
                             const sp_bins *bins, const sp_raster_out *fwd, const float bg[3], const sp_view *v,
                             sp_alpha_mode alpha, float lambda, const char *what, sp_gaussians *gp_out,
                             sp_gaussians *cg_out) {
    const char *stage = "step";
    int w = s->cam.width, h = s->cam.height, n = s->n;
    size_t np = (size_t)w * h;
    float *target = sp_malloc(np * 3 * 4), *dl = sp_malloc(np * 3 * 4);
    sp_view_composite(v, alpha, bg, target);
    double lc = cpu_loss(fwd->rgb, target, w, h, lambda, dl);
    sp_proj_grad pg;
    sp_proj_grad_alloc(&pg, n);
    sp_proj_grad_zero(&pg, n);
    cpu_backward_raster(proj, bins, &s->cam, bg, fwd, dl, &pg);
    sp_gaussians g, cg;
    pt_scene_store(s, &g);
    sp_gaussians_init(&cg, n, s->deg);
    cg.n = n;
    sp_gaussians_zero(&cg);
    sp_params_grad pgr = {n, s->K, cg.means, cg.log_scales, cg.quats, cg.opacity_logits, cg.sh};
    cpu_project_back_aa(&s->p, &s->cam, s->deg, c->cfg.antialias, proj, &pg, &pgr);
    assert_int_equal(b->ops->set_gaussians(b, &g, NULL, NULL), 0);
    assert_int_equal(b->ops->upload_views(b, v, 1, alpha), 0);
    sp_step_args a;
    memset(&a, 0, sizeof a);
    a.view = 0, a.sh_degree = s->deg, a.ssim_weight = lambda, a.adam_step = 1;
    memcpy(a.bg, bg, 3 * sizeof *bg);
    a.beta1 = 0.9f, a.beta2 = 0.999f, a.eps = 1e-15f;
    /* a rate per group (SH DC and rest apart), so that an update taking another group's rate fails */
    a.lr.means = 1e-4f, a.lr.log_scales = 2e-4f, a.lr.quats = 3e-4f, a.lr.opacity = 4e-4f;
    a.lr.sh_dc = 5e-4f, a.lr.sh_rest = 6e-5f;
    assert_int_equal(b->ops->train_step(b, &a), 0);
    double lg = 0.0;
    int steps = 0;
    b->ops->params_finite(b); /* every step finished: take_loss counts it (backend.h) */
    assert_int_equal(b->ops->take_loss(b, &lg, &steps), 0);
    assert_int_equal(steps, 1);
    double ev = fabs(lg - lc) / fmax(fabs(lc), 1e-12);
    if (isnan(ev)) ev = INFINITY;
    char line[160];
    snprintf(line, sizeof line, "train_step loss%s", what);
    int ok = pt_report(ev <= 1e-5, c->label, stage, line, "rel err", ev, 1e-5);
    sp_gaussians gp, gm, gv;
    memset(&gp, 0, sizeof gp), memset(&gm, 0, sizeof gm), memset(&gv, 0, sizeof gv);
    assert_int_equal(b->ops->get_gaussians(b, &gp, &gm, &gv), 0);
    assert_int_equal(gm.n, n);
    {
        /* step 1: m^ = m / (1 - beta1) = g, v^ = v / (1 - beta2) = g^2 */
        const float *pb[5] = {g.means, g.log_scales, g.quats, g.opacity_logits, g.sh},
                    *pa[5] = {gp.means, gp.log_scales, gp.quats, gp.opacity_logits, gp.sh},
                    *mm[5] = {gm.means, gm.log_scales, gm.quats, gm.opacity_logits, gm.sh},
                    *vv[5] = {gv.means, gv.log_scales, gv.quats, gv.opacity_logits, gv.sh};
        size_t cnt[5] = {3 * (size_t)n, 3 * (size_t)n, 4 * (size_t)n, (size_t)n, 3 * (size_t)s->K * n};
        const float lr[5] = {a.lr.means, a.lr.log_scales, a.lr.quats, a.lr.opacity, a.lr.sh_dc};
        double emv = 0.0, eu = 0.0;
        for (int k = 0; k < 5; k++)
            for (size_t i = 0; i < cnt[k]; i++) {
                double mh = mm[k][i] / (1.0 - a.beta1), vh = vv[k][i] / (1.0 - a.beta2);
                emv = fmax(emv, fabs(vh - mh * mh) / fmax(mh * mh, 1e-30));
                double rate = k == 4 && i % (3 * (size_t)s->K) >= 3 ? a.lr.sh_rest : lr[k];
                double u = rate * mh / (sqrt(vh) + a.eps), d = (double)pb[k][i] - pa[k][i];
                double tol = 1e-5 * fabs(u) + fabs((double)pb[k][i]) * FLT_EPSILON;
                if (!(fabs(d - u) <= tol)) eu = fmax(eu, isnan(d - u) ? INFINITY : fabs(d - u) / fmax(tol, 1e-30));
            }
        snprintf(line, sizeof line, "train_step second moment%s", what);
        ok &= pt_report(emv <= 1e-5, c->label, stage, line, "rel err of v against m^2", emv, 1e-5);
        snprintf(line, sizeof line, "train_step update%s", what);
        ok &= pt_report(eu == 0.0, c->label, stage, line, "worst error over its tolerance", eu, 0);
    }
    struct {
        const char *name;
        float *m, *c;
        size_t cnt;
    } grp[] = {{"means", gm.means, cg.means, 3 * (size_t)n},
               {"log_scales", gm.log_scales, cg.log_scales, 3 * (size_t)n},
               {"quats", gm.quats, cg.quats, 4 * (size_t)n},
               {"opacity_logits", gm.opacity_logits, cg.opacity_logits, (size_t)n},
               {"sh", gm.sh, cg.sh, 3 * (size_t)s->K * n}};
    for (int k = 0; k < 5; k++) {
        for (size_t i = 0; i < grp[k].cnt; i++) grp[k].m[i] /= (1.0f - a.beta1);
        snprintf(line, sizeof line, "train_step gradient %s%s", grp[k].name, what);
        double eg = pt_rel_l2(grp[k].m, grp[k].c, grp[k].cnt);
        ok &= pt_report(eg < 1e-3, c->label, stage, line, "rel L2 err", eg, 1e-3);
    }
    if (gp_out) *gp_out = gp;
    else sp_gaussians_free(&gp);
    if (cg_out) *cg_out = cg;
    else sp_gaussians_free(&cg);
    sp_gaussians_free(&g), sp_gaussians_free(&gm), sp_gaussians_free(&gv);
    sp_proj_grad_free(&pg);
    free(target), free(dl);
    return ok;
}

/* Render vs the CPU forward, and one train_step on a straight-alpha RGBA view (train_step_vs_cpu). */
static int step_render_and_gradients(const tcase *c, sp_backend *b) {
    const char *stage = "step";
    sp_rng r = pt_rng(900);
    pt_scene s;
    int deg = 2;
    pt_scene_make(&s, &r, 2500, 141, 105, deg);
    int w = s.cam.width, h = s.cam.height, n = s.n;
    size_t np = (size_t)w * h;
    sp_gaussians g;
    pt_scene_store(&s, &g);
    assert_int_equal(b->ops->set_gaussians(b, &g, NULL, NULL), 0);
    float bg[3] = {sp_rng_uniform(&r), sp_rng_uniform(&r), sp_rng_uniform(&r)};
    sp_proj proj;
    sp_proj_alloc(&proj, n);
    cpu_project_aa(&s.p, &s.cam, deg, c->cfg.antialias, &proj);
    sp_bins bins = {0};
    cpu_bin(&proj, n, &s.cam, &bins);
    sp_raster_out fwd;
    sp_raster_out_alloc(&fwd, w, h);
    cpu_rasterize(&proj, &bins, &s.cam, bg, &fwd);
    float *img = sp_malloc(np * 3 * 4);
    assert_int_equal(b->ops->render(b, &s.cam, deg, bg, img), 0);
    double e = 0.0;
    int flips = 0;
    for (size_t i = 0; i < np; i++) {
        double d = 0.0;
        for (int k = 0; k < 3; k++) d = fmax(d, fabs((double)img[3 * i + k] - fwd.rgb[3 * i + k]));
        if (!(d <= 1e-4)) flips++;
        else e = fmax(e, d);
    }
    printf("INFO %s render: %d of %zu pixels differ by a threshold flip\n", c->label, flips, np);
    int ok = pt_report(e <= 1e-4 && flips <= (int)(np / 1000), c->label, stage, "render vs CPU forward", "max abs err",
                       e, 1e-4);
    ok &= pt_report(pt_nonfinite(img, np * 3) == 0, c->label, stage, "render", "non-finite outputs",
                    (double)pt_nonfinite(img, np * 3), 0);
    /* a training view: RGBA, straight alpha */
    sp_view v;
    memset(&v, 0, sizeof v);
    v.name = "parity_view";
    v.cam = s.cam;
    v.channels = 4;
    v.pixels = sp_malloc(np * 4);
    for (size_t i = 0; i < np * 4; i++) v.pixels[i] = (uint8_t)(sp_rng_u32(&r) & 255);
    sp_gaussians gp, cg;
    ok &= train_step_vs_cpu(c, b, &s, &proj, &bins, &fwd, bg, &v, SP_ALPHA_STRAIGHT, 0.2f, "", &gp, &cg);
    ok &= pt_report(pt_store_nonfinite(&gp) == 0 && b->ops->params_finite(b) == 1, c->label, stage,
                    "parameters after train_step", "non-finite values", (double)pt_store_nonfinite(&gp), 0);
    /* params_finite sees one Inf or NaN in any of the five regions (the last Gaussian's) */
    struct {
        const char *name;
        float *c;
        size_t cnt;
    } grp[] = {{"means", cg.means, 3 * (size_t)n},
               {"log_scales", cg.log_scales, 3 * (size_t)n},
               {"quats", cg.quats, 4 * (size_t)n},
               {"opacity_logits", cg.opacity_logits, (size_t)n},
               {"sh", cg.sh, 3 * (size_t)s.K * n}};
    for (int k = 0; k < 5; k++) {
        float *at = grp[k].c + grp[k].cnt - 1, keep = *at;
        *at = k % 2 ? INFINITY : NAN;
        int fin = b->ops->set_gaussians(b, &cg, NULL, NULL) == 0 ? b->ops->params_finite(b) : -1;
        *at = keep;
        char what[64];
        snprintf(what, sizeof what, "params_finite with a non-finite %s", grp[k].name);
        ok &= pt_report(fin == 0, c->label, stage, what, "answer (0 = not finite)", fin, 0);
    }
    sp_gaussians_free(&g), sp_gaussians_free(&cg), sp_gaussians_free(&gp);
    sp_bins_free(&bins);
    sp_raster_out_free(&fwd);
    sp_proj_free(&proj);
    free(img), free(v.pixels);
    pt_scene_free(&s);
    return ok;
}

/* The loss inside train_step, where the backend composites the target itself, over image shapes
 * at the borders of its tiling (one pixel, sizes under, at and past multiples of 16 and 32, one
 * row, one column), each alpha convention (straight and premultiplied RGBA, RGB) and SSIM weights
 * 0, 0.2 and 1 (train_step_vs_cpu). */
static int step_loss_shapes(const tcase *c, sp_backend *b) {
    static const struct {
        int w, h, channels;
        sp_alpha_mode alpha;
        float lambda;
    } k_shapes[] = {
        {1, 1, 4, SP_ALPHA_STRAIGHT, 0.2f},      {5, 7, 4, SP_ALPHA_PREMULTIPLIED, 1.0f},
        {33, 17, 3, SP_ALPHA_STRAIGHT, 0.0f},    {64, 32, 4, SP_ALPHA_PREMULTIPLIED, 0.2f},
        {70, 45, 4, SP_ALPHA_STRAIGHT, 1.0f},    {97, 1, 3, SP_ALPHA_STRAIGHT, 0.2f},
        {1, 40, 4, SP_ALPHA_PREMULTIPLIED, 0.0f}, {48, 65, 4, SP_ALPHA_STRAIGHT, 0.2f},
    };
    sp_rng r = pt_rng(950);
    int ok = 1;
    for (size_t i = 0; i < sizeof k_shapes / sizeof *k_shapes; i++) {
        int w = k_shapes[i].w, h = k_shapes[i].h, deg = 1;
        size_t np = (size_t)w * h;
        pt_scene s;
        pt_scene_make(&s, &r, 200, w, h, deg);
        float bg[3] = {sp_rng_uniform(&r), sp_rng_uniform(&r), sp_rng_uniform(&r)};
        sp_proj proj;
        sp_proj_alloc(&proj, s.n);
        cpu_project_aa(&s.p, &s.cam, deg, c->cfg.antialias, &proj);
        sp_bins bins = {0};
        cpu_bin(&proj, s.n, &s.cam, &bins);
        sp_raster_out fwd;
        sp_raster_out_alloc(&fwd, w, h);
        cpu_rasterize(&proj, &bins, &s.cam, bg, &fwd);
        sp_view v;
        memset(&v, 0, sizeof v);
        v.name = "parity_view";
        v.cam = s.cam;
        v.channels = k_shapes[i].channels;
        v.pixels = sp_malloc(np * 4);
        for (size_t j = 0; j < np * (size_t)v.channels; j++) v.pixels[j] = (uint8_t)(sp_rng_u32(&r) & 255);
        char what[96];
        snprintf(what, sizeof what, " %dx%d %s, ssim_weight %g", w, h,
                 v.channels == 3 ? "RGB" : k_shapes[i].alpha == SP_ALPHA_PREMULTIPLIED ? "premultiplied" : "straight",
                 (double)k_shapes[i].lambda);
        ok &= train_step_vs_cpu(c, b, &s, &proj, &bins, &fwd, bg, &v, k_shapes[i].alpha, k_shapes[i].lambda, what,
                                NULL, NULL);
        sp_bins_free(&bins);
        sp_raster_out_free(&fwd);
        sp_proj_free(&proj);
        free(v.pixels);
        pt_scene_free(&s);
    }
    return ok;
}

static sp_refine_args refine_none(void) {
    sp_refine_args a;
    memset(&a, 0, sizeof a);
    a.split_count = 2;
    a.split_shrink = 1.6f;
    a.seed = 11;
    return a;
}

/* refine through the ops: prune keeps survivors in order, reset caps opacity, clone appends exact
 * copies, split draws children from (seed, index), the capacity cap holds. */
static int step_refine_ops(const tcase *c, sp_backend *b) {
    const char *stage = "refine(ops)";
    sp_rng r = pt_rng(910);
    sp_gaussians g, out, out2;
    pt_random_gaussians(&g, &r, 1000, 2, 1.0f);
    memset(&out, 0, sizeof out), memset(&out2, 0, sizeof out2);
    assert_int_equal(b->ops->set_gaussians(b, &g, NULL, NULL), 0);
    sp_refine_args a = refine_none();
    a.prune_opacity = 0.5f;
    a.prune_world_scale = 0.1f;
    sp_refine_result res;
    assert_int_equal(b->ops->refine(b, &a, &res), 0);
    assert_int_equal(b->ops->get_gaussians(b, &out, NULL, NULL), 0);
    int good = 1, j = 0;
    for (int i = 0; i < g.n; i++) {
        float sig = sp_sigmoidf(g.opacity_logits[i]);
        float ms = fmaxf(expf(g.log_scales[3 * i]), fmaxf(expf(g.log_scales[3 * i + 1]), expf(g.log_scales[3 * i + 2])));
        if (sig < 0.5f || ms > 0.1f) continue;
        if (j >= out.n || memcmp(out.means + 3 * j, g.means + 3 * i, 12) ||
            out.opacity_logits[j] != g.opacity_logits[i] || memcmp(out.sh + 3 * out.K * j, g.sh + 3 * g.K * i, 12 * g.K))
            good = 0;
        j++;
    }
    char what[160];
    snprintf(what, sizeof what, "prune keeps survivors in order: %d -> %d (expected %d), pruned %d", g.n, out.n, j,
             res.pruned);
    int mism = !(good && j == out.n && res.n_after == out.n && res.pruned == g.n - j && res.n_before == g.n);
    int ok = pt_report(!mism, c->label, stage, what, "mismatch (1=yes)", mism, 0);
    /* reset: sigma = min(sigma, 0.6) */
    a = refine_none();
    a.opacity_reset = 0.6f;
    assert_int_equal(b->ops->refine(b, &a, &res), 0);
    assert_int_equal(b->ops->get_gaussians(b, &out2, NULL, NULL), 0);
    double worst = out2.n == out.n ? 0.0 : INFINITY;
    for (int i = 0; i < out2.n && out2.n == out.n; i++) {
        double want = fmin(sp_sigmoidf(out.opacity_logits[i]), 0.6);
        double d = fabs(sp_sigmoidf(out2.opacity_logits[i]) - want);
        if (!(d <= worst)) worst = isnan(d) ? INFINITY : d;
    }
    ok &= pt_report(worst <= 1e-6, c->label, stage, "opacity reset", "max |sigma - min(sigma, 0.6)|", worst, 1e-6);
    sp_gaussians_free(&g);
    /* clone, split, clone under a cap: threshold 0 makes every Gaussian a candidate */
    pt_random_gaussians(&g, &r, 500, 1, 1.0f);
    for (int i = 0; i < g.n; i++) g.opacity_logits[i] = 2.0f; /* nobody pruned */
    for (int mode = 0; mode < 3; mode++) {
        assert_int_equal(b->ops->set_gaussians(b, &g, NULL, NULL), 0);
        a = refine_none();
        a.densify = 1;
        a.grad_threshold = 0.0f;
        a.clone_max_scale = mode == 1 ? 0.0f : 1e9f;
        a.capacity = mode == 2 ? g.n + 37 : 10 * g.n;
        assert_int_equal(b->ops->refine(b, &a, &res), 0);
        assert_int_equal(b->ops->get_gaussians(b, &out, NULL, NULL), 0);
        if (mode == 0) {
            int same = out.n == 2 * g.n && res.cloned == g.n;
            for (int i = 0; same && i < g.n; i++)
                same = !memcmp(out.means + 3 * i, g.means + 3 * i, 12) &&
                       !memcmp(out.means + 3 * (g.n + i), g.means + 3 * i, 12) &&
                       !memcmp(out.quats + 4 * (g.n + i), g.quats + 4 * i, 16);
            snprintf(what, sizeof what, "clone: originals then exact copies, %d -> %d, cloned %d", g.n, out.n,
                     res.cloned);
            ok &= pt_report(same, c->label, stage, what, "as expected (1=yes)", same, 1);
        } else if (mode == 1) {
            double worst_mean = 0.0, worst_scale = 0.0;
            int same = out.n == 2 * g.n && res.split == g.n;
            for (int i = 0; same && i < g.n; i++) {
                sp_rng sr;
                sp_rng_seed(&sr, a.seed, (uint64_t)i);
                float R[9], q[4];
                const float *q0 = g.quats + 4 * i;
                float ql = sqrtf(q0[0] * q0[0] + q0[1] * q0[1] + q0[2] * q0[2] + q0[3] * q0[3]);
                for (int k = 0; k < 4; k++) q[k] = q0[k] / ql;
                pt_mat_from_quat(q, R);
                for (int ch = 0; ch < 2; ch++) {
                    int d = 2 * i + ch;
                    float e3[3];
                    for (int k = 0; k < 3; k++) e3[k] = sp_rng_normal(&sr) * expf(g.log_scales[3 * i + k]);
                    for (int k = 0; k < 3; k++) {
                        float want = g.means[3 * i + k] + R[3 * k] * e3[0] + R[3 * k + 1] * e3[1] + R[3 * k + 2] * e3[2];
                        worst_mean = fmax(worst_mean, fabs(out.means[3 * d + k] - want));
                        worst_scale = fmax(worst_scale,
                                           fabs(out.log_scales[3 * d + k] - (g.log_scales[3 * i + k] - logf(1.6f))));
                    }
                }
            }
            snprintf(what, sizeof what, "split: children from (seed, index), %d -> %d, split %d, log-scale err %.3g",
                     g.n, out.n, res.split, worst_scale);
            ok &= pt_report(same && worst_mean <= 1e-5 && worst_scale <= 1e-6, c->label, stage, what,
                            "max mean err", same ? worst_mean : INFINITY, 1e-5);
        } else {
            snprintf(what, sizeof what, "capacity %d: %d -> %d, cloned %d", a.capacity, g.n, out.n, res.cloned);
            int same = out.n == a.capacity && res.cloned == 37;
            ok &= pt_report(same, c->label, stage, what, "as expected (1=yes)", same, 1);
        }
    }
    sp_gaussians_free(&g), sp_gaussians_free(&out), sp_gaussians_free(&out2);
    return ok;
}

#define NVIEWS 4
/* Ground-truth Gaussians rendered by the CPU reference into 8-bit RGB views. */
static void make_views(sp_view *views, const sp_gaussians *gt, int w, int h) {
    sp_backend_config cfg;
    memset(&cfg, 0, sizeof cfg);
    sp_backend *ref = sp_backend_create("cpu", &cfg);
    assert_non_null(ref);
    assert_int_equal(ref->ops->set_gaussians(ref, gt, NULL, NULL), 0);
    float *rgb = sp_malloc((size_t)w * h * 3 * 4);
    float bg[3] = {1.0f, 1.0f, 1.0f};
    for (int v = 0; v < NVIEWS; v++) {
        sp_view *vw = &views[v];
        memset(vw, 0, sizeof *vw);
        vw->name = sp_strfmt("synthetic_%d", v);
        pt_look_at(&vw->cam, w, h, 1.57f * v + 0.3f, 0.35f, 4.0f);
        vw->channels = 3;
        vw->pixels = sp_malloc((size_t)w * h * 3);
        assert_int_equal(ref->ops->render(ref, &vw->cam, gt->sh_degree, bg, rgb), 0);
        for (size_t i = 0; i < (size_t)w * h * 3; i++) {
            float x = rgb[i] < 0.0f ? 0.0f : (rgb[i] > 1.0f ? 1.0f : rgb[i]);
            vw->pixels[i] = (uint8_t)(x * 255.0f + 0.5f);
        }
    }
    free(rgb);
    ref->ops->destroy(ref);
}

static void free_views(sp_view *views) {
    for (int v = 0; v < NVIEWS; v++) free(views[v].name), free(views[v].pixels);
}

static sp_step_args step_args(int step, int view) {
    sp_step_args a;
    memset(&a, 0, sizeof a);
    a.view = view;
    a.sh_degree = 1;
    a.bg[0] = a.bg[1] = a.bg[2] = 1.0f;
    a.ssim_weight = 0.2f;
    a.adam_step = step;
    a.beta1 = 0.9f, a.beta2 = 0.999f, a.eps = 1e-15f;
    /* faster than the training recipe, so a short test run moves visibly */
    a.lr.means = 0.004f, a.lr.log_scales = 0.01f, a.lr.quats = 0.002f, a.lr.opacity = 0.05f;
    a.lr.sh_dc = 0.01f, a.lr.sh_rest = 0.0005f;
    a.collect_stats = 1;
    return a;
}

/* A profiling row is named from backend.h's list of stages: one stage, or consecutive stages joined
 * by '+' (the cpu backend's "emit_pairs+sort+tile_ranges"). */
static int row_named_by_stages(const char *name) {
    for (int next = -1;;) {
        size_t len = strcspn(name, "+");
        int s = 0;
        while (s < SP_STAGE_COUNT && !(strlen(sp_stage_name(s)) == len && !strncmp(sp_stage_name(s), name, len))) s++;
        if (s == SP_STAGE_COUNT || (next >= 0 && s != next)) return 0;
        if (!name[len]) return 1;
        next = s + 1;
        name += len + 1;
    }
}

/* 200 steps on a synthetic scene: the loss falls, the parameters stay finite, the profile rows add
 * up to busy time and are named by stages; a bad view index is an error, not a crash. */
static int step_train_and_profile(const tcase *c, sp_backend *unused) {
    const char *stage = "training";
    sp_rng r = pt_rng(920);
    sp_gaussians gt, init;
    pt_random_gaussians(&gt, &r, 400, 1, 0.8f);
    pt_random_gaussians(&init, &r, 400, 1, 0.8f);
    sp_view views[NVIEWS];
    make_views(views, &gt, 96, 80);
    sp_backend *b = make_backend(c, 1);
    assert_int_equal(b->ops->upload_views(b, views, NVIEWS, SP_ALPHA_STRAIGHT), 0);
    assert_int_equal(b->ops->set_gaussians(b, &init, NULL, NULL), 0);
    double first = 0.0, last = 0.0;
    int steps = 0, total = 200, counted = 0, ok = 1;
    for (int s = 1; s <= total; s++) {
        sp_step_args a = step_args(s, s % NVIEWS);
        assert_int_equal(b->ops->train_step(b, &a), 0);
        if (s == 20) { /* a backend may leave its newest steps, still running, to a later call */
            assert_int_equal(b->ops->take_loss(b, &first, &steps), 0);
            assert_true(steps >= 1 && steps <= 20);
            counted += steps;
        }
    }
    b->ops->params_finite(b); /* every step finished: the last take_loss counts the rest */
    assert_int_equal(b->ops->take_loss(b, &last, &steps), 0);
    counted += steps;
    ok &= pt_report(counted == total, c->label, stage, "steps counted by take_loss", "steps", counted, total);
    char what[200];
    snprintf(what, sizeof what, "loss falls: steps 1-20 %.5f, 21-%d %.5f", first, total, last);
    double ratio = isfinite(first) && isfinite(last) && first > 0 ? last / first : INFINITY;
    ok &= pt_report(ratio < 0.9, c->label, stage, what, "ratio", ratio, 0.9);
    ok &= pt_report(b->ops->params_finite(b) == 1, c->label, stage, "parameters after 200 steps",
                    "non-finite (1=yes)", b->ops->params_finite(b) != 1, 0);
    sp_profile p;
    assert_int_equal(b->ops->get_profile(b, &p), 0);
    double sum = 0.0;
    int all_positive = 1, named = 1;
    for (int i = 0; i < p.num_stages; i++) {
        printf("INFO %s profile %-28s %9.3f ms\n", c->label, p.name[i], p.ms[i]);
        sum += p.ms[i];
        if (strcmp(p.name[i], sp_stage_name(SP_STAGE_REFINE)) && !(p.ms[i] > 0.0)) all_positive = 0;
        if (!row_named_by_stages(p.name[i])) named = 0;
    }
    snprintf(what, sizeof what,
             "profile: rows %.4f ms, busy %.4f ms, calls %ld, peak %lld bytes, rows > 0: %d, rows named by stages: %d",
             sum, p.busy_ms, p.calls, (long long)p.peak_bytes, all_positive, named);
    int good = p.calls == total && all_positive && named && (!c->kind->gpu || p.peak_bytes > 0);
    double gap = fabs(sum - p.busy_ms);
    ok &= pt_report(good && gap <= 1e-9 * fmax(1.0, sum), c->label, stage, what, "|rows - busy| ms",
                    good ? gap : INFINITY, 1e-9 * fmax(1.0, sum));
    sp_step_args bad = step_args(1, NVIEWS + 3);
    int rc = b->ops->train_step(b, &bad);
    int clear = rc == -1 && strstr(sp_last_error(), "out of range") != NULL;
    printf("INFO %s bad view index: %s\n", c->label, rc ? sp_last_error() : "(accepted)");
    ok &= pt_report(clear, c->label, stage, "view index out of range is an error", "reported (1=yes)", clear, 1);
    b->ops->destroy(b);
    free_views(views);
    sp_gaussians_free(&gt), sp_gaussians_free(&init);
    return ok;
}

/* Deterministic mode: two runs of 40 steps, a refine, 20 more steps agree bit for bit. The second
 * renders a view at twice the resolution first, which gives a GPU backend pair buffers the steps
 * fit in; the first starts with buffers too small for them, which the Vulkan backend finds out
 * only after its steps were submitted (it skips them on the device and runs them again,
 * vk_backend.c), so the two runs also check that running skipped steps again changes nothing. */
static int step_deterministic_repeat(const tcase *c, sp_backend *unused) {
    sp_rng r = pt_rng(930);
    sp_gaussians gt, init, out[2];
    pt_random_gaussians(&gt, &r, 300, 1, 0.8f);
    pt_random_gaussians(&init, &r, 600, 1, 0.8f);
    sp_view views[NVIEWS];
    make_views(views, &gt, 80, 64);
    double loss[2];
    memset(out, 0, sizeof out);
    for (int k = 0; k < 2; k++) {
        sp_backend *b = make_backend(c, 0);
        assert_int_equal(b->ops->upload_views(b, views, NVIEWS, SP_ALPHA_STRAIGHT), 0);
        assert_int_equal(b->ops->set_gaussians(b, &init, NULL, NULL), 0);
        if (k == 1) { /* view 0 at twice the resolution: more pairs than any step has */
            sp_camera big = views[0].cam;
            big.width *= 2, big.height *= 2, big.fx *= 2, big.fy *= 2, big.cx *= 2, big.cy *= 2;
            float bg[3] = {1.0f, 1.0f, 1.0f}, *img = sp_malloc((size_t)big.width * big.height * 3 * sizeof(float));
            assert_int_equal(b->ops->render(b, &big, 1, bg, img), 0);
            free(img);
        }
        for (int s = 1; s <= 40; s++) {
            sp_step_args a = step_args(s, s % NVIEWS);
            assert_int_equal(b->ops->train_step(b, &a), 0);
        }
        sp_refine_args ra = {.densify = 1, .grad_threshold = 1e-4f, .clone_max_scale = 0.05f, .split_count = 2,
                              .split_shrink = 1.6f, .prune_opacity = 0.005f, .opacity_decay = 0.01f, .capacity = 2000,
                              .seed = 7};
        sp_refine_result rr;
        assert_int_equal(b->ops->refine(b, &ra, &rr), 0);
        for (int s = 41; s <= 60; s++) {
            sp_step_args a = step_args(s, s % NVIEWS);
            assert_int_equal(b->ops->train_step(b, &a), 0);
        }
        int steps;
        b->ops->params_finite(b); /* every step finished: take_loss counts them all */
        assert_int_equal(b->ops->take_loss(b, &loss[k], &steps), 0);
        assert_int_equal(b->ops->get_gaussians(b, &out[k], NULL, NULL), 0);
        b->ops->destroy(b);
    }
    char what[160];
    snprintf(what, sizeof what, "two runs (the second after a render): %d / %d Gaussians, loss %.9g / %.9g", out[0].n,
             out[1].n, loss[0], loss[1]);
    int same = pt_stores_equal(&out[0], &out[1]) && loss[0] == loss[1];
    int ok = pt_report(same, c->label, "training", what, "bit-identical (1=yes)", same, 1);
    for (int k = 0; k < 2; k++) sp_gaussians_free(&out[k]);
    free_views(views);
    sp_gaussians_free(&gt), sp_gaussians_free(&init);
    return ok;
}

/* A step of its own may fuse project_back with the update (MCMC's regularizer terms, Adam, the
 * position noise: cuda_project_back_update); split_update runs them as the separate kernels the
 * stage checks compare with the CPU. Deterministic runs of 24 steps, each way, from the same
 * parameters and nonzero moments, give the same parameters and moments bit for bit: dense steps,
 * then sparse ones, with the MCMC terms and noise on (a fifth of the Gaussians nearly transparent,
 * so the noise moves them) and, from degree 1 up, a top SH band that the steps do not use (zero
 * gradients: the dense update decays its moments, the sparse one leaves them). A backend that does
 * not fuse compares two identical runs. 501 Gaussians: in the packed layout most parameter groups
 * then start off a 16-byte boundary and the last block's spans end ragged (the fused update moves
 * 16-byte pieces and the elements around them on their own). Every SH degree of the store, 0 to 3:
 * the CUDA kernels are compiled for each coefficient count (CU_SH_K_DISPATCH). */
static int fused_update_degree(const tcase *c, int deg, int moments16) {
    enum { NG = 501 };
    sp_rng r = pt_rng(935 + (uint64_t)deg);
    sp_gaussians gt, init, m0, v0, out[2][3];
    pt_random_gaussians(&gt, &r, 300, 1, 0.8f);
    pt_random_gaussians(&init, &r, NG, deg, 0.8f);
    for (int i = 0; i < init.n; i += 5) init.opacity_logits[i] = -7.0f;
    pt_random_gaussians(&m0, &r, NG, deg, 0.01f);
    pt_random_gaussians(&v0, &r, NG, deg, 0.01f);
    float *vv[5] = {v0.means, v0.log_scales, v0.quats, v0.opacity_logits, v0.sh};
    size_t cnt[5] = {3 * NG, 3 * NG, 4 * NG, NG, 3 * (size_t)v0.K * NG};
    for (int k = 0; k < 5; k++)
        for (size_t j = 0; j < cnt[k]; j++) vv[k][j] = 1e-4f * vv[k][j] * vv[k][j];
    sp_view views[NVIEWS];
    make_views(views, &gt, 72, 56);
    memset(out, 0, sizeof out);
    for (int k = 0; k < 2; k++) {
        tcase dc = *c;
        dc.cfg.deterministic = 1;
        dc.cfg.split_update = k;
        dc.cfg.moments16 = moments16;
        sp_backend *b = make_backend(&dc, 0);
        assert_int_equal(b->ops->upload_views(b, views, NVIEWS, SP_ALPHA_STRAIGHT), 0);
        assert_int_equal(b->ops->set_gaussians(b, &init, &m0, &v0), 0);
        for (int s = 1; s <= 24; s++) {
            sp_step_args a = step_args(s, s % NVIEWS);
            a.sh_degree = deg > 0 ? deg - 1 : 0;
            a.adam_sparse = s > 12;
            if (b->ops->mcmc_apply) a.opacity_reg = 0.01f, a.scale_reg = 0.01f, a.noise_scale = 0.02f;
            a.noise_seed = 77 + (uint64_t)s;
            assert_int_equal(b->ops->train_step(b, &a), 0);
        }
        assert_int_equal(b->ops->get_gaussians(b, &out[k][0], &out[k][1], &out[k][2]), 0);
        b->ops->destroy(b);
    }
    int same = pt_stores_equal(&out[0][0], &out[1][0]), same_m = pt_stores_equal(&out[0][1], &out[1][1]) &&
                                                                 pt_stores_equal(&out[0][2], &out[1][2]);
    if (!same || !same_m) /* where they differ, for the log */
        for (int j = 0; j < 3; j++) {
            const sp_gaussians *x = &out[0][j], *y = &out[1][j];
            const float *gx[5] = {x->means, x->log_scales, x->quats, x->opacity_logits, x->sh},
                        *gy[5] = {y->means, y->log_scales, y->quats, y->opacity_logits, y->sh};
            static const char *names[5] = {"means", "log_scales", "quats", "opacity_logits", "sh"};
            for (int k = 0; k < 5; k++)
                printf("INFO %s fused update (degree %d%s): %s %s max |fused - split| %.3g\n", c->label, deg,
                       moments16 ? ", SH moments packed" : "",
                       j == 0 ? "parameters" : j == 1 ? "m" : "v", names[k], pt_max_abs(gx[k], gy[k], cnt[k]));
        }
    int moved = memcmp(out[0][0].means, init.means, (size_t)init.n * 12) != 0;
    char what[128];
    const char *pk = moments16 ? " (adam.moments16)" : "";
    snprintf(what, sizeof what,
             "24 steps fused vs split_update (dense, sparse, MCMC terms and noise), SH degree %d%s: parameters", deg,
             pk);
    int ok = pt_report(same && moved, c->label, "fused update", what, "bit-identical (1=yes)", same && moved, 1);
    snprintf(what, sizeof what, "24 steps fused vs split_update, SH degree %d%s: Adam moments", deg, pk);
    ok &= pt_report(same_m, c->label, "fused update", what, "bit-identical (1=yes)", same_m, 1);
    for (int k = 0; k < 2; k++)
        for (int j = 0; j < 3; j++) sp_gaussians_free(&out[k][j]);
    free_views(views);
    sp_gaussians_free(&gt), sp_gaussians_free(&init), sp_gaussians_free(&m0), sp_gaussians_free(&v0);
    return ok;
}

static int step_fused_update(const tcase *c, sp_backend *unused) {
    (void)unused;
    int ok = 1;
    for (int deg = 0; deg <= 3; deg++) ok &= fused_update_degree(c, deg, 0);
    /* the packed SH moments (adam.moments16): degree 3, and degree 1 (12 floats a Gaussian) */
    ok &= fused_update_degree(c, 1, 1);
    ok &= fused_update_degree(c, 3, 1);
    return ok;
}

/* Streamed views (stage_view): 30 deterministic steps on views staged into the slots, a view
 * staged ahead while the step before it is in flight, give the parameters of the same steps on
 * uploaded views bit for bit; so do the same steps with one slot per view (stage_slots: the
 * device's image cache), each view staged once into slot NVIEWS - view and read from there by
 * every later step; a slot out of range is an error. */
static int step_staged_views(const tcase *c, sp_backend *unused) {
    sp_rng r = pt_rng(940);
    sp_gaussians gt, init, out[2];
    pt_random_gaussians(&gt, &r, 300, 1, 0.8f);
    pt_random_gaussians(&init, &r, 300, 1, 0.8f);
    sp_view views[NVIEWS];
    make_views(views, &gt, 72, 56);
    memset(out, 0, sizeof out);
    tcase dc = *c;
    dc.cfg.deterministic = 1; /* run for the deterministic variants only; bit-identical needs it */
    int ok = 1;
    { /* the device's image cache: every view in a slot of its own, staged at its first use */
        sp_backend *b = make_backend(&dc, 0);
        assert_int_equal(b->ops->set_gaussians(b, &init, NULL, NULL), 0);
        if (b->ops->stage_slots) {
            assert_int_equal(b->ops->stage_slots(b, NVIEWS + 1, (size_t)72 * 56, 4), 0);
            int staged[NVIEWS] = {0}, stagings = 0;
            for (int s = 1; s <= 30; s++) {
                int v = s % NVIEWS;
                if (!staged[v]) {
                    assert_int_equal(b->ops->stage_view(b, NVIEWS - v, &views[v], SP_ALPHA_STRAIGHT), 0);
                    staged[v] = 1, stagings++;
                }
                sp_step_args a = step_args(s, NVIEWS - v);
                a.staged = 1;
                assert_int_equal(b->ops->train_step(b, &a), 0);
            }
            assert_int_equal(b->ops->get_gaussians(b, &out[1], NULL, NULL), 0);
            assert_int_equal(stagings, NVIEWS);
        }
        b->ops->destroy(b);
    }
    for (int k = 0; k < 2; k++) {
        sp_backend *b = make_backend(&dc, 0);
        if (k == 0) assert_int_equal(b->ops->upload_views(b, views, NVIEWS, SP_ALPHA_STRAIGHT), 0);
        assert_int_equal(b->ops->set_gaussians(b, &init, NULL, NULL), 0);
        if (k == 1) {
            assert_non_null(b->ops->stage_view);
            assert_int_equal(b->ops->stage_view(b, 1 % SP_STAGE_SLOTS, &views[1 % NVIEWS], SP_ALPHA_STRAIGHT), 0);
        }
        for (int s = 1; s <= 30; s++) {
            sp_step_args a = step_args(s, s % NVIEWS);
            if (k == 1) a.view = s % SP_STAGE_SLOTS, a.staged = 1;
            assert_int_equal(b->ops->train_step(b, &a), 0);
            /* the next step's view goes into the other slot while this step may still run */
            if (k == 1 && s < 30)
                assert_int_equal(
                    b->ops->stage_view(b, (s + 1) % SP_STAGE_SLOTS, &views[(s + 1) % NVIEWS], SP_ALPHA_STRAIGHT), 0);
        }
        if (k == 0 && out[1].n) { /* the cache's run (out[1], before it is reused below) */
            assert_int_equal(b->ops->get_gaussians(b, &out[0], NULL, NULL), 0);
            int same_cache = pt_stores_equal(&out[0], &out[1]);
            ok &= pt_report(same_cache, c->label, "staged views",
                            "30 steps with one slot per view (stage_slots) vs uploaded views", "bit-identical (1=yes)",
                            same_cache, 1);
            sp_gaussians_free(&out[1]);
            memset(&out[1], 0, sizeof out[1]);
        }
        assert_int_equal(b->ops->get_gaussians(b, &out[k], NULL, NULL), 0);
        if (k == 1) {
            sp_step_args bad = step_args(31, SP_STAGE_SLOTS);
            bad.staged = 1;
            int rc = b->ops->train_step(b, &bad);
            int clear = rc == -1 && strstr(sp_last_error(), "out of range") != NULL;
            ok &= pt_report(clear, c->label, "staged views", "staging slot out of range is an error",
                            "reported (1=yes)", clear, 1);
        }
        b->ops->destroy(b);
    }
    int same = pt_stores_equal(&out[0], &out[1]);
    ok &= pt_report(same, c->label, "staged views", "30 steps on staged views vs uploaded views",
                    "bit-identical (1=yes)", same, 1);
    for (int k = 0; k < 2; k++) sp_gaussians_free(&out[k]);
    free_views(views);
    sp_gaussians_free(&gt), sp_gaussians_free(&init);
    return ok;
}

/* Pruning by blend weight (train/prune.h) through the ops: the backend's blend weights over two
 * cameras against the CPU reference's (relative L2 < 1e-3; a second call repeats bit for bit: the
 * sums are integers on GPU backends), then a refine with the drop flags of the reference weights
 * gives the CPU reference's cpu_refine store bit for bit, Adam moments included. A backend
 * without the op (the trainer computes the weights on the host) checks the refine only. */
static int step_blend_weights_drop(const tcase *c, sp_backend *b) {
    const char *stage = "prune by blend weight";
    sp_rng r = pt_rng(960);
    pt_scene s;
    pt_scene_make(&s, &r, 2500, 141, 105, 1);
    int n = s.n, ok = 1;
    sp_camera cams[2] = {s.cam, s.cam};
    cams[1].width = 120, cams[1].height = 90; /* a second, smaller view of the same pose */
    sp_gaussians g, m, v, rg = {0}, rm = {0}, rv = {0};
    pt_scene_store(&s, &g);
    pt_random_gaussians(&m, &r, n, 1, 0.5f);
    pt_random_gaussians(&v, &r, n, 1, 0.5f);
    for (int i = 0; i < n; i++) v.opacity_logits[i] = fabsf(v.opacity_logits[i]);
    assert_int_equal(b->ops->set_gaussians(b, &g, &m, &v), 0);
    float *ref = sp_malloc((size_t)n * 4), *got = sp_malloc((size_t)n * 4), *again = sp_malloc((size_t)n * 4);
    assert_int_equal(sp_blend_weights_host(&g, c->cfg.antialias, cams, 2, ref), 0);
    float wmax = 0.0f;
    for (int i = 0; i < n; i++) wmax = fmaxf(wmax, ref[i]);
    /* GPU sums are 64-bit integers in units of 2^-24: a weight above 256 carries past 32 bits */
    ok &= pt_report(wmax > 256.0f, c->label, stage, "largest weight (> 256: 32-bit carries exercised)", "weight",
                    wmax, 256.0);
    if (b->ops->blend_weights) {
        assert_int_equal(b->ops->blend_weights(b, cams, 2, got), 0);
        assert_int_equal(b->ops->blend_weights(b, cams, 2, again), 0);
        double e = pt_rel_l2(got, ref, (size_t)n);
        ok &= pt_report(e < 1e-3, c->label, stage, "blend weights vs CPU", "rel L2", e, 1e-3);
        int same = !memcmp(got, again, (size_t)n * 4);
        ok &= pt_report(same, c->label, stage, "blend weights repeat", "bit-identical (1=yes)", same, 1);
    } else {
        printf("INFO %s: no blend_weights op (the trainer computes them on the host)\n", c->label);
    }
    uint8_t *drop = sp_malloc((size_t)n);
    assert_int_equal(sp_prune_pick(ref, n, n / 3, drop), 0);
    sp_refine_args ra = {0};
    ra.drop = drop;
    ra.capacity = n;
    sp_refine_result res, cres;
    assert_int_equal(b->ops->refine(b, &ra, &res), 0);
    assert_int_equal(b->ops->get_gaussians(b, &rg, &rm, &rv), 0);
    sp_refine_stats st = {0};
    sp_refine_stats_reserve(&st, n);
    sp_refine_stats_reset(&st, n);
    assert_int_equal(cpu_refine(&g, &m, &v, &st, &ra, &cres), 0);
    char what[96];
    snprintf(what, sizeof what, "%d -> %d Gaussians (reference %d)", n, res.n_after, cres.n_after);
    int same = res.n_after == n - n / 3 && cres.n_after == res.n_after && pt_stores_equal(&rg, &g) &&
               pt_stores_equal(&rm, &m) && pt_stores_equal(&rv, &v);
    ok &= pt_report(same, c->label, stage, what, "stores bit-identical (1=yes)", same, 1);
    sp_refine_stats_free(&st);
    free(ref), free(got), free(again), free(drop);
    sp_gaussians_free(&g), sp_gaussians_free(&m), sp_gaussians_free(&v);
    sp_gaussians_free(&rg), sp_gaussians_free(&rm), sp_gaussians_free(&rv);
    pt_scene_free(&s);
    return ok;
}

/* The evaluation's device scores (ops->score) against the host's metrics on the backend's own
 * render: over several image sizes (tile edges, one smaller than the SSIM window) and ground
 * truths (the render blurred and noised, a constant, the render itself), p8 equals the render
 * quantized on the host, the sum of squared differences is exact, SSIM is sp_ssim_u8 within
 * 1e-12, and a second call repeats bit for bit. A backend without the op (the evaluation scores on
 * the host) skips. */
static int step_score(const tcase *c, sp_backend *b) {
    const char *stage = "score";
    if (!b->ops->score) {
        printf("INFO %s: no score op (the evaluation scores on the host)\n", c->label);
        return 1;
    }
    static const int sizes[][2] = {{141, 105}, {64, 16}, {33, 9}, {7, 5}, {800, 600}};
    sp_rng r = pt_rng(975);
    int ok = 1;
    for (int si = 0; si < (int)(sizeof sizes / sizeof *sizes); si++) {
        int w = sizes[si][0], h = sizes[si][1];
        size_t n = (size_t)w * h * 3;
        pt_scene s;
        pt_scene_make(&s, &r, 3000, w, h, 1);
        sp_gaussians g;
        pt_scene_store(&s, &g);
        assert_int_equal(b->ops->set_gaussians(b, &g, NULL, NULL), 0);
        float bg[3] = {sp_rng_uniform(&r), sp_rng_uniform(&r), sp_rng_uniform(&r)};
        float *img = sp_malloc(n * sizeof(float));
        uint8_t *q = sp_malloc(n), *gt = sp_malloc(n), *p8 = sp_malloc(n), *p8b = sp_malloc(n);
        assert_int_equal(b->ops->render(b, &s.cam, 1, bg, img), 0);
        sp_image_quantize(img, w, h, q);
        for (int kind = 0; kind < 3; kind++) {
            for (size_t i = 0; i < n; i++) {
                int v = kind == 1 ? 77 : q[i];
                if (kind == 0) v = (q[i] + (i >= 3 ? q[i - 3] : 0)) / 2 + (int)(sp_rng_uniform(&r) * 21.0f) - 10;
                gt[i] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
            }
            uint64_t sse_ref = 0, sse = 0, sse_b = 0;
            for (size_t i = 0; i < n; i++) sse_ref += (uint64_t)((q[i] - gt[i]) * (q[i] - gt[i]));
            double ssim_ref = sp_ssim_u8(q, gt, w, h), ssim = 0.0, ssim_b = 0.0;
            assert_int_equal(b->ops->score(b, &s.cam, 1, bg, gt, p8, &sse, &ssim), 0);
            assert_int_equal(b->ops->score(b, &s.cam, 1, bg, gt, kind == 2 ? NULL : p8b, &sse_b, &ssim_b), 0);
            char what[96];
            snprintf(what, sizeof what, "%dx%d, ground truth %s: 8-bit render", w, h,
                     kind == 0 ? "blurred+noise" : kind == 1 ? "constant" : "= render");
            int same = !memcmp(p8, q, n);
            ok &= pt_report(same, c->label, stage, what, "identical (1=yes)", same, 1);
            snprintf(what, sizeof what, "%dx%d, kind %d: sum of squared differences", w, h, kind);
            ok &= pt_report(sse == sse_ref, c->label, stage, what, "abs", fabs((double)sse - (double)sse_ref), 0);
            snprintf(what, sizeof what, "%dx%d, kind %d: SSIM %.6f vs host", w, h, kind, ssim_ref);
            double e = fabs(ssim - ssim_ref);
            ok &= pt_report(e <= 1e-12, c->label, stage, what, "abs", e, 1e-12);
            int rep = sse_b == sse && !memcmp(&ssim_b, &ssim, sizeof ssim) && (kind == 2 || !memcmp(p8b, p8, n));
            snprintf(what, sizeof what, "%dx%d, kind %d: repeat", w, h, kind);
            ok &= pt_report(rep, c->label, stage, what, "bit-identical (1=yes)", rep, 1);
        }
        free(img), free(q), free(gt), free(p8), free(p8b);
        sp_gaussians_free(&g);
        pt_scene_free(&s);
    }
    return ok;
}

#endif
