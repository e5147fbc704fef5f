/* dataset.h — a loaded scene: posed views per split, optional sparse points, scene extent.
 * Loaders (io/blender.c, io/colmap.c, io/nstransforms.c) fill it; training and eval read it. */
#ifndef SPLAT_DATASET_H
#define SPLAT_DATASET_H

#include <stdint.h>

#include "scene/camera.h"

typedef struct {
    char *name;      /* as named by the dataset (file_path / image name) */
    char *path;      /* resolved image file path */
    sp_camera cam;   /* intrinsics already scaled to the loaded (downscaled) size */
    int channels;    /* 3 (RGB) or 4 (RGBA, straight alpha unless the config says otherwise) */
    uint8_t *pixels; /* cam.width * cam.height * channels, row-major, top row first; NULL when the
                        dataset was loaded without pixels (data.cache_mb streams them: io/viewload.h) */
    int downscale;   /* the file is decoded at 1/downscale of its size to give cam's size */
    int undistorted; /* the pixels were resampled to remove lens distortion (or cropped) on load */
    sp_lens lens;    /* undistorted: the photo's lens at the decoded (downscaled) size, and the crop; */
    sp_crop crop;    /* a streamed image is undistorted with them exactly as the loader does */
} sp_view;

typedef struct {
    sp_view *views;
    int n;
} sp_split;

typedef struct {
    char *path;   /* dataset directory */
    char *format; /* "blender", "colmap", "transforms" */
    sp_split train, val, test;
    int has_alpha;
    /* Scene extent as in 3DGS: centre = mean camera centre of the training views,
     * extent = 1.1 * max distance of a training camera centre from it. */
    float center[3], extent;
    /* Box for random initialization (world space); init_by_views: weight random points by how many
     * training cameras see them (captured scenes, sp_init_random). */
    float init_min[3], init_max[3];
    int init_by_views;
    /* Optional sparse points (COLMAP points3D, ...) for initialization. */
    int num_points;
    float *points;         /* [num_points][3] */
    uint8_t *point_colors; /* [num_points][3] */
} sp_dataset;

/* How an RGBA image's colour relates to its alpha (docs/math.md, "loss"). */
typedef enum { SP_ALPHA_STRAIGHT = 0, SP_ALPHA_PREMULTIPLIED = 1 } sp_alpha_mode;

/* The view's image composited on a background, as float RGB [h][w][3] in [0, 1]. RGB images are
 * returned as they are. This is the training target and the evaluation ground truth. */
void sp_view_composite(const sp_view *v, sp_alpha_mode alpha, const float bg[3], float *rgb);

/* Which split of a dataset a name refers to: "train", "val", "test"; NULL if unknown. */
sp_split *sp_dataset_split(sp_dataset *d, const char *name);
/* Fills center/extent from the training cameras. */
void sp_dataset_compute_extent(sp_dataset *d);
/* The point the training cameras look at: least-squares intersection of their optical axes, and
 * the mean camera distance to it. Returns -1 (focus untouched) when the axes are close to parallel
 * or the point lies behind half of the cameras, as in forward-facing captures. */
int sp_dataset_focus(const sp_dataset *d, float focus[3], float *mean_dist);
void sp_view_free(sp_view *v);
void sp_dataset_free(sp_dataset *d);

#endif
