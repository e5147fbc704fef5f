/* vk_internal.h — what the files of the Vulkan backend share: the device context (instance,
 * device, queue, pipelines), buffers, command recording with descriptor sets, timestamps and
 * transfers (vk_ctx.c), and the backend state with its step building blocks (vk_backend.c),
 * which the single-stage operations of the parity harness (vk_stages.c) reuse. */
#ifndef SPLAT_VK_INTERNAL_H
#define SPLAT_VK_INTERNAL_H

#include <pthread.h>
#include <stdint.h>
#include <vulkan/vulkan.h>

#include "backend/backend.h"
#include "backend/ref/refine.h"
#include "backend/ref/stages.h"

/* Compute pipelines, one per shader (or shader variant). */
enum {
    VP_PROJECT, VP_EMIT_COUNT, VP_EMIT_PAIRS, VP_SCAN_BLOCK, VP_SCAN_ADD, VP_SORT_HIST, VP_SORT_SCATTER,
    VP_SORT_COUNT, VP_SORT_SCAN,
    VP_TILE_RANGES, VP_WARP_MASKS, VP_RASTERIZE, VP_BACKWARD_NATIVE, VP_BACKWARD_CAS, VP_BACKWARD_DET, VP_GRAD_GATHER, VP_PROJECT_BACK,
    VP_ADAM, VP_LOSS_SSIM, VP_LOSS_GRAD,
    VP_REFINE_GATHER, VP_FINITE, VP_PAIR_ARGS, VP_CHUNK_ITEMS, VP_RASTERIZE_W, VP_MCMC,
    VP_MCMC_WEIGHTS, VP_MCMC_BLOCKS, VP_MCMC_FINISH, VP_MCMC_DRAW, VP_MCMC_SPREAD, VP_MCMC_APPLY, VP_SCORE,
    VP_REORDER_BOX, VP_REORDER_CODES, VP_REORDER_GATHER, VP_COUNT
};

/* Pipelines made at their first dispatch rather than with the device: MCMC's decisions
 * (mcmc_refine.glsl), whose weights and spread passes are large (xfloat.glsl's arithmetic inlined)
 * and which only a training with refine.strategy = "mcmc" runs; the evaluation's score, which
 * only an evaluation runs. A training with MCMC refines asks for all of them in advance
 * (vk_lazy_start; its final evaluation uses the score): a thread makes them while the first steps
 * run, and the first dispatch of one waits for that thread. Made at the first dispatch instead,
 * the MCMC ones stalled the first refine for about 1.2 s on an H200. */
static inline int vk_pipe_lazy(int pipe) { return (pipe >= VP_MCMC_WEIGHTS && pipe <= VP_MCMC_APPLY) || pipe == VP_SCORE; }

/* Embedded SPIR-V (shaders.c, generated at build time). */
typedef struct {
    const char *name;
    const uint32_t *code;
    size_t bytes;
} vk_spirv;
extern const vk_spirv vk_shaders[VP_COUNT];

#define VK_MAX_BINDINGS 16 /* storage buffers per shader (backward_raster binds 15) */
#define VK_WG 256            /* workgroup size of every shader but project_back, rasterize and the fast backward_raster */
#define VK_PB_WG 64          /* project_back's (shaders/project_back.comp: SH staged in shared memory) */
/* rasterize's and the fast backward_raster's (shaders/masks.glsl: each subgroup walks its tile's list
 * on its own): a 16x16 tile (VK_WG places) is VK_RASTER_PARTS workgroups, so that a workgroup whose
 * subgroups are done frees its slot while the tile's others go on */
#define VK_RASTER_WG 64
#define VK_RASTER_PARTS (VK_WG / VK_RASTER_WG)
#define VK_CHUNK (4 * VK_WG) /* elements per workgroup in scan */

typedef struct {
    VkBuffer buf;
    VkDeviceMemory mem;
    VkDeviceSize size;
    void *map; /* host-visible buffers only */
} vk_buf;

/* One command buffer with its fence, descriptor pool and timestamp queries. */
#define VK_MAX_STAMPS 32
typedef struct {
    VkCommandBuffer cb;
    VkFence fence;
    VkDescriptorPool pool;
    VkQueryPool qpool;
    int pending;   /* submitted, fence not yet waited on */
    int recording;
    int nstamps;
    int stamp_stage[VK_MAX_STAMPS]; /* stage that ends at stamp k (k >= 1) */
    uint64_t t_begin, t_end;        /* device ticks of the first and last stamp of the last harvest */
} vk_cmd;

/* Where a run's time goes, for the profile (vk_cmd_wait and vk_cmd_submit add to it): host time
 * in fence waits and submissions, and the device's span from the first to the last timestamp
 * against the time inside timestamped command buffers (the rest is the device idling between
 * them). */
typedef struct {
    double wait_ms, submit_ms, query_ms; /* query_ms: reading timestamps (profile only) */
    long waits, submits;
    uint64_t dev_first, dev_last; /* ticks; dev_last == 0: nothing timestamped yet */
    double dev_inside_ms;
} vk_clock;

/* Descriptor sets kept from step to step, one per distinct list of bound buffers (all shaders
 * share one set layout): a step's dispatches find theirs by lookup instead of allocating and
 * writing one each. Emptied whenever a buffer is freed (buffers are freed only when the device is
 * idle). */
#define VK_SET_CACHE 512       /* sets kept at most */
#define VK_SET_SLOTS 1024      /* hash slots (twice the sets) */
typedef struct {
    VkBuffer bufs[VK_MAX_BINDINGS];
    VkDescriptorSet set; /* VK_NULL_HANDLE: empty slot */
} vk_set_entry;

typedef struct {
    VkInstance inst;
    VkPhysicalDevice phys;
    VkDevice dev;
    VkQueue queue;
    uint32_t qfam;
    VkCommandPool cpool;
    VkDescriptorSetLayout dsl;
    VkPipelineLayout playout;
    VkPipeline pipe[VP_COUNT];
    VkPhysicalDeviceMemoryProperties memprops;
    /* what splat check prints */
    char name[256];
    uint32_t api_version, subgroup_size, shared_bytes, max_wg_count;
    uint64_t max_storage; /* maxStorageBufferRange: the largest buffer a shader can see */
    int float_atomics; /* shaderBufferFloat32AtomicAdd */
    int float64;       /* shaderFloat64: the score shader (elsewhere the evaluation scores on the host) */
    int software;      /* a CPU implementation (lavapipe) */
    double ts_period;  /* ns per timestamp tick; 0: no timestamps */
    int64_t bytes, peak_bytes;
    vk_buf staging;
    VkDescriptorPool set_pool;
    vk_set_entry *sets; /* VK_SET_SLOTS */
    int nsets;
    vk_clock clk;
    /* the lazy pipelines' thread (vk_lazy_start): running until joined; each one's result */
    pthread_t lazy_thread;
    int lazy_running;
    VkResult lazy_res[VP_COUNT];
    const char *lazy_what[VP_COUNT];
    /* the other pipelines' thread (started by vk_ctx_init, joined at the first dispatch): each
     * one's result, how many it made, on how many threads, in how long */
    pthread_t core_thread;
    int core_running, core_ok, core_made, core_threads;
    double core_secs;
    VkResult core_res[VP_COUNT];
    const char *core_what[VP_COUNT];
} vk_ctx;

/* Context: creates instance and device (cfg->device picks among suitable devices, best first).
 * Returns -1 with sp_error set when there is no usable Vulkan device. */
int vk_ctx_init(vk_ctx *c, int device, int want_float_atomics);
void vk_ctx_free(vk_ctx *c);
/* Starts making the lazy pipelines not made yet on a thread of their own (nothing when one is
 * running or none is left; where no thread starts they are made at their first dispatch). */
void vk_lazy_start(vk_ctx *c);

/* Buffers. vk_buf_ensure grows a device buffer to at least `bytes` (contents are lost when it
 * grows; waits for the device first). host: host-visible, mapped. */
int vk_buf_ensure(vk_ctx *c, vk_buf *b, VkDeviceSize bytes, int host);
void vk_buf_free(vk_ctx *c, vk_buf *b);
/* Synchronous copies between host memory and a device buffer (through the staging buffer). */
int vk_upload(vk_ctx *c, vk_buf *dst, VkDeviceSize off, const void *src, VkDeviceSize bytes);
/* The same, the staging buffer written by fill(staging memory, user) instead of a copy. */
int vk_upload_fill(vk_ctx *c, vk_buf *dst, VkDeviceSize off, VkDeviceSize bytes,
                   void (*fill)(void *to, const void *user), const void *user);
int vk_download(vk_ctx *c, vk_buf *src, VkDeviceSize off, void *dst, VkDeviceSize bytes);

/* Command recording. */
int vk_cmd_init(vk_ctx *c, vk_cmd *k);
void vk_cmd_free(vk_ctx *c, vk_cmd *k);
/* Waits for the command buffer's previous submission; profile: adds its stage times to ms. */
int vk_cmd_wait(vk_ctx *c, vk_cmd *k, double *ms);
int vk_cmd_begin(vk_ctx *c, vk_cmd *k, double *ms, int profile);
int vk_cmd_submit(vk_ctx *c, vk_cmd *k);
/* The workgroup grid of `groups` workgroups: (groups, 1, 1), or spread over y in rows of 32768 when
 * groups passes the device's x limit (the shaders bound-check; shaders/grid.glsl sizes indirect
 * dispatches the same way on the device). */
void vk_grid(const vk_ctx *c, uint32_t groups, uint32_t dims[3]);
/* Dispatch: bufs[i] bound at binding i (NULL: not bound), 32 push-constant words, `groups`
 * workgroups (spread over y beyond the x limit; shaders bound-check), then a full barrier. */
int vk_dispatch(vk_ctx *c, vk_cmd *k, int pipe, vk_buf *const *bufs, int nbufs, const uint32_t *words,
                uint32_t groups);
/* The same with the workgroup counts read on the device from args at byte offset `at` (three
 * uint words, written by an earlier dispatch). */
int vk_dispatch_indirect(vk_ctx *c, vk_cmd *k, int pipe, vk_buf *const *bufs, int nbufs, const uint32_t *words,
                         vk_buf *args, VkDeviceSize at);
void vk_fill(vk_cmd *k, vk_buf *b, VkDeviceSize off, VkDeviceSize bytes, uint32_t value);
/* The same without the barrier after it: for a fill recorded just before a dispatch, whose barrier
 * then orders both before what follows (the dispatch itself must not touch the filled bytes). */
void vk_fill_nobarrier(vk_cmd *k, vk_buf *b, VkDeviceSize off, VkDeviceSize bytes, uint32_t value);
void vk_copy(vk_cmd *k, vk_buf *src, VkDeviceSize soff, vk_buf *dst, VkDeviceSize doff, VkDeviceSize bytes);
/* Timestamp closing stage `stage` (no-op without profiling). The profiling rows are the stages of
 * backend.h, one each: stage is one of SP_STAGE_PROJECT .. SP_STAGE_REFINE. */
void vk_stamp(vk_ctx *c, vk_cmd *k, int stage);

/* One line about a device for `splat check`; -1 when Vulkan has no usable device. */
int vk_describe(int device, int cas_atomics, char *out, size_t n);
/* 1 when a hardware (not software) Vulkan device is usable: what `auto` asks. */
int vk_hardware_available(void);
/* 1 when any usable Vulkan device (software included) answers: what the parity harness asks. */
int vk_available(void);

static inline uint32_t vk_f2u(float f) {
    union { float f; uint32_t u; } x = {f};
    return x.u;
}
static inline uint32_t vk_groups(int64_t n, int per) { return (uint32_t)((n + per - 1) / per); }

#endif
