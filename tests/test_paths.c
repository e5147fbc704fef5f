/* test_paths.c — core/paths.c: lexical normalization, resolution through symlinks, containment,
 * the "climbs out of the folder" test the loaders use, UTF-8 validation. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"
#include "core/paths.h"

static void expect_norm(const char *in, const char *want) {
    char *n = sp_path_normalize(in);
    assert_non_null(n);
    assert_string_equal(n, want);
    free(n);
}

static void test_normalize(void **state) {
    (void)state;
    expect_norm("/a/./b//c/", "/a/b/c");
    expect_norm("/a/b/../c", "/a/c");
    expect_norm("/../..", "/");
    expect_norm("/", "/");
    expect_norm("/a/b/..", "/a");
}

static void test_escapes(void **state) {
    (void)state;
    assert_false(sp_path_escapes("train/r_0.png"));
    assert_false(sp_path_escapes("./train/../train/r_0"));
    assert_false(sp_path_escapes("a/b/../../c"));
    assert_true(sp_path_escapes("../x"));
    assert_true(sp_path_escapes("a/../../x"));
    assert_true(sp_path_escapes("/etc/passwd"));
    assert_true(sp_path_escapes(".."));
}

static void test_within_and_symlinks(void **state) {
    (void)state;
    char *dir = tu_tmpdir();
    char *data = sp_path_join(dir, "data"), *link = sp_path_join(dir, "link"), *sib = sp_path_join(dir, "data-runs");
    assert_int_equal(sp_mkdir_p(data), 0);
    assert_int_equal(symlink(data, link), 0);
    char *via = sp_strfmt("%s/./sub/", link), *up = sp_strfmt("%s/data/..", dir);
    assert_true(sp_path_within(via, data)); /* through the link, not yet existing, trailing '/' */
    assert_true(sp_path_within(data, link));
    assert_false(sp_path_within(sib, data)); /* a common prefix is not containment */
    assert_true(sp_path_within(data, up));
    free(via);
    free(up);
    free(data);
    free(link);
    free(sib);
    tu_rm_rf(dir);
}

static void test_utf8(void **state) {
    (void)state;
    assert_true(sp_utf8_valid("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"));
    assert_false(sp_utf8_valid("\xff"));
    assert_false(sp_utf8_valid("\xc3"));           /* truncated */
    assert_false(sp_utf8_valid("\xc0\xaf"));       /* overlong '/' */
    assert_false(sp_utf8_valid("\xed\xa0\x80"));   /* surrogate */
    assert_false(sp_utf8_valid("\xf4\x90\x80\x80")); /* above U+10FFFF */
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_normalize),
        cmocka_unit_test(test_escapes),
        cmocka_unit_test(test_within_and_symlinks),
        cmocka_unit_test(test_utf8),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
