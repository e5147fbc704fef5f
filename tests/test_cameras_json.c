/* test_cameras_json.c — cameras.json in the original 3DGS layout: parsed back with cJSON and checked
 * against the dataset's cameras, and against the scene's own camera-to-world matrices (the
 * convention: position = camera centre, rotation = camera-to-world with OpenCV camera axes). */
#include "testutil.h"

#include <cjson/cJSON.h>
#include <math.h>

#include "io/cameras_json.h"
#include "io/loader.h"
#include "scene/synth.h"

static double num(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    assert_true(cJSON_IsNumber(v));
    return v->valuedouble;
}

static void test_cameras_json(void **state) {
    (void)state;
    char *d = tu_tmpdir();
    char *scene = sp_path_join(d, "scene");
    sp_synth_opts so;
    sp_synth_defaults(&so);
    so.width = so.height = 16;
    so.num_train = 5, so.num_val = 2, so.num_test = 3;
    so.samples = 1;
    assert_int_equal(sp_synth_write(scene, &so), 0);
    sp_dataset ds;
    sp_problems probs = {0};
    sp_load_opts lo = {.downscale = 1, .threads = 1, .load_pixels = 0};
    assert_int_equal(sp_dataset_load(scene, "auto", &lo, &ds, &probs), 0);

    char *p = sp_path_join(d, "cameras.json");
    assert_int_equal(sp_cameras_json_write(p, &ds), 0);
    char *text;
    assert_int_equal(sp_read_file(p, &text, NULL), 0);
    cJSON *arr = cJSON_Parse(text);
    assert_non_null(arr);
    assert_true(cJSON_IsArray(arr));
    assert_int_equal(cJSON_GetArraySize(arr), 10);

    /* test, then val, then train */
    const sp_split *splits[3] = {&ds.test, &ds.val, &ds.train};
    const int split_id[3] = {2, 1, 0};
    int id = 0;
    for (int s = 0; s < 3; s++)
        for (int i = 0; i < splits[s]->n; i++, id++) {
            const cJSON *o = cJSON_GetArrayItem(arr, id);
            const sp_camera *c = &splits[s]->views[i].cam;
            assert_int_equal((int)num(o, "id"), id);
            const cJSON *name = cJSON_GetObjectItemCaseSensitive(o, "img_name");
            assert_true(cJSON_IsString(name));
            char want[32];
            snprintf(want, sizeof want, "r_%d", i);
            assert_string_equal(name->valuestring, want);
            assert_int_equal((int)num(o, "width"), 16);
            assert_int_equal((int)num(o, "height"), 16);
            assert_true(fabs(num(o, "fx") - c->fx) < 1e-4 && fabs(num(o, "fy") - c->fy) < 1e-4);
            const cJSON *pos = cJSON_GetObjectItemCaseSensitive(o, "position");
            const cJSON *rot = cJSON_GetObjectItemCaseSensitive(o, "rotation");
            assert_int_equal(cJSON_GetArraySize(pos), 3);
            assert_int_equal(cJSON_GetArraySize(rot), 3);
            double P[3], M[3][3];
            for (int a = 0; a < 3; a++) {
                P[a] = cJSON_GetArrayItem(pos, a)->valuedouble;
                const cJSON *row = cJSON_GetArrayItem(rot, a);
                assert_int_equal(cJSON_GetArraySize(row), 3);
                for (int b = 0; b < 3; b++) M[a][b] = cJSON_GetArrayItem(row, b)->valuedouble;
            }
            /* against the scene's camera-to-world (OpenGL axes): same centre; columns x, -y, -z */
            float c2w[16];
            sp_synth_camera_c2w(&so, split_id[s], i, c2w);
            for (int a = 0; a < 3; a++) {
                assert_true(fabs(P[a] - c2w[4 * a + 3]) < 1e-4);
                assert_true(fabs(M[a][0] - c2w[4 * a + 0]) < 1e-5);
                assert_true(fabs(M[a][1] + c2w[4 * a + 1]) < 1e-5);
                assert_true(fabs(M[a][2] + c2w[4 * a + 2]) < 1e-5);
            }
            /* and against the loaded camera: a world point maps the same way */
            float X[3] = {0.3f, -0.2f, 0.5f}, xc[3];
            for (int a = 0; a < 3; a++) xc[a] = c->R[3 * a] * X[0] + c->R[3 * a + 1] * X[1] + c->R[3 * a + 2] * X[2] + c->t[a];
            for (int a = 0; a < 3; a++) {
                double v = 0; /* rotation^T (X - position) */
                for (int b = 0; b < 3; b++) v += M[b][a] * (X[b] - P[b]);
                assert_true(fabs(v - xc[a]) < 1e-4);
            }
        }
    cJSON_Delete(arr);
    free(text);
    free(p);
    sp_dataset_free(&ds);
    sp_problems_free(&probs);
    free(scene);
    tu_rm_rf(d);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_cameras_json)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
