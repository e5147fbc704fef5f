/* test_blender.c — the NeRF-synthetic loader on the lego scene and on broken fixtures. */
#include "testutil.h"

#include <math.h>

#include "io/image.h"
#include "io/loader.h"

static char *lego_path(void) { return sp_path_join(tu_data_dir(), "nerf_synthetic/lego"); }

static double lego_angle_x(void) {
    char *p = sp_path_join(tu_data_dir(), "nerf_synthetic/lego/transforms_train.json");
    char *text;
    assert_int_equal(sp_read_file(p, &text, NULL), 0);
    const char *k = strstr(text, "\"camera_angle_x\"");
    assert_non_null(k);
    double a = strtod(strchr(k, ':') + 1, NULL);
    free(text);
    free(p);
    return a;
}

static void test_lego(void **state) {
    (void)state;
    char *path = lego_path();
    sp_load_opts o = {.downscale = 1, .threads = 0, .load_pixels = 1};
    sp_dataset d;
    sp_problems pr = {0};
    int rc = sp_load_blender(path, &o, &d, &pr);
    if (rc) fail_msg("load failed: %s", sp_last_error());
    assert_int_equal(pr.n, 0);
    assert_int_equal(d.train.n, 100);
    assert_int_equal(d.val.n, 25);
    assert_int_equal(d.test.n, 25);
    assert_string_equal(d.format, "blender");
    assert_int_equal(d.has_alpha, 1);
    double fx = 0.5 * 200 / tan(0.5 * lego_angle_x());
    sp_split *splits[3] = {&d.train, &d.val, &d.test};
    for (int s = 0; s < 3; s++)
        for (int i = 0; i < splits[s]->n; i++) {
            sp_view *v = &splits[s]->views[i];
            assert_int_equal(v->cam.width, 200);
            assert_int_equal(v->cam.height, 200);
            assert_int_equal(v->channels, 4);
            assert_non_null(v->pixels);
            assert_true(fabs(v->cam.fx - fx) < 1e-3);
            assert_true(fabs(v->cam.fy - fx) < 1e-3);
            assert_true(fabs(v->cam.cx - 100) < 1e-6 && fabs(v->cam.cy - 100) < 1e-6);
        }
    /* The first training view is r_0, a camera about 4.03 from the origin. */
    tu_assert_contains(d.train.views[0].name, "r_0");
    tu_assert_contains(d.train.views[0].path, "train/r_0.png");
    float c[3];
    sp_camera_center(&d.train.views[0].cam, c);
    double dist = sqrt(c[0] * c[0] + c[1] * c[1] + c[2] * c[2]);
    assert_true(fabs(dist - 4.031) < 0.01);
    /* Every training camera looks at the origin: it projects near the image centre, in front. */
    for (int i = 0; i < d.train.n; i++) {
        const sp_camera *cam = &d.train.views[i].cam;
        float x = cam->t[0], y = cam->t[1], z = cam->t[2]; /* R * 0 + t */
        assert_true(z > 3.0f);
        float u = cam->fx * x / z + cam->cx, w = cam->fy * y / z + cam->cy;
        if (fabsf(u - 100) > 5 || fabsf(w - 100) > 5) fail_msg("view %d projects origin to (%g, %g)", i, u, w);
        /* R is a rotation. */
        const float *R = cam->R;
        float det = R[0] * (R[4] * R[8] - R[5] * R[7]) - R[1] * (R[3] * R[8] - R[5] * R[6]) +
                    R[2] * (R[3] * R[7] - R[4] * R[6]);
        assert_true(fabsf(det - 1) < 1e-3);
    }
    /* Camera up (OpenCV -y) is world +z for the Blender renders: the top row of the image is up. */
    {
        const float *R = d.train.views[0].cam.R;
        assert_true(-R[1 * 3 + 2] > 0.5f); /* world z in camera y is negative (up) */
    }
    /* Cameras on the upper hemisphere of radius 4.03: the mean centre is above the origin and
     * the extent is 1.1 * (largest distance from it), between 1.1 * 4.03 / 2 and 1.1 * 2 * 4.03. */
    assert_true(fabsf(d.center[0]) < 1.0f && fabsf(d.center[1]) < 1.0f);
    assert_true(d.center[2] > 1.5f && d.center[2] < 3.0f);
    assert_true(d.extent > 4.5f && d.extent < 6.0f);
    for (int k = 0; k < 3; k++) assert_true(d.init_min[k] == -1.3f && d.init_max[k] == 1.3f);
    /* Alpha is present and the background is transparent at a corner. */
    assert_int_equal(d.train.views[0].pixels[3], 0);
    sp_dataset_free(&d);
    sp_problems_free(&pr);
    free(path);
}

static void test_lego_downscale_and_sizes_only(void **state) {
    (void)state;
    char *path = lego_path();
    sp_load_opts o = {.downscale = 2, .threads = 2, .load_pixels = 1};
    sp_dataset d;
    sp_problems pr = {0};
    assert_int_equal(sp_load_blender(path, &o, &d, &pr), 0);
    double fx = 0.25 * 200 / tan(0.5 * lego_angle_x());
    for (int i = 0; i < d.train.n; i++) {
        sp_camera *c = &d.train.views[i].cam;
        assert_int_equal(c->width, 100);
        assert_int_equal(c->height, 100);
        assert_true(fabs(c->fx - fx) < 1e-3 && fabs(c->fy - fx) < 1e-3);
        assert_true(fabsf(c->cx - 50) < 1e-5 && fabsf(c->cy - 50) < 1e-5);
        assert_non_null(d.train.views[i].pixels);
    }
    float ext = d.extent;
    sp_dataset_free(&d);

    /* Sizes only: same cameras, no pixels. */
    o.load_pixels = 0;
    assert_int_equal(sp_load_blender(path, &o, &d, &pr), 0);
    assert_int_equal(pr.n, 0);
    assert_int_equal(d.train.n + d.val.n + d.test.n, 150);
    assert_int_equal(d.has_alpha, 1);
    for (int i = 0; i < d.test.n; i++) {
        assert_null(d.test.views[i].pixels);
        assert_int_equal(d.test.views[i].cam.width, 100);
        assert_true(fabs(d.test.views[i].cam.fx - fx) < 1e-3);
    }
    assert_true(fabsf(d.extent - ext) < 1e-5);
    sp_dataset_free(&d);
    sp_problems_free(&pr);
    free(path);
}

/* ---- fixtures ---- */
static const char *MAT = "[[1,0,0,0],[0,1,0,0],[0,0,1,4],[0,0,0,1]]";

static void write_png(const char *dir, const char *name, int w, int h, int channels) {
    sp_image img = {w, h, channels, sp_calloc((size_t)w * h * channels, 1)};
    for (int i = 0; i < w * h * channels; i++) img.pixels[i] = (uint8_t)(i * 7);
    char *p = sp_path_join(dir, name);
    assert_int_equal(sp_image_save_png(p, &img), 0);
    free(p);
    sp_image_free(&img);
}

static void write_json(const char *dir, const char *name, const char *text) {
    char *p = sp_path_join(dir, name);
    tu_write_text(p, text);
    free(p);
}

/* A valid two-frame scene of 8x6 RGB images. */
static char *make_scene(void) {
    char *d = tu_tmpdir();
    assert_non_null(d);
    write_png(d, "a.png", 8, 6, 3);
    write_png(d, "b.png", 8, 6, 3);
    char *json = sp_strfmt("{\"camera_angle_x\": 0.8,\n \"frames\": [\n"
                           "  {\"file_path\": \"./a\", \"transform_matrix\": %s},\n"
                           "  {\"file_path\": \"b.png\", \"transform_matrix\": %s}\n]}\n",
                           MAT, MAT);
    write_json(d, "transforms_train.json", json);
    free(json);
    return d;
}

static void rm_scene(char *d) {
    char *cmd = sp_strfmt("rm -rf '%s'", d);
    assert_int_equal(system(cmd), 0);
    free(cmd);
    free(d);
}

/* Loads dir expecting failure; asserts that one problem contains `needle`. */
static void expect_problem(const char *dir, const char *needle) {
    sp_load_opts o = {.downscale = 1, .threads = 1, .load_pixels = 1};
    sp_dataset d;
    sp_problems pr = {0};
    sp_clear_error();
    assert_int_equal(sp_load_blender(dir, &o, &d, &pr), -1);
    assert_true(pr.n >= 1);
    int found = 0;
    for (int i = 0; i < pr.n; i++) found |= strstr(pr.items[i], needle) != NULL;
    if (!found) fail_msg("expected a problem containing \"%s\", first was \"%s\"", needle, pr.items[0]);
    /* The first problem is also the error message. */
    assert_string_equal(sp_last_error(), pr.items[0]);
    assert_null(d.train.views);
    sp_problems_free(&pr);
}

static void test_fixture_ok(void **state) {
    (void)state;
    char *d = make_scene();
    /* Optional val with explicit per-frame intrinsics and its own size. */
    write_png(d, "v.png", 10, 4, 4);
    char *json = sp_strfmt("{\"fl_x\": 20, \"fl_y\": 30, \"frames\": ["
                           "{\"file_path\": \"v\", \"cx\": 4.5, \"cy\": 2.25, \"transform_matrix\": %s}]}",
                           MAT);
    char *bom = sp_strfmt("\xEF\xBB\xBF%s", json); /* a byte order mark is accepted */
    write_json(d, "transforms_val.json", bom);
    free(bom);
    free(json);
    sp_load_opts o = {.downscale = 1, .threads = 0, .load_pixels = 1};
    sp_dataset ds;
    sp_problems pr = {0};
    if (sp_load_blender(d, &o, &ds, &pr)) fail_msg("%s", sp_last_error());
    assert_int_equal(ds.train.n, 2);
    assert_int_equal(ds.val.n, 1);
    assert_int_equal(ds.test.n, 0);
    /* One RGBA image makes the whole dataset RGBA (RGB views get opaque alpha). */
    assert_int_equal(ds.has_alpha, 1);
    assert_int_equal(ds.train.views[0].channels, 4);
    assert_int_equal(ds.train.views[0].pixels[3], 255);
    assert_int_equal(ds.train.views[0].pixels[1], 7);
    sp_camera *c = &ds.train.views[1].cam;
    assert_true(fabs(c->fx - 0.5 * 8 / tan(0.4)) < 1e-4);
    assert_true(c->cx == 4.0f && c->cy == 3.0f && c->fx == c->fy);
    c = &ds.val.views[0].cam;
    assert_true(c->fx == 20.0f && c->fy == 30.0f && c->cx == 4.5f && c->cy == 2.25f);
    assert_int_equal(c->width, 10);
    /* Identity c2w in OpenGL axes: camera at (0,0,4) looking down -z. */
    float cc[3];
    sp_camera_center(c, cc);
    assert_true(fabsf(cc[2] - 4) < 1e-6f);
    assert_true(c->R[4] == -1.0f && c->R[8] == -1.0f);
    sp_dataset_free(&ds);

    /* Downscale 2 of 10x4 with given intrinsics: 5x2, halved intrinsics. */
    o.downscale = 2;
    if (sp_load_blender(d, &o, &ds, &pr)) fail_msg("%s", sp_last_error());
    c = &ds.val.views[0].cam;
    assert_int_equal(c->width, 5);
    assert_int_equal(c->height, 2);
    assert_true(c->fx == 10.0f && c->fy == 15.0f && c->cx == 2.25f && c->cy == 1.125f);
    assert_int_equal(pr.n, 0);
    sp_dataset_free(&ds);
    sp_problems_free(&pr);
    rm_scene(d);
}

static void test_missing_train(void **state) {
    (void)state;
    char *d = tu_tmpdir();
    char *want = sp_strfmt("%s/transforms_train.json: no such file", d);
    expect_problem(d, want);
    free(want);
    rm_scene(d);
}

static void test_invalid_json(void **state) {
    (void)state;
    char *d = make_scene();
    char *json = sp_strfmt("{\"camera_angle_x\": 0.8,\n \"frames\": [\n"
                           "  {\"file_path\": \"./a\", \"transform_matrix\": %s},\n"
                           "  {\"file_path\": \"b.png\" \"transform_matrix\": %s}\n]}\n",
                           MAT, MAT);
    write_json(d, "transforms_train.json", json);
    free(json);
    char *want = sp_strfmt("%s/transforms_train.json:4: invalid JSON", d);
    expect_problem(d, want);
    free(want);
    /* Trailing garbage after the object, on line 2. */
    write_json(d, "transforms_train.json", "{\"frames\": []}\n}");
    want = sp_strfmt("%s/transforms_train.json:2: invalid JSON", d);
    expect_problem(d, want);
    free(want);
    rm_scene(d);
}

static void test_missing_matrix(void **state) {
    (void)state;
    char *d = make_scene();
    write_png(d, "c.png", 8, 6, 3);
    char *json = sp_strfmt("{\"camera_angle_x\": 0.8, \"frames\": ["
                           "{\"file_path\": \"a\", \"transform_matrix\": %s},"
                           "{\"file_path\": \"b\", \"transform_matrix\": %s},"
                           "{\"file_path\": \"c\", \"transform_matrix\": [[1,0,0],[0,1,0],[0,0,1]]},"
                           "{\"file_path\": \"c\"}]}",
                           MAT, MAT);
    write_json(d, "transforms_val.json", json);
    free(json);
    char *want = sp_strfmt("%s/transforms_val.json: frame 3: missing transform_matrix", d);
    expect_problem(d, want);
    free(want);
    want = sp_strfmt("%s/transforms_val.json: frame 2: transform_matrix is not a 4x4", d);
    expect_problem(d, want);
    free(want);
    /* A string in the matrix. */
    write_json(d, "transforms_val.json",
               "{\"camera_angle_x\": 0.8, \"frames\": [{\"file_path\": \"a\", \"transform_matrix\": "
               "[[1,0,0,0],[0,1,0,0],[0,0,1,\"x\"],[0,0,0,1]]}]}");
    want = sp_strfmt("%s/transforms_val.json: frame 0: transform_matrix[2][3] is not a number", d);
    expect_problem(d, want);
    free(want);
    /* No field of view at all. */
    char *json2 = sp_strfmt("{\"frames\": [{\"file_path\": \"a\", \"transform_matrix\": %s}]}", MAT);
    write_json(d, "transforms_test.json", json2);
    free(json2);
    want = sp_strfmt("%s/transforms_test.json: frame 0: no camera_angle_x or fl_x", d);
    expect_problem(d, want);
    free(want);
    rm_scene(d);
}

static void test_missing_image(void **state) {
    (void)state;
    char *d = make_scene();
    char *a = sp_path_join(d, "a.png");
    assert_int_equal(unlink(a), 0);
    free(a);
    char *want = sp_strfmt("%s/a.png: no such file (frame 0 of transforms_train.json)", d);
    expect_problem(d, want);
    free(want);
    rm_scene(d);
}

/* ".//a" and "././/b" are the scene's a and b (the slashes after "./" do not make a path at the
 * file system's root); a missing ".//c" is named inside the scene. */
static void test_dot_slash_paths(void **state) {
    (void)state;
    char *d = make_scene();
    char *json = sp_strfmt("{\"camera_angle_x\": 0.8, \"frames\": ["
                           "{\"file_path\": \".//a\", \"transform_matrix\": %s},"
                           "{\"file_path\": \"././/b.png\", \"transform_matrix\": %s}]}",
                           MAT, MAT);
    write_json(d, "transforms_train.json", json);
    free(json);
    sp_load_opts o = {.downscale = 1, .threads = 1, .load_pixels = 1};
    sp_dataset ds;
    sp_problems pr = {0};
    if (sp_load_blender(d, &o, &ds, &pr)) fail_msg("%s", sp_last_error());
    assert_int_equal(ds.train.n, 2);
    assert_int_equal(ds.train.views[0].pixels[1], 7);
    sp_dataset_free(&ds);
    sp_problems_free(&pr);
    json = sp_strfmt("{\"camera_angle_x\": 0.8, \"frames\": [{\"file_path\": \".//c\", \"transform_matrix\": %s}]}",
                     MAT);
    write_json(d, "transforms_train.json", json);
    free(json);
    char *want = sp_strfmt("%s/c.png: no such file (frame 0 of transforms_train.json)", d);
    expect_problem(d, want);
    free(want);
    rm_scene(d);
}

static void test_corrupt_png(void **state) {
    (void)state;
    char *d = make_scene();
    char *b = sp_path_join(d, "b.png");
    tu_write_text(b, "this is not an image at all");
    char *want = sp_strfmt("%s: not a PNG or JPEG file", b);
    expect_problem(d, want);
    free(want);
    /* A PNG signature followed by garbage. */
    tu_write_text(b, "\x89PNG\r\n\x1a\ngarbage garbage garbage garbage");
    want = sp_strfmt("%s: corrupt PNG", b);
    expect_problem(d, want);
    free(want);
    free(b);
    rm_scene(d);
}

static void test_wrong_size(void **state) {
    (void)state;
    char *d = make_scene();
    write_png(d, "b.png", 7, 6, 3);
    char *want = sp_strfmt("%s/b.png: image is 7x6, expected 8x6", d);
    expect_problem(d, want);
    free(want);
    rm_scene(d);
}

static void test_empty_frames(void **state) {
    (void)state;
    char *d = make_scene();
    write_json(d, "transforms_train.json", "{\"camera_angle_x\": 0.8, \"frames\": []}");
    char *want = sp_strfmt("%s/transforms_train.json: no frames", d);
    expect_problem(d, want);
    free(want);
    write_json(d, "transforms_train.json", "{\"camera_angle_x\": 0.8}");
    want = sp_strfmt("%s/transforms_train.json: missing frames", d);
    expect_problem(d, want);
    free(want);
    rm_scene(d);
}

/* Several problems at once are all reported. */

/* Values a careless or hostile file may hold: each is a problem naming the file and the frame
 * (or the file, for top-level intrinsics). */
static void test_absurd_values(void **state) {
    (void)state;
    char *d = make_scene();
    static const struct {
        const char *top, *frame, *mat, *msg;
    } cases[] = {
        /* top-level intrinsics */
        {"\"camera_angle_x\": 1e999", "", NULL, "transforms_train.json: camera_angle_x inf is not a field of view"},
        {"\"camera_angle_x\": 0", "", NULL, "transforms_train.json: camera_angle_x 0 is not a field of view"},
        {"\"camera_angle_x\": -0.5", "", NULL, "camera_angle_x -0.5 is not a field of view"},
        {"\"camera_angle_x\": 3.2", "", NULL, "camera_angle_x 3.2 is not a field of view"},
        {"\"fl_x\": 1e999", "", NULL, "transforms_train.json: fl_x inf is not a focal length in pixels"},
        {"\"fl_x\": 0", "", NULL, "fl_x 0 is not a focal length"},
        {"\"fl_x\": -20", "", NULL, "fl_x -20 is not a focal length"},
        {"\"fl_x\": 1e308", "", NULL, "fl_x 1e+308 is not a focal length"},
        {"\"camera_angle_x\": 0.8, \"fl_y\": -1", "", NULL, "fl_y -1 is not a focal length"},
        {"\"camera_angle_x\": 0.8, \"cx\": 1e300", "", NULL, "cx 1e+300 is not a pixel position"},
        {"\"camera_angle_x\": 0.8, \"w\": 0.4", "", NULL, "w 0.4 is not a whole number of pixels from 1 to 32768"},
        {"\"camera_angle_x\": 0.8, \"w\": 1e300", "", NULL, "w 1e+300 is not a whole number of pixels"},
        {"\"camera_angle_x\": 0.8, \"h\": 0", "", NULL, "h 0 is not a whole number of pixels"},
        {"\"camera_angle_x\": 0.8, \"h\": -6", "", NULL, "h -6 is not a whole number of pixels"},
        /* per frame */
        {"\"camera_angle_x\": 0.8", "\"fl_x\": 1e999,", NULL, "transforms_train.json: frame 1: fl_x inf is not a focal length"},
        {"\"camera_angle_x\": 0.8", "\"w\": 8.5,", NULL, "transforms_train.json: frame 1: w 8.5 is not a whole number"},
        /* transform matrices */
        {"\"camera_angle_x\": 0.8", "", "[[0,0,0,0],[0,0,0,0],[0,0,0,4],[0,0,0,1]]",
         "transforms_train.json: frame 1: transform_matrix: rotation part is not a rotation"},
        {"\"camera_angle_x\": 0.8", "", "[[2,0,0,0],[0,1,0,0],[0,0,1,4],[0,0,0,1]]",
         "frame 1: transform_matrix: rotation part is not a rotation (columns not orthonormal: off by 3"},
        {"\"camera_angle_x\": 0.8", "", "[[-1,0,0,0],[0,1,0,0],[0,0,1,4],[0,0,0,1]]",
         "frame 1: transform_matrix: rotation part is a reflection"},
        {"\"camera_angle_x\": 0.8", "", "[[1,0,0,1e30],[0,1,0,0],[0,0,1,4],[0,0,0,1]]",
         "frame 1: transform_matrix: camera position (1e+30, 0, 4) is not finite or beyond 1e+06"},
        {"\"camera_angle_x\": 0.8", "", "[[1,0,0,0],[0,1,0,0],[0,0,1,4],[0,0,1,1]]",
         "frame 1: transform_matrix: bottom row is not 0 0 0 1"},
        {"\"camera_angle_x\": 0.8", "", "[[1,0,0,0],[0,1,0,0],[0,0,1,1e999],[0,0,0,1]]",
         "frame 1: transform_matrix[2][3] is not a number"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        char *json = sp_strfmt("{%s, \"frames\": [\n"
                               "  {\"file_path\": \"./a\", \"transform_matrix\": %s},\n"
                               "  {%s \"file_path\": \"b.png\", \"transform_matrix\": %s}\n]}\n",
                               cases[k].top, MAT, cases[k].frame, cases[k].mat ? cases[k].mat : MAT);
        write_json(d, "transforms_train.json", json);
        free(json);
        char *want = sp_strfmt("%s/%s", d, cases[k].msg);
        expect_problem(d, strstr(cases[k].msg, "transforms_train.json") ? want : cases[k].msg);
        free(want);
    }
    rm_scene(d);
}

static void test_all_problems(void **state) {
    (void)state;
    char *d = make_scene();
    char *json = sp_strfmt("{\"camera_angle_x\": 0.8, \"frames\": ["
                           "{\"file_path\": \"nope\", \"transform_matrix\": %s},"
                           "{\"file_path\": \"b\"}]}",
                           MAT);
    write_json(d, "transforms_train.json", json);
    free(json);
    write_json(d, "transforms_test.json", "[1, 2");
    sp_load_opts o = {.downscale = 1, .threads = 0, .load_pixels = 0};
    sp_dataset ds;
    sp_problems pr = {0};
    assert_int_equal(sp_load_blender(d, &o, &ds, &pr), -1);
    assert_int_equal(pr.n, 3);
    tu_assert_contains(pr.items[0], "nope.png: no such file (frame 0 of transforms_train.json)");
    tu_assert_contains(pr.items[1], "transforms_train.json: frame 1: missing transform_matrix");
    tu_assert_contains(pr.items[2], "transforms_test.json:1: invalid JSON");
    sp_problems_free(&pr);
    rm_scene(d);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lego),
        cmocka_unit_test(test_lego_downscale_and_sizes_only),
        cmocka_unit_test(test_fixture_ok),
        cmocka_unit_test(test_missing_train),
        cmocka_unit_test(test_invalid_json),
        cmocka_unit_test(test_missing_matrix),
        cmocka_unit_test(test_missing_image),
        cmocka_unit_test(test_dot_slash_paths),
        cmocka_unit_test(test_corrupt_png),
        cmocka_unit_test(test_wrong_size),
        cmocka_unit_test(test_empty_frames),
        cmocka_unit_test(test_all_problems),
        cmocka_unit_test(test_absurd_values),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
