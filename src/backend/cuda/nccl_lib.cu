/* nccl_lib.cu — loading NCCL at run time (nccl_lib.h). */
#include "backend/cuda/nccl_lib.h"

#include <dlfcn.h>
#include <string.h>

extern "C" {
#include "core/core.h"
}

int sp_nccl_open(sp_nccl *nc) {
    memset(nc, 0, sizeof *nc);
    nc->handle = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!nc->handle)
        return sp_error("several GPUs need NCCL, and libnccl.so.2 could not be loaded (%s); install NCCL (the "
                        "libnccl2 package, or pip's nvidia-nccl-cu12 with its lib folder on LD_LIBRARY_PATH; "
                        "docs/scale.md)", dlerror());
    struct {
        const char *name;
        void **fn;
    } syms[] = {
        {"ncclGetVersion", (void **)&nc->GetVersion},     {"ncclGetUniqueId", (void **)&nc->GetUniqueId},
        {"ncclCommInitRank", (void **)&nc->CommInitRank}, {"ncclCommDestroy", (void **)&nc->CommDestroy},
        {"ncclAllReduce", (void **)&nc->AllReduce},       {"ncclAllGather", (void **)&nc->AllGather},
        {"ncclGroupStart", (void **)&nc->GroupStart},     {"ncclGroupEnd", (void **)&nc->GroupEnd},
        {"ncclGetErrorString", (void **)&nc->GetErrorString},
    };
    for (size_t i = 0; i < sizeof syms / sizeof *syms; i++) {
        *syms[i].fn = dlsym(nc->handle, syms[i].name);
        if (!*syms[i].fn) {
            sp_error("libnccl.so.2 has no %s: NCCL 2.12 or newer is needed", syms[i].name);
            sp_nccl_close(nc);
            return -1;
        }
    }
    if (nc->GetVersion(&nc->version) != ncclSuccess) nc->version = 0;
    return 0;
}

void sp_nccl_close(sp_nccl *nc) {
    if (nc->handle) dlclose(nc->handle);
    memset(nc, 0, sizeof *nc);
}

int sp_nccl_check(const sp_nccl *nc, ncclResult_t r, const char *what) {
    if (r == ncclSuccess) return 0;
    return sp_error("nccl: %s: %s", what, nc->GetErrorString ? nc->GetErrorString(r) : "error");
}
