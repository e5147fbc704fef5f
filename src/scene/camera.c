/* camera.c — pinhole camera helpers: centres, axis conventions, resizing. */
#include "scene/camera.h"

void sp_camera_center(const sp_camera *cam, float c[3]) {
    const float *R = cam->R, *t = cam->t;
    for (int i = 0; i < 3; i++) c[i] = -(R[0 * 3 + i] * t[0] + R[1 * 3 + i] * t[1] + R[2 * 3 + i] * t[2]);
}

void sp_camera_set_c2w_opencv(sp_camera *cam, const float m[16]) {
    /* R_w2c = R_c2w^T, t = -R_w2c * centre */
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) cam->R[i * 3 + j] = m[j * 4 + i];
    float c[3] = {m[3], m[7], m[11]};
    for (int i = 0; i < 3; i++)
        cam->t[i] = -(cam->R[i * 3 + 0] * c[0] + cam->R[i * 3 + 1] * c[1] + cam->R[i * 3 + 2] * c[2]);
}

void sp_camera_set_c2w_opengl(sp_camera *cam, const float m[16]) {
    float cv[16];
    for (int i = 0; i < 16; i++) cv[i] = m[i];
    for (int r = 0; r < 3; r++) {
        cv[r * 4 + 1] = -m[r * 4 + 1];
        cv[r * 4 + 2] = -m[r * 4 + 2];
    }
    sp_camera_set_c2w_opencv(cam, cv);
}

void sp_camera_resize(sp_camera *cam, int new_w, int new_h) {
    float sx = (float)new_w / (float)cam->width, sy = (float)new_h / (float)cam->height;
    cam->fx *= sx;
    cam->cx *= sx;
    cam->fy *= sy;
    cam->cy *= sy;
    cam->width = new_w;
    cam->height = new_h;
}
