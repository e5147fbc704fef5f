/* fuzz_colmap_bin.c — a COLMAP binary model. The first byte picks the file the rest of the
 * input becomes (0 cameras.bin, 1 images.bin, 2 points3D.bin); the other two are valid. The
 * model loads, or every problem names its file. */
#include "fuzz_util.h"

#include "io/loader.h"

typedef struct {
    uint8_t b[512];
    size_t n;
} buf;
static void put(buf *b, const void *p, size_t n) {
    memcpy(b->b + b->n, p, n);
    b->n += n;
}
static void u64(buf *b, uint64_t v) { put(b, &v, 8); }
static void u32(buf *b, uint32_t v) { put(b, &v, 4); }
static void f64(buf *b, double v) { put(b, &v, 8); }

static const char *names[3] = {"colmap_bin/sparse/0/cameras.bin", "colmap_bin/sparse/0/images.bin",
                               "colmap_bin/sparse/0/points3D.bin"};

/* The valid default of file k (little-endian hosts, like COLMAP's own files). */
static void make_default(int k, buf *b) {
    b->n = 0;
    if (k == 0) { /* one PINHOLE camera, 8x6 */
        u64(b, 1), u32(b, 1), u32(b, 1), u64(b, 8), u64(b, 6);
        f64(b, 7), f64(b, 7), f64(b, 4), f64(b, 3);
    } else if (k == 1) { /* two images, one with a 2D point */
        u64(b, 2);
        for (int i = 0; i < 2; i++) {
            u32(b, (uint32_t)i + 1);
            f64(b, 1), f64(b, 0), f64(b, 0), f64(b, 0);
            f64(b, i), f64(b, 0), f64(b, 3);
            u32(b, 1);
            put(b, i ? "b.png" : "a.png", 6);
            u64(b, (uint64_t)(1 - i));
            if (!i) f64(b, 1), f64(b, 1), u64(b, (uint64_t)-1);
        }
    } else { /* one point seen by image 1 */
        u64(b, 1), u64(b, 1);
        f64(b, 0), f64(b, 0), f64(b, 0);
        put(b, "\x0a\x14\x1e", 3);
        f64(b, 0.5), u64(b, 1), u32(b, 1), u32(b, 0);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static int ready;
    if (!ready) {
        fz_png("colmap_bin/images/a.png", 8, 6);
        fz_png("colmap_bin/images/b.png", 8, 6);
        ready = 1;
    }
    int which = size ? data[0] % 3 : 0;
    for (int k = 0; k < 3; k++) {
        if (size && k == which) {
            free(fz_write(names[k], data + 1, size - 1));
        } else {
            buf b;
            make_default(k, &b);
            free(fz_write(names[k], b.b, b.n));
        }
    }
    char *dir = sp_path_join(fz_dir(), "colmap_bin");
    sp_load_opts o = {.downscale = 1, .threads = 1, .load_pixels = 1, .holdout_every = 2};
    sp_dataset ds;
    sp_problems pr = {0};
    if (sp_load_colmap(dir, &o, &ds, &pr) == 0) sp_dataset_free(&ds);
    fz_check_named(&pr, dir);
    sp_problems_free(&pr);
    free(dir);
    return 0;
}
