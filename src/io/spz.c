/* spz.c — Niantic's .spz compressed format (layout and axis conventions in export.h): writer of
 * versions 3 (one gzip stream, zlib) and 4 (32-byte header, table of streams, one zstd frame per
 * attribute stream), reader of versions 2, 3 and 4, in either axis convention. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

#include "core/core.h"
#include "io/export.h"
#include "io/model_check.h"

#define SPZ_MAGIC 0x5053474eu /* "NGSP" little-endian */
#define SPZ_COLOR_SCALE 0.15f
#define SPZ_FRACTIONAL_BITS 12
enum { SPZ_HEADER = 16, SPZ_HEADER_V4 = 32, SPZ_TOC_ENTRY = 16 };
/* Most output bytes one input byte can give: deflate about 1032, zstd (RLE blocks) about 43700. */
#define INFLATE_RATIO 1100.0
#define ZSTD_RATIO 65536.0

/* RDF <-> RUB is the 180-degree rotation about x: y and z change sign. */
static const float flip_rub[3] = {1.0f, -1.0f, -1.0f};
static const float flip_none[3] = {1.0f, 1.0f, 1.0f};

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

static void put_u64(uint8_t *p, uint64_t v) {
    for (int k = 0; k < 8; k++) p[k] = (uint8_t)(v >> (8 * k));
}

static uint64_t get_u64(const uint8_t *p) {
    uint64_t v = 0;
    for (int k = 0; k < 8; k++) v |= (uint64_t)p[k] << (8 * k);
    return v;
}

/* Byte sizes of the attribute streams, in file order: positions, alphas, colours, scales,
 * rotations, SH (the SH stream only for degree >= 1). Returns the number of streams. */
static int stream_sizes(uint64_t n, int deg, int version, uint64_t size[6]) {
    uint64_t rest = (uint64_t)sp_sh_coeffs(deg) - 1;
    size[0] = 9 * n, size[1] = n, size[2] = 3 * n, size[3] = 3 * n, size[4] = (version == 2 ? 3 : 4) * n;
    size[5] = 3 * rest * n;
    return deg > 0 ? 6 : 5;
}

static int deflate_to_file(const char *path, const uint8_t *raw, size_t n) {
    z_stream z;
    memset(&z, 0, sizeof z);
    if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 9, Z_DEFAULT_STRATEGY) != Z_OK)
        return sp_error("%s: zlib cannot start compressing", path);
    size_t cap = (size_t)deflateBound(&z, (uLong)(n > ULONG_MAX ? ULONG_MAX : n)) + n / 1000 + 64;
    uint8_t *out = sp_model_buffer(path, cap, 1, "the compressed .spz");
    if (!out) {
        deflateEnd(&z);
        return -1;
    }
    /* zlib's counters are 32-bit: feed and drain in pieces of at most 1 GiB */
    size_t in_left = n, out_used = 0;
    z.next_in = (Bytef *)raw;
    int zr = Z_OK;
    while (zr == Z_OK) {
        if (z.avail_in == 0) {
            z.avail_in = (uInt)(in_left < (1u << 30) ? in_left : (1u << 30));
            in_left -= z.avail_in;
        }
        size_t room = cap - out_used;
        z.next_out = out + out_used;
        z.avail_out = (uInt)(room < (1u << 30) ? room : (1u << 30));
        uInt before = z.avail_out;
        zr = deflate(&z, in_left == 0 ? Z_FINISH : Z_NO_FLUSH);
        out_used += before - z.avail_out;
        if (zr == Z_BUF_ERROR && out_used < cap) zr = Z_OK;
    }
    deflateEnd(&z);
    int rc = zr == Z_STREAM_END ? sp_write_file_atomic(path, out, out_used) : sp_error("%s: zlib compression failed", path);
    free(out);
    return rc;
}

/* Version 4: header, table of contents (compressed and uncompressed size of each stream, u64),
 * then each stream as one zstd frame. */
static int zstd_to_file(const char *path, const uint8_t *raw, uint64_t n, int deg, int frac) {
    uint64_t size[6];
    int ns = stream_sizes(n, deg, 4, size);
    size_t cap = SPZ_HEADER_V4 + SPZ_TOC_ENTRY * (size_t)ns;
    for (int s = 0; s < ns; s++) cap += ZSTD_compressBound((size_t)size[s]);
    uint8_t *out = sp_model_buffer(path, cap, 1, "the compressed .spz");
    if (!out) return -1;
    put_u32(out, SPZ_MAGIC);
    put_u32(out + 4, 4);
    put_u32(out + 8, (uint32_t)n);
    out[12] = (uint8_t)deg;
    out[13] = (uint8_t)frac;
    out[14] = 0; /* flags: not antialiased, no extensions */
    out[15] = (uint8_t)ns;
    put_u32(out + 16, SPZ_HEADER_V4); /* the table follows the header */
    size_t at = SPZ_HEADER_V4 + SPZ_TOC_ENTRY * (size_t)ns;
    const uint8_t *src = raw + SPZ_HEADER;
    for (int s = 0; s < ns; s++) {
        size_t c = ZSTD_compress(out + at, cap - at, src, (size_t)size[s], 12);
        if (ZSTD_isError(c)) {
            free(out);
            return sp_error("%s: zstd compression failed (%s)", path, ZSTD_getErrorName(c));
        }
        put_u64(out + SPZ_HEADER_V4 + SPZ_TOC_ENTRY * s, c);
        put_u64(out + SPZ_HEADER_V4 + SPZ_TOC_ENTRY * s + 8, size[s]);
        at += c;
        src += size[s];
    }
    int rc = sp_write_file_atomic(path, out, at);
    free(out);
    return rc;
}

sp_spz_options sp_spz_defaults(void) { return (sp_spz_options){.version = 4, .axes = SP_SPZ_AXES_RDF}; }

int sp_spz_write(const char *path, const sp_gaussians *g) {
    sp_spz_options o = sp_spz_defaults();
    return sp_spz_write_opts(path, g, &o);
}

int sp_spz_write_opts(const char *path, const sp_gaussians *g, const sp_spz_options *o) {
    if (g->sh_degree < 0 || g->sh_degree > 3 || g->K != sp_sh_coeffs(g->sh_degree))
        return sp_error("%s: cannot write SH degree %d", path, g->sh_degree);
    if (o->version != 3 && o->version != 4)
        return sp_error("%s: cannot write .spz version %d (3 and 4 are written)", path, o->version);
    const float *flip_p = o->axes == SP_SPZ_AXES_RUB ? flip_rub : flip_none;
    int flip_sh = o->axes == SP_SPZ_AXES_RUB;
    size_t n = (size_t)g->n, rest = (size_t)g->K - 1;
    size_t bytes = SPZ_HEADER + n * (9 + 1 + 3 + 3 + 4 + 3 * rest);
    uint8_t *raw = sp_model_buffer(path, bytes, 1, "the .spz streams");
    if (!raw) return -1;
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
                sh[(i * rest + k - 1) * 3 + ch] =
                    quantize_sh((flip_sh ? sp_spz_sh_flip((int)k) : 1.0f) * c[k * 3 + ch], k <= 3 ? 5 : 4);
    }
    int rc = o->version == 4 ? zstd_to_file(path, raw, n, g->sh_degree, SPZ_FRACTIONAL_BITS)
                             : deflate_to_file(path, raw, bytes);
    free(raw);
    return rc;
}

/* Inflates exactly `want` bytes into dst (the stream may continue), in pieces zlib's 32-bit
 * counters hold; *in_left is what has not yet been handed to zlib. */
static int inflate_some(const char *path, z_stream *z, size_t *in_left, uint8_t *dst, size_t want) {
    while (want > 0) {
        if (z->avail_in == 0 && *in_left > 0) {
            z->avail_in = (uInt)(*in_left < (1u << 30) ? *in_left : (1u << 30));
            *in_left -= z->avail_in;
        }
        z->next_out = dst;
        z->avail_out = (uInt)(want < (1u << 30) ? want : (1u << 30));
        uInt before = z->avail_out;
        int zr = inflate(z, Z_NO_FLUSH);
        size_t got = before - z->avail_out;
        dst += got, want -= got;
        if (want == 0) break;
        if (zr == Z_STREAM_END || (zr == Z_BUF_ERROR && z->avail_in == 0 && *in_left == 0))
            return sp_error("%s: .spz data ends early (truncated file?)", path);
        if (zr != Z_OK && zr != Z_BUF_ERROR)
            return sp_error("%s: not a gzip-compressed .spz file (%s)", path, z->msg ? z->msg : "zlib error");
    }
    return 0;
}

/* The header fields both layouts share; checks them and the claimed size against the file. */
static int check_header(const char *path, const uint8_t *hdr, size_t file_size, double ratio, uint64_t *body) {
    uint32_t version = get_u32(hdr + 4), n = get_u32(hdr + 8);
    int deg = hdr[12], frac = hdr[13];
    if (get_u32(hdr) != SPZ_MAGIC) return sp_error("%s: not a .spz file (bad magic)", path);
    if (version < 2 || version > 4) return sp_error("%s: .spz version %u is not supported (2, 3 and 4 are)", path, version);
    if (deg > 3) return sp_error("%s: SH degree %d is not supported (at most 3)", path, deg);
    if (frac > 23) return sp_error("%s: %d fractional bits is more than a 24-bit position holds", path, frac);
    if (n == 0) return sp_error("%s: the model has no Gaussians", path);
    if (n > INT_MAX / 2) return sp_error("%s: %u Gaussians is more than this reader accepts", path, n);
    uint64_t size[6], total = 0;
    int ns = stream_sizes(n, deg, (int)version, size);
    for (int s = 0; s < ns; s++) total += size[s];
    if ((double)total > ratio * (double)file_size + 4096.0)
        return sp_error("%s: the header claims %u Gaussians (%llu bytes of data) but the %zu-byte file cannot hold "
                        "them (truncated or damaged file)", path, n, (unsigned long long)total, file_size);
    *body = total;
    return 0;
}

/* Versions 2 and 3: one gzip stream of header and streams. Fills raw (header + streams). */
static int read_gzip(const char *path, const uint8_t *data, size_t size, uint8_t **raw_out) {
    *raw_out = NULL;
    z_stream z;
    memset(&z, 0, sizeof z);
    if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) return sp_error("%s: zlib cannot start decompressing", path);
    z.next_in = (Bytef *)data;
    size_t in_left = size;
    uint8_t hdr[SPZ_HEADER], *raw = NULL;
    uint64_t body = 0;
    int rc = inflate_some(path, &z, &in_left, hdr, SPZ_HEADER);
    if (rc == 0 && get_u32(hdr + 4) == 4) rc = sp_error("%s: .spz version 4 inside gzip is not a valid file", path);
    if (rc == 0) rc = check_header(path, hdr, size, INFLATE_RATIO, &body);
    if (rc == 0 && size >= 18) {
        /* the gzip trailer holds the uncompressed length mod 2^32: a cheap check before allocating */
        uint32_t isize = get_u32(data + size - 4);
        uint64_t claimed = SPZ_HEADER + body;
        if (claimed < 0xffffffffu && isize < claimed)
            rc = sp_error("%s: the header claims %llu bytes of data but the gzip stream holds %u (truncated or damaged "
                          "file)", path, (unsigned long long)claimed, isize);
    }
    if (rc == 0 && !(raw = sp_model_buffer(path, SPZ_HEADER + body, 1, "the .spz streams"))) rc = -1;
    if (rc == 0) {
        memcpy(raw, hdr, SPZ_HEADER);
        rc = inflate_some(path, &z, &in_left, raw + SPZ_HEADER, (size_t)body);
    }
    inflateEnd(&z);
    if (rc) {
        free(raw);
        return -1;
    }
    *raw_out = raw;
    return 0;
}

/* Version 4: 32-byte header, table of contents at its offset, one zstd frame per stream. The
 * streams are joined after a version-3 style 16-byte header, so decoding is shared. */
static int read_zstd(const char *path, const uint8_t *data, size_t size, uint8_t **raw_out) {
    *raw_out = NULL;
    if (size < SPZ_HEADER_V4) return sp_error("%s: a .spz version 4 header is 32 bytes; the file has %zu", path, size);
    uint64_t body;
    if (check_header(path, data, size, ZSTD_RATIO, &body)) return -1;
    uint32_t n = get_u32(data + 8);
    int deg = data[12], ns = data[15];
    uint64_t toc = get_u32(data + 16), want[6];
    int expect = stream_sizes(n, deg, 4, want);
    if (ns != expect) return sp_error("%s: %d streams for SH degree %d (expected %d)", path, ns, deg, expect);
    if (toc < SPZ_HEADER_V4 || toc + (uint64_t)SPZ_TOC_ENTRY * ns > size)
        return sp_error("%s: the table of streams (at byte %llu) is outside the file", path, (unsigned long long)toc);
    uint8_t *raw = sp_model_buffer(path, SPZ_HEADER + body, 1, "the .spz streams");
    if (!raw) return -1;
    memcpy(raw, data, SPZ_HEADER);
    uint64_t at = toc + (uint64_t)SPZ_TOC_ENTRY * ns;
    uint8_t *dst = raw + SPZ_HEADER;
    static const char *names[6] = {"positions", "alphas", "colours", "scales", "rotations", "SH"};
    for (int s = 0; s < ns; s++) {
        const uint8_t *e = data + toc + SPZ_TOC_ENTRY * s;
        uint64_t csize = get_u64(e), usize = get_u64(e + 8);
        const char *why = NULL;
        if (usize != want[s]) why = "uncompressed size does not match the Gaussian count";
        else if (csize > size - at) why = "runs past the end of the file (truncated?)";
        unsigned long long fcs = why ? 0 : ZSTD_getFrameContentSize(data + at, (size_t)csize);
        if (!why && fcs == ZSTD_CONTENTSIZE_ERROR) why = "is not a zstd frame";
        else if (!why && fcs != ZSTD_CONTENTSIZE_UNKNOWN && fcs != usize) why = "decompresses to another size than the table says";
        if (!why) {
            size_t got = ZSTD_decompress(dst, (size_t)usize, data + at, (size_t)csize);
            if (ZSTD_isError(got)) why = ZSTD_getErrorName(got);
            else if (got != usize) why = "decompresses to fewer bytes than the table says";
        }
        if (why) {
            free(raw);
            return sp_error("%s: .spz stream %d (%s): %s", path, s, names[s], why);
        }
        at += csize;
        dst += usize;
    }
    *raw_out = raw;
    return 0;
}

int sp_spz_read(const char *path, sp_gaussians *g) { return sp_spz_read_opts(path, g, SP_SPZ_AXES_RDF); }

int sp_spz_read_opts(const char *path, sp_gaussians *g, sp_spz_axes axes) {
    memset(g, 0, sizeof *g);
    char *data;
    size_t size;
    if (sp_model_read_bytes(path, &data, &size)) return -1;
    const uint8_t *d = (const uint8_t *)data;
    uint8_t *raw = NULL;
    int rc;
    if (size >= 2 && d[0] == 0x1f && d[1] == 0x8b) rc = read_gzip(path, d, size, &raw);
    else if (size >= 8 && get_u32(d) == SPZ_MAGIC && get_u32(d + 4) >= 4) rc = read_zstd(path, d, size, &raw);
    else if (size >= 4 && get_u32(d) == SPZ_MAGIC)
        rc = sp_error("%s: .spz version %u must be gzip-compressed", path, size >= 8 ? get_u32(d + 4) : 0);
    else rc = sp_error("%s: not a .spz file (neither gzip nor an NGSP header)", path);
    free(data);
    if (rc) return -1;
    uint32_t version = get_u32(raw + 4), n = get_u32(raw + 8);
    int deg = raw[12], frac = raw[13];
    if (sp_model_alloc(path, g, (int)n, deg)) {
        free(raw);
        return -1;
    }
    g->n = (int)n;
    const float *flip_p = axes == SP_SPZ_AXES_RUB ? flip_rub : flip_none;
    int flip_sh = axes == SP_SPZ_AXES_RUB;
    size_t rest = (size_t)g->K - 1, rot_bytes = version == 2 ? 3 : 4;
    const uint8_t *pos = raw + SPZ_HEADER, *alpha = pos + 9 * (size_t)n, *color = alpha + n, *scale = color + 3 * (size_t)n;
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
        if (version >= 3) {
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
                c[k * 3 + ch] = (flip_sh ? sp_spz_sh_flip((int)k) : 1.0f) * (sh[(i * rest + k - 1) * 3 + ch] - 128.0f) / 128.0f;
    }
    free(raw);
    return sp_model_check(path, g);
}
