#version 450
// pair_args.comp — the sizes of `sort` and `tile_ranges`, read from the pair count on the device
// (offsets[n] after the count's scan), so that a training step is recorded and submitted as one
// command buffer before the count is known and sized by vkCmdDispatchIndirect. One invocation
// writes, as uint words:
//   0-2 sort_count's workgroups (x, y, 1), 3-5 tile_ranges' workgroups, 18 the pair count, 19 the
//   sort's chunk count (VK_SORT_CHUNK keys each), (24-26: backward_raster's, chunk_items.comp),
//   20-23 the pair keys' layout from the depth span emit_count.comp left (sort_const.glsl,
//   VK_PA_SPAN and VK_PA_KEY: one word when a tile count is given and it fits, else two),
//   27-35 the workgroups of the three gated dispatch sizes (the host's counts, as they are),
//   36 the overflow flag;
// and the workgroup zeroes the sort's digit counts (sort_const.glsl; sort_scan.comp writes the
// rest of the sort's sizes once the keys are counted).
// When the count exceeds the pair buffers' capacity, or the flag is already set (an earlier step
// overflowed and has not been run again yet: the host clears it when it does), the flag is set and
// every size above is 0: the step's pair work and every dispatch that changes the model (the gated
// ones: emit_pairs, grad_gather, project_back, the MCMC terms, adam) do nothing, and the host, seeing
// the flag, grows the pair buffers and records the step again (vk_backend.c).
// A count of workgroups beyond the device's limit per dimension is spread over y, as the host's
// vk_dispatch does (shaders find their group as x + y * num_x and bound-check).
// Args: n, the device's workgroup limit per dimension, the pair capacity, the three gated sizes,
// the tile count (0: two-word keys, as the host sorts them in the stage harness).
#include "common.glsl"
#include "sort_const.glsl"

#define GATES 27u
#define OVERFLOW 36u

layout(std430, binding = 0) readonly buffer B0 { uint offsets[]; };
layout(std430, binding = 1) buffer B1 { uint args[]; };

#include "grid.glsl"

void main() {
    for (uint i = gl_LocalInvocationID.x; i < VK_PA_SORT_END - VK_PA_SORT_DIGITS; i += WG) args[VK_PA_SORT_DIGITS + i] = 0u;
    if (gl_GlobalInvocationID.x != 0u) return;
    uint limit = pc.u[ARG(1)];
    uint np = offsets[pc.u[ARG(0)]];
    bool skip = args[OVERFLOW] != 0u || np > pc.u[ARG(2)];
    if (skip) np = 0u;
    uint groups = (np + VK_SORT_CHUNK - 1u) / VK_SORT_CHUNK;
    write_grid(0u, (groups + VK_SORT_COUNT_CHUNKS - 1u) / VK_SORT_COUNT_CHUNKS, limit);
    write_grid(3u, (np + WG - 1u) / WG, limit);
    args[18] = np;
    args[19] = groups;
    for (uint g = 0u; g < 3u; g++) write_grid(GATES + 3u * g, skip ? 0u : pc.u[ARG(3 + int(g))], limit);
    if (skip) args[OVERFLOW] = 1u;
    // the key layout (cuda_pair_keys on CUDA): d = bit width of the span, tb of the tile ids
    uint lo = args[VK_PA_SPAN], hi = ~args[VK_PA_SPAN + 1u], tiles = pc.u[ARG(6)];
    uint span = hi > lo ? hi - lo : 0u, d = 0u, tb = 0u;
    while (d < 32u && (span >> d) != 0u) d++;
    while (tb < 32u && (1u << tb) <= tiles) tb++;
    args[VK_PA_KEY] = lo;
    args[VK_PA_KEY + 1u] = tiles != 0u && d + tb <= 32u ? d : 32u;
    args[VK_PA_SPAN] = 0xffffffffu;
    args[VK_PA_SPAN + 1u] = 0xffffffffu;
}
