/* test_grad_stages.c — finite-difference gradient checks of the differentiable stages.
 *
 * For each stage the double-precision instance of stage_math.h gives an analytic gradient that is
 * checked against central differences (step 1e-6, in double), and the float stages of the CPU
 * backend are checked against that analytic double gradient. Steps whose two sides change a discrete
 * decision (tile rect, colour clamp, a rasterizer skip/clamp/stop) are not used; at most a few per
 * group may be dropped.
 *
 * Tolerances (scale = largest |gradient| of the group):
 *   finite difference vs double analytic: |fd - an| <= 1e-6 scale + 1e-5 |an|
 *   float stages vs double analytic:      |f - d|  <= 2e-3 scale + 2e-3 |d|    (per stage)
 *                                          |f - d|  <= 5e-3 scale + 5e-3 |d|    (end to end) */
#include "testutil.h"

#include "stagetest.h"

#define FD_H 1e-6
#define FD_ATOL 1e-6
#define FD_RTOL 1e-5

/* Checks one analytic gradient entry against a finite difference; returns 0 if skipped. */
typedef double (*st_loss_fn)(void *ctx, uint64_t *sig);

static int fd_check(const char *what, int k, double *x, double an, double scale, st_loss_fn fn, void *ctx,
                    uint64_t sig0) {
    double x0 = *x;
    uint64_t sp, sm;
    *x = x0 + FD_H;
    double Lp = fn(ctx, &sp);
    *x = x0 - FD_H;
    double Lm = fn(ctx, &sm);
    *x = x0;
    if (sp != sig0 || sm != sig0) return 0;
    double fd = (Lp - Lm) / (2 * FD_H);
    if (!(fabs(fd - an) <= FD_ATOL * scale + FD_RTOL * fabs(an)))
        fail_msg("%s[%d]: finite difference %.10g vs analytic %.10g (scale %.3g)", what, k, fd, an, scale);
    return 1;
}

static double max_abs(const double *v, int n) {
    double m = 0;
    for (int i = 0; i < n; i++) m = fmax(m, fabs(v[i]));
    return m;
}

/* ---- spherical harmonics ---- */

typedef struct {
    int degree;
    double sh[48], d[3], w[3];
} sh_ctx;

static double sh_loss(void *vc, uint64_t *sig) {
    sh_ctx *c = vc;
    double out[3];
    sp_m_sh_eval_d(c->degree, c->sh, c->d, out);
    *sig = 0;
    return c->w[0] * out[0] + c->w[1] * out[1] + c->w[2] * out[2];
}

static void test_sh_gradients(void **state) {
    (void)state;
    sp_rng r;
    sp_rng_seed(&r, 11, 0);
    for (int degree = 0; degree <= 3; degree++) {
        sh_ctx c = {.degree = degree};
        float shf[48], df[3], wf[3];
        tu_fill_uniform(&r, shf, 48, -1, 1);
        tu_fill_uniform(&r, df, 3, -1, 1);
        tu_fill_uniform(&r, wf, 3, -1, 1);
        for (int i = 0; i < 48; i++) c.sh[i] = shf[i];
        for (int i = 0; i < 3; i++) c.d[i] = df[i], c.w[i] = wf[i];
        double dsh[48] = {0}, dd[3] = {0};
        sp_m_sh_eval_back_d(degree, c.sh, c.d, c.w, dsh, dd);
        int K = sp_sh_coeffs(degree);
        for (int i = K * 3; i < 48; i++) assert_true(dsh[i] == 0); /* unused coefficients untouched */
        double scale = fmax(max_abs(dsh, 48), max_abs(dd, 3));
        for (int i = 0; i < K * 3; i++) fd_check("dsh", i, &c.sh[i], dsh[i], scale, sh_loss, &c, 0);
        for (int i = 0; i < 3; i++) fd_check("ddir", i, &c.d[i], dd[i], scale, sh_loss, &c, 0);
        /* float entry points agree with the double instance */
        float outf[3], dshf[48] = {0}, ddf[3] = {0};
        double outd[3];
        sp_sh_eval(degree, shf, df, outf);
        sp_m_sh_eval_d(degree, c.sh, c.d, outd);
        st_assert_close("sh out", outf, outd, 3, 1e-6, 1e-6);
        sp_sh_eval_back(degree, shf, df, wf, dshf, ddf);
        st_assert_close("dsh", dshf, dsh, 48, 1e-6, 1e-6);
        st_assert_close("ddir", ddf, dd, 3, 1e-6, 1e-6);
    }
    /* degree 0 by hand: C0 * sh */
    float sh0[3] = {1, -2, 0.5f}, dir[3] = {0, 0, 1}, out[3];
    sp_sh_eval(0, sh0, dir, out);
    assert_float_equal(out[0], 0.28209479177387814, 1e-7);
    assert_float_equal(out[1], -2 * 0.28209479177387814, 1e-7);
}

/* ---- project_back ---- */

typedef struct {
    st_scene *s;
    double *up; /* [n][9] upstream gradients: mean2d 2, conic 3, opacity 1, color 3 */
} proj_ctx;

static double proj_loss(void *vc, uint64_t *sig) {
    proj_ctx *c = vc;
    st_scene *s = c->s;
    sp_mcam_d mc;
    sp_mcam_init_d(&mc, &s->cam);
    double L = 0;
    uint64_t h = 1;
    for (int i = 0; i < s->n; i++) {
        sp_mproj_d o;
        int vis = sp_m_project_d(&mc, s->dmeans + 3 * i, s->dlog_scales + 3 * i, s->dquats + 4 * i, s->dlogits[i],
                                 s->dsh + (size_t)i * s->K * 3, s->degree, s->antialias, &o);
        h = h * 31 + (uint64_t)vis * 7 + o.clamped[0] * 2 + o.clamped[1] * 3 + o.clamped[2] * 5;
        const double *u = c->up + 9 * i;
        L += u[0] * o.mean2d[0] + u[1] * o.mean2d[1] + u[2] * o.conic[0] + u[3] * o.conic[1] + u[4] * o.conic[2] +
             u[5] * o.opacity + u[6] * o.color[0] + u[7] * o.color[1] + u[8] * o.color[2];
    }
    *sig = h;
    return L;
}

/* Checks project_back of scene s (double FD, then float vs double). */
static void check_project_back(st_scene *s, uint64_t seed) {
    int n = s->n, K = s->K;
    sp_rng r;
    sp_rng_seed(&r, seed, 3);
    proj_ctx c = {s, SP_NEW(double, 9 * n)};
    for (int i = 0; i < 9 * n; i++) c.up[i] = 2 * sp_rng_uniform(&r) - 1;
    /* scale the conic gradients so every group matters comparably */
    for (int i = 0; i < n; i++)
        for (int k = 2; k < 5; k++) c.up[9 * i + k] *= 20;

    /* double analytic */
    sp_mcam_d mc;
    sp_mcam_init_d(&mc, &s->cam);
    double *an[ST_GROUPS];
    an[ST_MEANS] = SP_NEW(double, 3 * n);
    an[ST_SCALES] = SP_NEW(double, 3 * n);
    an[ST_QUATS] = SP_NEW(double, 4 * n);
    an[ST_LOGITS] = SP_NEW(double, n);
    an[ST_SH] = SP_NEW(double, n * K * 3);
    int visible = 0;
    for (int i = 0; i < n; i++) {
        sp_mproj_d o;
        if (!sp_m_project_d(&mc, s->dmeans + 3 * i, s->dlog_scales + 3 * i, s->dquats + 4 * i, s->dlogits[i],
                            s->dsh + (size_t)i * K * 3, s->degree, s->antialias, &o))
            continue;
        visible++;
        const double *u = c.up + 9 * i;
        sp_m_project_back_d(&mc, s->dmeans + 3 * i, s->dlog_scales + 3 * i, s->dquats + 4 * i, s->dlogits[i],
                            s->dsh + (size_t)i * K * 3, s->degree, s->antialias, o.clamped, u, u + 2, u[5], u + 6,
                            an[ST_MEANS] + 3 * i, an[ST_SCALES] + 3 * i, an[ST_QUATS] + 4 * i, an[ST_LOGITS] + i,
                            an[ST_SH] + (size_t)i * K * 3);
    }
    assert_int_equal(visible, n);

    uint64_t sig0;
    proj_loss(&c, &sig0);
    for (int g = 0; g < ST_GROUPS; g++) {
        int count, gi, checked = 0, total = 0;
        double *x = st_group(s, g, &count);
        double scale = max_abs(an[g], count);
        assert_true(scale > 0);
        for (int k = 0; k < count; k++) {
            if (!st_scalar_used(s, g, k, &gi)) {
                assert_true(an[g][k] == 0);
                continue;
            }
            total++;
            checked += fd_check(st_group_name(g), k, &x[k], an[g][k], scale, proj_loss, &c, sig0);
        }
        assert_true(checked >= total - 2);
    }

    /* float stage against the double analytic gradient */
    sp_params p = st_params(s);
    sp_proj proj;
    sp_proj_alloc(&proj, n);
    cpu_project_aa(&p, &s->cam, s->degree, s->antialias, &proj);
    sp_proj_grad pg;
    sp_proj_grad_alloc(&pg, n);
    for (int i = 0; i < n; i++) {
        const double *u = c.up + 9 * i;
        pg.mean2d[2 * i] = u[0], pg.mean2d[2 * i + 1] = u[1];
        for (int k = 0; k < 3; k++) pg.conic[3 * i + k] = u[2 + k], pg.color[3 * i + k] = u[6 + k];
        pg.opacity[i] = u[5];
    }
    sp_gaussians gr;
    sp_gaussians_init(&gr, n, 3);
    gr.n = n;
    sp_params_grad out = {n, K, gr.means, gr.log_scales, gr.quats, gr.opacity_logits, gr.sh};
    cpu_project_back_aa(&p, &s->cam, s->degree, s->antialias, &proj, &pg, &out);
    st_assert_close("means", out.means, an[ST_MEANS], 3 * n, 2e-3, 2e-3);
    st_assert_close("log_scales", out.log_scales, an[ST_SCALES], 3 * n, 2e-3, 2e-3);
    st_assert_close("quats", out.quats, an[ST_QUATS], 4 * n, 2e-3, 2e-3);
    st_assert_close("opacity_logits", out.opacity_logits, an[ST_LOGITS], n, 2e-3, 2e-3);
    st_assert_close("sh", out.sh, an[ST_SH], n * K * 3, 2e-3, 2e-3);
    sp_gaussians_free(&gr);
    sp_proj_grad_free(&pg);
    sp_proj_free(&proj);
    for (int g = 0; g < ST_GROUPS; g++) free(an[g]);
    free(c.up);
}

static void test_project_back_gradients(void **state) {
    (void)state;
    for (int degree = 0; degree <= 3; degree++) {
        st_scene s;
        st_scene_make(&s, 100 + degree, 12, degree, 32, 24);
        check_project_back(&s, 200 + degree);
        st_scene_free(&s);
    }
}

/* The same with the opacity-compensated filter: rho = sqrt(det0 / det) depends on the 2D covariance
 * (so on means, scales, rotations) and multiplies the opacity. The scene's Gaussians are about a
 * pixel wide, where rho is far from 1 (checked), and some are made a few times smaller still. */
static void test_project_back_gradients_antialias(void **state) {
    (void)state;
    for (int degree = 0; degree <= 3; degree += 3) {
        st_scene s;
        st_scene_make(&s, 150 + degree, 12, degree, 32, 24);
        s.antialias = 1;
        for (int i = 0; i < s.n; i += 3)
            for (int k = 0; k < 3; k++) s.log_scales[3 * i + k] -= 0.7f;
        for (int i = 0; i < s.n; i += 4) s.logits[i] = 3.0f; /* opaque enough to stay visible when small */
        st_sync_double(&s);
        sp_mcam_d mc;
        sp_mcam_init_d(&mc, &s.cam);
        double rmin = 1, rmax = 0;
        for (int i = 0; i < s.n; i++) {
            sp_mgeo_d g;
            assert_true(sp_m_geometry_d(&mc, s.dmeans + 3 * i, s.dlog_scales + 3 * i, s.dquats + 4 * i, &g));
            double rho = sp_m_aa_rho_d(&g);
            rmin = fmin(rmin, rho), rmax = fmax(rmax, rho);
        }
        assert_true(rmin < 0.5 && rmax < 1 && rmax > 0.8);
        check_project_back(&s, 250 + degree);
        st_scene_free(&s);
    }
}

/* A Gaussian far left of the view (its direction clamped for the Jacobian) but large enough to
 * touch the image: the clamped branch of the chain rule. */
static void test_project_back_jacobian_clamp(void **state) {
    (void)state;
    st_scene s;
    st_scene_make(&s, 300, 3, 2, 32, 24);
    const sp_camera *c = &s.cam;
    float z = 4, u[3] = {-0.5f, 1.6f, 0.7f}; /* u in units of image width: -0.5 left, 1.6 right */
    for (int i = 0; i < 3; i++) {
        float px = (u[i] * c->width - c->cx) / c->fx * z, py = (0.3f * (i + 1) * c->height - c->cy) / c->fy * z;
        float p[3] = {px - c->t[0], py - c->t[1], z - c->t[2]};
        for (int k = 0; k < 3; k++) s.means[3 * i + k] = c->R[0 * 3 + k] * p[0] + c->R[1 * 3 + k] * p[1] + c->R[2 * 3 + k] * p[2];
        for (int k = 0; k < 3; k++) s.log_scales[3 * i + k] = logf((i == 2 ? 0.2f : 2.5f) * (0.6f + 0.3f * k));
    }
    st_sync_double(&s);
    sp_mcam_d mc;
    sp_mcam_init_d(&mc, &s.cam);
    sp_mgeo_d g;
    assert_true(sp_m_geometry_d(&mc, s.dmeans, s.dlog_scales, s.dquats, &g) && g.clamp_u);
    assert_true(sp_m_geometry_d(&mc, s.dmeans + 3, s.dlog_scales + 3, s.dquats + 4, &g) && g.clamp_u);
    assert_true(sp_m_geometry_d(&mc, s.dmeans + 6, s.dlog_scales + 6, s.dquats + 8, &g) && !g.clamp_u);
    check_project_back(&s, 301);
    st_scene_free(&s);
}

/* ---- backward_raster ---- */

/* The float pipeline's projections and bins, as doubles; L = sum w . rgb of a double rasterizer
 * over the float bin order. */
typedef struct {
    st_scene *s;
    sp_bins *bins;
    sp_msplat_d *sp; /* [n] */
} rast_ctx;

static double rast_loss(void *vc, uint64_t *sig) {
    rast_ctx *c = vc;
    const sp_camera *cam = &c->s->cam;
    int W = cam->width, H = cam->height, tx = c->bins->tiles_x;
    sp_msplat_d *buf = SP_NEW(sp_msplat_d, c->s->n + 1);
    double bg[3] = {c->s->bg[0], c->s->bg[1], c->s->bg[2]}, L = 0;
    st_events = 0;
    for (int py = 0; py < H; py++)
        for (int px = 0; px < W; px++) {
            int t = (py / 16) * tx + px / 16;
            uint32_t s0 = c->bins->range[2 * t], m = c->bins->range[2 * t + 1] - s0;
            for (uint32_t j = 0; j < m; j++) {
                buf[j] = c->sp[c->bins->ids[s0 + j]];
                buf[j].pmin = sp_m_splat_pmin_d(buf[j].op);
            }
            double rgb[3], T;
            int32_t nc;
            sp_m_raster_pixel_d(buf, (int)m, px, py, bg, rgb, &T, &nc);
            for (int ch = 0; ch < 3; ch++) L += c->s->w[3 * ((size_t)py * W + px) + ch] * rgb[ch];
        }
    free(buf);
    *sig = st_events;
    return L;
}

static void test_backward_raster_gradients(void **state) {
    (void)state;
    st_scene s;
    st_scene_make(&s, 400, 24, 1, 32, 24);
    int n = s.n, W = s.cam.width, H = s.cam.height;
    sp_params p = st_params(&s);
    sp_proj proj;
    sp_proj_alloc(&proj, n);
    cpu_project(&p, &s.cam, s.degree, &proj);
    sp_bins bins = {0};
    cpu_bin(&proj, n, &s.cam, &bins);
    sp_raster_out ro;
    sp_raster_out_alloc(&ro, W, H);
    cpu_rasterize(&proj, &bins, &s.cam, s.bg, &ro);

    rast_ctx c = {&s, &bins, SP_NEW(sp_msplat_d, n)};
    for (int i = 0; i < n; i++) {
        sp_msplat_d *d = &c.sp[i];
        d->x = proj.mean2d[2 * i], d->y = proj.mean2d[2 * i + 1];
        d->a = proj.conic[3 * i], d->b = proj.conic[3 * i + 1], d->c = proj.conic[3 * i + 2];
        d->op = proj.opacity[i];
        for (int ch = 0; ch < 3; ch++) d->col[ch] = proj.color[3 * i + ch];
    }
    /* double analytic: per pixel backward, summed per Gaussian */
    sp_msplat_d *an = SP_NEW(sp_msplat_d, n), *buf = SP_NEW(sp_msplat_d, n), *acc = SP_NEW(sp_msplat_d, n);
    double bg[3] = {s.bg[0], s.bg[1], s.bg[2]};
    for (int py = 0; py < H; py++)
        for (int px = 0; px < W; px++) {
            int t = (py / 16) * bins.tiles_x + px / 16;
            uint32_t s0 = bins.range[2 * t], m = bins.range[2 * t + 1] - s0;
            for (uint32_t j = 0; j < m; j++) {
                buf[j] = c.sp[bins.ids[s0 + j]];
                buf[j].pmin = sp_m_splat_pmin_d(buf[j].op);
            }
            double rgb[3], T;
            int32_t nc;
            sp_m_raster_pixel_d(buf, (int)m, px, py, bg, rgb, &T, &nc);
            memset(acc, 0, sizeof(sp_msplat_d) * n);
            size_t pix = (size_t)py * W + px;
            sp_m_raster_pixel_back_d(buf, nc, px, py, bg, T, s.w + 3 * pix, acc);
            for (uint32_t j = 0; j < m; j++) {
                double *dst = (double *)&an[bins.ids[s0 + j]];
                const double *src = (const double *)&acc[j];
                for (int k = 0; k < 9; k++) dst[k] += src[k];
            }
        }
    /* finite differences per quantity */
    uint64_t sig0;
    rast_loss(&c, &sig0);
    static const char *names[9] = {"mean2d.x", "mean2d.y", "conic.a", "conic.b", "conic.c", "opacity",
                                   "color.r",  "color.g",  "color.b"};
    static const int group_of[9] = {0, 0, 1, 1, 1, 2, 3, 3, 3};
    double scale[4] = {0};
    for (int i = 0; i < n; i++)
        for (int k = 0; k < 9; k++) scale[group_of[k]] = fmax(scale[group_of[k]], fabs(((double *)&an[i])[k]));
    int checked = 0, total = 0;
    for (int i = 0; i < n; i++)
        for (int k = 0; k < 9; k++) {
            total++;
            checked += fd_check(names[k], i, &((double *)&c.sp[i])[k], ((double *)&an[i])[k], scale[group_of[k]],
                                rast_loss, &c, sig0);
        }
    assert_true(checked >= total - 4);

    /* float stage against the double analytic gradient */
    float *dl = SP_NEW(float, (size_t)W * H * 3);
    for (int i = 0; i < W * H * 3; i++) dl[i] = (float)s.w[i];
    sp_proj_grad pg;
    sp_proj_grad_alloc(&pg, n);
    sp_proj_grad_zero(&pg, n);
    cpu_backward_raster(&proj, &bins, &s.cam, s.bg, &ro, dl, &pg);
    double *ref = SP_NEW(double, 3 * n);
    for (int i = 0; i < n; i++) ref[2 * i] = an[i].x, ref[2 * i + 1] = an[i].y;
    st_assert_close("dmean2d", pg.mean2d, ref, 2 * n, 2e-3, 2e-3);
    for (int i = 0; i < n; i++) ref[3 * i] = an[i].a, ref[3 * i + 1] = an[i].b, ref[3 * i + 2] = an[i].c;
    st_assert_close("dconic", pg.conic, ref, 3 * n, 2e-3, 2e-3);
    for (int i = 0; i < n; i++) ref[i] = an[i].op;
    st_assert_close("dopacity", pg.opacity, ref, n, 2e-3, 2e-3);
    for (int i = 0; i < n; i++)
        for (int ch = 0; ch < 3; ch++) ref[3 * i + ch] = an[i].col[ch];
    st_assert_close("dcolor", pg.color, ref, 3 * n, 2e-3, 2e-3);

    free(ref), free(dl), free(an), free(buf), free(acc), free(c.sp);
    sp_proj_grad_free(&pg);
    sp_raster_out_free(&ro);
    sp_bins_free(&bins);
    sp_proj_free(&proj);
    st_scene_free(&s);
}

/* ---- end to end: parameters -> image -> L = sum w . rgb ---- */

static double e2e_loss(void *vc, uint64_t *sig) { return st_loss_d(vc, sig); }

static void check_end_to_end(int degree, uint64_t seed, int antialias) {
    st_scene s;
    st_scene_make(&s, seed, 20, degree, 32, 24);
    s.antialias = antialias;
    int n = s.n, K = s.K, W = s.cam.width, H = s.cam.height;
    double *an[ST_GROUPS];
    an[ST_MEANS] = SP_NEW(double, 3 * n);
    an[ST_SCALES] = SP_NEW(double, 3 * n);
    an[ST_QUATS] = SP_NEW(double, 4 * n);
    an[ST_LOGITS] = SP_NEW(double, n);
    an[ST_SH] = SP_NEW(double, n * K * 3);
    st_grad_d(&s, an[ST_MEANS], an[ST_SCALES], an[ST_QUATS], an[ST_LOGITS], an[ST_SH], NULL);
    uint64_t sig0;
    st_loss_d(&s, &sig0);
    for (int g = 0; g < ST_GROUPS; g++) {
        int count, gi, checked = 0, total = 0;
        double *x = st_group(&s, g, &count);
        double scale = max_abs(an[g], count);
        assert_true(scale > 0);
        for (int k = 0; k < count; k++) {
            if (!st_scalar_used(&s, g, k, &gi)) continue;
            total++;
            checked += fd_check(st_group_name(g), k, &x[k], an[g][k], scale, e2e_loss, &s, sig0);
        }
        assert_true(checked >= total - 3);
    }

    /* the float stages, chained as the backend chains them */
    sp_params p = st_params(&s);
    sp_proj proj;
    sp_proj_alloc(&proj, n);
    cpu_project_aa(&p, &s.cam, degree, antialias, &proj);
    sp_bins bins = {0};
    cpu_bin(&proj, n, &s.cam, &bins);
    sp_raster_out ro;
    sp_raster_out_alloc(&ro, W, H);
    cpu_rasterize(&proj, &bins, &s.cam, s.bg, &ro);
    float *dl = SP_NEW(float, (size_t)W * H * 3);
    for (int i = 0; i < W * H * 3; i++) dl[i] = (float)s.w[i];
    sp_proj_grad pg;
    sp_proj_grad_alloc(&pg, n);
    sp_proj_grad_zero(&pg, n);
    cpu_backward_raster(&proj, &bins, &s.cam, s.bg, &ro, dl, &pg);
    sp_gaussians gr;
    sp_gaussians_init(&gr, n, 3);
    gr.n = n;
    sp_params_grad out = {n, K, gr.means, gr.log_scales, gr.quats, gr.opacity_logits, gr.sh};
    cpu_project_back_aa(&p, &s.cam, degree, antialias, &proj, &pg, &out);
    st_assert_close("e2e means", out.means, an[ST_MEANS], 3 * n, 5e-3, 5e-3);
    st_assert_close("e2e log_scales", out.log_scales, an[ST_SCALES], 3 * n, 5e-3, 5e-3);
    st_assert_close("e2e quats", out.quats, an[ST_QUATS], 4 * n, 5e-3, 5e-3);
    st_assert_close("e2e opacity_logits", out.opacity_logits, an[ST_LOGITS], n, 5e-3, 5e-3);
    st_assert_close("e2e sh", out.sh, an[ST_SH], n * K * 3, 5e-3, 5e-3);
    /* and the forward image agrees with the double one */
    st_fwd f;
    st_forward_d(&s, &f);
    st_assert_close("e2e rgb", ro.rgb, f.rgb, W * H * 3, 1e-5, 1e-5);
    st_fwd_free(&f);

    sp_gaussians_free(&gr);
    sp_proj_grad_free(&pg);
    free(dl);
    sp_raster_out_free(&ro);
    sp_bins_free(&bins);
    sp_proj_free(&proj);
    for (int g = 0; g < ST_GROUPS; g++) free(an[g]);
    st_scene_free(&s);
}

static void test_end_to_end_deg0(void **state) { (void)state, check_end_to_end(0, 500, 0); }
static void test_end_to_end_deg1(void **state) { (void)state, check_end_to_end(1, 501, 0); }
static void test_end_to_end_deg2(void **state) { (void)state, check_end_to_end(2, 502, 0); }
static void test_end_to_end_deg3(void **state) { (void)state, check_end_to_end(3, 503, 0); }
/* parameters -> image with the opacity-compensated filter */
static void test_end_to_end_antialias(void **state) { (void)state, check_end_to_end(2, 510, 1); }

/* The filter changes only the opacity: with antialias the projection equals the plain one except
 * opacity (scaled by rho < 1) and the extent that follows it; a Gaussian many pixels wide keeps
 * nearly all of its opacity, a sub-pixel one loses most of it. */
static void test_antialias_projection(void **state) {
    (void)state;
    st_scene s;
    st_scene_make(&s, 520, 30, 1, 32, 24);
    sp_params p = st_params(&s);
    sp_proj a, b;
    sp_proj_alloc(&a, s.n), sp_proj_alloc(&b, s.n);
    cpu_project_aa(&p, &s.cam, 1, 0, &a);
    cpu_project_aa(&p, &s.cam, 1, 1, &b);
    sp_mcam_d mc;
    sp_mcam_init_d(&mc, &s.cam);
    int both = 0;
    for (int i = 0; i < s.n; i++) {
        int va = a.rect[4 * i] < a.rect[4 * i + 2], vb = b.rect[4 * i] < b.rect[4 * i + 2];
        if (!vb) continue;
        assert_true(va);
        both++;
        sp_mgeo_d g;
        assert_true(sp_m_geometry_d(&mc, s.dmeans + 3 * i, s.dlog_scales + 3 * i, s.dquats + 4 * i, &g));
        double rho = sp_m_aa_rho_d(&g);
        assert_true(rho > 0 && rho < 1);
        assert_float_equal(b.opacity[i], a.opacity[i] * rho, 1e-5 * a.opacity[i]);
        assert_memory_equal(b.mean2d + 2 * i, a.mean2d + 2 * i, 8);
        assert_memory_equal(b.conic + 3 * i, a.conic + 3 * i, 12);
        assert_memory_equal(b.color + 3 * i, a.color + 3 * i, 12);
        assert_true(b.depth[i] == a.depth[i] && b.radius[i] <= a.radius[i]);
    }
    assert_true(both >= s.n / 2);
    /* by hand: an isotropic Gaussian of 2D variance v has rho = v / (v + 0.3) */
    for (int i = 0; i < 2; i++) {
        double v = i ? 25.0 : 0.05;
        sp_mgeo_d g = {.a = v + 0.3, .b = 0, .c = v + 0.3};
        g.det = g.a * g.c, g.det0 = v * v;
        assert_float_equal(sp_m_aa_rho_d(&g), v / (v + 0.3), 1e-12);
    }
    sp_proj_free(&a), sp_proj_free(&b);
    st_scene_free(&s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sh_gradients),
        cmocka_unit_test(test_project_back_gradients),
        cmocka_unit_test(test_project_back_gradients_antialias),
        cmocka_unit_test(test_project_back_jacobian_clamp),
        cmocka_unit_test(test_backward_raster_gradients),
        cmocka_unit_test(test_end_to_end_deg0),
        cmocka_unit_test(test_end_to_end_deg1),
        cmocka_unit_test(test_end_to_end_deg2),
        cmocka_unit_test(test_end_to_end_deg3),
        cmocka_unit_test(test_end_to_end_antialias),
        cmocka_unit_test(test_antialias_projection),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
