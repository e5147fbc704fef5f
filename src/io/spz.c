/* spz.c — Niantic's .spz compressed format, version 3 (layout and axis convention in export.h):
 * writer (gzip through zlib) and reader (versions 2 and 3). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "core/core.h"
#include "io/export.h"

#define SPZ_MAGIC 0x5053474eu /* "NGSP" little-endian */
#define SPZ_COLOR_SCALE 0.15f
#define SPZ_FRACTIONAL_BITS 12
enum { SPZ_HEADER = 16 };

/* RDF <-> RUB is the 180-degree rotation about x: y and z change sign. */
static const float flip_p[3] = {1.0f, -1.0f, -1.0f};

float sp_spz_sh_flip(int k) {
    /* parity in (y, z) of each real SH basis function, 3DGS order (DC is k = 0) */
    static const float s[16] = {1, -1, -1, 1, -1, 1, 1, -1, 1, -1, 1, -1, -1, 1, -1, 1};
    return k >= 0 && k < 16 ? s[k] : 1.0f;
}

static uint8_t to_u8(float x) {
    float r = roundf(x);
    return (uint8_t)(r < 0 ? 0 : r > 255 ? 255 : r);
}

static void put_u32(uint8_t *p, uint32_t v) {
    for (int k = 0; k < 4; k++) p[k] = (uint8_t)(v >> (8 * k));
}

static uint32_t get_u32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Quaternion (x, y, z, w), normalized, as the largest component's index (top 2 bits) and the
 * other three in order, 10 bits each: sign bit, then 9 bits of |q| / sqrt(1/2). */
static uint32_t pack_smallest_three(const float q[4]) {
    int big = 0;
    for (int i = 1; i < 4; i++)
        if (fabsf(q[i]) > fabsf(q[big])) big = i;
    int negate = q[big] < 0;
    uint32_t bits = (uint32_t)big;
    for (int i = 0; i < 4; i++) {
        if (i == big) continue;
        uint32_t sign = (uint32_t)((q[i] < 0) != negate);
        float m = 511.0f * fabsf(q[i]) / 0.70710678f + 0.5f;
        uint32_t mag = m > 511 ? 511 : (uint32_t)m;
        bits = bits << 10 | sign << 9 | mag;
    }
    return bits;
}

static void unpack_smallest_three(uint32_t bits, float q[4]) {
    int big = (int)(bits >> 30);
    float sum = 0;
    for (int i = 3; i >= 0; i--) {
        if (i == big) continue;
        float v = 0.70710678f * (float)(bits & 511u) / 511.0f;
        q[i] = (bits >> 9) & 1u ? -v : v;
        sum += q[i] * q[i];
        bits >>= 10;
    }
    q[big] = sqrtf(fmaxf(0.0f, 1.0f - sum));
}

/* One SH rest coefficient: 128 x + 128, rounded to the middle of a bucket of 2^(8 - bits). */
static uint8_t quantize_sh(float x, int bits) {
    int step = 1 << (8 - bits);
    float r = roundf(x * 128.0f) + 128.0f;
    int q = r < 0 ? 0 : r > 255 ? 255 : (int)r;
    q = (q + step / 2) / step * step;
    return (uint8_t)(q > 255 ? 255 : q);
}

static int gzip_to_file(const char *path, const uint8_t *raw, size_t n) {
    z_stream z;
    memset(&z, 0, sizeof z);
    if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 9, Z_DEFAULT_STRATEGY) != Z_OK)
        return sp_error("%s: zlib cannot start compressing", path);
    size_t cap = deflateBound(&z, (uLong)n) + 64;
    uint8_t *out = sp_malloc(cap);
    z.next_in = (Bytef *)raw;
    z.avail_in = (uInt)n;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    int zr = deflate(&z, Z_FINISH);
    size_t len = cap - z.avail_out;
    deflateEnd(&z);
    int rc = zr == Z_STREAM_END ? sp_write_file_atomic(path, out, len) : sp_error("%s: zlib compression failed", path);
    free(out);
    return rc;
}

int sp_spz_write(const char *path, const sp_gaussians *g) {
    if (g->sh_degree < 0 || g->sh_degree > 3 || g->K != sp_sh_coeffs(g->sh_degree))
        return sp_error("%s: cannot write SH degree %d", path, g->sh_degree);
    size_t n = (size_t)g->n, rest = (size_t)g->K - 1;
    size_t bytes = SPZ_HEADER + n * (9 + 1 + 3 + 3 + 4 + 3 * rest);
    uint8_t *raw = sp_calloc(bytes, 1);
    put_u32(raw, SPZ_MAGIC);
    put_u32(raw + 4, 3);
    put_u32(raw + 8, (uint32_t)n);
    raw[12] = (uint8_t)g->sh_degree;
    raw[13] = SPZ_FRACTIONAL_BITS;
    uint8_t *pos = raw + SPZ_HEADER, *alpha = pos + 9 * n, *color = alpha + n, *scale = color + 3 * n;
    uint8_t *rot = scale + 3 * n, *sh = rot + 4 * n;
    const float fixed_one = (float)(1 << SPZ_FRACTIONAL_BITS);
    for (size_t i = 0; i < n; i++) {
        for (int k = 0; k < 3; k++) {
            float v = roundf(flip_p[k] * g->means[3 * i + k] * fixed_one);
            if (!(fabsf(v) < (float)(1 << 23))) {
                free(raw);
                return sp_error("%s: Gaussian %zu: coordinate %g is outside the .spz range (+-2048)", path, i,
                                g->means[3 * i + k]);
            }
            int32_t f = (int32_t)v;
            for (int b = 0; b < 3; b++) pos[9 * i + 3 * k + b] = (uint8_t)((uint32_t)f >> (8 * b));
            scale[3 * i + k] = to_u8((g->log_scales[3 * i + k] + 10.0f) * 16.0f);
        }
        alpha[i] = to_u8(255.0f * sp_sigmoidf(g->opacity_logits[i]));
        const float *c = g->sh + i * g->K * 3;
        for (int k = 0; k < 3; k++) color[3 * i + k] = to_u8(c[k] * SPZ_COLOR_SCALE * 255.0f + 127.5f);
        const float *q = g->quats + 4 * i; /* w, x, y, z */
        float norm = sqrtf(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
        float x[4] = {0, 0, 0, 1};
        if (norm > 0) {
            for (int k = 0; k < 3; k++) x[k] = flip_p[k] * q[k + 1] / norm;
            x[3] = q[0] / norm;
        }
        put_u32(rot + 4 * i, pack_smallest_three(x));
        for (size_t k = 1; k <= rest; k++)
            for (int ch = 0; ch < 3; ch++)
                sh[(i * rest + k - 1) * 3 + ch] = quantize_sh(sp_spz_sh_flip((int)k) * c[k * 3 + ch], k <= 3 ? 5 : 4);
    }
    int rc = gzip_to_file(path, raw, bytes);
    free(raw);
    return rc;
}

/* Inflates exactly `want` bytes into dst (the stream may continue). */
static int inflate_some(const char *path, z_stream *z, uint8_t *dst, size_t want) {
    z->next_out = dst;
    z->avail_out = (uInt)want;
    while (z->avail_out > 0) {
        int zr = inflate(z, Z_NO_FLUSH);
        if (zr == Z_STREAM_END && z->avail_out > 0) return sp_error("%s: .spz data ends early (truncated file?)", path);
        if (zr == Z_BUF_ERROR && z->avail_in == 0) return sp_error("%s: .spz data ends early (truncated file?)", path);
        if (zr != Z_OK && zr != Z_STREAM_END && zr != Z_BUF_ERROR)
            return sp_error("%s: not a gzip-compressed .spz file (%s)", path, z->msg ? z->msg : "zlib error");
    }
    return 0;
}

int sp_spz_read(const char *path, sp_gaussians *g) {
    memset(g, 0, sizeof *g);
    char *data;
    size_t size;
    if (sp_read_file(path, &data, &size)) return -1;
    z_stream z;
    memset(&z, 0, sizeof z);
    if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) {
        free(data);
        return sp_error("%s: zlib cannot start decompressing", path);
    }
    z.next_in = (Bytef *)data;
    z.avail_in = (uInt)size;
    uint8_t hdr[SPZ_HEADER], *raw = NULL;
    int rc = inflate_some(path, &z, hdr, SPZ_HEADER);
    uint32_t version = 0, n = 0;
    int deg = 0, frac = 0;
    if (rc == 0) {
        version = get_u32(hdr + 4);
        n = get_u32(hdr + 8);
        deg = hdr[12];
        frac = hdr[13];
        if (get_u32(hdr) != SPZ_MAGIC) rc = sp_error("%s: not a .spz file (bad magic)", path);
        else if (version != 2 && version != 3) rc = sp_error("%s: .spz version %u is not supported (2 and 3 are)", path, version);
        else if (deg > 3) rc = sp_error("%s: SH degree %d is not supported (at most 3)", path, deg);
        else if (frac > 23) rc = sp_error("%s: %d fractional bits is more than a 24-bit position holds", path, frac);
        else if (hdr[14] & 0x2) rc = sp_error("%s: .spz extensions are not supported", path);
        else if (n > 100000000u) rc = sp_error("%s: %u Gaussians is more than this reader accepts", path, n);
    }
    size_t rest = (size_t)sp_sh_coeffs(deg) - 1, rot_bytes = version == 3 ? 4 : 3;
    size_t body = (size_t)n * (9 + 1 + 3 + 3 + rot_bytes + 3 * rest);
    if (rc == 0) {
        raw = sp_malloc(body ? body : 1);
        rc = inflate_some(path, &z, raw, body);
    }
    inflateEnd(&z);
    free(data);
    if (rc) {
        free(raw);
        return -1;
    }
    sp_gaussians_init(g, (int)n, deg);
    g->n = (int)n;
    const uint8_t *pos = raw, *alpha = pos + 9 * (size_t)n, *color = alpha + n, *scale = color + 3 * (size_t)n;
    const uint8_t *rot = scale + 3 * (size_t)n, *sh = rot + rot_bytes * n;
    float unit = 1.0f / (float)(1 << frac);
    for (size_t i = 0; i < n; i++) {
        for (int k = 0; k < 3; k++) {
            const uint8_t *b = pos + 9 * i + 3 * k;
            int32_t f = (int32_t)((uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16);
            if (f & 0x800000) f -= 0x1000000;
            g->means[3 * i + k] = flip_p[k] * (float)f * unit;
            g->log_scales[3 * i + k] = scale[3 * i + k] / 16.0f - 10.0f;
        }
        g->opacity_logits[i] = sp_logitf(sp_alpha_from_u8(alpha[i]));
        float *c = g->sh + i * g->K * 3;
        for (int k = 0; k < 3; k++) c[k] = (color[3 * i + k] / 255.0f - 0.5f) / SPZ_COLOR_SCALE;
        float x[4]; /* x, y, z, w */
        if (version == 3) {
            unpack_smallest_three(get_u32(rot + 4 * i), x);
        } else {
            float s = 0;
            for (int k = 0; k < 3; k++) x[k] = rot[3 * i + k] / 127.5f - 1.0f, s += x[k] * x[k];
            x[3] = sqrtf(fmaxf(0.0f, 1.0f - s));
        }
        float *q = g->quats + 4 * i;
        q[0] = x[3];
        for (int k = 0; k < 3; k++) q[k + 1] = flip_p[k] * x[k];
        for (size_t k = 1; k <= rest; k++)
            for (int ch = 0; ch < 3; ch++)
                c[k * 3 + ch] = sp_spz_sh_flip((int)k) * (sh[(i * rest + k - 1) * 3 + ch] - 128.0f) / 128.0f;
    }
    free(raw);
    return 0;
}
