/* test_raster.c — the forward tile stages of the CPU backend: cpu_bin against a stable sort of the
 * 64-bit keys of docs/math.md, cpu_rasterize against a brute-force per-pixel loop, hand-checked
 * one-Gaussian cases (centre pixel, alpha clamp, early stop), visibility edge cases and
 * bit-identical results across runs and thread counts. */
#include <omp.h>

#include "testutil.h"

#include "stagetest.h"
#include "backend/tile_cull.h"

#define SP_REAL float
#define SP_SUFFIX f
#include "backend/ref/stage_math.h"
#undef SP_REAL
#undef SP_SUFFIX

/* ---- helpers ---- */

typedef struct {
    uint64_t key;
    uint32_t value, order;
} kv;

static int cmp_kv(const void *a, const void *b) {
    const kv *x = a, *y = b;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order; /* stable */
}

/* A straight-ahead camera (R = I, t = 0) whose pixel (w/2, h/2) centre lies on the optical axis. */
static void axis_camera(sp_camera *c, int w, int h, float f) {
    memset(c, 0, sizeof *c);
    c->width = w, c->height = h;
    c->fx = c->fy = f;
    c->cx = (float)(w / 2) + 0.5f;
    c->cy = (float)(h / 2) + 0.5f;
    c->R[0] = c->R[4] = c->R[8] = 1;
}

/* One-colour Gaussians on the optical axis at the given depths, isotropic scale. */
static void axis_scene(sp_gaussians *g, int n, const float *depth, float scale, float opacity, const float col[3]) {
    sp_gaussians_init(g, n, 0);
    g->n = n;
    for (int i = 0; i < n; i++) {
        g->means[3 * i + 2] = depth[i];
        for (int k = 0; k < 3; k++) g->log_scales[3 * i + k] = logf(scale);
        g->quats[4 * i] = 1;
        g->opacity_logits[i] = sp_logitf(opacity);
        for (int ch = 0; ch < 3; ch++) g->sh[3 * i + ch] = (col[ch] - 0.5f) / SP_SH_C0;
    }
}

static sp_params params_of(const sp_gaussians *g) {
    sp_params p = {g->n, g->K, g->means, g->log_scales, g->quats, g->opacity_logits, g->sh};
    return p;
}

/* Forward through project, bin and rasterize. */
typedef struct {
    sp_proj proj;
    sp_bins bins;
    sp_raster_out out;
} fwd;

static void run_forward(fwd *f, const sp_params *p, const sp_camera *cam, int degree, const float bg[3]) {
    memset(f, 0, sizeof *f);
    sp_proj_alloc(&f->proj, p->n);
    cpu_project(p, cam, degree, &f->proj);
    cpu_bin(&f->proj, p->n, cam, &f->bins);
    sp_raster_out_alloc(&f->out, cam->width, cam->height);
    cpu_rasterize(&f->proj, &f->bins, cam, bg, &f->out);
}

static void free_forward(fwd *f) {
    sp_proj_free(&f->proj);
    sp_bins_free(&f->bins);
    sp_raster_out_free(&f->out);
}

/* A larger random scene: st_scene_make, plus some Gaussians behind the camera and exact depth ties. */
static void big_scene(st_scene *s, uint64_t seed, int n, int w, int h) {
    st_scene_make(s, seed, n, 2, w, h);
    for (int i = 5; i + 1 < n; i += 23) { /* an exact copy: same depth, same key */
        memcpy(s->means + 3 * (i + 1), s->means + 3 * i, 3 * sizeof(float));
        memcpy(s->log_scales + 3 * (i + 1), s->log_scales + 3 * i, 3 * sizeof(float));
    }
    float C[3];
    sp_camera_center(&s->cam, C);
    for (int i = 0; i < n; i += 17) /* mirrored through the camera centre: behind it */
        for (int k = 0; k < 3; k++) s->means[3 * i + k] = 2 * C[k] - s->means[3 * i + k];
    st_sync_double(s);
}

/* ---- emit_pairs + sort + tile_ranges ---- */

/* Brute-force reference for the tile test: some pixel centre of tile (x, y) has alpha >= 1/255
 * (before the 0.99 clamp), i.e. q <= 2 ln(255 sigma), evaluated in double. The culled lists must
 * keep every such tile (they may keep a few more: the test is over the square of pixel centres). */
static int reaches_brute(const sp_proj *p, int i, int x, int y) {
    const float *m = p->mean2d + 2 * i, *c = p->conic + 3 * i;
    double tau = 2.0 * log(255.0 * p->opacity[i]);
    for (int py = 0; py < 16; py++)
        for (int px = 0; px < 16; px++) {
            double dx = x * 16 + px + 0.5 - m[0], dy = y * 16 + py + 0.5 - m[1];
            if (c[0] * dx * dx + 2.0 * c[1] * dx * dy + c[2] * dy * dy <= tau * (1.0 - 1e-6)) return 1;
        }
    return 0;
}

static int reaches(const sp_proj *p, int i, int x, int y) {
    sp_tile_ellipse_t e = sp_tile_ellipse(p->mean2d[2 * i], p->mean2d[2 * i + 1], p->conic[3 * i],
                                          p->conic[3 * i + 1], p->conic[3 * i + 2], p->opacity[i]);
    return sp_tile_hit(&e, x, y);
}

static void test_tile_cull_keeps_every_reached_tile(void **state) {
    (void)state;
    st_scene s;
    big_scene(&s, 3, 1500, 120, 90);
    sp_params p = st_params(&s);
    fwd f;
    run_forward(&f, &p, &s.cam, s.degree, s.bg);
    int64_t box = 0, kept = 0, needed = 0;
    for (int i = 0; i < s.n; i++) {
        const int32_t *r = f.proj.rect + 4 * i;
        if (!(r[0] < r[2] && r[1] < r[3])) continue;
        for (int y = r[1]; y < r[3]; y++)
            for (int x = r[0]; x < r[2]; x++) {
                int k = reaches(&f.proj, i, x, y), b = reaches_brute(&f.proj, i, x, y);
                box++, kept += k, needed += b;
                if (b && !k) fail_msg("Gaussian %d reaches tile (%d, %d) but was culled", i, x, y);
            }
    }
    printf("tile cull: %lld rect tiles, %lld kept, %lld reached by a pixel centre\n", (long long)box,
           (long long)kept, (long long)needed);
    assert_true(kept < box);
    free_forward(&f);
    st_scene_free(&s);
}

/* The depth key (tile_cull.h): its low SP_DEPTH_KEY_DROP bits zero; never decreasing with the
 * depth from the near plane on; depths 2^-18 apart (relative) always distinct, 2^-21 apart mostly
 * tied. */
static void test_depth_key(void **state) {
    (void)state;
    unsigned prev = 0;
    int tied = 0, steps = 0;
    for (double d = 0.2; d < 1e9; d *= 1.0 + 1.0 / 4096, steps++) {
        float a = (float)d;
        unsigned k = sp_depth_key(a);
        assert_int_equal(k & ((1u << SP_DEPTH_KEY_DROP) - 1u), 0);
        assert_true(k >= prev);
        prev = k;
        assert_true(sp_depth_key(a * (1.0f + 1.0f / 262144)) > k);
        tied += sp_depth_key(a * (1.0f + 1.0f / 2097152)) == k;
    }
    assert_true(tied > steps / 2);
}

static void test_bin_equals_stable_key_sort(void **state) {
    (void)state;
    st_scene s;
    big_scene(&s, 1, 2000, 100, 70);
    sp_params p = st_params(&s);
    fwd f;
    run_forward(&f, &p, &s.cam, s.degree, s.bg);
    int tx = (s.cam.width + 15) / 16, ty = (s.cam.height + 15) / 16;
    assert_int_equal(f.bins.tiles_x, tx);
    assert_int_equal(f.bins.tiles_y, ty);

    /* the keys of docs/math.md in emission order, sorted stably */
    int64_t np = 0, box = 0;
    for (int i = 0; i < s.n; i++) {
        const int32_t *r = f.proj.rect + 4 * i;
        if (!(r[0] < r[2] && r[1] < r[3])) continue;
        box += (int64_t)(r[2] - r[0]) * (r[3] - r[1]);
        for (int y = r[1]; y < r[3]; y++)
            for (int x = r[0]; x < r[2]; x++) np += reaches(&f.proj, i, x, y);
    }
    assert_int_equal(f.bins.num_pairs, np);
    assert_true(np < box); /* some rect tiles are culled */
    int64_t longest = 0;
    for (int t = 0; t < tx * ty; t++) longest = sp_maxi(longest, f.bins.range[2 * t + 1] - f.bins.range[2 * t]);
    assert_true(longest > 100); /* long lists: the radix path of the sort is used */
    kv *keys = SP_NEW(kv, np);
    int64_t k = 0;
    for (int i = 0; i < s.n; i++) {
        const int32_t *r = f.proj.rect + 4 * i;
        for (int y = r[1]; y < r[3]; y++)
            for (int x = r[0]; x < r[2]; x++) {
                if (!reaches(&f.proj, i, x, y)) continue;
                uint32_t db = sp_depth_key(f.proj.depth[i]); /* the float's bits but the low 12 */
                keys[k] = (kv){((uint64_t)(y * tx + x) << 32) | db, (uint32_t)i, (uint32_t)k};
                k++;
            }
    }
    qsort(keys, np, sizeof *keys, cmp_kv);
    for (int64_t j = 0; j < np; j++)
        if (keys[j].value != f.bins.ids[j]) fail_msg("pair %ld: id %u, expected %u", (long)j, f.bins.ids[j], keys[j].value);
    /* ranges: start/end of each tile's run */
    for (int t = 0; t < tx * ty; t++) {
        int64_t st = 0;
        while (st < np && (int)(keys[st].key >> 32) < t) st++;
        int64_t en = st;
        while (en < np && (int)(keys[en].key >> 32) == t) en++;
        assert_int_equal(f.bins.range[2 * t], st);
        assert_int_equal(f.bins.range[2 * t + 1], en);
    }
    /* invisible Gaussians emit nothing */
    for (int i = 0; i < s.n; i += 17) {
        const int32_t *r = f.proj.rect + 4 * i;
        assert_true(r[0] == 0 && r[1] == 0 && r[2] == 0 && r[3] == 0);
        assert_true(f.proj.radius[i] == 0);
    }
    /* rebinning a smaller set reuses the buffer */
    int64_t cap = f.bins.cap;
    cpu_bin(&f.proj, s.n / 2, &s.cam, &f.bins);
    assert_true(f.bins.num_pairs < np);
    assert_int_equal(f.bins.cap, cap);
    free(keys);
    free_forward(&f);
    st_scene_free(&s);
}

/* ---- rasterize ---- */

static const sp_proj *cmp_proj;
static int cmp_depth_index(const void *a, const void *b) {
    int i = *(const int *)a, j = *(const int *)b;
    unsigned di = sp_depth_key(cmp_proj->depth[i]), dj = sp_depth_key(cmp_proj->depth[j]); /* docs/math.md */
    if (di != dj) return di < dj ? -1 : 1;
    return i - j;
}

/* Brute force: every pixel composites, in (depth key, index) order, all Gaussians whose tile rect
 * contains its tile and that reach it (use_rect) or all visible Gaussians (!use_rect). Written independently of
 * stage_math.h from the text of docs/math.md. */
static void brute_force(const sp_proj *p, int n, const sp_camera *cam, const float bg[3], int use_rect, float *rgb,
                        float *final_T, int32_t *nc) {
    int W = cam->width, H = cam->height, *order = SP_NEW(int, n + 1), *list = SP_NEW(int, n + 1), m = 0;
    for (int i = 0; i < n; i++)
        if (p->rect[4 * i] < p->rect[4 * i + 2]) order[m++] = i;
    cmp_proj = p;
    qsort(order, m, sizeof(int), cmp_depth_index);
    for (int py = 0; py < H; py++)
        for (int px = 0; px < W; px++) {
            int l = 0;
            for (int k = 0; k < m; k++) {
                const int32_t *r = p->rect + 4 * order[k];
                if (!use_rect || (px / 16 >= r[0] && px / 16 < r[2] && py / 16 >= r[1] && py / 16 < r[3] &&
                                  reaches(p, order[k], px / 16, py / 16)))
                    list[l++] = order[k];
            }
            float T = 1, C[3] = {0, 0, 0};
            int last = 0;
            for (int j = 0; j < l; j++) {
                int i = list[j];
                float dx = p->mean2d[2 * i] - (px + 0.5f), dy = p->mean2d[2 * i + 1] - (py + 0.5f);
                float a = p->conic[3 * i], b = p->conic[3 * i + 1], c = p->conic[3 * i + 2];
                float power = -0.5f * (a * dx * dx + c * dy * dy) - b * dx * dy;
                if (power > 0) continue;
                float alpha = p->opacity[i] * expf(power);
                if (alpha > 0.99f) alpha = 0.99f;
                if (alpha < 1.0f / 255.0f) continue;
                float Tn = T * (1 - alpha);
                if (Tn < 1e-4f) break;
                for (int ch = 0; ch < 3; ch++) C[ch] += p->color[3 * i + ch] * (alpha * T);
                T = Tn;
                last = j + 1;
            }
            size_t pix = (size_t)py * W + px;
            for (int ch = 0; ch < 3; ch++) rgb[3 * pix + ch] = C[ch] + T * bg[ch];
            final_T[pix] = T;
            nc[pix] = last;
        }
    free(order);
    free(list);
}

static void test_rasterize_equals_brute_force(void **state) {
    (void)state;
    st_scene s;
    big_scene(&s, 2, 300, 70, 50);
    for (int i = 0; i < s.n; i += 11) s.logits[i] = 6; /* some alpha clamps and early stops */
    st_sync_double(&s);
    sp_params p = st_params(&s);
    fwd f;
    run_forward(&f, &p, &s.cam, s.degree, s.bg);
    int W = s.cam.width, H = s.cam.height;
    size_t px = (size_t)W * H;
    float *rgb = SP_NEW(float, 3 * px), *T = SP_NEW(float, px);
    int32_t *nc = SP_NEW(int32_t, px);

    brute_force(&f.proj, s.n, &s.cam, s.bg, 1, rgb, T, nc);
    assert_memory_equal(rgb, f.out.rgb, 3 * px * sizeof(float));
    assert_memory_equal(T, f.out.final_T, px * sizeof(float));
    assert_memory_equal(nc, f.out.n_contrib, px * sizeof(int32_t));
    int stopped = 0;
    for (size_t i = 0; i < px; i++) stopped += f.out.final_T[i] < 1e-3f;
    assert_true(stopped > 0);

    /* without tile rects or culling: both only drop contributions below 1/255, so the images agree */
    brute_force(&f.proj, s.n, &s.cam, s.bg, 0, rgb, T, nc);
    for (size_t i = 0; i < 3 * px; i++) assert_float_equal(rgb[i], f.out.rgb[i], 1e-5);
    free(rgb), free(T), free(nc);
    free_forward(&f);
    st_scene_free(&s);
}

/* backward_raster (tile at a time, splat-major) equals the per-pixel form of docs/math.md run
 * pixel by pixel, summed per tile in row-major pixel order and then over each Gaussian's tiles in
 * row-major order: bit for bit. */
static void test_backward_equals_per_pixel(void **state) {
    (void)state;
    st_scene s;
    big_scene(&s, 4, 600, 70, 50);
    for (int i = 0; i < s.n; i += 7) s.logits[i] = 6; /* alpha clamps and early stops */
    sp_params p = st_params(&s);
    fwd f;
    run_forward(&f, &p, &s.cam, s.degree, s.bg);
    int n = s.n, W = s.cam.width, H = s.cam.height, tx = f.bins.tiles_x;
    float *dl = SP_NEW(float, (size_t)W * H * 3);
    for (int i = 0; i < W * H * 3; i++) dl[i] = (float)s.w[i];
    sp_proj_grad pg;
    sp_proj_grad_alloc(&pg, n);
    sp_proj_grad_zero(&pg, n);
    cpu_backward_raster(&f.proj, &f.bins, &s.cam, s.bg, &f.out, dl, &pg);

    sp_msplat_f *total = SP_NEW(sp_msplat_f, n), *buf = SP_NEW(sp_msplat_f, n), *acc = SP_NEW(sp_msplat_f, n);
    int clamped = 0;
    for (int t = 0; t < tx * f.bins.tiles_y; t++) {
        uint32_t s0 = f.bins.range[2 * t], m = f.bins.range[2 * t + 1] - s0;
        for (uint32_t j = 0; j < m; j++) {
            uint32_t id = f.bins.ids[s0 + j];
            buf[j] = (sp_msplat_f){f.proj.mean2d[2 * id], f.proj.mean2d[2 * id + 1], f.proj.conic[3 * id],
                                   f.proj.conic[3 * id + 1], f.proj.conic[3 * id + 2], f.proj.opacity[id],
                                   {f.proj.color[3 * id], f.proj.color[3 * id + 1], f.proj.color[3 * id + 2]},
                                   sp_m_splat_pmin_f(f.proj.opacity[id])};
            clamped += f.proj.opacity[id] > 0.99f;
        }
        memset(acc, 0, sizeof(sp_msplat_f) * n);
        for (int py = (t / tx) * 16; py < sp_mini((t / tx) * 16 + 16, H); py++)
            for (int px = (t % tx) * 16; px < sp_mini((t % tx) * 16 + 16, W); px++) {
                size_t pix = (size_t)py * W + px;
                sp_m_raster_pixel_back_f(buf, f.out.n_contrib[pix], px, py, s.bg, f.out.final_T[pix], dl + 3 * pix, acc);
            }
        for (uint32_t j = 0; j < m; j++) {
            float *dst = (float *)&total[f.bins.ids[s0 + j]];
            const float *src = (const float *)&acc[j];
            for (int k = 0; k < 9; k++) dst[k] += src[k];
        }
    }
    assert_true(clamped > 0);
    for (int i = 0; i < n; i++) {
        const sp_msplat_f *e = &total[i];
        float want[9] = {e->x, e->y, e->a, e->b, e->c, e->op, e->col[0], e->col[1], e->col[2]};
        float got[9] = {pg.mean2d[2 * i], pg.mean2d[2 * i + 1], pg.conic[3 * i], pg.conic[3 * i + 1], pg.conic[3 * i + 2],
                        pg.opacity[i], pg.color[3 * i], pg.color[3 * i + 1], pg.color[3 * i + 2]};
        for (int k = 0; k < 9; k++)
            if (memcmp(&want[k], &got[k], sizeof(float)))
                fail_msg("Gaussian %d quantity %d: %.9g, per-pixel form %.9g", i, k, got[k], want[k]);
    }
    free(total), free(buf), free(acc), free(dl);
    sp_proj_grad_free(&pg);
    free_forward(&f);
    st_scene_free(&s);
}

/* One Gaussian centred on a pixel centre: rgb = c sigma + (1 - sigma) bg there. */
static void test_one_gaussian_by_hand(void **state) {
    (void)state;
    sp_camera cam;
    axis_camera(&cam, 33, 25, 20);
    sp_gaussians g;
    float depth = 5, col[3] = {0.8f, 0.3f, 0.6f}, bg[3] = {0.1f, 0.2f, 0.9f}, sigma = 0.7f;
    axis_scene(&g, 1, &depth, 0.25f, sigma, col);
    sp_params p = params_of(&g);
    fwd f;
    run_forward(&f, &p, &cam, 0, bg);
    assert_float_equal(f.proj.mean2d[0], 16.5f, 1e-6);
    assert_float_equal(f.proj.mean2d[1], 12.5f, 1e-6);
    assert_float_equal(f.proj.depth[0], 5, 0);
    assert_float_equal(f.proj.opacity[0], sigma, 1e-6);
    /* 2D covariance: (f s / z)^2 + 0.3 = 1 + 0.3 on both axes */
    assert_float_equal(f.proj.conic[0], 1 / 1.3, 1e-6);
    assert_float_equal(f.proj.conic[1], 0, 1e-7);
    assert_float_equal(f.proj.conic[2], 1 / 1.3, 1e-6);
    float ex = sqrtf(2 * logf(255 * sigma) * 1.3f);
    assert_float_equal(f.proj.radius[0], ex, 1e-5);
    assert_int_equal(f.proj.rect[0], (int)floorf((16.5f - ex) / 16));
    assert_int_equal(f.proj.rect[2], (int)floorf((16.5f + ex) / 16) + 1);
    for (int ch = 0; ch < 3; ch++) assert_float_equal(f.proj.color[3 * 0 + ch], col[ch], 1e-6);
    size_t c = 12 * 33 + 16;
    for (int ch = 0; ch < 3; ch++) assert_float_equal(f.out.rgb[3 * c + ch], col[ch] * sigma + (1 - sigma) * bg[ch], 1e-6);
    assert_float_equal(f.out.final_T[c], 1 - sigma, 1e-6);
    assert_int_equal(f.out.n_contrib[c], 1);
    /* a corner pixel sees only the background */
    for (int ch = 0; ch < 3; ch++) assert_float_equal(f.out.rgb[ch], bg[ch], 0);
    assert_int_equal(f.out.n_contrib[0], 0);
    assert_float_equal(f.out.final_T[0], 1, 0);
    free_forward(&f);
    sp_gaussians_free(&g);
}

/* Opacity above 0.99: alpha is clamped; gradients pass straight through the clamp (the 3DGS
 * convention), so the centre pixel still moves the opacity. */
static void test_alpha_clamp(void **state) {
    (void)state;
    sp_camera cam;
    axis_camera(&cam, 33, 25, 20);
    sp_gaussians g;
    float depth = 5, col[3] = {0.8f, 0.3f, 0.6f}, bg[3] = {0.1f, 0.2f, 0.9f};
    axis_scene(&g, 1, &depth, 0.25f, 0.999f, col);
    sp_params p = params_of(&g);
    fwd f;
    run_forward(&f, &p, &cam, 0, bg);
    size_t c = 12 * 33 + 16;
    for (int ch = 0; ch < 3; ch++) assert_float_equal(f.out.rgb[3 * c + ch], 0.99f * f.proj.color[ch] + 0.01f * bg[ch], 1e-6);
    /* gradient of the centre pixel only */
    float *dl = SP_NEW(float, 33 * 25 * 3);
    dl[3 * c] = 1, dl[3 * c + 1] = -2, dl[3 * c + 2] = 0.5f;
    sp_proj_grad pg;
    sp_proj_grad_alloc(&pg, 1);
    sp_proj_grad_zero(&pg, 1);
    cpu_backward_raster(&f.proj, &f.bins, &cam, bg, &f.out, dl, &pg);
    /* dalpha = sum_ch G (c - B / (1 - alpha)) with B = 0.01 bg: sum_ch G (c - bg); e^power = 1 */
    double want = 0;
    for (int ch = 0; ch < 3; ch++) want += dl[3 * c + ch] * (f.proj.color[ch] - bg[ch]);
    assert_float_equal(pg.opacity[0], want, 1e-5);
    assert_true(pg.mean2d[0] == 0 && pg.mean2d[1] == 0 && pg.conic[0] == 0); /* the centre: dx = dy = 0 */
    assert_float_equal(pg.color[0], 0.99, 1e-6);
    assert_float_equal(pg.color[1], -2 * 0.99, 1e-6);
    free(dl);
    sp_proj_grad_free(&pg);
    free_forward(&f);
    sp_gaussians_free(&g);
}

/* Four stacked Gaussians of alpha 0.95 at the centre: T = 0.05, 0.0025, 0.000125, then the fourth
 * would take T below 1e-4 and is not blended. */
static void test_early_stop(void **state) {
    (void)state;
    sp_camera cam;
    axis_camera(&cam, 33, 25, 20);
    sp_gaussians g;
    float depth[4] = {5, 6, 7, 8}, col[3] = {0.5f, 0.5f, 0.5f}, bg[3] = {1, 1, 1};
    axis_scene(&g, 4, depth, 0.25f, 0.95f, col);
    g.sh[3 * 3] = (1.0f - 0.5f) / SP_SH_C0; /* the hidden one is red-ish: must not show */
    sp_params p = params_of(&g);
    fwd f;
    run_forward(&f, &p, &cam, 0, bg);
    size_t c = 12 * 33 + 16;
    assert_int_equal(f.out.n_contrib[c], 3);
    assert_float_equal(f.out.final_T[c], 0.05f * 0.05f * 0.05f, 1e-9);
    double expect = 0.5 * (1 - 0.000125) + 0.000125;
    for (int ch = 0; ch < 3; ch++) assert_float_equal(f.out.rgb[3 * c + ch], expect, 1e-6);
    /* the stopped Gaussian gets no gradient from that pixel */
    float *dl = SP_NEW(float, 33 * 25 * 3);
    dl[3 * c] = 1;
    sp_proj_grad pg;
    sp_proj_grad_alloc(&pg, 4);
    sp_proj_grad_zero(&pg, 4);
    cpu_backward_raster(&f.proj, &f.bins, &cam, bg, &f.out, dl, &pg);
    assert_true(pg.opacity[3] == 0 && pg.color[9] == 0);
    assert_true(pg.opacity[0] != 0 && pg.color[6] != 0);
    free(dl);
    sp_proj_grad_free(&pg);
    free_forward(&f);
    sp_gaussians_free(&g);
}

/* Nothing visible: empty scenes, behind the camera, too transparent, zero quaternion, NaN. */
static void test_invisible(void **state) {
    (void)state;
    sp_camera cam;
    axis_camera(&cam, 20, 10, 20);
    float bg[3] = {0.3f, 0.4f, 0.5f}, col[3] = {1, 0, 0};
    float depth[5] = {-5, 0.1f, 5, 5, 5};
    sp_gaussians g;
    axis_scene(&g, 5, depth, 0.3f, 0.5f, col);
    g.opacity_logits[2] = sp_logitf(0.003f); /* below 1/255 */
    memset(g.quats + 4 * 3, 0, 4 * sizeof(float));
    g.means[3 * 4] = NAN;
    sp_params p = params_of(&g);
    for (int n = 0; n <= 5; n += 5) {
        p.n = n;
        fwd f;
        run_forward(&f, &p, &cam, 0, bg);
        assert_int_equal(f.bins.num_pairs, 0);
        for (int i = 0; i < n; i++) {
            assert_true(f.proj.rect[4 * i + 2] == 0 && f.proj.radius[i] == 0 && f.proj.opacity[i] == 0);
            assert_true(f.proj.depth[i] == 0);
        }
        for (int i = 0; i < 20 * 10; i++) {
            for (int ch = 0; ch < 3; ch++) assert_float_equal(f.out.rgb[3 * i + ch], bg[ch], 0);
            assert_int_equal(f.out.n_contrib[i], 0);
        }
        /* backward of an empty image and project_back of invisible Gaussians: zero gradients */
        float *dl = SP_NEW(float, 20 * 10 * 3);
        for (int i = 0; i < 600; i++) dl[i] = 1;
        sp_proj_grad pg;
        sp_proj_grad_alloc(&pg, n);
        sp_proj_grad_zero(&pg, n);
        cpu_backward_raster(&f.proj, &f.bins, &cam, bg, &f.out, dl, &pg);
        for (int i = 0; i < n; i++) pg.opacity[i] = 1, pg.mean2d[2 * i] = 1; /* would move them if visible */
        sp_gaussians gr;
        sp_gaussians_init(&gr, 5, 0);
        sp_params_grad out = {n, 1, gr.means, gr.log_scales, gr.quats, gr.opacity_logits, gr.sh};
        cpu_project_back(&p, &cam, 0, &f.proj, &pg, &out);
        for (int i = 0; i < n; i++) assert_true(gr.opacity_logits[i] == 0 && gr.means[3 * i] == 0);
        sp_gaussians_free(&gr);
        sp_proj_grad_free(&pg);
        free(dl);
        free_forward(&f);
    }
    sp_gaussians_free(&g);
}

/* ---- determinism ---- */

typedef struct {
    float *rgb, *grad;
    size_t nrgb, ngrad;
} run_result;

static void full_step(st_scene *s, run_result *r) {
    sp_params p = st_params(s);
    fwd f;
    run_forward(&f, &p, &s->cam, s->degree, s->bg);
    int n = s->n, W = s->cam.width, H = s->cam.height;
    float *dl = SP_NEW(float, (size_t)W * H * 3);
    for (int i = 0; i < W * H * 3; i++) dl[i] = (float)s->w[i];
    sp_proj_grad pg;
    sp_proj_grad_alloc(&pg, n);
    sp_proj_grad_zero(&pg, n);
    cpu_backward_raster(&f.proj, &f.bins, &s->cam, s->bg, &f.out, dl, &pg);
    sp_gaussians gr;
    sp_gaussians_init(&gr, n, 3);
    gr.n = n;
    sp_params_grad out = {n, s->K, gr.means, gr.log_scales, gr.quats, gr.opacity_logits, gr.sh};
    cpu_project_back(&p, &s->cam, s->degree, &f.proj, &pg, &out);
    r->nrgb = (size_t)W * H * 3;
    r->rgb = SP_NEW(float, r->nrgb);
    memcpy(r->rgb, f.out.rgb, r->nrgb * sizeof(float));
    r->ngrad = (size_t)n * sp_gaussian_floats(s->K);
    r->grad = SP_NEW(float, r->ngrad);
    float *o = r->grad;
    memcpy(o, gr.means, 3 * n * sizeof(float)), o += 3 * n;
    memcpy(o, gr.log_scales, 3 * n * sizeof(float)), o += 3 * n;
    memcpy(o, gr.quats, 4 * n * sizeof(float)), o += 4 * n;
    memcpy(o, gr.opacity_logits, n * sizeof(float)), o += n;
    memcpy(o, gr.sh, (size_t)n * s->K * 3 * sizeof(float));
    sp_gaussians_free(&gr);
    sp_proj_grad_free(&pg);
    free(dl);
    free_forward(&f);
}

static void test_deterministic(void **state) {
    (void)state;
    st_scene s;
    big_scene(&s, 3, 3000, 96, 64);
    int threads = omp_get_max_threads();
    run_result a, b, c;
    omp_set_num_threads(2);
    full_step(&s, &a);
    full_step(&s, &b);
    omp_set_num_threads(1);
    full_step(&s, &c);
    omp_set_num_threads(threads);
    assert_memory_equal(a.rgb, b.rgb, a.nrgb * sizeof(float));
    assert_memory_equal(a.grad, b.grad, a.ngrad * sizeof(float));
    assert_memory_equal(a.rgb, c.rgb, a.nrgb * sizeof(float));
    assert_memory_equal(a.grad, c.grad, a.ngrad * sizeof(float));
    double gsum = 0;
    for (size_t i = 0; i < a.ngrad; i++) gsum += fabs(a.grad[i]);
    assert_true(gsum > 0);
    free(a.rgb), free(a.grad), free(b.rgb), free(b.grad), free(c.rgb), free(c.grad);
    st_scene_free(&s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_depth_key), cmocka_unit_test(test_bin_equals_stable_key_sort), cmocka_unit_test(test_tile_cull_keeps_every_reached_tile),
        cmocka_unit_test(test_rasterize_equals_brute_force),
        cmocka_unit_test(test_backward_equals_per_pixel),
        cmocka_unit_test(test_one_gaussian_by_hand),
        cmocka_unit_test(test_alpha_clamp),
        cmocka_unit_test(test_early_stop),
        cmocka_unit_test(test_invisible),
        cmocka_unit_test(test_deterministic),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
