/* vk_ctx.c — the Vulkan device context of the Vulkan backend: instance (with portability
 * enumeration where the loader offers it, for MoltenVK), the choice of a compute device and its
 * limits, one compute pipeline per embedded shader, buffers, command buffers with per-dispatch
 * descriptor sets and full barriers, timestamp queries, and synchronous transfers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/vulkan/vk_internal.h"
#include "core/core.h"
#include "core/threads.h"

static int vk_fail(VkResult r, const char *what) {
    return sp_error("vulkan: %s failed (VkResult %d)", what, (int)r);
}
#define VK_TRY(call, what)                          \
    do {                                            \
        VkResult vr_ = (call);                      \
        if (vr_ != VK_SUCCESS) return vk_fail(vr_, what); \
    } while (0)

static int has_ext(const VkExtensionProperties *e, uint32_t n, const char *name) {
    for (uint32_t i = 0; i < n; i++)
        if (!strcmp(e[i].extensionName, name)) return 1;
    return 0;
}

static int create_instance(VkInstance *inst) {
    uint32_t n = 0;
    vkEnumerateInstanceExtensionProperties(NULL, &n, NULL);
    VkExtensionProperties *e = SP_NEW(VkExtensionProperties, n + 1);
    vkEnumerateInstanceExtensionProperties(NULL, &n, e);
    const char *exts[2];
    uint32_t ne = 0;
    VkInstanceCreateFlags flags = 0;
#ifdef VK_KHR_portability_enumeration
    if (has_ext(e, n, VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME)) {
        exts[ne++] = VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME;
        flags |= VK_INSTANCE_CREATE_ENUMERATE_PORTABILITY_BIT_KHR;
    }
#endif
    if (has_ext(e, n, VK_KHR_GET_PHYSICAL_DEVICE_PROPERTIES_2_EXTENSION_NAME))
        exts[ne++] = VK_KHR_GET_PHYSICAL_DEVICE_PROPERTIES_2_EXTENSION_NAME;
    free(e);
    VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO, .pApplicationName = "splat",
                             .apiVersion = VK_API_VERSION_1_1};
    VkInstanceCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, .flags = flags,
                               .pApplicationInfo = &app, .enabledExtensionCount = ne, .ppEnabledExtensionNames = exts};
    VkResult r = vkCreateInstance(&ci, NULL, inst);
    if (r != VK_SUCCESS) return sp_error("vulkan: no Vulkan loader or driver answered (vkCreateInstance: %d)", (int)r);
    return 0;
}

/* What we need of a device, and what it says about itself. */
typedef struct {
    VkPhysicalDevice pd;
    int rank; /* lower is preferred */
    uint32_t qfam, subgroup, shared, api;
    int atomics, float64, portability, software;
    char name[256];
    const char *why_not; /* NULL: usable */
} dev_info;

static void probe(VkPhysicalDevice pd, dev_info *d) {
    memset(d, 0, sizeof *d);
    d->pd = pd;
    VkPhysicalDeviceSubgroupProperties sg = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
    VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &sg};
    vkGetPhysicalDeviceProperties2(pd, &p2);
    const VkPhysicalDeviceProperties *p = &p2.properties;
    snprintf(d->name, sizeof d->name, "%s", p->deviceName);
    d->api = p->apiVersion;
    d->subgroup = sg.subgroupSize;
    d->shared = p->limits.maxComputeSharedMemorySize;
    d->software = p->deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU;
    VkPhysicalDeviceFeatures f;
    vkGetPhysicalDeviceFeatures(pd, &f);
    d->float64 = f.shaderFloat64 != 0;
    switch (p->deviceType) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: d->rank = 0; break;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: d->rank = 1; break;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: d->rank = 2; break;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: d->rank = 4; break;
    default: d->rank = 3;
    }
    uint32_t ne = 0;
    vkEnumerateDeviceExtensionProperties(pd, NULL, &ne, NULL);
    VkExtensionProperties *e = SP_NEW(VkExtensionProperties, ne + 1);
    vkEnumerateDeviceExtensionProperties(pd, NULL, &ne, e);
    d->portability = has_ext(e, ne, "VK_KHR_portability_subset");
    if (has_ext(e, ne, VK_EXT_SHADER_ATOMIC_FLOAT_EXTENSION_NAME)) {
        VkPhysicalDeviceShaderAtomicFloatFeaturesEXT af = {
            .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_FLOAT_FEATURES_EXT};
        VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &af};
        vkGetPhysicalDeviceFeatures2(pd, &f2);
        d->atomics = af.shaderBufferFloat32AtomicAdd != 0;
    }
    free(e);
    uint32_t nq = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &nq, NULL);
    VkQueueFamilyProperties *q = SP_NEW(VkQueueFamilyProperties, nq + 1);
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &nq, q);
    d->qfam = UINT32_MAX;
    for (uint32_t i = 0; i < nq; i++) /* prefer a compute queue with timestamps */
        if ((q[i].queueFlags & VK_QUEUE_COMPUTE_BIT) && (d->qfam == UINT32_MAX || q[i].timestampValidBits > 0)) {
            if (d->qfam == UINT32_MAX || q[d->qfam].timestampValidBits == 0) d->qfam = i;
        }
    free(q);
    if (d->api < VK_API_VERSION_1_1) d->why_not = "Vulkan 1.1 needed";
    else if (d->qfam == UINT32_MAX) d->why_not = "no compute queue";
    else if (!(sg.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) ||
             !(sg.supportedOperations & VK_SUBGROUP_FEATURE_BASIC_BIT) ||
             !(sg.supportedOperations & VK_SUBGROUP_FEATURE_VOTE_BIT) ||
             !(sg.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT) ||
             !(sg.supportedOperations & VK_SUBGROUP_FEATURE_SHUFFLE_BIT) ||
             !(sg.supportedOperations & VK_SUBGROUP_FEATURE_BALLOT_BIT))
        d->why_not = "no subgroup vote, arithmetic, shuffle and ballot in compute shaders";
    else if (sg.subgroupSize < 4 || sg.subgroupSize > 128) d->why_not = "subgroup size outside 4..128";
    else if (p->limits.maxComputeWorkGroupInvocations < VK_WG || p->limits.maxComputeWorkGroupSize[0] < VK_WG)
        d->why_not = "workgroups of 256 invocations needed";
    else if (d->shared < 32768) /* loss_ssim 27.1 KiB, backward_raster_det 31 */
        d->why_not = "32 KiB of shared memory needed";
    else if (p->limits.maxPerStageDescriptorStorageBuffers < VK_MAX_BINDINGS ||
             p->limits.maxDescriptorSetStorageBuffers < VK_MAX_BINDINGS)
        d->why_not = "16 storage buffers per shader needed";
}

/* Usable devices, best first (stable by enumeration order). Returns the count; *all the list. */
static int list_devices(VkInstance inst, dev_info **all) {
    uint32_t n = 0;
    vkEnumeratePhysicalDevices(inst, &n, NULL);
    VkPhysicalDevice *pds = SP_NEW(VkPhysicalDevice, n + 1);
    vkEnumeratePhysicalDevices(inst, &n, pds);
    dev_info *d = SP_NEW(dev_info, n + 1);
    int m = 0;
    for (uint32_t i = 0; i < n; i++) {
        probe(pds[i], &d[m]);
        if (!d[m].why_not) m++;
    }
    free(pds);
    for (int i = 1; i < m; i++) /* insertion sort by rank, stable */
        for (int j = i; j > 0 && d[j].rank < d[j - 1].rank; j--) {
            dev_info t = d[j];
            d[j] = d[j - 1];
            d[j - 1] = t;
        }
    *all = d;
    return m;
}

int vk_available(void) {
    VkInstance inst;
    if (create_instance(&inst)) return 0;
    dev_info *d;
    int n = list_devices(inst, &d);
    free(d);
    vkDestroyInstance(inst, NULL);
    return n > 0;
}

int vk_hardware_available(void) {
    VkInstance inst;
    if (create_instance(&inst)) return 0;
    dev_info *d;
    int n = list_devices(inst, &d), ok = n > 0 && !d[0].software;
    free(d);
    vkDestroyInstance(inst, NULL);
    return ok;
}

int vk_describe(int device, int cas_atomics, char *out, size_t size) {
    vk_ctx c;
    if (vk_ctx_init(&c, device, !cas_atomics)) return -1;
    uint32_t v = c.api_version;
    snprintf(out, size,
             "vulkan: %s (Vulkan %u.%u%s), subgroup size %u, float atomic add %s, %u KiB shared memory, timestamps %s, "
             "evaluation scored on the %s",
             c.name, VK_API_VERSION_MAJOR(v), VK_API_VERSION_MINOR(v), c.software ? ", software" : "", c.subgroup_size,
             c.float_atomics ? "native" : "compare-and-swap", c.shared_bytes / 1024, c.ts_period > 0 ? "yes" : "no",
             c.float64 ? "device" : "host (no 64-bit floats)");
    vk_ctx_free(&c);
    return 0;
}

/* Builds the pipeline of embedded shader i; *what names the call that failed. Safe to call for
 * different i from several threads at once (no pipeline cache: nothing externally synchronised). */
static VkResult build_pipeline(vk_ctx *c, int i, const char **what) {
    VkShaderModuleCreateInfo mci = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
                                    .codeSize = vk_shaders[i].bytes, .pCode = vk_shaders[i].code};
    VkShaderModule mod;
    *what = "vkCreateShaderModule failed";
    VkResult r = vkCreateShaderModule(c->dev, &mci, NULL, &mod);
    if (r != VK_SUCCESS) return r;
    VkComputePipelineCreateInfo cci = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO, .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                  .module = mod, .pName = "main"},
        .layout = c->playout};
    *what = "pipeline creation failed";
    r = vkCreateComputePipelines(c->dev, VK_NULL_HANDLE, 1, &cci, NULL, &c->pipe[i]);
    vkDestroyShaderModule(c->dev, mod, NULL);
    return r;
}

/* 1 when shader i needs a feature the device lacks (its pipeline is never made). */
static int unsupported(const vk_ctx *c, int i) {
    return (i == VP_BACKWARD_NATIVE && !c->float_atomics) || (i == VP_SCORE && !c->float64);
}

/* Makes, several at once, every pipeline the device supports that is not made yet and is lazy (or,
 * lazy 0, is not): each one's result into res and what. Returns how many it made; *threads says on
 * how many threads. Run by the pipelines' threads below (build_pipeline is safe beside the other
 * threads: they dispatch none of these pipelines until the thread is joined). */
static int make_pipelines(vk_ctx *c, int lazy, VkResult *res, const char **what, int *threads) {
    int todo[VP_COUNT], nt = 0;
    for (int i = 0; i < VP_COUNT; i++)
        if (vk_pipe_lazy(i) == lazy && !unsupported(c, i) && !c->pipe[i]) todo[nt++] = i;
    *threads = sp_omp_threads() < nt ? sp_omp_threads() : nt;
#pragma omp parallel for schedule(dynamic, 1) num_threads(*threads)
    for (int k = 0; k < nt; k++) res[todo[k]] = build_pipeline(c, todo[k], &what[todo[k]]);
    return nt;
}

/* The lazy pipelines' thread. */
static void *lazy_main(void *arg) {
    vk_ctx *c = arg;
    int threads;
    make_pipelines(c, 1, c->lazy_res, c->lazy_what, &threads);
    return NULL;
}

void vk_lazy_start(vk_ctx *c) {
    if (c->lazy_running) return;
    int todo = 0;
    for (int i = 0; i < VP_COUNT; i++) todo += vk_pipe_lazy(i) && !unsupported(c, i) && !c->pipe[i];
    if (todo) c->lazy_running = pthread_create(&c->lazy_thread, NULL, lazy_main, c) == 0;
}

/* Waits for the lazy pipelines' thread; a pipeline it could not make is an error here. */
static int lazy_join(vk_ctx *c) {
    if (!c->lazy_running) return 0;
    pthread_join(c->lazy_thread, NULL);
    c->lazy_running = 0;
    for (int i = 0; i < VP_COUNT; i++)
        if (c->lazy_res[i] != VK_SUCCESS)
            return sp_error("vulkan: shader %s: %s (%d)", vk_shaders[i].name, c->lazy_what[i], (int)c->lazy_res[i]);
    return 0;
}

/* The pipeline of embedded shader i. */
static int create_pipeline(vk_ctx *c, int i) {
    const char *what;
    VkResult r = build_pipeline(c, i, &what);
    if (r != VK_SUCCESS) return sp_error("vulkan: shader %s: %s (%d)", vk_shaders[i].name, what, (int)r);
    return 0;
}

/* The other pipelines' thread, started with the device (the caller dispatches nothing until
 * core_join). */
static void *core_main(void *arg) {
    vk_ctx *c = arg;
    double t0 = sp_now();
    c->core_made = make_pipelines(c, 0, c->core_res, c->core_what, &c->core_threads);
    c->core_secs = sp_now() - t0;
    return NULL;
}

/* Waits for the pipelines' thread (at once when it is done or was never started); a pipeline it
 * could not make is an error here, and every later call says so again. */
static int core_join(vk_ctx *c) {
    if (c->core_ok) return 0;
    if (c->core_running) {
        pthread_join(c->core_thread, NULL);
        c->core_running = 0;
        sp_log(SP_LOG_INFO, "vulkan: %d pipelines made in %.2f s on %d threads (beside the setup)", c->core_made,
               c->core_secs, c->core_threads);
    }
    for (int i = 0; i < VP_COUNT; i++)
        if (c->core_res[i] != VK_SUCCESS)
            return sp_error("vulkan: shader %s: %s (%d)", vk_shaders[i].name, c->core_what[i], (int)c->core_res[i]);
    c->core_ok = 1;
    return 0;
}

static int create_pipelines(vk_ctx *c) {
    VkDescriptorSetLayoutBinding b[VK_MAX_BINDINGS];
    for (int i = 0; i < VK_MAX_BINDINGS; i++)
        b[i] = (VkDescriptorSetLayoutBinding){.binding = (uint32_t)i, .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                              .descriptorCount = 1, .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT};
    VkDescriptorSetLayoutCreateInfo dci = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
                                           .bindingCount = VK_MAX_BINDINGS, .pBindings = b};
    VK_TRY(vkCreateDescriptorSetLayout(c->dev, &dci, NULL, &c->dsl), "vkCreateDescriptorSetLayout");
    VkPushConstantRange pr = {.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT, .offset = 0, .size = 128};
    VkPipelineLayoutCreateInfo pci = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO, .setLayoutCount = 1,
                                      .pSetLayouts = &c->dsl, .pushConstantRangeCount = 1, .pPushConstantRanges = &pr};
    VK_TRY(vkCreatePipelineLayout(c->dev, &pci, NULL, &c->playout), "vkCreatePipelineLayout");
    /* The driver compiles each shader when its pipeline is made (0.4 s on an H200, seconds for some
     * drivers): a thread makes them, on several threads at once, while the caller goes on (the
     * training images' upload, the model's) until its first dispatch waits for them (core_join). */
    c->core_running = pthread_create(&c->core_thread, NULL, core_main, c) == 0;
    if (!c->core_running) core_main(c);
    return 0;
}
int vk_ctx_init(vk_ctx *c, int device, int want_float_atomics) {
    memset(c, 0, sizeof *c);
    if (create_instance(&c->inst)) return -1;
    dev_info *all;
    int n = list_devices(c->inst, &all);
    if (n == 0) {
        free(all);
        vk_ctx_free(c);
        return sp_error("vulkan: no usable Vulkan device (needs Vulkan 1.1 compute with subgroup vote, arithmetic, shuffle and ballot)");
    }
    if (device < 0 || device >= n) {
        free(all);
        vk_ctx_free(c);
        return sp_error("vulkan: backend.device = %d but there are %d usable Vulkan devices", device, n);
    }
    dev_info d = all[device];
    free(all);
    c->phys = d.pd;
    c->qfam = d.qfam;
    snprintf(c->name, sizeof c->name, "%s", d.name);
    c->api_version = d.api;
    c->subgroup_size = d.subgroup;
    c->shared_bytes = d.shared;
    c->software = d.software;
    c->float_atomics = d.atomics && want_float_atomics;
    c->float64 = d.float64;
    VkPhysicalDeviceProperties props;
    vkGetPhysicalDeviceProperties(c->phys, &props);
    c->max_wg_count = props.limits.maxComputeWorkGroupCount[0];
    c->max_storage = props.limits.maxStorageBufferRange;
    vkGetPhysicalDeviceMemoryProperties(c->phys, &c->memprops);
    uint32_t nq = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(c->phys, &nq, NULL);
    VkQueueFamilyProperties *qp = SP_NEW(VkQueueFamilyProperties, nq + 1);
    vkGetPhysicalDeviceQueueFamilyProperties(c->phys, &nq, qp);
    c->ts_period = qp[c->qfam].timestampValidBits > 0 ? props.limits.timestampPeriod : 0.0;
    free(qp);

    float prio = 1.0f;
    VkDeviceQueueCreateInfo qci = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO, .queueFamilyIndex = c->qfam,
                                   .queueCount = 1, .pQueuePriorities = &prio};
    const char *exts[2];
    uint32_t ne = 0;
    VkPhysicalDeviceShaderAtomicFloatFeaturesEXT af = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_FLOAT_FEATURES_EXT,
                                                       .shaderBufferFloat32AtomicAdd = VK_TRUE};
    if (c->float_atomics) exts[ne++] = VK_EXT_SHADER_ATOMIC_FLOAT_EXTENSION_NAME;
    if (d.portability) exts[ne++] = "VK_KHR_portability_subset";
    VkPhysicalDeviceFeatures feats = {.shaderFloat64 = c->float64 ? VK_TRUE : VK_FALSE};
    VkDeviceCreateInfo dci = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, .pNext = c->float_atomics ? &af : NULL,
                              .queueCreateInfoCount = 1, .pQueueCreateInfos = &qci, .enabledExtensionCount = ne,
                              .ppEnabledExtensionNames = exts, .pEnabledFeatures = &feats};
    VkResult r = vkCreateDevice(c->phys, &dci, NULL, &c->dev);
    if (r != VK_SUCCESS) {
        vk_ctx_free(c);
        return vk_fail(r, "vkCreateDevice");
    }
    vkGetDeviceQueue(c->dev, c->qfam, 0, &c->queue);
    VkCommandPoolCreateInfo pci = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                   .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT, .queueFamilyIndex = c->qfam};
    r = vkCreateCommandPool(c->dev, &pci, NULL, &c->cpool);
    if (r == VK_SUCCESS) {
        VkDescriptorPoolSize ps = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, VK_SET_CACHE * VK_MAX_BINDINGS};
        VkDescriptorPoolCreateInfo dpi = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                                          .maxSets = VK_SET_CACHE, .poolSizeCount = 1, .pPoolSizes = &ps};
        r = vkCreateDescriptorPool(c->dev, &dpi, NULL, &c->set_pool);
        c->sets = SP_NEW(vk_set_entry, VK_SET_SLOTS);
    }
    if (r != VK_SUCCESS || create_pipelines(c)) {
        if (r != VK_SUCCESS) vk_fail(r, "vkCreateCommandPool");
        vk_ctx_free(c);
        return -1;
    }
    return 0;
}

void vk_ctx_free(vk_ctx *c) {
    core_join(c);
    lazy_join(c);
    if (c->dev) {
        vkDeviceWaitIdle(c->dev);
        vk_buf_free(c, &c->staging);
        for (int i = 0; i < VP_COUNT; i++)
            if (c->pipe[i]) vkDestroyPipeline(c->dev, c->pipe[i], NULL);
        if (c->playout) vkDestroyPipelineLayout(c->dev, c->playout, NULL);
        if (c->dsl) vkDestroyDescriptorSetLayout(c->dev, c->dsl, NULL);
        if (c->cpool) vkDestroyCommandPool(c->dev, c->cpool, NULL);
        if (c->set_pool) vkDestroyDescriptorPool(c->dev, c->set_pool, NULL);
        vkDestroyDevice(c->dev, NULL);
    }
    if (c->inst) vkDestroyInstance(c->inst, NULL);
    free(c->sets);
    memset(c, 0, sizeof *c);
}

/* ---- buffers ---- */

static int find_memory(vk_ctx *c, uint32_t bits, VkMemoryPropertyFlags want, VkMemoryPropertyFlags need) {
    for (int pass = 0; pass < 2; pass++)
        for (uint32_t i = 0; i < c->memprops.memoryTypeCount; i++) {
            VkMemoryPropertyFlags f = c->memprops.memoryTypes[i].propertyFlags;
            if (!(bits & (1u << i)) || (f & need) != need) continue;
            if (pass == 0 && (f & want) != want) continue;
            return (int)i;
        }
    return -1;
}

/* Forgets the kept descriptor sets (a buffer they name is going away). */
static void forget_sets(vk_ctx *c) {
    if (!c->nsets) return;
    vkResetDescriptorPool(c->dev, c->set_pool, 0);
    memset(c->sets, 0, VK_SET_SLOTS * sizeof *c->sets);
    c->nsets = 0;
}

void vk_buf_free(vk_ctx *c, vk_buf *b) {
    if (b->buf) forget_sets(c);
    if (b->map) vkUnmapMemory(c->dev, b->mem);
    if (b->buf) vkDestroyBuffer(c->dev, b->buf, NULL);
    if (b->mem) {
        vkFreeMemory(c->dev, b->mem, NULL);
        c->bytes -= (int64_t)b->size;
    }
    memset(b, 0, sizeof *b);
}

int vk_buf_ensure(vk_ctx *c, vk_buf *b, VkDeviceSize bytes, int host) {
    if (bytes < 16) bytes = 16;
    bytes = (bytes + 15) & ~(VkDeviceSize)15;
    if (b->buf && b->size >= bytes) return 0;
    if (b->buf) {
        vkQueueWaitIdle(c->queue);
        vk_buf_free(c, b);
        bytes += bytes / 4; /* grow with room */
    }
    VkBufferCreateInfo bci = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, .size = bytes,
                              .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                       VK_BUFFER_USAGE_TRANSFER_DST_BIT | VK_BUFFER_USAGE_INDIRECT_BUFFER_BIT,
                              .sharingMode = VK_SHARING_MODE_EXCLUSIVE};
    VK_TRY(vkCreateBuffer(c->dev, &bci, NULL, &b->buf), "vkCreateBuffer");
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(c->dev, b->buf, &req);
    VkMemoryPropertyFlags need = host ? VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT : 0;
    VkMemoryPropertyFlags want = host ? VK_MEMORY_PROPERTY_HOST_CACHED_BIT : VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
    int type = find_memory(c, req.memoryTypeBits, want | need, need);
    if (type < 0) {
        vk_buf_free(c, b);
        return sp_error("vulkan: no memory type for a buffer of %llu bytes", (unsigned long long)bytes);
    }
    VkMemoryAllocateInfo mai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, .allocationSize = req.size,
                                .memoryTypeIndex = (uint32_t)type};
    VkResult r = vkAllocateMemory(c->dev, &mai, NULL, &b->mem);
    if (r != VK_SUCCESS) {
        vkDestroyBuffer(c->dev, b->buf, NULL);
        memset(b, 0, sizeof *b);
        return sp_error("vulkan: out of device memory allocating %.1f MiB (%.1f MiB in use)", bytes / 1048576.0,
                        c->bytes / 1048576.0);
    }
    b->size = bytes;
    c->bytes += (int64_t)bytes;
    if (c->bytes > c->peak_bytes) c->peak_bytes = c->bytes;
    VK_TRY(vkBindBufferMemory(c->dev, b->buf, b->mem, 0), "vkBindBufferMemory");
    if (host) VK_TRY(vkMapMemory(c->dev, b->mem, 0, VK_WHOLE_SIZE, 0, &b->map), "vkMapMemory");
    return 0;
}

/* One-shot command buffer around a copy, submitted and waited for. */
static int copy_sync(vk_ctx *c, vk_buf *src, VkDeviceSize soff, vk_buf *dst, VkDeviceSize doff, VkDeviceSize bytes) {
    VkCommandBufferAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, .commandPool = c->cpool,
                                      .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY, .commandBufferCount = 1};
    VkCommandBuffer cb;
    VK_TRY(vkAllocateCommandBuffers(c->dev, &ai, &cb), "vkAllocateCommandBuffers");
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                   .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    vkBeginCommandBuffer(cb, &bi);
    VkBufferCopy reg = {soff, doff, bytes};
    vkCmdCopyBuffer(cb, src->buf, dst->buf, 1, &reg);
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER, .srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
                          .dstAccessMask = VK_ACCESS_HOST_READ_BIT | VK_ACCESS_SHADER_READ_BIT};
    vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT | VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                         0, 1, &mb, 0, NULL, 0, NULL);
    vkEndCommandBuffer(cb);
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &cb};
    VkResult r = vkQueueSubmit(c->queue, 1, &si, VK_NULL_HANDLE);
    if (r == VK_SUCCESS) r = vkQueueWaitIdle(c->queue);
    vkFreeCommandBuffers(c->dev, c->cpool, 1, &cb);
    if (r != VK_SUCCESS) return vk_fail(r, "transfer");
    return 0;
}

int vk_upload_fill(vk_ctx *c, vk_buf *dst, VkDeviceSize off, VkDeviceSize bytes,
                   void (*fill)(void *to, const void *user), const void *user) {
    if (bytes == 0) return 0;
    VK_TRY(vkQueueWaitIdle(c->queue), "vkQueueWaitIdle");
    if (vk_buf_ensure(c, &c->staging, bytes, 1)) return -1;
    fill(c->staging.map, user);
    return copy_sync(c, &c->staging, 0, dst, off, bytes);
}

typedef struct {
    const void *src;
    size_t bytes;
} copy_job;

static void fill_copy(void *to, const void *user) {
    const copy_job *j = user;
    memcpy(to, j->src, j->bytes);
}

int vk_upload(vk_ctx *c, vk_buf *dst, VkDeviceSize off, const void *src, VkDeviceSize bytes) {
    copy_job j = {src, (size_t)bytes};
    return vk_upload_fill(c, dst, off, bytes, fill_copy, &j);
}

int vk_download(vk_ctx *c, vk_buf *src, VkDeviceSize off, void *dst, VkDeviceSize bytes) {
    if (bytes == 0) return 0;
    VK_TRY(vkQueueWaitIdle(c->queue), "vkQueueWaitIdle");
    if (vk_buf_ensure(c, &c->staging, bytes, 1)) return -1;
    if (copy_sync(c, src, off, &c->staging, 0, bytes)) return -1;
    memcpy(dst, c->staging.map, bytes);
    return 0;
}

/* ---- command buffers ---- */

int vk_cmd_init(vk_ctx *c, vk_cmd *k) {
    memset(k, 0, sizeof *k);
    VkCommandBufferAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, .commandPool = c->cpool,
                                      .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY, .commandBufferCount = 1};
    VK_TRY(vkAllocateCommandBuffers(c->dev, &ai, &k->cb), "vkAllocateCommandBuffers");
    VkFenceCreateInfo fi = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    VK_TRY(vkCreateFence(c->dev, &fi, NULL, &k->fence), "vkCreateFence");
    VkDescriptorPoolSize ps = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 256 * VK_MAX_BINDINGS};
    VkDescriptorPoolCreateInfo dpi = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO, .maxSets = 256,
                                      .poolSizeCount = 1, .pPoolSizes = &ps};
    VK_TRY(vkCreateDescriptorPool(c->dev, &dpi, NULL, &k->pool), "vkCreateDescriptorPool");
    if (c->ts_period > 0) {
        VkQueryPoolCreateInfo qi = {.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
                                    .queryType = VK_QUERY_TYPE_TIMESTAMP, .queryCount = VK_MAX_STAMPS};
        VK_TRY(vkCreateQueryPool(c->dev, &qi, NULL, &k->qpool), "vkCreateQueryPool");
    }
    return 0;
}

void vk_cmd_free(vk_ctx *c, vk_cmd *k) {
    if (!c->dev) return;
    if (k->pending) vkWaitForFences(c->dev, 1, &k->fence, VK_TRUE, UINT64_MAX);
    if (k->qpool) vkDestroyQueryPool(c->dev, k->qpool, NULL);
    if (k->pool) vkDestroyDescriptorPool(c->dev, k->pool, NULL);
    if (k->fence) vkDestroyFence(c->dev, k->fence, NULL);
    if (k->cb) vkFreeCommandBuffers(c->dev, c->cpool, 1, &k->cb);
    memset(k, 0, sizeof *k);
}

int vk_cmd_wait(vk_ctx *c, vk_cmd *k, double *ms) {
    if (!k->pending) return 0;
    double t0 = sp_now();
    VkResult r = vkWaitForFences(c->dev, 1, &k->fence, VK_TRUE, UINT64_MAX);
    c->clk.wait_ms += 1e3 * (sp_now() - t0);
    c->clk.waits++;
    k->pending = 0;
    if (r != VK_SUCCESS) return vk_fail(r, "vkWaitForFences (device lost?)");
    vkResetFences(c->dev, 1, &k->fence);
    if (ms && k->nstamps > 1) {
        uint64_t t[VK_MAX_STAMPS];
        double tq = sp_now();
        r = vkGetQueryPoolResults(c->dev, k->qpool, 0, (uint32_t)k->nstamps, sizeof t, t, sizeof(uint64_t),
                                  VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT);
        c->clk.query_ms += 1e3 * (sp_now() - tq); /* lavapipe waits here for the whole queue */
        if (r == VK_SUCCESS) {
            for (int i = 1; i < k->nstamps; i++)
                if (t[i] >= t[i - 1]) ms[k->stamp_stage[i]] += (double)(t[i] - t[i - 1]) * c->ts_period * 1e-6;
            k->t_begin = t[0], k->t_end = t[k->nstamps - 1];
            if (k->t_end >= k->t_begin) {
                vk_clock *ck = &c->clk;
                if (!ck->dev_last || k->t_begin < ck->dev_first) ck->dev_first = k->t_begin;
                if (k->t_end > ck->dev_last) ck->dev_last = k->t_end;
                ck->dev_inside_ms += (double)(k->t_end - k->t_begin) * c->ts_period * 1e-6;
            }
        }
    }
    k->nstamps = 0;
    return 0;
}

static void full_barrier(VkCommandBuffer cb) {
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                          .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
                          .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                                           VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT |
                                           VK_ACCESS_INDIRECT_COMMAND_READ_BIT};
    VkPipelineStageFlags st = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
    vkCmdPipelineBarrier(cb, st, st | VK_PIPELINE_STAGE_DRAW_INDIRECT_BIT, 0, 1, &mb, 0, NULL, 0, NULL);
}

int vk_cmd_begin(vk_ctx *c, vk_cmd *k, double *ms, int profile) {
    if (vk_cmd_wait(c, k, ms)) return -1;
    if (k->recording) { /* a recording left unfinished (an error, or one given up): start over */
        VK_TRY(vkResetCommandBuffer(k->cb, 0), "vkResetCommandBuffer");
        k->recording = 0;
    }
    VK_TRY(vkResetDescriptorPool(c->dev, k->pool, 0), "vkResetDescriptorPool");
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                   .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    VK_TRY(vkBeginCommandBuffer(k->cb, &bi), "vkBeginCommandBuffer");
    k->recording = 1;
    k->nstamps = 0;
    full_barrier(k->cb); /* order after everything submitted before */
    if (profile && k->qpool) {
        vkCmdResetQueryPool(k->cb, k->qpool, 0, VK_MAX_STAMPS);
        vkCmdWriteTimestamp(k->cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, k->qpool, 0);
        k->nstamps = 1;
    }
    return 0;
}

void vk_stamp(vk_ctx *c, vk_cmd *k, int stage) {
    if (k->nstamps == 0 || k->nstamps >= VK_MAX_STAMPS) return;
    vkCmdWriteTimestamp(k->cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, k->qpool, (uint32_t)k->nstamps);
    k->stamp_stage[k->nstamps++] = stage;
}

int vk_cmd_submit(vk_ctx *c, vk_cmd *k) {
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                          .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
                          .dstAccessMask = VK_ACCESS_HOST_READ_BIT};
    vkCmdPipelineBarrier(k->cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                         VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, NULL, 0, NULL);
    k->recording = 0;
    VK_TRY(vkEndCommandBuffer(k->cb), "vkEndCommandBuffer");
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &k->cb};
    double t0 = sp_now();
    VK_TRY(vkQueueSubmit(c->queue, 1, &si, k->fence), "vkQueueSubmit");
    c->clk.submit_ms += 1e3 * (sp_now() - t0);
    c->clk.submits++;
    k->pending = 1;
    return 0;
}

/* Allocates a set from `pool` and writes the buffers into it. */
static int write_set(vk_ctx *c, VkDescriptorPool pool, const VkBuffer *bufs, VkDescriptorSet *set) {
    VkDescriptorSetAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                      .descriptorPool = pool, .descriptorSetCount = 1, .pSetLayouts = &c->dsl};
    VK_TRY(vkAllocateDescriptorSets(c->dev, &ai, set), "vkAllocateDescriptorSets");
    VkDescriptorBufferInfo bi[VK_MAX_BINDINGS];
    VkWriteDescriptorSet w[VK_MAX_BINDINGS];
    uint32_t nw = 0;
    for (int i = 0; i < VK_MAX_BINDINGS; i++) {
        if (!bufs[i]) continue;
        bi[nw] = (VkDescriptorBufferInfo){bufs[i], 0, VK_WHOLE_SIZE};
        w[nw] = (VkWriteDescriptorSet){.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET, .dstSet = *set,
                                       .dstBinding = (uint32_t)i, .descriptorCount = 1,
                                       .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, .pBufferInfo = &bi[nw]};
        nw++;
    }
    vkUpdateDescriptorSets(c->dev, nw, w, 0, NULL);
    return 0;
}

/* The set binding these buffers: a kept one, a new kept one, or (the cache full) one from the
 * command buffer's own pool. */
static int descriptor_set(vk_ctx *c, vk_cmd *k, vk_buf *const *bufs, int nbufs, VkDescriptorSet *set) {
    VkBuffer key[VK_MAX_BINDINGS] = {0};
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < nbufs && i < VK_MAX_BINDINGS; i++) {
        key[i] = bufs[i] ? bufs[i]->buf : VK_NULL_HANDLE;
        h = (h ^ (uint64_t)(uintptr_t)key[i]) * 1099511628211ull;
    }
    h ^= h >> 29;
    for (uint32_t s = (uint32_t)(h % VK_SET_SLOTS);; s = (s + 1) % VK_SET_SLOTS) {
        vk_set_entry *e = &c->sets[s];
        if (!e->set) {
            if (c->nsets >= VK_SET_CACHE) break;
            if (write_set(c, c->set_pool, key, &e->set)) return -1;
            memcpy(e->bufs, key, sizeof key);
            c->nsets++;
            *set = e->set;
            return 0;
        }
        if (!memcmp(e->bufs, key, sizeof key)) {
            *set = e->set;
            return 0;
        }
    }
    return write_set(c, k->pool, key, set);
}

/* Pipeline, descriptor set and push constants of a dispatch. */
static int bind(vk_ctx *c, vk_cmd *k, int pipe, vk_buf *const *bufs, int nbufs, const uint32_t *words) {
    if (core_join(c)) return -1;
    if (vk_pipe_lazy(pipe) && (lazy_join(c) || (!c->pipe[pipe] && create_pipeline(c, pipe)))) return -1;
    if (!c->pipe[pipe]) return sp_error("vulkan: shader %s is not available on this device", vk_shaders[pipe].name);
    VkDescriptorSet set;
    if (descriptor_set(c, k, bufs, nbufs, &set)) return -1;
    vkCmdBindPipeline(k->cb, VK_PIPELINE_BIND_POINT_COMPUTE, c->pipe[pipe]);
    vkCmdBindDescriptorSets(k->cb, VK_PIPELINE_BIND_POINT_COMPUTE, c->playout, 0, 1, &set, 0, NULL);
    vkCmdPushConstants(k->cb, c->playout, VK_SHADER_STAGE_COMPUTE_BIT, 0, 128, words);
    return 0;
}

int vk_dispatch_indirect(vk_ctx *c, vk_cmd *k, int pipe, vk_buf *const *bufs, int nbufs, const uint32_t *words,
                         vk_buf *args, VkDeviceSize at) {
    if (bind(c, k, pipe, bufs, nbufs, words)) return -1;
    vkCmdDispatchIndirect(k->cb, args->buf, at);
    full_barrier(k->cb);
    return 0;
}

void vk_grid(const vk_ctx *c, uint32_t groups, uint32_t dims[3]) {
    int spread = groups > c->max_wg_count;
    dims[0] = spread ? 32768u : groups;
    dims[1] = spread ? (groups + 32767u) / 32768u : 1u;
    dims[2] = 1u;
}

int vk_dispatch(vk_ctx *c, vk_cmd *k, int pipe, vk_buf *const *bufs, int nbufs, const uint32_t *words,
                uint32_t groups) {
    if (groups == 0) return 0;
    if (bind(c, k, pipe, bufs, nbufs, words)) return -1;
    uint32_t d[3];
    vk_grid(c, groups, d);
    vkCmdDispatch(k->cb, d[0], d[1], d[2]);
    full_barrier(k->cb);
    return 0;
}

void vk_fill_nobarrier(vk_cmd *k, vk_buf *b, VkDeviceSize off, VkDeviceSize bytes, uint32_t value) {
    if (bytes == 0) return;
    vkCmdFillBuffer(k->cb, b->buf, off, (bytes + 3) & ~(VkDeviceSize)3, value);
}

void vk_fill(vk_cmd *k, vk_buf *b, VkDeviceSize off, VkDeviceSize bytes, uint32_t value) {
    if (bytes == 0) return;
    vk_fill_nobarrier(k, b, off, bytes, value);
    full_barrier(k->cb);
}

void vk_copy(vk_cmd *k, vk_buf *src, VkDeviceSize soff, vk_buf *dst, VkDeviceSize doff, VkDeviceSize bytes) {
    if (bytes == 0) return;
    VkBufferCopy reg = {soff, doff, bytes};
    vkCmdCopyBuffer(k->cb, src->buf, dst->buf, 1, &reg);
    full_barrier(k->cb);
}
