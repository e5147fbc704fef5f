/* test_transforms.c — transforms.json loader: the shared fox scene (instant-ngp, distorted
 * phone video) and small synthetic files for every intrinsics rule and bad input. */
#include <math.h>

#include "testutil.h"
#include "io/image.h"
#include "io/loader.h"

static sp_load_opts opts_default(void) {
    sp_load_opts o = {.downscale = 1, .threads = 2, .load_pixels = 1, .images = NULL, .holdout_every = 0};
    return o;
}


static void expect_fail(const char *path, const char *n1, const char *n2) {
    sp_load_opts o = opts_default();
    sp_dataset d;
    sp_problems pr = {0};
    assert_int_equal(sp_load_transforms(path, &o, &d, &pr), -1);
    assert_true(pr.n > 0);
    char *all = tu_joined(&pr);
    tu_assert_contains(all, n1);
    if (n2) tu_assert_contains(all, n2);
    tu_assert_contains(sp_last_error(), pr.items[0]);
    free(all);
    sp_problems_free(&pr);
    assert_null(d.train.views);
}

/* ---- fox ---- */

static void test_fox(void **state) {
    (void)state;
    char *dir = sp_path_join(tu_data_dir(), "fox");
    if (!sp_dir_exists(dir)) {
        free(dir);
        skip();
    }
    sp_load_opts o = opts_default();
    o.holdout_every = 8;
    sp_dataset d;
    sp_problems pr = {0};
    if (sp_load_transforms(dir, &o, &d, &pr)) fail_msg("%s", sp_last_error());
    assert_string_equal(d.format, "transforms");
    assert_int_equal(d.train.n + d.test.n, 67);
    assert_int_equal(d.test.n, 9); /* 0, 8, ..., 64 */
    assert_string_equal(d.test.views[0].name, "images/0001.jpg");
    assert_string_equal(d.train.views[0].name, "images/0002.jpg");
    assert_int_equal(d.num_points, 0);
    /* fl_x 343.88 at w 270, files are 270x480: scale 1; k1..p2 crop a few pixels */
    const sp_view *v = &d.test.views[0];
    assert_float_equal(v->cam.fx, 343.88, 1e-3);
    assert_float_equal(v->cam.fy, 343.6225, 1e-3);
    int crop_x = 270 - v->cam.width, crop_y = 480 - v->cam.height;
    assert_true(crop_x > 0 && crop_x <= 10 && crop_y > 0 && crop_y <= 12);
    assert_true(v->cam.cx < 138.6395f && v->cam.cx > 138.6395f - crop_x);
    assert_non_null(v->pixels);
    assert_int_equal(v->channels, 3);
    /* the camera looks the way transform_matrix says (OpenGL -z forward): the point nearest
     * to every optical axis (the object the video circles) is in front of every camera and
     * inside most images */
    double A[9] = {0}, b[3] = {0};
    for (int s = 0; s < 2; s++) {
        const sp_split *sp = s ? &d.test : &d.train;
        for (int i = 0; i < sp->n; i++) {
            float c[3];
            sp_camera_center(&sp->views[i].cam, c);
            const float *R = sp->views[i].cam.R; /* forward axis in world = third row of R */
            double f[3] = {R[6], R[7], R[8]};
            for (int r = 0; r < 3; r++)
                for (int k = 0; k < 3; k++) {
                    double P = (r == k) - f[r] * f[k];
                    A[r * 3 + k] += P;
                    b[r] += P * c[k];
                }
        }
    }
    double det = A[0] * (A[4] * A[8] - A[5] * A[7]) - A[1] * (A[3] * A[8] - A[5] * A[6]) + A[2] * (A[3] * A[7] - A[4] * A[6]);
    double X[3];
    for (int k = 0; k < 3; k++) { /* Cramer's rule */
        double M[9];
        memcpy(M, A, sizeof M);
        for (int r = 0; r < 3; r++) M[r * 3 + k] = b[r];
        X[k] = (M[0] * (M[4] * M[8] - M[5] * M[7]) - M[1] * (M[3] * M[8] - M[5] * M[6]) + M[2] * (M[3] * M[7] - M[4] * M[6])) / det;
    }
    int inside = 0, total = 0;
    for (int s = 0; s < 2; s++) {
        const sp_split *sp = s ? &d.test : &d.train;
        for (int i = 0; i < sp->n; i++, total++) {
            const sp_camera *c = &sp->views[i].cam;
            double p[3];
            for (int r = 0; r < 3; r++) p[r] = c->R[r * 3] * X[0] + c->R[r * 3 + 1] * X[1] + c->R[r * 3 + 2] * X[2] + c->t[r];
            assert_true(p[2] > 0);
            double u = c->fx * p[0] / p[2] + c->cx, w = c->fy * p[1] / p[2] + c->cy;
            inside += u > 0 && u < c->width && w > 0 && w < c->height;
        }
    }
    assert_true(inside >= total * 9 / 10);
    /* no sparse points: the init box is a cube around the training cameras' focus point (close to the
     * all-views point X above), of half-size their mean distance to it */
    float focus[3], dist;
    assert_int_equal(sp_dataset_focus(&d, focus, &dist), 0);
    for (int k = 0; k < 3; k++) {
        assert_float_equal(focus[k], X[k], 0.05);
        assert_float_equal(0.5f * (d.init_max[k] + d.init_min[k]), focus[k], 1e-4);
        assert_float_equal(d.init_max[k] - d.init_min[k], 2 * dist, 1e-4);
    }
    assert_true(dist > 3.0f && dist < 8.0f);
    sp_dataset_free(&d);
    sp_problems_free(&pr);
    free(dir);
}

/* ---- synthetic ---- */

static void write_png(const char *path, int w, int h, int ch) {
    sp_image im = {w, h, ch, sp_malloc((size_t)w * h * ch)};
    for (int i = 0; i < w * h * ch; i++) im.pixels[i] = (uint8_t)(i * 7);
    assert_int_equal(sp_image_save_png(path, &im), 0);
    sp_image_free(&im);
}

/* A temp dir with images/f0.png, f1.png, f2.png (w x h RGBA) and the given transforms.json. */
static char *make_dir(const char *json, int w, int h) {
    char *dir = tu_tmpdir(), *imgs = sp_path_join(dir, "images");
    assert_int_equal(sp_mkdir_p(imgs), 0);
    for (int i = 0; i < 3; i++) {
        char *p = sp_strfmt("%s/f%d.png", imgs, i);
        write_png(p, w, h, 4);
        free(p);
    }
    char *j = sp_path_join(dir, "transforms.json");
    tu_write_text(j, json);
    free(j);
    free(imgs);
    return dir;
}

#define IDENT "[[1,0,0,0],[0,1,0,0],[0,0,1,0],[0,0,0,1]]"
#define MOVED "[[1,0,0,1],[0,1,0,2],[0,0,1,3],[0,0,0,1]]"

static void test_intrinsics(void **state) {
    (void)state;
    /* global intrinsics for a 40x30 capture, files at 20x15; a frame overrides fl_x; names
     * with and without extension; unsorted order */
    char *dir = make_dir("{\"fl_x\": 50, \"fl_y\": 52, \"cx\": 20, \"cy\": 15, \"w\": 40, \"h\": 30, \"aabb_scale\": 16,\n"
                         " \"camera_model\": \"OPENCV\", \"frames\": [\n"
                         "  {\"file_path\": \"images/f2\", \"transform_matrix\": " MOVED "},\n"
                         "  {\"file_path\": \"images/f0.png\", \"fl_x\": 60, \"transform_matrix\": " IDENT "},\n"
                         "  {\"file_path\": \"./images/f1\", \"transform_matrix\": " IDENT "}]}\n",
                         20, 15);
    sp_load_opts o = opts_default();
    o.holdout_every = 2;
    sp_dataset d;
    if (sp_load_transforms(dir, &o, &d, NULL)) fail_msg("%s", sp_last_error());
    /* sorted: "./images/f1", "images/f0.png", "images/f2" -> test 0 and 2 */
    assert_int_equal(d.test.n, 2);
    assert_int_equal(d.train.n, 1);
    assert_string_equal(d.test.views[0].name, "./images/f1");
    assert_string_equal(d.train.views[0].name, "images/f0.png");
    assert_string_equal(d.test.views[1].name, "images/f2");
    const sp_camera *c = &d.train.views[0].cam;
    assert_int_equal(c->width, 20);
    assert_int_equal(c->height, 15);
    assert_float_equal(c->fx, 30, 1e-5); /* the frame's 60, halved */
    assert_float_equal(c->fy, 26, 1e-5);
    assert_float_equal(c->cx, 10, 1e-5);
    assert_float_equal(c->cy, 7.5, 1e-5);
    assert_float_equal(d.test.views[0].cam.fx, 25, 1e-5);
    /* OpenGL identity: the camera looks down -z with y up -> R = diag(1, -1, -1) */
    assert_float_equal(c->R[0], 1, 0);
    assert_float_equal(c->R[4], -1, 0);
    assert_float_equal(c->R[8], -1, 0);
    float ctr[3];
    sp_camera_center(&d.test.views[1].cam, ctr);
    assert_float_equal(ctr[0], 1, 1e-6);
    assert_float_equal(ctr[1], 2, 1e-6);
    assert_float_equal(ctr[2], 3, 1e-6);
    assert_int_equal(d.has_alpha, 1);
    assert_int_equal(d.train.views[0].channels, 4);
    sp_dataset_free(&d);
    tu_rm_rf(dir);

    /* camera_angle_x / _y and no w, h: the image's own size */
    dir = make_dir("{\"camera_angle_x\": 1.0, \"camera_angle_y\": 0.8, \"frames\": [\n"
                   "  {\"file_path\": \"images/f0\", \"transform_matrix\": " IDENT "}]}",
                   20, 16);
    o.holdout_every = 0;
    char *json = sp_path_join(dir, "transforms.json");
    assert_int_equal(sp_load_transforms(json, &o, &d, NULL), 0); /* the file itself is accepted too */
    c = &d.train.views[0].cam;
    assert_float_equal(c->fx, 10 / tan(0.5), 1e-4);
    assert_float_equal(c->fy, 8 / tan(0.4), 1e-4);
    assert_float_equal(c->cx, 10, 1e-5);
    assert_float_equal(c->cy, 8, 1e-5);
    sp_dataset_free(&d);
    free(json);
    tu_rm_rf(dir);

    /* distortion crops; PINHOLE ignores the coefficients; downscale on load */
    const char *tmpl = "{\"fl_x\": 40, \"cx\": 20, \"cy\": 15, \"w\": 40, \"h\": 30, \"k1\": 0.3, \"p1\": 0.001, %s\n"
                       " \"frames\": [{\"file_path\": \"images/f0.png\", \"transform_matrix\": " IDENT "}]}";
    for (int pinhole = 0; pinhole < 2; pinhole++) {
        char *js = sp_strfmt(tmpl, pinhole ? "\"camera_model\": \"PINHOLE\"," : "");
        dir = make_dir(js, 40, 30);
        o.downscale = 2, o.holdout_every = 0;
        assert_int_equal(sp_load_transforms(dir, &o, &d, NULL), 0);
        c = &d.train.views[0].cam;
        assert_float_equal(c->fx, 20, 1e-5);
        assert_float_equal(c->fy, 20, 1e-5); /* fy defaults to fx */
        if (pinhole) {
            assert_int_equal(c->width, 20);
            assert_int_equal(c->height, 15);
        } else {
            assert_true(c->width < 20 && c->width >= 16 && c->height < 15 && c->height >= 11);
            assert_true(c->cx < 10 && c->cy < 7.5);
        }
        sp_dataset_free(&d);
        free(js);
        tu_rm_rf(dir);
    }

    /* nerfstudio's images_2/ copies are used as they are when downscale is 2 */
    dir = make_dir("{\"fl_x\": 40, \"w\": 40, \"h\": 30, \"frames\": [{\"file_path\": \"images/f0.png\", "
                   "\"transform_matrix\": " IDENT "}]}",
                   40, 30);
    char *d2 = sp_path_join(dir, "images_2"), *p2 = sp_path_join(dir, "images_2/f0.png");
    assert_int_equal(sp_mkdir_p(d2), 0);
    write_png(p2, 20, 15, 3);
    assert_int_equal(sp_load_transforms(dir, &o, &d, NULL), 0);
    assert_string_equal(d.train.views[0].path, p2);
    assert_int_equal(d.train.views[0].channels, 3);
    assert_int_equal(d.train.views[0].cam.width, 20);
    assert_float_equal(d.train.views[0].cam.fx, 20, 1e-5);
    assert_float_equal(d.train.views[0].cam.cx, 10, 1e-5);
    sp_dataset_free(&d);
    free(d2);
    free(p2);
    tu_rm_rf(dir);
}

/* Image paths that leave the dataset folder (issue #26): refused with the file and frame named,
 * unless allow_outside_images; images inside, spelled with "./", load. */
static void test_outside_images(void **state) {
    (void)state;
    char *dir = make_dir("{}", 20, 15);
    char *json = sp_path_join(dir, "transforms.json");
    static const struct {
        const char *fp, *msg;
    } cases[] = {
        {"../images/f0.png", "transforms.json: frame 0: file_path \"../images/f0.png\" climbs out of the dataset folder; "
                             "set data.allow_outside_images = true"},
        {"images/../../x/f0.png", "frame 0: file_path \"images/../../x/f0.png\" climbs out of"},
        {"/etc/passwd", "frame 0: file_path \"/etc/passwd\" is absolute, outside the dataset folder"},
        {"images/f\xff.png", "frame 0: file_path is not valid UTF-8"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        char *t = sp_strfmt("{\"fl_x\": 40, \"frames\": [{\"file_path\": \"%s\", \"transform_matrix\": " IDENT "}]}",
                            cases[k].fp);
        tu_write_text(json, t);
        free(t);
        expect_fail(dir, cases[k].msg, NULL);
    }
    /* allowed: an absolute path to the dataset's own image, with the key set */
    char *abs = sp_strfmt("{\"fl_x\": 40, \"frames\": [{\"file_path\": \"%s/images/f0.png\", \"transform_matrix\": " IDENT
                          "}, {\"file_path\": \"./images/./f1.png\", \"transform_matrix\": " IDENT "}]}", dir);
    tu_write_text(json, abs);
    free(abs);
    sp_load_opts o = opts_default();
    sp_dataset d;
    sp_problems pr = {0};
    assert_int_equal(sp_load_transforms(dir, &o, &d, &pr), -1);
    tu_assert_contains(pr.items[0], "is absolute, outside the dataset folder");
    sp_problems_free(&pr);
    o.allow_outside_images = 1;
    int rc = sp_load_transforms(dir, &o, &d, &pr);
    if (rc) fprintf(stderr, "%s\n", tu_joined(&pr));
    assert_int_equal(rc, 0);
    sp_dataset_free(&d);
    sp_problems_free(&pr);
    free(json);
    tu_rm_rf(dir);
}

static void test_bad_files(void **state) {
    (void)state;
    char *dir = make_dir("{\"fl_x\": 40, \"frames\": [\n  {\"file_path\": \"images/f0.png\",\n   \"transform_matrix\": [1, 2]\n  ]}", 20, 15);
    char *json = sp_path_join(dir, "transforms.json");
    expect_fail(dir, "transforms.json:4: not valid JSON", NULL);
    tu_write_text(json, "[1, 2]");
    expect_fail(dir, "transforms.json: expected a JSON object", NULL);
    tu_write_text(json, "{\"fl_x\": 40}");
    expect_fail(dir, "transforms.json: no \"frames\" array", NULL);
    tu_write_text(json, "{\"fl_x\": 40, \"frames\": []}");
    expect_fail(dir, "transforms.json: \"frames\" is empty", NULL);
    tu_write_text(json, "{\"fl_x\": 40, \"frames\": [{\"file_path\": \"images/f0.png\", \"transform_matrix\": [[1,0,0],[0,1,0],[0,0,1]]}]}");
    expect_fail(dir, "transforms.json: frame 0: transform_matrix is not a 4x4 camera-to-world matrix", NULL);
    tu_write_text(json, "{\"fl_x\": 40, \"frames\": [{\"file_path\": \"images/f0.png\", \"transform_matrix\": "
                        "[[2,0,0,0],[0,1,0,0],[0,0,1,0],[0,0,0,1]]}]}");
    expect_fail(dir, "frame 0: transform_matrix: rotation part is not a rotation (columns not orthonormal: off by 3", NULL);
    /* absurd values a careless or hostile file may hold: each names the file and the frame */
    static const struct {
        const char *top, *mat, *msg;
    } absurd[] = {
        {"\"fl_x\": 1e308", IDENT, "transforms.json: frame 0: fl_x 1e+308 is not a focal length in pixels"},
        {"\"fl_x\": 1e999", IDENT, "transforms.json: frame 0: fl_x is not a number"},
        {"\"fl_x\": 0", IDENT, "frame 0: fl_x 0 is not a focal length"},
        {"\"fl_x\": -3", IDENT, "frame 0: fl_x -3 is not a focal length"},
        {"\"fl_x\": 40, \"fl_y\": 1e9", IDENT, "frame 0: fl_y 1e+09 is not a focal length"},
        {"\"camera_angle_x\": 0", IDENT, "frame 0: camera_angle_x 0 is not a field of view"},
        {"\"camera_angle_x\": 4", IDENT, "frame 0: camera_angle_x 4 is not a field of view"},
        {"\"fl_x\": 40, \"cx\": -1e7", IDENT, "frame 0: cx -1e+07 is not a pixel position"},
        {"\"fl_x\": 40, \"w\": 0.4, \"h\": 15", IDENT, "frame 0: image size 0.4x15 is not whole numbers of pixels from 1 to 32768"},
        {"\"fl_x\": 40, \"w\": 1e300, \"h\": 15", IDENT, "frame 0: image size 1e+300x15 is not whole numbers"},
        {"\"fl_x\": 40, \"w\": 20, \"h\": 40000", IDENT, "frame 0: image size 20x40000 is not whole numbers"},
        {"\"fl_x\": 40", "[[0,0,0,0],[0,0,0,0],[0,0,0,0],[0,0,0,1]]", "frame 0: transform_matrix: rotation part is not a rotation"},
        {"\"fl_x\": 40", "[[1,0,0,1e30],[0,1,0,0],[0,0,1,0],[0,0,0,1]]",
         "frame 0: transform_matrix: camera position (1e+30, 0, 0) is not finite or beyond 1e+06"},
        {"\"fl_x\": 40", "[[1,0,0,0],[0,-1,0,0],[0,0,1,0],[0,0,0,1]]", "frame 0: transform_matrix: rotation part is a reflection"},
    };
    for (size_t k = 0; k < sizeof absurd / sizeof *absurd; k++) {
        char *t = sp_strfmt("{%s, \"frames\": [{\"file_path\": \"images/f0.png\", \"transform_matrix\": %s}]}",
                            absurd[k].top, absurd[k].mat);
        tu_write_text(json, t);
        free(t);
        expect_fail(dir, absurd[k].msg, NULL);
    }
    tu_write_text(json, "{\"fl_x\": 40, \"frames\": [{\"transform_matrix\": " IDENT "}, {\"file_path\": \"images/nope\", "
                        "\"transform_matrix\": " IDENT "}]}");
    expect_fail(dir, "transforms.json: frame 0: no file_path",
                "frame 1: image images/nope not found in");
    tu_write_text(json, "{\"frames\": [{\"file_path\": \"images/f0.png\", \"transform_matrix\": " IDENT "}]}");
    expect_fail(dir, "frame 0: no focal length (fl_x or camera_angle_x)", NULL);
    tu_write_text(json, "{\"fl_x\": \"forty\", \"frames\": [{\"file_path\": \"images/f0.png\", \"transform_matrix\": " IDENT "}]}");
    expect_fail(dir, "frame 0: fl_x is not a number", NULL);
    tu_write_text(json, "{\"fl_x\": 40, \"camera_model\": \"OPENCV_FISHEYE\", \"k4\": 0.1, \"frames\": [{\"file_path\": "
                        "\"images/f0.png\", \"transform_matrix\": " IDENT "}]}");
    expect_fail(dir, "frame 0: camera_model OPENCV_FISHEYE is not supported (supported: OPENCV, PINHOLE)", NULL);
    tu_write_text(json, "{\"fl_x\": 40, \"k4\": 0.1, \"frames\": [{\"file_path\": \"images/f0.png\", \"transform_matrix\": " IDENT "}]}");
    expect_fail(dir, "frame 0: k4 is set, but only fisheye models use it", NULL);
    tu_write_text(json, "{\"fl_x\": 40, \"w\": 40, \"frames\": [{\"file_path\": \"images/f0.png\", \"transform_matrix\": " IDENT "}]}");
    expect_fail(dir, "frame 0: w and h must be given together", NULL);
    /* declared size with another aspect ratio than the file's 20x15 */
    tu_write_text(json, "{\"fl_x\": 40, \"w\": 40, \"h\": 40, \"frames\": [{\"file_path\": \"images/f0.png\", \"transform_matrix\": " IDENT "}]}");
    expect_fail(dir, "frame 0: image", "is 20x15, which is not a scaled copy of the 40x40");
    /* coefficients that do not fit the image */
    tu_write_text(json, "{\"fl_x\": 10, \"k1\": 5, \"frames\": [{\"file_path\": \"images/f0.png\", \"transform_matrix\": " IDENT "}]}");
    expect_fail(dir, "frame 0: distortion", "do not fit");
    assert_int_equal(remove(json), 0);
    free(json);
    expect_fail("/nonexistent/scene", "/nonexistent/scene: no such folder or file", NULL);
    expect_fail(dir, "transforms.json: cannot open", NULL); /* a folder without transforms.json */
    tu_rm_rf(dir);
}

int main(void) {
    sp_log_set_level(SP_LOG_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fox),
        cmocka_unit_test(test_intrinsics),
        cmocka_unit_test(test_bad_files),
        cmocka_unit_test(test_outside_images),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
