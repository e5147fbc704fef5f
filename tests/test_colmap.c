/* test_colmap.c — COLMAP loader: the shared beer scene (binary model, images_4 JPEGs) and tiny
 * synthetic text and binary models for every camera model and every kind of bad input. */
#include <math.h>
#include <sys/stat.h>

#include "testutil.h"
#include "io/image.h"
#include "io/loader.h"
#include "io/undistort.h"

static sp_load_opts opts_default(void) {
    sp_load_opts o = {.downscale = 1, .threads = 2, .load_pixels = 1, .images = NULL, .holdout_every = 0};
    return o;
}


/* Loads and expects failure whose problems mention every needle. */
static void expect_fail(const char *dir, const sp_load_opts *o, const char *n1, const char *n2) {
    sp_dataset d;
    sp_problems pr = {0};
    assert_int_equal(sp_load_colmap(dir, o, &d, &pr), -1);
    assert_true(pr.n > 0);
    char *all = tu_joined(&pr);
    tu_assert_contains(all, n1);
    if (n2) tu_assert_contains(all, n2);
    tu_assert_contains(sp_last_error(), pr.items[0]);
    free(all);
    sp_problems_free(&pr);
    assert_null(d.train.views); /* nothing half-loaded is left behind */
}

/* ---- the shared beer scene ---- */

static void test_beer(void **state) {
    (void)state;
    char *dir = sp_path_join(tu_data_dir(), "beer");
    if (!sp_dir_exists(dir)) {
        free(dir);
        skip();
    }
    sp_load_opts o = opts_default();
    o.downscale = 4, o.holdout_every = 8;
    sp_dataset d;
    sp_problems pr = {0};
    int rc = sp_load_colmap(dir, &o, &d, &pr);
    if (rc) fail_msg("%s", sp_last_error());
    assert_int_equal(pr.n, 0);
    assert_string_equal(d.format, "colmap");
    assert_int_equal(d.train.n + d.test.n, 71);
    assert_int_equal(d.test.n, 9); /* 0, 8, ..., 64 */
    assert_int_equal(d.val.n, 0);
    assert_int_equal(d.num_points, 4414);
    assert_int_equal(d.has_alpha, 0);
    /* view 0 (0000.jpg, camera 1: SIMPLE_RADIAL f 1105.13 at 720x1280) is the first test view */
    const sp_view *v = &d.test.views[0];
    assert_string_equal(v->name, "0000.jpg");
    assert_string_equal(d.test.views[1].name, "0008.jpg");
    assert_string_equal(d.train.views[0].name, "0001.jpg");
    assert_float_equal(v->cam.fx, 1105.1327f * 180 / 720, 1e-2);
    assert_float_equal(v->cam.fy, 1105.1327f * 320 / 1280, 1e-2);
    /* undistortion crops a few border pixels; the principal point moves with the crop */
    int crop_x = 180 - v->cam.width, crop_y = 320 - v->cam.height;
    assert_true(crop_x >= 0 && crop_x <= 12 && crop_y >= 0 && crop_y <= 20);
    assert_true(v->cam.cx <= 90.0f && v->cam.cx > 90.0f - crop_x);
    for (int s = 0; s < 2; s++) {
        const sp_split *sp = s ? &d.test : &d.train;
        for (int i = 0; i < sp->n; i++) {
            assert_int_equal(sp->views[i].cam.width, v->cam.width); /* one crop for one size */
            assert_int_equal(sp->views[i].cam.height, v->cam.height);
            assert_int_equal(sp->views[i].channels, 3);
            assert_non_null(sp->views[i].pixels);
        }
    }
    /* init box is the points' bounding box, and holds every point */
    for (int p = 0; p < d.num_points; p++)
        for (int k = 0; k < 3; k++)
            assert_true(d.points[3 * p + k] >= d.init_min[k] && d.points[3 * p + k] <= d.init_max[k]);
    assert_true(d.extent > 0);

    /* Every 3D point observed by 0000.jpg projects where COLMAP measured it: the stored 2D
     * points are full-resolution distorted pixels; undistort them with the camera's k and map
     * them into the loaded (scaled, cropped) pinhole camera. */
    char *ipath = sp_path_join(dir, "sparse/0/images.bin"), *ppath = sp_path_join(dir, "sparse/0/points3D.bin");
    char *ib, *pb;
    size_t in, pn;
    assert_int_equal(sp_read_file(ipath, &ib, &in), 0);
    assert_int_equal(sp_read_file(ppath, &pb, &pn), 0);
    /* points3D.bin: id -> xyz */
    uint64_t np;
    memcpy(&np, pb, 8);
    uint64_t *ids = sp_malloc(np * 8);
    double *xyz = sp_malloc(np * 24);
    size_t off = 8;
    for (uint64_t i = 0; i < np; i++) {
        memcpy(&ids[i], pb + off, 8);
        memcpy(&xyz[3 * i], pb + off + 8, 24);
        uint64_t tl;
        memcpy(&tl, pb + off + 43, 8);
        off += 51 + tl * 8;
    }
    assert_int_equal(off, pn);
    /* images.bin: the first image is 0000.jpg */
    off = 8 + 64;
    assert_string_equal(ib + off, "0000.jpg");
    off += 9;
    uint64_t n2;
    memcpy(&n2, ib + off, 8);
    off += 8;
    sp_lens lens = {.width = 720, .height = 1280, .fx = 1105.1327235097242, .fy = 1105.1327235097242, .cx = 360,
                    .cy = 640, .k1 = 0.05780360126098173};
    int checked = 0;
    double worst = 0, sum = 0;
    for (uint64_t k = 0; k < n2; k++) {
        double uv[2];
        int64_t pid;
        memcpy(uv, ib + off + 24 * k, 16);
        memcpy(&pid, ib + off + 24 * k + 16, 8);
        if (pid < 0) continue;
        uint64_t j = 0;
        while (j < np && ids[j] != (uint64_t)pid) j++;
        assert_true(j < np);
        const float *R = v->cam.R, *t = v->cam.t;
        double c[3];
        for (int r = 0; r < 3; r++) c[r] = R[r * 3] * xyz[3 * j] + R[r * 3 + 1] * xyz[3 * j + 1] + R[r * 3 + 2] * xyz[3 * j + 2] + t[r];
        assert_true(c[2] > 0);
        double pu = v->cam.fx * c[0] / c[2] + v->cam.cx, pv = v->cam.fy * c[1] / c[2] + v->cam.cy, x, y;
        assert_int_equal(sp_lens_undistort_point(&lens, (uv[0] - lens.cx) / lens.fx, (uv[1] - lens.cy) / lens.fy, &x, &y), 0);
        double mu = v->cam.fx * x + v->cam.cx, mv = v->cam.fy * y + v->cam.cy;
        double e = hypot(pu - mu, pv - mv);
        if (e > worst) worst = e;
        sum += e;
        assert_true(pu > -2 && pu < v->cam.width + 2 && pv > -2 && pv < v->cam.height + 2);
        checked++;
    }
    assert_true(checked > 100);
    /* COLMAP's own reprojection error is about 1 px at full size; without undistortion the
     * worst point here would be off by 3 px */
    if (sum / checked > 0.3 || worst > 1.5)
        fail_msg("reprojection error mean %.2f px, worst %.2f px (at 180x320)", sum / checked, worst);
    free(ids);
    free(xyz);
    free(ib);
    free(pb);
    free(ipath);
    free(ppath);
    sp_dataset_free(&d);
    sp_problems_free(&pr);

    /* check mode: sizes without pixels */
    o.load_pixels = 0, o.holdout_every = 0;
    assert_int_equal(sp_load_colmap(dir, &o, &d, NULL), 0);
    assert_int_equal(d.train.n, 71);
    assert_null(d.train.views[5].pixels);
    assert_int_equal(d.train.views[0].cam.width, v ? 180 - crop_x : 0);
    sp_dataset_free(&d);

    /* no full-resolution images/ folder: the message points at images_4/ */
    o = opts_default();
    expect_fail(dir, &o, "beer/images: no such image folder", "images_4/");
    free(dir);
}

/* ---- synthetic models ---- */

enum { MW = 80, MH = 60 }; /* the model's image size; files are written at half that */

typedef struct {
    const char *name;
    int id, np;
    double params[12];
} tcam;

static const tcam cams[] = {
    {"SIMPLE_PINHOLE", 0, 3, {70, 40, 30}},
    {"PINHOLE", 1, 4, {70, 72, 41, 29}},
    {"SIMPLE_RADIAL", 2, 4, {70, 40, 30, 0.05}},
    {"RADIAL", 3, 5, {70, 40, 30, -0.05, 0.01}},
    {"OPENCV", 4, 8, {70, 72, 41, 29, 0.04, -0.01, 0.001, -0.002}},
};

static const char *img_names[3] = {"c.png", "a.png", "b.png"}; /* image ids 1, 2, 3 */

static void pose(int i, double q[4], double t[3]) {
    double th = 0.3 * i;
    q[0] = cos(th / 2), q[1] = 0, q[2] = 0, q[3] = sin(th / 2);
    t[0] = i, t[1] = 2, t[2] = 3;
}

static const double pts[2][3] = {{-1, -2, -3}, {4, 5, 6}};
static const uint8_t pcol[2][3] = {{10, 20, 30}, {40, 50, 60}};

static void put(FILE *f, const void *p, size_t n) { assert_int_equal(fwrite(p, 1, n, f), n); }
static void put_u64(FILE *f, uint64_t v) { put(f, &v, 8); }
static void put_u32(FILE *f, uint32_t v) { put(f, &v, 4); }
static void put_f64(FILE *f, double v) { put(f, &v, 8); }

static void write_cameras(const char *sp, int binary, const tcam *c, uint32_t cam_id) {
    char *p = sp_strfmt("%s/cameras.%s", sp, binary ? "bin" : "txt");
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    if (binary) {
        put_u64(f, 1);
        put_u32(f, cam_id), put_u32(f, (uint32_t)c->id), put_u64(f, MW), put_u64(f, MH);
        for (int k = 0; k < c->np; k++) put_f64(f, c->params[k]);
    } else {
        fprintf(f, "# Camera list with one line of data per camera:\n#   CAMERA_ID, MODEL, WIDTH, HEIGHT, PARAMS[]\n");
        fprintf(f, "%u %s %d %d", cam_id, c->name, MW, MH);
        for (int k = 0; k < c->np; k++) fprintf(f, " %.17g", c->params[k]);
        fprintf(f, "\n");
    }
    fclose(f);
    free(p);
}

static void write_images(const char *sp, int binary, uint32_t cam_id) {
    char *p = sp_strfmt("%s/images.%s", sp, binary ? "bin" : "txt");
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    if (binary) put_u64(f, 3);
    else fprintf(f, "# Image list with two lines of data per image:\n# header\n");
    for (int i = 0; i < 3; i++) {
        double q[4], t[3];
        pose(i, q, t);
        if (binary) {
            put_u32(f, (uint32_t)i + 1);
            for (int k = 0; k < 4; k++) put_f64(f, q[k]);
            for (int k = 0; k < 3; k++) put_f64(f, t[k]);
            put_u32(f, cam_id);
            put(f, img_names[i], strlen(img_names[i]) + 1);
            put_u64(f, i == 1 ? 0 : 1);
            if (i != 1) put_f64(f, 1.5), put_f64(f, 2.5), put_u64(f, (uint64_t)-1);
        } else {
            fprintf(f, "%d %.17g %.17g %.17g %.17g %.17g %.17g %.17g %u %s\n", i + 1, q[0], q[1], q[2], q[3], t[0], t[1],
                    t[2], cam_id, img_names[i]);
            fprintf(f, i == 1 ? "\n" : "1.5 2.5 -1\n"); /* an image without points has an empty line */
        }
    }
    fclose(f);
    free(p);
}

static void write_points(const char *sp, int binary) {
    char *p = sp_strfmt("%s/points3D.%s", sp, binary ? "bin" : "txt");
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    if (binary) put_u64(f, 2);
    else fprintf(f, "# 3D point list\n");
    for (int i = 0; i < 2; i++) {
        if (binary) {
            put_u64(f, (uint64_t)i + 7);
            for (int k = 0; k < 3; k++) put_f64(f, pts[i][k]);
            put(f, pcol[i], 3);
            put_f64(f, 0.5);
            put_u64(f, 2);
            put_u32(f, 1), put_u32(f, 0), put_u32(f, 3), put_u32(f, 0);
        } else {
            fprintf(f, "%d %g %g %g %d %d %d 0.5 1 0 3 0\n", i + 7, pts[i][0], pts[i][1], pts[i][2], pcol[i][0], pcol[i][1],
                    pcol[i][2]);
        }
    }
    fclose(f);
    free(p);
}

static void write_png(const char *path, int w, int h) {
    sp_image im = {w, h, 3, sp_malloc((size_t)w * h * 3)};
    for (int j = 0; j < h; j++)
        for (int i = 0; i < w; i++) {
            uint8_t *p = im.pixels + (j * w + i) * 3;
            p[0] = (uint8_t)(i * 6), p[1] = (uint8_t)(j * 8), p[2] = (uint8_t)(i * j);
        }
    assert_int_equal(sp_image_save_png(path, &im), 0);
    sp_image_free(&im);
}

/* A scene in a fresh temp dir: model in sparse/0, three PNGs of iw x ih in images/. */
static char *make_scene(int binary, const tcam *c, int iw, int ih) {
    char *dir = tu_tmpdir();
    assert_non_null(dir);
    char *sp = sp_path_join(dir, "sparse/0"), *imgs = sp_path_join(dir, "images");
    assert_int_equal(sp_mkdir_p(sp), 0);
    assert_int_equal(sp_mkdir_p(imgs), 0);
    write_cameras(sp, binary, c, 1);
    write_images(sp, binary, 1);
    write_points(sp, binary);
    for (int i = 0; i < 3; i++) {
        char *p = sp_path_join(imgs, img_names[i]);
        write_png(p, iw, ih);
        free(p);
    }
    free(sp);
    free(imgs);
    return dir;
}

static void test_models(void **state) {
    (void)state;
    for (int binary = 0; binary < 2; binary++)
        for (size_t m = 0; m < sizeof cams / sizeof *cams; m++) {
            const tcam *c = &cams[m];
            char *dir = make_scene(binary, c, MW / 2, MH / 2);
            sp_load_opts o = opts_default();
            o.holdout_every = 2;
            sp_dataset d;
            sp_problems pr = {0};
            if (sp_load_colmap(dir, &o, &d, &pr)) fail_msg("%s %s: %s", c->name, binary ? "bin" : "txt", sp_last_error());
            assert_int_equal(pr.n, 0);
            /* sorted by name a, b, c; holdout 2 puts a and c in test */
            assert_int_equal(d.train.n, 1);
            assert_int_equal(d.test.n, 2);
            assert_string_equal(d.test.views[0].name, "a.png");
            assert_string_equal(d.train.views[0].name, "b.png");
            assert_string_equal(d.test.views[1].name, "c.png");
            /* intrinsics scaled by 1/2 (files are half the model's size) */
            const sp_view *v = &d.train.views[0];
            int distorted = c->id >= 2;
            double fx = c->params[0], fy = c->id == 1 || c->id == 4 ? c->params[1] : fx;
            double cx = c->params[c->id == 1 || c->id == 4 ? 2 : 1], cy = c->params[c->id == 1 || c->id == 4 ? 3 : 2];
            int cl = MW / 2 - v->cam.width, ct = MH / 2 - v->cam.height;
            assert_float_equal(v->cam.fx, fx / 2, 1e-4);
            assert_float_equal(v->cam.fy, fy / 2, 1e-4);
            if (!distorted) {
                assert_int_equal(v->cam.width, MW / 2);
                assert_int_equal(v->cam.height, MH / 2);
                assert_float_equal(v->cam.cx, cx / 2, 1e-4);
                assert_float_equal(v->cam.cy, cy / 2, 1e-4);
                assert_int_equal(v->pixels[3 * (5 * (MW / 2) + 7)], 7 * 6); /* untouched pixels */
            } else {
                /* radial terms move the border: a small crop, the principal point shifted by its left/top part */
                assert_true(cl >= 0 && cl <= 6 && ct >= 0 && ct <= 6);
                assert_true(v->cam.cx <= cx / 2 + 1e-4 && v->cam.cx >= cx / 2 - cl - 1e-4);
                assert_true(v->cam.cy <= cy / 2 + 1e-4 && v->cam.cy >= cy / 2 - ct - 1e-4);
            }
            /* pose: b.png is image 3 (i = 2): rotation of 0.6 rad about z, t = (2, 2, 3) */
            assert_float_equal(v->cam.R[0], cos(0.6), 1e-6);
            assert_float_equal(v->cam.R[1], -sin(0.6), 1e-6);
            assert_float_equal(v->cam.R[3], sin(0.6), 1e-6);
            assert_float_equal(v->cam.R[8], 1, 1e-6);
            assert_float_equal(v->cam.t[0], 2, 1e-6);
            /* points and the init box */
            assert_int_equal(d.num_points, 2);
            assert_float_equal(d.points[3], 4, 0);
            assert_int_equal(d.point_colors[4], 50);
            for (int k = 0; k < 3; k++) {
                assert_float_equal(d.init_min[k], pts[0][k], 0);
                assert_float_equal(d.init_max[k], pts[1][k], 0);
            }
            sp_dataset_free(&d);
            sp_problems_free(&pr);
            tu_rm_rf(dir);
        }
}

static void test_downscale_and_folders(void **state) {
    (void)state;
    /* images/ at full model size, downscale 2 on load */
    char *dir = make_scene(1, &cams[1], MW, MH);
    sp_load_opts o = opts_default();
    o.downscale = 2;
    sp_dataset d;
    assert_int_equal(sp_load_colmap(dir, &o, &d, NULL), 0);
    assert_int_equal(d.train.n, 3);
    assert_int_equal(d.train.views[0].cam.width, MW / 2);
    assert_float_equal(d.train.views[0].cam.fx, 35, 1e-4);
    sp_dataset_free(&d);
    /* an explicit folder that does not exist */
    o.images = "photos";
    expect_fail(dir, &o, "photos: no such image folder", NULL);
    /* the model directly in PATH/sparse */
    char *s0 = sp_path_join(dir, "sparse/0"), *s = sp_path_join(dir, "sparse/x");
    assert_int_equal(rename(s0, s), 0);
    o = opts_default();
    expect_fail(dir, &o, "no COLMAP model", "sparse/0");
    char *cmd = sp_strfmt("mv '%s'/* '%s/sparse/'", s, dir);
    assert_int_equal(system(cmd), 0);
    assert_int_equal(sp_load_colmap(dir, &o, &d, NULL), 0);
    assert_int_equal(d.train.n, 3);
    sp_dataset_free(&d);
    free(cmd);
    free(s0);
    free(s);
    tu_rm_rf(dir);
}

static void test_unsupported_model(void **state) {
    (void)state;
    tcam full = {"FULL_OPENCV", 6, 8, {70, 70, 40, 30, 0, 0, 0, 0}}; /* np is unused for text below */
    /* text: the model name and the line */
    char *dir = make_scene(0, &cams[0], 40, 30);
    char *p = sp_path_join(dir, "sparse/0/cameras.txt");
    tu_write_text(p, "# cameras\n# more\n1 FULL_OPENCV 80 60 70 70 40 30 0 0 0 0 0 0 0 0\n");
    sp_load_opts o = opts_default();
    expect_fail(dir, &o, "sparse/0/cameras.txt:3: camera 1 uses model FULL_OPENCV, which splat does not support",
                "(supported: SIMPLE_PINHOLE, PINHOLE, SIMPLE_RADIAL, RADIAL, OPENCV)");
    tu_rm_rf(dir);
    free(p);
    /* binary: model id 6 needs 12 parameters */
    dir = make_scene(1, &cams[0], 40, 30);
    p = sp_path_join(dir, "sparse/0");
    full.np = 12;
    write_cameras(p, 1, &full, 1);
    expect_fail(dir, &o, "sparse/0/cameras.bin: camera 1 uses model FULL_OPENCV, which splat does not support", NULL);
    /* an id COLMAP does not have */
    full.id = 99;
    write_cameras(p, 1, &full, 1);
    expect_fail(dir, &o, "cameras.bin: camera 1 has unknown model id 99", NULL);
    free(p);
    tu_rm_rf(dir);
}

/* Every prefix of every binary file is refused with a problem naming the file. */
static void test_truncated_binary(void **state) {
    (void)state;
    char *dir = make_scene(1, &cams[4], 40, 30);
    const char *files[] = {"cameras.bin", "images.bin", "points3D.bin"};
    sp_load_opts o = opts_default();
    o.load_pixels = 0;
    for (int fi = 0; fi < 3; fi++) {
        char *p = sp_strfmt("%s/sparse/0/%s", dir, files[fi]);
        char *data;
        size_t n;
        assert_int_equal(sp_read_file(p, &data, &n), 0);
        for (size_t cut = 0; cut < n; cut++) {
            assert_int_equal(sp_write_file_atomic(p, data, cut), 0);
            sp_dataset d;
            sp_problems pr = {0};
            assert_int_equal(sp_load_colmap(dir, &o, &d, &pr), -1);
            char *all = tu_joined(&pr);
            tu_assert_contains(all, files[fi]);
            if (!strstr(all, "truncated") && !strstr(all, "can hold at most") && !strstr(all, "no images"))
                fail_msg("%s cut at %zu: %s", files[fi], cut, all);
            free(all);
            sp_problems_free(&pr);
        }
        /* trailing garbage is not silently ignored either */
        char *more = sp_malloc(n + 5);
        memcpy(more, data, n);
        memset(more + n, 0xAB, 5);
        assert_int_equal(sp_write_file_atomic(p, more, n + 5), 0);
        expect_fail(dir, &o, files[fi], "5 unexpected bytes");
        assert_int_equal(sp_write_file_atomic(p, data, n), 0);
        free(more);
        free(data);
        free(p);
    }
    /* random byte corruption: loaded or refused with a problem, never a crash */
    sp_rng rng;
    sp_rng_seed(&rng, 3, 0);
    for (int fi = 0; fi < 3; fi++) {
        char *p = sp_strfmt("%s/sparse/0/%s", dir, files[fi]);
        char *data;
        size_t n;
        assert_int_equal(sp_read_file(p, &data, &n), 0);
        for (int it = 0; it < 60; it++) {
            char *bad = sp_malloc(n);
            memcpy(bad, data, n);
            for (int k = 0; k < 3; k++) bad[sp_rng_u32(&rng) % n] = (char)sp_rng_u32(&rng);
            assert_int_equal(sp_write_file_atomic(p, bad, n), 0);
            sp_dataset d;
            sp_problems pr = {0};
            int rc = sp_load_colmap(dir, &o, &d, &pr);
            assert_true(rc == 0 ? pr.n == 0 : pr.n > 0);
            if (rc == 0) sp_dataset_free(&d);
            sp_problems_free(&pr);
            free(bad);
        }
        assert_int_equal(sp_write_file_atomic(p, data, n), 0);
        free(data);
        free(p);
    }
    /* an absurd count is refused before anything is allocated */
    char *p = sp_strfmt("%s/sparse/0/points3D.bin", dir);
    uint64_t huge = 1000000000000000ull;
    assert_int_equal(sp_write_file_atomic(p, &huge, 8), 0);
    expect_fail(dir, &o, "points3D.bin: says 1000000000000000 points", NULL);
    free(p);
    tu_rm_rf(dir);
}

static void test_bad_references(void **state) {
    (void)state;
    sp_load_opts o = opts_default();
    for (int binary = 0; binary < 2; binary++) {
        /* images refer to camera 9, which is not defined */
        char *dir = make_scene(binary, &cams[0], 40, 30);
        char *sp = sp_path_join(dir, "sparse/0");
        write_images(sp, binary, 9);
        expect_fail(dir, &o, binary ? "images.bin: image 1 (c.png) refers to camera 9" : "images.txt: image 1 (c.png) refers to camera 9",
                    binary ? "cameras.bin does not define" : "cameras.txt does not define");
        write_images(sp, binary, 1);
        /* a missing image */
        char *img = sp_path_join(dir, "images/b.png");
        assert_int_equal(remove(img), 0);
        expect_fail(dir, &o, "image 3 (b.png) not found", "images/b.png");
        /* a file of the wrong size (aspect ratio differs from 80x60) */
        write_png(img, 40, 40);
        expect_fail(dir, &o, "b.png is 40x40, which is not a scaled copy of the 80x60", NULL);
        /* a file that is not an image */
        tu_write_text(img, "hello");
        expect_fail(dir, &o, "b.png: not a PNG or JPEG file", NULL);
        free(img);
        free(sp);
        tu_rm_rf(dir);
    }
}

/* Image names that leave the image folder (issue #26): refused with the file and line, unless
 * allow_outside_images. */
static void test_outside_images(void **state) {
    (void)state;
    sp_load_opts o = opts_default();
    char *dir = make_scene(0, &cams[1], 40, 30);
    char *img = sp_path_join(dir, "sparse/0/images.txt");
    tu_write_text(img, "# i\n1 1 0 0 0 0 0 0 1 ../images/c.png\n\n");
    expect_fail(dir, &o, "sparse/0/images.txt:2: image name \"../images/c.png\" climbs out of the dataset folder; "
                         "set data.allow_outside_images = true to allow it", NULL);
    char *abs = sp_strfmt("1 1 0 0 0 0 0 0 1 %s/images/c.png\n\n", dir);
    tu_write_text(img, abs);
    expect_fail(dir, &o, "images.txt:1: image name", "is absolute, outside the dataset folder");
    tu_write_text(img, "1 1 0 0 0 0 0 0 1 c\xc3(.png\n\n");
    expect_fail(dir, &o, "images.txt:1: image name is not valid UTF-8", NULL);
    tu_write_text(img, abs);
    o.allow_outside_images = 1;
    sp_dataset d;
    sp_problems pr = {0};
    int rc = sp_load_colmap(dir, &o, &d, &pr);
    if (rc) fprintf(stderr, "%s\n", tu_joined(&pr));
    assert_int_equal(rc, 0);
    sp_dataset_free(&d);
    sp_problems_free(&pr);
    free(abs);
    free(img);
    tu_rm_rf(dir);
}

static void test_malformed_text(void **state) {
    (void)state;
    sp_load_opts o = opts_default();
    char *dir = make_scene(0, &cams[1], 40, 30);
    char *cam = sp_path_join(dir, "sparse/0/cameras.txt"), *img = sp_path_join(dir, "sparse/0/images.txt"),
         *pts3 = sp_path_join(dir, "sparse/0/points3D.txt"), *spd = sp_path_join(dir, "sparse/0");
    tu_write_text(cam, "# c\n1 PINHOLE 80 60 70 seventy 40 30\n");
    expect_fail(dir, &o, "sparse/0/cameras.txt:2: camera 1: parameter 2 (\"seventy\") is not a number", NULL);
    tu_write_text(cam, "1 PINHOLE 80 60 70 70 40\n");
    expect_fail(dir, &o, "cameras.txt:1: camera 1: model PINHOLE takes 4 parameters, found 3", NULL);
    tu_write_text(cam, "1 PINHOLE 80 60 70 70 40 30\n1 PINHOLE 80 60 70 70 40 30\n");
    expect_fail(dir, &o, "sparse/0/cameras.txt: camera 1 is defined twice", NULL);
    tu_write_text(cam, "1 PINHOLE 80\n");
    expect_fail(dir, &o, "cameras.txt:1: expected CAMERA_ID MODEL WIDTH HEIGHT", NULL);
    write_cameras(spd, 0, &cams[1], 1);
    tu_write_text(img, "# i\n# i\n1 1 0 0 0 0 0 0 1 c.png\n\n2 1 0 0 x 0 0 0 1 a.png\n\n");
    expect_fail(dir, &o, "sparse/0/images.txt:5: expected IMAGE_ID QW QX QY QZ TX TY TZ CAMERA_ID NAME", NULL);
    tu_write_text(img, "1 1 0 0 0 0 0 0 1 c.png\n\n2 1 0 0 0 0 0 0 1 c.png\n\n");
    expect_fail(dir, &o, "image c.png is listed twice", NULL);
    tu_write_text(img, "1 0 0 0 0 0 0 0 1 c.png\n\n");
    expect_fail(dir, &o, "images.txt:1: image 1 (c.png) has an invalid pose (rotation quaternion 0 0 0 0)", NULL);
    write_images(spd, 0, 1);
    tu_write_text(pts3, "# p\n7 1 2 3 10 20 300 0.5\n");
    expect_fail(dir, &o, "sparse/0/points3D.txt:2: expected POINT3D_ID X Y Z R G B ERROR", NULL);
    /* points3D is optional: without it the init box is centre +- extent */
    assert_int_equal(remove(pts3), 0);
    sp_dataset d;
    assert_int_equal(sp_load_colmap(dir, &o, &d, NULL), 0);
    assert_int_equal(d.num_points, 0);
    for (int k = 0; k < 3; k++) {
        assert_float_equal(d.init_min[k], d.center[k] - d.extent, 1e-5);
        assert_float_equal(d.init_max[k], d.center[k] + d.extent, 1e-5);
    }
    sp_dataset_free(&d);
    /* images.txt missing */
    assert_int_equal(remove(img), 0);
    expect_fail(dir, &o, "images.txt: missing", NULL);
    free(cam);
    free(img);
    free(pts3);
    free(spd);
    tu_rm_rf(dir);
}


/* Absurd numbers in an otherwise valid model, binary and text: each refused, naming the file
 * (and the line, for text). */
static void test_absurd_values(void **state) {
    (void)state;
    sp_load_opts o = opts_default();
    o.load_pixels = 0;
    for (int binary = 0; binary < 2; binary++) {
        char *dir = make_scene(binary, &cams[1], 40, 30);
        char *spd = sp_path_join(dir, "sparse/0");
        const char *ext = binary ? "bin" : "txt";
        /* intrinsics: PINHOLE fx fy cx cy */
        static const struct {
            double p[4];
            const char *msg;
        } bad_cams[] = {
            {{1e300, 70, 40, 30}, "camera 1: focal length 1e+300 is not a focal length in pixels"},
            {{0, 70, 40, 30}, "camera 1: focal length 0 is not a focal length"},
            {{-70, 70, 40, 30}, "camera 1: focal length -70 is not a focal length"},
            {{70, 70, 1e300, 30}, "camera 1: principal point x 1e+300 is not a pixel position"},
        };
        for (size_t k = 0; k < sizeof bad_cams / sizeof *bad_cams; k++) {
            tcam c = cams[1];
            memcpy(c.params, bad_cams[k].p, sizeof bad_cams[k].p);
            write_cameras(spd, binary, &c, 1);
            char *want = sp_strfmt("cameras.%s%s: %s", ext, binary ? "" : ":3", bad_cams[k].msg);
            expect_fail(dir, &o, want, NULL);
            free(want);
        }
        if (binary) {
            tcam c = cams[1];
            c.params[1] = NAN;
            write_cameras(spd, 1, &c, 1);
            expect_fail(dir, &o, "cameras.bin: camera 1: parameter 2 is not finite", NULL);
        }
        write_cameras(spd, binary, &cams[1], 1);
        /* a camera of size 0 x 60 or 1e6 x 60 */
        char *cpath = sp_strfmt("%s/cameras.%s", spd, ext);
        if (binary) {
            uint8_t b[8 + 24 + 32];
            char *data;
            size_t n;
            assert_int_equal(sp_read_file(cpath, &data, &n), 0);
            assert_int_equal(n, sizeof b);
            memcpy(b, data, n);
            free(data);
            uint64_t w = 1000000;
            memcpy(b + 16, &w, 8);
            assert_int_equal(sp_write_file_atomic(cpath, b, n), 0);
            expect_fail(dir, &o, "cameras.bin: camera 1: image size 1e+06x60 is not whole numbers of pixels", NULL);
        } else {
            tu_write_text(cpath, "1 PINHOLE 0 60 70 70 40 30\n");
            expect_fail(dir, &o, "cameras.txt:1: camera 1: image size 0x60 is not whole numbers of pixels", NULL);
        }
        free(cpath);
        write_cameras(spd, binary, &cams[1], 1);
        /* points of 1e300 */
        char *ppath = sp_strfmt("%s/points3D.%s", spd, ext);
        if (binary) {
            char *data;
            size_t n;
            assert_int_equal(sp_read_file(ppath, &data, &n), 0);
            double far = 1e300;
            memcpy(data + 8 + 8 + 8, &far, 8); /* count, id, x: y of point 0 */
            assert_int_equal(sp_write_file_atomic(ppath, data, n), 0);
            free(data);
            expect_fail(dir, &o, "points3D.bin: point 0: position (-1, 1e+300, -3) is not finite or beyond 1e+06", NULL);
        } else {
            tu_write_text(ppath, "# p\n7 1e300 2 3 10 20 30 0.5\n");
            expect_fail(dir, &o, "points3D.txt:2: point 7: position (1e+300, 2, 3) is not finite or beyond 1e+06", NULL);
        }
        write_points(spd, binary);
        free(ppath);
        /* a translation of 1e300 */
        char *ipath = sp_strfmt("%s/images.%s", spd, ext);
        if (binary) {
            char *data;
            size_t n;
            assert_int_equal(sp_read_file(ipath, &data, &n), 0);
            double far = 1e300;
            memcpy(data + 8 + 4 + 32, &far, 8); /* count, id, q: tx of image 1 */
            assert_int_equal(sp_write_file_atomic(ipath, data, n), 0);
            free(data);
            expect_fail(dir, &o, "images.bin: image 1 (c.png) has an invalid pose: translation (1e+300, 2, 3) is not finite",
                        NULL);
        } else {
            tu_write_text(ipath, "1 1 0 0 0 1e300 0 0 1 c.png\n\n");
            expect_fail(dir, &o, "images.txt:1: image 1 (c.png) has an invalid pose: translation (1e+300, 0, 0)", NULL);
            /* without the 2D-point lines every second image would be read as points: reported */
            tu_write_text(ipath, "# header\n1 1 0 0 0 0 2 3 1 c.png\n2 1 0 0 0 1 2 3 1 a.png\n3 1 0 0 0 2 2 3 1 b.png\n");
            expect_fail(dir, &o,
                        "images.txt:3: expected the 2D points of image 1 (c.png) from line 2 (X Y POINT3D_ID triplets): "
                        "images.txt needs a points line, empty when there are none, after every image line",
                        NULL);
            tu_write_text(ipath, "1 1 0 0 0 0 2 3 1 c.png\n1.5 2.5\n");
            expect_fail(dir, &o, "images.txt:2: expected the 2D points of image 1 (c.png)", NULL);
            /* with them (one empty) all three load */
            tu_write_text(ipath, "1 1 0 0 0 0 2 3 1 c.png\n1.5 2.5 -1 3 4 7\n2 1 0 0 0 1 2 3 1 a.png\n\n"
                                 "3 1 0 0 0 2 2 3 1 b.png\n1 1 -1\n");
            sp_dataset d;
            assert_int_equal(sp_load_colmap(dir, &o, &d, NULL), 0);
            assert_int_equal(d.train.n, 3);
            sp_dataset_free(&d);
        }
        free(ipath);
        free(spd);
        tu_rm_rf(dir);
    }
}

int main(void) {
    sp_log_set_level(SP_LOG_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_beer),
        cmocka_unit_test(test_models),
        cmocka_unit_test(test_downscale_and_folders),
        cmocka_unit_test(test_unsupported_model),
        cmocka_unit_test(test_truncated_binary),
        cmocka_unit_test(test_bad_references),
        cmocka_unit_test(test_malformed_text),
        cmocka_unit_test(test_outside_images),
        cmocka_unit_test(test_absurd_values),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
