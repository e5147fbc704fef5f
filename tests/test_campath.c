/* test_campath.c — camera paths: look-at axes, orbit frames at a constant distance from the focus
 * and looking at it with no roll, spiral frames looking at the focus, interpolation passing
 * exactly through its key poses, orthonormal rotations everywhere. Training cameras are those of
 * the synthetic scene (a sphere of radius 4 around the origin, world z up). */
#include "testutil.h"

#include <math.h>

#include "scene/campath.h"
#include "scene/synth.h"

static void make_dataset(sp_dataset *d, int n) {
    memset(d, 0, sizeof *d);
    sp_synth_opts so;
    sp_synth_defaults(&so);
    d->train.n = n;
    d->train.views = SP_NEW(sp_view, n);
    for (int i = 0; i < n; i++) {
        sp_view *v = &d->train.views[i];
        v->name = sp_strfmt("r_%d", i);
        v->cam = (sp_camera){.width = 64, .height = 48, .fx = 60, .fy = 60, .cx = 32, .cy = 24};
        float c2w[16];
        sp_synth_camera_c2w(&so, 0, i, c2w);
        sp_camera_set_c2w_opengl(&v->cam, c2w);
    }
    sp_dataset_compute_extent(d);
}

static void assert_rotation(const float R[9]) {
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++) {
            float d = R[3 * a] * R[3 * b] + R[3 * a + 1] * R[3 * b + 1] + R[3 * a + 2] * R[3 * b + 2];
            assert_true(fabsf(d - (a == b)) < 1e-5f);
        }
    float det = R[0] * (R[4] * R[8] - R[5] * R[7]) - R[1] * (R[3] * R[8] - R[5] * R[6]) + R[2] * (R[3] * R[7] - R[4] * R[6]);
    assert_true(fabsf(det - 1) < 1e-5f);
}

/* Camera-space position of a world point. */
static void to_cam(const sp_camera *c, const float X[3], float x[3]) {
    for (int a = 0; a < 3; a++) x[a] = c->R[3 * a] * X[0] + c->R[3 * a + 1] * X[1] + c->R[3 * a + 2] * X[2] + c->t[a];
}

static void assert_looks_at(const sp_camera *c, const float target[3]) {
    float x[3];
    to_cam(c, target, x);
    assert_true(x[2] > 0);
    assert_true(fabsf(x[0] / x[2]) < 1e-4f && fabsf(x[1] / x[2]) < 1e-4f);
}

static void test_look_at(void **state) {
    (void)state;
    sp_camera c = {0};
    float eye[3] = {0, -5, 0}, target[3] = {0, 0, 0}, up[3] = {0, 0, 1};
    sp_camera_look_at(&c, eye, target, up);
    const float want[9] = {1, 0, 0, 0, 0, -1, 0, 1, 0}; /* x right = +x, y down = -z, z forward = +y */
    for (int k = 0; k < 9; k++) assert_true(fabsf(c.R[k] - want[k]) < 1e-6f);
    float centre[3];
    sp_camera_center(&c, centre);
    for (int k = 0; k < 3; k++) assert_true(fabsf(centre[k] - eye[k]) < 1e-6f);
    /* a point above the target is above the image centre (smaller y) */
    float above[3] = {0, 0, 1}, x[3];
    to_cam(&c, above, x);
    assert_true(x[1] < 0);
}

static void test_orbit(void **state) {
    (void)state;
    sp_dataset d;
    make_dataset(&d, 30);
    sp_orbit o;
    sp_campath_orbit(&d, &o);
    for (int k = 0; k < 3; k++) assert_true(fabsf(o.focus[k]) < 1e-3f); /* every camera looks at the origin */
    assert_true(o.up[2] > 0.99f);
    enum { F = 36 };
    sp_camera cams[F];
    assert_int_equal(sp_campath_make(&d, SP_PATH_ORBIT, F, cams), 0);
    float r0 = -1;
    for (int j = 0; j < F; j++) {
        assert_rotation(cams[j].R);
        assert_looks_at(&cams[j], o.focus);
        float c[3];
        sp_camera_center(&cams[j], c);
        float r = sqrtf((c[0] - o.focus[0]) * (c[0] - o.focus[0]) + (c[1] - o.focus[1]) * (c[1] - o.focus[1]) +
                        (c[2] - o.focus[2]) * (c[2] - o.focus[2]));
        if (r0 < 0) r0 = r;
        assert_true(fabsf(r - r0) < 1e-4f * r0);                /* constant distance */
        assert_true(fabsf(c[2] - o.focus[2] - o.height) < 1e-4f); /* constant height */
        /* no roll: the image x axis is horizontal, image y points down */
        assert_true(fabsf(cams[j].R[0] * o.up[0] + cams[j].R[1] * o.up[1] + cams[j].R[2] * o.up[2]) < 1e-5f);
        assert_true(cams[j].R[3] * o.up[0] + cams[j].R[4] * o.up[1] + cams[j].R[5] * o.up[2] < 0);
        assert_int_equal(cams[j].width, 64);
        assert_true(cams[j].fx == 60.0f);
    }
    /* the training cameras are at distance 4: the orbit's radius and height come from them */
    assert_true(r0 > 3.5f && r0 <= 4.0f + 1e-3f);
    assert_true(o.height > 0.1f); /* upper hemisphere */
    /* a full circle: frames spread evenly */
    float c0[3], c1[3], cq[3];
    sp_camera_center(&cams[0], c0);
    sp_camera_center(&cams[1], c1);
    sp_camera_center(&cams[F / 2], cq);
    assert_true(fabsf(cq[0] + c0[0] - 2 * o.focus[0]) < 1e-3f && fabsf(cq[1] + c0[1] - 2 * o.focus[1]) < 1e-3f);
    float step = sqrtf((c1[0] - c0[0]) * (c1[0] - c0[0]) + (c1[1] - c0[1]) * (c1[1] - c0[1]));
    assert_true(fabsf(step - 2 * o.radius * sinf(3.14159265f / F)) < 1e-3f);
    for (int i = 0; i < d.train.n; i++) free(d.train.views[i].name);
    free(d.train.views);
}

static void test_spiral(void **state) {
    (void)state;
    sp_dataset d;
    make_dataset(&d, 20);
    sp_orbit o;
    sp_campath_orbit(&d, &o);
    enum { F = 40 };
    sp_camera cams[F];
    assert_int_equal(sp_campath_make(&d, SP_PATH_SPIRAL, F, cams), 0);
    float first[3], c[3], moved = 0;
    sp_camera_center(&cams[0], first);
    for (int j = 0; j < F; j++) {
        assert_rotation(cams[j].R);
        assert_looks_at(&cams[j], o.focus);
        sp_camera_center(&cams[j], c);
        float dd = sqrtf((c[0] - first[0]) * (c[0] - first[0]) + (c[1] - first[1]) * (c[1] - first[1]) +
                         (c[2] - first[2]) * (c[2] - first[2]));
        moved = fmaxf(moved, dd);
        assert_true(dd < 1.5f); /* stays near its base pose (radii 0.4 at distance 4) */
    }
    assert_true(moved > 0.3f);
    for (int i = 0; i < d.train.n; i++) free(d.train.views[i].name);
    free(d.train.views);
}

static void test_interp_through_keys(void **state) {
    (void)state;
    sp_dataset d;
    make_dataset(&d, 5);
    sp_camera keys[5];
    for (int i = 0; i < 5; i++) keys[i] = d.train.views[i].cam;
    enum { M = 6, F = 4 * M + 1 };
    sp_camera cams[F];
    sp_campath_interp(keys, 5, F, cams);
    for (int j = 0; j < F; j++) assert_rotation(cams[j].R);
    for (int i = 0; i < 5; i++) {
        const sp_camera *a = &cams[M * i], *b = &keys[i];
        for (int k = 0; k < 9; k++) assert_true(fabsf(a->R[k] - b->R[k]) < 1e-6f);
        float ca[3], cb[3];
        sp_camera_center(a, ca);
        sp_camera_center(b, cb);
        for (int k = 0; k < 3; k++) assert_true(fabsf(ca[k] - cb[k]) < 1e-5f);
    }
    /* continuous: no frame-to-frame step much longer than a key-to-key segment / M */
    float longest = 0, worst = 0;
    for (int i = 1; i < 5; i++) {
        float p[3], q[3];
        sp_camera_center(&keys[i - 1], p);
        sp_camera_center(&keys[i], q);
        longest = fmaxf(longest, sqrtf((q[0] - p[0]) * (q[0] - p[0]) + (q[1] - p[1]) * (q[1] - p[1]) + (q[2] - p[2]) * (q[2] - p[2])));
    }
    for (int j = 1; j < F; j++) {
        float p[3], q[3];
        sp_camera_center(&cams[j - 1], p);
        sp_camera_center(&cams[j], q);
        worst = fmaxf(worst, sqrtf((q[0] - p[0]) * (q[0] - p[0]) + (q[1] - p[1]) * (q[1] - p[1]) + (q[2] - p[2]) * (q[2] - p[2])));
    }
    assert_true(worst < 1.5f * longest / M);
    /* between two keys the rotation lies between them */
    sp_camera mid[3];
    sp_campath_interp(keys, 2, 3, mid);
    float da = 0, db = 0, dab = 0;
    for (int k = 0; k < 9; k++) {
        da += (mid[1].R[k] - keys[0].R[k]) * (mid[1].R[k] - keys[0].R[k]);
        db += (mid[1].R[k] - keys[1].R[k]) * (mid[1].R[k] - keys[1].R[k]);
        dab += (keys[0].R[k] - keys[1].R[k]) * (keys[0].R[k] - keys[1].R[k]);
    }
    assert_true(da < dab && db < dab && fabsf(da - db) < 0.05f * dab);

    /* the dataset path: orthonormal, starts at a training pose */
    sp_camera path[30];
    assert_int_equal(sp_campath_make(&d, SP_PATH_INTERP, 30, path), 0);
    int found = 0;
    for (int j = 0; j < 30; j++) assert_rotation(path[j].R);
    for (int i = 0; i < 5; i++) {
        float e = 0;
        for (int k = 0; k < 9; k++) e += fabsf(path[0].R[k] - keys[i].R[k]);
        found |= e < 1e-5f;
    }
    assert_true(found);
    for (int i = 0; i < d.train.n; i++) free(d.train.views[i].name);
    free(d.train.views);
}

static void test_bad_input(void **state) {
    (void)state;
    sp_path_kind k;
    assert_int_equal(sp_path_kind_parse("circle", &k), -1);
    tu_assert_contains(sp_last_error(), "unknown camera path 'circle'");
    assert_int_equal(sp_path_kind_parse("interp", &k), 0);
    assert_int_equal(k, SP_PATH_INTERP);
    sp_dataset d;
    memset(&d, 0, sizeof d);
    sp_camera c;
    assert_int_equal(sp_campath_make(&d, SP_PATH_ORBIT, 1, &c), -1);
    tu_assert_contains(sp_last_error(), "no training cameras");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_look_at), cmocka_unit_test(test_orbit), cmocka_unit_test(test_spiral),
        cmocka_unit_test(test_interp_through_keys), cmocka_unit_test(test_bad_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
