/* pyramid.h — downscaled copies of the training views for progressive resolution
 * (trainer.coarse_scale): level j holds every training view at 1/2^j of its size, made the way
 * the loader's data.downscale makes them, so a step can train on a coarse level through the
 * ordinary backend interface (the levels are uploaded as extra views). */
#ifndef SPLAT_PYRAMID_H
#define SPLAT_PYRAMID_H

#include "scene/dataset.h"

/* dst = src at 1/factor of its size: pixels through sp_image_downscale (area-weighted, RGBA
 * averaged on premultiplied colour, floor(w / factor) x floor(h / factor)), intrinsics through
 * sp_camera_resize (fx, cx scaled by the width ratio, fy, cy by the height ratio: with pixel (i, j)
 * covering [i, i+1) x [j, j+1), a point keeps its place in the image). dst owns its pixels, name
 * and path. Returns -1 (error naming the view) when the image is too small. */
int sp_view_downscale(const sp_view *src, int factor, sp_view *dst);

typedef struct {
    int levels;      /* 1 + number of coarse levels */
    int n;           /* training views per level */
    sp_view *views;  /* [levels][n]: level 0 is the dataset's views (borrowed), level j is 1/2^j */
} sp_pyramid;

/* Builds levels 1 .. levels-1 from train (which must outlive the pyramid: level 0 shares its
 * pixels). levels = 1 builds nothing new. Uses up to `threads` threads (0 = all cores). */
int sp_pyramid_build(sp_pyramid *p, const sp_split *train, int levels, int threads);
/* Index into p->views of training view `view` at level `level`. */
static inline int sp_pyramid_index(const sp_pyramid *p, int level, int view) { return level * p->n + view; }
void sp_pyramid_free(sp_pyramid *p);

#endif
