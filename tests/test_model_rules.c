/* test_model_rules.c — the rules every model reader applies alike (io/model_check.h), each on
 * .ply, .splat and .spz (versions 3 and 4) with the error text asserted: non-regular files (also
 * .sog, a SOG meta.json and .compressed.ply; their other rules are in test_sog.c and
 * test_cply.c), empty models, non-finite values, zero quaternions, header sizes the file cannot
 * hold, and out-of-memory errors that name the file; and the .spz axis conventions and versions. */
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>
#include <zlib.h>

#include "core/core.h"
#include "io/export.h"
#include "io/ply.h"
#include "splat.h"
#include "testutil.h"

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
    sp_rng_seed(&r, 5, (uint64_t)n);
    sp_gaussians_init(g, n, degree);
    g->n = n;
    tu_fill_uniform(&r, g->means, 3 * (size_t)n, -2, 2);
    tu_fill_uniform(&r, g->log_scales, 3 * (size_t)n, -6, -1);
    tu_fill_uniform(&r, g->quats, 4 * (size_t)n, 0.1f, 1);
    tu_fill_uniform(&r, g->opacity_logits, (size_t)n, -3, 3);
    tu_fill_uniform(&r, g->sh, 3 * (size_t)g->K * n, -0.5f, 0.5f);
}

static char *path_of(const char *name) { return sp_path_join(g_dir, name); }

/* Writes g to NAME in the format its extension (and spec) names. */
static char *write_as(const char *name, const char *spec, const sp_gaussians *g) {
    char *p = path_of(name);
    sp_model_spec s;
    assert_int_equal(sp_model_spec_parse(spec, &s), 0);
    if (sp_model_write_spec(p, &s, g)) fail_msg("%s", sp_last_error());
    return p;
}

static void expect_read_error(const char *path, const char *text) {
    sp_gaussians g;
    memset(&g, 0x55, sizeof g);
    assert_int_equal(sp_model_read(path, &g), -1);
    tu_assert_contains(sp_last_error(), path);
    tu_assert_contains(sp_last_error(), text);
    assert_null(g.means); /* nothing left allocated */
}

static const char *kinds[4][2] = {{"m.ply", "ply"}, {"m.splat", "splat"}, {"m3.spz", "spz:v3"}, {"m4.spz", "spz:v4"}};

static void test_not_regular(void **state) {
    (void)state;
    const char *exts[5] = {"ply", "splat", "spz", "sog", "compressed.ply"};
    for (int e = 0; e < 5; e++) {
        char *dir = sp_strfmt("%s/dir.%s", g_dir, exts[e]), *fifo = sp_strfmt("%s/fifo.%s", g_dir, exts[e]);
        assert_int_equal(sp_mkdir_p(dir), 0);
        assert_int_equal(mkfifo(fifo, 0600), 0);
        sp_gaussians g;
        /* a directory named like a model (the API reads a run folder before this) */
        assert_int_equal(sp_model_read(dir, &g), -1);
        tu_assert_contains(sp_last_error(), "not a regular file (a directory)");
        tu_assert_contains(sp_last_error(), dir);
        /* a FIFO would block a plain open: refused before opening */
        assert_int_equal(sp_model_read(fifo, &g), -1);
        tu_assert_contains(sp_last_error(), "not a regular file (a FIFO)");
        free(dir), free(fifo);
    }
    char *meta_dir = sp_strfmt("%s/unbundled/meta.json", g_dir); /* a SOG meta.json that is a folder */
    assert_int_equal(sp_mkdir_p(meta_dir), 0);
    sp_gaussians g;
    assert_int_equal(sp_model_read(meta_dir, &g), -1);
    tu_assert_contains(sp_last_error(), "not a regular file (a directory)");
    free(meta_dir);
    assert_int_equal(sp_ply_read("/dev/zero", &g), -1);
    tu_assert_contains(sp_last_error(), "/dev/zero: not a regular file (a device or socket)");
    assert_int_equal(sp_splat_read("/dev/zero", &g), -1);
    tu_assert_contains(sp_last_error(), "/dev/zero: not a regular file");
    assert_int_equal(sp_spz_read("/dev/zero", &g), -1);
    tu_assert_contains(sp_last_error(), "/dev/zero: not a regular file");
}

static void test_empty_models(void **state) {
    (void)state;
    sp_gaussians g;
    sp_gaussians_init(&g, 1, 1);
    g.n = 0;
    for (int k = 0; k < 4; k++) {
        char *p = write_as(kinds[k][0], kinds[k][1], &g); /* writing an empty store is allowed */
        expect_read_error(p, k == 1 ? "the model has no Gaussians (empty .splat file)" : "the model has no Gaussians");
        free(p);
    }
    sp_gaussians_free(&g);
}

/* The same non-finite value, and the zero quaternion, in each format that can hold them. */
static void test_non_finite_and_zero_quaternion(void **state) {
    (void)state;
    for (int k = 0; k < 2; k++) { /* .ply and .splat store floats */
        sp_gaussians g;
        model(&g, 20, 0);
        g.means[3 * 7 + 1] = NAN;
        char *p = write_as(kinds[k][0], kinds[k][1], &g);
        sp_gaussians h;
        assert_int_equal(sp_model_read(p, &h), -1);
        tu_assert_contains(sp_last_error(), "position is not a finite number");
        tu_assert_contains(sp_last_error(), p);
        free(p);
        g.means[3 * 7 + 1] = 0;
        g.log_scales[3 * 4] = INFINITY;
        p = write_as(kinds[k][0], kinds[k][1], &g);
        /* (.splat sorts its records: the Gaussian's index in the file is another) */
        expect_read_error(p, k == 0 ? "Gaussian 4: scale is not a finite number" : "scale is not a finite number");
        free(p);
        g.log_scales[3 * 4] = 0;
        for (int c = 0; c < 4; c++) g.quats[4 * 9 + c] = 0;
        p = write_as(kinds[k][0], kinds[k][1], &g);
        if (k == 1) { /* the .splat writer stores a zero quaternion as the identity: patch one in */
            char *data;
            size_t n;
            assert_int_equal(sp_read_file(p, &data, &n), 0);
            memset(data + 28, 128, 4);
            assert_int_equal(sp_write_file_atomic(p, data, n), 0);
            free(data);
        }
        expect_read_error(p, k == 1 ? "Gaussian 0: rotation is the zero quaternion" : "Gaussian 9: rotation is the zero quaternion");
        free(p);
        sp_gaussians_free(&g);
    }
    /* the .ply's other fields */
    const char *what[3] = {"opacity is not a finite number", "colour (SH) is not a finite number", "rotation is not a finite number"};
    for (int f = 0; f < 3; f++) {
        sp_gaussians g;
        model(&g, 10, 1);
        if (f == 0) g.opacity_logits[3] = -INFINITY;
        if (f == 1) g.sh[3 * g.K * 3 + 5] = NAN;
        if (f == 2) g.quats[4 * 3 + 2] = NAN;
        char *p = write_as("f.ply", "ply", &g);
        expect_read_error(p, what[f]);
        free(p);
        sp_gaussians_free(&g);
    }
    /* .splat: a negative scale has no log scale */
    sp_gaussians g;
    model(&g, 1, 0);
    char *p = write_as("neg.splat", "splat", &g);
    char *data;
    size_t n;
    assert_int_equal(sp_read_file(p, &data, &n), 0);
    float neg = -1.0f;
    memcpy(data + 16, &neg, 4);
    assert_int_equal(sp_write_file_atomic(p, data, n), 0);
    free(data);
    expect_read_error(p, "Gaussian 0: scale is not a finite number");
    free(p);
    sp_gaussians_free(&g);
}

static void put32(uint8_t *b, uint32_t v) {
    for (int k = 0; k < 4; k++) b[k] = (uint8_t)(v >> (8 * k));
}

/* Counts in headers are checked against the file before any allocation of that size. */
static void test_claimed_sizes(void **state) {
    (void)state;
    /* .spz v3: a header claiming 1e9 Gaussians in a few hundred bytes of gzip */
    uint8_t raw[16 + 20] = {0x4e, 0x47, 0x53, 0x50, 3, 0, 0, 0};
    put32(raw + 8, 1000000000u);
    raw[12] = 0, raw[13] = 12;
    char *p = path_of("huge3.spz");
    gzFile f = gzopen(p, "wb");
    gzwrite(f, raw, sizeof raw);
    gzclose(f);
    sp_set_alloc_limit(1 << 20); /* an allocation of the claimed size would fail, with another message */
    expect_read_error(p, "the header claims 1000000000 Gaussians");
    free(p);
    /* .spz v3: a count the stream is short of (passes the ratio bound, fails the gzip length) */
    put32(raw + 8, 1000);
    p = path_of("short3.spz");
    f = gzopen(p, "wb");
    gzwrite(f, raw, sizeof raw);
    gzclose(f);
    expect_read_error(p, "but the gzip stream holds 36");
    free(p);
    /* .spz v4: header count, table sizes and frames are all checked */
    sp_gaussians g;
    model(&g, 50, 1);
    p = write_as("v4.spz", "spz", &g);
    char *data;
    size_t n;
    assert_int_equal(sp_read_file(p, &data, &n), 0);
    uint8_t *d = (uint8_t *)data;
    put32(d + 8, 2000000000u);
    assert_int_equal(sp_write_file_atomic(p, d, n), 0);
    expect_read_error(p, "more than this reader accepts");
    put32(d + 8, 100000000u);
    assert_int_equal(sp_write_file_atomic(p, d, n), 0);
    expect_read_error(p, "the header claims 100000000 Gaussians");
    put32(d + 8, 50);
    d[32 + 8] ^= 1; /* uncompressed size of the positions stream */
    assert_int_equal(sp_write_file_atomic(p, d, n), 0);
    expect_read_error(p, "stream 0 (positions): uncompressed size does not match the Gaussian count");
    d[32 + 8] ^= 1;
    d[32 + 16 * 5 + 3] = 0x7f; /* compressed size of the SH stream past the end */
    assert_int_equal(sp_write_file_atomic(p, d, n), 0);
    expect_read_error(p, "stream 5 (SH): runs past the end of the file");
    assert_int_equal(sp_write_file_atomic(p, d, 40), 0);
    expect_read_error(p, "the table of streams (at byte 32) is outside the file");
    free(data);
    free(p);
    /* .ply: a vertex count the file cannot hold is refused before the store is allocated */
    p = path_of("huge.ply");
    tu_write_text(p, "ply\nformat binary_little_endian 1.0\nelement vertex 900000000\nproperty float x\nproperty float y\n"
                     "property float z\nproperty float f_dc_0\nproperty float f_dc_1\nproperty float f_dc_2\n"
                     "property float opacity\nproperty float scale_0\nproperty float scale_1\nproperty float scale_2\n"
                     "property float rot_0\nproperty float rot_1\nproperty float rot_2\nproperty float rot_3\nend_header\n");
    expect_read_error(p, "truncated: expected 900000000 vertices, found 0");
    free(p);
    sp_set_alloc_limit(0);
    sp_gaussians_free(&g);
}

/* A model larger than the memory there is: an error naming the file, no abort. */
static void test_out_of_memory(void **state) {
    (void)state;
    sp_gaussians g;
    model(&g, 3000, 3);
    for (int k = 0; k < 4; k++) {
        char *p = write_as(kinds[k][0], kinds[k][1], &g);
        sp_set_alloc_limit(64 << 10);
        sp_gaussians h;
        int rc = sp_model_read(p, &h);
        sp_set_alloc_limit(0);
        assert_int_equal(rc, -1);
        tu_assert_contains(sp_last_error(), p);
        tu_assert_contains(sp_last_error(), "out of memory");
        free(p);
    }
    sp_gaussians_free(&g);
}

/* RDF (default): stored as is; RUB: y and z negated in the file, undone on reading with RUB. */
static void test_spz_axes_and_versions(void **state) {
    (void)state;
    sp_gaussians g;
    model(&g, 200, 2);
    const char *specs[4] = {"spz", "spz:v3", "spz:rub", "spz:v3:rub"};
    for (int s = 0; s < 4; s++) {
        char *p = write_as("ax.spz", specs[s], &g);
        char *data;
        size_t n;
        assert_int_equal(sp_read_file(p, &data, &n), 0);
        int v3 = strstr(specs[s], "v3") != NULL, rub = strstr(specs[s], "rub") != NULL;
        if (v3) assert_true((uint8_t)data[0] == 0x1f && (uint8_t)data[1] == 0x8b);
        else assert_memory_equal(data, "NGSP\4\0\0\0", 8);
        free(data);
        sp_gaussians h, k;
        assert_int_equal(sp_spz_read(p, &h), 0); /* read as RDF */
        assert_int_equal(sp_spz_read_opts(p, &k, rub ? SP_SPZ_AXES_RUB : SP_SPZ_AXES_RDF), 0);
        assert_int_equal(h.n, 200);
        for (int i = 0; i < 200; i++) {
            float sy = rub ? -1.0f : 1.0f;
            assert_true(fabsf(h.means[3 * i + 1] - sy * g.means[3 * i + 1]) < 2.5e-4f);
            assert_true(fabsf(h.means[3 * i + 2] - sy * g.means[3 * i + 2]) < 2.5e-4f);
            for (int c = 0; c < 3; c++) assert_true(fabsf(k.means[3 * i + c] - g.means[3 * i + c]) < 2.5e-4f);
        }
        sp_gaussians_free(&h);
        sp_gaussians_free(&k);
        free(p);
    }
    sp_model_spec s;
    assert_int_equal(sp_model_spec_parse("spz:v5", &s), -1);
    tu_assert_contains(sp_last_error(), "unknown spz option 'v5'");
    assert_int_equal(sp_model_spec_parse("ply:v3", &s), -1);
    tu_assert_contains(sp_last_error(), "only spz takes options");
    sp_gaussians_free(&g);
}

/* Through the public API: "spz:rub" reads a RUB file upright, a bad option is refused by name. */
static void test_api_formats(void **state) {
    (void)state;
    sp_gaussians g;
    model(&g, 40, 0);
    char *rub = write_as("api_rub.spz", "spz:rub", &g), *out = path_of("api_out.spz");
    splat_context *ctx = NULL;
    assert_int_equal(splat_open(&ctx), SPLAT_OK);
    assert_int_equal(splat_load_model_as(ctx, rub, "spz:v7"), SPLAT_INVALID);
    tu_assert_contains(splat_errmsg(ctx), "unknown spz option 'v7'");
    assert_int_equal(splat_load_model_as(ctx, rub, "spz:rub"), SPLAT_OK);
    assert_int_equal(splat_export(ctx, out, "spz:v3"), SPLAT_OK);
    assert_int_equal(splat_export(ctx, out, "spz:up"), SPLAT_INVALID);
    tu_assert_contains(splat_errmsg(ctx), "unknown spz option 'up'");
    splat_close(ctx);
    sp_gaussians h;
    assert_int_equal(sp_spz_read(out, &h), 0); /* v3, RDF: where the model was */
    for (int i = 0; i < 40; i++)
        for (int c = 0; c < 3; c++) assert_true(fabsf(h.means[3 * i + c] - g.means[3 * i + c]) < 2.5e-4f);
    sp_gaussians_free(&h);
    sp_gaussians_free(&g);
    free(rub), free(out);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_not_regular),      cmocka_unit_test(test_empty_models),
        cmocka_unit_test(test_non_finite_and_zero_quaternion),
        cmocka_unit_test(test_claimed_sizes),    cmocka_unit_test(test_out_of_memory),
        cmocka_unit_test(test_spz_axes_and_versions), cmocka_unit_test(test_api_formats),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
