/* test_checkpoint.c — checkpoint round trip (including empty curves and stores), the clocks of
 * version 3 and older versions read with them unknown, and the reader's checks on hostile files:
 * every header field, counts larger than the file can hold, truncation, trailing bytes; each
 * error names the file. */
#include "testutil.h"

#include <time.h>

#include <math.h>

#include "train/checkpoint.h"

#include <zlib.h>

static char *g_dir;

static int setup(void **state) {
    g_dir = tu_tmpdir();
    return g_dir ? 0 : -1;
}
static int teardown(void **state) {
    tu_rm_rf(g_dir);
    return 0;
}

static void fill_store(sp_gaussians *g, int n, int deg, float base) {
    sp_gaussians_init(g, n, deg);
    g->n = n;
    for (int i = 0; i < n; i++) {
        for (int k = 0; k < 3; k++) g->means[3 * i + k] = base + i + 0.1f * k;
        for (int k = 0; k < 3; k++) g->log_scales[3 * i + k] = -base - i;
        for (int k = 0; k < 4; k++) g->quats[4 * i + k] = (float)k;
        g->opacity_logits[i] = 0.5f * i;
        for (int k = 0; k < 3 * g->K; k++) g->sh[(size_t)i * 3 * g->K + k] = base * k;
    }
}

static void write_sample(const char *path, int n, int deg, int curve_points) {
    sp_checkpoint c = {.step = 1234, .train_seconds = 5.5};
    fill_store(&c.g, n, deg, 1.0f);
    fill_store(&c.m, n, deg, 2.0f);
    fill_store(&c.v, n, deg, 3.0f);
    for (int i = 0; i < curve_points; i++) sp_series_push(&c.curves[SP_CURVE_LOSS], i * 10, 0.5 / (i + 1));
    assert_int_equal(sp_checkpoint_write(path, &c), 0);
    sp_checkpoint_free(&c);
}

/* The CRC-32 of a large store, made in 4 MiB pieces on every core, is zlib's crc32_z: for sizes
 * around the piece boundaries, a ragged end, a running CRC carried in, and nothing at all. */
static void test_crc_in_pieces(void **state) {
    (void)state;
    size_t big = (size_t)(4 << 20) * 5 + 12345;
    unsigned char *buf = malloc(big);
    assert_non_null(buf);
    uint32_t x = 12345;
    for (size_t i = 0; i < big; i++) buf[i] = (unsigned char)((x = x * 1103515245u + 12345u) >> 24);
    size_t sizes[] = {0, 1, 4 << 20, (4 << 20) + 1, 2 * (4 << 20) - 1, 2 * (4 << 20), 3 * (4 << 20) + 7, big};
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++)
        for (uint32_t start = 0; start < 2; start++) {
            uint32_t c0 = start ? (uint32_t)crc32_z(0, (const Bytef *)"splat", 5) : 0;
            assert_int_equal(sp_checkpoint_crc32(c0, buf + 3, sizes[k] - (sizes[k] == big ? 3 : 0)),
                             (uint32_t)crc32_z(c0, buf + 3, sizes[k] - (sizes[k] == big ? 3 : 0)));
        }
    free(buf);
}

static void test_round_trip(void **state) {
    char *path = sp_path_join(g_dir, "ck.bin");
    write_sample(path, 7, 2, 5);
    sp_checkpoint c;
    assert_int_equal(sp_checkpoint_read(path, &c), 0);
    assert_int_equal(c.step, 1234);
    assert_true(c.train_seconds == 5.5);
    assert_int_equal(c.g.n, 7);
    assert_int_equal(c.g.sh_degree, 2);
    assert_true(c.g.means[3 * 6 + 2] == 1.0f + 6 + 0.2f);
    assert_true(c.v.sh[5] == 3.0f * 5);
    assert_int_equal(c.curves[SP_CURVE_LOSS].n, 5);
    assert_true(c.curves[SP_CURVE_LOSS].x[4] == 40);
    assert_true(c.curves[SP_CURVE_LOSS].y[4] == 0.1);
    assert_int_equal(c.curves[SP_CURVE_PSNR].n, 0);
    sp_series_push(&c.curves[SP_CURVE_PSNR], 1, 2); /* a read series keeps growing */
    sp_series_push(&c.curves[SP_CURVE_LOSS], 50, 0.01);
    assert_int_equal(c.curves[SP_CURVE_LOSS].n, 6);
    sp_checkpoint_free(&c);

    /* No Gaussians and no curve points (the writer must not pass NULL to fwrite/memcpy). */
    sp_checkpoint e = {.step = 0};
    sp_gaussians_init(&e.g, 0, 0);
    sp_gaussians_init(&e.m, 0, 0);
    sp_gaussians_init(&e.v, 0, 0);
    assert_int_equal(sp_checkpoint_write(path, &e), 0);
    sp_checkpoint_free(&e);
    assert_int_equal(sp_checkpoint_read(path, &e), 0);
    assert_int_equal(e.g.n, 0);
    assert_int_equal(e.curves[0].n, 0);
    sp_checkpoint_free(&e);
    free(path);
}

/* Header offsets: magic 0..8, version 8, step 12, count 16, degree 20, curves 24, seconds 28,
 * dataset name length 36 (then the name, the stores, the curves and a closing CRC-32). */
static void patch_u32(char *data, size_t off, uint32_t v) { memcpy(data + off, &v, 4); }

/* A valid checksum again over the first n - 4 bytes, so that the reader's field checks are reached. */
static void reseal(char *data, size_t n) {
    uint32_t crc = (uint32_t)crc32_z(0, (const Bytef *)data, n - 4);
    memcpy(data + n - 4, &crc, 4);
}

static void expect_error(const char *path, const char *data, size_t n, const char *msg) {
    assert_int_equal(sp_write_file_atomic(path, data, n), 0);
    sp_checkpoint c;
    sp_clear_error();
    clock_t t0 = clock();
    if (sp_checkpoint_read(path, &c) == 0) fail_msg("read a bad checkpoint (%s)", msg);
    double cpu = (double)(clock() - t0) / CLOCKS_PER_SEC;
    if (cpu > 2.0) fail_msg("rejecting took %.1f s of CPU time (%s)", cpu, msg);
    char *want = sp_strfmt("%s: ", path);
    if (strncmp(sp_last_error(), want, strlen(want))) fail_msg("error does not name the file: %s", sp_last_error());
    tu_assert_contains(sp_last_error(), msg);
    free(want);
    assert_int_equal(c.g.n, 0);
    assert_null(c.g.means);
}

static void test_hostile_files(void **state) {
    char *path = sp_path_join(g_dir, "ck.bin"), *bad = sp_path_join(g_dir, "bad.bin");
    write_sample(path, 3, 1, 4);
    char *good;
    size_t n;
    assert_int_equal(sp_read_file(path, &good, &n), 0);
    char *d = sp_malloc(n + 16);
#define FRESH() memcpy(d, good, n)

#define PATCHED(off, v) (FRESH(), patch_u32(d, off, v), reseal(d, n))
    PATCHED(12, 0xFFFFFFF0u); /* step -16 once cast to int */
    expect_error(bad, d, n, "corrupt checkpoint: step 4294967280 is out of range (0 to 1000000000)");
    PATCHED(12, 0x80000000u);
    expect_error(bad, d, n, "step 2147483648 is out of range");
    PATCHED(16, 100000000u); /* 1e8 Gaussians in a file of a few hundred bytes */
    expect_error(bad, d, n, "truncated or corrupt checkpoint: it claims 100000000 Gaussians");
    PATCHED(16, 0xFFFFFFFFu);
    expect_error(bad, d, n, "it claims 4294967295 Gaussians");
    PATCHED(16, 4); /* one more than stored */
    expect_error(bad, d, n, "it claims 4 Gaussians");
    PATCHED(20, 7);
    expect_error(bad, d, n, "corrupt checkpoint: SH degree 7 (0 to 3)");
    PATCHED(24, 1000);
    expect_error(bad, d, n, "corrupt checkpoint: 1000 curves, expected 4");
    PATCHED(8, 4);
    expect_error(bad, d, n, "checkpoint version 4, this splat reads versions 1 to 3");
    PATCHED(36, 0xFFFFFFFFu);
    expect_error(bad, d, n, "corrupt checkpoint: bad dataset name");
    FRESH(), memcpy(d, "NOTACKPT", 8);
    expect_error(bad, d, n, "not a splat checkpoint");
    double nan_seconds = NAN;
    FRESH(), memcpy(d + 28, &nan_seconds, 8), reseal(d, n);
    expect_error(bad, d, n, "corrupt checkpoint: training time nan s");
    /* the first curve's count (right after the three stores) claims more than is left */
    size_t curve0 = 40 + 3 * (size_t)3 * sp_gaussian_floats(sp_sh_coeffs(1)) * 4;
    PATCHED(curve0, 0xFFFFFFFFu);
    expect_error(bad, d, n, "truncated checkpoint curves");
    /* version 3's clocks after the curves (4 loss points, three empty curves): the wall time, then
     * the evaluation times */
    size_t wall = curve0 + 4 + 4 * 16 + 3 * 4;
    double minus = -5.0;
    FRESH(), memcpy(d + wall, &minus, 8), reseal(d, n);
    expect_error(bad, d, n, "corrupt checkpoint: wall time -5 s");
    PATCHED(wall + 8, 1000u);
    expect_error(bad, d, n, "truncated checkpoint curves");
    /* any changed byte, or a shorter file, breaks the checksum: the file is damaged */
    FRESH(), d[curve0 - 7] ^= 0x10;
    expect_error(bad, d, n, "the checkpoint is damaged (its checksum does not match");
    FRESH();
    expect_error(bad, d, n - 1, "the checkpoint is damaged");
    expect_error(bad, d, 30, "truncated checkpoint header");
    expect_error(bad, d, 5, "not a splat checkpoint");
    memcpy(d + n, "extra", 5);
    reseal(d, n + 5);
    expect_error(bad, d, n + 5, "corrupt checkpoint: 5 unexpected bytes at the end");
    /* a parameter or a moment that is not finite: refused, naming what and which Gaussian */
    float inf = INFINITY, nanf_ = NAN;
    FRESH(), memcpy(d + 40 + 4 * 4, &inf, 4), reseal(d, n); /* means[4]: Gaussian 1, y */
    expect_error(bad, d, n, "the checkpoint's parameters are not finite (the position of Gaussian 1)");
    size_t store = (size_t)3 * sp_gaussian_floats(sp_sh_coeffs(1)) * 4;
    FRESH(), memcpy(d + 40 + 2 * store + 9 * 4, &nanf_, 4), reseal(d, n); /* v: log_scales[0], after 3 x 3 means */
    expect_error(bad, d, n, "the checkpoint's second Adam moments are not finite (the scale of Gaussian 0)");
#undef PATCHED
    /* every truncation of a valid file is an error that names it, never a crash */
    for (size_t len = 0; len < n; len++) {
        assert_int_equal(sp_write_file_atomic(bad, good, len), 0);
        sp_checkpoint c;
        assert_int_equal(sp_checkpoint_read(bad, &c), -1);
        tu_assert_contains(sp_last_error(), bad);
    }
#undef FRESH
    free(d);
    free(good);
    free(path);
    free(bad);
}

/* The dataset a run trained on is recorded; version 1 files (no dataset, no checksum) still read. */
static void test_dataset_and_version1(void **state) {
    char *path = sp_path_join(g_dir, "ck2.bin");
    sp_checkpoint c = {.step = 7, .train_seconds = 1.0, .dataset = "/data/scenes/lego"};
    fill_store(&c.g, 2, 0, 1.0f);
    fill_store(&c.m, 2, 0, 2.0f);
    fill_store(&c.v, 2, 0, 3.0f);
    assert_int_equal(sp_checkpoint_write(path, &c), 0);
    c.dataset = NULL;
    sp_checkpoint_free(&c);
    assert_int_equal(sp_checkpoint_read(path, &c), 0);
    assert_string_equal(c.dataset, "/data/scenes/lego");
    assert_int_equal(c.g.n, 2);
    sp_checkpoint_free(&c);

    /* version 1: header, seconds, stores, curves; nothing after */
    char *data;
    size_t n;
    assert_int_equal(sp_read_file(path, &data, &n), 0);
    size_t dl = strlen("/data/scenes/lego"), v1n = n - 4 - 4 - dl - 12; /* no clocks (12 bytes) either */
    char *v1 = sp_malloc(v1n);
    memcpy(v1, data, 36);
    memcpy(v1 + 36, data + 40 + dl, v1n - 36);
    patch_u32(v1, 8, 1);
    assert_int_equal(sp_write_file_atomic(path, v1, v1n), 0);
    assert_int_equal(sp_checkpoint_read(path, &c), 0);
    assert_null(c.dataset);
    assert_int_equal(c.step, 7);
    assert_true(c.v.means[0] == 3.0f); /* fill_store: base + i + 0.1 k, base 3 for v */
    sp_checkpoint_free(&c);
    free(v1);
    free(data);
    free(path);
}

/* Version 3 records the run's wall time and when each evaluation happened (NaN: unknown, kept as
 * such); versions 1 and 2 read with both unknown, never as zeros. */
static void test_clocks_and_version2(void **state) {
    char *path = sp_path_join(g_dir, "ck3.bin");
    sp_checkpoint c = {.step = 40, .train_seconds = 2.0, .total_seconds = 12.5};
    fill_store(&c.g, 1, 0, 1.0f);
    fill_store(&c.m, 1, 0, 2.0f);
    fill_store(&c.v, 1, 0, 3.0f);
    sp_series_push(&c.curves[SP_CURVE_PSNR], 20, 18.5);
    sp_series_push(&c.curves[SP_CURVE_PSNR], 40, 21.0);
    sp_series_push(&c.eval_seconds, 20, NAN); /* before a resume from an older checkpoint */
    sp_series_push(&c.eval_seconds, 40, 3.25);
    assert_int_equal(sp_checkpoint_write(path, &c), 0);
    sp_checkpoint r;
    assert_int_equal(sp_checkpoint_read(path, &r), 0);
    assert_true(r.total_seconds == 12.5);
    assert_int_equal(r.eval_seconds.n, 2);
    assert_true(r.eval_seconds.x[1] == 40 && r.eval_seconds.y[1] == 3.25);
    assert_true(isnan(r.eval_seconds.y[0]));
    sp_checkpoint_free(&r);

    /* version 2: the same file without the clocks (8 bytes of wall time, 4 of count, 2 x 16 of
     * points) */
    char *data;
    size_t n;
    assert_int_equal(sp_read_file(path, &data, &n), 0);
    size_t v2n = n - (8 + 4 + 2 * 16);
    memcpy(data + v2n - 4, data + n - 4, 4); /* room for the checksum */
    patch_u32(data, 8, 2);
    reseal(data, v2n);
    assert_int_equal(sp_write_file_atomic(path, data, v2n), 0);
    assert_int_equal(sp_checkpoint_read(path, &r), 0);
    assert_int_equal(r.step, 40);
    assert_true(isnan(r.total_seconds));
    assert_int_equal(r.eval_seconds.n, 2); /* one unknown time per PSNR point */
    assert_true(r.eval_seconds.x[0] == 20 && r.eval_seconds.x[1] == 40);
    assert_true(isnan(r.eval_seconds.y[0]) && isnan(r.eval_seconds.y[1]));
    sp_checkpoint_free(&r);
    free(data);

    /* evaluation times that do not match the PSNR curve: refused */
    sp_series_free(&c.eval_seconds);
    sp_series_push(&c.eval_seconds, 40, 3.25);
    assert_int_equal(sp_checkpoint_write(path, &c), 0);
    assert_int_equal(sp_checkpoint_read(path, &r), -1);
    tu_assert_contains(sp_last_error(), "corrupt checkpoint: 1 evaluation times for 2 PSNR points");
    sp_checkpoint_free(&c);
    free(path);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crc_in_pieces),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_hostile_files),
        cmocka_unit_test(test_dataset_and_version1),
        cmocka_unit_test(test_clocks_and_version2),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
