/* sanity.h — the limits every dataset loader applies to the cameras it reads (Blender and
 * nerfstudio JSON, COLMAP binary and text), so that an absurd number in a file is reported
 * with the file (and frame or line) instead of surfacing later as a non-finite value in
 * training. Each check returns 0, or -1 after writing the reason (no location) into why. */
#ifndef SPLAT_SANITY_H
#define SPLAT_SANITY_H

#include <stddef.h>

#define SP_MAX_COORD 1e6     /* camera positions, translations and points: |x| <= 1e6 scene units */
#define SP_MAX_FOCAL 1e7     /* focal lengths in pixels */
#define SP_MAX_PRINCIPAL 1e6 /* |cx|, |cy| in pixels */
#define SP_RIGID_TOL 1e-3    /* |R^T R - I| and |det R - 1| for a rotation read from a file */
#define SP_MIN_ANGLE 1e-4    /* field of view in radians: (SP_MIN_ANGLE, SP_MAX_ANGLE) */
#define SP_MAX_ANGLE 3.1

/* A 4x4 camera-to-world matrix (row-major): finite, rotation part orthonormal with determinant
 * +1 (within SP_RIGID_TOL), bottom row 0 0 0 1, translation within SP_MAX_COORD. */
int sp_check_c2w(const double m[16], char *why, size_t n);
/* A rotation matrix (row-major 3x3) and translation, as above. */
int sp_check_rotation(const double R[9], char *why, size_t n);
int sp_check_translation(const double t[3], const char *what, char *why, size_t n);
/* A focal length in pixels: finite, > 0, at most SP_MAX_FOCAL. `what` names it ("fl_x"). */
int sp_check_focal(double f, const char *what, char *why, size_t n);
/* A field of view in radians. */
int sp_check_angle(double a, const char *what, char *why, size_t n);
/* A principal point coordinate. */
int sp_check_principal(double c, const char *what, char *why, size_t n);
/* An image size: whole numbers from 1 to SP_IMAGE_MAX_SIDE. */
int sp_check_image_size(double w, double h, char *why, size_t n);
/* A 3D point: finite, within SP_MAX_COORD. */
int sp_check_point(const double x[3], char *why, size_t n);

#endif
