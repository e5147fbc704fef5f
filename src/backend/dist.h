/* dist.h — what data-parallel training needs before NCCL: the device list of backend.devices,
 * this process's place among several (rank, world size, local rank from SPLAT_* or Open MPI's
 * variables) and the exchange of the NCCL unique id through a shared file. Plain C, no NCCL:
 * unit-tested on machines without GPUs (tests/test_dist.c). */
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
    int from_mpi;                /* the values came from OMPI_COMM_WORLD_* */
    char file[1024];             /* the id file (SPLAT_DIST_FILE); "" when world is 1 */
} sp_dist;

/* Reads SPLAT_RANK, SPLAT_WORLD_SIZE, SPLAT_LOCAL_RANK (default: the rank) and SPLAT_DIST_FILE;
 * when SPLAT_RANK is unset, OMPI_COMM_WORLD_RANK / _SIZE / _LOCAL_RANK (a process started by
 * mpirun). None set: rank 0 of 1. Missing, non-numeric or inconsistent values (rank outside
 * [0, world), a rank without a world size, world > 1 without an id file) are errors naming
 * the variable; returns -1 then. */
int sp_dist_from_env(sp_dist *d);

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
