/* pyramid.c — downscaled copies of the training views for progressive resolution. Each level is
 * made from the full-resolution view with the loader's own resampling (sp_image_downscale) and
 * camera scaling (sp_camera_resize), so level j equals what data.downscale = 2^j loads wherever
 * the loader resamples the decoded image directly (NeRF-synthetic and pinhole captures; a capture
 * with lens distortion is downscaled before it is undistorted there, after it here). */
#include "core/threads.h"
#include "train/pyramid.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "io/image.h"

/* The size sp_image_downscale gives, or -1 (error naming the view) when it is too small. */
static int check_size(const sp_view *v, int factor) {
    if (factor < 1) return sp_error("downscale factor must be >= 1, got %d", factor);
    if (v->cam.width / factor < 1 || v->cam.height / factor < 1)
        return sp_error("%s: image of %dx%d is too small to train at 1/%d resolution (trainer.coarse_scale)",
                        v->path ? v->path : v->name ? v->name : "training view", v->cam.width, v->cam.height,
                        factor);
    if (!v->pixels) return sp_error("%s: no pixels loaded", v->path ? v->path : "training view");
    return 0;
}

/* The resampling itself, after check_size passed. */
static void downscale_checked(const sp_view *src, int factor, sp_view *dst) {
    sp_image in = {.width = src->cam.width, .height = src->cam.height, .channels = src->channels,
                   .pixels = src->pixels},
             out;
    sp_image_downscale(&in, factor, &out);
    memset(dst, 0, sizeof *dst);
    dst->name = src->name ? sp_strdup(src->name) : NULL;
    dst->path = src->path ? sp_strdup(src->path) : NULL;
    dst->cam = src->cam;
    sp_camera_resize(&dst->cam, out.width, out.height);
    dst->channels = out.channels;
    dst->pixels = out.pixels;
}

int sp_view_downscale(const sp_view *src, int factor, sp_view *dst) {
    if (check_size(src, factor)) return -1;
    downscale_checked(src, factor, dst);
    return 0;
}

int sp_pyramid_build(sp_pyramid *p, const sp_split *train, int levels, int threads) {
    memset(p, 0, sizeof *p);
    if (levels < 1 || levels > 8) return sp_error("progressive resolution: %d levels (1 to 8 allowed)", levels);
    int n = train->n;
    for (int j = 1; j < levels; j++)
        for (int i = 0; i < n; i++)
            if (check_size(&train->views[i], 1 << j)) return -1;
    p->levels = levels;
    p->n = n;
    p->views = SP_NEW(sp_view, (size_t)levels * (n > 0 ? n : 1));
    memcpy(p->views, train->views, (size_t)n * sizeof(sp_view)); /* level 0: borrowed */
    int jobs = (levels - 1) * n;
    int nt = sp_omp_threads_for(threads);
#pragma omp parallel for num_threads(nt) schedule(dynamic)
    for (int k = 0; k < jobs; k++) {
        int j = 1 + k / n, i = k % n;
        downscale_checked(&train->views[i], 1 << j, &p->views[sp_pyramid_index(p, j, i)]);
    }
    return 0;
}

void sp_pyramid_free(sp_pyramid *p) {
    if (p->views)
        for (int k = p->n; k < p->levels * p->n; k++) sp_view_free(&p->views[k]);
    free(p->views);
    memset(p, 0, sizeof *p);
}
