/* gpu_test_parity.c — every CUDA stage against the CPU reference (backend/cpu/stages.h) on fresh
 * random inputs each run (the seed is printed; SPLAT_TEST_SEED=<n> repeats a run). Each comparison
 * prints one PASS/FAIL line with the measured error and its tolerance:
 *   project        1e-5 relative per value (floor: 1e-3 of the array's largest magnitude); for the
 *                  conic, 1e-5 relative error of its quadratic form (per-component error printed)
 *   emit/sort/ranges  exact lists from the same projection; from separately projected inputs, lists
 *                  match except for Gaussians whose rect differs by float rounding (reported)
 *   rasterize      max abs 1e-4 (pixels where an alpha/transmittance threshold flipped are reported,
 *                  at most 0.1 % allowed)
 *   backward       relative L2 < 1e-3 per gradient array, both modes; deterministic mode repeats
 *                  bit for bit
 *   project_back   relative L2 < 1e-4 per parameter group
 *   loss           value 1e-5 relative, gradient 1e-4 relative L2
 *   adam           max abs 1e-6
 *   refine         against cpu_refine: identical counts and order, copies bit-identical, values
 *                  through expf/logf/cosf within 1e-5 abs
 *   backend step   render vs CPU forward max abs 1e-4; one train_step: loss 1e-5 relative and the
 *                  gradients (read back through Adam's first moment) relative L2 < 1e-3
 * Without a GPU every test prints "no GPU" and is skipped, except the two that run the project /
 * project_back kernels' per-Gaussian code on the host against the CPU stages. */
#include "testutil.h"

#include <math.h>
#include <time.h>

#include "backend/backend.h"
#include "backend/cpu/refine.h"
#include "backend/cpu/stages.h"
#include "backend/cuda/cuda_test_api.h"
#include "backend/tile_cull.h"
#include "scene/gaussians.h"

#ifdef SPLAT_HAVE_CUDA

static uint64_t g_seed;
static int g_have_gpu;

#define SKIP_WITHOUT_GPU()              \
    do {                                \
        if (!g_have_gpu) {              \
            printf("no GPU: skipped\n"); \
            skip();                     \
        }                               \
    } while (0)

/* ---- comparisons ---- */
static int report(int ok, const char *stage, const char *what, const char *metric, double err, double tol) {
    printf("%s %s %s: %s %.3g (tol %.3g)\n", ok ? "PASS" : "FAIL", stage, what, metric, err, tol);
    fflush(stdout);
    return ok;
}

/* Max over i of |a-b| / max(|b|, floor), floor = floor_frac * max|b|; only where mask (if any). */
static double max_rel(const float *a, const float *b, size_t n, int stride, const uint8_t *mask, double floor_frac) {
    double mx = 0.0, err = 0.0;
    for (size_t i = 0; i < n * stride; i++)
        if (!mask || mask[i / stride]) mx = fmax(mx, fabs((double)b[i]));
    double fl = fmax(floor_frac * mx, 1e-30);
    for (size_t i = 0; i < n * stride; i++) {
        if (mask && !mask[i / stride]) continue;
        double d = fabs((double)a[i] - (double)b[i]) / fmax(fabs((double)b[i]), fl);
        if (!(d <= err)) err = isnan(d) ? INFINITY : fmax(err, d);
    }
    return err;
}

/* Relative error of the quadratic form d^T C d (conic C = (a, b, c) = [[a, b], [b, c]]):
 * sqrt|tr((C^-1 dC)^2)| with dC = gpu - cpu, the largest over Gaussians in mask. */
static double conic_form_err(const float *g, const float *c, int n, const uint8_t *mask) {
    double worst = 0.0;
    for (int i = 0; i < n; i++) {
        if (mask && !mask[i]) continue;
        double a = c[3 * i], b = c[3 * i + 1], cc = c[3 * i + 2];
        double da = (double)g[3 * i] - a, db = (double)g[3 * i + 1] - b, dc = (double)g[3 * i + 2] - cc;
        double det = a * cc - b * b;
        if (!(det > 0.0)) {
            worst = INFINITY;
            continue;
        }
        /* N = C^-1 dC, C^-1 = [[cc, -b], [-b, a]] / det */
        double n00 = (cc * da - b * db) / det, n01 = (cc * db - b * dc) / det;
        double n10 = (-b * da + a * db) / det, n11 = (-b * db + a * dc) / det;
        double e = sqrt(fabs(n00 * n00 + 2.0 * n01 * n10 + n11 * n11));
        if (!(e <= worst)) worst = isnan(e) ? INFINITY : e;
    }
    return worst;
}

static double rel_l2(const float *a, const float *b, size_t n) {
    double num = 0.0, den = 0.0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)a[i] - (double)b[i];
        num += d * d;
        den += (double)b[i] * (double)b[i];
    }
    if (den == 0.0) return num == 0.0 ? 0.0 : INFINITY;
    return sqrt(num / den);
}

/* ---- random scenes ---- */
typedef struct {
    sp_camera cam;
    int n, K, deg;
    float *means, *log_scales, *quats, *logits, *sh;
    sp_params p;
} scene;

static void mat_from_quat(const float q[4], float R[9]) {
    float w = q[0], x = q[1], y = q[2], z = q[3];
    R[0] = 1 - 2 * (y * y + z * z), R[1] = 2 * (x * y - w * z), R[2] = 2 * (x * z + w * y);
    R[3] = 2 * (x * y + w * z), R[4] = 1 - 2 * (x * x + z * z), R[5] = 2 * (y * z - w * x);
    R[6] = 2 * (x * z - w * y), R[7] = 2 * (y * z + w * x), R[8] = 1 - 2 * (x * x + y * y);
}

static void scene_make(scene *s, sp_rng *r, int n, int w, int h, int deg) {
    memset(s, 0, sizeof *s);
    s->n = n;
    s->deg = deg;
    s->K = sp_sh_coeffs(deg);
    sp_camera *c = &s->cam;
    c->width = w, c->height = h;
    c->fx = 0.9f * w, c->fy = 0.9f * w;
    c->cx = 0.5f * w + 1.5f, c->cy = 0.5f * h - 2.0f;
    float q[4] = {1.0f, 0.2f * (sp_rng_uniform(r) - 0.5f), 0.2f * (sp_rng_uniform(r) - 0.5f),
                  0.2f * (sp_rng_uniform(r) - 0.5f)};
    float ql = sqrtf(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
    for (int k = 0; k < 4; k++) q[k] /= ql;
    mat_from_quat(q, c->R);
    for (int k = 0; k < 3; k++) c->t[k] = 0.3f * (sp_rng_uniform(r) - 0.5f);
    s->means = sp_malloc((size_t)n * 3 * 4);
    s->log_scales = sp_malloc((size_t)n * 3 * 4);
    s->quats = sp_malloc((size_t)n * 4 * 4);
    s->logits = sp_malloc((size_t)n * 4);
    s->sh = sp_malloc((size_t)n * 3 * s->K * 4);
    for (int i = 0; i < n; i++) {
        /* camera-space point in (and a little beyond) the frustum, then to world */
        float z = 1.0f + 5.0f * sp_rng_uniform(r);
        float pc[3] = {(sp_rng_uniform(r) * 1.4f - 0.7f) * z * w / c->fx, (sp_rng_uniform(r) * 1.4f - 0.7f) * z * h / c->fy,
                       z};
        if (i % 97 == 0) pc[2] = 0.1f; /* behind the near plane */
        float d[3] = {pc[0] - c->t[0], pc[1] - c->t[1], pc[2] - c->t[2]};
        for (int k = 0; k < 3; k++) s->means[3 * i + k] = c->R[k] * d[0] + c->R[3 + k] * d[1] + c->R[6 + k] * d[2];
        for (int k = 0; k < 3; k++) s->log_scales[3 * i + k] = logf(0.01f + 0.12f * sp_rng_uniform(r));
        for (int k = 0; k < 4; k++) s->quats[4 * i + k] = sp_rng_normal(r) + (k == 0 ? 0.5f : 0.0f);
        s->logits[i] = -4.0f + 8.0f * sp_rng_uniform(r);
        for (int k = 0; k < 3 * s->K; k++) s->sh[3 * s->K * i + k] = (k < 3 ? 1.0f : 0.3f) * (sp_rng_uniform(r) - 0.5f);
    }
    s->p.n = n, s->p.K = s->K;
    s->p.means = s->means, s->p.log_scales = s->log_scales, s->p.quats = s->quats;
    s->p.opacity_logits = s->logits, s->p.sh = s->sh;
}

static void scene_free(scene *s) {
    free(s->means);
    free(s->log_scales);
    free(s->quats);
    free(s->logits);
    free(s->sh);
}

static sp_rng test_rng(uint64_t stream) {
    sp_rng r;
    sp_rng_seed(&r, g_seed, stream);
    return r;
}

static uint8_t *visible_mask(const sp_proj *a, const sp_proj *b, int n, int *mismatch) {
    uint8_t *m = sp_calloc((size_t)n, 1);
    *mismatch = 0;
    for (int i = 0; i < n; i++) {
        int va = a->rect[4 * i] < a->rect[4 * i + 2] && a->rect[4 * i + 1] < a->rect[4 * i + 3];
        int vb = b->rect[4 * i] < b->rect[4 * i + 2] && b->rect[4 * i + 1] < b->rect[4 * i + 3];
        m[i] = va && vb;
        if (va != vb) (*mismatch)++;
    }
    return m;
}

/* ---- tests ---- */
typedef int (*project_fn)(const sp_params *, const sp_camera *, int, sp_proj *);
typedef int (*project_back_fn)(const sp_params *, const sp_camera *, int, const sp_proj *, const sp_proj_grad *,
                               sp_params_grad *);

static int check_project(project_fn fn, const char *stage) {
    sp_rng r = test_rng(1);
    scene s;
    scene_make(&s, &r, 3000, 157, 101, 3);
    int ok = 1;
    for (int deg = 0; deg <= 3; deg += 3) {
        sp_proj c, g;
        sp_proj_alloc(&c, s.n);
        sp_proj_alloc(&g, s.n);
        cpu_project(&s.p, &s.cam, deg, &c);
        assert_int_equal(fn(&s.p, &s.cam, deg, &g), 0);
        int vis_mismatch = 0, rect_diff = 0, clamp_diff = 0;
        uint8_t *m = visible_mask(&g, &c, s.n, &vis_mismatch);
        for (int i = 0; i < s.n; i++) {
            if (!m[i]) continue;
            if (memcmp(g.rect + 4 * i, c.rect + 4 * i, 16)) rect_diff++;
            for (int k = 0; k < 3; k++)
                if (g.clamped[3 * i + k] != c.clamped[3 * i + k] && fabsf(c.color[3 * i + k]) > 1e-6f) clamp_diff++;
        }
        const double tol = 1e-5;
        char what[64];
        struct {
            const char *name;
            const float *a, *b;
            int stride;
        } arrs[] = {{"mean2d", g.mean2d, c.mean2d, 2}, {"conic", g.conic, c.conic, 3},
                    {"depth", g.depth, c.depth, 1},    {"opacity", g.opacity, c.opacity, 1},
                    {"color", g.color, c.color, 3},    {"radius", g.radius, c.radius, 1}};
        for (size_t k = 0; k < sizeof arrs / sizeof *arrs; k++) {
            snprintf(what, sizeof what, "%s (deg %d)", arrs[k].name, deg);
            double e = max_rel(arrs[k].a, arrs[k].b, (size_t)s.n, arrs[k].stride, m, 1e-3);
            if (!strcmp(arrs[k].name, "conic")) {
                /* The conic inverts a nearly singular matrix for thin Gaussians, so per-component
                 * errors are the input's ulps times its condition number. The stated tolerance
                 * applies to the relative error of the quadratic form it defines. */
                printf("INFO %s %s: per-component max rel err %.3g\n", stage, what, e);
                e = conic_form_err(g.conic, c.conic, s.n, m);
                ok &= report(e <= tol, stage, what, "quadratic-form rel err", e, tol);
                continue;
            }
            ok &= report(e <= tol, stage, what, "max rel err", e, tol);
        }
        printf("INFO %s (deg %d): visibility differs for %d of %d, rect differs (float rounding) for %d, "
               "clamp flag differs for %d\n",
               stage, deg, vis_mismatch, s.n, rect_diff, clamp_diff);
        ok &= report(vis_mismatch <= s.n / 1000 && rect_diff <= s.n / 200 && clamp_diff == 0, stage,
                     "visibility/rect/clamped", "mismatches", vis_mismatch + rect_diff + clamp_diff, s.n / 200);
        free(m);
        sp_proj_free(&c);
        sp_proj_free(&g);
    }
    scene_free(&s);
    return ok;
}

static void test_project(void **state) {
    (void)state;
    SKIP_WITHOUT_GPU();
    assert_true(check_project(cuda_test_project, "project"));
}

/* The kernels' per-Gaussian code run on the host: checks the arithmetic without a GPU. */
static void test_project_math_on_host(void **state) {
    (void)state;
    assert_true(check_project(cuda_test_project_on_host, "project(host-run kernel math)"));
}

static int bins_equal(const sp_bins *a, const sp_bins *b) {
    if (a->tiles_x != b->tiles_x || a->tiles_y != b->tiles_y || a->num_pairs != b->num_pairs) return 0;
    if (memcmp(a->range, b->range, (size_t)a->tiles_x * a->tiles_y * 8)) return 0;
    return memcmp(a->ids, b->ids, (size_t)a->num_pairs * 4) == 0;
}

static void test_bins(void **state) {
    (void)state;
    SKIP_WITHOUT_GPU();
    sp_rng r = test_rng(2);
    scene s;
    scene_make(&s, &r, 4000, 203, 130, 1);
    sp_proj c, g;
    sp_proj_alloc(&c, s.n);
    sp_proj_alloc(&g, s.n);
    cpu_project(&s.p, &s.cam, 1, &c);
    assert_int_equal(cuda_test_project(&s.p, &s.cam, 1, &g), 0);
    /* same projection: exact */
    sp_bins bc = {0}, bg = {0};
    cpu_bin(&c, s.n, &s.cam, &bc);
    assert_int_equal(cuda_test_bin(&c, s.n, &s.cam, &bg), 0);
    int ok = report(bins_equal(&bc, &bg), "emit_pairs+sort+tile_ranges", "same projection", "lists identical (1=yes)",
                    bins_equal(&bc, &bg), 1);
    printf("INFO bins: %lld pairs over %d tiles\n", (long long)bc.num_pairs, bc.tiles_x * bc.tiles_y);
    /* GPU projection: per tile, the lists agree once Gaussians whose rect differs are removed */
    sp_bins bg2 = {0};
    assert_int_equal(cuda_test_bin(&g, s.n, &s.cam, &bg2), 0);
    uint8_t *differs = sp_calloc((size_t)s.n, 1);
    int ndiff = 0;
    for (int i = 0; i < s.n; i++) {
        const int32_t *rr = c.rect + 4 * i;
        int d = memcmp(g.rect + 4 * i, rr, 16) != 0;
        sp_tile_ellipse_t ec = sp_tile_ellipse(c.mean2d[2 * i], c.mean2d[2 * i + 1], c.conic[3 * i],
                                               c.conic[3 * i + 1], c.conic[3 * i + 2], c.opacity[i]);
        sp_tile_ellipse_t eg = sp_tile_ellipse(g.mean2d[2 * i], g.mean2d[2 * i + 1], g.conic[3 * i],
                                               g.conic[3 * i + 1], g.conic[3 * i + 2], g.opacity[i]);
        for (int y = rr[1]; y < rr[3] && !d; y++)
            for (int x = rr[0]; x < rr[2] && !d; x++) d = sp_tile_hit(&ec, x, y) != sp_tile_hit(&eg, x, y);
        if (d) differs[i] = 1, ndiff++;
    }
    int bad_tiles = 0;
    for (int t = 0; t < bc.tiles_x * bc.tiles_y; t++) {
        uint32_t ia = bc.range[2 * t], ea = bc.range[2 * t + 1], ib = bg2.range[2 * t], eb = bg2.range[2 * t + 1];
        for (;;) {
            while (ia < ea && differs[bc.ids[ia]]) ia++;
            while (ib < eb && differs[bg2.ids[ib]]) ib++;
            if (ia >= ea || ib >= eb) {
                if (ia < ea || ib < eb) bad_tiles++;
                break;
            }
            if (bc.ids[ia] != bg2.ids[ib]) {
                bad_tiles++;
                break;
            }
            ia++, ib++;
        }
    }
    printf("INFO bins from GPU projection: %d Gaussians have a rect or culled tile set differing by float rounding "
           "(allowed)\n",
           ndiff);
    ok &= report(bad_tiles == 0, "emit_pairs+sort+tile_ranges", "GPU projection", "tiles whose lists differ", bad_tiles,
                 0);
    free(differs);
    sp_bins_free(&bc);
    free(bg.ids), free(bg.range);
    free(bg2.ids), free(bg2.range);
    sp_proj_free(&c);
    sp_proj_free(&g);
    scene_free(&s);
    assert_true(ok);
}

/* CPU projection and lists of a random scene, shared by the raster tests. */
typedef struct {
    scene s;
    sp_proj proj;
    sp_bins bins;
    float bg[3];
} raster_case;

static void raster_case_make(raster_case *rc, uint64_t stream, int n, int w, int h) {
    sp_rng r = test_rng(stream);
    scene_make(&rc->s, &r, n, w, h, 2);
    sp_proj_alloc(&rc->proj, n);
    cpu_project(&rc->s.p, &rc->s.cam, 2, &rc->proj);
    memset(&rc->bins, 0, sizeof rc->bins);
    cpu_bin(&rc->proj, n, &rc->s.cam, &rc->bins);
    for (int k = 0; k < 3; k++) rc->bg[k] = sp_rng_uniform(&r);
}

static void raster_case_free(raster_case *rc) {
    sp_bins_free(&rc->bins);
    sp_proj_free(&rc->proj);
    scene_free(&rc->s);
}

static void test_rasterize(void **state) {
    (void)state;
    SKIP_WITHOUT_GPU();
    raster_case rc;
    raster_case_make(&rc, 3, 5000, 150, 111);
    int w = rc.s.cam.width, h = rc.s.cam.height;
    sp_raster_out c, g;
    sp_raster_out_alloc(&c, w, h);
    sp_raster_out_alloc(&g, w, h);
    cpu_rasterize(&rc.proj, &rc.bins, &rc.s.cam, rc.bg, &c);
    assert_int_equal(cuda_test_rasterize(&rc.proj, rc.s.n, &rc.bins, &rc.s.cam, rc.bg, &g), 0);
    double e_rgb = 0.0, e_T = 0.0;
    int flips = 0;
    for (int p = 0; p < w * h; p++) {
        double d = 0.0;
        for (int k = 0; k < 3; k++) d = fmax(d, fabs((double)g.rgb[3 * p + k] - c.rgb[3 * p + k]));
        double dT = fabs((double)g.final_T[p] - c.final_T[p]);
        if (g.n_contrib[p] != c.n_contrib[p] || d > 1e-4 || dT > 1e-4) {
            flips++;
            continue;
        }
        e_rgb = fmax(e_rgb, d);
        e_T = fmax(e_T, dT);
    }
    printf("INFO rasterize: %d of %d pixels differ by a threshold flip (n_contrib or > 1e-4)\n", flips, w * h);
    int ok = report(e_rgb <= 1e-4, "rasterize", "rgb", "max abs err", e_rgb, 1e-4);
    ok &= report(e_T <= 1e-4, "rasterize", "final_T", "max abs err", e_T, 1e-4);
    ok &= report(flips <= w * h / 1000, "rasterize", "threshold flips", "pixels", flips, w * h / 1000);
    sp_raster_out_free(&c);
    sp_raster_out_free(&g);
    raster_case_free(&rc);
    assert_true(ok);
}

static void grad_alloc(sp_proj_grad *g, int n) {
    sp_proj_grad_alloc(g, n);
    sp_proj_grad_zero(g, n);
}

static int compare_proj_grads(const sp_proj_grad *a, const sp_proj_grad *b, int n, const char *what) {
    char w[96];
    int ok = 1;
    struct {
        const char *name;
        const float *x, *y;
        int stride;
    } arrs[] = {{"dmean2d", a->mean2d, b->mean2d, 2},
                {"dconic", a->conic, b->conic, 3},
                {"dopacity", a->opacity, b->opacity, 1},
                {"dcolor", a->color, b->color, 3}};
    for (int k = 0; k < 4; k++) {
        snprintf(w, sizeof w, "%s %s", arrs[k].name, what);
        double e = rel_l2(arrs[k].x, arrs[k].y, (size_t)n * arrs[k].stride);
        ok &= report(e < 1e-3, "backward_raster", w, "rel L2 err", e, 1e-3);
    }
    return ok;
}

/* Both variants, both modes. The per-splat variant reads state its own GPU forward pass leaves,
 * so its reference is the CPU backward of the GPU forward output. */
static void test_backward(void **state) {
    (void)state;
    SKIP_WITHOUT_GPU();
    raster_case rc;
    raster_case_make(&rc, 4, 3000, 133, 97);
    int w = rc.s.cam.width, h = rc.s.cam.height, n = rc.s.n;
    float *dl = sp_malloc((size_t)w * h * 3 * 4);
    sp_rng r = test_rng(40);
    tu_fill_uniform(&r, dl, (size_t)w * h * 3, -1.0f, 1.0f);
    int ok = 1;
    for (int splat = 0; splat < 2; splat++) {
        const char *name = splat ? "per-splat" : "per-pixel";
        sp_raster_out fwd;
        sp_raster_out_alloc(&fwd, w, h);
        if (splat) assert_int_equal(cuda_test_rasterize(&rc.proj, n, &rc.bins, &rc.s.cam, rc.bg, &fwd), 0);
        else cpu_rasterize(&rc.proj, &rc.bins, &rc.s.cam, rc.bg, &fwd);
        sp_proj_grad c, g, d1, d2;
        grad_alloc(&c, n), grad_alloc(&g, n), grad_alloc(&d1, n), grad_alloc(&d2, n);
        cpu_backward_raster(&rc.proj, &rc.bins, &rc.s.cam, rc.bg, &fwd, dl, &c);
        assert_int_equal(cuda_test_backward(&rc.proj, n, &rc.bins, &rc.s.cam, rc.bg, &fwd, dl, 0, splat, &g), 0);
        assert_int_equal(cuda_test_backward(&rc.proj, n, &rc.bins, &rc.s.cam, rc.bg, &fwd, dl, 1, splat, &d1), 0);
        assert_int_equal(cuda_test_backward(&rc.proj, n, &rc.bins, &rc.s.cam, rc.bg, &fwd, dl, 1, splat, &d2), 0);
        char what[64];
        snprintf(what, sizeof what, "(%s, atomics)", name);
        ok &= compare_proj_grads(&g, &c, n, what);
        snprintf(what, sizeof what, "(%s, deterministic)", name);
        ok &= compare_proj_grads(&d1, &c, n, what);
        int same = !memcmp(d1.mean2d, d2.mean2d, (size_t)n * 8) && !memcmp(d1.conic, d2.conic, (size_t)n * 12) &&
                   !memcmp(d1.opacity, d2.opacity, (size_t)n * 4) && !memcmp(d1.color, d2.color, (size_t)n * 12);
        snprintf(what, sizeof what, "%s deterministic repeat", name);
        ok &= report(same, "backward_raster", what, "bit-identical (1=yes)", same, 1);
        sp_proj_grad_free(&c), sp_proj_grad_free(&g), sp_proj_grad_free(&d1), sp_proj_grad_free(&d2);
        sp_raster_out_free(&fwd);
    }
    free(dl);
    raster_case_free(&rc);
    assert_true(ok);
}

static int check_project_back(project_back_fn fn, const char *stage) {
    sp_rng r = test_rng(5);
    scene s;
    scene_make(&s, &r, 2000, 120, 90, 3);
    int n = s.n, ok = 1;
    for (int deg = 1; deg <= 3; deg += 2) {
        sp_proj proj;
        sp_proj_alloc(&proj, n);
        cpu_project(&s.p, &s.cam, deg, &proj);
        sp_proj_grad pg;
        sp_proj_grad_alloc(&pg, n);
        tu_fill_uniform(&r, pg.mean2d, (size_t)n * 2, -1.0f, 1.0f);
        tu_fill_uniform(&r, pg.conic, (size_t)n * 3, -10.0f, 10.0f);
        tu_fill_uniform(&r, pg.opacity, (size_t)n, -1.0f, 1.0f);
        tu_fill_uniform(&r, pg.color, (size_t)n * 3, -1.0f, 1.0f);
        size_t K = (size_t)s.K;
        float *buf[2];
        sp_params_grad out[2];
        for (int k = 0; k < 2; k++) {
            buf[k] = sp_calloc((size_t)n * (14 + 3 * K), 4);
            out[k].n = n, out[k].K = s.K;
            out[k].means = buf[k];
            out[k].log_scales = buf[k] + 3 * (size_t)n;
            out[k].quats = buf[k] + 6 * (size_t)n;
            out[k].opacity_logits = buf[k] + 10 * (size_t)n;
            out[k].sh = buf[k] + 11 * (size_t)n;
        }
        cpu_project_back(&s.p, &s.cam, deg, &proj, &pg, &out[0]);
        assert_int_equal(fn(&s.p, &s.cam, deg, &proj, &pg, &out[1]), 0);
        struct {
            const char *name;
            const float *a, *b;
            size_t cnt;
        } g[] = {{"means", out[1].means, out[0].means, 3 * (size_t)n},
                 {"log_scales", out[1].log_scales, out[0].log_scales, 3 * (size_t)n},
                 {"quats", out[1].quats, out[0].quats, 4 * (size_t)n},
                 {"opacity_logits", out[1].opacity_logits, out[0].opacity_logits, (size_t)n},
                 {"sh", out[1].sh, out[0].sh, 3 * K * n}};
        char what[64];
        for (int k = 0; k < 5; k++) {
            snprintf(what, sizeof what, "%s (deg %d)", g[k].name, deg);
            double e = rel_l2(g[k].a, g[k].b, g[k].cnt);
            ok &= report(e < 1e-4, stage, what, "rel L2 err", e, 1e-4);
        }
        free(buf[0]), free(buf[1]);
        sp_proj_grad_free(&pg);
        sp_proj_free(&proj);
    }
    scene_free(&s);
    return ok;
}

static void test_project_back(void **state) {
    (void)state;
    SKIP_WITHOUT_GPU();
    assert_true(check_project_back(cuda_test_project_back, "project_back"));
}

static void test_project_back_math_on_host(void **state) {
    (void)state;
    assert_true(check_project_back(cuda_test_project_back_on_host, "project_back(host-run kernel math)"));
}

static void test_loss(void **state) {
    (void)state;
    SKIP_WITHOUT_GPU();
    sp_rng r = test_rng(6);
    int ok = 1;
    int sizes[2][2] = {{67, 45}, {160, 128}};
    for (int t = 0; t < 2; t++) {
        int w = sizes[t][0], h = sizes[t][1];
        size_t cnt = (size_t)w * h * 3;
        float *rgb = sp_malloc(cnt * 4), *tgt = sp_malloc(cnt * 4), *gc = sp_malloc(cnt * 4), *gg = sp_malloc(cnt * 4);
        tu_fill_uniform(&r, tgt, cnt, 0.0f, 1.0f);
        for (size_t i = 0; i < cnt; i++) rgb[i] = tgt[i] + 0.2f * (sp_rng_uniform(&r) - 0.5f);
        for (size_t i = 0; i < cnt; i += 7) rgb[i] = tgt[i]; /* exact matches: L1 gradient 0 */
        double lc = cpu_loss(rgb, tgt, w, h, 0.2f, gc), lg = 0.0;
        assert_int_equal(cuda_test_loss(rgb, tgt, w, h, 0.2f, &lg, gg), 0);
        char what[64];
        snprintf(what, sizeof what, "value %dx%d", w, h);
        double ev = fabs(lg - lc) / fmax(fabs(lc), 1e-12);
        ok &= report(ev <= 1e-5, "loss", what, "rel err", ev, 1e-5);
        snprintf(what, sizeof what, "gradient %dx%d", w, h);
        double eg = rel_l2(gg, gc, cnt);
        ok &= report(eg <= 1e-4, "loss", what, "rel L2 err", eg, 1e-4);
        free(rgb), free(tgt), free(gc), free(gg);
    }
    assert_true(ok);
}

static void test_adam(void **state) {
    (void)state;
    SKIP_WITHOUT_GPU();
    sp_rng r = test_rng(7);
    int64_t n = 10007;
    float *p[2], *m[2], *v[2], *g = sp_malloc((size_t)n * 4);
    tu_fill_uniform(&r, g, (size_t)n, -1.0f, 1.0f);
    for (int k = 0; k < 2; k++) p[k] = sp_malloc((size_t)n * 4), m[k] = sp_malloc((size_t)n * 4), v[k] = sp_malloc((size_t)n * 4);
    tu_fill_uniform(&r, p[0], (size_t)n, -2.0f, 2.0f);
    tu_fill_uniform(&r, m[0], (size_t)n, -0.1f, 0.1f);
    tu_fill_uniform(&r, v[0], (size_t)n, 0.0f, 0.01f);
    memcpy(p[1], p[0], (size_t)n * 4), memcpy(m[1], m[0], (size_t)n * 4), memcpy(v[1], v[0], (size_t)n * 4);
    cpu_adam(p[0], g, m[0], v[0], n, 0.01f, 0.9f, 0.999f, 1e-15f, 7);
    assert_int_equal(cuda_test_adam(p[1], g, m[1], v[1], n, 0.01f, 0.9f, 0.999f, 1e-15f, 7), 0);
    double ep = 0.0, em = 0.0, ev = 0.0;
    for (int64_t i = 0; i < n; i++) {
        ep = fmax(ep, fabs((double)p[1][i] - p[0][i]));
        em = fmax(em, fabs((double)m[1][i] - m[0][i]));
        ev = fmax(ev, fabs((double)v[1][i] - v[0][i]));
    }
    int ok = report(ep <= 1e-6, "adam", "param", "max abs err", ep, 1e-6);
    ok &= report(em <= 1e-6, "adam", "m", "max abs err", em, 1e-6);
    ok &= report(ev <= 1e-6, "adam", "v", "max abs err", ev, 1e-6);
    for (int k = 0; k < 2; k++) free(p[k]), free(m[k]), free(v[k]);
    free(g);
    assert_true(ok);
}

/* The whole backend step against the CPU stages: render, and one train_step whose gradients are
 * read back through Adam's first moment (m = (1 - beta1) g after step 1). Tolerances: render max abs
 * 1e-4 (threshold flips reported), loss value 1e-5 relative, gradients relative L2 < 1e-3. */
static void backend_step(int splat) {
    printf("INFO backend step with the %s backward\n", splat ? "per-splat" : "per-pixel");
    sp_rng r = test_rng(8);
    scene s;
    int deg = 2;
    scene_make(&s, &r, 2500, 141, 105, deg);
    int w = s.cam.width, h = s.cam.height, n = s.n;
    size_t np = (size_t)w * h;
    sp_gaussians g;
    sp_gaussians_init(&g, n, deg);
    g.n = n;
    memcpy(g.means, s.means, (size_t)n * 12), memcpy(g.log_scales, s.log_scales, (size_t)n * 12);
    memcpy(g.quats, s.quats, (size_t)n * 16), memcpy(g.opacity_logits, s.logits, (size_t)n * 4);
    memcpy(g.sh, s.sh, (size_t)n * 12 * s.K);
    sp_backend_config cfg = {0, 0, 0, 0, splat};
    sp_backend *b = sp_cuda_backend_create(&cfg);
    assert_non_null(b);
    assert_int_equal(b->ops->set_gaussians(b, &g, NULL, NULL), 0);
    /* CPU forward */
    float bg[3] = {sp_rng_uniform(&r), sp_rng_uniform(&r), sp_rng_uniform(&r)};
    sp_proj proj;
    sp_proj_alloc(&proj, n);
    cpu_project(&s.p, &s.cam, deg, &proj);
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
        if (d > 1e-4) flips++;
        else e = fmax(e, d);
    }
    printf("INFO backend render: %d of %zu pixels differ by a threshold flip\n", flips, np);
    int ok = report(e <= 1e-4 && flips <= (int)(np / 1000), "backend", "render vs CPU", "max abs err", e, 1e-4);
    /* a training view: RGBA, straight alpha */
    sp_view v;
    memset(&v, 0, sizeof v);
    v.name = "parity_view";
    v.cam = s.cam;
    v.channels = 4;
    v.pixels = sp_malloc(np * 4);
    for (size_t i = 0; i < np * 4; i++) v.pixels[i] = (uint8_t)(sp_rng_u32(&r) & 255);
    float *target = sp_malloc(np * 3 * 4), *dl = sp_malloc(np * 3 * 4);
    for (size_t i = 0; i < np; i++) {
        float a = v.pixels[4 * i + 3] * (1.0f / 255.0f);
        for (int k = 0; k < 3; k++) target[3 * i + k] = v.pixels[4 * i + k] * (1.0f / 255.0f) * a + bg[k] * (1.0f - a);
    }
    double lc = cpu_loss(fwd.rgb, target, w, h, 0.2f, dl);
    sp_proj_grad pg;
    sp_proj_grad_alloc(&pg, n);
    sp_proj_grad_zero(&pg, n);
    cpu_backward_raster(&proj, &bins, &s.cam, bg, &fwd, dl, &pg);
    sp_gaussians cg;
    sp_gaussians_init(&cg, n, deg);
    cg.n = n;
    sp_gaussians_zero(&cg);
    sp_params_grad pgr = {n, s.K, cg.means, cg.log_scales, cg.quats, cg.opacity_logits, cg.sh};
    cpu_project_back(&s.p, &s.cam, deg, &proj, &pg, &pgr);
    /* GPU step */
    assert_int_equal(b->ops->upload_views(b, &v, 1, SP_ALPHA_STRAIGHT), 0);
    sp_step_args a;
    memset(&a, 0, sizeof a);
    a.view = 0, a.sh_degree = deg, a.ssim_weight = 0.2f, a.adam_step = 1;
    memcpy(a.bg, bg, sizeof bg);
    a.beta1 = 0.9f, a.beta2 = 0.999f, a.eps = 1e-15f;
    a.lr.means = a.lr.log_scales = a.lr.quats = a.lr.opacity = a.lr.sh_dc = a.lr.sh_rest = 1e-4f;
    assert_int_equal(b->ops->train_step(b, &a), 0);
    double lg = 0.0;
    int steps = 0;
    assert_int_equal(b->ops->take_loss(b, &lg, &steps), 0);
    assert_int_equal(steps, 1);
    double ev = fabs(lg - lc) / fmax(fabs(lc), 1e-12);
    ok &= report(ev <= 1e-5, "backend", "train_step loss", "rel err", ev, 1e-5);
    sp_gaussians gp, gm;
    memset(&gp, 0, sizeof gp), memset(&gm, 0, sizeof gm);
    assert_int_equal(b->ops->get_gaussians(b, &gp, &gm, NULL), 0);
    assert_int_equal(gm.n, n);
    struct {
        const char *name;
        float *m, *c;
        size_t cnt;
    } grp[] = {{"means", gm.means, cg.means, 3 * (size_t)n},
               {"log_scales", gm.log_scales, cg.log_scales, 3 * (size_t)n},
               {"quats", gm.quats, cg.quats, 4 * (size_t)n},
               {"opacity_logits", gm.opacity_logits, cg.opacity_logits, (size_t)n},
               {"sh", gm.sh, cg.sh, 3 * (size_t)s.K * n}};
    for (int k = 0; k < 5; k++) {
        for (size_t i = 0; i < grp[k].cnt; i++) grp[k].m[i] /= (1.0f - a.beta1);
        char what[64];
        snprintf(what, sizeof what, "train_step gradient %s", grp[k].name);
        double eg = rel_l2(grp[k].m, grp[k].c, grp[k].cnt);
        ok &= report(eg < 1e-3, "backend", what, "rel L2 err", eg, 1e-3);
    }
    b->ops->destroy(b);
    sp_gaussians_free(&g), sp_gaussians_free(&cg), sp_gaussians_free(&gp), sp_gaussians_free(&gm);
    sp_proj_grad_free(&pg);
    sp_raster_out_free(&fwd);
    sp_bins_free(&bins);
    sp_proj_free(&proj);
    free(img), free(target), free(dl), free(v.pixels);
    scene_free(&s);
    assert_true(ok);
}

static void test_backend_step(void **state) {
    (void)state;
    SKIP_WITHOUT_GPU();
    backend_step(0);
}

static void test_backend_step_splat(void **state) {
    (void)state;
    SKIP_WITHOUT_GPU();
    backend_step(1);
}

/* refine against cpu_refine on the same stores and statistics: identical counts and order; copied
 * values bit-identical, values through expf/logf/cosf (split offsets, decayed logits) within 1e-5. */
static double max_abs_diff(const float *a, const float *b, size_t n) {
    double e = 0.0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (!(d <= e)) e = isnan(d) ? INFINITY : d;
    }
    return e;
}

static void test_refine(void **state) {
    (void)state;
    SKIP_WITHOUT_GPU();
    sp_rng r = test_rng(9);
    int ok = 1;
    for (int run = 0; run < 2; run++) {
        int n = 3000, deg = 1;
        sp_gaussians g[2], m[2], v[2];
        sp_gaussians_init(&g[0], n, deg), sp_gaussians_init(&m[0], n, deg), sp_gaussians_init(&v[0], n, deg);
        g[0].n = m[0].n = v[0].n = n;
        tu_fill_uniform(&r, g[0].means, (size_t)n * 3, -1.0f, 1.0f);
        tu_fill_uniform(&r, g[0].log_scales, (size_t)n * 3, -4.0f, -1.0f);
        tu_fill_uniform(&r, g[0].quats, (size_t)n * 4, -1.0f, 1.0f);
        tu_fill_uniform(&r, g[0].opacity_logits, (size_t)n, -5.0f, 5.0f);
        tu_fill_uniform(&r, g[0].sh, (size_t)n * 3 * g[0].K, -1.0f, 1.0f);
        sp_gaussians *mv[2] = {&m[0], &v[0]};
        for (int k = 0; k < 2; k++) {
            tu_fill_uniform(&r, mv[k]->means, (size_t)n * 3, 0.0f, 1.0f);
            tu_fill_uniform(&r, mv[k]->log_scales, (size_t)n * 3, 0.0f, 1.0f);
            tu_fill_uniform(&r, mv[k]->quats, (size_t)n * 4, 0.0f, 1.0f);
            tu_fill_uniform(&r, mv[k]->opacity_logits, (size_t)n, 0.0f, 1.0f);
            tu_fill_uniform(&r, mv[k]->sh, (size_t)n * 3 * mv[k]->K, 0.0f, 1.0f);
        }
        sp_gaussians_clone(&g[1], &g[0]), sp_gaussians_clone(&m[1], &m[0]), sp_gaussians_clone(&v[1], &v[0]);
        sp_refine_stats st = {0};
        sp_refine_stats_reset(&st, n);
        for (int i = 0; i < n; i++) {
            st.grad_count[i] = (int32_t)(sp_rng_u32(&r) % 6);
            st.grad_accum[i] = 6e-4f * sp_rng_uniform(&r) * (float)st.grad_count[i];
            st.max_radius[i] = 80.0f * sp_rng_uniform(&r);
        }
        float *acc = sp_malloc((size_t)n * 4), *rad = sp_malloc((size_t)n * 4);
        int32_t *cnt = sp_malloc((size_t)n * 4);
        memcpy(acc, st.grad_accum, (size_t)n * 4), memcpy(cnt, st.grad_count, (size_t)n * 4);
        memcpy(rad, st.max_radius, (size_t)n * 4);
        sp_refine_args a;
        memset(&a, 0, sizeof a);
        a.densify = 1, a.grad_threshold = 2e-4f, a.clone_max_scale = 0.12f;
        a.split_count = run ? 3 : 2, a.split_shrink = 1.6f;
        a.prune_opacity = 0.05f, a.prune_world_scale = 0.3f, a.prune_screen_px = 70.0f;
        a.opacity_decay = run ? 0.0f : 0.01f, a.opacity_reset = run ? 0.3f : 0.0f;
        a.capacity = n + 250;
        a.seed = sp_rng_u32(&r);
        sp_refine_result rc, rg;
        assert_int_equal(cpu_refine(&g[0], &m[0], &v[0], &st, &a, &rc), 0);
        assert_int_equal(cuda_test_refine(&g[1], &m[1], &v[1], acc, cnt, rad, &a, &rg), 0);
        char what[96];
        snprintf(what, sizeof what, "counts (split_count %d): cpu %d->%d c%d s%d p%d, gpu %d->%d c%d s%d p%d",
                 a.split_count, rc.n_before, rc.n_after, rc.cloned, rc.split, rc.pruned, rg.n_before, rg.n_after,
                 rg.cloned, rg.split, rg.pruned);
        int same = !memcmp(&rc, &rg, sizeof rc) && g[1].n == g[0].n;
        ok &= report(same, "refine", what, "equal (1=yes)", same, 1);
        if (same) {
            size_t N = (size_t)g[0].n, K3 = 3 * (size_t)g[0].K;
            double eq = max_abs_diff(g[1].quats, g[0].quats, N * 4), esh = max_abs_diff(g[1].sh, g[0].sh, N * K3);
            double em = max_abs_diff(g[1].means, g[0].means, N * 3);
            double els = max_abs_diff(g[1].log_scales, g[0].log_scales, N * 3);
            double eo = max_abs_diff(g[1].opacity_logits, g[0].opacity_logits, N);
            double emom = 0.0;
            for (int k = 0; k < 2; k++) {
                sp_gaussians *c = k ? &v[0] : &m[0], *d = k ? &v[1] : &m[1];
                emom = fmax(emom, max_abs_diff(d->means, c->means, N * 3));
                emom = fmax(emom, max_abs_diff(d->log_scales, c->log_scales, N * 3));
                emom = fmax(emom, max_abs_diff(d->quats, c->quats, N * 4));
                emom = fmax(emom, max_abs_diff(d->opacity_logits, c->opacity_logits, N));
                emom = fmax(emom, max_abs_diff(d->sh, c->sh, N * K3));
            }
            ok &= report(eq == 0.0 && esh == 0.0 && emom == 0.0, "refine", "copied values and moments", "max abs err",
                         fmax(fmax(eq, esh), emom), 0.0);
            ok &= report(em <= 1e-5 && els <= 1e-6 && eo <= 1e-5, "refine", "means / log_scales / logits", "max abs err",
                         fmax(fmax(em, els), eo), 1e-5);
        }
        free(acc), free(rad), free(cnt);
        sp_refine_stats_free(&st);
        for (int k = 0; k < 2; k++) sp_gaussians_free(&g[k]), sp_gaussians_free(&m[k]), sp_gaussians_free(&v[k]);
    }
    assert_true(ok);
}

int main(void) {
    const char *e = getenv("SPLAT_TEST_SEED");
    g_seed = (e && *e) ? strtoull(e, NULL, 10) : (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 16);
    g_have_gpu = sp_cuda_device_count() > 0;
    if (!g_have_gpu) printf("no GPU: every CUDA parity test is skipped\n");
    else printf("parity seed %llu (SPLAT_TEST_SEED=%llu repeats this run)\n", (unsigned long long)g_seed,
                (unsigned long long)g_seed);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_project_math_on_host), cmocka_unit_test(test_project_back_math_on_host),
        cmocka_unit_test(test_project),  cmocka_unit_test(test_bins), cmocka_unit_test(test_rasterize),
        cmocka_unit_test(test_backward), cmocka_unit_test(test_project_back), cmocka_unit_test(test_loss),
        cmocka_unit_test(test_adam),     cmocka_unit_test(test_backend_step), cmocka_unit_test(test_backend_step_splat),
        cmocka_unit_test(test_refine),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
#else
int main(void) {
    printf("no GPU: built without CUDA, parity tests skipped\n");
    return 0;
}
#endif
