/* sanity.c — the camera and point limits declared in sanity.h. */
#include "io/sanity.h"

#include <math.h>
#include <stdio.h>

#include "io/image.h"

static int fail(char *why, size_t n, const char *msg) {
    snprintf(why, n, "%s", msg);
    return -1;
}

int sp_check_rotation(const double R[9], char *why, size_t n) {
    for (int i = 0; i < 9; i++)
        if (!isfinite(R[i])) return fail(why, n, "rotation is not finite");
    double worst = 0;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            double d = 0;
            for (int k = 0; k < 3; k++) d += R[k * 3 + i] * R[k * 3 + j];
            worst = fmax(worst, fabs(d - (i == j)));
        }
    if (worst > SP_RIGID_TOL) {
        snprintf(why, n, "rotation part is not a rotation (columns not orthonormal: off by %.3g, tolerance %g)", worst,
                 SP_RIGID_TOL);
        return -1;
    }
    double det = R[0] * (R[4] * R[8] - R[5] * R[7]) - R[1] * (R[3] * R[8] - R[5] * R[6]) +
                 R[2] * (R[3] * R[7] - R[4] * R[6]);
    if (fabs(det - 1) > SP_RIGID_TOL) return fail(why, n, "rotation part is a reflection (determinant -1)");
    return 0;
}

int sp_check_translation(const double t[3], const char *what, char *why, size_t n) {
    for (int i = 0; i < 3; i++)
        if (!isfinite(t[i]) || fabs(t[i]) > SP_MAX_COORD) {
            snprintf(why, n, "%s (%g, %g, %g) is not finite or beyond %g", what, t[0], t[1], t[2], SP_MAX_COORD);
            return -1;
        }
    return 0;
}

int sp_check_c2w(const double m[16], char *why, size_t n) {
    for (int i = 0; i < 16; i++)
        if (!isfinite(m[i])) return fail(why, n, "transform_matrix is not finite");
    double R[9] = {m[0], m[1], m[2], m[4], m[5], m[6], m[8], m[9], m[10]}, t[3] = {m[3], m[7], m[11]};
    if (fabs(m[12]) > SP_RIGID_TOL || fabs(m[13]) > SP_RIGID_TOL || fabs(m[14]) > SP_RIGID_TOL ||
        fabs(m[15] - 1) > SP_RIGID_TOL)
        return fail(why, n, "transform_matrix: bottom row is not 0 0 0 1");
    char sub[200];
    if (sp_check_rotation(R, sub, sizeof sub)) {
        snprintf(why, n, "transform_matrix: %s", sub);
        return -1;
    }
    return sp_check_translation(t, "transform_matrix: camera position", why, n);
}

int sp_check_focal(double f, const char *what, char *why, size_t n) {
    if (isfinite(f) && f > 0 && f <= SP_MAX_FOCAL) return 0;
    snprintf(why, n, "%s %g is not a focal length in pixels (finite, > 0, at most %g)", what, f, SP_MAX_FOCAL);
    return -1;
}

int sp_check_angle(double a, const char *what, char *why, size_t n) {
    if (isfinite(a) && a > SP_MIN_ANGLE && a < SP_MAX_ANGLE) return 0;
    snprintf(why, n, "%s %g is not a field of view in radians (between %g and %g)", what, a, SP_MIN_ANGLE,
             SP_MAX_ANGLE);
    return -1;
}

int sp_check_principal(double c, const char *what, char *why, size_t n) {
    if (isfinite(c) && fabs(c) <= SP_MAX_PRINCIPAL) return 0;
    snprintf(why, n, "%s %g is not a pixel position (finite, at most %g in size)", what, c, SP_MAX_PRINCIPAL);
    return -1;
}

int sp_check_image_size(double w, double h, char *why, size_t n) {
    if (w >= 1 && h >= 1 && w <= SP_IMAGE_MAX_SIDE && h <= SP_IMAGE_MAX_SIDE && w == floor(w) && h == floor(h))
        return 0;
    snprintf(why, n, "image size %gx%g is not whole numbers of pixels from 1 to %d", w, h, SP_IMAGE_MAX_SIDE);
    return -1;
}

int sp_check_point(const double x[3], char *why, size_t n) {
    return sp_check_translation(x, "position", why, n);
}
