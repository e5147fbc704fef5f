/* test_ply.c — the 3DGS .ply writer and reader: bit-exact round trips, the exact header, an
 * independent parse of the written bytes, tolerant reading, and broken files. */
#include "testutil.h"

#include <math.h>

#include "io/ply.h"

static void random_gaussians(sp_gaussians *g, int n, int degree, uint64_t seed) {
    sp_rng r;
    sp_rng_seed(&r, seed, 7);
    sp_gaussians_init(g, n, degree);
    g->n = n;
    tu_fill_uniform(&r, g->means, 3 * (size_t)n, -5, 5);
    tu_fill_uniform(&r, g->log_scales, 3 * (size_t)n, -8, 1);
    tu_fill_uniform(&r, g->quats, 4 * (size_t)n, -1, 1);
    tu_fill_uniform(&r, g->opacity_logits, (size_t)n, -6, 6);
    tu_fill_uniform(&r, g->sh, 3 * (size_t)g->K * n, -2, 2);
}

static void assert_same(const sp_gaussians *a, const sp_gaussians *b) {
    assert_int_equal(a->n, b->n);
    assert_int_equal(a->sh_degree, b->sh_degree);
    assert_int_equal(a->K, b->K);
    size_t n = (size_t)a->n;
    assert_memory_equal(a->means, b->means, n * 3 * sizeof(float));
    assert_memory_equal(a->log_scales, b->log_scales, n * 3 * sizeof(float));
    assert_memory_equal(a->quats, b->quats, n * 4 * sizeof(float));
    assert_memory_equal(a->opacity_logits, b->opacity_logits, n * sizeof(float));
    assert_memory_equal(a->sh, b->sh, n * 3 * (size_t)a->K * sizeof(float));
}

static void test_round_trip(void **state) {
    (void)state;
    char *d = tu_tmpdir();
    char *p = sp_path_join(d, "model.ply");
    for (int deg = 0; deg <= 3; deg++) {
        int n = deg == 3 ? 5000 : 300 + deg; /* degree 3 crosses the 4096-vertex chunk */
        sp_gaussians a, b;
        random_gaussians(&a, n, deg, 100 + deg);
        /* Values that must survive bit for bit. */
        a.means[0] = -0.0f;
        a.sh[1] = 1e-38f;
        a.opacity_logits[n - 1] = 3.0e38f; /* (infinity is refused: test_model_rules) */
        if (sp_ply_write(p, &a)) fail_msg("%s", sp_last_error());
        if (sp_ply_read(p, &b)) fail_msg("%s", sp_last_error());
        assert_same(&a, &b);
        sp_gaussians_free(&a);
        sp_gaussians_free(&b);
    }
    /* No Gaussians at all: written (an empty store is a valid state), refused on reading. */
    sp_gaussians a, b;
    sp_gaussians_init(&a, 4, 2);
    assert_int_equal(sp_ply_write(p, &a), 0);
    assert_int_equal(sp_ply_read(p, &b), -1);
    tu_assert_contains(sp_last_error(), "model.ply: the model has no Gaussians");
    sp_gaussians_free(&a);
    /* No temporary file is left behind. */
    char *cmd = sp_strfmt("test $(ls '%s' | wc -l) -eq 1", d);
    assert_int_equal(system(cmd), 0);
    free(cmd);
    cmd = sp_strfmt("rm -rf '%s'", d);
    assert_int_equal(system(cmd), 0);
    free(cmd);
    free(p);
    free(d);
}

/* Header text of a file (up to and including "end_header\n") and its length. */
static char *read_header(const char *path, char **data, size_t *len, size_t *hlen) {
    assert_int_equal(sp_read_file(path, data, len), 0);
    char *e = strstr(*data, "end_header\n");
    assert_non_null(e);
    *hlen = (size_t)(e - *data) + strlen("end_header\n");
    char *h = sp_malloc(*hlen + 1);
    memcpy(h, *data, *hlen);
    h[*hlen] = 0;
    return h;
}

static void test_header_degree3(void **state) {
    (void)state;
    char *d = tu_tmpdir();
    char *p = sp_path_join(d, "model.ply");
    sp_gaussians g;
    random_gaussians(&g, 17, 3, 5);
    assert_int_equal(sp_ply_write(p, &g), 0);

    /* The exact header. */
    char expect[8192];
    size_t o = 0;
    o += (size_t)snprintf(expect + o, sizeof expect - o, "ply\nformat binary_little_endian 1.0\nelement vertex 17\n");
    const char *head[] = {"x", "y", "z", "nx", "ny", "nz", "f_dc_0", "f_dc_1", "f_dc_2"};
    for (int i = 0; i < 9; i++) o += (size_t)snprintf(expect + o, sizeof expect - o, "property float %s\n", head[i]);
    for (int i = 0; i < 45; i++) o += (size_t)snprintf(expect + o, sizeof expect - o, "property float f_rest_%d\n", i);
    const char *tail[] = {"opacity", "scale_0", "scale_1", "scale_2", "rot_0", "rot_1", "rot_2", "rot_3"};
    for (int i = 0; i < 8; i++) o += (size_t)snprintf(expect + o, sizeof expect - o, "property float %s\n", tail[i]);
    snprintf(expect + o, sizeof expect - o, "end_header\n");
    char *data;
    size_t len, hlen;
    char *h = read_header(p, &data, &len, &hlen);
    assert_string_equal(h, expect);

    /* An independent minimal parse: vertex count, property order, record layout. */
    int count = -1, nprops = 0;
    char props[64][32];
    char *save = NULL;
    for (char *line = strtok_r(h, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (sscanf(line, "element vertex %d", &count) == 1) continue;
        char type[16], name[32];
        if (sscanf(line, "property %15s %31s", type, name) == 2) {
            assert_string_equal(type, "float");
            assert_true(nprops < 64);
            strcpy(props[nprops++], name);
        }
    }
    assert_int_equal(count, 17);
    assert_int_equal(nprops, 62);
    assert_string_equal(props[0], "x");
    assert_string_equal(props[3], "nx");
    assert_string_equal(props[6], "f_dc_0");
    assert_string_equal(props[9], "f_rest_0");
    assert_string_equal(props[53], "f_rest_44");
    assert_string_equal(props[54], "opacity");
    assert_string_equal(props[55], "scale_0");
    assert_string_equal(props[58], "rot_0");
    assert_string_equal(props[61], "rot_3");
    assert_int_equal(len, hlen + 17 * 62 * sizeof(float));
    /* Vertex 5's record: f_rest channel-major, normals 0, values as stored. */
    float rec[62];
    memcpy(rec, data + hlen + 5 * sizeof rec, sizeof rec); /* this machine is little-endian */
    const float *sh = g.sh + 5 * 16 * 3;
    for (int k = 0; k < 3; k++) {
        assert_true(rec[k] == g.means[5 * 3 + k]);
        assert_true(rec[3 + k] == 0.0f);
        assert_true(rec[6 + k] == sh[k]);
        assert_true(rec[55 + k] == g.log_scales[5 * 3 + k]);
    }
    for (int c = 0; c < 3; c++)
        for (int k = 1; k < 16; k++) assert_true(rec[9 + c * 15 + (k - 1)] == sh[k * 3 + c]);
    assert_true(rec[54] == g.opacity_logits[5]);
    for (int k = 0; k < 4; k++) assert_true(rec[58 + k] == g.quats[5 * 4 + k]);
    free(h);
    free(data);
    sp_gaussians_free(&g);
    unlink(p);
    rmdir(d);
    free(p);
    free(d);
}

static char *g_dir;

static char *fixture(const char *name, const void *bytes, size_t n) {
    char *p = sp_path_join(g_dir, name);
    assert_int_equal(sp_write_file_atomic(p, bytes, n), 0);
    return p;
}

/* Reads text as a ply and expects failure with `needle` in the message. */
static void expect_error(const char *name, const char *text, size_t n, const char *needle) {
    char *p = fixture(name, text, n);
    sp_gaussians g;
    sp_clear_error();
    assert_int_equal(sp_ply_read(p, &g), -1);
    assert_null(g.means);
    char *want = sp_strfmt("%s%s", p, needle);
    tu_assert_contains(sp_last_error(), want);
    free(want);
    free(p);
}

static void test_tolerant_reading(void **state) {
    (void)state;
    /* ascii, shuffled order, extra properties, integer and double types, comments, CRLF, and
     * other elements before and after the vertices. */
    const char *text =
        "ply\r\nformat ascii 1.0\r\ncomment made by hand\r\n"
        "element camera 1\r\nproperty float fov\r\n"
        "element vertex 2\r\n"
        "property double opacity\r\nproperty float rot_3\r\nproperty float rot_2\r\nproperty float rot_1\r\n"
        "property float rot_0\r\nproperty uchar red\r\nproperty float scale_2\r\nproperty float scale_1\r\n"
        "property float scale_0\r\nproperty float f_dc_2\r\nproperty float f_dc_1\r\nproperty float f_dc_0\r\n"
        "property short z\r\nproperty float y\r\nproperty float x\r\n"
        "element face 1\r\nproperty list uchar int vertex_indices\r\n"
        "end_header\r\n"
        "0.7\r\n"
        "0.5 4 3 2 1 200 -3 -2 -1 0.3 0.2 0.1 -7 2.5 1.5\r\n"
        "  -0.25 0 0 0 1 0 -4 -4 -4 1e-3 2e-3 3e-3 9 8.75 -1e10  \r\n"
        "3 0 1 1\r\n";
    char *p = fixture("ascii.ply", text, strlen(text));
    sp_gaussians g;
    if (sp_ply_read(p, &g)) fail_msg("%s", sp_last_error());
    assert_int_equal(g.n, 2);
    assert_int_equal(g.sh_degree, 0);
    float m0[3] = {1.5f, 2.5f, -7}, m1[3] = {-1e10f, 8.75f, 9};
    assert_memory_equal(g.means, m0, sizeof m0);
    assert_memory_equal(g.means + 3, m1, sizeof m1);
    float q0[4] = {1, 2, 3, 4};
    assert_memory_equal(g.quats, q0, sizeof q0);
    assert_true(g.quats[4] == 1 && g.quats[7] == 0);
    float s0[3] = {-1, -2, -3};
    assert_memory_equal(g.log_scales, s0, sizeof s0);
    float dc0[3] = {0.1f, 0.2f, 0.3f};
    assert_memory_equal(g.sh, dc0, sizeof dc0);
    assert_true(g.opacity_logits[0] == 0.5f && g.opacity_logits[1] == -0.25f);
    sp_gaussians_free(&g);
    free(p);

    /* binary big-endian with doubles, degree 1 (9 f_rest), and a fixed-size element first. */
    char hdr[4096];
    size_t o = (size_t)snprintf(hdr, sizeof hdr, "ply\nformat binary_big_endian 1.0\nelement extra 2\n"
                                                 "property short a\nelement vertex 1\n");
    const char *names[] = {"x", "y", "z", "f_dc_0", "f_dc_1", "f_dc_2", "opacity", "scale_0", "scale_1",
                           "scale_2", "rot_0", "rot_1", "rot_2", "rot_3"};
    for (int i = 0; i < 14; i++) o += (size_t)snprintf(hdr + o, sizeof hdr - o, "property double %s\n", names[i]);
    for (int i = 0; i < 9; i++) o += (size_t)snprintf(hdr + o, sizeof hdr - o, "property double f_rest_%d\n", i);
    o += (size_t)snprintf(hdr + o, sizeof hdr - o, "end_header\n");
    uint8_t buf[8192];
    memcpy(buf, hdr, o);
    size_t n = o;
    memset(buf + n, 0xAB, 4); /* the 'extra' element */
    n += 4;
    for (int i = 0; i < 23; i++) {
        double v = i + 0.5;
        uint8_t b[8];
        memcpy(b, &v, 8);
        for (int k = 0; k < 8; k++) buf[n++] = b[7 - k];
    }
    p = fixture("be.ply", buf, n);
    if (sp_ply_read(p, &g)) fail_msg("%s", sp_last_error());
    assert_int_equal(g.n, 1);
    assert_int_equal(g.sh_degree, 1);
    assert_true(g.means[0] == 0.5f && g.means[2] == 2.5f);
    assert_true(g.sh[0] == 3.5f && g.sh[2] == 5.5f);
    assert_true(g.opacity_logits[0] == 6.5f);
    assert_true(g.log_scales[2] == 9.5f && g.quats[3] == 13.5f);
    /* f_rest_0..2 are red coefficients 1..3, f_rest_3..5 green, f_rest_6..8 blue. */
    assert_true(g.sh[1 * 3 + 0] == 14.5f && g.sh[3 * 3 + 0] == 16.5f);
    assert_true(g.sh[1 * 3 + 1] == 17.5f && g.sh[3 * 3 + 2] == 22.5f);
    sp_gaussians_free(&g);
    free(p);
}

/* A binary little-endian degree-0 header with the given vertex count. */
static size_t deg0_header(char *h, size_t cap, int n, const char *extra_prop) {
    return (size_t)snprintf(h, cap,
                            "ply\nformat binary_little_endian 1.0\nelement vertex %d\n%s"
                            "property float x\nproperty float y\nproperty float z\n"
                            "property float f_dc_0\nproperty float f_dc_1\nproperty float f_dc_2\n"
                            "property float opacity\nproperty float scale_0\nproperty float scale_1\n"
                            "property float scale_2\nproperty float rot_0\nproperty float rot_1\n"
                            "property float rot_2\nproperty float rot_3\nend_header\n",
                            n, extra_prop);
}

static void test_bad_files(void **state) {
    (void)state;
    expect_error("a.ply", "PK\3\4 zipped", 10, ": not a PLY file");
    expect_error("empty.ply", "", 0, ": not a PLY file");
    const char *h = "ply\nformat binary_little_endian 1.0\nelement vertex 1\nproperty float x\n"
                    "property half y\nend_header\n";
    expect_error("half.ply", h, strlen(h), ":5: unknown property type 'half'");
    h = "ply\nformat binary_middle_endian 1.0\nend_header\n";
    expect_error("fmt.ply", h, strlen(h), ":2: unknown format 'binary_middle_endian'");
    h = "ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\n";
    expect_error("noend.ply", h, strlen(h), ": header has no end_header");
    h = "ply\nformat ascii 1.0\nelement vertex -4\nend_header\n";
    expect_error("neg.ply", h, strlen(h), ":3: bad element line");
    h = "ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\nbogus\nend_header\n";
    expect_error("kw.ply", h, strlen(h), ":5: unknown header keyword 'bogus'");
    h = "ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\nproperty float x\nend_header\n";
    expect_error("dup.ply", h, strlen(h), ":5: duplicate property 'x'");
    h = "ply\nformat ascii 1.0\nelement face 1\nproperty float x\nend_header\n1\n";
    expect_error("novert.ply", h, strlen(h), ": no vertex element");

    /* Missing opacity. */
    char hdr[4096];
    size_t n = deg0_header(hdr, sizeof hdr, 1, "");
    char *op = strstr(hdr, "property float opacity\n");
    memmove(op, op + 23, strlen(op + 23) + 1);
    expect_error("noop.ply", hdr, strlen(hdr), ": vertex element has no property 'opacity'");

    /* 12 f_rest properties. */
    char extra[1024] = "";
    for (int i = 0; i < 12; i++) snprintf(extra + strlen(extra), sizeof extra - strlen(extra), "property float f_rest_%d\n", i);
    n = deg0_header(hdr, sizeof hdr, 1, extra);
    expect_error("rest.ply", hdr, n, ": 12 f_rest properties: expected 0, 9, 24 or 45");
    /* 9 f_rest properties, but not numbered 0..8. */
    extra[0] = 0;
    for (int i = 1; i < 10; i++) snprintf(extra + strlen(extra), sizeof extra - strlen(extra), "property float f_rest_%d\n", i);
    n = deg0_header(hdr, sizeof hdr, 1, extra);
    expect_error("rest9.ply", hdr, n, ": vertex element has no property 'f_rest_0'");

    /* Truncated: 1000 vertices announced, 412 and a half present. */
    n = deg0_header(hdr, sizeof hdr, 1000, "");
    size_t rec = 14 * sizeof(float), total = n + 412 * rec + rec / 2;
    char *buf = sp_calloc(total, 1);
    memcpy(buf, hdr, n);
    expect_error("trunc.ply", buf, total, ": truncated: expected 1000 vertices, found 412");
    free(buf);
    /* A huge count in a tiny file fails the same way without allocating. */
    n = deg0_header(hdr, sizeof hdr, 1000000000, "");
    expect_error("huge.ply", hdr, n, ": truncated: expected 1000000000 vertices, found 0");

    /* ascii: too few vertices, a bad number, a short line. */
    const char *a = "ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\nproperty float y\nproperty float z\n"
                    "property float f_dc_0\nproperty float f_dc_1\nproperty float f_dc_2\nproperty float opacity\n"
                    "property float scale_0\nproperty float scale_1\nproperty float scale_2\nproperty float rot_0\n"
                    "property float rot_1\nproperty float rot_2\nproperty float rot_3\nend_header\n";
    char *t = sp_strfmt("%s1 2 3 4 5 6 7 8 9 10 11 12 13 14\n", a);
    expect_error("atr.ply", t, strlen(t), ": truncated: expected 3 vertices, found 1");
    free(t);
    t = sp_strfmt("%s1 2 3 4 5 6 7 8 9 10 11 12 13 14\n1 2 3 4 5 six 7 8 9 10 11 12 13 14\n", a);
    expect_error("anum.ply", t, strlen(t), ":20: bad value for 'f_dc_2'");
    free(t);
    t = sp_strfmt("%s1 2 3 4 5 6 7 8 9 10 11 12 13\n", a);
    expect_error("ashort.ply", t, strlen(t), ":19: expected 14 values per vertex");
    free(t);

    /* Headers that would make the header checks slow: bounded, with a message. */
    size_t cap = 1 << 20, len = 0;
    char *big = sp_malloc(cap);
    len += (size_t)snprintf(big + len, cap - len, "ply\nformat ascii 1.0\nelement vertex 1\n");
    for (int i = 0; i < 2000; i++) len += (size_t)snprintf(big + len, cap - len, "property float p%d\n", i);
    expect_error("props.ply", big, len, ":1028: element 'vertex' has more than 1024 properties");
    len = (size_t)snprintf(big, cap, "ply\nformat ascii 1.0\n");
    for (int i = 0; i < 300; i++) len += (size_t)snprintf(big + len, cap - len, "element e%d 0\n", i);
    expect_error("elems.ply", big, len, ":259: more than 256 elements");
    free(big);

    /* No vertices at all: refused with a clear message, binary and ascii (docs/formats.md). */
    const char *formats[2] = {"binary_little_endian", "ascii"};
    for (int f = 0; f < 2; f++) {
        char *z = sp_strfmt("ply\nformat %s 1.0\nelement vertex 0\n%s", formats[f], strstr(a, "property float x"));
        char *zp = fixture("zero.ply", z, strlen(z));
        sp_gaussians g0;
        assert_int_equal(sp_ply_read(zp, &g0), -1);
        tu_assert_contains(sp_last_error(), "zero.ply: the model has no Gaussians");
        assert_null(g0.means);
        free(zp);
        free(z);
    }

    /* A file that does not exist. */
    sp_gaussians g;
    char *p = sp_path_join(g_dir, "nope.ply");
    assert_int_equal(sp_ply_read(p, &g), -1);
    char *want = sp_strfmt("%s: cannot open", p);
    tu_assert_contains(sp_last_error(), want);
    free(want);
    free(p);

    /* Writing into a directory that does not exist. */
    sp_gaussians_init(&g, 1, 0);
    g.n = 1;
    p = sp_path_join(g_dir, "no/such/dir/model.ply");
    assert_int_equal(sp_ply_write(p, &g), -1);
    tu_assert_contains(sp_last_error(), "no/such/dir/model.ply: cannot write");
    free(p);
    sp_gaussians_free(&g);
}

static int setup(void **state) {
    (void)state;
    g_dir = tu_tmpdir();
    return g_dir ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    char *cmd = sp_strfmt("rm -rf '%s'", g_dir);
    int rc = system(cmd);
    free(cmd);
    free(g_dir);
    return rc;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_header_degree3),
        cmocka_unit_test(test_tolerant_reading),
        cmocka_unit_test(test_bad_files),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
