/* image.c — PNG (libpng) and JPEG (libjpeg-turbo) decoding, PNG encoding, downscaling. */
#include "io/image.h"

#include <stdio.h>
#include <stddef.h>
#include <jpeglib.h>
#include <jerror.h>
#include <math.h>
#include <png.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"

/* The size claimed by a header, against the cap (image.h). */
static int check_size(const char *path, const char *kind, unsigned long w, unsigned long h, long long max_pixels) {
    if (w == 0 || h == 0)
        return sp_error("%s: %s has an unusable size %lux%lu", path, kind, w, h);
    if (w > SP_IMAGE_MAX_SIDE || h > SP_IMAGE_MAX_SIDE || (long long)w * (long long)h > max_pixels)
        return sp_error("%s: %s claims %lux%lu pixels, more than splat decodes (at most %d a side and %lld in all)",
                        path, kind, w, h, SP_IMAGE_MAX_SIDE, max_pixels);
    return 0;
}

/* ---- PNG ---- */
static int load_png(const char *path, const uint8_t *data, size_t n, long long max_pixels, sp_image *img) {
    png_image pi;
    memset(&pi, 0, sizeof pi);
    pi.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_memory(&pi, data, n))
        return sp_error("%s: corrupt PNG: %s", path, pi.message);
    int has_alpha = (pi.format & PNG_FORMAT_FLAG_ALPHA) != 0;
    pi.format = has_alpha ? PNG_FORMAT_RGBA : PNG_FORMAT_RGB;
    if (check_size(path, "PNG", pi.width, pi.height, max_pixels)) {
        png_image_free(&pi);
        return -1;
    }
    img->width = (int)pi.width;
    img->height = (int)pi.height;
    img->channels = has_alpha ? 4 : 3;
    img->pixels = sp_try_alloc(PNG_IMAGE_SIZE(pi), 1, path, "lower data.downscale, or data.cache_mb to stream");
    if (!img->pixels) {
        png_image_free(&pi);
        return -1;
    }
    if (!png_image_finish_read(&pi, NULL, img->pixels, 0, NULL)) {
        free(img->pixels);
        img->pixels = NULL;
        return sp_error("%s: corrupt PNG: %s", path, pi.message);
    }
    return 0;
}

/* ---- JPEG ---- */
typedef struct {
    struct jpeg_error_mgr pub;
    jmp_buf jb;
    char msg[JMSG_LENGTH_MAX];
    int truncated; /* libjpeg only warns at a premature end of data (and fills the rest grey) */
} jpeg_err;

static void jpeg_error_exit(j_common_ptr cinfo) {
    jpeg_err *e = (jpeg_err *)cinfo->err;
    (*cinfo->err->format_message)(cinfo, e->msg);
    longjmp(e->jb, 1);
}
/* Warnings are quiet; the one for a file cut short is remembered, so it is an error. */
static void jpeg_quiet(j_common_ptr cinfo, int level) {
    if (level < 0 && cinfo->err->msg_code == JWRN_JPEG_EOF) ((jpeg_err *)cinfo->err)->truncated = 1;
}

/* Errors longjmp to err->jb (set by the caller) with the message kept; warnings are quiet. */
static void jpeg_err_init(struct jpeg_decompress_struct *c, jpeg_err *err) {
    c->err = jpeg_std_error(&err->pub);
    err->pub.error_exit = jpeg_error_exit;
    err->pub.emit_message = jpeg_quiet;
    err->truncated = 0;
}

/* EXIF orientation (1..8) from an APP1 marker, 1 when absent or unreadable. */
static int exif_orientation(struct jpeg_decompress_struct *c) {
    for (jpeg_saved_marker_ptr m = c->marker_list; m; m = m->next) {
        if (m->marker != JPEG_APP0 + 1 || m->data_length < 14 || memcmp(m->data, "Exif\0\0", 6) != 0) continue;
        const uint8_t *t = m->data + 6;
        size_t len = m->data_length - 6;
        int le = t[0] == 'I';
        if (!(le ? (t[0] == 'I' && t[1] == 'I') : (t[0] == 'M' && t[1] == 'M'))) return 1;
#define U16(p) (le ? (uint32_t)(p)[0] | (uint32_t)(p)[1] << 8 : (uint32_t)(p)[1] | (uint32_t)(p)[0] << 8)
#define U32(p) (le ? U16(p) | U16((p) + 2) << 16 : U16((p) + 2) | U16(p) << 16)
        uint32_t ifd = U32(t + 4);
        if ((size_t)ifd + 2 > len) return 1;
        uint32_t count = U16(t + ifd);
        for (uint32_t i = 0; i < count; i++) {
            size_t e = (size_t)ifd + 2 + 12 * (size_t)i;
            if (e + 12 > len) return 1;
            if (U16(t + e) == 0x0112) {
                uint32_t v = U16(t + e + 8);
                return v >= 1 && v <= 8 ? (int)v : 1;
            }
        }
#undef U16
#undef U32
    }
    return 1;
}

/* Applies an EXIF orientation so the image shows upright. */
static void apply_orientation(sp_image *img, int o) {
    if (o <= 1) return;
    int w = img->width, h = img->height, c = img->channels;
    int swap = o >= 5;
    int nw = swap ? h : w, nh = swap ? w : h;
    uint8_t *out = sp_malloc((size_t)w * h * c);
    for (int y = 0; y < nh; y++)
        for (int x = 0; x < nw; x++) {
            int sx, sy; /* source pixel shown at (x, y) */
            switch (o) {
            case 2: sx = w - 1 - x, sy = y; break;
            case 3: sx = w - 1 - x, sy = h - 1 - y; break;
            case 4: sx = x, sy = h - 1 - y; break;
            case 5: sx = y, sy = x; break;
            case 6: sx = y, sy = h - 1 - x; break;
            case 7: sx = w - 1 - y, sy = h - 1 - x; break;
            default: sx = w - 1 - y, sy = x; break; /* 8 */
            }
            memcpy(out + ((size_t)y * nw + x) * c, img->pixels + ((size_t)sy * w + sx) * c, (size_t)c);
        }
    free(img->pixels);
    img->pixels = out;
    img->width = nw;
    img->height = nh;
}

static int load_jpeg(const char *path, const uint8_t *data, size_t n, long long max_pixels, sp_image *img) {
    struct jpeg_decompress_struct c;
    jpeg_err err;
    jpeg_err_init(&c, &err);
    uint8_t *volatile pixels = NULL;
    if (setjmp(err.jb)) {
        jpeg_destroy_decompress(&c);
        free(pixels);
        return sp_error("%s: corrupt JPEG: %s", path, err.msg);
    }
    jpeg_create_decompress(&c);
    jpeg_mem_src(&c, data, (unsigned long)n);
    jpeg_save_markers(&c, JPEG_APP0 + 1, 0xffff);
    jpeg_read_header(&c, TRUE);
    if (check_size(path, "JPEG", c.image_width, c.image_height, max_pixels)) {
        jpeg_destroy_decompress(&c);
        return -1;
    }
    c.out_color_space = JCS_RGB;
    jpeg_start_decompress(&c);
    int w = (int)c.output_width, h = (int)c.output_height;
    pixels = sp_try_alloc((size_t)w * h, 3, path, "lower data.downscale, or data.cache_mb to stream");
    if (!pixels) {
        jpeg_destroy_decompress(&c);
        return -1;
    }
    while (c.output_scanline < c.output_height) {
        JSAMPROW row = pixels + (size_t)c.output_scanline * w * 3;
        jpeg_read_scanlines(&c, &row, 1);
    }
    int orient = exif_orientation(&c);
    jpeg_finish_decompress(&c);
    jpeg_destroy_decompress(&c);
    if (err.truncated) {
        free(pixels);
        return sp_error("%s: corrupt JPEG: the file ends before the image does (truncated)", path);
    }
    img->width = w;
    img->height = h;
    img->channels = 3;
    img->pixels = pixels;
    apply_orientation(img, orient);
    return 0;
}

int sp_image_decode(const char *name, const uint8_t *u, size_t n, long long max_pixels, sp_image *img) {
    memset(img, 0, sizeof *img);
    if (n >= 8 && !png_sig_cmp(u, 0, 8)) return load_png(name, u, n, max_pixels, img);
    if (n >= 3 && u[0] == 0xFF && u[1] == 0xD8 && u[2] == 0xFF) return load_jpeg(name, u, n, max_pixels, img);
    return sp_error("%s: not a PNG or JPEG file", name);
}

int sp_image_load(const char *path, sp_image *img) {
    memset(img, 0, sizeof *img);
    char *data;
    size_t n;
    if (sp_read_file(path, &data, &n)) return -1;
    int rc = sp_image_decode(path, (const uint8_t *)data, n, SP_IMAGE_MAX_PIXELS, img);
    free(data);
    return rc;
}

/* Header only: libpng's simplified API reads up to the first image data; libjpeg reads the
 * markers before the scan (EXIF included). */
static int probe_jpeg(const char *path, const uint8_t *data, size_t n, sp_image *img) {
    struct jpeg_decompress_struct c;
    jpeg_err err;
    jpeg_err_init(&c, &err);
    if (setjmp(err.jb)) {
        jpeg_destroy_decompress(&c);
        return sp_error("%s: corrupt JPEG: %s", path, err.msg);
    }
    jpeg_create_decompress(&c);
    jpeg_mem_src(&c, data, (unsigned long)n);
    jpeg_save_markers(&c, JPEG_APP0 + 1, 0xffff);
    jpeg_read_header(&c, TRUE);
    int rc = check_size(path, "JPEG", c.image_width, c.image_height, SP_IMAGE_MAX_PIXELS);
    int swap = exif_orientation(&c) >= 5;
    img->width = (int)(swap ? c.image_height : c.image_width);
    img->height = (int)(swap ? c.image_width : c.image_height);
    img->channels = 3;
    jpeg_destroy_decompress(&c);
    return rc;
}

int sp_image_probe(const char *path, int *width, int *height, int *channels) {
    char *data;
    size_t n;
    if (sp_read_file(path, &data, &n)) return -1;
    int rc = sp_image_probe_mem(path, (const uint8_t *)data, n, width, height, channels);
    free(data);
    return rc;
}

int sp_image_probe_mem(const char *path, const uint8_t *u, size_t n, int *width, int *height, int *channels) {
    sp_image img = {0};
    int rc;
    if (n >= 8 && !png_sig_cmp(u, 0, 8)) {
        png_image pi;
        memset(&pi, 0, sizeof pi);
        pi.version = PNG_IMAGE_VERSION;
        if (!png_image_begin_read_from_memory(&pi, u, n)) {
            rc = sp_error("%s: corrupt PNG: %s", path, pi.message);
        } else {
            rc = check_size(path, "PNG", pi.width, pi.height, SP_IMAGE_MAX_PIXELS);
            img.width = (int)pi.width, img.height = (int)pi.height;
            img.channels = (pi.format & PNG_FORMAT_FLAG_ALPHA) ? 4 : 3;
            png_image_free(&pi);
        }
    } else if (n >= 3 && u[0] == 0xFF && u[1] == 0xD8 && u[2] == 0xFF) {
        rc = probe_jpeg(path, u, n, &img);
    } else {
        rc = sp_error("%s: not a PNG or JPEG file", path);
    }
    *width = img.width, *height = img.height, *channels = img.channels;
    return rc;
}

/* ---- PNG writing ---- */
/* Encoded into a growing memory buffer, then written atomically. zlib level 2 with the Sub
 * filter: renders are written by the hundred at the end of a run, and the default level costs
 * ~5x the time for ~10% smaller files. */
typedef struct {
    uint8_t *p;
    size_t n, cap;
} png_mem;

static void png_mem_write(png_structp png, png_bytep data, png_size_t len) {
    png_mem *m = (png_mem *)png_get_io_ptr(png);
    if (m->n + len > m->cap) {
        size_t cap = m->cap ? m->cap : 65536;
        while (cap < m->n + len) cap *= 2;
        m->p = sp_realloc(m->p, cap);
        m->cap = cap;
    }
    memcpy(m->p + m->n, data, len);
    m->n += len;
}

static void png_mem_flush(png_structp png) { (void)png; }

static void png_write_error(png_structp png, png_const_charp msg) {
    snprintf((char *)png_get_error_ptr(png), 256, "%s", msg);
    png_longjmp(png, 1);
}

static void png_write_warning(png_structp png, png_const_charp msg) {
    (void)png;
    (void)msg;
}

int sp_image_save_png(const char *path, const sp_image *img) {
    int type;
    switch (img->channels) {
    case 1: type = PNG_COLOR_TYPE_GRAY; break;
    case 2: type = PNG_COLOR_TYPE_GRAY_ALPHA; break;
    case 3: type = PNG_COLOR_TYPE_RGB; break;
    case 4: type = PNG_COLOR_TYPE_RGBA; break;
    default: return sp_error("%s: cannot write a %d-channel image", path, img->channels);
    }
    char msg[256] = "";
    png_mem mem = {NULL, 0, 0};
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, msg, png_write_error, png_write_warning);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!png || !info) {
        png_destroy_write_struct(&png, NULL);
        return sp_error("%s: PNG encoder: out of memory", path);
    }
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        free(mem.p);
        return sp_error("%s: PNG encoding failed: %s", path, msg);
    }
    png_set_write_fn(png, &mem, png_mem_write, png_mem_flush);
    png_set_compression_level(png, 2);
    png_set_filter(png, PNG_FILTER_TYPE_BASE, PNG_FILTER_SUB);
    png_set_IHDR(png, info, (png_uint_32)img->width, (png_uint_32)img->height, 8, type, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_BASE, PNG_FILTER_TYPE_BASE);
    png_write_info(png, info);
    size_t stride = (size_t)img->width * img->channels;
    for (int y = 0; y < img->height; y++) png_write_row(png, img->pixels + (size_t)y * stride);
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    int rc = sp_write_file_atomic(path, mem.p, mem.n);
    free(mem.p);
    return rc;
}

typedef struct {
    struct jpeg_error_mgr mgr;
    jmp_buf jump;
} jpeg_enc_err;

static void jpeg_enc_fail(j_common_ptr c) { longjmp(((jpeg_enc_err *)c->err)->jump, 1); }

int sp_image_encode_jpeg(const uint8_t *rgb, int w, int h, int quality, unsigned char **out, unsigned long *n) {
    struct jpeg_compress_struct c;
    jpeg_enc_err e;
    *out = NULL;
    *n = 0;
    c.err = jpeg_std_error(&e.mgr);
    e.mgr.error_exit = jpeg_enc_fail;
    if (setjmp(e.jump)) {
        jpeg_destroy_compress(&c);
        free(*out);
        *out = NULL;
        return -1;
    }
    jpeg_create_compress(&c);
    jpeg_mem_dest(&c, out, n);
    c.image_width = (JDIMENSION)w;
    c.image_height = (JDIMENSION)h;
    c.input_components = 3;
    c.in_color_space = JCS_RGB;
    jpeg_set_defaults(&c);
    jpeg_set_quality(&c, quality, TRUE);
    if (quality >= 90) { /* no chroma subsampling: colour edges stay sharp */
        c.comp_info[0].h_samp_factor = c.comp_info[0].v_samp_factor = 1;
    }
    jpeg_start_compress(&c, TRUE);
    while (c.next_scanline < c.image_height) {
        JSAMPROW row = (JSAMPROW)(rgb + (size_t)c.next_scanline * w * 3);
        jpeg_write_scanlines(&c, &row, 1);
    }
    jpeg_finish_compress(&c);
    jpeg_destroy_compress(&c);
    return 0;
}

int sp_image_save_jpeg(const char *path, const sp_image *img, int quality) {
    if (img->channels != 3) return sp_error("%s: a JPEG is written from RGB, not %d channels", path, img->channels);
    unsigned char *data = NULL;
    unsigned long n = 0;
    if (sp_image_encode_jpeg(img->pixels, img->width, img->height, quality, &data, &n))
        return sp_error("%s: JPEG encoding failed", path);
    int rc = sp_write_file_atomic(path, data, n);
    free(data);
    return rc;
}

void sp_image_quantize(const float *rgb, int w, int h, uint8_t *out) {
    size_t n = (size_t)w * h * 3;
    for (size_t i = 0; i < n; i++) {
        float v = rgb[i] * 255.0f + 0.5f;
        out[i] = (uint8_t)(v < 0.0f ? 0.0f : v > 255.0f ? 255.0f : v);
    }
}

/* ---- resampling ---- */
/* Area-weighted resample to (nw, nh); RGBA averaged on premultiplied colour. */
int sp_image_resize(const sp_image *src, int nw, int nh, sp_image *dst) {
    if (nw <= 0 || nh <= 0) return sp_error("cannot resize an image to %dx%d", nw, nh);
    int w = src->width, h = src->height, c = src->channels;
    memset(dst, 0, sizeof *dst);
    dst->width = nw;
    dst->height = nh;
    dst->channels = c;
    dst->pixels = sp_malloc((size_t)nw * nh * c);
    double sx = (double)w / nw, sy = (double)h / nh;
    int alpha = c == 4;
    for (int y = 0; y < nh; y++) {
        double y0 = y * sy, y1 = (y + 1) * sy;
        for (int x = 0; x < nw; x++) {
            double x0 = x * sx, x1 = (x + 1) * sx;
            double acc[4] = {0, 0, 0, 0}, wsum = 0;
            for (int yy = (int)y0; yy < h && yy < y1; yy++) {
                double wy = fmin(y1, yy + 1) - fmax(y0, yy);
                if (wy <= 0) continue;
                for (int xx = (int)x0; xx < w && xx < x1; xx++) {
                    double wx = fmin(x1, xx + 1) - fmax(x0, xx);
                    if (wx <= 0) continue;
                    const uint8_t *p = src->pixels + ((size_t)yy * w + xx) * c;
                    double wt = wx * wy, a = alpha ? p[3] / 255.0 : 1.0;
                    for (int k = 0; k < c; k++) acc[k] += wt * (alpha && k < 3 ? p[k] * a : p[k]);
                    wsum += wt;
                }
            }
            uint8_t *o = dst->pixels + ((size_t)y * nw + x) * c;
            double a = alpha ? acc[3] / wsum / 255.0 : 1.0;
            for (int k = 0; k < c; k++) {
                double v = acc[k] / wsum;
                if (alpha && k < 3) v = a > 0 ? v / a : 0;
                o[k] = (uint8_t)fmin(255.0, fmax(0.0, v + 0.5));
            }
        }
    }
    return 0;
}

int sp_image_downscale(const sp_image *src, int factor, sp_image *dst) {
    if (factor < 1) return sp_error("downscale factor must be >= 1, got %d", factor);
    int nw = src->width / factor, nh = src->height / factor;
    if (nw < 1 || nh < 1) return sp_error("image of %dx%d is too small to downscale by %d", src->width, src->height, factor);
    return sp_image_resize(src, nw, nh, dst);
}

void sp_image_free(sp_image *img) {
    free(img->pixels);
    memset(img, 0, sizeof *img);
}
