/* test_export.c — .splat and .spz export (and renders of .sog; test_sog.c has the rest): each
 * written file is read back by an independent reader written here from the formats'
 * descriptions (export.h) and every field is checked within the format's quantization step;
 * the library's importers round-trip; the spz axis change keeps every SH colour; renders of
 * re-imported models match the original's; broken files give errors that name the file. */
#include "testutil.h"

#include <math.h>
#include <zlib.h>

#include "backend/backend.h"
#include "backend/ref/stages.h"
#include "eval/metrics.h"
#include "io/export.h"
#include "io/image.h"
#include "io/ply.h"

static void random_gaussians(sp_gaussians *g, int n, int degree, uint64_t seed, float rest_range) {
    sp_rng r;
    sp_rng_seed(&r, seed, 11);
    sp_gaussians_init(g, n, degree);
    g->n = n;
    tu_fill_uniform(&r, g->means, 3 * (size_t)n, -3, 3);
    tu_fill_uniform(&r, g->log_scales, 3 * (size_t)n, -8, 1);
    tu_fill_uniform(&r, g->quats, 4 * (size_t)n, -1, 1);
    tu_fill_uniform(&r, g->opacity_logits, (size_t)n, -6, 6);
    for (int i = 0; i < n; i++)
        for (int k = 0; k < g->K; k++)
            for (int c = 0; c < 3; c++)
                g->sh[((size_t)i * g->K + k) * 3 + c] = k == 0 ? -1.6f + 3.2f * sp_rng_uniform(&r)
                                                               : rest_range * (2 * sp_rng_uniform(&r) - 1);
}

static void unit_quat(const float *q, float out[4]) {
    float n = sqrtf(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
    for (int k = 0; k < 4; k++) out[k] = q[k] / n;
}

static float le_f32(const uint8_t *p) {
    uint32_t u = p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

/* ---- .splat, read independently ---- */
static void test_splat_fields(void **state) {
    (void)state;
    char *d = tu_tmpdir();
    char *p = sp_path_join(d, "m.splat");
    sp_gaussians g;
    random_gaussians(&g, 700, 3, 1, 0.5f);
    assert_int_equal(sp_splat_write(p, &g), 0);

    char *data;
    size_t size;
    assert_int_equal(sp_read_file(p, &data, &size), 0);
    assert_int_equal(size, 32 * (size_t)g.n);
    const uint8_t *b = (const uint8_t *)data;
    int *seen = SP_NEW(int, g.n);
    float prev_key = INFINITY;
    for (int r = 0; r < g.n; r++) {
        const uint8_t *rec = b + 32 * (size_t)r;
        float pos[3] = {le_f32(rec), le_f32(rec + 4), le_f32(rec + 8)};
        int i = -1; /* positions are stored exactly: find the Gaussian */
        for (int j = 0; j < g.n && i < 0; j++)
            if (!memcmp(pos, g.means + 3 * (size_t)j, sizeof pos)) i = j;
        assert_true(i >= 0);
        assert_false(seen[i]);
        seen[i] = 1;
        const float *ls = g.log_scales + 3 * (size_t)i;
        for (int k = 0; k < 3; k++) assert_true(fabsf(le_f32(rec + 12 + 4 * k) / expf(ls[k]) - 1) < 1e-6f);
        for (int c = 0; c < 3; c++) {
            float want = 255 * (0.5f + SP_SH_C0 * g.sh[(size_t)i * g.K * 3 + c]);
            want = want < 0 ? 0 : want > 255 ? 255 : want;
            assert_true(fabsf(rec[24 + c] - want) <= 0.5f + 1e-3f);
        }
        assert_true(fabsf(rec[27] - 255 * sigmoid(g.opacity_logits[i])) <= 0.5f + 1e-3f);
        float q[4];
        unit_quat(g.quats + 4 * (size_t)i, q); /* w, x, y, z */
        for (int k = 0; k < 4; k++) {
            float dec = (rec[28 + k] - 128) / 128.0f;
            float tol = q[k] * 128 + 128 > 255 ? 1.0f / 128 : 0.5f / 128;
            assert_true(fabsf(dec - q[k]) <= tol + 1e-5f);
        }
        /* largest volume x opacity first */
        float key = expf(ls[0] + ls[1] + ls[2]) * sigmoid(g.opacity_logits[i]);
        assert_true(key <= prev_key);
        prev_key = key;
    }
    free(seen);
    free(data);

    /* the library's importer: degree 0, every field within the same steps */
    sp_gaussians h;
    assert_int_equal(sp_model_read(p, &h), 0);
    assert_int_equal(h.n, g.n);
    assert_int_equal(h.sh_degree, 0);
    for (int r = 0; r < h.n; r++) {
        int i = -1;
        for (int j = 0; j < g.n && i < 0; j++)
            if (!memcmp(h.means + 3 * (size_t)r, g.means + 3 * (size_t)j, 12)) i = j;
        assert_true(i >= 0);
        for (int k = 0; k < 3; k++) assert_true(fabsf(h.log_scales[3 * r + k] - g.log_scales[3 * i + k]) < 1e-5f);
        assert_true(fabsf(sigmoid(h.opacity_logits[r]) - sigmoid(g.opacity_logits[i])) <= 0.5f / 255 + 1e-4f);
        for (int c = 0; c < 3; c++) {
            float col = 0.5f + SP_SH_C0 * g.sh[(size_t)i * g.K * 3 + c];
            col = col < 0 ? 0 : col > 1 ? 1 : col;
            assert_true(fabsf(0.5f + SP_SH_C0 * h.sh[3 * r + c] - col) <= 0.5f / 255 + 1e-4f);
        }
        float q[4];
        unit_quat(g.quats + 4 * (size_t)i, q);
        float dot = 0;
        for (int k = 0; k < 4; k++) dot += q[k] * h.quats[4 * r + k];
        assert_true(fabsf(dot) > 0.9995f);
    }
    sp_gaussians_free(&h);
    sp_gaussians_free(&g);
    free(p);
    tu_rm_rf(d);
}

/* ---- .spz, read independently (gzip through zlib's gz* API, streams decoded here) ---- */
static const float SH_SIGN[16] = {1, -1, -1, 1, -1, 1, 1, -1, 1, -1, 1, -1, -1, 1, -1, 1};

static uint8_t *gunzip_all(const char *path, size_t *n) {
    gzFile f = gzopen(path, "rb");
    assert_non_null(f);
    size_t cap = 1 << 20, len = 0;
    uint8_t *buf = malloc(cap);
    int got;
    while ((got = gzread(f, buf + len, (unsigned)(cap - len))) > 0) {
        len += (size_t)got;
        if (len == cap) buf = realloc(buf, cap *= 2);
    }
    assert_true(got == 0);
    gzclose(f);
    *n = len;
    return buf;
}

static void test_spz_fields(void **state) {
    (void)state;
    char *d = tu_tmpdir();
    char *p = sp_path_join(d, "m.spz");
    for (int deg = 0; deg <= 3; deg++) {
        sp_gaussians g;
        random_gaussians(&g, 600, deg, 20 + deg, 0.9f);
        sp_spz_options rub = {.version = 3, .axes = SP_SPZ_AXES_RUB}; /* the spec's axes, gzip */
        assert_int_equal(sp_spz_write_opts(p, &g, &rub), 0);
        size_t size;
        uint8_t *b = gunzip_all(p, &size);
        int n = g.n, rest = g.K - 1;
        assert_int_equal(size, 16 + (size_t)n * (9 + 1 + 3 + 3 + 4 + 3 * rest));
        uint32_t magic = b[0] | b[1] << 8 | b[2] << 16 | (uint32_t)b[3] << 24;
        assert_int_equal(magic, 0x5053474e);
        assert_memory_equal(b, "NGSP", 4);
        assert_int_equal(b[4] | b[5] << 8 | b[6] << 16 | b[7] << 24, 3);
        assert_int_equal(b[8] | b[9] << 8 | b[10] << 16 | b[11] << 24, n);
        assert_int_equal(b[12], deg);
        int frac = b[13];
        assert_int_equal(frac, 12);
        assert_int_equal(b[14], 0);
        assert_int_equal(b[15], 0);
        const uint8_t *pos = b + 16, *alpha = pos + 9 * n, *col = alpha + n, *scl = col + 3 * n, *rot = scl + 3 * n;
        const uint8_t *sh = rot + 4 * n;
        /* RDF (ours) -> RUB (spz): y and z negated */
        const float axis[3] = {1, -1, -1};
        for (int i = 0; i < n; i++) {
            for (int k = 0; k < 3; k++) {
                const uint8_t *v = pos + 9 * i + 3 * k;
                int32_t fx = v[0] | v[1] << 8 | v[2] << 16;
                if (fx >= 1 << 23) fx -= 1 << 24;
                float x = fx / (float)(1 << frac);
                assert_true(fabsf(x - axis[k] * g.means[3 * i + k]) <= 0.5f / (1 << frac) + 1e-6f);
                float s = scl[3 * i + k] / 16.0f - 10.0f;
                assert_true(fabsf(s - g.log_scales[3 * i + k]) <= 0.5f / 16 + 1e-5f);
                float dc = (col[3 * i + k] / 255.0f - 0.5f) / 0.15f;
                assert_true(fabsf(dc - g.sh[(size_t)i * g.K * 3 + k]) <= 0.5f / (0.15f * 255) + 1e-5f);
            }
            assert_true(fabsf(alpha[i] / 255.0f - sigmoid(g.opacity_logits[i])) <= 0.5f / 255 + 1e-5f);
            /* smallest three: index of the largest in bits 30-31, then three 10-bit fields */
            uint32_t w = rot[4 * i] | rot[4 * i + 1] << 8 | rot[4 * i + 2] << 16 | (uint32_t)rot[4 * i + 3] << 24;
            int big = w >> 30, shift = 20;
            float xyzw[4], ss = 0;
            for (int c = 0; c < 4; c++) {
                if (c == big) continue;
                uint32_t f = (w >> shift) & 0x3ff;
                shift -= 10;
                xyzw[c] = (f & 0x200 ? -1.0f : 1.0f) * (f & 0x1ff) / 511.0f * sqrtf(0.5f);
                ss += xyzw[c] * xyzw[c];
            }
            xyzw[big] = sqrtf(fmaxf(0, 1 - ss));
            float q[4], want[4];
            unit_quat(g.quats + 4 * (size_t)i, q); /* w, x, y, z */
            want[0] = q[1], want[1] = -q[2], want[2] = -q[3], want[3] = q[0];
            float dot = 0;
            for (int c = 0; c < 4; c++) dot += want[c] * xyzw[c];
            for (int c = 0; c < 4; c++) assert_true(fabsf(xyzw[c] - (dot < 0 ? -want[c] : want[c])) < 2.5e-3f);
            for (int k = 1; k <= rest; k++)
                for (int c = 0; c < 3; c++) {
                    float dec = (sh[(i * rest + k - 1) * 3 + c] - 128) / 128.0f;
                    float bucket = k <= 3 ? 8 : 16;
                    float orig = SH_SIGN[k] * g.sh[((size_t)i * g.K + k) * 3 + c];
                    assert_true(fabsf(dec - orig) <= (bucket / 2 + 0.5f) / 128 + 1e-5f);
                }
        }
        free(b);

        /* the library's importer undoes the axis change */
        sp_gaussians h;
        assert_int_equal(sp_spz_read_opts(p, &h, SP_SPZ_AXES_RUB), 0);
        assert_int_equal(h.n, n);
        assert_int_equal(h.sh_degree, deg);
        for (int i = 0; i < n; i++) {
            for (int k = 0; k < 3; k++) assert_true(fabsf(h.means[3 * i + k] - g.means[3 * i + k]) <= 1.3e-4f);
            float q[4], dot = 0;
            unit_quat(g.quats + 4 * (size_t)i, q);
            for (int k = 0; k < 4; k++) dot += q[k] * h.quats[4 * i + k];
            assert_true(fabsf(dot) > 0.99999f - 1e-5f);
            for (int k = 1; k < g.K; k++)
                for (int c = 0; c < 3; c++)
                    assert_true(fabsf(h.sh[((size_t)i * g.K + k) * 3 + c] - g.sh[((size_t)i * g.K + k) * 3 + c]) <=
                                8.5f / 128 + 1e-5f);
        }
        sp_gaussians_free(&h);
        sp_gaussians_free(&g);
    }
    free(p);
    tu_rm_rf(d);
}

/* The SH sign flips of the RDF -> RUB change are exactly the parity of each basis function:
 * colour seen along d with the original coefficients equals colour seen along the mirrored
 * direction (x, -y, -z) with the flipped ones. */
static void test_spz_sh_flip(void **state) {
    (void)state;
    sp_rng r;
    sp_rng_seed(&r, 5, 5);
    float sh[16 * 3], flipped[16 * 3];
    for (int t = 0; t < 50; t++) {
        tu_fill_uniform(&r, sh, 48, -1, 1);
        for (int k = 0; k < 16; k++)
            for (int c = 0; c < 3; c++) flipped[3 * k + c] = sp_spz_sh_flip(k) * sh[3 * k + c];
        float d[3], n = 0;
        for (int k = 0; k < 3; k++) d[k] = 2 * sp_rng_uniform(&r) - 1, n += d[k] * d[k];
        for (int k = 0; k < 3; k++) d[k] /= sqrtf(n);
        float m[3] = {d[0], -d[1], -d[2]}, a[3], b[3];
        sp_sh_eval(3, sh, d, a);
        sp_sh_eval(3, flipped, m, b);
        for (int c = 0; c < 3; c++) assert_true(fabsf(a[c] - b[c]) < 1e-5f);
    }
}

/* Renders of the re-imported model against renders of the original (CPU backend). */
static double render_psnr(const sp_gaussians *a, int deg_a, const sp_gaussians *b) {
    sp_camera cam = {.width = 96, .height = 96, .fx = 90, .fy = 90, .cx = 48, .cy = 48};
    cam.R[0] = cam.R[4] = cam.R[8] = 1;
    cam.t[2] = 5;
    sp_backend_config bc = {.threads = 2};
    float bg[3] = {1, 1, 1};
    uint8_t *img[2];
    const sp_gaussians *m[2] = {a, b};
    for (int j = 0; j < 2; j++) {
        sp_backend *be = sp_backend_create("cpu", &bc);
        assert_non_null(be);
        assert_int_equal(be->ops->set_gaussians(be, m[j], NULL, NULL), 0);
        float *rgb = malloc(sizeof(float) * 3 * 96 * 96);
        assert_int_equal(be->ops->render(be, &cam, j == 0 ? deg_a : m[j]->sh_degree, bg, rgb), 0);
        img[j] = malloc(3 * 96 * 96);
        sp_image_quantize(rgb, 96, 96, img[j]);
        free(rgb);
        be->ops->destroy(be);
    }
    double psnr = sp_psnr_u8(img[0], img[1], 96, 96);
    free(img[0]);
    free(img[1]);
    return psnr;
}

static void test_render_round_trip(void **state) {
    (void)state;
    char *d = tu_tmpdir();
    sp_gaussians g;
    random_gaussians(&g, 400, 3, 77, 0.3f);
    for (int i = 0; i < g.n; i++)
        for (int k = 0; k < 3; k++) {
            g.means[3 * i + k] *= 0.4f;
            g.log_scales[3 * i + k] = -3.5f + 1.5f * (g.log_scales[3 * i + k] + 8) / 9;
        }
    const char *names[] = {"m.ply", "m.spz", "m.splat", "m.sog"};
    double psnr[4], splat_vs_dc = 0;
    for (int f = 0; f < 4; f++) {
        char *p = sp_path_join(d, names[f]);
        assert_int_equal(sp_model_write(p, sp_model_format_from_path(p), &g), 0);
        sp_gaussians h;
        assert_int_equal(sp_model_read(p, &h), 0);
        psnr[f] = render_psnr(&g, 3, &h);
        /* .splat keeps only DC: also against the original rendered at degree 0 */
        if (f == 2) splat_vs_dc = render_psnr(&g, 0, &h);
        print_message("%s: render PSNR against the original %.2f dB\n", names[f], psnr[f]);
        sp_gaussians_free(&h);
        free(p);
    }
    print_message("m.splat: against the original's degree-0 render %.2f dB\n", splat_vs_dc);
    assert_true(psnr[0] >= 100.0); /* .ply is lossless (identical renders score 100) */
    assert_true(psnr[1] > 38.0);   /* .spz: measured 41.6 dB */
    assert_true(psnr[2] > 24.0);   /* .splat drops SH degrees 1-3: measured 27.5 dB */
    assert_true(splat_vs_dc > 50.0); /* measured 61.7 dB */
    assert_true(psnr[3] > 32.0);   /* .sog: measured 34.6 dB (a palette of 256 for 400 random SH vectors) */
    sp_gaussians_free(&g);
    tu_rm_rf(d);
}

static void test_bad_files(void **state) {
    (void)state;
    char *d = tu_tmpdir();
    sp_gaussians g, h;
    random_gaussians(&g, 50, 2, 3, 0.5f);
    char *spz = sp_path_join(d, "m.spz"), *splat = sp_path_join(d, "m.splat");
    assert_int_equal(sp_spz_write(spz, &g), 0);

    /* truncated gzip */
    char *data;
    size_t n;
    assert_int_equal(sp_read_file(spz, &data, &n), 0);
    char *cut = sp_path_join(d, "cut.spz");
    assert_int_equal(sp_write_file_atomic(cut, data, n / 2), 0);
    assert_int_equal(sp_model_read(cut, &h), -1);
    tu_assert_contains(sp_last_error(), "cut.spz");
    free(data);

    /* not gzip */
    char *txt = sp_path_join(d, "text.spz");
    tu_write_text(txt, "this is not a gzip stream at all\n");
    assert_int_equal(sp_model_read(txt, &h), -1);
    tu_assert_contains(sp_last_error(), "text.spz");
    tu_assert_contains(sp_last_error(), "gzip");

    /* gzip of something else: bad magic */
    char *other = sp_path_join(d, "other.spz");
    gzFile f = gzopen(other, "wb");
    gzwrite(f, "0123456789abcdefghijklmnop", 26);
    gzclose(f);
    assert_int_equal(sp_model_read(other, &h), -1);
    tu_assert_contains(sp_last_error(), "other.spz: not a .spz file");

    /* .splat of the wrong size, and an empty one */
    tu_write_text(splat, "0123456789012345678901234567890123"); /* 34 bytes */
    assert_int_equal(sp_model_read(splat, &h), -1);
    tu_assert_contains(sp_last_error(), "m.splat: not a .splat file");
    tu_write_text(splat, "");
    assert_int_equal(sp_model_read(splat, &h), -1);
    tu_assert_contains(sp_last_error(), "m.splat");

    /* missing file */
    char *none = sp_path_join(d, "none.spz");
    assert_int_equal(sp_model_read(none, &h), -1);
    tu_assert_contains(sp_last_error(), "none.spz");

    /* positions beyond the 24-bit fixed-point range */
    g.means[7] = 3000.0f;
    assert_int_equal(sp_spz_write(spz, &g), -1);
    tu_assert_contains(sp_last_error(), "outside the .spz range");

    /* format names */
    assert_int_equal(sp_model_format_from_path("a/b.SPZ"), SP_MODEL_SPZ);
    assert_int_equal(sp_model_format_from_path("a.b/c"), SP_MODEL_UNKNOWN);
    assert_int_equal(sp_model_format_from_name("splat"), SP_MODEL_SPLAT);
    assert_int_equal(sp_model_write(splat, SP_MODEL_UNKNOWN, &g), -1);
    tu_assert_contains(sp_last_error(), "unknown model format");

    sp_gaussians_free(&g);
    free(spz), free(splat), free(cut), free(txt), free(other), free(none);
    tu_rm_rf(d);
}

static void test_snapshot(void **state) {
    (void)state;
    char *d = tu_tmpdir();
    sp_gaussians g, h;
    random_gaussians(&g, 30, 1, 9, 0.5f);
    assert_int_equal(sp_snapshot_write(d, 700, &g), 0);
    char *p = sp_strfmt("%s/point_cloud/iteration_700/point_cloud.ply", d);
    assert_int_equal(sp_ply_read(p, &h), 0);
    assert_int_equal(h.n, 30);
    assert_memory_equal(h.means, g.means, 30 * 3 * sizeof(float));
    sp_gaussians_free(&h);
    sp_gaussians_free(&g);
    free(p);
    tu_rm_rf(d);
}

/* A version-2 file written here by hand (first-three quaternion, w >= 0): one Gaussian. */
static void test_spz_version2(void **state) {
    (void)state;
    char *d = tu_tmpdir();
    char *p = sp_path_join(d, "v2.spz");
    uint8_t raw[16 + 9 + 1 + 3 + 3 + 3] = {0x4e, 0x47, 0x53, 0x50, 2, 0, 0, 0, 1, 0, 0, 0, 0, 12, 0, 0};
    uint8_t *b = raw + 16;
    int32_t fx[3] = {4096, -2048, 1024}; /* 1, -0.5, 0.25 in RUB */
    for (int k = 0; k < 3; k++)
        for (int j = 0; j < 3; j++) b[3 * k + j] = (uint8_t)((uint32_t)fx[k] >> (8 * j));
    b[9] = 191;                                   /* alpha 0.749 */
    b[10] = 128, b[11] = 166, b[12] = 89;        /* colours */
    b[13] = 160, b[14] = 144, b[15] = 128;       /* log scales 0, -1, -2 */
    b[16] = 128, b[17] = 128, b[18] = 218;       /* quaternion x, y, z (RUB) = 0.0039, 0.0039, 0.71 */
    gzFile f = gzopen(p, "wb");
    gzwrite(f, raw, sizeof raw);
    gzclose(f);
    sp_gaussians g;
    assert_int_equal(sp_spz_read_opts(p, &g, SP_SPZ_AXES_RUB), 0);
    assert_int_equal(g.n, 1);
    assert_int_equal(g.sh_degree, 0);
    assert_true(fabsf(g.means[0] - 1) < 1e-6f && fabsf(g.means[1] - 0.5f) < 1e-6f && fabsf(g.means[2] + 0.25f) < 1e-6f);
    assert_true(fabsf(g.log_scales[0]) < 1e-6f && fabsf(g.log_scales[1] + 1) < 1e-6f && fabsf(g.log_scales[2] + 2) < 1e-6f);
    assert_true(fabsf(sigmoid(g.opacity_logits[0]) - 191 / 255.0f) < 1e-5f);
    assert_true(fabsf(g.sh[1] - (166 / 255.0f - 0.5f) / 0.15f) < 1e-5f);
    float z = 218 / 127.5f - 1, xy = 128 / 127.5f - 1, w = sqrtf(1 - z * z - 2 * xy * xy);
    /* back to RDF: (w, x, -y, -z) */
    assert_true(fabsf(g.quats[0] - w) < 1e-5f && fabsf(g.quats[1] - xy) < 1e-5f && fabsf(g.quats[2] + xy) < 1e-5f &&
                fabsf(g.quats[3] + z) < 1e-5f);
    sp_gaussians_free(&g);
    free(p);
    tu_rm_rf(d);
}

/* Any bytes in the streams decode to finite parameters (no crash, no NaN), and a .splat with a
 * NaN is refused with the Gaussian named. */
static void test_corrupt_streams(void **state) {
    (void)state;
    char *d = tu_tmpdir();
    char *p = sp_path_join(d, "c.spz"), *q = sp_path_join(d, "c.splat");
    sp_gaussians g, h;
    random_gaussians(&g, 40, 3, 4, 0.5f);
    sp_spz_options v3 = {.version = 3, .axes = SP_SPZ_AXES_RDF};
    assert_int_equal(sp_spz_write_opts(p, &g, &v3), 0);
    size_t n;
    uint8_t *raw = gunzip_all(p, &n);
    sp_rng r;
    sp_rng_seed(&r, 8, 8);
    for (size_t i = 16; i < n; i++) raw[i] = (uint8_t)sp_rng_u32(&r);
    gzFile f = gzopen(p, "wb");
    gzwrite(f, raw, (unsigned)n);
    gzclose(f);
    free(raw);
    assert_int_equal(sp_spz_read(p, &h), 0);
    assert_true(sp_gaussians_finite(&h));
    sp_gaussians_free(&h);

    assert_int_equal(sp_splat_write(q, &g), 0);
    char *data;
    assert_int_equal(sp_read_file(q, &data, &n), 0);
    float nan = NAN;
    memcpy(data + 32 * 5 + 4, &nan, 4);
    assert_int_equal(sp_write_file_atomic(q, data, n), 0);
    free(data);
    assert_int_equal(sp_splat_read(q, &h), -1);
    tu_assert_contains(sp_last_error(), "c.splat: Gaussian 5");
    sp_gaussians_free(&g);
    free(p), free(q);
    tu_rm_rf(d);
}

/* .glb: the GLB container, the extension's attribute names, glTF's axes (x and y negated) and
 * SH signs; a .glb is not read back. */
static void test_glb(void **state) {
    (void)state;
    char *d = tu_tmpdir();
    char *p = sp_path_join(d, "m.glb");
    sp_gaussians g;
    random_gaussians(&g, 30, 1, 9, 0.5f);
    assert_int_equal(sp_glb_write(p, &g), 0);
    char *data;
    size_t n;
    assert_int_equal(sp_read_file(p, &data, &n), 0);
    const uint8_t *b = (const uint8_t *)data;
    uint32_t h[5];
    memcpy(h, b, sizeof h);
    assert_int_equal(h[0], 0x46546c67u); /* "glTF" */
    assert_int_equal(h[1], 2);
    assert_int_equal(h[2], n);
    assert_int_equal(h[4], 0x4e4f534au); /* JSON */
    char *json = strndup(data + 20, h[3]);
    tu_assert_contains(json, "\"extensionsUsed\":[\"KHR_gaussian_splatting\"]");
    const char *names[] = {"\"POSITION\":0", "\"COLOR_0\":1", "\"KHR_gaussian_splatting:ROTATION\":2",
                           "\"KHR_gaussian_splatting:SCALE\":3", "\"KHR_gaussian_splatting:OPACITY\":4",
                           "\"KHR_gaussian_splatting:SH_DEGREE_0_COEF_0\":5",
                           "\"KHR_gaussian_splatting:SH_DEGREE_1_COEF_2\":8"};
    for (size_t k = 0; k < sizeof names / sizeof *names; k++) tu_assert_contains(json, names[k]);
    free(json);
    const uint8_t *bin = b + 20 + h[3] + 8;
    float v[3];
    for (int i = 0; i < g.n; i++) {
        memcpy(v, bin + 12 * i, 12); /* POSITION first */
        assert_true(v[0] == -g.means[3 * i] && v[1] == -g.means[3 * i + 1] && v[2] == g.means[3 * i + 2]);
        /* SH_DEGREE_1_COEF_0 (basis y) flips, COEF_1 (z) does not */
        size_t sh0 = (size_t)g.n * (12 + 4 + 16 + 12 + 4 + 12);
        memcpy(v, bin + sh0 + 12 * i, 12);
        assert_true(v[0] == -g.sh[(size_t)i * g.K * 3 + 3]);
        memcpy(v, bin + sh0 + 12 * (size_t)g.n + 12 * i, 12);
        assert_true(v[0] == g.sh[(size_t)i * g.K * 3 + 6]);
    }
    free(data);
    sp_gaussians h2;
    assert_int_equal(sp_model_read(p, &h2), -1);
    tu_assert_contains(sp_last_error(), "m.glb: .glb is written, not read");
    sp_gaussians_free(&g);
    free(p);
    tu_rm_rf(d);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_splat_fields),     cmocka_unit_test(test_spz_fields),
        cmocka_unit_test(test_spz_sh_flip),      cmocka_unit_test(test_render_round_trip),
        cmocka_unit_test(test_bad_files),        cmocka_unit_test(test_snapshot),
        cmocka_unit_test(test_spz_version2),     cmocka_unit_test(test_corrupt_streams), cmocka_unit_test(test_glb),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
