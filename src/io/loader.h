/* loader.h — dataset loaders behind one entry point. Formats:
 *   blender    : transforms_{train,val,test}.json (NeRF-synthetic)          io/blender.c
 *   colmap     : sparse/0/{cameras,images,points3D}.{bin,txt} + images/     io/colmap.c
 *   transforms : nerfstudio / instant-ngp transforms.json                   io/nstransforms.c
 * Every loader fills an sp_dataset (scene/dataset.h) with views whose intrinsics match the
 * loaded (downscaled, undistorted) pixels, and reports every problem with the file it concerns. */
#ifndef SPLAT_LOADER_H
#define SPLAT_LOADER_H

#include "core/core.h"
#include "scene/dataset.h"

typedef struct {
    int downscale;      /* integer factor >= 1 applied on load */
    int threads;        /* image decoding threads (0 = all cores) */
    int load_pixels;    /* 0: cameras and sizes only (check) */
    int header_only;    /* with load_pixels 0: sizes from each image's header, no decoding (data.cache_mb
                           streams the pixels later); else every image is decoded and checked */
    const char *images; /* colmap: image folder name ("" = "images", or images_<downscale> if present) */
    int holdout_every;  /* colmap/transforms: every Nth image is held out as "test" (0 = none) */
    int allow_outside_images; /* 0: an image path that is absolute or whose lexically normalized form
                                 leaves the dataset folder ("../x") is a problem (symlinks inside the
                                 folder are followed, not checked); 1: allowed */
} sp_load_opts;

/* The image path check every loader applies (see allow_outside_images) and the UTF-8 check: 0 when
 * name is fine, else a problem "WHERE: KEY \"NAME\" ..." is added and -1 returned. */
int sp_check_image_name(const char *where, const char *key, const char *name, const sp_load_opts *opts,
                        sp_problems *problems);

/* format: "auto", "blender", "colmap", "transforms". Problems are added to `problems` (every one
 * found); returns 0 when the dataset is usable. */
int sp_dataset_load(const char *path, const char *format, const sp_load_opts *opts, sp_dataset *out,
                    sp_problems *problems);
/* The format "auto" resolves to for path, or NULL with sp_error set. */
const char *sp_dataset_detect(const char *path);

int sp_load_blender(const char *path, const sp_load_opts *opts, sp_dataset *out, sp_problems *problems);
int sp_load_colmap(const char *path, const sp_load_opts *opts, sp_dataset *out, sp_problems *problems);
int sp_load_transforms(const char *path, const sp_load_opts *opts, sp_dataset *out, sp_problems *problems);

#endif
