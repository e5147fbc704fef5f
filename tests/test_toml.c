/* test_toml.c — the TOML subset reader (good documents, every error with its file:line text)
 * and the writer (escaping, exact float round trips, atomic save). */
#include "testutil.h"

#include <time.h>

#include <float.h>
#include <math.h>

#include "io/toml.h"

static int parse(const char *text, sp_toml_doc *d) { return sp_toml_parse(text, strlen(text), "t.toml", d); }

static const sp_toml_value *get(const sp_toml_doc *d, const char *t, const char *k, sp_toml_type type) {
    const sp_toml_value *v = sp_toml_get(d, t, k);
    if (!v) fail_msg("missing %s.%s", t, k);
    assert_int_equal(v->type, type);
    return v;
}

static void test_good_document(void **state) {
    const char *text = "# leading comment\n"
                       "top = 1\n"
                       "\n"
                       "[experiment]   # trailing comment\n"
                       "name = \"lego \\\"run\\\"\\\\ \\n\\t\\u00e9\\U0001F600\"\n"
                       "'literal key' = 'C:\\path\\no escapes'\n"
                       "\"quoted key\" = \"\"\n"
                       "seed = +42\n"
                       "big = 1_000_000\n"
                       "neg = -17\n"
                       "zero = 0\n"
                       "\n"
                       "[numbers]\n"
                       "a = 1.5\n"
                       "b = 1e-4\n"
                       "c = -2.5E3\n"
                       "d = 6.02e+23\n"
                       "e = 1_0.0_1\n"
                       "f = 1e05\n"
                       "g = -0.0\n"
                       "h = inf\n"
                       "i = -inf\n"
                       "j = nan\n"
                       "yes = true\n"
                       "no = false\n"
                       "\n"
                       "[arrays]\n"
                       "empty = []\n"
                       "ints = [1, 2, 3]\n"
                       "multi = [\n"
                       "  1.0,  # one\n"
                       "  2.5,\n"
                       "\n"
                       "  3,   # trailing comma next\n"
                       "]\n"
                       "nested = [[1, 2], ['x']]\n"
                       "strs = [\"a\", 'b']\n"
                       "[a.b]\n"
                       "k = true\n"
                       "[ \"quoted\" . name ]\n"
                       "v = 1\n";
    sp_toml_doc d;
    if (parse(text, &d)) fail_msg("%s", sp_last_error());
    assert_int_equal(get(&d, "", "top", SP_TOML_INT)->i, 1);
    assert_string_equal(get(&d, "experiment", "name", SP_TOML_STRING)->s, "lego \"run\"\\ \n\t\xc3\xa9\xf0\x9f\x98\x80");
    assert_string_equal(get(&d, "experiment", "literal key", SP_TOML_STRING)->s, "C:\\path\\no escapes");
    assert_string_equal(get(&d, "experiment", "quoted key", SP_TOML_STRING)->s, "");
    assert_int_equal(get(&d, "experiment", "seed", SP_TOML_INT)->i, 42);
    assert_int_equal(get(&d, "experiment", "big", SP_TOML_INT)->i, 1000000);
    assert_int_equal(get(&d, "experiment", "neg", SP_TOML_INT)->i, -17);
    assert_int_equal(get(&d, "experiment", "zero", SP_TOML_INT)->i, 0);
    assert_true(get(&d, "numbers", "a", SP_TOML_FLOAT)->f == 1.5);
    assert_true(get(&d, "numbers", "b", SP_TOML_FLOAT)->f == 1e-4);
    assert_true(get(&d, "numbers", "c", SP_TOML_FLOAT)->f == -2500.0);
    assert_true(get(&d, "numbers", "d", SP_TOML_FLOAT)->f == 6.02e23);
    assert_true(get(&d, "numbers", "e", SP_TOML_FLOAT)->f == 10.01);
    assert_true(get(&d, "numbers", "f", SP_TOML_FLOAT)->f == 1e5);
    assert_true(signbit(get(&d, "numbers", "g", SP_TOML_FLOAT)->f));
    assert_true(isinf(get(&d, "numbers", "h", SP_TOML_FLOAT)->f) && get(&d, "numbers", "h", SP_TOML_FLOAT)->f > 0);
    assert_true(get(&d, "numbers", "i", SP_TOML_FLOAT)->f < 0);
    assert_true(isnan(get(&d, "numbers", "j", SP_TOML_FLOAT)->f));
    assert_true(get(&d, "numbers", "yes", SP_TOML_BOOL)->b);
    assert_false(get(&d, "numbers", "no", SP_TOML_BOOL)->b);
    assert_int_equal(get(&d, "arrays", "empty", SP_TOML_ARRAY)->n, 0);
    const sp_toml_value *m = get(&d, "arrays", "multi", SP_TOML_ARRAY);
    assert_int_equal(m->n, 3);
    assert_true(m->items[1].f == 2.5);
    assert_int_equal(m->items[2].type, SP_TOML_INT);
    assert_int_equal(m->line, 30);
    assert_int_equal(m->items[0].line, 31);
    assert_int_equal(m->items[2].line, 34);
    const sp_toml_value *nest = get(&d, "arrays", "nested", SP_TOML_ARRAY);
    assert_int_equal(nest->n, 2);
    assert_int_equal(nest->items[0].items[1].i, 2);
    assert_string_equal(nest->items[1].items[0].s, "x");
    assert_string_equal(get(&d, "arrays", "strs", SP_TOML_ARRAY)->items[1].s, "b");
    assert_true(get(&d, "a.b", "k", SP_TOML_BOOL)->b);
    assert_int_equal(get(&d, "quoted.name", "v", SP_TOML_INT)->i, 1);
    assert_null(sp_toml_get(&d, "experiment", "nope"));
    assert_null(sp_toml_get(&d, "nope", "name"));

    /* Tables and entries in file order with their lines. */
    assert_int_equal(d.ntables, 6);
    assert_string_equal(d.tables[1].name, "experiment");
    assert_int_equal(d.tables[1].line, 4);
    assert_int_equal(d.tables[2].line, 13);
    assert_string_equal(d.entries[0].key, "top");
    assert_int_equal(d.entries[0].line, 2);
    assert_int_equal(d.entries[0].table, 0);
    assert_string_equal(d.entries[1].key, "name");
    assert_int_equal(d.entries[1].line, 5);
    assert_int_equal(d.entries[1].table, 1);
    for (int k = 1; k < d.n; k++) assert_true(d.entries[k].table >= d.entries[k - 1].table);
    sp_toml_free(&d);
}

static void test_line_endings_and_bom(void **state) {
    sp_toml_doc d;
    const char *text = "\xEF\xBB\xBF# bom\r\n[t]\r\nx = 'a' # c\r\ny = [1,\r\n 2]\r\n";
    if (parse(text, &d)) fail_msg("%s", sp_last_error());
    assert_string_equal(get(&d, "t", "x", SP_TOML_STRING)->s, "a");
    assert_int_equal(get(&d, "t", "y", SP_TOML_ARRAY)->n, 2);
    assert_int_equal(d.entries[1].line, 4);
    sp_toml_free(&d);
    /* Empty and comment-only documents. */
    assert_int_equal(parse("", &d), 0);
    assert_int_equal(d.n, 0);
    sp_toml_free(&d);
    assert_int_equal(parse("# nothing\n\n   \n", &d), 0);
    sp_toml_free(&d);
    /* No newline at the end. */
    assert_int_equal(parse("[t]\nx = 1", &d), 0);
    assert_int_equal(get(&d, "t", "x", SP_TOML_INT)->i, 1);
    sp_toml_free(&d);
}

static void test_integer_limits(void **state) {
    sp_toml_doc d;
    assert_int_equal(parse("a = 9223372036854775807\nb = -9223372036854775808\n", &d), 0);
    assert_true(get(&d, "", "a", SP_TOML_INT)->i == INT64_MAX);
    assert_true(get(&d, "", "b", SP_TOML_INT)->i == INT64_MIN);
    sp_toml_free(&d);
}

/* Every syntax error class: the exact "t.toml:LINE: message" text. */
static void test_errors(void **state) {
    static const struct {
        const char *text, *msg;
    } cases[] = {
        {"[trainer]\nmax_steps 100\n", "t.toml:2: expected '=' after key 'max_steps'"},
        {"[t]\nx = 1\n\nx = 2\n", "t.toml:4: duplicate key 'x' in [t] (first set on line 2)"},
        {"x = 1\nx = 2\n", "t.toml:2: duplicate key 'x' (first set on line 1)"},
        {"[t]\n[u]\n[t]\n", "t.toml:3: duplicate table [t] (first defined on line 1)"},
        {"[t]\nx =\n", "t.toml:2: missing value for key 'x'"},
        {"[t]\nx = # c\n", "t.toml:2: missing value for key 'x'"},
        {"[t]\n= 3\n", "t.toml:2: missing key before '='"},
        {"[t]\n!x = 3\n", "t.toml:2: expected a key, found '!'"},
        {"[t]\nx = 1 2\n", "t.toml:2: unexpected text after value: '2'"},
        {"[t] x = 1\n", "t.toml:1: unexpected text after table header: 'x = 1'"},
        {"[t\n", "t.toml:1: expected ']' to close the table header [t"},
        {"[t x]\n", "t.toml:1: expected ']' to close the table header"},
        {"[]\n", "t.toml:1: expected a table name after '['"},
        {"[a..b]\n", "t.toml:1: expected a table name after '['"},
        {"[\"a.b\"]\n", "t.toml:1: table name parts must be non-empty and contain no '.'"},
        {"[[t]]\n", "t.toml:1: arrays of tables ([[...]]) are not supported"},
        {"a.b = 1\n", "t.toml:1: dotted keys like 'a.x' are not supported; use a [table] header"},
        {"x = {a = 1}\n", "t.toml:1: inline tables are not supported"},
        {"x = \"\"\"abc\"\"\"\n", "t.toml:1: multi-line strings are not supported"},
        {"x = '''abc'''\n", "t.toml:1: multi-line strings are not supported"},
        {"\nx = \"abc\n", "t.toml:2: unterminated string"},
        {"x = 'abc\n", "t.toml:1: unterminated string"},
        {"x = \"abc", "t.toml:1: unterminated string"},
        {"x = \"a\\qb\"\n", "t.toml:1: invalid escape '\\q' in string"},
        {"x = \"a\\u12\"\n", "t.toml:1: \\u escape needs 4 hex digits"},
        {"x = \"\\uD800\"\n", "t.toml:1: \\u escape is not an allowed Unicode scalar value"},
        {"x = \"\\u0000\"\n", "t.toml:1: \\u escape is not an allowed Unicode scalar value"},
        {"x = \"\\U00110000\"\n", "t.toml:1: \\U escape is not an allowed Unicode scalar value"},
        {"x = \"a\x01b\"\n", "t.toml:1: control character in string"},
        {"x = cuda\n", "t.toml:1: invalid value 'cuda' (strings need quotes: \"cuda\")"},
        {"x = 007\n", "t.toml:1: leading zeros are not allowed in '007'"},
        {"x = 1__0\n", "t.toml:1: invalid value '1__0'"},
        {"x = _1\n", "t.toml:1: invalid value '_1'"},
        {"x = 1_\n", "t.toml:1: invalid value '1_'"},
        {"x = 1.\n", "t.toml:1: invalid value '1.'"},
        {"x = .5\n", "t.toml:1: invalid value '.5'"},
        {"x = 1e\n", "t.toml:1: invalid value '1e'"},
        {"x = 0x1F\n", "t.toml:1: invalid value '0x1F'"},
        {"x = 1979-05-27\n", "t.toml:1: invalid value '1979-05-27'"},
        {"x = 9223372036854775808\n", "t.toml:1: integer out of range: '9223372036854775808'"},
        {"x = 1e999\n", "t.toml:1: float out of range: '1e999'"},
        {"x = True\n", "t.toml:1: invalid value 'True' (strings need quotes"},
        {"x = [1, 2\n", "t.toml:1: unterminated array (no closing ']')"},
        {"\nx = [1,\n2,\n", "t.toml:2: unterminated array (no closing ']')"},
        {"x = [1 2]\n", "t.toml:1: expected ',' or ']' in array"},
        {"x = [,]\n", "t.toml:1: invalid value starting with ','"},
        {"x = @\n", "t.toml:1: invalid value '@' (strings need quotes: \"@\")"},
        {"x = ,\n", "t.toml:1: invalid value starting with ','"},
        {"path = ../x\n", "t.toml:1: invalid value '../x' (strings need quotes: \"../x\")"},
        {"path = C:\\data\n", "t.toml:1: invalid value 'C:\\data' (strings need quotes: 'C:\\data')"},
        {"x = -abc\n", "t.toml:1: invalid value '-abc' (strings need quotes: \"-abc\")"},
        {"[data\npath = 1\n", "t.toml:1: expected ']' to close the table header [data"},
        {"a = 1\n\n\nb = \"\xff\"\n", "t.toml:4: invalid UTF-8"},
        {"a = \"\xed\xa0\x80\"\n", "t.toml:1: invalid UTF-8"},
        {"a = 1\rb = 2\n", "t.toml:1: carriage return without a newline"},
        {"[t]\nx = 1\n[t.x]\n", "t.toml:3: table [t.x] clashes with key 'x' on line 2"},
        {"[t.x]\n[t]\nx = 1\n", "t.toml:3: key 'x' clashes with table [t.x] on line 1"},
        {"x = [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]\n",
         "t.toml:1: arrays nested too deeply"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        sp_toml_doc d;
        sp_clear_error();
        if (parse(cases[k].text, &d) == 0) fail_msg("case %zu parsed: %s", k, cases[k].text);
        tu_assert_contains(sp_last_error(), cases[k].msg);
        assert_int_equal(d.n, 0); /* freed */
        assert_null(d.tables);
    }
    /* An embedded NUL byte (the length covers it). */
    sp_toml_doc d;
    assert_int_equal(sp_toml_parse("a = 1\nb\0= 2\n", 12, "t.toml", &d), -1);
    tu_assert_contains(sp_last_error(), "t.toml:2: NUL byte in text");
}


/* Every problem of a document in one pass, with what parsed around them kept: a duplicate key
 * (the first value stays), an unquoted path (kept, marked invalid), a header without ']' (taken
 * as meant), an error inside a multi-line array (the whole array skipped), an array that runs
 * into the next statement, a duplicate table (its keys join the first one). */
static void test_every_problem(void **state) {
    const char *text = "[data]\n"                 /* 1 */
                       "path = \"a\"\n"           /* 2 */
                       "path = \"b\"\n"           /* 3: duplicate */
                       "images = ../x\n"          /* 4: unquoted */
                       "[trainer\n"               /* 5: no ']' */
                       "max_steps = 100\n"        /* 6 */
                       "arr = [1,\n"              /* 7 */
                       "  2 x,\n"                 /* 8: error in array */
                       "  3]\n"                   /* 9 */
                       "after = 1\n"              /* 10 */
                       "open = [1, 2\n"           /* 11: never closed */
                       "next = 2\n"               /* 12 */
                       "[data]\n"                 /* 13: duplicate table */
                       "format = \"colmap\"\n"    /* 14 */
                       "bad = 1__2\n"             /* 15 */
                       "last = true\n";           /* 16 */
    sp_toml_doc d;
    sp_problems p = {0};
    assert_int_equal(sp_toml_parse_all(text, strlen(text), "t.toml", &d, &p), -1);
    static const char *want[] = {
        "t.toml:3: duplicate key 'path' in [data] (first set on line 2)",
        "t.toml:4: invalid value '../x' (strings need quotes: \"../x\")",
        "t.toml:5: expected ']' to close the table header [trainer",
        "t.toml:8: expected ',' or ']' in array",
        "t.toml:11: unterminated array (no closing ']')",
        "t.toml:13: duplicate table [data] (first defined on line 1)",
        "t.toml:15: invalid value '1__2'",
    };
    char *all = tu_joined(&p);
    if (p.n != (int)(sizeof want / sizeof *want)) fail_msg("problems:\n%s", all);
    for (int k = 0; k < p.n; k++) assert_string_equal(p.items[k], want[k]);
    free(all);
    assert_string_equal(get(&d, "data", "path", SP_TOML_STRING)->s, "a");
    assert_string_equal(get(&d, "data", "format", SP_TOML_STRING)->s, "colmap");
    assert_int_equal(get(&d, "trainer", "max_steps", SP_TOML_INT)->i, 100);
    assert_int_equal(get(&d, "trainer", "after", SP_TOML_INT)->i, 1);
    assert_int_equal(get(&d, "trainer", "next", SP_TOML_INT)->i, 2);
    assert_true(get(&d, "data", "last", SP_TOML_BOOL)->b);
    assert_null(sp_toml_get(&d, "trainer", "arr"));
    assert_null(sp_toml_get(&d, "trainer", "open"));
    assert_null(sp_toml_get(&d, "data", "bad"));
    /* the unquoted word is kept as a string, marked invalid; valid entries are not */
    int invalid = 0;
    for (int k = 0; k < d.n; k++) {
        if (d.entries[k].invalid) {
            invalid++;
            assert_string_equal(d.entries[k].key, "images");
            assert_string_equal(d.entries[k].value.s, "../x");
        }
        if (k) assert_true(d.entries[k].table >= d.entries[k - 1].table); /* grouped by table */
    }
    assert_int_equal(invalid, 1);
    sp_problems_free(&p);
    sp_toml_free(&d);
    /* sp_toml_parse reports the first problem only, and returns an empty document */
    assert_int_equal(sp_toml_parse(text, strlen(text), "t.toml", &d), -1);
    assert_string_equal(sp_last_error(), want[0]);
    assert_int_equal(d.n, 0);
}

/* Duplicate detection is linear: 100k keys in one table, 30k tables, 100k duplicates. */
static void test_large_documents_are_fast(void **state) {
    size_t cap = 4 << 20, len = 0;
    char *text = sp_malloc(cap);
    for (int k = 0; k < 100000; k++) len += (size_t)snprintf(text + len, cap - len, "key_%d = %d\n", k, k);
    clock_t t0 = clock();
    sp_toml_doc d;
    assert_int_equal(sp_toml_parse(text, len, "big.toml", &d), 0);
    assert_int_equal(d.n, 100000);
    sp_toml_free(&d);
    len = 0;
    for (int k = 0; k < 30000; k++) len += (size_t)snprintf(text + len, cap - len, "[t%d]\nx = 1\n", k);
    assert_int_equal(sp_toml_parse(text, len, "big.toml", &d), 0);
    assert_int_equal(d.ntables, 30001);
    sp_toml_free(&d);
    len = 0;
    for (int k = 0; k < 100000; k++) len += (size_t)snprintf(text + len, cap - len, "same = %d\n", k);
    sp_problems p = {0};
    assert_int_equal(sp_toml_parse_all(text, len, "big.toml", &d, &p), -1);
    assert_int_equal(p.n, 99999);
    assert_string_equal(p.items[99998], "big.toml:100000: duplicate key 'same' (first set on line 1)");
    sp_problems_free(&p);
    sp_toml_free(&d);
    double dt = (double)(clock() - t0) / CLOCKS_PER_SEC;
    free(text);
    /* quadratic scans took minutes here; linear ones take well under a second, even under ASan
     * (CPU time, not wall time: the machine may be busy) */
    if (dt > 10.0) fail_msg("parsing took %.1f s of CPU time", dt);
}

static void test_load_file(void **state) {
    char *dir = tu_tmpdir();
    char *path = sp_path_join(dir, "run.toml");
    tu_write_text(path, "[trainer]\nmax_steps = 10\nmax_steps = 20\n");
    sp_toml_doc d;
    assert_int_equal(sp_toml_load(path, &d), -1);
    char *want = sp_strfmt("%s:3: duplicate key 'max_steps' in [trainer] (first set on line 2)", path);
    tu_assert_contains(sp_last_error(), want);
    free(want);
    tu_write_text(path, "[trainer]\nmax_steps = 10\n");
    assert_int_equal(sp_toml_load(path, &d), 0);
    assert_int_equal(get(&d, "trainer", "max_steps", SP_TOML_INT)->i, 10);
    sp_toml_free(&d);
    char *missing = sp_path_join(dir, "missing.toml");
    assert_int_equal(sp_toml_load(missing, &d), -1);
    tu_assert_contains(sp_last_error(), missing);
    free(missing);
    unlink(path);
    rmdir(dir);
    free(path);
    free(dir);
}

static void test_parse_value(void **state) {
    sp_toml_value v;
    assert_int_equal(sp_toml_parse_value(" 100 ", &v), 0);
    assert_int_equal(v.type, SP_TOML_INT);
    assert_int_equal(v.i, 100);
    sp_toml_value_free(&v);
    assert_int_equal(sp_toml_parse_value("\"a b\"", &v), 0);
    assert_string_equal(v.s, "a b");
    sp_toml_value_free(&v);
    assert_int_equal(sp_toml_parse_value("[1.5, 2]", &v), 0);
    assert_int_equal(v.n, 2);
    sp_toml_value_free(&v);
    assert_int_equal(sp_toml_parse_value("false", &v), 0);
    assert_int_equal(v.type, SP_TOML_BOOL);
    sp_toml_value_free(&v);

    assert_int_equal(sp_toml_parse_value("abc", &v), -1);
    assert_string_equal(sp_last_error(), "invalid value 'abc' (strings need quotes: \"abc\")");
    assert_int_equal(sp_toml_parse_value("1 2", &v), -1);
    assert_string_equal(sp_last_error(), "unexpected text after value: '2'");
    assert_int_equal(sp_toml_parse_value("", &v), -1);
    assert_string_equal(sp_last_error(), "missing value");
    assert_int_equal(sp_toml_parse_value("\"open", &v), -1);
    assert_string_equal(sp_last_error(), "unterminated string");
    assert_int_equal(sp_toml_parse_value("[1, \"x", &v), -1);
    assert_string_equal(sp_last_error(), "unterminated string");
}

static void check_float_text(double v, const char *want) {
    char t[32];
    sp_toml_format_float(v, t);
    assert_string_equal(t, want);
}

static void test_float_format(void **state) {
    check_float_text(1.0, "1.0");
    check_float_text(20.0, "20.0");
    check_float_text(0.1, "0.1");
    check_float_text(0.00016, "0.00016");
    check_float_text(0.0000016, "1.6e-06");
    check_float_text(1e-15, "1e-15");
    check_float_text(3e6, "3000000.0");
    check_float_text(-2.5e3, "-2500.0");
    check_float_text(0.0, "0.0");
    check_float_text(1e300, "1e+300");
    check_float_text(INFINITY, "inf");
    check_float_text(-INFINITY, "-inf");
    check_float_text(NAN, "nan");
    /* Every printed float reads back exactly, as a float. */
    sp_rng r;
    sp_rng_seed(&r, 7, 0);
    double special[] = {1.0 / 3, DBL_MAX, DBL_MIN, 4.9e-324, -0.0, 123456789.123456789, 0.999, 1e-5, 9.999999e15};
    for (int k = 0; k < 2000 + (int)(sizeof special / sizeof *special); k++) {
        double v = k < 2000 ? ldexp((double)sp_rng_u32(&r) / 4294967296.0 + 0.5, (int)(sp_rng_u32(&r) % 200) - 100) *
                                  ((k & 1) ? -1 : 1)
                            : special[k - 2000];
        char t[32];
        sp_toml_format_float(v, t);
        sp_toml_value val;
        if (sp_toml_parse_value(t, &val)) fail_msg("%s: %s", t, sp_last_error());
        assert_int_equal(val.type, SP_TOML_FLOAT);
        if (memcmp(&val.f, &v, sizeof v)) fail_msg("%.17g printed as %s read back as %.17g", v, t, val.f);
    }
}

static void test_writer_round_trip(void **state) {
    sp_toml_writer w;
    sp_tomlw_init(&w);
    assert_string_equal(sp_tomlw_text(&w), "");
    sp_tomlw_comment(&w, "result of a run\nsecond line");
    sp_tomlw_string(&w, "top", "x");
    sp_tomlw_table(&w, "run");
    const char *tricky = "quote \" backslash \\ newline \n tab \t cr \r bell \x07 del \x7f caf\xc3\xa9";
    sp_tomlw_string(&w, "name", tricky);
    sp_tomlw_string(&w, "needs quotes", "v");
    sp_tomlw_int(&w, "steps", -30000);
    sp_tomlw_float(&w, "psnr", 33.123456789012345);
    sp_tomlw_float(&w, "whole", 5.0);
    sp_tomlw_bool(&w, "ok", true);
    sp_tomlw_bool(&w, "bad", false);
    sp_tomlw_table(&w, "per_view");
    double dv[3] = {1.0, 0.1, 1e-20};
    sp_tomlw_float_array(&w, "d", dv, 3);
    float fv[20];
    for (int k = 0; k < 20; k++) fv[k] = 0.1f * (float)k + 1e-3f;
    sp_tomlw_float_array_f(&w, "f", fv, 20);
    sp_tomlw_float_array(&w, "none", NULL, 0);
    int64_t iv[2] = {1, -2};
    sp_tomlw_int_array(&w, "i", iv, 2);
    const char *sv[2] = {"r_0", "a\"b"};
    sp_tomlw_string_array(&w, "names", sv, 2);
    sp_tomlw_table(&w, "a.b");
    sp_tomlw_int(&w, "x", 1);

    const char *text = sp_tomlw_text(&w);
    tu_assert_contains(text, "# result of a run\n# second line\ntop = \"x\"\n\n[run]\n");
    tu_assert_contains(text, "\"needs quotes\" = \"v\"\n");
    tu_assert_contains(text, "whole = 5.0\n");
    tu_assert_contains(text, "d = [1.0, 0.1, 1e-20]\n");
    tu_assert_contains(text, "none = []\n");
    tu_assert_contains(text, "f = [\n  0.001, 0.101,");
    tu_assert_contains(text, "[a.b]\nx = 1\n");

    char *dir = tu_tmpdir();
    char *path = sp_path_join(dir, "result.toml");
    assert_int_equal(sp_tomlw_save(&w, path), 0);
    sp_tomlw_free(&w);
    sp_toml_doc d;
    if (sp_toml_load(path, &d)) fail_msg("%s", sp_last_error());
    assert_string_equal(get(&d, "", "top", SP_TOML_STRING)->s, "x");
    assert_string_equal(get(&d, "run", "name", SP_TOML_STRING)->s, tricky);
    assert_string_equal(get(&d, "run", "needs quotes", SP_TOML_STRING)->s, "v");
    assert_int_equal(get(&d, "run", "steps", SP_TOML_INT)->i, -30000);
    assert_true(get(&d, "run", "psnr", SP_TOML_FLOAT)->f == 33.123456789012345);
    assert_true(get(&d, "run", "whole", SP_TOML_FLOAT)->f == 5.0);
    assert_true(get(&d, "run", "ok", SP_TOML_BOOL)->b);
    assert_false(get(&d, "run", "bad", SP_TOML_BOOL)->b);
    const sp_toml_value *a = get(&d, "per_view", "d", SP_TOML_ARRAY);
    for (int k = 0; k < 3; k++) assert_true(a->items[k].f == dv[k]);
    a = get(&d, "per_view", "f", SP_TOML_ARRAY);
    assert_int_equal(a->n, 20);
    for (int k = 0; k < 20; k++) assert_true((float)a->items[k].f == fv[k]);
    assert_int_equal(get(&d, "per_view", "none", SP_TOML_ARRAY)->n, 0);
    assert_int_equal(get(&d, "per_view", "i", SP_TOML_ARRAY)->items[1].i, -2);
    assert_string_equal(get(&d, "per_view", "names", SP_TOML_ARRAY)->items[1].s, "a\"b");
    assert_int_equal(get(&d, "a.b", "x", SP_TOML_INT)->i, 1);
    sp_toml_free(&d);
    unlink(path);
    rmdir(dir);
    free(path);
    free(dir);
}

/* Mutated and truncated documents never crash: each either parses or fails with a located
 * message. (Run under AddressSanitizer to check memory safety, too.) */
static void test_mutations(void **state) {
    const char *base = "# c\n[trainer]\nmax_steps = 30_000\nname = \"a\\u00e9\\n\" # x\n"
                       "lit = 'b'\nf = -1.5e-3\narr = [1, [2.0, 'x'],\n  true, ]\n[a.b]\nk = false\n";
    size_t n = strlen(base);
    static const char alphabet[] = "[]=\"'\\#.,_+-eE0123456789 \n\r\tabu{}\x80\xc3";
    sp_rng r;
    sp_rng_seed(&r, 42, 1);
    char buf[512];
    for (int it = 0; it < 20000; it++) {
        memcpy(buf, base, n);
        size_t len = n;
        int edits = 1 + (int)(sp_rng_u32(&r) % 4);
        for (int e = 0; e < edits; e++) {
            size_t at = sp_rng_u32(&r) % len;
            char ch = alphabet[sp_rng_u32(&r) % (sizeof alphabet - 1)];
            switch (sp_rng_u32(&r) % 3) {
            case 0: buf[at] = ch; break;
            case 1: /* insert */
                memmove(buf + at + 1, buf + at, len - at);
                buf[at] = ch;
                len++;
                break;
            default: /* delete */
                memmove(buf + at, buf + at + 1, len - at - 1);
                len--;
            }
        }
        if (it % 7 == 0) len = sp_rng_u32(&r) % (len + 1); /* truncate */
        char *exact = sp_malloc(len); /* no terminator: reads past the end are bugs */
        memcpy(exact, buf, len);
        sp_toml_doc d;
        if (sp_toml_parse(exact, len, "t.toml", &d) == 0) sp_toml_free(&d);
        else if (strncmp(sp_last_error(), "t.toml:", 7)) fail_msg("unlocated error: %s", sp_last_error());
        free(exact);
    }
}

static void test_type_names(void **state) {
    assert_string_equal(sp_toml_type_name(SP_TOML_STRING), "a string");
    assert_string_equal(sp_toml_type_name(SP_TOML_INT), "an integer");
    assert_string_equal(sp_toml_type_name(SP_TOML_FLOAT), "a float");
    assert_string_equal(sp_toml_type_name(SP_TOML_BOOL), "a boolean");
    assert_string_equal(sp_toml_type_name(SP_TOML_ARRAY), "an array");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good_document),   cmocka_unit_test(test_line_endings_and_bom),
        cmocka_unit_test(test_integer_limits),  cmocka_unit_test(test_errors),
        cmocka_unit_test(test_load_file),       cmocka_unit_test(test_parse_value),
        cmocka_unit_test(test_float_format),    cmocka_unit_test(test_writer_round_trip),
        cmocka_unit_test(test_mutations),       cmocka_unit_test(test_type_names),
        cmocka_unit_test(test_every_problem),   cmocka_unit_test(test_large_documents_are_fast),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
