/* image.h — 8-bit image files: PNG (libpng) and JPEG (libjpeg-turbo) decode and encode,
 * box-filter downscale. Pixels are row-major, top row first, channels interleaved. */
#ifndef SPLAT_IMAGE_H
#define SPLAT_IMAGE_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    int width, height, channels; /* channels: 1, 2, 3 or 4 */
    uint8_t *pixels;
} sp_image;

/* The largest image splat decodes, PNG and JPEG alike: at most SP_IMAGE_MAX_SIDE pixels a side
 * and SP_IMAGE_MAX_PIXELS pixels in all (268 megapixels, 805 MB as RGB). The size is checked
 * from the file's header, before any pixel memory is allocated, so a small file that claims
 * to be huge costs nothing. */
#define SP_IMAGE_MAX_SIDE 32768
#define SP_IMAGE_MAX_PIXELS (1LL << 28)

/* Decodes PNG or JPEG (chosen by content, not by extension). 16-bit PNGs are reduced to 8 bits,
 * palette and grey images expanded to RGB(A). JPEG EXIF orientation is applied.
 * Errors name the path: "scene/train/r_3.png: not a PNG or JPEG file". */
int sp_image_load(const char *path, sp_image *img);
/* The same from n bytes in memory; `name` prefixes errors; images of more than max_pixels
 * pixels (or with a side over SP_IMAGE_MAX_SIDE) are rejected before decoding. */
int sp_image_decode(const char *name, const uint8_t *data, size_t n, long long max_pixels, sp_image *img);
/* Size and channel count (3 or 4, as sp_image_load would return them, EXIF orientation applied)
 * from the file's header only, without decoding pixels. Errors name the path. */
int sp_image_probe(const char *path, int *width, int *height, int *channels);
/* The same from n bytes in memory; `path` prefixes errors. */
int sp_image_probe_mem(const char *path, const uint8_t *data, size_t n, int *width, int *height, int *channels);
/* Writes an 8-bit PNG atomically. channels 1, 3 or 4. */
int sp_image_save_png(const char *path, const sp_image *img);
/* RGB (w*h*3) as a baseline JPEG in *out (malloc'd, *n bytes; quality 1..100, no chroma subsampling
 * from 90 up); -1 on failure (nothing allocated). */
int sp_image_encode_jpeg(const uint8_t *rgb, int w, int h, int quality, unsigned char **out, unsigned long *n);
/* Writes an RGB image as a JPEG atomically; errors name the path. */
int sp_image_save_jpeg(const char *path, const sp_image *img, int quality);
/* Float RGB [h][w][3] in [0,1] -> 8-bit (round to nearest, clamped). */
void sp_image_quantize(const float *rgb, int w, int h, uint8_t *out);
/* Box-filter downscale by an integer factor (area average; for RGBA on premultiplied colour). */
int sp_image_downscale(const sp_image *src, int factor, sp_image *dst);
/* Resample to an exact size (area/bilinear); used when a dataset's image is not an integer
 * multiple of the target size. */
int sp_image_resize(const sp_image *src, int w, int h, sp_image *dst);
void sp_image_free(sp_image *img);

#endif
