/* test_sog.c — .sog (PlayCanvas SOG) written and read: the archive's entries, meta.json and
 * image sizes as the layout says; every field read back within its quantization (positions by
 * the 16-bit step, scales and colours as the nearest codebook entry, rotations by the 8-bit step,
 * SH through the palette); Morton order and equal bytes for equal models; the unbundled form
 * (meta.json + images) and deflated zip entries read like the archive; damaged and hostile files
 * refused with the file named. The codebooks (io/codebook.h): exact, ordered, deterministic for
 * any thread count. */
#include "testutil.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <omp.h>
#include <sys/stat.h>
#include <webp/decode.h>
#include <webp/encode.h>
#include <zlib.h>

#include "io/codebook.h"
#include "io/export.h"
#include "io/zip.h"

static char *g_dir;

static int setup(void **state) {
    (void)state;
    g_dir = tu_tmpdir();
    sp_log_set_level(SP_LOG_ERROR);
    return 0;
}
static int teardown(void **state) {
    (void)state;
    tu_rm_rf(g_dir);
    return 0;
}

static void model(sp_gaussians *g, int n, int degree, uint64_t seed) {
    sp_rng r;
    sp_rng_seed(&r, seed, 3);
    sp_gaussians_init(g, n, degree);
    g->n = n;
    tu_fill_uniform(&r, g->means, 3 * (size_t)n, -3, 3);
    tu_fill_uniform(&r, g->log_scales, 3 * (size_t)n, -7, 0);
    tu_fill_uniform(&r, g->quats, 4 * (size_t)n, -1, 1);
    tu_fill_uniform(&r, g->opacity_logits, (size_t)n, -6, 6);
    tu_fill_uniform(&r, g->sh, 3 * (size_t)g->K * n, -0.5f, 0.5f);
    for (int i = 0; i < n; i++)
        for (int c = 0; c < 3; c++) g->sh[(size_t)i * g->K * 3 + c] *= 4; /* DC: a wider range */
}

static char *path_of(const char *name) { return sp_path_join(g_dir, name); }

static float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

/* The index of the Gaussian of g nearest to position p. */
static int find_gaussian(const sp_gaussians *g, const float *p) {
    int best = -1;
    float bd = INFINITY;
    for (int j = 0; j < g->n; j++) {
        float d = 0;
        for (int k = 0; k < 3; k++) d += (g->means[3 * j + k] - p[k]) * (g->means[3 * j + k] - p[k]);
        if (d < bd) bd = d, best = j;
    }
    return best;
}

/* The archive's entry called name, extracted (NULL if absent). */
static uint8_t *entry(const char *zip_path, const char *name, size_t *n) {
    char *data;
    size_t size;
    assert_int_equal(sp_read_file(zip_path, &data, &size), 0);
    sp_zip z;
    assert_int_equal(sp_zip_open(&z, zip_path, data, size), 0);
    const sp_zip_entry *e = sp_zip_find(&z, name);
    uint8_t *out = NULL;
    if (e) assert_int_equal(sp_zip_extract(&z, e, &out, n), 0);
    sp_zip_close(&z);
    free(data);
    return out;
}

/* Rewrites the archive with entry `name` replaced by data (n bytes), or left out (data NULL). */
static void replace_entry(const char *zip_path, const char *out_path, const char *name, const void *data, size_t n) {
    char *raw;
    size_t size;
    assert_int_equal(sp_read_file(zip_path, &raw, &size), 0);
    sp_zip z;
    assert_int_equal(sp_zip_open(&z, zip_path, raw, size), 0);
    sp_zip_item items[16];
    uint8_t *bufs[16];
    int m = 0;
    for (int i = 0; i < z.n; i++) {
        size_t len = 0;
        bufs[i] = NULL;
        if (!strcmp(z.entries[i].name, name)) {
            if (!data) continue;
            items[m++] = (sp_zip_item){z.entries[i].name, data, n};
            continue;
        }
        assert_int_equal(sp_zip_extract(&z, &z.entries[i], &bufs[i], &len), 0);
        items[m++] = (sp_zip_item){z.entries[i].name, bufs[i], len};
    }
    assert_int_equal(sp_zip_write(out_path, items, m), 0);
    for (int i = 0; i < z.n; i++) free(bufs[i]);
    sp_zip_close(&z);
    free(raw);
}

static cJSON *meta_of(const char *zip_path) {
    size_t n;
    uint8_t *text = entry(zip_path, "meta.json", &n);
    assert_non_null(text);
    cJSON *j = cJSON_ParseWithLength((const char *)text, n);
    assert_non_null(j);
    free(text);
    return j;
}

static void expect_read_error(const char *path, const char *text) {
    sp_gaussians g;
    memset(&g, 0x55, sizeof g);
    assert_int_equal(sp_model_read(path, &g), -1);
    tu_assert_contains(sp_last_error(), path);
    tu_assert_contains(sp_last_error(), text);
    assert_null(g.means);
}

/* Every field within its step, for each SH degree; Morton order; meta.json and the images. */
static void test_fields(void **state) {
    (void)state;
    for (int deg = 0; deg <= 3; deg++) {
        sp_gaussians g, h;
        model(&g, 700, deg, 10 + deg);
        char *p = path_of("f.sog");
        assert_int_equal(sp_sog_write(p, &g), 0);
        cJSON *meta = meta_of(p);
        assert_int_equal(cJSON_GetObjectItem(meta, "version")->valueint, 2);
        assert_int_equal(cJSON_GetObjectItem(meta, "count")->valueint, 700);
        const cJSON *shn = cJSON_GetObjectItem(meta, "shN");
        assert_true(deg == 0 ? shn == NULL : shn != NULL);
        if (shn) {
            assert_int_equal(cJSON_GetObjectItem(shn, "bands")->valueint, deg);
            assert_true(cJSON_GetObjectItem(shn, "count")->valueint <= 512); /* the largest power of 2 up to n */
        }
        /* images: 28x28 for 700 (4 ceil(sqrt(n) / 4) wide, rows to a multiple of 4) */
        const char *imgs[] = {"means_l.webp", "means_u.webp", "quats.webp", "scales.webp", "sh0.webp", "shN_labels.webp"};
        for (int m = 0; m < (deg ? 6 : 5); m++) {
            size_t n;
            uint8_t *w = entry(p, imgs[m], &n);
            assert_non_null(w);
            int iw, ih;
            assert_true(WebPGetInfo(w, n, &iw, &ih));
            assert_int_equal(iw, 28);
            assert_int_equal(ih, 28);
            if (m == 2) { /* quats: tag 252..255 in alpha */
                uint8_t *rgba = WebPDecodeRGBA(w, n, &iw, &ih);
                for (int i = 0; i < 700; i++) assert_true(rgba[4 * i + 3] >= 252);
                WebPFree(rgba);
            }
            free(w);
        }
        double mins[3], maxs[3];
        const cJSON *means = cJSON_GetObjectItem(meta, "means");
        for (int k = 0; k < 3; k++) {
            mins[k] = cJSON_GetArrayItem(cJSON_GetObjectItem(means, "mins"), k)->valuedouble;
            maxs[k] = cJSON_GetArrayItem(cJSON_GetObjectItem(means, "maxs"), k)->valuedouble;
        }
        float scb[256], ccb[256];
        for (int j = 0; j < 256; j++) {
            scb[j] = (float)cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(meta, "scales"), "codebook"), j)->valuedouble;
            ccb[j] = (float)cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(meta, "sh0"), "codebook"), j)->valuedouble;
            if (j) assert_true(scb[j] >= scb[j - 1] && ccb[j] >= ccb[j - 1]);
        }
        cJSON_Delete(meta);

        assert_int_equal(sp_model_read(p, &h), 0);
        assert_int_equal(h.n, 700);
        assert_int_equal(h.sh_degree, deg);
        float lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
        for (int i = 0; i < g.n; i++)
            for (int k = 0; k < 3; k++) lo[k] = fminf(lo[k], g.means[3 * i + k]), hi[k] = fmaxf(hi[k], g.means[3 * i + k]);
        int *seen = SP_NEW(int, 700);
        double sh_sq = 0;
        uint32_t prev_code = 0;
        for (int r = 0; r < h.n; r++) {
            int i = find_gaussian(&g, h.means + 3 * r);
            assert_false(seen[i]);
            seen[i] = 1;
            for (int k = 0; k < 3; k++) {
                float x = g.means[3 * i + k], y = h.means[3 * r + k];
                double step = (maxs[k] - mins[k]) / 65535;
                assert_true(fabs(x - y) <= (1 + fabs(x)) * step * 0.51 + 1e-6);
                /* scale and DC: the nearest codebook entry */
                float s = g.log_scales[3 * i + k], c = g.sh[(size_t)i * g.K * 3 + k];
                assert_true(h.log_scales[3 * r + k] == scb[sp_codebook_nearest(scb, 256, s)]);
                assert_true(h.sh[(size_t)r * h.K * 3 + k] == ccb[sp_codebook_nearest(ccb, 256, c)]);
            }
            /* opacity: 8 bits (0 and 255 half a step inwards) */
            assert_true(fabsf(sigmoid(h.opacity_logits[r]) - sigmoid(g.opacity_logits[i])) <= 1.0f / 255 + 1e-5f);
            /* rotation: three components at 8 bits over +-sqrt(1/2) */
            float qn = 0, dot = 0, hn = 0;
            for (int k = 0; k < 4; k++) qn += g.quats[4 * i + k] * g.quats[4 * i + k], hn += h.quats[4 * r + k] * h.quats[4 * r + k];
            for (int k = 0; k < 4; k++) dot += g.quats[4 * i + k] * h.quats[4 * r + k];
            assert_true(fabsf(hn - 1) < 1e-5f);
            assert_true(fabsf(dot) / sqrtf(qn) > 0.9999f);
            for (int k = 3; k < 3 * g.K; k++) {
                double e = h.sh[(size_t)r * g.K * 3 + k] - g.sh[(size_t)i * g.K * 3 + k];
                sh_sq += e * e;
            }
            /* Morton order: the octant of the bounding box (the code's top 3 bits: z, y, x
             * halves) never decreases from pixel to pixel */
            uint32_t code = 0;
            for (int k = 0; k < 3; k++) {
                float t = (g.means[3 * i + k] - lo[k]) / (hi[k] - lo[k]);
                code |= (uint32_t)((uint32_t)fminf(1023.0f, fmaxf(0.0f, t * 1024.0f)) >= 512) << k;
            }
            assert_true(code >= prev_code);
            prev_code = code;
        }
        if (deg > 0) {
            double rms = sqrt(sh_sq / (700.0 * 3 * (g.K - 1)));
            print_message("degree %d: SH rest RMS error %.4f\n", deg, rms);
            assert_true(rms < 0.15); /* 512 palette entries for 700 random vectors of RMS 0.29: under half */
        }
        free(seen);
        /* equal models give equal files */
        char *q = path_of("f2.sog");
        assert_int_equal(sp_sog_write(q, &g), 0);
        char *a, *b;
        size_t na, nb;
        assert_int_equal(sp_read_file(p, &a, &na), 0);
        assert_int_equal(sp_read_file(q, &b, &nb), 0);
        assert_int_equal(na, nb);
        assert_memory_equal(a, b, na);
        free(a), free(b), free(q), free(p);
        sp_gaussians_free(&g);
        sp_gaussians_free(&h);
    }
}

/* Renders of the model read back against renders of the original are not checked here (the
 * CPU render round trip of test_export covers every format); this checks the unbundled form and
 * deflated entries read exactly like the stored archive. */
static void test_unbundled_and_deflated(void **state) {
    (void)state;
    sp_gaussians g, a, b, c;
    model(&g, 300, 2, 4);
    char *p = path_of("u.sog"), *dir = path_of("unbundled"), *meta = sp_path_join(dir, "meta.json");
    assert_int_equal(sp_sog_write(p, &g), 0);
    assert_int_equal(sp_mkdir_p(dir), 0);
    char *raw;
    size_t size;
    assert_int_equal(sp_read_file(p, &raw, &size), 0);
    sp_zip z;
    assert_int_equal(sp_zip_open(&z, p, raw, size), 0);
    /* the same entries again, deflated: a zip as other tools write it */
    char *dz = path_of("deflated.sog");
    FILE *f = fopen(dz, "wb");
    assert_non_null(f);
    uint8_t cd[16][46 + 64];
    size_t cdn[16], at = 0;
    for (int i = 0; i < z.n; i++) {
        uint8_t *data;
        size_t n;
        assert_int_equal(sp_zip_extract(&z, &z.entries[i], &data, &n), 0);
        char *out = sp_path_join(dir, z.entries[i].name); /* unbundled */
        assert_int_equal(sp_write_file_atomic(out, data, n), 0);
        free(out);
        uLong bound = compressBound((uLong)n) + 64;
        uint8_t *def = malloc(bound);
        z_stream s = {0};
        assert_int_equal(deflateInit2(&s, 9, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
        s.next_in = data, s.avail_in = (uInt)n, s.next_out = def, s.avail_out = (uInt)bound;
        assert_int_equal(deflate(&s, Z_FINISH), Z_STREAM_END);
        size_t dn = s.total_out;
        deflateEnd(&s);
        uint32_t crc = (uint32_t)crc32(0, data, (uInt)n), name_len = (uint32_t)strlen(z.entries[i].name);
        uint8_t h[30] = {0x50, 0x4b, 3, 4, 20, 0, 0, 0, 8, 0};
        memcpy(h + 14, &crc, 4), memcpy(h + 18, &dn, 4), memcpy(h + 22, &n, 4), memcpy(h + 26, &name_len, 2);
        uint8_t *r = cd[i];
        memset(r, 0, 46);
        r[0] = 0x50, r[1] = 0x4b, r[2] = 1, r[3] = 2, r[6] = 20, r[10] = 8;
        memcpy(r + 16, &crc, 4), memcpy(r + 20, &dn, 4), memcpy(r + 24, &n, 4), memcpy(r + 28, &name_len, 2);
        memcpy(r + 42, &at, 4), memcpy(r + 46, z.entries[i].name, name_len);
        cdn[i] = 46 + name_len;
        fwrite(h, 1, 30, f), fwrite(z.entries[i].name, 1, name_len, f), fwrite(def, 1, dn, f);
        at += 30 + name_len + dn;
        free(def), free(data);
    }
    size_t dir_size = 0;
    for (int i = 0; i < z.n; i++) fwrite(cd[i], 1, cdn[i], f), dir_size += cdn[i];
    uint8_t e[22] = {0x50, 0x4b, 5, 6};
    e[8] = e[10] = (uint8_t)z.n;
    memcpy(e + 12, &dir_size, 4), memcpy(e + 16, &at, 4);
    fwrite(e, 1, 22, f);
    fclose(f);
    sp_zip_close(&z);
    free(raw);

    assert_int_equal(sp_model_read(p, &a), 0);
    assert_int_equal(sp_model_read(meta, &b), 0);
    assert_int_equal(sp_model_read(dz, &c), 0);
    assert_int_equal(a.n, 300);
    assert_int_equal(b.n, 300);
    assert_int_equal(c.n, 300);
    size_t floats = (size_t)sp_gaussian_floats(a.K) * 300;
    (void)floats;
    assert_memory_equal(a.means, b.means, 300 * 3 * sizeof(float));
    assert_memory_equal(a.sh, b.sh, 300 * (size_t)a.K * 3 * sizeof(float));
    assert_memory_equal(a.quats, c.quats, 300 * 4 * sizeof(float));
    assert_memory_equal(a.sh, c.sh, 300 * (size_t)a.K * 3 * sizeof(float));
    sp_gaussians_free(&a), sp_gaussians_free(&b), sp_gaussians_free(&c);

    /* the unbundled form: a missing image names its file; names must stay beside meta.json */
    char *quats = sp_path_join(dir, "quats.webp");
    assert_int_equal(remove(quats), 0);
    expect_read_error(meta, "quats.webp");
    char *text;
    assert_int_equal(sp_read_file(meta, &text, &size), 0);
    char *evil = sp_strfmt("%s", text);
    char *at_name = strstr(evil, "\"quats.webp\"");
    assert_non_null(at_name);
    memcpy(at_name, "\"../x.webp\"  ", 12); /* same length: "../x.webp" and spaces */
    tu_write_text(meta, evil);
    expect_read_error(meta, "file name '../x.webp' is not a plain name beside meta.json");
    /* writing meta.json is refused: .sog is written as one archive */
    assert_int_equal(sp_model_write(meta, SP_MODEL_SOG, &g), -1);
    tu_assert_contains(sp_last_error(), "the unbundled meta.json form is read, not written");
    free(text), free(evil), free(quats);
    sp_gaussians_free(&g);
    free(p), free(dir), free(meta), free(dz);
}

/* A small lossless WebP of w x h pixels, every pixel (r, g, b, a). */
static uint8_t *webp_of(int w, int h, const uint8_t rgba[4], size_t *n) {
    uint8_t *px = malloc((size_t)w * h * 4), *out = NULL;
    for (int i = 0; i < w * h; i++) memcpy(px + 4 * i, rgba, 4);
    *n = WebPEncodeLosslessRGBA(px, w, h, 4 * w, &out);
    assert_true(*n > 0);
    free(px);
    uint8_t *copy = malloc(*n);
    memcpy(copy, out, *n);
    WebPFree(out);
    return copy;
}

/* meta.json of a good file with one member replaced (key "a.b" for a nested one) by json. */
static char *meta_with(const char *zip_path, const char *key, const char *json) {
    cJSON *m = meta_of(zip_path), *obj = m;
    char k[64];
    snprintf(k, sizeof k, "%s", key);
    char *dot = strchr(k, '.');
    if (dot) *dot = 0, obj = cJSON_GetObjectItem(m, k);
    const char *leaf = dot ? dot + 1 : k;
    if (json) cJSON_ReplaceItemInObject(obj, leaf, cJSON_Parse(json));
    else cJSON_DeleteItemFromObject(obj, leaf);
    char *text = cJSON_PrintUnformatted(m);
    cJSON_Delete(m);
    return text;
}

static void test_bad_files(void **state) {
    (void)state;
    sp_gaussians g;
    model(&g, 100, 1, 8);
    char *good = path_of("good.sog"), *bad = path_of("bad.sog");
    assert_int_equal(sp_sog_write(good, &g), 0);

    /* not a zip; a truncated one; a damaged entry */
    tu_write_text(bad, "not a zip archive at all");
    expect_read_error(bad, "not a zip archive");
    char *data;
    size_t n;
    assert_int_equal(sp_read_file(good, &data, &n), 0);
    assert_int_equal(sp_write_file_atomic(bad, data, n / 2), 0);
    expect_read_error(bad, "not a zip archive");
    data[100] ^= 0x40; /* inside meta.json, stored first */
    assert_int_equal(sp_write_file_atomic(bad, data, n), 0);
    expect_read_error(bad, "zip entry 'meta.json' fails its CRC check");
    data[100] ^= 0x40;
    memcpy(data + n - 6, "\xff\xff\xff\x7f", 4); /* the directory's offset, far past the end */
    assert_int_equal(sp_write_file_atomic(bad, data, n), 0);
    expect_read_error(bad, "central directory");
    free(data);

    /* entries missing */
    replace_entry(good, bad, "meta.json", NULL, 0);
    expect_read_error(bad, "the archive has no 'meta.json'");
    replace_entry(good, bad, "quats.webp", NULL, 0);
    expect_read_error(bad, "the archive has no 'quats.webp'");

    /* meta.json: not JSON, version 1 (no version), another version, no Gaussians, missing parts,
     * wrong codebook sizes, non-finite positions */
    replace_entry(good, bad, "meta.json", "{\"version\": 2,", 14);
    expect_read_error(bad, "meta.json is not valid JSON");
    struct {
        const char *key, *json, *error;
    } cases[] = {
        {"version", NULL, "an old (version 1) SOG, not read"},
        {"version", "3", "SOG version 3 is not supported (2 is)"},
        {"count", "0", "the model has no Gaussians"},
        {"count", "-5", "count must be a whole number"},
        {"count", "100.5", "count must be a whole number"},
        {"quats", NULL, "meta.json has no 'quats'"},
        {"scales.codebook", "[1, 2, 3]", "scales.codebook must be an array of 256 numbers"},
        {"means.mins", "[0, 0, \"x\"]", "means.mins[2] is not a number"},
        {"means.files", "[\"means_l.webp\"]", "means.files must list 2 files"},
        {"shN.bands", "4", "shN.bands must be a whole number from 0 to 3"},
        {"shN.count", "100000", "shN.count must be a whole number from 1 to 65536"},
        {"count", "1000", "fewer than the 1000 it must hold"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *text = meta_with(good, cases[i].key, cases[i].json);
        replace_entry(good, bad, "meta.json", text, strlen(text));
        expect_read_error(bad, cases[i].error);
        free(text);
    }
    /* a position beyond float range (JSON has no NaN): refused naming the Gaussian */
    char *text = meta_with(good, "means.maxs", "[123, 1, 1]");
    char *inf = strstr(text, "123");
    memcpy(inf, "1e9", 3);
    replace_entry(good, bad, "meta.json", text, strlen(text));
    expect_read_error(bad, ": position is not a finite number");
    tu_assert_contains(sp_last_error(), "Gaussian ");
    free(text);
    /* images: not WebP, lossy, too small for the count, a bad rotation tag, a palette index past
     * the palette */
    replace_entry(good, bad, "sh0.webp", "RIFF0000WEBPVP8 ", 16);
    expect_read_error(bad, "'sh0.webp' is not a WebP image");
    uint8_t px[4] = {10, 20, 30, 255}, *w, *lossy = NULL;
    w = webp_of(4, 4, px, &n);
    replace_entry(good, bad, "scales.webp", w, n);
    expect_read_error(bad, "'scales.webp' has 4x4 pixels, fewer than the 100 it must hold");
    free(w);
    w = webp_of(300, 300, px, &n); /* a few bytes that decode to 90,000 pixels: not decoded */
    replace_entry(good, bad, "scales.webp", w, n);
    expect_read_error(bad, "'scales.webp' has 300x300 pixels, far more than the 100 it must hold");
    free(w);
    uint8_t *rgba = malloc(12 * 12 * 4);
    memset(rgba, 128, 12 * 12 * 4);
    size_t ln = WebPEncodeRGBA(rgba, 12, 12, 48, 75, &lossy);
    replace_entry(good, bad, "quats.webp", lossy, ln);
    expect_read_error(bad, "'quats.webp' is a lossy WebP image");
    WebPFree(lossy), free(rgba);
    w = webp_of(12, 12, px, &n); /* alpha 255: a tag, but 10 is none */
    px[3] = 10;
    free(w);
    w = webp_of(12, 12, px, &n);
    replace_entry(good, bad, "quats.webp", w, n);
    expect_read_error(bad, "Gaussian 0: rotation tag 10 in 'quats.webp' is not 252..255");
    free(w);
    uint8_t big[4] = {255, 255, 0, 255};
    w = webp_of(12, 12, big, &n);
    replace_entry(good, bad, "shN_labels.webp", w, n);
    expect_read_error(bad, "Gaussian 0: SH palette index 65535 is not below shN.count");
    free(w);
    uint8_t px2[4] = {1, 2, 3, 255};
    w = webp_of(7, 1, px2, &n);
    replace_entry(good, bad, "shN_centroids.webp", w, n);
    expect_read_error(bad, "fewer than");
    free(w);

    /* non-regular files, the empty model, non-finite models and /dev/zero */
    char *fifo = path_of("fifo.sog");
    assert_int_equal(mkfifo(fifo, 0600), 0);
    expect_read_error(fifo, "not a regular file (a FIFO)");
    sp_gaussians h;
    assert_int_equal(sp_sog_read("/dev/zero", &h), -1);
    tu_assert_contains(sp_last_error(), "/dev/zero: not a regular file");
    g.means[5] = NAN;
    assert_int_equal(sp_sog_write(bad, &g), -1);
    tu_assert_contains(sp_last_error(), "non-finite values");
    g.n = 0;
    assert_int_equal(sp_sog_write(bad, &g), -1);
    tu_assert_contains(sp_last_error(), "the model has no Gaussians to write");
    sp_gaussians_free(&g);
    free(good), free(bad), free(fifo);
}

/* The reader's memory comes from the fallible allocator: too little is an error naming the file. */
static void test_out_of_memory(void **state) {
    (void)state;
    sp_gaussians g, h;
    model(&g, 2000, 3, 9);
    char *p = path_of("oom.sog");
    assert_int_equal(sp_sog_write(p, &g), 0);
    struct stat st;
    assert_int_equal(stat(p, &st), 0);
    size_t limits[] = {16 << 10, (size_t)st.st_size + 1}; /* the archive; the Gaussians */
    for (int k = 0; k < 2; k++) {
        sp_set_alloc_limit(limits[k]);
        int rc = sp_model_read(p, &h);
        sp_set_alloc_limit(0);
        assert_int_equal(rc, -1);
        tu_assert_contains(sp_last_error(), p);
        tu_assert_contains(sp_last_error(), "out of memory");
    }
    sp_set_alloc_limit(64 << 10); /* the writer too */
    int rc = sp_sog_write(p, &g);
    sp_set_alloc_limit(0);
    assert_int_equal(rc, -1);
    tu_assert_contains(sp_last_error(), "out of memory");
    sp_gaussians_free(&g);
    free(p);
}

/* 1-D codebooks: exact for few values, ascending, nearest; k-means: the same for 1 and 2
 * threads, labels in range, well-separated clusters found. */
static void test_codebooks(void **state) {
    (void)state;
    float v[1000], cb[256];
    for (int i = 0; i < 1000; i++) v[i] = (float)(i % 7) - 3.0f;
    assert_int_equal(sp_codebook_1d(v, 1000, 256, cb), 0);
    for (int j = 0; j < 7; j++) assert_true(cb[j] == j - 3.0f);
    for (int j = 7; j < 256; j++) assert_true(cb[j] == 3.0f);
    for (int i = 0; i < 1000; i++) assert_true(cb[sp_codebook_nearest(cb, 256, v[i])] == v[i]);
    sp_rng r;
    sp_rng_seed(&r, 1, 1);
    for (int i = 0; i < 1000; i++) v[i] = expf(4 * sp_rng_normal(&r)); /* long tail */
    float small[16];
    assert_int_equal(sp_codebook_1d(v, 1000, 16, small), 0);
    float lo = INFINITY, hi = -INFINITY, worst = 0;
    for (int i = 0; i < 1000; i++) lo = fminf(lo, v[i]), hi = fmaxf(hi, v[i]);
    for (int j = 1; j < 16; j++) assert_true(small[j] >= small[j - 1]);
    assert_true(small[0] >= lo && small[15] <= hi);
    for (int i = 0; i < 1000; i++) {
        float e = fabsf(small[sp_codebook_nearest(small, 16, v[i])] - v[i]);
        for (int j = 0; j < 16; j++) assert_true(e <= fabsf(small[j] - v[i])); /* nearest */
        worst = fmaxf(worst, e);
    }
    assert_true(worst < 0.5f * (hi - lo)); /* the tail keeps an entry */

    /* 40 clusters of 200 points in 24-D, spread 0.01, centres 1 apart */
    int n = 8000, d = 24, k = 40;
    float *pts = malloc(sizeof(float) * n * d), *centres = malloc(sizeof(float) * k * d);
    for (int c = 0; c < k * d; c++) centres[c] = (float)(sp_rng_u32(&r) % 8);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < d; j++) pts[i * d + j] = centres[(i % k) * d + j] + 0.01f * sp_rng_normal(&r);
    float *ca = malloc(sizeof(float) * 2048 * d), *cbb = malloc(sizeof(float) * 2048 * d);
    uint32_t *la = malloc(4 * n), *lb = malloc(4 * n);
    int ua, ub;
    for (int kk = 40; kk <= 2048; kk *= 51) { /* one level (40), then the hierarchy (2040) */
        omp_set_num_threads(1);
        assert_int_equal(sp_kmeans(pts, n, d, kk, 10, 7, ca, la, &ua), 0);
        omp_set_num_threads(2);
        assert_int_equal(sp_kmeans(pts, n, d, kk, 10, 7, cbb, lb, &ub), 0);
        assert_int_equal(ua, ub);
        assert_true(ua <= kk);
        assert_memory_equal(la, lb, 4 * (size_t)n);
        assert_memory_equal(ca, cbb, sizeof(float) * ua * d);
        double sq = 0;
        for (int i = 0; i < n; i++) {
            assert_true(la[i] < (uint32_t)ua);
            for (int j = 0; j < d; j++) sq += pow(pts[i * d + j] - ca[la[i] * d + j], 2);
        }
        double rms = sqrt(sq / ((double)n * d));
        print_message("k-means into %d: %d used, RMS %.4f (cluster spread 0.01)\n", kk, ua, rms);
        assert_true(rms < (kk == 40 ? 0.2 : 0.0101));
    }
    free(pts), free(centres), free(ca), free(cbb), free(la), free(lb);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fields),       cmocka_unit_test(test_unbundled_and_deflated),
        cmocka_unit_test(test_bad_files),    cmocka_unit_test(test_out_of_memory),
        cmocka_unit_test(test_codebooks),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
