/* dist.h — what data-parallel training needs before NCCL: the device list of backend.devices,
 * this process's place among several (rank, world size, local rank and the id file, which the
 * program gives through the public API: the library reads no environment) and the exchange of
 * the NCCL unique id through a shared file. Plain C, no NCCL: unit-tested on machines without
 * GPUs (tests/test_dist.c). */
#ifndef SPLAT_DIST_H
#define SPLAT_DIST_H

#include <stddef.h>

#include "backend/backend.h"

#define SP_MAX_DEVICES 16

/* backend.devices: "N" (a count: devices first .. first+N-1, first = local_rank * N) or a list of
 * distinct ids "0,1,3". Fills ids (at most SP_MAX_DEVICES); returns the count, or -1 with the
 * reason recorded (sp_error) naming the text. */
int sp_parse_devices(const char *text, int local_rank, int *ids);

typedef struct {
    int rank, world, local_rank; /* world 1: this process alone */
    char file[1024];             /* the NCCL id file; "" when world is 1 */
} sp_dist;

/* Checks a placement: world >= 1, rank in [0, world), local_rank >= 0 and, when world > 1, an id
 * file. Errors name the settings (splat_dist's fields in include/splat.h); returns -1 then. */
int sp_dist_check(const sp_dist *d);
/* The placement of the calling thread's current call, checked: the public API makes its
 * context's current for the duration of every call, as it does its log sink (splat_set_dist);
 * with none current, this process alone. */
int sp_dist_current(sp_dist *d);
/* Makes d (NULL: none) the calling thread's current placement; returns the previous one, to be
 * restored with sp_dist_use when the call is done. d must outlive that. */
const sp_dist *sp_dist_use(const sp_dist *d);

/* Fills the multi-device fields of a backend config: the devices of backend.devices (counted
 * from local_rank * N for a count), check_replicas, and d's rank, world size and id file. */
int sp_dist_backend_config(sp_backend_config *bc, const char *devices, int check_replicas, const sp_dist *d);

/* Rank 0: writes the id (n bytes) to path atomically (temporary, then rename), with a header
 * that lets readers tell a complete file. */
int sp_dist_write_id(const char *path, const void *id, size_t n);
/* Other ranks: waits until path holds an id of n bytes, at most timeout_s seconds; then an
 * error naming the file and the wait. */
int sp_dist_read_id(const char *path, void *id, size_t n, double timeout_s);

#endif
