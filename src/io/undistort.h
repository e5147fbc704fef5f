/* undistort.h — lens distortion (OpenCV radial-tangential model) and the step shared by the
 * captured-scene loaders (COLMAP, transforms.json) that turns photos into ideal pinhole views.
 *
 * Distortion is removed once, on load: each photo is resampled so that it obeys the pinhole
 * projection of a camera with the SAME focal lengths, whose image is cropped by a few pixels
 * at the borders so that every output pixel has a source (no invented or transparent pixels).
 * The cropped camera keeps fx, fy; its principal point moves by the left/top margins.
 * docs/datasets.md explains the choice. */
#ifndef SPLAT_UNDISTORT_H
#define SPLAT_UNDISTORT_H

#include "io/image.h"
#include "io/loader.h"

/* sp_lens (intrinsics and OpenCV distortion of one photo) and sp_crop are in scene/camera.h: a
 * view keeps them to undistort a streamed image as the loader does (io/viewload.h). */

/* True when all distortion coefficients are zero. */
int sp_lens_is_pinhole(const sp_lens *l);
/* Forward model on normalized coordinates. */
void sp_lens_distort(const sp_lens *l, double x, double y, double *xd, double *yd);
/* Inverse of sp_lens_distort by Newton iteration; -1 (with sp_error) if it does not converge. */
int sp_lens_undistort_point(const sp_lens *l, double xd, double yd, double *x, double *y);
/* Smallest border crop such that every pixel centre of the undistorted image (same fx, fy,
 * cx, cy, size) maps inside the distorted source, where the model is locally invertible.
 * -1 with sp_error when more than half the image would be lost (coefficients do not fit the
 * image). A pinhole lens gives a zero crop. */
int sp_undistort_crop(const sp_lens *l, sp_crop *crop);
/* Resamples src (l->width x l->height, any channel count) into the undistorted image of size
 * (width - left - right) x (height - top - bottom): for each output pixel centre the forward
 * model gives the source position, sampled bilinearly (on premultiplied colour for RGBA).
 * The output camera is (fx, fy, cx - left, cy - top). */
int sp_undistort_image(const sp_image *src, const sp_lens *l, const sp_crop *crop, sp_image *dst);

/* One view of a captured scene before its pixels are loaded, as colmap.c and nstransforms.c
 * describe it to sp_capture_load. */
typedef struct {
    char *name;      /* as the dataset names it; views are sorted by it */
    char *path;      /* image file */
    char *where;     /* prefix for problems about this view ("fox/transforms.json: frame 3") */
    int downscale;   /* integer factor applied after decoding (1: none) */
    /* Intrinsics at lens.width x lens.height. lens.width == 0: the decoded image's own size;
     * then NAN fx / fy / cx / cy are derived from angle_x / angle_y (NAN if absent) and the
     * image centre. */
    sp_lens lens;
    double angle_x, angle_y;
    float R[9], t[3]; /* world -> camera, OpenCV axes */
} sp_capture_view;

/* Decodes every view (opts->threads), scales its intrinsics by the ratio of the decoded size
 * to lens size (a different aspect ratio is a problem), removes distortion with one crop per
 * image size, sorts by name, splits by opts->holdout_every (index % holdout_every == 0 goes to
 * "test"), and fills out->train/test, has_alpha, center/extent and the init box (bounding box
 * of out->points when the caller set them, else centre ± extent). Takes ownership of the
 * views' strings. Returns 0, or -1 after adding every problem found. */
int sp_capture_load(sp_dataset *out, sp_capture_view *views, int n, const sp_load_opts *opts,
                    sp_problems *problems);
void sp_capture_view_free(sp_capture_view *v);

#endif
