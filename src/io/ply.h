/* ply.h — the standard 3D Gaussian Splatting .ply: one `vertex` element whose float properties are
 *   x y z nx ny nz f_dc_0 f_dc_1 f_dc_2 f_rest_0 .. f_rest_{3(K-1)-1} opacity scale_0..2 rot_0..3
 * f_rest is channel-major (all red rest coefficients, then green, then blue); opacity is the
 * logit, scales are log scales, rot is the quaternion (w, x, y, z) as stored. Normals are 0. */
#ifndef SPLAT_PLY_H
#define SPLAT_PLY_H

#include "scene/gaussians.h"

/* Writes the n Gaussians of g as binary little-endian floats, atomically. */
int sp_ply_write(const char *path, const sp_gaussians *g);

/* Reads a 3DGS .ply into g (initialized here; any previous content is not freed). Properties are
 * found by name, in any order; extra properties and elements are ignored. Formats:
 * binary_little_endian, binary_big_endian and ascii; property types: (u)char, (u)short, (u)int,
 * float, double and their int8..float64 aliases. The SH degree follows from the number of f_rest
 * properties (0, 9, 24, 45 -> 0..3). On error g is left empty and the message names the file
 * (and the header line for header problems). */
int sp_ply_read(const char *path, sp_gaussians *g);

#endif
