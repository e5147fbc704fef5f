/* test_runfolder.c — what keeps runs safe: the opacity-reset schedule (no reset where too few
 * steps remain), fallible allocation (messages, the test limit, stores left intact, the
 * out-of-memory handler), the CPU backend's out-of-memory paths, file-tree helpers, and a
 * cancelled or refused sp_train that writes nothing. tests/e2e_runfolder.sh covers the CLI. */
#include <setjmp.h>
#include <stdint.h>
#include <sys/stat.h>

#include "testutil.h"

#include "backend/backend.h"
#include "scene/gaussians.h"
#include "scene/synth.h"
#include "train/train.h"

/* ---- opacity resets ---- */

static sp_config reset_config(int max_steps, int stop, int every, const char *background) {
    sp_config c;
    sp_config_defaults(&c);
    snprintf(c.refine.opacity_mode, sizeof c.refine.opacity_mode, "reset");
    snprintf(c.data.background, sizeof c.data.background, "%s", background);
    c.trainer.max_steps = max_steps;
    c.refine.start = 500; /* the 30k recipe's (the default is 333, scaled to 20k steps) */
    c.refine.stop = stop;
    c.refine.opacity_reset_every = every;
    return c;
}

static int resets(const sp_config *c, int *steps, int max) {
    int n = 0;
    for (int s = 1; s <= c->trainer.max_steps; s++)
        if (sp_train_opacity_reset_due(c, s) && n < max) steps[n++] = s;
    return n;
}

static void test_reset_schedule_3dgs(void **state) {
    (void)state;
    /* 30k steps, densification to 15k, every 3000, white: the 3DGS schedule is unchanged. */
    sp_config c = reset_config(30000, 15000, 3000, "white");
    int s[16], n = resets(&c, s, 16);
    int want[] = {c.refine.start, 3000, 6000, 9000, 12000};
    assert_int_equal(n, 5);
    for (int i = 0; i < n; i++) assert_int_equal(s[i], want[i]);
    /* black background: no reset at refine.start */
    c = reset_config(30000, 15000, 3000, "black");
    assert_int_equal(resets(&c, s, 16), 4);
    assert_int_equal(s[0], 3000);
}

static void test_reset_schedule_near_the_end(void **state) {
    (void)state;
    /* The example: 3000 steps, refine.stop 15000. The reset at step 3000 (the last step)
     * and the one at step 500 (2500 steps left) both fall in the last 3000 steps. */
    sp_config c = reset_config(3000, 15000, 3000, "white");
    int s[16];
    assert_int_equal(resets(&c, s, 16), 0);
    /* 7000 steps: 500 and 3000 keep 4000+ steps to recover; 6000 would keep 1000. */
    c = reset_config(7000, 15000, 3000, "white");
    assert_int_equal(resets(&c, s, 16), 2);
    assert_int_equal(s[0], 500);
    assert_int_equal(s[1], 3000);
    /* Every schedule: no reset leaves fewer than opacity_reset_every steps. */
    int max_steps[] = {100, 999, 3000, 4000, 6001, 12345};
    int everys[] = {1, 50, 300, 1000, 3000};
    for (size_t i = 0; i < sizeof max_steps / sizeof *max_steps; i++)
        for (size_t j = 0; j < sizeof everys / sizeof *everys; j++) {
            c = reset_config(max_steps[i], 1 << 30, everys[j], "white");
            for (int st = 1; st <= c.trainer.max_steps; st++)
                if (sp_train_opacity_reset_due(&c, st)) assert_true(c.trainer.max_steps - st >= everys[j]);
        }
    /* decay mode never resets */
    c = reset_config(30000, 15000, 3000, "white");
    snprintf(c.refine.opacity_mode, sizeof c.refine.opacity_mode, "decay");
    assert_int_equal(resets(&c, s, 16), 0);
}

/* ---- fallible allocation ---- */

static void test_try_alloc_limit_and_message(void **state) {
    (void)state;
    sp_set_alloc_limit(1000000);
    sp_clear_error();
    void *p = sp_try_alloc(2000000, 1, "the test buffer", "lower test.size");
    assert_null(p);
    assert_string_equal(sp_last_error(), "out of memory: 2.0 MB for the test buffer; lower test.size");
    /* under the limit: zeroed memory */
    unsigned char *q = sp_try_alloc(1000, 1, "x", NULL);
    assert_non_null(q);
    for (int i = 0; i < 1000; i++) assert_int_equal(q[i], 0);
    /* a failed realloc keeps the old block */
    q[0] = 42;
    assert_null(sp_try_realloc(q, 3000000, 1, "the grown buffer", NULL));
    assert_string_equal(sp_last_error(), "out of memory: 3.0 MB for the grown buffer");
    assert_int_equal(q[0], 42);
    free(q);
    sp_set_alloc_limit(0);
    /* count * size overflows: refused, not wrapped */
    assert_null(sp_try_alloc(SIZE_MAX / 2, 4, "an absurd buffer", "check the input"));
    assert_non_null(strstr(sp_last_error(), "out of memory: "));
    assert_non_null(strstr(sp_last_error(), "for an absurd buffer; check the input"));
    assert_string_equal(sp_bytes_str(512), "512 bytes");
    assert_string_equal(sp_bytes_str(1.5e9), "1.5 GB");
}

static void test_gaussians_try_reserve_keeps_store(void **state) {
    (void)state;
    sp_gaussians g;
    assert_int_equal(sp_gaussians_try_init(&g, 10, 3), 0);
    g.n = 10;
    for (int i = 0; i < 30; i++) g.means[i] = (float)i;
    sp_set_alloc_limit(100000);
    assert_int_equal(sp_gaussians_try_reserve(&g, 100000), -1);
    sp_set_alloc_limit(0);
    const char *e = sp_last_error();
    assert_non_null(strstr(e, "out of memory: 23.6 MB for the Gaussian parameters (100000 Gaussians, SH degree 3)"));
    assert_non_null(strstr(e, "refine.capacity"));
    assert_int_equal(g.cap, 10);
    assert_int_equal(g.n, 10);
    for (int i = 0; i < 30; i++) assert_true(g.means[i] == (float)i);
    assert_int_equal(sp_gaussians_try_reserve(&g, 20), 0);
    assert_int_equal(g.cap, 20);
    for (int i = 0; i < 30; i++) assert_true(g.means[i] == (float)i);
    assert_true(g.sh[20 * 48 - 1] == 0.0f); /* the new tail is zeroed */
    sp_gaussians_free(&g);
}

static jmp_buf oom_jump;
static size_t oom_bytes;
static void test_oom_handler(void *user, size_t bytes) {
    (void)user;
    oom_bytes = bytes;
    longjmp(oom_jump, 1);
}

static void test_infallible_calls_the_handler(void **state) {
    (void)state;
    sp_set_oom_handler(test_oom_handler, NULL);
    oom_bytes = 0;
    if (setjmp(oom_jump) == 0) {
        void *volatile p = sp_calloc(SIZE_MAX / 8, 16); /* overflows: never a short block */
        (void)p;
        fail_msg("sp_calloc returned on overflow");
    }
    assert_true(oom_bytes > 0);
    sp_set_oom_handler(NULL, NULL);
}

/* The CPU backend reports out of memory and leaves its model as it was. */
static void test_cpu_backend_out_of_memory(void **state) {
    (void)state;
    sp_backend_config bc = {.threads = 1};
    sp_backend *b = sp_backend_create("cpu", &bc);
    assert_non_null(b);
    sp_gaussians g;
    sp_gaussians_init(&g, 5000, 3);
    g.n = 5000;
    for (int i = 0; i < g.n; i++) g.quats[4 * i] = 1.0f;
    sp_set_alloc_limit(100000);
    assert_int_equal(b->ops->set_gaussians(b, &g, NULL, NULL), -1);
    assert_non_null(strstr(sp_last_error(), "out of memory: "));
    assert_non_null(strstr(sp_last_error(), "the Gaussian parameters (5000 Gaussians, SH degree 3)"));
    assert_int_equal(b->ops->num_gaussians(b), 0);
    /* set under no limit, then a refine that must grow beyond the limit */
    sp_set_alloc_limit(0);
    assert_int_equal(b->ops->set_gaussians(b, &g, NULL, NULL), 0);
    sp_set_alloc_limit(5000 * 48 * 4 + 1);
    sp_refine_args ra = {.densify = 1, .grad_threshold = -1.0f, .clone_max_scale = 1e30f, .split_count = 2,
                         .split_shrink = 1.6f, .capacity = 1 << 20, .seed = 1};
    sp_refine_result res;
    assert_int_equal(b->ops->refine(b, &ra, &res), -1);
    sp_set_alloc_limit(0);
    assert_non_null(strstr(sp_last_error(), "out of memory: "));
    assert_int_equal(b->ops->num_gaussians(b), 5000);
    sp_gaussians out = {0};
    assert_int_equal(b->ops->get_gaussians(b, &out, NULL, NULL), 0);
    assert_int_equal(out.n, 5000);
    assert_memory_equal(out.means, g.means, 5000 * 3 * sizeof(float));
    sp_gaussians_free(&out);
    sp_gaussians_free(&g);
    b->ops->destroy(b);
}

/* ---- files ---- */

static void test_remove_tree_and_temporaries(void **state) {
    (void)state;
    char *d = tu_tmpdir();
    char *sub = sp_path_join(d, "renders/test");
    assert_int_equal(sp_mkdir_p(sub), 0);
    char *f1 = sp_path_join(sub, "a.png"), *keep = sp_path_join(d, "notes.txt");
    char *tmp = sp_path_join(d, "checkpoint.bin.tmp.1234"), *tmp_like = sp_path_join(d, "x.tmp.12a");
    tu_write_text(f1, "x");
    tu_write_text(keep, "mine");
    tu_write_text(tmp, "partial");
    tu_write_text(tmp_like, "not a temporary");
    char *renders = sp_path_join(d, "renders");
    assert_int_equal(sp_remove_tree(renders), 0);
    assert_false(sp_dir_exists(renders));
    assert_int_equal(sp_remove_tree(renders), 0); /* gone already: fine */
    assert_int_equal(sp_remove_temporaries(d), 0);
    assert_false(sp_file_exists(tmp));
    assert_true(sp_file_exists(tmp_like));
    assert_true(sp_file_exists(keep));
    char *abs = sp_path_absolute(keep);
    assert_true(abs[0] == '/');
    assert_true(sp_file_exists(abs));
    free(abs);
    abs = sp_path_absolute("no/such/thing");
    assert_true(abs[0] == '/');
    assert_non_null(strstr(abs, "/no/such/thing"));
    free(abs);
    sp_remove_tree(d);
    assert_false(sp_dir_exists(d));
    free(sub), free(f1), free(keep), free(tmp), free(tmp_like), free(renders), free(d);
}

/* ---- sp_train writes nothing until every check passed ---- */

static int always(void *user) {
    (void)user;
    return 1;
}

static void test_train_cancelled_or_refused_writes_nothing(void **state) {
    (void)state;
    char *d = tu_tmpdir();
    char *scene = sp_path_join(d, "scene"), *run = sp_path_join(d, "run");
    sp_synth_opts so;
    sp_synth_defaults(&so);
    so.width = so.height = 16;
    so.num_train = 4, so.num_val = 1, so.num_test = 1;
    so.samples = 1;
    assert_int_equal(sp_synth_write(scene, &so), 0);
    sp_config c;
    sp_config_defaults(&c);
    snprintf(c.data.path, sizeof c.data.path, "%s", scene);
    snprintf(c.output.run_dir, sizeof c.output.run_dir, "%s", run);
    snprintf(c.backend.kind, sizeof c.backend.kind, "cpu");
    c.init.count = 100;
    c.trainer.max_steps = 5;
    /* cancelled before training starts: no run folder at all */
    sp_train_opts o = {.cancel = always};
    sp_log_set_quiet(true);
    assert_int_equal(sp_train(&c, &o), SP_TRAIN_INTERRUPTED);
    assert_false(sp_dir_exists(run));
    /* a folder holding a run is refused without force, untouched */
    assert_int_equal(sp_mkdir_p(run), 0);
    char *log = sp_path_join(run, "log.txt");
    tu_write_text(log, "the old run\n");
    sp_train_opts plain = {0};
    assert_int_equal(sp_train(&c, &plain), SP_TRAIN_FAILED);
    assert_non_null(strstr(sp_last_error(), "already holds a run (log.txt)"));
    /* the library names the setting and the train options, not a command line's flags */
    assert_non_null(strstr(sp_last_error(), "output.run_dir"));
    assert_non_null(strstr(sp_last_error(), "(train options: force)"));
    assert_null(strstr(sp_last_error(), "--"));
    char *text;
    assert_int_equal(sp_read_file(log, &text, NULL), 0);
    assert_string_equal(text, "the old run\n");
    free(text);
    /* with force it trains, replacing the old files */
    sp_train_opts force = {.force = 1};
    assert_int_equal(sp_train(&c, &force), SP_TRAIN_OK);
    assert_int_equal(sp_read_file(log, &text, NULL), 0);
    assert_null(strstr(text, "the old run"));
    free(text);
    sp_log_set_quiet(false);
    sp_remove_tree(d);
    free(log), free(scene), free(run), free(d);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reset_schedule_3dgs),
        cmocka_unit_test(test_reset_schedule_near_the_end),
        cmocka_unit_test(test_try_alloc_limit_and_message),
        cmocka_unit_test(test_gaussians_try_reserve_keeps_store),
        cmocka_unit_test(test_infallible_calls_the_handler),
        cmocka_unit_test(test_cpu_backend_out_of_memory),
        cmocka_unit_test(test_remove_tree_and_temporaries),
        cmocka_unit_test(test_train_cancelled_or_refused_writes_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
