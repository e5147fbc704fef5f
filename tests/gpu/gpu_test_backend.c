/* gpu_test_backend.c — what only the CUDA backend can get wrong: a device ordinal that does not
 * exist, a channel count it cannot upload, and running out of device memory are reported as errors
 * (not crashes) and leave the backend usable. Everything else a backend does is checked for every
 * backend by the parity harness (tests/test_backend_ops.c). Without a GPU the test prints "no GPU"
 * and is skipped. */
#include "testutil.h"

#include <time.h>

#include "backend/backend.h"
#include "parity.h"

#ifdef SPLAT_HAVE_CUDA
#include "backend/cuda/cuda_backend.h"

static int g_have_gpu;

#define SKIP_WITHOUT_GPU()              \
    do {                                \
        if (!g_have_gpu) {              \
            printf("no GPU: skipped\n"); \
            skip();                     \
        }                               \
    } while (0)

static sp_backend *make_backend(void) {
    sp_backend_config cfg;
    memset(&cfg, 0, sizeof cfg);
    sp_backend *b = sp_cuda_backend_create(&cfg);
    if (!b) printf("backend creation failed: %s\n", sp_last_error());
    assert_non_null(b);
    return b;
}

static void test_errors(void **state) {
    (void)state;
    SKIP_WITHOUT_GPU();
    sp_backend_config cfg = {.device = 999};
    assert_null(sp_cuda_backend_create(&cfg));
    tu_assert_contains(sp_last_error(), "device 999 does not exist");
    sp_backend *b = make_backend();
    sp_step_args a;
    memset(&a, 0, sizeof a);
    a.view = 3, a.sh_degree = 1, a.ssim_weight = 0.2f, a.adam_step = 1;
    a.beta1 = 0.9f, a.beta2 = 0.999f, a.eps = 1e-15f;
    assert_int_equal(b->ops->train_step(b, &a), -1);
    tu_assert_contains(sp_last_error(), "view 3 out of range");
    sp_view v;
    memset(&v, 0, sizeof v);
    v.name = "two_channel.png";
    v.channels = 2;
    assert_int_equal(b->ops->upload_views(b, &v, 1, SP_ALPHA_STRAIGHT), -1);
    tu_assert_contains(sp_last_error(), "two_channel.png: 2 channels");
    /* out of device memory: a clear error, no crash */
    sp_gaussians g;
    sp_rng r;
    sp_rng_seed(&r, pt_seed, 5);
    pt_random_gaussians(&g, &r, 100, 0, 1.0f);
    assert_int_equal(b->ops->set_gaussians(b, &g, NULL, NULL), 0);
    sp_camera huge;
    pt_look_at(&huge, 200000, 200000, 0.0f, 0.3f, 4.0f);
    float dummy[3] = {0.0f, 0.0f, 0.0f}, bg[3] = {0.0f, 0.0f, 0.0f};
    assert_int_equal(b->ops->render(b, &huge, 0, bg, dummy), -1);
    printf("INFO out-of-memory message: %s\n", sp_last_error());
    tu_assert_contains(sp_last_error(), "out of GPU memory");
    tu_assert_contains(sp_last_error(), "for the rendered image");
    tu_assert_contains(sp_last_error(), "100 Gaussians");
    /* the backend still works afterwards */
    sp_camera small;
    pt_look_at(&small, 32, 32, 0.0f, 0.3f, 4.0f);
    float *img = sp_malloc(32 * 32 * 3 * sizeof(float));
    assert_int_equal(b->ops->render(b, &small, 0, bg, img), 0);
    free(img);
    sp_gaussians_free(&g);
    b->ops->destroy(b);
    printf("PASS errors: bad device, bad view index, bad channel count, out of memory reported\n");
}

int main(void) {
    const char *e = getenv("SPLAT_TEST_SEED");
    pt_seed = (e && *e) ? strtoull(e, NULL, 10) : (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 16);
    g_have_gpu = sp_cuda_device_count() > 0;
    if (!g_have_gpu) printf("no GPU: the CUDA error test is skipped\n");
    else printf("error test seed %llu\n", (unsigned long long)pt_seed);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
#else
int main(void) {
    printf("no GPU: built without CUDA, backend tests skipped\n");
    return 0;
}
#endif
