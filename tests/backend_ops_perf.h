/* backend_ops_perf.h — the perf mode of the parity harness (test_backend_ops --perf): for each
 * backend kind with a device (or the one --backend names), a few hundred train_steps on a
 * synthetic scene with profiling on, printed as ms per step per stage (the backend's get_profile
 * rows: device time on GPUs), then each stage's single-call time through the stage table (host
 * arrays in and out, so uploads and read-backs are included). Included once, by
 * test_backend_ops.c; no cmocka here. */
#ifndef SPLAT_BACKEND_OPS_PERF_H
#define SPLAT_BACKEND_OPS_PERF_H

#define PERF_VIEWS 4
#define PERF_W 256
#define PERF_H 256

/* Renders gt with backend b into 8-bit views around the origin. */
static int perf_views(sp_backend *b, const sp_gaussians *gt, sp_view *views) {
    float *rgb = sp_malloc((size_t)PERF_W * PERF_H * 3 * 4);
    float bg[3] = {1.0f, 1.0f, 1.0f};
    if (b->ops->set_gaussians(b, gt, NULL, NULL)) return -1;
    for (int v = 0; v < PERF_VIEWS; v++) {
        sp_view *vw = &views[v];
        memset(vw, 0, sizeof *vw);
        vw->name = sp_strfmt("perf_%d", v);
        pt_look_at(&vw->cam, PERF_W, PERF_H, 1.57f * v + 0.3f, 0.35f, 3.0f);
        vw->channels = 3;
        vw->pixels = sp_malloc((size_t)PERF_W * PERF_H * 3);
        if (b->ops->render(b, &vw->cam, gt->sh_degree, bg, rgb)) {
            free(rgb);
            return -1;
        }
        for (size_t i = 0; i < (size_t)PERF_W * PERF_H * 3; i++) {
            float x = rgb[i] < 0.0f ? 0.0f : (rgb[i] > 1.0f ? 1.0f : rgb[i]);
            vw->pixels[i] = (uint8_t)(x * 255.0f + 0.5f);
        }
    }
    free(rgb);
    return 0;
}

/* Best and mean of `reps` timed calls after one warm-up call; the call returns 0 on success. */
#define PERF_TIME(label, call)                                                                         \
    do {                                                                                               \
        double best_ = INFINITY, sum_ = 0.0;                                                           \
        int bad_ = (call) != 0;                                                                        \
        for (int k_ = 0; k_ < reps && !bad_; k_++) {                                                   \
            double t0_ = sp_now();                                                                     \
            bad_ = (call) != 0;                                                                        \
            double dt_ = 1e3 * (sp_now() - t0_);                                                       \
            best_ = fmin(best_, dt_);                                                                  \
            sum_ += dt_;                                                                               \
        }                                                                                              \
        if (bad_) printf("  %-28s error: %s\n", label, sp_last_error());                               \
        else printf("  %-28s %10.3f ms best %10.3f ms mean\n", label, best_, sum_ / reps);             \
        fflush(stdout);                                                                                \
    } while (0)

static void perf_stages(sp_backend *b, const sp_stage_ops *ops, int n) {
    const int reps = 5;
    sp_rng r = pt_rng(990);
    pt_scene s;
    pt_scene_make(&s, &r, n, PERF_W, PERF_H, 3);
    int w = PERF_W, h = PERF_H, deg = 3;
    size_t N = (size_t)n, np = (size_t)w * h;
    sp_proj proj, out;
    sp_proj_alloc(&proj, n), sp_proj_alloc(&out, n);
    cpu_project(&s.p, &s.cam, deg, &proj);
    sp_bins bins = {0}, bo = {0};
    cpu_bin(&proj, n, &s.cam, &bins);
    sp_raster_out fwd, ro;
    sp_raster_out_alloc(&fwd, w, h), sp_raster_out_alloc(&ro, w, h);
    float bg[3] = {1.0f, 1.0f, 1.0f};
    cpu_rasterize(&proj, &bins, &s.cam, bg, &fwd);
    float *dl = sp_malloc(np * 3 * 4), *target = sp_malloc(np * 3 * 4);
    tu_fill_uniform(&r, dl, np * 3, -1.0f, 1.0f);
    tu_fill_uniform(&r, target, np * 3, 0.0f, 1.0f);
    sp_proj_grad pg;
    sp_proj_grad_alloc(&pg, n);
    float *gbuf;
    sp_params_grad pgr = params_grad_alloc(n, s.K, &gbuf);
    double loss;
    int64_t count = (int64_t)N * (11 + 3 * s.K);
    float *pa = sp_calloc((size_t)count + 1, 4), *ga = sp_calloc((size_t)count + 1, 4);
    float *ma = sp_calloc((size_t)count + 1, 4), *va = sp_calloc((size_t)count + 1, 4);
    tu_fill_uniform(&r, ga, (size_t)count, -1.0f, 1.0f);
    printf("single stages through the stage table (%d Gaussians, %dx%d, %lld pairs; host copies included):\n", n, w,
           h, (long long)bins.num_pairs);
    if (ops->project) PERF_TIME("project", ops->project(b, &s.p, &s.cam, deg, &out));
    if (ops->bin) PERF_TIME("bin (emit+sort+ranges)", ops->bin(b, &proj, n, &s.cam, &bo));
    if (ops->rasterize) PERF_TIME("rasterize", ops->rasterize(b, &proj, n, &bins, &s.cam, bg, &ro));
    if (ops->loss) PERF_TIME("loss", ops->loss(b, fwd.rgb, target, w, h, 0.2f, &loss, dl));
    if (ops->backward_raster)
        PERF_TIME("backward_raster", ops->backward_raster(b, &proj, n, &bins, &s.cam, bg, &fwd, dl, &pg));
    tu_fill_uniform(&r, pg.mean2d, N * 2, -1.0f, 1.0f);
    tu_fill_uniform(&r, pg.conic, N * 3, -1.0f, 1.0f);
    if (ops->project_back) PERF_TIME("project_back", ops->project_back(b, &s.p, &s.cam, deg, &proj, &pg, &pgr));
    if (ops->adam) PERF_TIME("adam", ops->adam(b, pa, ga, ma, va, count, 1e-3f, 0.9f, 0.999f, 1e-15f, 1, 0));
    if (ops->refine) {
        sp_gaussians g, m, v;
        pt_scene_store(&s, &g);
        sp_gaussians_clone(&m, &g), sp_gaussians_clone(&v, &g);
        float *acc = sp_calloc(N + 1, 4), *rad = sp_calloc(N + 1, 4);
        int32_t *cnt = sp_calloc(N + 1, 4);
        sp_refine_args a = {.split_count = 2, .split_shrink = 1.6f, .prune_opacity = 0.005f, .capacity = n, .seed = 1};
        sp_refine_result res;
        /* prune only transparent Gaussians (few): the store keeps its size over the repeats */
        PERF_TIME("refine (prune pass)", ops->refine(b, &g, &m, &v, acc, cnt, rad, &a, &res));
        sp_gaussians_free(&g), sp_gaussians_free(&m), sp_gaussians_free(&v);
        free(acc), free(rad), free(cnt);
    }
    free(pa), free(ga), free(ma), free(va), free(gbuf), free(dl), free(target);
    sp_proj_grad_free(&pg);
    sp_raster_out_free(&fwd), sp_raster_out_free(&ro);
    sp_bins_free(&bins), sp_bins_free(&bo);
    sp_proj_free(&proj), sp_proj_free(&out);
    pt_scene_free(&s);
}

static int perf_kind(const sp_backend_kind *k, int n, int steps) {
    sp_backend_config cfg;
    memset(&cfg, 0, sizeof cfg);
    sp_backend *b = NULL;
    sp_rng r = pt_rng(980);
    sp_gaussians gt, init;
    pt_random_gaussians(&gt, &r, n, 3, 0.8f);
    pt_random_gaussians(&init, &r, n, 3, 0.8f);
    sp_view views[PERF_VIEWS];
    memset(views, 0, sizeof views);
    int rc = 1;
    /* views rendered by a backend of the same kind without profiling, so the rows count training only */
    sp_backend *vb = k->create(&cfg);
    if (!vb) goto out;
    int vrc = perf_views(vb, &gt, views);
    vb->ops->destroy(vb);
    cfg.profile = 1;
    if (vrc || (b = k->create(&cfg)) == NULL) goto out;
    if (b->ops->upload_views(b, views, PERF_VIEWS, SP_ALPHA_STRAIGHT) || b->ops->set_gaussians(b, &init, NULL, NULL))
        goto out;
    printf("perf %s: %d Gaussians (SH degree 3), %dx%d views, %d train_steps, profile on\n", k->name, n, PERF_W,
           PERF_H, steps);
    double t0 = sp_now(), loss = 0.0;
    int taken = 0;
    for (int s = 1; s <= steps; s++) {
        sp_step_args a;
        memset(&a, 0, sizeof a);
        a.view = s % PERF_VIEWS, a.sh_degree = 3, a.ssim_weight = 0.2f, a.adam_step = s;
        a.bg[0] = a.bg[1] = a.bg[2] = 1.0f;
        a.beta1 = 0.9f, a.beta2 = 0.999f, a.eps = 1e-15f;
        a.lr.means = 1.6e-4f, a.lr.log_scales = 5e-3f, a.lr.quats = 1e-3f, a.lr.opacity = 0.05f;
        a.lr.sh_dc = 2.5e-3f, a.lr.sh_rest = 1.25e-4f;
        a.collect_stats = 1;
        if (b->ops->train_step(b, &a)) goto out;
    }
    b->ops->params_finite(b); /* every step finished (take_loss counts them all) */
    if (b->ops->take_loss(b, &loss, &taken)) goto out;
    double wall = 1e3 * (sp_now() - t0);
    sp_profile p;
    if (b->ops->get_profile(b, &p)) goto out;
    long calls = p.calls > 0 ? p.calls : 1;
    printf("  %-28s %10s %8s\n", "stage", "ms/step", "share");
    for (int i = 0; i < p.num_stages; i++)
        printf("  %-28s %10.4f %7.1f %%\n", p.name[i], p.ms[i] / calls, p.busy_ms > 0 ? 100.0 * p.ms[i] / p.busy_ms : 0.0);
    printf("  %-28s %10.4f\n", "busy", p.busy_ms / calls);
    printf("  %-28s %10.4f   (host clock; mean loss %.5f, peak memory %.1f MB)\n", "wall", wall / steps, loss,
           p.peak_bytes / 1e6);
    if (b->ops->stages) perf_stages(b, b->ops->stages, n);
    else printf("  (no stage table)\n");
    rc = 0;
out:
    if (rc) printf("perf %s: %s\n", k->name, sp_last_error());
    if (b) b->ops->destroy(b);
    for (int v = 0; v < PERF_VIEWS; v++) free(views[v].name), free(views[v].pixels);
    sp_gaussians_free(&gt), sp_gaussians_free(&init);
    return rc;
}

static int perf_main(const char *only, int size, int steps) {
    const char *e = getenv("SPLAT_TEST_SEED");
    pt_seed = (e && *e) ? strtoull(e, NULL, 10) : 1;
    int n = size > 0 ? size : 20000, s = steps > 0 ? steps : 300, nk, rc = 0;
    const sp_backend_kind *const *kinds = sp_backend_kinds(&nk);
    for (int k = 0; k < nk; k++) {
        if (only && strcmp(only, kinds[k]->name)) continue;
        if (!kinds[k]->available()) {
            printf("perf %s: no device: skipped\n", kinds[k]->name);
            continue;
        }
        rc |= perf_kind(kinds[k], n, s);
    }
    return rc;
}

#endif
