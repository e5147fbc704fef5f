/* checkpoint.h — everything needed to resume a run: step, parameters, Adam moments, the curves
 * so far and the run's clocks. One binary file, written atomically. */
#ifndef SPLAT_CHECKPOINT_H
#define SPLAT_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "core/core.h"
#include "scene/gaussians.h"

/* Growable series of (step, value) pairs. */
typedef struct {
    int n, cap;
    double *x, *y;
} sp_series;

void sp_series_push(sp_series *s, double x, double y);
void sp_series_free(sp_series *s);

#define SP_CURVES 4
enum { SP_CURVE_LOSS, SP_CURVE_GAUSSIANS, SP_CURVE_PSNR, SP_CURVE_SSIM };

typedef struct {
    int step; /* last completed step */
    double train_seconds; /* training time of every session up to this save (steps only) */
    sp_gaussians g, m, v;
    sp_series curves[SP_CURVES];
    char *dataset; /* absolute data.path of the run (malloc'd; NULL: not recorded, version 1) */
    /* Version 3. total_seconds: wall time of every session up to this save; NaN: unknown (a
     * version 1 or 2 file, or a run resumed from one). eval_seconds: (step, training seconds) of
     * each point of the PSNR curve; a NaN value: unknown (read from version 1 or 2: every point). */
    double total_seconds;
    sp_series eval_seconds;
} sp_checkpoint;

/* Largest step a checkpoint may hold (training runs are bounded far below it). */
#define SP_CHECKPOINT_MAX_STEP 1000000000
#define SP_CHECKPOINT_MAX_DATASET 65536

int sp_checkpoint_write(const char *path, const sp_checkpoint *c);
/* The same file written in two parts: sp_checkpoint_write_stores writes the header and the
 * model's three stores (what a save has once the model is read back) and syncs them;
 * sp_checkpoint_write_rest then the curves and clocks and the CRC, and commits the file (the
 * header's step, count, degree and training time are the first part's; the rest's c gives
 * the curves, eval_seconds and total_seconds). On an error either drops the file; a writer that
 * will not be finished is dropped with sp_checkpoint_writer_abort (nothing when not open). */
typedef struct {
    sp_afile af;
    unsigned long crc;
} sp_checkpoint_writer;
int sp_checkpoint_write_stores(sp_checkpoint_writer *w, const char *path, const sp_checkpoint *c);
int sp_checkpoint_write_rest(sp_checkpoint_writer *w, const sp_checkpoint *c);
void sp_checkpoint_writer_abort(sp_checkpoint_writer *w);
/* zlib's CRC-32 of n bytes continuing crc (crc32_z's value), a large buffer's 4 MiB pieces on every
 * core and joined with crc32_combine: a checkpoint's stores are hundreds of MB. */
uint32_t sp_checkpoint_crc32(uint32_t crc, const void *data, size_t n);
/* Reads and checks a checkpoint: every header field (version, step in 0..SP_CHECKPOINT_MAX_STEP,
 * SH degree, curve count) and every count against the bytes the file holds, before anything is
 * allocated, so no allocation exceeds what the file can hold; the checksum (version 2 on); and that
 * every parameter and moment is finite. Older versions read with what they lack as unknown.
 * Errors name the file. */
int sp_checkpoint_read(const char *path, sp_checkpoint *c);
void sp_checkpoint_free(sp_checkpoint *c);

#endif
