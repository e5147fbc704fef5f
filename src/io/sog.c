/* sog.c — PlayCanvas's SOG format (what splat-transform 3.x writes as .sog), version 2: a zip
 * (stored) of meta.json and lossless WebP images, or the same files unbundled in a folder (read
 * through its meta.json). Each per-Gaussian image is w x h RGBA, w = 4 ceil(sqrt(n) / 4),
 * h = 4 ceil(n / w / 4), Gaussian i at pixel i in row-major order (the writer puts the Gaussians
 * in Morton order of their positions, which is what makes the images compress):
 *   means_l, means_u  low and high bytes of a 16-bit value per axis (RGB): the position after
 *                     l = sign(x) log(1 + |x|), mapped linearly from [mins, maxs] (meta.json) to
 *                     0..65535
 *   quats             the normalized quaternion (rot_0..3 of the .ply) made positive in its largest
 *                     component, the other three in order as 255 (sqrt(2) q / 2 + 1/2) in RGB,
 *                     A = 252 + index of the largest component
 *   scales            RGB: indices into a 256-entry codebook of log scales (meta.json)
 *   sh0               RGB: indices into a 256-entry codebook of f_dc values; A = 255 sigmoid(opacity)
 *   shN_labels        RG: a 16-bit index into the SH palette (little-endian)
 *   shN_centroids     the palette: 64 entries per row, each (K - 1) pixels wide, pixel j of an
 *                     entry = indices of its R, G, B coefficient j into a 256-entry codebook
 * Codebooks are 1-D k-means over the values (the SH palette's: over its entries' coefficients),
 * the palette is k-means over the Gaussians' SH rest vectors (io/codebook.h). Axes: the .ply's,
 * unchanged. Images are encoded with WebP's `exact` setting, so the colour under a zero alpha (an
 * opacity that rounds to 0) is kept. Read and written in full; docs/formats.md describes it for
 * users. */
#include <cjson/cJSON.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <webp/decode.h>
#include <webp/encode.h>

#include "core/core.h"
#include "io/codebook.h"
#include "io/export.h"
#include "io/model_check.h"
#include "io/zip.h"

/* WEBP_EFFORT: libwebp's lossless preset (0 fastest .. 9 smallest); 6 is about what its simple lossless
 * API does */
enum { CODEBOOK = 256, MAX_SIDE = 16383, MAX_PALETTE = 65536, KMEANS_ROUNDS = 10, WEBP_EFFORT = 6 };
#define KMEANS_SEED 0x5350u
#define SQRT2 1.41421356237309515

/* What a SOG holds, by image. */
enum { IM_MEANS_L, IM_MEANS_U, IM_QUATS, IM_SCALES, IM_SH0, IM_LABELS, IM_CENTROIDS, IM_COUNT };
static const char *const image_names[IM_COUNT] = {"means_l.webp", "means_u.webp", "quats.webp", "scales.webp",
                                                  "sh0.webp", "shN_labels.webp", "shN_centroids.webp"};

static uint8_t to_u8(double x) {
    double r = round(x);
    return (uint8_t)(r < 0 ? 0 : r > 255 ? 255 : r);
}

static double log_transform(double x) { return x < 0 ? -log1p(-x) : log1p(x); }
static double inverse_log_transform(double l) { return l < 0 ? -expm1(-l) : expm1(l); }

/* ---- writing ---- */

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Spreads the low 10 bits of v to every third bit. */
static uint32_t spread3(uint32_t v) {
    v &= 0x3ff;
    v = (v | v << 16) & 0x030000ff;
    v = (v | v << 8) & 0x0300f00f;
    v = (v | v << 4) & 0x030c30c3;
    v = (v | v << 2) & 0x09249249;
    return v;
}

/* The Gaussians in Morton order of their positions (10 bits per axis over the bounding box),
 * ties in index order: order[i] is the Gaussian stored at pixel i. */
static int morton_order(const char *path, const sp_gaussians *g, uint32_t *order) {
    size_t n = (size_t)g->n;
    uint64_t *keys = sp_model_buffer(path, n, sizeof *keys, "the Morton order");
    if (!keys) return -1;
    float lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (size_t i = 0; i < n; i++)
        for (int k = 0; k < 3; k++) lo[k] = fminf(lo[k], g->means[3 * i + k]), hi[k] = fmaxf(hi[k], g->means[3 * i + k]);
    for (size_t i = 0; i < n; i++) {
        uint32_t code = 0;
        for (int k = 0; k < 3; k++) {
            float span = hi[k] - lo[k];
            float t = span > 0 ? (g->means[3 * i + k] - lo[k]) / span : 0;
            uint32_t q = (uint32_t)fminf(1023.0f, fmaxf(0.0f, t * 1024.0f));
            code |= spread3(q) << k;
        }
        keys[i] = (uint64_t)code << 32 | i;
    }
    qsort(keys, n, sizeof *keys, cmp_u64);
    for (size_t i = 0; i < n; i++) order[i] = (uint32_t)keys[i];
    free(keys);
    return 0;
}

/* A codebook of the values and each value's index in it. */
static int quantize(const char *path, const float *v, size_t n, float *cb, uint8_t *labels) {
    if (sp_codebook_1d(v, n, CODEBOOK, cb)) return sp_error_prefix("%s", path);
    for (size_t i = 0; i < n; i++) labels[i] = (uint8_t)sp_codebook_nearest(cb, CODEBOOK, v[i]);
    return 0;
}

static cJSON *codebook_json(const float *cb) {
    cJSON *a = cJSON_CreateArray();
    char num[32];
    for (int j = 0; j < CODEBOOK; j++) {
        snprintf(num, sizeof num, "%.9g", cb[j]); /* a float's exact value, shorter than a double's */
        cJSON_AddItemToArray(a, cJSON_CreateRaw(num));
    }
    return a;
}

static cJSON *files_json(int a, int b) {
    cJSON *f = cJSON_CreateArray();
    cJSON_AddItemToArray(f, cJSON_CreateString(image_names[a]));
    if (b >= 0) cJSON_AddItemToArray(f, cJSON_CreateString(image_names[b]));
    return f;
}

/* One lossless WebP of w x h RGBA pixels, RGB kept under zero alpha. */
static int webp_encode(const uint8_t *rgba, int w, int h, WebPMemoryWriter *out) {
    WebPConfig cfg;
    WebPPicture pic;
    WebPMemoryWriterInit(out);
    if (!WebPConfigInit(&cfg) || !WebPConfigLosslessPreset(&cfg, WEBP_EFFORT) || !WebPPictureInit(&pic)) return -1;
    cfg.exact = 1;
    pic.use_argb = 1;
    pic.width = w, pic.height = h;
    pic.writer = WebPMemoryWrite;
    pic.custom_ptr = out;
    int ok = WebPPictureImportRGBA(&pic, rgba, 4 * w) && WebPEncode(&cfg, &pic);
    WebPPictureFree(&pic);
    return ok ? 0 : -1;
}

int sp_sog_write(const char *path, const sp_gaussians *g) {
    if (g->sh_degree < 0 || g->sh_degree > 3 || g->K != sp_sh_coeffs(g->sh_degree))
        return sp_error("%s: cannot write SH degree %d", path, g->sh_degree);
    if (g->n <= 0) return sp_error("%s: the model has no Gaussians to write", path);
    if (!sp_gaussians_finite(g)) return sp_error("%s: the model has non-finite values (NaN or infinity)", path);
    size_t n = (size_t)g->n, K = (size_t)g->K, rest = K - 1, dims = 3 * rest;
    int w = (int)ceil(sqrt((double)n) / 4) * 4, h = (int)ceil((double)n / w / 4) * 4;
    if (w > MAX_SIDE || h > MAX_SIDE)
        return sp_error("%s: %zu Gaussians need %dx%d images, more than WebP's %d pixels a side", path, n, w, h, MAX_SIDE);
    size_t px = (size_t)w * h;
    int nimages = rest ? IM_COUNT : IM_LABELS;
    uint8_t *img[IM_COUNT] = {0};
    int iw[IM_COUNT], ih[IM_COUNT];
    for (int m = 0; m < IM_LABELS; m++) iw[m] = w, ih[m] = h;
    uint32_t *order = sp_model_buffer(path, n, sizeof *order, "the Morton order");
    float *vals = sp_model_buffer(path, 3 * n, sizeof *vals, "the values to quantize");
    uint8_t *lab = sp_model_buffer(path, 3 * n, 1, "the codebook indices");
    int rc = !order || !vals || !lab ? -1 : 0;
    for (int m = 0; rc == 0 && m < (rest ? IM_LABELS + 1 : IM_LABELS); m++)
        if (!(img[m] = sp_model_buffer(path, px, 4, "the SOG images"))) rc = -1;
    if (rc == 0) rc = morton_order(path, g, order);
    cJSON *meta = cJSON_CreateObject();
    cJSON_AddNumberToObject(meta, "version", 2);
    cJSON *asset = cJSON_AddObjectToObject(meta, "asset");
    char gen[64];
    snprintf(gen, sizeof gen, "splat %s", sp_version());
    cJSON_AddStringToObject(asset, "generator", gen);
    cJSON_AddNumberToObject(meta, "count", (double)n);

    /* means */
    if (rc == 0) {
        double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
        for (size_t i = 0; i < 3 * n; i++) {
            double l = log_transform(g->means[i]);
            lo[i % 3] = fmin(lo[i % 3], l), hi[i % 3] = fmax(hi[i % 3], l);
        }
        for (size_t p = 0; p < n; p++) {
            const float *x = g->means + 3 * (size_t)order[p];
            for (int k = 0; k < 3; k++) {
                double t = hi[k] > lo[k] ? (log_transform(x[k]) - lo[k]) / (hi[k] - lo[k]) : 0;
                long q = lround(65535.0 * t);
                q = q < 0 ? 0 : q > 65535 ? 65535 : q;
                img[IM_MEANS_L][4 * p + k] = (uint8_t)(q & 0xff);
                img[IM_MEANS_U][4 * p + k] = (uint8_t)(q >> 8);
            }
            img[IM_MEANS_L][4 * p + 3] = img[IM_MEANS_U][4 * p + 3] = 255;
        }
        cJSON *means = cJSON_AddObjectToObject(meta, "means");
        cJSON_AddItemToObject(means, "mins", cJSON_CreateDoubleArray(lo, 3));
        cJSON_AddItemToObject(means, "maxs", cJSON_CreateDoubleArray(hi, 3));
        cJSON_AddItemToObject(means, "files", files_json(IM_MEANS_L, IM_MEANS_U));
    }
    /* scales: one codebook for the three axes' log scales */
    float cb[CODEBOOK];
    if (rc == 0) rc = quantize(path, g->log_scales, 3 * n, cb, lab);
    if (rc == 0) {
        for (size_t p = 0; p < n; p++) {
            for (int k = 0; k < 3; k++) img[IM_SCALES][4 * p + k] = lab[3 * (size_t)order[p] + k];
            img[IM_SCALES][4 * p + 3] = 255;
        }
        cJSON *scales = cJSON_AddObjectToObject(meta, "scales");
        cJSON_AddItemToObject(scales, "codebook", codebook_json(cb));
        cJSON_AddItemToObject(scales, "files", files_json(IM_SCALES, -1));
    }
    /* quats: smallest three, 8 bits each */
    if (rc == 0) {
        for (size_t p = 0; p < n; p++) {
            const float *q = g->quats + 4 * (size_t)order[p];
            double len = sqrt((double)q[0] * q[0] + (double)q[1] * q[1] + (double)q[2] * q[2] + (double)q[3] * q[3]);
            double u[4] = {1, 0, 0, 0};
            if (len > 0)
                for (int k = 0; k < 4; k++) u[k] = q[k] / len;
            int big = 0;
            for (int k = 1; k < 4; k++)
                if (fabs(u[k]) > fabs(u[big])) big = k;
            double s = (u[big] < 0 ? -1 : 1) * SQRT2;
            int c = 0;
            for (int k = 0; k < 4; k++)
                if (k != big) img[IM_QUATS][4 * p + c++] = to_u8(255.0 * (0.5 * s * u[k] + 0.5));
            img[IM_QUATS][4 * p + 3] = (uint8_t)(252 + big);
        }
        cJSON_AddItemToObject(cJSON_AddObjectToObject(meta, "quats"), "files", files_json(IM_QUATS, -1));
    }
    /* sh0: one codebook for the three channels' DC coefficients; opacity in alpha */
    if (rc == 0) {
        for (size_t i = 0; i < n; i++)
            for (int c = 0; c < 3; c++) vals[3 * i + c] = g->sh[i * K * 3 + c];
        rc = quantize(path, vals, 3 * n, cb, lab);
    }
    if (rc == 0) {
        for (size_t p = 0; p < n; p++) {
            size_t i = order[p];
            for (int c = 0; c < 3; c++) img[IM_SH0][4 * p + c] = lab[3 * i + c];
            img[IM_SH0][4 * p + 3] = to_u8(255.0 * sp_sigmoidf(g->opacity_logits[i]));
        }
        cJSON *sh0 = cJSON_AddObjectToObject(meta, "sh0");
        cJSON_AddItemToObject(sh0, "codebook", codebook_json(cb));
        cJSON_AddItemToObject(sh0, "files", files_json(IM_SH0, -1));
    }
    /* shN: a palette of SH rest vectors (channel-major: R coefficients, then G, then B), each
     * coefficient an index into one codebook */
    if (rc == 0 && rest) {
        int palette = 1; /* the largest power of two up to n, at most MAX_PALETTE */
        while (palette < MAX_PALETTE && (size_t)palette * 2 <= n) palette *= 2;
        float *pts = sp_model_buffer(path, n, dims * sizeof(float), "the SH rest vectors");
        float *cent = sp_model_buffer(path, (size_t)palette, dims * sizeof(float), "the SH palette");
        uint32_t *labels = sp_model_buffer(path, n, sizeof *labels, "the SH palette labels");
        uint8_t *clab = cent ? sp_model_buffer(path, (size_t)palette, dims, "the SH palette") : NULL;
        int used = 0;
        rc = !pts || !cent || !labels || !clab ? -1 : 0;
        if (rc == 0) {
            for (size_t i = 0; i < n; i++)
                for (int c = 0; c < 3; c++)
                    for (size_t k = 1; k < K; k++) pts[i * dims + c * rest + k - 1] = g->sh[(i * K + k) * 3 + c];
            rc = sp_kmeans(pts, (int)n, (int)dims, palette, KMEANS_ROUNDS, KMEANS_SEED, cent, labels, &used);
            if (rc) sp_error_prefix("%s", path);
        }
        if (rc == 0) rc = quantize(path, cent, (size_t)used * dims, cb, clab);
        if (rc == 0) {
            iw[IM_LABELS] = w, ih[IM_LABELS] = h;
            iw[IM_CENTROIDS] = 64 * (int)rest, ih[IM_CENTROIDS] = (used + 63) / 64;
            img[IM_CENTROIDS] = sp_model_buffer(path, (size_t)iw[IM_CENTROIDS] * ih[IM_CENTROIDS], 4, "the SH palette");
            if (!img[IM_CENTROIDS]) rc = -1;
        }
        if (rc == 0) {
            for (size_t p = 0; p < n; p++) {
                uint32_t l = labels[order[p]];
                uint8_t *t = img[IM_LABELS] + 4 * p;
                t[0] = (uint8_t)(l & 0xff), t[1] = (uint8_t)(l >> 8), t[2] = 0, t[3] = 255;
            }
            for (int e = 0; e < used; e++)
                for (size_t j = 0; j < rest; j++) {
                    uint8_t *t = img[IM_CENTROIDS] + 4 * ((size_t)e * rest + j);
                    for (int c = 0; c < 3; c++) t[c] = clab[(size_t)e * dims + c * rest + j];
                    t[3] = 255;
                }
            cJSON *shn = cJSON_AddObjectToObject(meta, "shN");
            cJSON_AddNumberToObject(shn, "count", used);
            cJSON_AddNumberToObject(shn, "bands", g->sh_degree);
            cJSON_AddItemToObject(shn, "codebook", codebook_json(cb));
            cJSON_AddItemToObject(shn, "files", files_json(IM_CENTROIDS, IM_LABELS));
        }
        free(pts), free(cent), free(labels), free(clab);
    }
    /* encode the images (in parallel: each is independent) and write the zip */
    WebPMemoryWriter enc[IM_COUNT];
    memset(enc, 0, sizeof enc);
    int failed = 0;
    if (rc == 0) {
#pragma omp parallel for schedule(dynamic, 1) reduction(| : failed)
        for (int m = 0; m < nimages; m++)
            if (webp_encode(img[m], iw[m], ih[m], &enc[m])) failed = 1;
        if (failed) rc = sp_error("%s: WebP encoding failed (out of memory?)", path);
    }
    char *json = rc == 0 ? cJSON_PrintUnformatted(meta) : NULL;
    if (rc == 0 && !json) rc = sp_error("%s: out of memory for meta.json", path);
    if (rc == 0) {
        sp_zip_item items[1 + IM_COUNT] = {{"meta.json", json, strlen(json)}};
        for (int m = 0; m < nimages; m++) items[1 + m] = (sp_zip_item){image_names[m], enc[m].mem, enc[m].size};
        rc = sp_zip_write(path, items, 1 + nimages);
    }
    for (int m = 0; m < IM_COUNT; m++) {
        WebPMemoryWriterClear(&enc[m]);
        free(img[m]);
    }
    cJSON_free(json);
    cJSON_Delete(meta);
    free(order), free(vals), free(lab);
    return rc;
}

/* ---- reading ---- */

/* Where the files come from: a zip in memory, or the folder of a meta.json. */
typedef struct {
    const char *path;
    char *archive;
    size_t archive_size;
    sp_zip zip;
    char *dir; /* NULL for a zip */
} sog_source;

static int source_load(sog_source *s, const char *name, uint8_t **data, size_t *n) {
    if (!s->dir) {
        const sp_zip_entry *e = sp_zip_find(&s->zip, name);
        if (!e) return sp_error("%s: the archive has no '%s'", s->path, name);
        return sp_zip_extract(&s->zip, e, data, n);
    }
    /* files beside meta.json only: no folders, nothing outside */
    if (!*name || strchr(name, '/') || strchr(name, '\\') || !strcmp(name, ".") || !strcmp(name, ".."))
        return sp_error("%s: file name '%s' is not a plain name beside meta.json", s->path, name);
    char *p = sp_path_join(s->dir, name);
    int rc = sp_model_read_bytes(p, (char **)data, n);
    if (rc) sp_error_prefix("%s", s->path); /* meta.json's path, then the image's */
    free(p);
    return rc;
}

/* obj[key]; where names obj in messages (NULL: the top level). */
static const cJSON *member(const char *path, const cJSON *obj, const char *key, const char *where) {
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!m && where) sp_error("%s: meta.json: %s has no '%s'", path, where, key);
    else if (!m) sp_error("%s: meta.json has no '%s'", path, key);
    return m;
}

/* Exactly want numbers from the array obj[key]. */
static int numbers(const char *path, const cJSON *obj, const char *key, const char *where, double *out, int want) {
    const cJSON *a = member(path, obj, key, where);
    if (!a) return -1;
    if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) != want)
        return sp_error("%s: meta.json: %s.%s must be an array of %d numbers", path, where, key, want);
    int i = 0;
    for (const cJSON *v = a->child; v; v = v->next, i++) {
        if (!cJSON_IsNumber(v)) return sp_error("%s: meta.json: %s.%s[%d] is not a number", path, where, key, i);
        out[i] = v->valuedouble;
    }
    return 0;
}

/* The names of an entry's `files` (exactly want strings). */
static int files(const char *path, const cJSON *obj, const char *where, const char **out, int want) {
    const cJSON *a = member(path, obj, "files", where);
    if (!a) return -1;
    if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) != want)
        return sp_error("%s: meta.json: %s.files must list %d file%s", path, where, want, want > 1 ? "s" : "");
    int i = 0;
    for (const cJSON *v = a->child; v; v = v->next, i++) {
        if (!cJSON_IsString(v)) return sp_error("%s: meta.json: %s.files[%d] is not a file name", path, where, i);
        out[i] = v->valuestring;
    }
    return 0;
}

/* An integer member in [lo, hi]. */
static int integer(const char *path, const cJSON *obj, const char *key, const char *where, double lo, double hi, int *out) {
    const cJSON *v = member(path, obj, key, where);
    if (!v) return -1;
    if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || v->valuedouble < lo || v->valuedouble > hi)
        return sp_error("%s: meta.json: %s%s%s must be a whole number from %.0f to %.0f", path, where ? where : "",
                        where ? "." : "", key, lo, hi);
    *out = (int)v->valuedouble;
    return 0;
}

typedef struct {
    const char *name;
    uint8_t *rgba;
    int w, h;
} sog_image;

/* The WebP image called name: its size checked (at least min_px pixels, at most max_px) from its
 * header before anything is decoded into a fallibly allocated buffer. */
static int load_image(sog_source *s, const char *name, size_t min_px, size_t max_px, sog_image *im) {
    im->name = name;
    uint8_t *data;
    size_t size;
    if (source_load(s, name, &data, &size)) return -1;
    WebPDecoderConfig cfg;
    int rc = 0;
    if (!WebPInitDecoderConfig(&cfg) || WebPGetFeatures(data, size, &cfg.input) != VP8_STATUS_OK)
        rc = sp_error("%s: '%s' is not a WebP image", s->path, name);
    else if (cfg.input.has_animation)
        rc = sp_error("%s: '%s' is an animated WebP image", s->path, name);
    else if (cfg.input.format != 2)
        rc = sp_error("%s: '%s' is a lossy WebP image: SOG images must be lossless (exact values)", s->path, name);
    size_t px = rc ? 0 : (size_t)cfg.input.width * (size_t)cfg.input.height;
    if (rc == 0 && (px < min_px || px > max_px))
        rc = px < min_px ? sp_error("%s: '%s' has %dx%d pixels, fewer than the %zu it must hold", s->path, name,
                                    cfg.input.width, cfg.input.height, min_px)
                         : sp_error("%s: '%s' has %dx%d pixels, far more than the %zu it must hold (damaged file?)",
                                    s->path, name, cfg.input.width, cfg.input.height, min_px);
    if (rc == 0 && !(im->rgba = sp_model_buffer(s->path, px, 4, "a SOG image"))) rc = -1;
    if (rc == 0) {
        im->w = cfg.input.width, im->h = cfg.input.height;
        cfg.output.colorspace = MODE_RGBA;
        cfg.output.is_external_memory = 1;
        cfg.output.u.RGBA.rgba = im->rgba;
        cfg.output.u.RGBA.stride = 4 * im->w;
        cfg.output.u.RGBA.size = 4 * px;
        if (WebPDecode(data, size, &cfg) != VP8_STATUS_OK) rc = sp_error("%s: '%s' is a damaged WebP image", s->path, name);
        WebPFreeDecBuffer(&cfg.output);
    }
    free(data);
    return rc;
}

static int read_meta(sog_source *s, cJSON **out) {
    *out = NULL;
    uint8_t *text;
    size_t n;
    if (s->dir) {
        if (sp_model_read_bytes(s->path, (char **)&text, &n)) return -1;
    } else if (source_load(s, "meta.json", &text, &n)) {
        return -1;
    }
    const char *end = NULL;
    cJSON *meta = cJSON_ParseWithLengthOpts((const char *)text, n, &end, 0);
    int rc = 0;
    if (!meta) rc = sp_error("%s: meta.json is not valid JSON (near byte %td)", s->path, end ? end - (const char *)text : 0);
    else if (!cJSON_IsObject(meta)) rc = sp_error("%s: meta.json is not a JSON object", s->path);
    free(text);
    if (rc) {
        cJSON_Delete(meta);
        return -1;
    }
    *out = meta;
    return 0;
}

static int read_sog(sog_source *s, sp_gaussians *g) {
    const char *path = s->path;
    cJSON *meta;
    if (read_meta(s, &meta)) return -1;
    const cJSON *version = cJSON_GetObjectItemCaseSensitive(meta, "version");
    int rc = 0, count = 0, bands = 0, palette = 0;
    if (!version)
        rc = sp_error("%s: meta.json has no 'version': an old (version 1) SOG, not read (splat-transform converts it)", path);
    else if (!cJSON_IsNumber(version) || version->valuedouble != 2)
        rc = cJSON_IsNumber(version) ? sp_error("%s: SOG version %g is not supported (2 is)", path, version->valuedouble)
                                     : sp_error("%s: meta.json: 'version' is not a number", path);
    if (rc == 0) rc = integer(path, meta, "count", NULL, 0, INT_MAX / 2, &count);
    if (rc == 0 && count == 0) rc = sp_error("%s: the model has no Gaussians", path);
    const cJSON *means = NULL, *scales = NULL, *quats = NULL, *sh0 = NULL, *shn = NULL;
    if (rc == 0 && !((means = member(path, meta, "means", NULL)) && (scales = member(path, meta, "scales", NULL)) &&
                     (quats = member(path, meta, "quats", NULL)) && (sh0 = member(path, meta, "sh0", NULL))))
        rc = -1;
    double mins[3], maxs[3], scale_cb[CODEBOOK], color_cb[CODEBOOK], sh_cb[CODEBOOK];
    const char *names[IM_COUNT] = {0};
    if (rc == 0) rc = numbers(path, means, "mins", "means", mins, 3);
    if (rc == 0) rc = numbers(path, means, "maxs", "means", maxs, 3);
    if (rc == 0) rc = files(path, means, "means", names + IM_MEANS_L, 2);
    if (rc == 0) rc = numbers(path, scales, "codebook", "scales", scale_cb, CODEBOOK);
    if (rc == 0) rc = files(path, scales, "scales", names + IM_SCALES, 1);
    if (rc == 0) rc = files(path, quats, "quats", names + IM_QUATS, 1);
    if (rc == 0) rc = numbers(path, sh0, "codebook", "sh0", color_cb, CODEBOOK);
    if (rc == 0) rc = files(path, sh0, "sh0", names + IM_SH0, 1);
    if (rc == 0 && (shn = cJSON_GetObjectItemCaseSensitive(meta, "shN"))) {
        rc = integer(path, shn, "bands", "shN", 0, 3, &bands);
        if (rc == 0 && bands > 0) rc = integer(path, shn, "count", "shN", 1, MAX_PALETTE, &palette);
        if (rc == 0 && bands > 0) rc = numbers(path, shn, "codebook", "shN", sh_cb, CODEBOOK);
        const char *two[2];
        if (rc == 0 && bands > 0 && (rc = files(path, shn, "shN", two, 2)) == 0)
            names[IM_CENTROIDS] = two[0], names[IM_LABELS] = two[1];
    }
    /* images: sizes checked from their headers, then decoded */
    sog_image im[IM_COUNT];
    memset(im, 0, sizeof im);
    size_t need = (size_t)count, most = 2 * (size_t)count + 65536; /* the writer pads to a multiple of 4 a side */
    int K = sp_sh_coeffs(bands), rest = K - 1;
    for (int m = 0; rc == 0 && m < IM_COUNT; m++) {
        if (!names[m]) continue;
        if (m == IM_CENTROIDS) rc = load_image(s, names[m], (size_t)palette * rest, (size_t)(MAX_PALETTE + 64) * rest, &im[m]);
        else rc = load_image(s, names[m], need, most, &im[m]);
    }
    if (rc == 0 && bands > 0 && im[IM_CENTROIDS].w != 64 * rest)
        rc = sp_error("%s: '%s' is %d pixels wide; an SH palette of degree %d is %d", path, names[IM_CENTROIDS],
                      im[IM_CENTROIDS].w, bands, 64 * rest);
    if (rc == 0 && bands > 0 && (size_t)im[IM_CENTROIDS].h * 64 < (size_t)palette)
        rc = sp_error("%s: shN.count is %d but '%s' holds %d entries", path, palette, names[IM_CENTROIDS], im[IM_CENTROIDS].h * 64);
    if (rc == 0) rc = sp_model_alloc(path, g, count, bands);
    if (rc == 0) {
        g->n = count;
        const uint8_t *lo = im[IM_MEANS_L].rgba, *hi = im[IM_MEANS_U].rgba, *qt = im[IM_QUATS].rgba;
        const uint8_t *sc = im[IM_SCALES].rgba, *c0 = im[IM_SH0].rgba, *lb = im[IM_LABELS].rgba, *ce = im[IM_CENTROIDS].rgba;
        for (size_t i = 0; rc == 0 && i < (size_t)count; i++) {
            const size_t t = 4 * i;
            for (int k = 0; k < 3; k++) {
                double span = maxs[k] - mins[k];
                double l = mins[k] + (span != 0 ? span : 1) * ((lo[t + k] | hi[t + k] << 8) / 65535.0);
                g->means[3 * i + k] = (float)inverse_log_transform(l);
                g->log_scales[3 * i + k] = (float)scale_cb[sc[t + k]];
            }
            int big = qt[t + 3] - 252;
            if (big < 0) {
                rc = sp_error("%s: Gaussian %zu: rotation tag %d in '%s' is not 252..255", path, i, qt[t + 3], names[IM_QUATS]);
                break;
            }
            float *q = g->quats + 4 * i;
            double sum = 0;
            for (int k = 0, c = 0; k < 4; k++) {
                if (k == big) continue;
                double v = (qt[t + c++] / 255.0 * 2 - 1) / SQRT2;
                q[k] = (float)v;
                sum += v * v;
            }
            q[big] = (float)sqrt(fmax(0, 1 - sum));
            float *sh = g->sh + i * (size_t)K * 3;
            for (int c = 0; c < 3; c++) sh[c] = (float)color_cb[c0[t + c]];
            g->opacity_logits[i] = sp_logitf(sp_alpha_from_u8(c0[t + 3]));
            if (!rest) continue;
            int label = lb[t] | lb[t + 1] << 8;
            if (label >= palette) {
                rc = sp_error("%s: Gaussian %zu: SH palette index %d is not below shN.count (%d)", path, i, label, palette);
                break;
            }
            const uint8_t *e = ce + 4 * (size_t)label * rest;
            for (int k = 1; k <= rest; k++)
                for (int c = 0; c < 3; c++) sh[3 * k + c] = (float)sh_cb[e[4 * (k - 1) + c]];
        }
        if (rc) sp_gaussians_free(g);
    }
    for (int m = 0; m < IM_COUNT; m++) free(im[m].rgba);
    cJSON_Delete(meta);
    return rc ? -1 : sp_model_check(path, g);
}

/* 1 for a name that ends in "meta.json": the unbundled form. */
static int is_meta_json(const char *path) {
    size_t n = strlen(path);
    return n >= 9 && !strcasecmp(path + n - 9, "meta.json");
}

int sp_sog_read(const char *path, sp_gaussians *g) {
    memset(g, 0, sizeof *g);
    sog_source s = {.path = path};
    int rc;
    if (is_meta_json(path)) {
        s.dir = sp_path_dir(path);
        rc = read_sog(&s, g);
        free(s.dir);
        return rc;
    }
    if (sp_model_read_bytes(path, &s.archive, &s.archive_size)) return -1;
    rc = sp_zip_open(&s.zip, path, s.archive, s.archive_size);
    if (rc == 0) rc = read_sog(&s, g);
    sp_zip_close(&s.zip);
    free(s.archive);
    return rc;
}
