#version 450
// pair_args.comp — the sizes of `sort` and `tile_ranges`, read from the pair count on the device
// (offsets[n] after the count's scan), so that their command buffer is recorded before the count
// is known and sized by vkCmdDispatchIndirect. One invocation writes, as uint words:
//   0-2 sort passes' workgroups (x, y, 1), 3-5 tile_ranges' workgroups, 6-17 the workgroups of the
//   four levels of the histogram's scan, 18 the pair count, 19 the sort's chunk count,
//   20-23 the element count of each scan level.
// A count of workgroups beyond the device's limit per dimension is spread over y, as the host's
// vk_dispatch does (shaders find their group as x + y * num_x and bound-check).
// Args: n, the device's workgroup limit per dimension.
#include "common.glsl"

#define CHUNK (4u * WG)

layout(std430, binding = 0) readonly buffer B0 { uint offsets[]; };
layout(std430, binding = 1) writeonly buffer B1 { uint args[]; };

void dims(uint at, uint groups, uint limit) {
    bool spread = groups > limit;
    args[at] = spread ? 32768u : groups;
    args[at + 1u] = spread ? (groups + 32767u) / 32768u : 1u;
    args[at + 2u] = 1u;
}

void main() {
    if (gl_GlobalInvocationID.x != 0u) return;
    uint limit = pc.u[ARG(1)];
    uint np = offsets[pc.u[ARG(0)]], groups = (np + CHUNK - 1u) / CHUNK;
    dims(0u, groups, limit);
    dims(3u, (np + WG - 1u) / WG, limit);
    uint m = groups * 256u;
    for (uint l = 0u; l < 4u; l++) {
        uint g = (m + CHUNK - 1u) / CHUNK;
        dims(6u + 3u * l, g, limit);
        args[20u + l] = m;
        m = g;
    }
    args[18] = np;
    args[19] = groups;
}
