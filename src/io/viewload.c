/* viewload.c — decodes one view's pixels from its file (the streaming mode of data.cache_mb), with
 * the loader's own steps: decode, integer downscale, lens undistortion (with the view's lens and
 * crop), RGB to RGBA when the dataset has alpha. */
#include "io/viewload.h"

#include <stdlib.h>

#include "core/core.h"
#include "core/threads.h"
#include "io/image.h"
#include "io/undistort.h"

size_t sp_view_bytes(const sp_view *v) { return (size_t)v->cam.width * v->cam.height * v->channels; }

int sp_view_streamable(const sp_view *v) {
    if (v->channels != 3 && v->channels != 4)
        return sp_error("%s: %d channels (3 or 4 expected)", v->path, v->channels);
    if (v->undistorted && (v->lens.width <= 0 || v->lens.height <= 0 ||
                           v->lens.width - v->crop.left - v->crop.right != v->cam.width ||
                           v->lens.height - v->crop.top - v->crop.bottom != v->cam.height))
        return sp_error("%s: the view's lens (%dx%d, crop %d %d %d %d) does not give its %dx%d image", v->path,
                        v->lens.width, v->lens.height, v->crop.left, v->crop.top, v->crop.right, v->crop.bottom,
                        v->cam.width, v->cam.height);
    return 0;
}

int sp_view_load_pixels(const sp_view *v, uint8_t **pixels) {
    *pixels = NULL;
    if (sp_view_streamable(v)) return -1;
    sp_image img;
    if (sp_image_load(v->path, &img)) return -1;
    if (v->downscale > 1) {
        sp_image small;
        if (sp_image_downscale(&img, v->downscale, &small)) {
            sp_error_prefix("%s", v->path);
            sp_image_free(&img);
            return -1;
        }
        sp_image_free(&img);
        img = small;
    }
    if (v->undistorted) { /* as the loader does: after downscaling, on the decoded channels */
        if (img.width != v->lens.width || img.height != v->lens.height) {
            sp_error("%s: the image is now %dx%d, but was %dx%d when the dataset was loaded (was the file changed "
                     "during training?)", v->path, img.width, img.height, v->lens.width, v->lens.height);
            sp_image_free(&img);
            return -1;
        }
        sp_image u;
        if (sp_undistort_image(&img, &v->lens, &v->crop, &u)) {
            sp_error_prefix("%s", v->path);
            sp_image_free(&img);
            return -1;
        }
        sp_image_free(&img);
        img = u;
    }
    if (img.width != v->cam.width || img.height != v->cam.height ||
        (img.channels != v->channels && !(img.channels == 3 && v->channels == 4))) {
        sp_error("%s: the image is now %dx%d with %d channels, but was %dx%d with %d when the dataset was loaded "
                 "(was the file changed during training?)",
                 v->path, img.width, img.height, img.channels, v->cam.width, v->cam.height, v->channels);
        sp_image_free(&img);
        return -1;
    }
    if (img.channels == 3 && v->channels == 4) { /* the dataset has alpha: opaque RGBA, as the loader does */
        size_t px = (size_t)img.width * img.height;
        uint8_t *q = sp_try_realloc(NULL, px, 4, "a streamed training image", "lower data.cache_mb");
        if (!q) {
            sp_error_prefix("%s", v->path);
            sp_image_free(&img);
            return -1;
        }
        for (size_t i = 0; i < px; i++) {
            q[4 * i + 0] = img.pixels[3 * i + 0];
            q[4 * i + 1] = img.pixels[3 * i + 1];
            q[4 * i + 2] = img.pixels[3 * i + 2];
            q[4 * i + 3] = 255;
        }
        sp_image_free(&img);
        *pixels = q;
        return 0;
    }
    *pixels = img.pixels;
    return 0;
}

int sp_split_load_pixels(sp_split *s, int threads) {
    int first_bad = s->n;
    char why[2048] = "";
    threads = sp_omp_threads_for(threads);
#pragma omp parallel for num_threads(threads) schedule(dynamic)
    for (int i = 0; i < s->n; i++) {
        sp_view *v = &s->views[i];
        if (v->pixels || sp_view_load_pixels(v, &v->pixels) == 0) continue;
#pragma omp critical(sp_split_load_pixels)
        if (i < first_bad) {
            first_bad = i;
            snprintf(why, sizeof why, "%s", sp_last_error()); /* this thread's error */
        }
    }
    return first_bad == s->n ? 0 : sp_error("%s", why);
}
