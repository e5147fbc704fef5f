/* camera.h — a pinhole camera in OpenCV axes (x right, y down, z forward).
 * Pixel (i, j) covers [i, i+1) x [j, j+1); its centre is (i + 0.5, j + 0.5). A world point X
 * maps to camera space x = R X + t and to pixels (fx x/z + cx, fy y/z + cy). Lens distortion is
 * removed from images on load, so every backend renders an ideal pinhole. */
#ifndef SPLAT_CAMERA_H
#define SPLAT_CAMERA_H

typedef struct {
    int width, height;
    float fx, fy, cx, cy;
    float R[9]; /* world -> camera rotation, row-major */
    float t[3]; /* world -> camera translation */
} sp_camera;

/* Intrinsics of one photo at size width x height (pixel centres at i + 0.5), and the OpenCV
 * distortion of normalized coordinates (x, y) = ((u - cx) / fx, (v - cy) / fy):
 *   r2 = x² + y²,  d = 1 + k1 r2 + k2 r2² + k3 r2³
 *   xd = x d + 2 p1 x y + p2 (r2 + 2 x²),   yd = y d + p1 (r2 + 2 y²) + 2 p2 x y
 * (io/undistort.h removes it from images). */
typedef struct {
    int width, height;
    double fx, fy, cx, cy;
    double k1, k2, k3, p1, p2;
} sp_lens;

/* Pixels removed from each side of an undistorted image: left, top, right, bottom. */
typedef struct {
    int left, top, right, bottom;
} sp_crop;

/* Camera centre in world space: -R^T t. */
void sp_camera_center(const sp_camera *cam, float c[3]);
/* From a camera-to-world 4x4 (row-major) in OpenGL/Blender axes (x right, y up, z backward):
 * flips the y and z columns, then inverts. Intrinsics are left untouched. */
void sp_camera_set_c2w_opengl(sp_camera *cam, const float c2w[16]);
/* From a camera-to-world 4x4 (row-major) already in OpenCV axes. */
void sp_camera_set_c2w_opencv(sp_camera *cam, const float c2w[16]);
/* Scale intrinsics and size by (new_w / width, new_h / height). */
void sp_camera_resize(sp_camera *cam, int new_w, int new_h);

#endif
