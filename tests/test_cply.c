/* test_cply.c — PlayCanvas's compressed .ply, read through the .ply reader: files written here
 * from the layout (io/cply.c's comment) with and without per-chunk colours, SH degrees 0 to 3
 * and a partial last chunk decode to every field within its step; opacities of 0 and 255 stay
 * finite; damaged headers and bodies give errors that name the file (and line). */
#include "testutil.h"

#include <math.h>

#include "io/export.h"

static char *g_dir;

static int setup(void **state) {
    (void)state;
    g_dir = tu_tmpdir();
    sp_log_set_level(SP_LOG_ERROR);
    return 0;
}
static int teardown(void **state) {
    (void)state;
    tu_rm_rf(g_dir);
    return 0;
}

static void model(sp_gaussians *g, int n, int degree) {
    sp_rng r;
    sp_rng_seed(&r, 17, (uint64_t)n);
    sp_gaussians_init(g, n, degree);
    g->n = n;
    tu_fill_uniform(&r, g->means, 3 * (size_t)n, -4, 4);
    tu_fill_uniform(&r, g->log_scales, 3 * (size_t)n, -7, 0);
    tu_fill_uniform(&r, g->quats, 4 * (size_t)n, -1, 1);
    tu_fill_uniform(&r, g->opacity_logits, (size_t)n, -5, 5);
    tu_fill_uniform(&r, g->sh, 3 * (size_t)g->K * n, -1.5f, 1.5f);
}

static uint32_t unorm(float t, int bits) {
    float m = (float)((1u << bits) - 1), v = floorf(t * m + 0.5f);
    return (uint32_t)(v < 0 ? 0 : v > m ? m : v);
}

static float frac(float x, float lo, float hi) { return hi > lo ? (x - lo) / (hi - lo) : 0; }

/* The file as the layout describes it; `colour`: per-chunk colour ranges. */
static void write_cply(const char *path, const sp_gaussians *g, int colour) {
    int n = g->n, chunks = (n + 255) / 256, rest = g->K - 1;
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fprintf(f, "ply\nformat binary_little_endian 1.0\ncomment written by test_cply\nelement chunk %d\n", chunks);
    const char *cn[18] = {"min_x", "min_y", "min_z", "max_x", "max_y", "max_z", "min_scale_x", "min_scale_y",
                          "min_scale_z", "max_scale_x", "max_scale_y", "max_scale_z", "min_r", "min_g", "min_b",
                          "max_r", "max_g", "max_b"};
    for (int j = 0; j < (colour ? 18 : 12); j++) fprintf(f, "property float %s\n", cn[j]);
    fprintf(f, "element vertex %d\nproperty uint packed_position\nproperty uint packed_rotation\n"
               "property uint packed_scale\nproperty uint packed_color\n", n);
    if (rest) {
        fprintf(f, "element sh %d\n", n);
        for (int j = 0; j < 3 * rest; j++) fprintf(f, "property uchar f_rest_%d\n", j);
    }
    fputs("end_header\n", f);
    float *lim = calloc((size_t)chunks * 18, sizeof(float));
    for (int c = 0; c < chunks; c++) {
        float *l = lim + 18 * c;
        for (int k = 0; k < 3; k++) l[k] = l[6 + k] = l[12 + k] = INFINITY, l[3 + k] = l[9 + k] = l[15 + k] = -INFINITY;
        for (int i = 256 * c; i < n && i < 256 * (c + 1); i++)
            for (int k = 0; k < 3; k++) {
                float v[3] = {g->means[3 * i + k], g->log_scales[3 * i + k], 0.5f + SP_SH_C0 * g->sh[(size_t)i * g->K * 3 + k]};
                for (int q = 0; q < 3; q++) l[6 * q + k] = fminf(l[6 * q + k], v[q]), l[6 * q + 3 + k] = fmaxf(l[6 * q + 3 + k], v[q]);
            }
        fwrite(l, sizeof(float), colour ? 18 : 12, f);
    }
    for (int i = 0; i < n; i++) {
        const float *l = lim + 18 * (i / 256), *p = g->means + 3 * i, *s = g->log_scales + 3 * i;
        uint32_t w[4];
        w[0] = unorm(frac(p[0], l[0], l[3]), 11) << 21 | unorm(frac(p[1], l[1], l[4]), 10) << 11 | unorm(frac(p[2], l[2], l[5]), 11);
        w[2] = unorm(frac(s[0], l[6], l[9]), 11) << 21 | unorm(frac(s[1], l[7], l[10]), 10) << 11 | unorm(frac(s[2], l[8], l[11]), 11);
        float q[4], len = 0;
        int big = 0;
        for (int k = 0; k < 4; k++) len += g->quats[4 * i + k] * g->quats[4 * i + k];
        for (int k = 0; k < 4; k++) {
            q[k] = g->quats[4 * i + k] / sqrtf(len);
            if (fabsf(q[k]) > fabsf(q[big])) big = k;
        }
        w[1] = (uint32_t)big;
        for (int k = 0; k < 4; k++)
            if (k != big) w[1] = w[1] << 10 | unorm((q[big] < 0 ? -q[k] : q[k]) * 0.70710678f + 0.5f, 10);
        w[3] = unorm(1.0f / (1.0f + expf(-g->opacity_logits[i])), 8);
        for (int k = 0; k < 3; k++) {
            float c = 0.5f + SP_SH_C0 * g->sh[(size_t)i * g->K * 3 + k];
            w[3] |= unorm(colour ? frac(c, l[12 + k], l[15 + k]) : c, 8) << (24 - 8 * k);
        }
        fwrite(w, 4, 4, f);
    }
    for (int i = 0; i < n && rest; i++)
        for (int c = 0; c < 3; c++)
            for (int k = 1; k <= rest; k++) {
                float t = floorf((g->sh[((size_t)i * g->K + k) * 3 + c] / 8 + 0.5f) * 256);
                uint8_t b = (uint8_t)(t < 0 ? 0 : t > 255 ? 255 : t);
                fwrite(&b, 1, 1, f);
            }
    fclose(f);
    free(lim);
}

static void test_fields(void **state) {
    (void)state;
    char *p = sp_path_join(g_dir, "m.compressed.ply");
    for (int deg = 0; deg <= 3; deg++)
        for (int colour = 0; colour < 2; colour++) {
            sp_gaussians g, h;
            model(&g, 600, deg); /* 3 chunks, the last one partial */
            if (!colour) /* colours stored directly must be in 0..1 */
                for (int i = 0; i < g.n; i++)
                    for (int k = 0; k < 3; k++) g.sh[(size_t)i * g.K * 3 + k] *= 0.5f;
            write_cply(p, &g, colour);
            assert_int_equal(sp_model_read(p, &h), 0);
            assert_int_equal(h.n, 600);
            assert_int_equal(h.sh_degree, deg);
            for (int i = 0; i < h.n; i++) {
                for (int k = 0; k < 3; k++) {
                    float bits = k == 1 ? 1023 : 2047;
                    assert_true(fabsf(h.means[3 * i + k] - g.means[3 * i + k]) <= 8.0f / bits * 0.5f + 1e-5f);
                    assert_true(fabsf(h.log_scales[3 * i + k] - g.log_scales[3 * i + k]) <= 7.0f / bits * 0.5f + 1e-5f);
                    float cs = colour ? 3 * SP_SH_C0 : 1; /* the colour range of a chunk, at most */
                    assert_true(fabsf(h.sh[(size_t)i * h.K * 3 + k] - g.sh[(size_t)i * g.K * 3 + k]) * SP_SH_C0 <=
                                cs * 0.5f / 255 + 1e-5f);
                }
                float a = 1.0f / (1.0f + expf(-g.opacity_logits[i])), b = 1.0f / (1.0f + expf(-h.opacity_logits[i]));
                assert_true(fabsf(a - b) <= 0.5f / 255 + 1e-5f);
                float dot = 0, len = 0;
                for (int k = 0; k < 4; k++) dot += g.quats[4 * i + k] * h.quats[4 * i + k], len += g.quats[4 * i + k] * g.quats[4 * i + k];
                assert_true(fabsf(dot) / sqrtf(len) > 0.99999f);
                for (int k = 3; k < 3 * h.K; k++)
                    assert_true(fabsf(h.sh[(size_t)i * h.K * 3 + k] - g.sh[(size_t)i * g.K * 3 + k]) <= 4.0f / 256 + 1e-5f);
            }
            sp_gaussians_free(&g);
            sp_gaussians_free(&h);
        }
    free(p);
}

static void expect_read_error(const char *path, const char *text) {
    sp_gaussians g;
    memset(&g, 0x55, sizeof g);
    assert_int_equal(sp_model_read(path, &g), -1);
    tu_assert_contains(sp_last_error(), path);
    tu_assert_contains(sp_last_error(), text);
    assert_null(g.means);
}

/* The good file's bytes with `from` (in the header) replaced by `to`, or cut to `keep` bytes. */
static void variant(const char *good, const char *bad, const char *from, const char *to, long keep) {
    char *data;
    size_t n;
    assert_int_equal(sp_read_file(good, &data, &n), 0);
    FILE *f = fopen(bad, "wb");
    char *at = from ? strstr(data, from) : NULL;
    if (from) assert_non_null(at);
    if (at) {
        fwrite(data, 1, (size_t)(at - data), f);
        fputs(to, f);
        fwrite(at + strlen(from), 1, n - (size_t)(at - data) - strlen(from), f);
    } else {
        fwrite(data, 1, keep >= 0 ? (size_t)keep : n, f);
    }
    fclose(f);
    free(data);
}

static void test_bad_files(void **state) {
    (void)state;
    char *good = sp_path_join(g_dir, "g.compressed.ply"), *bad = sp_path_join(g_dir, "b.compressed.ply");
    sp_gaussians g;
    model(&g, 300, 1);
    write_cply(good, &g, 1);
    variant(good, bad, "binary_little_endian", "ascii", -1);
    expect_read_error(bad, "a compressed .ply must be binary_little_endian");
    variant(good, bad, "element chunk 2", "element chunk 3", -1);
    expect_read_error(bad, "3 chunks for 300 vertices (expected 2)");
    variant(good, bad, "property uint packed_rotation", "property uint packed_turn", -1);
    expect_read_error(bad, "element 'vertex' has no property 'packed_rotation'");
    variant(good, bad, "property uint packed_color", "property float packed_color", -1);
    expect_read_error(bad, "property 'packed_color' must be uint");
    variant(good, bad, "property uchar f_rest_8\n", "", -1);
    expect_read_error(bad, "8 SH properties: expected 9, 24 or 45");
    variant(good, bad, "element sh 300", "element sh 299", -1);
    expect_read_error(bad, "299 SH rows for 300 vertices");
    variant(good, bad, "element vertex 300", "element vertex 90000000", -1); /* counts the file cannot hold */
    variant(bad, bad, "element chunk 2", "element chunk 351563", -1);
    variant(bad, bad, "element sh 300", "element sh 90000000", -1);
    sp_set_alloc_limit(1 << 20); /* checked before anything of that size is allocated */
    expect_read_error(bad, "the header's elements need 2275312536 bytes but the file has");
    sp_set_alloc_limit(0);
    variant(good, bad, NULL, NULL, 1200);
    expect_read_error(bad, "(truncated?)");
    variant(good, bad, "property float max_b", "property list uchar float max_b", -1);
    expect_read_error(bad, "list property 'max_b' is not supported");
    variant(good, bad, "element vertex 300", "element vertex 0", -1);
    expect_read_error(bad, "the model has no Gaussians");
    /* a NaN in a chunk's range: every Gaussian of the chunk has no position */
    char *data;
    size_t n;
    assert_int_equal(sp_read_file(good, &data, &n), 0);
    size_t body = (size_t)(strstr(data, "end_header\n") - data) + 11;
    float nan = NAN;
    memcpy(data + body + 18 * 4 + 4, &nan, 4); /* chunk 1's min_y */
    assert_int_equal(sp_write_file_atomic(bad, data, n), 0);
    expect_read_error(bad, "Gaussian 256: position is not a finite number");
    /* opacities 0 and 255 have no logit: half a step inwards, finite */
    free(data);
    assert_int_equal(sp_read_file(good, &data, &n), 0);
    for (int i = 0; i < 2; i++) data[body + 2 * 18 * 4 + 16 * i + 12] = (char)(i ? 255 : 0);
    assert_int_equal(sp_write_file_atomic(bad, data, n), 0);
    sp_gaussians h;
    assert_int_equal(sp_model_read(bad, &h), 0);
    assert_true(isfinite(h.opacity_logits[0]) && isfinite(h.opacity_logits[1]));
    assert_true(h.opacity_logits[0] < -5 && h.opacity_logits[1] > 5);
    sp_gaussians_free(&h);
    free(data);
    sp_gaussians_free(&g);
    free(good), free(bad);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_fields), cmocka_unit_test(test_bad_files)};
    return cmocka_run_group_tests(tests, setup, teardown);
}
