/* nccl_lib.h — NCCL loaded at run time (dlopen "libnccl.so.2") through a table of the few calls the
 * replicated backend makes, so that a splat binary runs on machines without NCCL and fails with a
 * clear message only when several GPUs are asked for. nccl.h is included for its types only.
 * Compiled by nvcc only. */
#ifndef SPLAT_NCCL_LIB_H
#define SPLAT_NCCL_LIB_H

#include <cuda_runtime.h>
#include <nccl.h>

typedef struct {
    void *handle;
    int version;
    ncclResult_t (*GetVersion)(int *version);
    ncclResult_t (*GetUniqueId)(ncclUniqueId *id);
    ncclResult_t (*CommInitRank)(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank);
    ncclResult_t (*CommDestroy)(ncclComm_t comm);
    ncclResult_t (*AllReduce)(const void *send, void *recv, size_t count, ncclDataType_t type, ncclRedOp_t op,
                              ncclComm_t comm, cudaStream_t stream);
    ncclResult_t (*AllGather)(const void *send, void *recv, size_t count, ncclDataType_t type, ncclComm_t comm,
                              cudaStream_t stream);
    ncclResult_t (*GroupStart)(void);
    ncclResult_t (*GroupEnd)(void);
    const char *(*GetErrorString)(ncclResult_t result);
} sp_nccl;

/* Loads the library and every symbol; -1 with an error that says what to install otherwise. */
int sp_nccl_open(sp_nccl *nc);
void sp_nccl_close(sp_nccl *nc);
/* Records "nccl: what: message" as sp_error when r is not ncclSuccess; returns -1 then. */
int sp_nccl_check(const sp_nccl *nc, ncclResult_t r, const char *what);

#endif
