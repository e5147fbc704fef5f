/* export.h — a trained model in the files other tools open, and back.
 *
 *   .ply    the standard 3DGS layout (io/ply.h), lossless.
 *   .splat  the 32-byte-per-Gaussian web format: per Gaussian, little-endian
 *             position float32 x3 | scale float32 x3 (linear, exp of the log scale) |
 *             colour uint8 RGBA (RGB = 255 (0.5 + C0 f_dc) clamped, A = 255 sigmoid(opacity)) |
 *             rotation uint8 x4 (w, x, y, z of the normalized quaternion, 128 q + 128 clamped)
 *           sorted by exp(sum of log scales) * sigmoid(opacity), largest first, as web viewers
 *           expect. View-dependent colour (SH degree >= 1) is dropped: the file keeps only DC.
 *   .spz    Niantic's compressed format, version 3: gzip of a 16-byte header (magic "NGSP",
 *           version, count, SH degree, fractional bits = 12, flags = 0, reserved) and the
 *           streams positions (24-bit fixed point), alphas (uint8 sigmoid), colours (uint8,
 *           0.15 * 255 * f_dc + 127.5), scales (uint8, 16 (log scale + 10)), rotations
 *           ("smallest three": 2-bit index of the largest component, three 10-bit sign+magnitude
 *           values scaled by 1/sqrt(2)), SH rest coefficients (uint8, 128 x + 128; coefficient
 *           major, RGB inner; 5 bits kept for degree 1, 4 bits for degrees 2 and 3).
 *           Axes: spz defines its data in RUB (x right, y up, z back); splat's models live in
 *           the 3DGS .ply convention (RDF: y down, z forward), so the writer rotates 180 degrees
 *           about x (y -> -y, z -> -z, quaternion (w, x, -y, -z), SH coefficients whose basis
 *           function is odd in y·z flip sign) and the reader rotates back.
 *
 * Readers fill an sp_gaussians (any previous content is not freed) and name the file in every
 * error; writers are atomic. */
#ifndef SPLAT_EXPORT_H
#define SPLAT_EXPORT_H

#include <stddef.h>
#include <stdint.h>

#include "scene/gaussians.h"

typedef enum { SP_MODEL_UNKNOWN = 0, SP_MODEL_PLY, SP_MODEL_SPLAT, SP_MODEL_SPZ } sp_model_format;

/* "ply", "splat", "spz" -> format; anything else -> SP_MODEL_UNKNOWN. */
sp_model_format sp_model_format_from_name(const char *name);
/* From the file name's extension (case-insensitive). */
sp_model_format sp_model_format_from_path(const char *path);
const char *sp_model_format_name(sp_model_format f);

/* Writes g in format f (atomically). */
int sp_model_write(const char *path, sp_model_format f, const sp_gaussians *g);
/* Reads a model: .splat and .spz by extension, .ply (or any other name) by the PLY reader. */
int sp_model_read(const char *path, sp_gaussians *g);

int sp_splat_write(const char *path, const sp_gaussians *g);
/* .splat -> SH degree 0 (DC from the colour), logit opacity, log scales. */
int sp_splat_read(const char *path, sp_gaussians *g);

int sp_spz_write(const char *path, const sp_gaussians *g);
int sp_spz_read(const char *path, sp_gaussians *g);

/* Sign of SH coefficient k (1..15, 3DGS order) under the RDF <-> RUB change of axes. */
float sp_spz_sh_flip(int k);

/* An 8-bit alpha as a probability: a / 255, with 0 and 255 moved half a step inwards (they have
 * no finite logit). */
static inline float sp_alpha_from_u8(uint8_t a) {
    return a == 0 ? 0.5f / 255.0f : a == 255 ? 254.5f / 255.0f : a / 255.0f;
}

/* Snapshot in the original 3DGS run layout: RUN/point_cloud/iteration_STEP/point_cloud.ply. */
int sp_snapshot_write(const char *run_dir, int step, const sp_gaussians *g);

#endif
