/* test_viewcache.c — streamed training images (data.cache_mb): header-only loading, a view decoded
 * later equals the in-memory loader's pixels byte for byte (a whole split too), the cache's byte
 * bound, LRU and prefetch along the schedule, decode errors naming the file, config validation of
 * data.cache_mb, and streamed training writing the same .ply as in-memory training (deterministic
 * cpu), with a corrupt image found mid-run stopping the run with the file named and the checkpoint
 * kept. */
#include "testutil.h"

#include <pthread.h>

#include "backend/backend.h"
#include "io/image.h"
#include "io/loader.h"
#include "io/viewload.h"
#include "scene/synth.h"
#include "scene/viewcache.h"
#include "train/config.h"
#include "train/stream.h"
#include "train/train.h"
#include "train/viewsched.h"

#define NTRAIN 24

/* A small capture: NTRAIN 32x32 RGBA train views and 2 test views; r_3 rewritten as RGB (the
 * loader makes it opaque RGBA, and so must the streamed decode). */
static char *make_capture_sized(int size) {
    char *dir = tu_tmpdir();
    assert_non_null(dir);
    sp_synth_opts o;
    sp_synth_defaults(&o);
    o.width = o.height = size;
    o.num_train = NTRAIN, o.num_val = 0, o.num_test = 2;
    o.samples = 1;
    assert_int_equal(sp_synth_write(dir, &o), 0);
    char *p = sp_strfmt("%s/train/r_3.png", dir);
    sp_image img;
    assert_int_equal(sp_image_load(p, &img), 0);
    sp_image rgb = {img.width, img.height, 3, sp_malloc((size_t)img.width * img.height * 3)};
    for (int i = 0; i < img.width * img.height; i++) memcpy(rgb.pixels + 3 * i, img.pixels + 4 * i, 3);
    assert_int_equal(sp_image_save_png(p, &rgb), 0);
    sp_image_free(&img), sp_image_free(&rgb);
    free(p);
    return dir;
}

static char *make_capture(void) { return make_capture_sized(32); }

static void load(const char *dir, int pixels, int downscale, sp_dataset *d) {
    sp_load_opts lo = {.downscale = downscale, .threads = 1, .load_pixels = pixels, .header_only = !pixels};
    sp_problems probs = {0};
    int rc = sp_dataset_load(dir, "auto", &lo, d, &probs);
    if (rc) fail_msg("load %s: %s", dir, probs.n ? probs.items[0] : sp_last_error());
    sp_problems_free(&probs);
}

static void remove_dir(char *dir) {
    sp_remove_tree(dir);
    free(dir);
}

/* Header-only loading gives the same cameras and channels, no pixels; every view decoded later
 * (downscaled by 2, RGB made RGBA) equals the loader's pixels byte for byte. */
static void test_decode_matches_loader(void **state) {
    char *dir = make_capture();
    for (int ds = 1; ds <= 2; ds++) {
        sp_dataset full, lazy;
        load(dir, 1, ds, &full);
        load(dir, 0, ds, &lazy);
        assert_int_equal(full.train.n, lazy.train.n);
        assert_int_equal(full.has_alpha, 1);
        for (int i = 0; i < full.train.n; i++) {
            const sp_view *a = &full.train.views[i], *b = &lazy.train.views[i];
            assert_null(b->pixels);
            assert_int_equal(a->cam.width, b->cam.width);
            assert_int_equal(a->cam.height, b->cam.height);
            assert_int_equal(a->channels, b->channels);
            assert_int_equal(b->downscale, ds);
            assert_memory_equal(&a->cam, &b->cam, sizeof a->cam);
            uint8_t *px;
            assert_int_equal(sp_view_load_pixels(b, &px), 0);
            assert_memory_equal(px, a->pixels, sp_view_bytes(a));
            free(px);
        }
        sp_dataset_free(&full), sp_dataset_free(&lazy);
    }
    remove_dir(dir);
}

/* An image whose header still reads but whose pixels are gone: the PNG cut after 64 bytes. */
static void cut_png(const char *path) {
    char *data = NULL;
    size_t n = 0;
    assert_int_equal(sp_read_file(path, &data, &n), 0);
    assert_true(n > 64);
    assert_int_equal(sp_write_file_atomic(path, data, 64), 0);
    free(data);
}

/* sp_split_load_pixels: a header-only split decoded whole equals the loader's pixels; with two
 * images cut short after their headers, the error names the lower-indexed one, whatever the
 * threads' order. */
static void test_split_load_pixels(void **state) {
    char *dir = make_capture();
    sp_dataset full, lazy;
    load(dir, 1, 1, &full);
    load(dir, 0, 1, &lazy);
    assert_int_equal(sp_split_load_pixels(&lazy.train, 2), 0);
    for (int i = 0; i < full.train.n; i++)
        assert_memory_equal(lazy.train.views[i].pixels, full.train.views[i].pixels,
                            sp_view_bytes(&full.train.views[i]));
    sp_dataset_free(&lazy);
    cut_png(full.train.views[17].path);
    cut_png(full.train.views[5].path);
    for (int rep = 0; rep < 3; rep++) {
        load(dir, 0, 1, &lazy);
        assert_int_equal(sp_split_load_pixels(&lazy.train, 2), -1);
        tu_assert_contains(sp_last_error(), full.train.views[5].path);
        sp_dataset_free(&lazy);
    }
    sp_dataset_free(&full);
    remove_dir(dir);
}

typedef struct {
    sp_view_sched sched;
    int calls;
} sched_user;
static int sched_fn(void *u, int step) {
    sched_user *s = u;
    s->calls++;
    return sp_view_sched_at(&s->sched, step);
}

/* Counts decoded bytes alive outside the cache's own bookkeeping: every decode adds, and the
 * cache frees what it evicts, which the test reads back from the difference of counters. */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static long g_decodes, g_inflight, g_max_inflight;
static int counting_decode(const sp_view *v, uint8_t **px) {
    pthread_mutex_lock(&g_mu);
    g_decodes++;
    if (++g_inflight > g_max_inflight) g_max_inflight = g_inflight;
    pthread_mutex_unlock(&g_mu);
    int rc = sp_view_load_pixels(v, px);
    pthread_mutex_lock(&g_mu);
    g_inflight--;
    pthread_mutex_unlock(&g_mu);
    return rc;
}

/* Three epochs through caches of 1, 3 and all images, with 0 and 2 decoding threads: each step
 * gets the scheduled view with the loader's pixels; the bytes held (decodes in flight included)
 * never exceed the budget; with room for all views each is decoded once (LRU keeps them). */
static void test_bound_and_schedule(void **state) {
    char *dir = make_capture();
    sp_dataset full, lazy;
    load(dir, 1, 1, &full);
    load(dir, 0, 1, &lazy);
    size_t one = sp_view_bytes(&lazy.train.views[0]);
    size_t budgets[3] = {one, 3 * one, NTRAIN * one};
    for (int bi = 0; bi < 3; bi++)
        for (int threads = 0; threads <= 2; threads += 2) {
            sched_user su = {0};
            sp_view_sched_init(&su.sched, 5, NTRAIN);
            sp_view_sched check;
            sp_view_sched_init(&check, 5, NTRAIN);
            g_decodes = g_inflight = g_max_inflight = 0;
            int steps = 3 * NTRAIN;
            sp_viewcache_opts o = {.budget = budgets[bi], .threads = threads, .lookahead = 8, .first_step = 1,
                                   .last_step = steps, .decode = counting_decode, .schedule = sched_fn, .user = &su};
            sp_viewcache *c = sp_viewcache_create(&lazy.train, &o);
            assert_non_null(c);
            for (int s = 1; s <= steps; s++) {
                int v;
                const uint8_t *px;
                assert_int_equal(sp_viewcache_acquire(c, s, &v, &px), 0);
                assert_int_equal(v, sp_view_sched_at(&check, s));
                assert_memory_equal(px, full.train.views[v].pixels, one);
                sp_viewcache_stats st;
                sp_viewcache_get_stats(c, &st);
                assert_true(st.bytes <= budgets[bi]);
                assert_true(st.bytes % one == 0);
                sp_viewcache_release(c, v);
            }
            sp_viewcache_stats st;
            sp_viewcache_get_stats(c, &st);
            sp_viewcache_destroy(c);
            printf("budget %zu images, %d threads: %ld decodes, %ld ready, %ld waited, peak %zu bytes, "
                   "%ld decodes at once\n",
                   budgets[bi] / one, threads, st.decoded, st.ready, st.waited, st.peak_bytes, g_max_inflight);
            assert_true(st.peak_bytes <= budgets[bi]);
            assert_true(st.peak_bytes >= one);
            assert_int_equal(st.ready + st.waited, steps);
            assert_int_equal(st.decoded, g_decodes);
            /* one image of room: every change of view decodes (at most one decode at a time) */
            int changes = 0;
            for (int s = 1, prev = -1; s <= steps; s++) {
                int v = sp_view_sched_at(&check, s);
                changes += v != prev;
                prev = v;
            }
            if (bi == 0) assert_int_equal(st.decoded, changes), assert_true(g_max_inflight <= 1);
            if (bi == 2) assert_int_equal(st.decoded, NTRAIN), assert_int_equal(st.evicted, 0);
            if (bi == 1) assert_true(st.evicted > 0);
            sp_view_sched_free(&su.sched), sp_view_sched_free(&check);
        }
    sp_dataset_free(&full), sp_dataset_free(&lazy);
    remove_dir(dir);
}

/* A budget under one image is refused naming the file; a file broken after loading fails the
 * step that needs it with the file named, and the steps before it still work. */
static void test_errors(void **state) {
    char *dir = make_capture();
    sp_dataset lazy;
    load(dir, 0, 1, &lazy);
    size_t one = sp_view_bytes(&lazy.train.views[0]);
    sched_user su = {0};
    sp_view_sched_init(&su.sched, 1, NTRAIN);
    sp_viewcache_opts o = {.budget = one - 1, .threads = 2, .first_step = 1, .last_step = NTRAIN,
                           .decode = sp_view_load_pixels, .schedule = sched_fn, .user = &su};
    assert_null(sp_viewcache_create(&lazy.train, &o));
    tu_assert_contains(sp_last_error(), "smaller than one training image");
    tu_assert_contains(sp_last_error(), "/train/r_");

    sp_view_sched probe;
    sp_view_sched_init(&probe, 1, NTRAIN);
    int bad = sp_view_sched_at(&probe, 10);
    sp_view_sched_free(&probe);
    tu_write_text(lazy.train.views[bad].path, "not an image any more");
    o.budget = 4 * one;
    sp_viewcache *c = sp_viewcache_create(&lazy.train, &o);
    assert_non_null(c);
    for (int s = 1; s < 10; s++) {
        int v;
        const uint8_t *px;
        assert_int_equal(sp_viewcache_acquire(c, s, &v, &px), 0);
        sp_viewcache_release(c, v);
    }
    int v;
    const uint8_t *px;
    assert_int_equal(sp_viewcache_acquire(c, 10, &v, &px), -1);
    tu_assert_contains(sp_last_error(), lazy.train.views[bad].path);
    sp_viewcache_destroy(c);
    sp_view_sched_free(&su.sched);
    sp_dataset_free(&lazy);
    remove_dir(dir);
}

/* data.cache_mb: negative is refused naming the key; a cache smaller than one image is refused
 * when training starts, naming the key and the file; a backend gets its slots. */
static void test_config(void **state) {
    sp_config c;
    sp_config_defaults(&c);
    assert_int_equal(c.data.cache_mb, 0);
    sp_problems p = {0};
    assert_int_not_equal(sp_config_set(&c, "data.cache_mb=-1", &p), 0);
    char *all = tu_joined(&p);
    tu_assert_contains(all, "data.cache_mb");
    free(all);
    sp_problems_free(&p);
    assert_int_equal(sp_config_set(&c, "data.cache_mb=64", &p), 0);
    assert_int_equal(c.data.cache_mb, 64);
    sp_problems_free(&p);

    sp_split big = {0};
    sp_view views[2];
    memset(views, 0, sizeof views);
    for (int i = 0; i < 2; i++) {
        views[i].path = sp_strfmt("/captures/big/%d.png", i);
        views[i].cam.width = 1000, views[i].cam.height = 800, views[i].channels = 4; /* 3.05 MiB */
    }
    big.views = views, big.n = 2;
    sp_backend_config bc = {.threads = 1, .deterministic = 1};
    sp_backend *b = sp_backend_create("cpu", &bc);
    assert_non_null(b);
    sp_stream_opts so = {.cache_mb = 3, .device_cache_mb = -1, .first_step = 1, .last_step = 10};
    assert_null(sp_train_stream_create(&big, b, SP_ALPHA_STRAIGHT, &so));
    tu_assert_contains(sp_last_error(), "data.cache_mb = 3");
    tu_assert_contains(sp_last_error(), "smaller than one training image");
    tu_assert_contains(sp_last_error(), "/captures/big/0.png");
    views[1].undistorted = 1; /* with a lens that does not give its image */
    so.cache_mb = 64;
    assert_null(sp_train_stream_create(&big, b, SP_ALPHA_STRAIGHT, &so));
    tu_assert_contains(sp_last_error(), "/captures/big/1.png");
    tu_assert_contains(sp_last_error(), "lens");
    b->ops->destroy(b);
    for (int i = 0; i < 2; i++) free(views[i].path);
}

static sp_config train_config(const char *data, const char *run, int cache_mb) {
    sp_config c;
    sp_config_defaults(&c);
    char *sets[] = {sp_strfmt("data.path=%s", data), sp_strfmt("output.run_dir=%s", run),
                    sp_strfmt("data.cache_mb=%d", cache_mb), sp_strdup("trainer.max_steps=40"),
                    sp_strdup("backend.kind=cpu"), sp_strdup("backend.deterministic=true"),
                    sp_strdup("backend.threads=1"), sp_strdup("init.count=300"), sp_strdup("refine.start=10"),
                    sp_strdup("refine.every=10"), sp_strdup("trainer.checkpoint_every=10"),
                    sp_strdup("output.save_renders=false"), sp_strdup("trainer.eval_every=20")};
    tu_config_sets(&c, sets, sizeof sets / sizeof *sets);
    return c;
}

static char *slurp(const char *dir, const char *name) {
    char *p = sp_path_join(dir, name), *text = NULL;
    size_t n;
    if (sp_read_file(p, &text, &n)) fail_msg("cannot read %s", p);
    free(p);
    return text;
}

/* Streamed training (a cache of 1 MiB: 8 of these images) writes the same .ply as in-memory
 * training; result.toml gives the peak host memory. A corrupt image met at step 22 stops the
 * run with the file named and keeps the checkpoint of step 20. */
static void test_train_streamed(void **state) {
    char *dir = make_capture();
    char *runs = tu_tmpdir();
    char *ra = sp_path_join(runs, "mem"), *rb = sp_path_join(runs, "stream"), *rc = sp_path_join(runs, "broken");
    sp_train_opts opts = {0};
    sp_config ca = train_config(dir, ra, 0), cb = train_config(dir, rb, 1);
    assert_int_equal(sp_train(&ca, &opts), SP_TRAIN_OK);
    assert_int_equal(sp_train(&cb, &opts), SP_TRAIN_OK);
    char *pa = sp_path_join(ra, "point_cloud.ply"), *pb = sp_path_join(rb, "point_cloud.ply");
    char *da, *db;
    size_t na, nb;
    assert_int_equal(sp_read_file(pa, &da, &na), 0);
    assert_int_equal(sp_read_file(pb, &db, &nb), 0);
    assert_int_equal(na, nb);
    assert_memory_equal(da, db, na);
    free(da), free(db), free(pa), free(pb);
    char *res = slurp(rb, "result.toml"), *log = slurp(rb, "log.txt");
    tu_assert_contains(res, "peak_host_mib = ");
    tu_assert_contains(log, "streaming the training images through a cache of 1 MiB");
    tu_assert_contains(log, "image cache: ");
    free(res), free(log);

    /* the view of step 22 (its first use: each epoch is a permutation) passes the header check at
     * load but cannot be decoded */
    sp_view_sched s;
    sp_view_sched_init(&s, 0, NTRAIN);
    int bad = sp_view_sched_at(&s, 22);
    sp_view_sched_free(&s);
    char *path = sp_strfmt("%s/train/r_%d.png", dir, bad), *png;
    size_t n;
    assert_int_equal(sp_read_file(path, &png, &n), 0);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fwrite(png, 1, n / 3, f); /* header and part of the data: cut short */
    fclose(f);
    free(png);
    sp_config cc = train_config(dir, rc, 1);
    assert_int_equal(sp_train(&cc, &opts), SP_TRAIN_FAILED);
    tu_assert_contains(sp_last_error(), path);
    log = slurp(rc, "log.txt");
    tu_assert_contains(log, path);
    /* the steps before the bad image are not lost: the model and a checkpoint of step 21 are saved */
    tu_assert_contains(log, "the model and a checkpoint of step 21 are saved in");
    free(log);
    char *ck = sp_path_join(rc, "checkpoint.bin");
    assert_true(sp_file_exists(ck));
    free(ck);
    free(path);
    free(ra), free(rb), free(rc);
    remove_dir(runs);
    remove_dir(dir);
}

/* sp_view_sched_next: the first later step using the view, against a walk along the schedule,
 * across epoch boundaries. */
static void test_next_use(void **state) {
    for (int n = 1; n <= 7; n += 3) {
        sp_view_sched s, walk;
        sp_view_sched_init(&s, 9, n);
        sp_view_sched_init(&walk, 9, n);
        for (int after = 0; after < 5 * n; after++)
            for (int v = 0; v < n; v++) {
                int want = after + 1;
                while (sp_view_sched_at(&walk, want) != v) want++;
                assert_int_equal(sp_view_sched_next(&s, v, after), want);
            }
        sp_view_sched_free(&s), sp_view_sched_free(&walk);
    }
}

/* A capture with lens distortion (fox: radial-tangential, transforms.json) streams: every view
 * decoded later, undistorted with the view's lens and crop, equals the loader's pixels byte for
 * byte, at two downscales. */
static void test_distorted_decode(void **state) {
    char *dir = sp_path_join(tu_data_dir(), "fox");
    if (!sp_dir_exists(dir)) {
        free(dir);
        skip();
    }
    for (int ds = 1; ds <= 2; ds++) {
        sp_dataset full, lazy;
        load(dir, 1, ds, &full);
        load(dir, 0, ds, &lazy);
        assert_int_equal(full.train.n, lazy.train.n);
        int undistorted = 0;
        for (int i = 0; i < full.train.n; i++) {
            const sp_view *a = &full.train.views[i], *b = &lazy.train.views[i];
            assert_memory_equal(&a->cam, &b->cam, sizeof a->cam);
            assert_int_equal(a->undistorted, b->undistorted);
            undistorted += b->undistorted;
            assert_int_equal(sp_view_streamable(b), 0);
            uint8_t *px;
            assert_int_equal(sp_view_load_pixels(b, &px), 0);
            assert_memory_equal(px, a->pixels, sp_view_bytes(a));
            free(px);
        }
        assert_int_equal(undistorted, full.train.n);
        sp_dataset_free(&full), sp_dataset_free(&lazy);
    }
    free(dir);
}

/* The device's image slots (data.device_cache_mb) on the cpu backend, each run against the
 * in-memory run's .ply: room for every view (each staged once), two slots (0), and 4 slots for 24
 * views of 256 KiB (1 MiB), where a slot is freed by the view used furthest ahead: the number of
 * images staged is what that rule gives when simulated here. */
static void test_device_slots(void **state) {
    for (int big = 0; big <= 1; big++) {
        char *dir = make_capture_sized(big ? 256 : 32);
        char *runs = tu_tmpdir();
        sp_train_opts opts = {0};
        char *rm = sp_path_join(runs, "mem");
        sp_config cm = train_config(dir, rm, 0);
        assert_int_equal(sp_train(&cm, &opts), SP_TRAIN_OK);
        char *pm = sp_path_join(rm, "point_cloud.ply"), *dm;
        size_t nm;
        assert_int_equal(sp_read_file(pm, &dm, &nm), 0);
        /* 32x32 RGBA is 4 KiB a view: 1 MiB holds all 24, 0 keeps two slots; 256x256 is 256 KiB: 4 */
        const char *caches[2] = {"1", "0"};
        for (int k = 0; k < (big ? 1 : 2); k++) {
            char *rs = sp_strfmt("%s/slots%d", runs, k);
            sp_config cs = train_config(dir, rs, big ? 8 : 1);
            char *sets[] = {sp_strfmt("data.device_cache_mb=%s", caches[k])};
            tu_config_sets(&cs, sets, 1);
            assert_int_equal(sp_train(&cs, &opts), SP_TRAIN_OK);
            char *ps = sp_path_join(rs, "point_cloud.ply"), *ds;
            size_t ns;
            assert_int_equal(sp_read_file(ps, &ds, &ns), 0);
            assert_int_equal(ns, nm);
            assert_memory_equal(ds, dm, nm);
            int slots = big ? 4 : k == 0 ? NTRAIN : 2;
            /* the furthest-next-use rule, simulated: views in slots, a miss evicts the one used last */
            sp_view_sched sim;
            sp_view_sched_init(&sim, 0, NTRAIN);
            int held[NTRAIN], nheld = 0, staged = 0;
            for (int step = 1; step <= 40; step++) {
                int v = sp_view_sched_at(&sim, step), in = 0;
                for (int j = 0; j < nheld; j++) in |= held[j] == v;
                if (in) continue;
                staged++;
                if (nheld < slots) {
                    held[nheld++] = v;
                    continue;
                }
                int worst = 0, far = -1;
                for (int j = 0; j < nheld; j++) {
                    int next = step + 1;
                    sp_view_sched walk;
                    sp_view_sched_init(&walk, 0, NTRAIN);
                    while (sp_view_sched_at(&walk, next) != held[j]) next++;
                    sp_view_sched_free(&walk);
                    if (next > far) far = next, worst = j;
                }
                held[worst] = v;
            }
            sp_view_sched_free(&sim);
            char *want = sp_strfmt("%d images staged to the device for 40 steps", staged);
            char *keeps = sp_strfmt("the device keeps %d of the 24 training images", slots);
            char *log = slurp(rs, "log.txt");
            tu_assert_contains(log, want);
            tu_assert_contains(log, keeps);
            if (slots == NTRAIN) assert_int_equal(staged, NTRAIN);
            free(want), free(keeps), free(log), free(ds), free(ps), free(rs);
        }
        free(dm), free(pm), free(rm);
        remove_dir(runs);
        remove_dir(dir);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decode_matches_loader),
        cmocka_unit_test(test_split_load_pixels),
        cmocka_unit_test(test_bound_and_schedule),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_config),
        cmocka_unit_test(test_train_streamed),
        cmocka_unit_test(test_next_use),
        cmocka_unit_test(test_distorted_decode),
        cmocka_unit_test(test_device_slots),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
