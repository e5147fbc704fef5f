/* synth.h — a procedural test scene written in the NeRF-synthetic ("blender") layout.
 *
 * A few textured objects (a checkered sphere at the origin, a patterned box, a striped cylinder,
 * a small sphere, a pedestal disc under them; all within radius 1.2 of the origin, world z up)
 * are ray-traced with Lambertian shading, one directional light with shadows, and ambient light.
 * sp_synth_write(dir) produces
 *   dir/transforms_{train,val,test}.json   camera_angle_x + frames {file_path "./train/r_0",
 *                                          transform_matrix: 4x4 camera-to-world, OpenGL axes}
 *   dir/{train,val,test}/r_<i>.png         RGBA, straight alpha, transparent where nothing is hit
 *   (a val or test split of 0 views is not written)
 * Cameras sit on a sphere of radius SP_SYNTH_CAMERA_RADIUS in the upper hemisphere (elevation about
 * 7 to 67 degrees, any azimuth), look at the origin, and keep world z up in the image. Poses depend on
 * (seed, split, index) only, so the three splits see different poses; poses and pixel jitter are
 * a pure function of the options, so equal options give byte-identical files whatever the thread
 * count. */
#ifndef SPLAT_SYNTH_H
#define SPLAT_SYNTH_H

#include <stdint.h>

typedef enum {
    SP_SYNTH_OBJECTS = 0, /* the object group above, NeRF-synthetic layout */
    SP_SYNTH_CAPTURE = 1, /* a large outdoor capture (synth_capture.c, below) */
} sp_synth_scene;

typedef struct {
    sp_synth_scene scene;
    int width, height;               /* image size in pixels */
    int num_train, num_val, num_test; /* views per split (>= 0; at least one view in total) */
    int samples;                     /* jittered samples per pixel (antialiasing, soft alpha edges) */
    uint64_t seed;
} sp_synth_opts;

#define SP_SYNTH_CAMERA_RADIUS 4.0f
#define SP_SYNTH_CAMERA_ANGLE_X 0.6911112070083618 /* horizontal field of view, radians */
#define SP_SYNTH_SCENE_RADIUS 1.2f                 /* every object lies within this of the origin */

/* The object scene: 128x128, 100 / 25 / 25 views, 4 samples, seed 0. */
void sp_synth_defaults(sp_synth_opts *o);

/* The large capture (scene SP_SYNTH_CAPTURE): what a user's outdoor capture is like, for the
 * benchmarks of captures at scale (bench/large.sh). Seven copies of the object group (one at the
 * origin, six on a circle of radius 9) stand on a ground plane (paving near the centre, grass with
 * detail down to a few centimetres further out) under a far dome (a skyline with lit windows, a sky
 * with clouds): fine detail everywhere, so a good model needs millions of Gaussians. Every view
 * (num_train of them; val and test must be 0: the loader holds out every 8th) stands 2.5 to 12
 * units from the origin, 0 to 2.5 above the ground, and looks at the central group, at another
 * group or out to the horizon. The lens has radial-tangential distortion (k1 -0.04, k2 0.008,
 * p1 0.0005, p2 -0.0003; 60 degrees across), applied when rendering, so a loader must remove it.
 * Written as an instant-ngp / nerfstudio capture: dir/transforms.json (fl_x, fl_y, cx, cy, w, h,
 * k1, k2, p1, p2, frames with OpenGL camera-to-world matrices) and dir/images/NNNNN.jpg (RGB,
 * quality 92). 1000 views of 1600x1200 with 1 sample: the defaults of `splat synth --scene
 * capture`. */
void sp_synth_capture_defaults(sp_synth_opts *o);
int sp_synth_write_capture(const char *dir, const sp_synth_opts *o);

/* Writes the scene into dir (created with its parents if missing). Every file is written
 * atomically; the JSON files are written after the images they list. */
int sp_synth_write(const char *dir, const sp_synth_opts *o);

/* Camera-to-world 4x4 (row-major, OpenGL axes) of view `index` of split 0 (train), 1 (val) or
 * 2 (test): exactly the matrix written to the JSON (before its conversion to double). */
void sp_synth_camera_c2w(const sp_synth_opts *o, int split, int index, float c2w[16]);

/* 1 if the ray from o along d (any length) hits an object of the scene: the silhouette the
 * images' alpha channel shows (tests compare the two through the written poses). */
int sp_synth_ray_hits(const float o[3], const float d[3]);

#endif
