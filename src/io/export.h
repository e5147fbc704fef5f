/* export.h — a trained model in the files other tools open, and back.
 *
 *   .ply    the standard 3DGS layout (io/ply.h), lossless.
 *   .splat  the 32-byte-per-Gaussian web format: per Gaussian, little-endian
 *             position float32 x3 | scale float32 x3 (linear, exp of the log scale) |
 *             colour uint8 RGBA (RGB = 255 (0.5 + C0 f_dc) clamped, A = 255 sigmoid(opacity)) |
 *             rotation uint8 x4 (w, x, y, z of the normalized quaternion, 128 q + 128 clamped)
 *           sorted by exp(sum of log scales) * sigmoid(opacity), largest first, as web viewers
 *           expect. View-dependent colour (SH degree >= 1) is dropped: the file keeps only DC.
 *   .spz    Niantic's compressed format. Version 3: gzip of a 16-byte header (magic "NGSP",
 *           version, count, SH degree, fractional bits = 12, flags = 0, reserved) and the
 *           streams below, one after the other. Version 4 (the default, what current tools
 *           write): a plain 32-byte header (magic, version 4, count, SH degree, fractional bits,
 *           flags, number of streams, byte offset of the table of streams, 12 reserved bytes),
 *           the table (per stream: compressed and uncompressed size, u64 each), then each
 *           stream as one zstd frame. The streams: positions (24-bit fixed point), alphas (uint8 sigmoid), colours (uint8,
 *           0.15 * 255 * f_dc + 127.5), scales (uint8, 16 (log scale + 10)), rotations
 *           ("smallest three": 2-bit index of the largest component, three 10-bit sign+magnitude
 *           values scaled by 1/sqrt(2)), SH rest coefficients (uint8, 128 x + 128; coefficient
 *           major, RGB inner; 5 bits kept for degree 1, 4 bits for degrees 2 and 3).
 *           Axes: the file carries no axis convention. Current tools (splat-transform 3.x, Spark,
 *           SuperSplat) store the .ply's axes (RDF: x right, y down, z forward) as they are,
 *           and that is the default here both ways. SP_SPZ_AXES_RUB is the spz specification's
 *           RUB (y up, z back), which splat wrote before: a 180-degree rotation about x (y -> -y,
 *           z -> -z, quaternion (w, x, -y, -z), SH coefficients whose basis function is odd in
 *           y·z flip sign), applied on write and undone on read.
 *   .glb    glTF with KHR_gaussian_splatting (io/gltf.c), written only.
 *   .sog    PlayCanvas's SOG (io/sog.c): a zip of meta.json and lossless WebP images, positions
 *           16 bits per axis, rotations 8 bits per component, scales, colours and SH through
 *           k-means codebooks; the .ply's axes. Read also unbundled (meta.json + images).
 *   .compressed.ply  PlayCanvas's chunked, quantized .ply (io/cply.c), read by the .ply reader.
 *
 * Readers fill an sp_gaussians (any previous content is not freed) and name the file in every
 * error; writers are atomic. */
#ifndef SPLAT_EXPORT_H
#define SPLAT_EXPORT_H

#include <stddef.h>
#include <stdint.h>

#include "scene/gaussians.h"

typedef enum { SP_MODEL_UNKNOWN = 0, SP_MODEL_PLY, SP_MODEL_SPLAT, SP_MODEL_SPZ, SP_MODEL_GLB, SP_MODEL_SOG } sp_model_format;

typedef enum { SP_SPZ_AXES_RDF = 0, SP_SPZ_AXES_RUB = 1 } sp_spz_axes;
typedef struct {
    int version;      /* 3 (gzip) or 4 (zstd) */
    sp_spz_axes axes; /* axes of the data in the file */
} sp_spz_options;
sp_spz_options sp_spz_defaults(void); /* version 4, RDF: what current tools write */

/* A format with its options: "ply", "splat", "spz", and for .spz any of ":v3", ":v4", ":rdf",
 * ":rub" after it ("spz:v3:rub"). Names are case-insensitive. */
typedef struct {
    sp_model_format format;
    sp_spz_options spz;
} sp_model_spec;
/* 0, or -1 with an error that names the bad part. */
int sp_model_spec_parse(const char *spec, sp_model_spec *out);
/* Writes g as spec says (atomically). */
int sp_model_write_spec(const char *path, const sp_model_spec *spec, const sp_gaussians *g);
/* Reads a model by its extension; the spec's .spz options (axes) apply to a .spz file. */
int sp_model_read_spec(const char *path, const sp_model_spec *spec, sp_gaussians *g);

/* "ply", "splat", "spz", "glb", "sog" -> format; anything else -> SP_MODEL_UNKNOWN. */
sp_model_format sp_model_format_from_name(const char *name);
/* From the file name's extension (case-insensitive); a name ending in "meta.json" is SOG's
 * unbundled form. */
sp_model_format sp_model_format_from_path(const char *path);
const char *sp_model_format_name(sp_model_format f);

/* Writes g in format f (atomically). */
int sp_model_write(const char *path, sp_model_format f, const sp_gaussians *g);
/* Reads a model: .splat, .spz, .sog (and meta.json) by extension, .ply (or any other name) by the
 * PLY reader, which also reads PlayCanvas's compressed .ply (io/cply.c). */
int sp_model_read(const char *path, sp_gaussians *g);

int sp_splat_write(const char *path, const sp_gaussians *g);
/* .splat -> SH degree 0 (DC from the colour), logit opacity, log scales. */
int sp_splat_read(const char *path, sp_gaussians *g);

/* Defaults: version 4, RDF axes. */
int sp_spz_write(const char *path, const sp_gaussians *g);
int sp_spz_write_opts(const char *path, const sp_gaussians *g, const sp_spz_options *o);
/* Versions 2, 3 (gzip) and 4 (zstd), told apart by the first bytes; RDF axes. */
int sp_spz_read(const char *path, sp_gaussians *g);
int sp_spz_read_opts(const char *path, sp_gaussians *g, sp_spz_axes axes);

/* glTF binary with KHR_gaussian_splatting (io/gltf.c describes the layout); write only. */
int sp_glb_write(const char *path, const sp_gaussians *g);

/* PlayCanvas's SOG (io/sog.c describes the layout): written as one zip (.sog); read from a .sog
 * or from the meta.json of the unbundled form (its images beside it). */
int sp_sog_write(const char *path, const sp_gaussians *g);
int sp_sog_read(const char *path, sp_gaussians *g);

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
