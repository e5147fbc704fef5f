/* test_synth.c — the procedural scene writer: files and JSON layout, RGBA images, determinism, and
 * the pose convention end to end (poses read back through the camera module must see the scene
 * where the images show it). */
#include "testutil.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <omp.h>

#include "io/image.h"
#include "io/loader.h"
#include "scene/camera.h"
#include "scene/synth.h"

static const char *SPLITS[3] = {"train", "val", "test"};

static sp_synth_opts tiny_opts(void) {
    sp_synth_opts o;
    sp_synth_defaults(&o);
    o.width = 32;
    o.height = 32;
    o.num_train = 4;
    o.num_val = 2;
    o.num_test = 2;
    o.seed = 7;
    return o;
}

static cJSON *load_json(const char *dir, const char *split) {
    char *path = sp_strfmt("%s/transforms_%s.json", dir, split);
    char *text = NULL;
    size_t n = 0;
    assert_int_equal(sp_read_file(path, &text, &n), 0);
    cJSON *j = cJSON_Parse(text);
    assert_non_null(j);
    free(text);
    free(path);
    return j;
}

/* Camera of frame `i` of a parsed transforms file, built as the blender loader does. */
static void frame_camera(const cJSON *j, int i, int w, int h, sp_camera *cam) {
    const cJSON *ax = cJSON_GetObjectItem(j, "camera_angle_x");
    assert_true(cJSON_IsNumber(ax));
    const cJSON *f = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "frames"), i);
    assert_non_null(f);
    const cJSON *m = cJSON_GetObjectItem(f, "transform_matrix");
    assert_int_equal(cJSON_GetArraySize(m), 4);
    float c2w[16];
    for (int r = 0; r < 4; r++) {
        const cJSON *row = cJSON_GetArrayItem(m, r);
        assert_int_equal(cJSON_GetArraySize(row), 4);
        for (int c = 0; c < 4; c++) c2w[r * 4 + c] = (float)cJSON_GetArrayItem(row, c)->valuedouble;
    }
    memset(cam, 0, sizeof *cam);
    cam->width = w;
    cam->height = h;
    cam->fx = cam->fy = (float)(0.5 * w / tan(0.5 * ax->valuedouble));
    cam->cx = 0.5f * (float)w;
    cam->cy = 0.5f * (float)h;
    sp_camera_set_c2w_opengl(cam, c2w);
}

static void load_png(const char *dir, const char *split, int i, sp_image *img) {
    char *path = sp_strfmt("%s/%s/r_%d.png", dir, split, i);
    assert_int_equal(sp_image_load(path, img), 0);
    free(path);
}

static int files_equal(const char *a, const char *b) {
    char *da = NULL, *db = NULL;
    size_t na = 0, nb = 0;
    assert_int_equal(sp_read_file(a, &da, &na), 0);
    assert_int_equal(sp_read_file(b, &db, &nb), 0);
    int eq = na == nb && memcmp(da, db, na) == 0;
    free(da);
    free(db);
    return eq;
}

static void test_layout(void **state) {
    (void)state;
    char *dir = tu_tmpdir();
    char *out = sp_path_join(dir, "nested/scene"); /* parents are created */
    sp_synth_opts o = tiny_opts();
    assert_int_equal(sp_synth_write(out, &o), 0);
    int counts[3] = {4, 2, 2};
    for (int s = 0; s < 3; s++) {
        cJSON *j = load_json(out, SPLITS[s]);
        const cJSON *ax = cJSON_GetObjectItem(j, "camera_angle_x");
        assert_true(cJSON_IsNumber(ax));
        assert_true(fabs(ax->valuedouble - SP_SYNTH_CAMERA_ANGLE_X) < 1e-9);
        const cJSON *frames = cJSON_GetObjectItem(j, "frames");
        assert_true(cJSON_IsArray(frames));
        assert_int_equal(cJSON_GetArraySize(frames), counts[s]);
        for (int i = 0; i < counts[s]; i++) {
            const cJSON *f = cJSON_GetArrayItem(frames, i);
            const cJSON *fp = cJSON_GetObjectItem(f, "file_path");
            assert_true(cJSON_IsString(fp));
            char want[64];
            snprintf(want, sizeof want, "./%s/r_%d", SPLITS[s], i);
            assert_string_equal(fp->valuestring, want);
            /* rotation part orthonormal, last row 0 0 0 1, centre at radius 4 in the upper hemisphere */
            sp_camera cam;
            frame_camera(j, i, 32, 32, &cam);
            const cJSON *m = cJSON_GetObjectItem(f, "transform_matrix");
            const cJSON *last = cJSON_GetArrayItem(m, 3);
            for (int c = 0; c < 4; c++)
                assert_true(fabs(cJSON_GetArrayItem(last, c)->valuedouble - (c == 3 ? 1.0 : 0.0)) < 1e-12);
            for (int a = 0; a < 3; a++)
                for (int b = 0; b < 3; b++) {
                    float d = 0;
                    for (int k = 0; k < 3; k++) d += cam.R[a * 3 + k] * cam.R[b * 3 + k];
                    assert_true(fabsf(d - (a == b ? 1.0f : 0.0f)) < 1e-5f);
                }
            float c[3];
            sp_camera_center(&cam, c);
            assert_true(fabsf(sqrtf(c[0] * c[0] + c[1] * c[1] + c[2] * c[2]) - SP_SYNTH_CAMERA_RADIUS) < 1e-4f);
            assert_true(c[2] > 0.0f);

            sp_image img;
            load_png(out, SPLITS[s], i, &img);
            assert_int_equal(img.width, 32);
            assert_int_equal(img.height, 32);
            assert_int_equal(img.channels, 4);
            int clear = 0, opaque = 0, partial = 0;
            for (int p = 0; p < 32 * 32; p++) {
                uint8_t a = img.pixels[4 * p + 3];
                clear += a == 0;
                opaque += a == 255;
                partial += a > 0 && a < 255;
            }
            assert_true(clear > 0);
            assert_true(opaque > 0);
            assert_true(partial > 0); /* antialiased edges */
            sp_image_free(&img);
        }
        cJSON_Delete(j);
    }
    /* nothing but the final files is left behind (no temporaries) */
    char *extra = sp_strfmt("%s/train/r_4.png", out);
    assert_false(sp_file_exists(extra));
    free(extra);
    free(out);
    free(dir);
}

static void test_determinism(void **state) {
    (void)state;
    char *dir = tu_tmpdir();
    char *a = sp_path_join(dir, "a"), *b = sp_path_join(dir, "b"), *c = sp_path_join(dir, "c");
    sp_synth_opts o = tiny_opts();
    assert_int_equal(sp_synth_write(a, &o), 0);
    assert_int_equal(sp_synth_write(b, &o), 0);
    o.seed = 8;
    assert_int_equal(sp_synth_write(c, &o), 0);
    const char *files[] = {"transforms_train.json", "transforms_val.json", "transforms_test.json", "train/r_0.png",
                           "train/r_3.png", "val/r_1.png", "test/r_0.png"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        char *pa = sp_path_join(a, files[i]), *pb = sp_path_join(b, files[i]), *pc = sp_path_join(c, files[i]);
        assert_true(files_equal(pa, pb));
        assert_false(files_equal(pa, pc)); /* another seed, other poses */
        free(pa);
        free(pb);
        free(pc);
    }
    /* the thread count does not change a byte */
    char *d1 = sp_path_join(dir, "one_thread");
    int threads = omp_get_max_threads();
    omp_set_num_threads(1);
    o.seed = 7;
    assert_int_equal(sp_synth_write(d1, &o), 0);
    omp_set_num_threads(threads);
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        char *pa = sp_path_join(a, files[i]), *p1 = sp_path_join(d1, files[i]);
        assert_true(files_equal(pa, p1));
        free(pa);
        free(p1);
    }
    free(d1);
    /* the poses of the three splits differ from one another */
    float m0[16], m1[16], m2[16];
    sp_synth_camera_c2w(&o, 0, 0, m0);
    sp_synth_camera_c2w(&o, 1, 0, m1);
    sp_synth_camera_c2w(&o, 2, 0, m2);
    assert_true(memcmp(m0, m1, sizeof m0) != 0 && memcmp(m0, m2, sizeof m0) != 0 && memcmp(m1, m2, sizeof m1) != 0);
    free(a);
    free(b);
    free(c);
    free(dir);
}

/* The world origin (inside the central sphere) projects to the image centre, which is opaque. */
static void test_origin_projects_to_centre(void **state) {
    (void)state;
    char *dir = tu_tmpdir();
    sp_synth_opts o = tiny_opts();
    o.width = 48; /* not square: fx applies to the width */
    assert_int_equal(sp_synth_write(dir, &o), 0);
    cJSON *j = load_json(dir, "train");
    for (int i = 0; i < 4; i++) {
        sp_camera cam;
        frame_camera(j, i, 48, 32, &cam);
        assert_true(cam.t[2] > 3.9f); /* in front of the camera, at distance 4 */
        float u = cam.fx * cam.t[0] / cam.t[2] + cam.cx, v = cam.fy * cam.t[1] / cam.t[2] + cam.cy;
        assert_true(fabsf(u - 24.0f) < 1e-3f && fabsf(v - 16.0f) < 1e-3f);
        sp_image img;
        load_png(dir, "train", i, &img);
        assert_int_equal(img.width, 48);
        assert_int_equal(img.pixels[4 * ((size_t)(int)v * 48 + (int)u) + 3], 255);
        /* world up (+z) points up the image (smaller rows) */
        float up[3] = {0, 0, 1}, p[3];
        for (int r = 0; r < 3; r++)
            p[r] = cam.R[r * 3 + 0] * up[0] + cam.R[r * 3 + 1] * up[1] + cam.R[r * 3 + 2] * up[2] + cam.t[r];
        assert_true(cam.fy * p[1] / p[2] + cam.cy < v);
        sp_image_free(&img);
    }
    cJSON_Delete(j);
    free(dir);
}

/* With one sample per pixel (at the pixel centre) the alpha channel is exactly the silhouette of
 * the scene as seen through the written pose: a flipped axis or transposed matrix fails here. */
static void test_silhouette_matches_pose(void **state) {
    (void)state;
    char *dir = tu_tmpdir();
    sp_synth_opts o = tiny_opts();
    o.width = 40;
    o.height = 30;
    o.samples = 1;
    assert_int_equal(sp_synth_write(dir, &o), 0);
    for (int s = 0; s < 3; s++) {
        cJSON *j = load_json(dir, SPLITS[s]);
        for (int i = 0; i < cJSON_GetArraySize(cJSON_GetObjectItem(j, "frames")); i++) {
            sp_camera cam;
            frame_camera(j, i, 40, 30, &cam);
            float c[3];
            sp_camera_center(&cam, c);
            sp_image img;
            load_png(dir, SPLITS[s], i, &img);
            int mismatch = 0, hits = 0;
            for (int y = 0; y < 30; y++)
                for (int x = 0; x < 40; x++) {
                    float dc[3] = {(x + 0.5f - cam.cx) / cam.fx, (y + 0.5f - cam.cy) / cam.fy, 1.0f}, dw[3];
                    for (int r = 0; r < 3; r++) /* R^T: camera -> world */
                        dw[r] = cam.R[0 * 3 + r] * dc[0] + cam.R[1 * 3 + r] * dc[1] + cam.R[2 * 3 + r] * dc[2];
                    int hit = sp_synth_ray_hits(c, dw);
                    uint8_t a = img.pixels[4 * (y * 40 + x) + 3];
                    assert_true(a == 0 || a == 255);
                    hits += hit;
                    mismatch += hit != (a == 255);
                }
            assert_true(hits > 40);
            assert_true(mismatch <= 2); /* rounding right on a silhouette edge */
            sp_image_free(&img);
        }
        cJSON_Delete(j);
    }
    free(dir);
}

static void test_bad_options(void **state) {
    (void)state;
    char *dir = tu_tmpdir();
    char *out = sp_path_join(dir, "out");
    sp_synth_opts o = tiny_opts();
    o.width = 0;
    assert_int_equal(sp_synth_write(out, &o), -1);
    tu_assert_contains(sp_last_error(), "image size 0x32");
    o = tiny_opts();
    o.samples = 0;
    assert_int_equal(sp_synth_write(out, &o), -1);
    tu_assert_contains(sp_last_error(), "samples");
    o = tiny_opts();
    o.num_train = o.num_val = o.num_test = 0;
    assert_int_equal(sp_synth_write(out, &o), -1);
    tu_assert_contains(sp_last_error(), "at least one view");
    o = tiny_opts();
    o.num_val = -1;
    assert_int_equal(sp_synth_write(out, &o), -1);
    tu_assert_contains(sp_last_error(), "view counts");
    assert_false(sp_dir_exists(out)); /* nothing written for rejected options */
    assert_int_equal(sp_synth_write("", &o), -1);
    tu_assert_contains(sp_last_error(), "no output directory");
    /* a file where the directory should be */
    char *file = sp_path_join(dir, "file");
    tu_write_text(file, "x");
    o = tiny_opts();
    assert_int_equal(sp_synth_write(file, &o), -1);
    tu_assert_contains(sp_last_error(), file);
    /* a split directory that cannot be created */
    char *blocked = sp_path_join(dir, "blocked");
    assert_int_equal(sp_mkdir_p(blocked), 0);
    char *train = sp_path_join(blocked, "train");
    tu_write_text(train, "x");
    assert_int_equal(sp_synth_write(blocked, &o), -1);
    tu_assert_contains(sp_last_error(), "train");
    char *json = sp_path_join(blocked, "transforms_train.json");
    assert_false(sp_file_exists(json));
    free(json);
    free(train);
    free(blocked);
    free(file);
    free(out);
    free(dir);
}

/* The large capture (--scene capture): a transforms.json capture of RGB JPEGs with lens
 * distortion that the loader reads (every 8th view held out, every view undistorted, opaque),
 * identical files from identical options whatever the thread count, and a refused split. */
static void test_capture(void **state) {
    sp_synth_opts o;
    sp_synth_capture_defaults(&o);
    assert_int_equal(o.num_train, 1000);
    assert_int_equal(o.width, 1600);
    o.width = 64, o.height = 48, o.num_train = 17;
    char *a = tu_tmpdir(), *b = tu_tmpdir();
    assert_int_equal(sp_synth_write(a, &o), 0);
    int old = omp_get_max_threads();
    omp_set_num_threads(1);
    assert_int_equal(sp_synth_write(b, &o), 0);
    omp_set_num_threads(old);
    for (int i = 0; i < 17; i += 8) {
        char *pa = sp_strfmt("%s/images/%05d.jpg", a, i), *pb = sp_strfmt("%s/images/%05d.jpg", b, i), *da, *db;
        size_t na, nb;
        assert_int_equal(sp_read_file(pa, &da, &na), 0);
        assert_int_equal(sp_read_file(pb, &db, &nb), 0);
        assert_int_equal(na, nb);
        assert_memory_equal(da, db, na);
        free(pa), free(pb), free(da), free(db);
    }
    sp_load_opts lo = {.downscale = 1, .threads = 1, .load_pixels = 1, .holdout_every = 8};
    sp_dataset d;
    sp_problems probs = {0};
    int rc = sp_dataset_load(a, "auto", &lo, &d, &probs);
    if (rc) fail_msg("load: %s", probs.n ? probs.items[0] : sp_last_error());
    sp_problems_free(&probs);
    assert_string_equal(d.format, "transforms");
    assert_int_equal(d.train.n, 14);
    assert_int_equal(d.test.n, 3);
    assert_int_equal(d.has_alpha, 0);
    for (int i = 0; i < d.train.n; i++) {
        assert_int_equal(d.train.views[i].channels, 3);
        assert_int_equal(d.train.views[i].undistorted, 1);
        assert_true(d.train.views[i].lens.k1 < 0.0);
    }
    sp_dataset_free(&d);
    o.num_test = 2;
    assert_int_not_equal(sp_synth_write(a, &o), 0);
    tu_assert_contains(sp_last_error(), "one view count");
    tu_rm_rf(a), tu_rm_rf(b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layout),
        cmocka_unit_test(test_determinism),
        cmocka_unit_test(test_origin_projects_to_centre),
        cmocka_unit_test(test_silhouette_matches_pose),
        cmocka_unit_test(test_bad_options),
        cmocka_unit_test(test_capture),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
