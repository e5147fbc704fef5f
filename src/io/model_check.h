/* model_check.h — the rules every model reader (.ply, .splat, .spz) applies alike, so that no
 * format loses or invents data silently:
 *   - the input must be a regular file (not a directory, FIFO or device), named in the error;
 *   - every buffer whose size comes from the file is allocated fallibly: out of memory is an
 *     error naming the file, never an abort;
 *   - a model with no Gaussians is refused;
 *   - a non-finite value (NaN, +-inf) in any parameter, or a zero quaternion (no rotation can be
 *     made of it), refuses the whole file, naming the first Gaussian and parameter at fault.
 * docs/formats.md ("What every reader checks") says the same for users. */
#ifndef SPLAT_MODEL_CHECK_H
#define SPLAT_MODEL_CHECK_H

#include <stdio.h>
#include <sys/types.h>

#include "scene/gaussians.h"

/* Opens path for binary reading after checking it is a regular file; *size is its length. */
int sp_model_open(const char *path, FILE **f, off_t *size);
/* The whole regular file into a fallibly allocated buffer (NUL-terminated; *n excludes it). */
int sp_model_read_bytes(const char *path, char **data, size_t *n);
/* sp_gaussians_try_init whose out-of-memory error names path. */
int sp_model_alloc(const char *path, sp_gaussians *g, int n, int sh_degree);
/* sp_try_alloc whose error names path; `what` says what the buffer holds. */
void *sp_model_buffer(const char *path, size_t count, size_t size, const char *what);
/* The rules above on a model just read: 0, or -1 with the error set and g freed. */
int sp_model_check(const char *path, sp_gaussians *g);

#endif
