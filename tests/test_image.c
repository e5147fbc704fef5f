/* test_image.c — image decoding on hostile files: PNG and JPEG headers that claim huge sizes
 * are rejected before decoding (one shared cap), and every error names the file. */
#include "testutil.h"

#include <time.h>

#include <jpeglib.h>
#include <zlib.h>

#include "io/image.h"

static char *g_dir;

static int setup(void **state) {
    g_dir = tu_tmpdir();
    return g_dir ? 0 : -1;
}
static int teardown(void **state) {
    tu_rm_rf(g_dir);
    return 0;
}

static void put_be32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8), p[3] = (uint8_t)v;
}

/* A valid 8x8 RGB PNG (malloc'd bytes). */
static uint8_t *small_png(size_t *n) {
    uint8_t px[8 * 8 * 3];
    for (int i = 0; i < (int)sizeof px; i++) px[i] = (uint8_t)(i * 7);
    sp_image im = {8, 8, 3, px};
    char *path = sp_path_join(g_dir, "small.png");
    assert_int_equal(sp_image_save_png(path, &im), 0);
    char *data;
    assert_int_equal(sp_read_file(path, &data, n), 0);
    free(path);
    return (uint8_t *)data;
}

/* Sets a PNG's IHDR size and fixes the chunk's CRC, so only the size is wrong. */
static void png_set_size(uint8_t *png, uint32_t w, uint32_t h) {
    put_be32(png + 16, w);
    put_be32(png + 20, h);
    put_be32(png + 29, (uint32_t)crc32(0, png + 12, 17));
}

/* A valid 16x16 JPEG (malloc'd bytes). */
static uint8_t *small_jpeg(size_t *n) {
    struct jpeg_compress_struct c;
    struct jpeg_error_mgr err;
    c.err = jpeg_std_error(&err);
    jpeg_create_compress(&c);
    unsigned char *out = NULL;
    unsigned long size = 0;
    jpeg_mem_dest(&c, &out, &size);
    c.image_width = 16, c.image_height = 16, c.input_components = 3, c.in_color_space = JCS_RGB;
    jpeg_set_defaults(&c);
    jpeg_start_compress(&c, TRUE);
    uint8_t row[16 * 3];
    for (int y = 0; y < 16; y++) {
        for (int x = 0; x < 48; x++) row[x] = (uint8_t)(x * 5 + y);
        JSAMPROW r = row;
        jpeg_write_scanlines(&c, &r, 1);
    }
    jpeg_finish_compress(&c);
    jpeg_destroy_compress(&c);
    uint8_t *copy = sp_malloc(size);
    memcpy(copy, out, size);
    free(out);
    *n = size;
    return copy;
}

/* Sets the size in a JPEG's start-of-frame marker. */
static void jpeg_set_size(uint8_t *j, size_t n, unsigned w, unsigned h) {
    for (size_t i = 2; i + 9 < n; i++)
        if (j[i] == 0xFF && (j[i + 1] == 0xC0 || j[i + 1] == 0xC2)) {
            j[i + 5] = (uint8_t)(h >> 8), j[i + 6] = (uint8_t)h;
            j[i + 7] = (uint8_t)(w >> 8), j[i + 8] = (uint8_t)w;
            return;
        }
    fail_msg("no SOF marker");
}

static void expect_load_error(const char *name, const uint8_t *data, size_t n, const char *msg) {
    char *path = sp_path_join(g_dir, name);
    assert_int_equal(sp_write_file_atomic(path, data, n), 0);
    sp_image im;
    clock_t t0 = clock();
    if (sp_image_load(path, &im) == 0) fail_msg("%s loaded (%dx%d)", name, im.width, im.height);
    double cpu = (double)(clock() - t0) / CLOCKS_PER_SEC;
    if (cpu > 2.0) fail_msg("%s: rejecting took %.1f s of CPU time", name, cpu);
    char *want = sp_strfmt("%s: %s", path, msg);
    tu_assert_contains(sp_last_error(), want);
    assert_null(im.pixels);
    free(want);
    free(path);
}

static void test_valid_images_load(void **state) {
    size_t n;
    uint8_t *png = small_png(&n);
    sp_image im;
    assert_int_equal(sp_image_decode("mem.png", png, n, SP_IMAGE_MAX_PIXELS, &im), 0);
    assert_int_equal(im.width, 8);
    assert_int_equal(im.pixels[3 * 9], (uint8_t)(27 * 7));
    sp_image_free(&im);
    /* exactly at a pixel cap still loads, one pixel less is refused */
    assert_int_equal(sp_image_decode("mem.png", png, n, 64, &im), 0);
    sp_image_free(&im);
    assert_int_equal(sp_image_decode("mem.png", png, n, 63, &im), -1);
    tu_assert_contains(sp_last_error(), "mem.png: PNG claims 8x8 pixels, more than splat decodes");
    free(png);
    uint8_t *jpg = small_jpeg(&n);
    assert_int_equal(sp_image_decode("mem.jpg", jpg, n, SP_IMAGE_MAX_PIXELS, &im), 0);
    assert_int_equal(im.width, 16);
    assert_int_equal(im.height, 16);
    sp_image_free(&im);
    free(jpg);
}

static void test_huge_claims_rejected(void **state) {
    size_t n;
    uint8_t *png = small_png(&n);
    png_set_size(png, 65500, 65500);
    expect_load_error("huge.png", png, n, "PNG claims 65500x65500 pixels, more than splat decodes (at most 32768 a side");
    png_set_size(png, 32768, 32768); /* within the side cap, over the pixel cap */
    expect_load_error("area.png", png, n, "PNG claims 32768x32768 pixels");
    png_set_size(png, 100000, 1);
    expect_load_error("wide.png", png, n, "PNG claims 100000x1 pixels");
    free(png);

    uint8_t *jpg = small_jpeg(&n);
    jpeg_set_size(jpg, n, 65500, 65500); /* the 650-byte memory bomb */
    expect_load_error("huge.jpg", jpg, n, "JPEG claims 65500x65500 pixels, more than splat decodes");
    jpeg_set_size(jpg, n, 20000, 20000);
    expect_load_error("area.jpg", jpg, n, "JPEG claims 20000x20000 pixels");
    jpeg_set_size(jpg, n, 0, 16);
    expect_load_error("zero.jpg", jpg, n, "corrupt JPEG"); /* libjpeg refuses a zero size itself */
    free(jpg);
}

static void test_errors_name_the_file(void **state) {
    size_t n;
    uint8_t *png = small_png(&n);
    expect_load_error("trunc.png", png, n / 2, "corrupt PNG");
    expect_load_error("sig.png", png, 8, "corrupt PNG");
    png[40] ^= 0xFF; /* a CRC or data error */
    expect_load_error("bits.png", png, n, "corrupt PNG");
    free(png);
    uint8_t *jpg = small_jpeg(&n);
    expect_load_error("trunc.jpg", jpg, 20, "corrupt JPEG");
    expect_load_error("cut.jpg", jpg, n - 10, "corrupt JPEG: the file ends before the image does (truncated)");
    expect_load_error("short.jpg", jpg, n - 2, "corrupt JPEG: the file ends before the image does (truncated)");
    free(jpg);
    expect_load_error("text.png", (const uint8_t *)"hello", 5, "not a PNG or JPEG file");
    expect_load_error("empty.png", (const uint8_t *)"", 0, "not a PNG or JPEG file");
    sp_image im;
    assert_int_equal(sp_image_load("/nonexistent/x.png", &im), -1);
    tu_assert_contains(sp_last_error(), "/nonexistent/x.png");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_images_load),
        cmocka_unit_test(test_huge_claims_rejected),
        cmocka_unit_test(test_errors_name_the_file),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
