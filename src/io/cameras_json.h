/* cameras_json.h — the run folder's cameras.json in the layout of the original 3DGS code, which
 * viewers such as SIBR read beside point_cloud/iteration_N/point_cloud.ply: a JSON array with one
 * object per camera,
 *   {"id": i, "img_name": image name without folder or extension, "width": W, "height": H,
 *    "position": camera centre in world space [3],
 *    "rotation": camera-to-world rotation [3][3] (rows; its columns are the camera's x right,
 *                y down and z forward axes in world space, OpenCV convention),
 *    "fy": focal length in pixels, "fx": focal length in pixels}
 * Cameras are listed test first, then val, then train (the original lists held-out views first). */
#ifndef SPLAT_CAMERAS_JSON_H
#define SPLAT_CAMERAS_JSON_H

#include "scene/dataset.h"

/* Writes cameras.json for every view of d, atomically. */
int sp_cameras_json_write(const char *path, const sp_dataset *d);

#endif
