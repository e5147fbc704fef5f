/* test_dist.c — what several processes need before NCCL, without GPUs: backend.devices lists,
 * the process placement the library takes from the program (checked, its errors naming the
 * settings; current per thread, as the API makes it for each call), rank / world size / local
 * rank read by the CLI from SPLAT_* and Open MPI's variables (every bad value a clear error
 * naming the variable; src/cli/dist_env.c, compiled in here: the CLI is not in libsplat), the
 * multi-device backend config, and the NCCL id exchange through a file (a forked reader waiting
 * for the writer, the timeout, a file that is not an id). */
#include "testutil.h"

#include <sys/wait.h>
#include <unistd.h>

#include "backend/dist.h"
#include "cli/dist_env.c"
#include "cli/util.c"

static char *g_dir;
static int setup(void **state) {
    g_dir = tu_tmpdir();
    return g_dir ? 0 : -1;
}
static int teardown(void **state) {
    tu_rm_rf(g_dir);
    return 0;
}

static const char *k_vars[] = {"SPLAT_RANK", "SPLAT_WORLD_SIZE", "SPLAT_LOCAL_RANK", "SPLAT_DIST_FILE",
                               "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"};
static void clear_env(void) {
    for (size_t i = 0; i < sizeof k_vars / sizeof *k_vars; i++) unsetenv(k_vars[i]);
}

static void test_parse_devices(void **state) {
    (void)state;
    int ids[SP_MAX_DEVICES];
    assert_int_equal(sp_parse_devices("1", 0, ids), 1);
    assert_int_equal(ids[0], 0);
    assert_int_equal(sp_parse_devices("2", 0, ids), 2);
    assert_int_equal(ids[1], 1);
    assert_int_equal(sp_parse_devices("2", 1, ids), 2); /* local rank 1 with 2 each: devices 2, 3 */
    assert_int_equal(ids[0], 2);
    assert_int_equal(ids[1], 3);
    assert_int_equal(sp_parse_devices("3, 1", 5, ids), 2); /* a list is taken as it is */
    assert_int_equal(ids[0], 3);
    assert_int_equal(ids[1], 1);
    assert_int_equal(sp_parse_devices("0,0", 0, ids), -1);
    tu_assert_contains(sp_last_error(), "listed twice");
    assert_int_equal(sp_parse_devices("-1", 0, ids), -1);
    tu_assert_contains(sp_last_error(), "backend.devices = \"-1\"");
    assert_int_equal(sp_parse_devices("0,,1", 0, ids), 2); /* empty items are skipped */
    assert_int_equal(sp_parse_devices("0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16", 0, ids), -1);
    tu_assert_contains(sp_last_error(), "more than 16");
}

/* The placement the CLI reads, as the library takes it (splat_set_dist copies it the same way). */
static sp_dist to_dist(const splat_dist *p) {
    sp_dist d;
    memset(&d, 0, sizeof d);
    d.rank = p->rank;
    d.world = p->world_size;
    d.local_rank = p->local_rank;
    snprintf(d.file, sizeof d.file, "%s", p->id_file ? p->id_file : "");
    return d;
}

static void test_env(void **state) {
    (void)state;
    splat_dist d;
    clear_env();
    assert_int_equal(cli_dist_from_env(NULL, &d), 0);
    assert_int_equal(d.world_size, 1);
    assert_int_equal(d.rank, 0);
    assert_null(d.id_file);
    /* SPLAT_* */
    setenv("SPLAT_RANK", "1", 1);
    setenv("SPLAT_WORLD_SIZE", "2", 1);
    setenv("SPLAT_DIST_FILE", "/shared/id", 1);
    assert_int_equal(cli_dist_from_env(NULL, &d), 0);
    assert_int_equal(d.rank, 1);
    assert_int_equal(d.world_size, 2);
    assert_int_equal(d.local_rank, 1); /* one machine unless told */
    assert_string_equal(d.id_file, "/shared/id");
    assert_int_equal(cli_dist_from_env("/other/id", &d), 0); /* --dist-file wins over SPLAT_DIST_FILE */
    assert_string_equal(d.id_file, "/other/id");
    setenv("SPLAT_LOCAL_RANK", "0", 1);
    assert_int_equal(cli_dist_from_env(NULL, &d), 0);
    assert_int_equal(d.local_rank, 0);
    sp_dist sd = to_dist(&d);
    sp_backend_config bc = {0};
    assert_int_equal(sp_dist_backend_config(&bc, "2", 1, &sd), 0);
    assert_int_equal(bc.num_devices, 2);
    assert_int_equal(bc.devices[1], 1);
    assert_int_equal(bc.rank, 1);
    assert_int_equal(bc.world, 2);
    assert_int_equal(bc.check_replicas, 1);
    assert_string_equal(bc.dist_file, "/shared/id");
    /* errors name the variable */
    setenv("SPLAT_RANK", "2", 1);
    assert_int_equal(cli_dist_from_env(NULL, &d), -1);
    tu_assert_contains(cli_last_error(), "SPLAT_RANK = 2 is outside [0, SPLAT_WORLD_SIZE = 2)");
    setenv("SPLAT_RANK", "one", 1);
    assert_int_equal(cli_dist_from_env(NULL, &d), -1);
    tu_assert_contains(cli_last_error(), "SPLAT_RANK = \"one\": expected a non-negative integer");
    setenv("SPLAT_RANK", "0", 1);
    setenv("SPLAT_WORLD_SIZE", "0", 1);
    assert_int_equal(cli_dist_from_env(NULL, &d), -1);
    tu_assert_contains(cli_last_error(), "SPLAT_WORLD_SIZE = 0");
    setenv("SPLAT_WORLD_SIZE", "2", 1);
    unsetenv("SPLAT_DIST_FILE");
    assert_int_equal(cli_dist_from_env(NULL, &d), -1);
    tu_assert_contains(cli_last_error(), "--dist-file");
    unsetenv("SPLAT_WORLD_SIZE");
    assert_int_equal(cli_dist_from_env(NULL, &d), -1);
    tu_assert_contains(cli_last_error(), "SPLAT_RANK is set but SPLAT_WORLD_SIZE is not");
    clear_env();
    setenv("SPLAT_WORLD_SIZE", "2", 1);
    assert_int_equal(cli_dist_from_env(NULL, &d), -1);
    tu_assert_contains(cli_last_error(), "SPLAT_WORLD_SIZE is set but SPLAT_RANK is not");
    setenv("SPLAT_WORLD_SIZE", "1", 1);
    setenv("SPLAT_RANK", "0", 1);
    assert_int_equal(cli_dist_from_env(NULL, &d), 0); /* one process needs no file */
    /* mpirun */
    clear_env();
    setenv("OMPI_COMM_WORLD_RANK", "3", 1);
    setenv("OMPI_COMM_WORLD_SIZE", "4", 1);
    setenv("OMPI_COMM_WORLD_LOCAL_RANK", "1", 1);
    setenv("SPLAT_DIST_FILE", "/shared/id", 1);
    assert_int_equal(cli_dist_from_env(NULL, &d), 0);
    assert_int_equal(d.rank, 3);
    assert_int_equal(d.world_size, 4);
    assert_int_equal(d.local_rank, 1);
    unsetenv("OMPI_COMM_WORLD_LOCAL_RANK"); /* the values came from Open MPI: machine unknown, local rank 0 */
    assert_int_equal(cli_dist_from_env(NULL, &d), 0);
    assert_int_equal(d.local_rank, 0);
    setenv("OMPI_COMM_WORLD_SIZE", "x", 1);
    assert_int_equal(cli_dist_from_env(NULL, &d), -1);
    tu_assert_contains(cli_last_error(), "OMPI_COMM_WORLD_SIZE = \"x\"");
    /* SPLAT_* win over Open MPI's */
    setenv("SPLAT_RANK", "0", 1);
    setenv("SPLAT_WORLD_SIZE", "1", 1);
    assert_int_equal(cli_dist_from_env(NULL, &d), 0);
    assert_int_equal(d.world_size, 1);
    clear_env();
}

/* The library checks the placement it is given, naming the settings, and reads no environment. */
static void test_placement(void **state) {
    (void)state;
    sp_dist d;
    /* none current: this process alone, whatever the environment says */
    setenv("SPLAT_RANK", "1", 1);
    setenv("SPLAT_WORLD_SIZE", "2", 1);
    assert_int_equal(sp_dist_current(&d), 0);
    assert_int_equal(d.world, 1);
    assert_int_equal(d.rank, 0);
    assert_string_equal(d.file, "");
    clear_env();
    sp_dist two = {.rank = 1, .world = 2, .local_rank = 1};
    snprintf(two.file, sizeof two.file, "/shared/id");
    const sp_dist *old = sp_dist_use(&two);
    assert_null(old);
    assert_int_equal(sp_dist_current(&d), 0);
    assert_int_equal(d.rank, 1);
    assert_int_equal(d.world, 2);
    assert_string_equal(d.file, "/shared/id");
    assert_ptr_equal(sp_dist_use(old), &two);
    assert_int_equal(sp_dist_current(&d), 0);
    assert_int_equal(d.world, 1);
    /* every bad placement is an error naming the setting, never an environment variable */
    sp_dist bad = two;
    bad.rank = 2;
    assert_int_equal(sp_dist_check(&bad), -1);
    tu_assert_contains(sp_last_error(), "rank = 2 is outside [0, world_size = 2)");
    bad = two;
    bad.world = 0, bad.rank = 0;
    assert_int_equal(sp_dist_check(&bad), -1);
    tu_assert_contains(sp_last_error(), "world_size = 0");
    bad = two;
    bad.local_rank = -1;
    assert_int_equal(sp_dist_check(&bad), -1);
    tu_assert_contains(sp_last_error(), "local_rank = -1");
    bad = two;
    bad.file[0] = 0;
    sp_dist_use(&bad);
    assert_int_equal(sp_dist_current(&d), -1);
    sp_dist_use(NULL);
    tu_assert_contains(sp_last_error(), "world_size = 2 but no id_file");
    assert_null(strstr(sp_last_error(), "SPLAT_"));
    assert_null(strstr(sp_last_error(), "--dist-file"));
}

static void test_id_exchange(void **state) {
    (void)state;
    char *path = sp_path_join(g_dir, "nccl.id");
    unsigned char id[128];
    for (int i = 0; i < 128; i++) id[i] = (unsigned char)(i * 7 + 3);
    /* a reader started before the writer: it waits, then reads what rank 0 wrote */
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        unsigned char got[128];
        int ok = sp_dist_read_id(path, got, sizeof got, 20.0) == 0 && memcmp(got, id, sizeof got) == 0;
        _exit(ok ? 0 : 1);
    }
    usleep(200 * 1000);
    assert_int_equal(sp_dist_write_id(path, id, sizeof id), 0);
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    /* the reader in this process too */
    unsigned char got[128];
    assert_int_equal(sp_dist_read_id(path, got, sizeof got, 1.0), 0);
    assert_memory_equal(got, id, sizeof id);
    /* a file of another kind */
    tu_write_text(path, "hello\n");
    assert_int_equal(sp_dist_read_id(path, got, sizeof got, 1.0), -1);
    tu_assert_contains(sp_last_error(), "not an NCCL id file");
    /* nobody writes: the timeout names the file */
    char *none = sp_path_join(g_dir, "never.id");
    double t0 = sp_now();
    assert_int_equal(sp_dist_read_id(none, got, sizeof got, 0.3), -1);
    double waited = sp_now() - t0;
    assert_true(waited >= 0.3 && waited < 5.0);
    tu_assert_contains(sp_last_error(), none);
    tu_assert_contains(sp_last_error(), "no NCCL id after waiting");
    /* a folder that does not exist: rank 0's write fails with the path */
    char *bad = sp_path_join(g_dir, "missing/dir/id");
    assert_int_equal(sp_dist_write_id(bad, id, sizeof id), -1);
    tu_assert_contains(sp_last_error(), "NCCL id file");
    free(bad);
    free(none);
    free(path);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_devices),
        cmocka_unit_test(test_env),
        cmocka_unit_test(test_placement),
        cmocka_unit_test_setup_teardown(test_id_exchange, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
