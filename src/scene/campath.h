/* campath.h — camera paths for videos, derived from a dataset's training cameras.
 *
 *   orbit   a full circle around the cameras' focus point (sp_dataset_focus), about their mean up
 *           direction, at their mean height above the focus and mean horizontal distance from it,
 *           starting at the first training camera's azimuth; every frame looks at the focus.
 *   spiral  the LLFF / nerfstudio spiral: two turns of an ellipse around a base pose while moving
 *           back and forth along its view direction, always looking at the focus. The base pose is
 *           the mean pose when the cameras face one way (their mean view direction has length >= 0.9:
 *           forward-facing captures; radii from the 90th percentile of the camera offsets), else the first training camera (radii a tenth
 *           of its distance to the focus).
 *   interp  a smooth path through up to 8 training poses (sorted by azimuth around the focus when
 *           there is one, else in dataset order): Catmull-Rom through the camera centres, slerp
 *           between the rotations; it passes exactly through each key pose.
 * Every frame has the intrinsics and size of the first training camera. Up in the images is the
 * direction most nearly orthogonal to every training camera's image x axis (cameras are rarely
 * rolled), pointing like their image-up vectors. */
#ifndef SPLAT_CAMPATH_H
#define SPLAT_CAMPATH_H

#include "scene/camera.h"
#include "scene/dataset.h"

typedef enum { SP_PATH_ORBIT, SP_PATH_SPIRAL, SP_PATH_INTERP } sp_path_kind;

/* "orbit", "spiral", "interp"; -1 with the error set otherwise. */
int sp_path_kind_parse(const char *name, sp_path_kind *kind);

/* frames >= 1 cameras along the path into out. -1 (error set) when the dataset has no training views. */
int sp_campath_make(const sp_dataset *d, sp_path_kind kind, int frames, sp_camera *out);

/* The orbit's circle: centre = focus + height * up, in the plane orthogonal to up. */
typedef struct {
    float focus[3], up[3];
    float radius, height;
} sp_orbit;
void sp_campath_orbit(const sp_dataset *d, sp_orbit *o);

/* Rotation (world -> camera) of a camera at eye looking at target with world up `up` in the image
 * (x right, y down, z forward); t follows from eye. Intrinsics are left as they are. */
void sp_camera_look_at(sp_camera *cam, const float eye[3], const float target[3], const float up[3]);

/* Interpolation through nkeys key cameras: frame j sits at u = j (nkeys - 1) / (frames - 1) along
 * the keys (frame 0 = key 0, the last frame = the last key). */
void sp_campath_interp(const sp_camera *keys, int nkeys, int frames, sp_camera *out);

#endif
