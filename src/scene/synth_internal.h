/* synth_internal.h — what the two procedural scenes share (synth.c: the object group in the
 * NeRF-synthetic layout; synth_capture.c: the same objects in a large outdoor capture): small
 * vector helpers, the light, and the object group as a shading function. */
#ifndef SPLAT_SYNTH_INTERNAL_H
#define SPLAT_SYNTH_INTERNAL_H

#include <cjson/cJSON.h>
#include <math.h>

#include "io/image.h"

#define PI_F 3.14159265358979f
#define AMBIENT 0.35f
#define DIFFUSE 0.65f

static inline float dot3(const float a[3], const float b[3]) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }
static inline void normalize3(float v[3]) {
    float l = sqrtf(dot3(v, v));
    if (l > 0.0f) v[0] /= l, v[1] /= l, v[2] /= l;
}
static inline void cross3(const float a[3], const float b[3], float o[3]) {
    o[0] = a[1] * b[2] - a[2] * b[1];
    o[1] = a[2] * b[0] - a[0] * b[2];
    o[2] = a[0] * b[1] - a[1] * b[0];
}
static inline int parity(float x) { return (int)floorf(x) & 1; }

/* The direction towards the light, normalized. */
void sp_synth_light(float L[3]);
/* The object group centred at the origin (world z up, within SP_SYNTH_SCENE_RADIUS; the bottom of
 * its pedestal at z = SP_SYNTH_GROUND_Z): 1 and the shaded colour (ambient plus the light, with
 * the group's own shadows) and distance along d of the first surface the ray meets, else 0. */
int sp_synth_objects_shade(const float o[3], const float d[3], float col[3], float *t);
#define SP_SYNTH_GROUND_Z (-0.57f)

/* Writing a scene: a frame {file_path, transform_matrix m (4x4, row-major)} added to frames; n
 * images saved in parallel (4 channels: PNG, 3: JPEG of jpeg_quality), -1 with the first error;
 * root written as JSON to path atomically (pretty: indented). */
void sp_synth_add_frame(cJSON *frames, const char *file_path, const float m[16]);
int sp_synth_save_images(char *const *paths, const sp_image *imgs, int n, int jpeg_quality);
int sp_synth_write_json(cJSON *root, const char *path, int pretty);

#endif
