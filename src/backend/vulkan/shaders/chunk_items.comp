#version 450
// chunk_items.comp — the chunked backward_raster's work list (chunks.glsl), after rasterize wrote
// each tile's chunk count and the scan turned the counts into first items: one invocation per
// tile writes its (tile, chunk) items; invocation 0 writes the backward's indirect workgroup
// counts, `parts` workgroups per item (x, y, 1 at word `at` of args; spread over y beyond the
// device's limit, as the host's vk_dispatch does: surplus workgroups find no item and return).
// Args: tiles, the device's workgroup limit per dimension, at, parts.
#include "common.glsl"
#include "chunks.glsl"

layout(std430, binding = 0) buffer B0 { uint work[]; };
layout(std430, binding = 1) buffer B1 { uint args[]; };
#include "grid.glsl"

void main() {
    uint t = gid(), tiles = pc.u[ARG(0)];
    if (t == 0u) {
        write_grid(pc.u[ARG(2)], work[tiles] * pc.u[ARG(3)], pc.u[ARG(1)]);
    }
    if (t >= tiles) return;
    uint first = work[t], cnt = work[t + 1u] - first, at = WORK_ITEMS(tiles) + 2u * first;
    for (uint j = 0u; j < cnt; j++) {
        work[at + 2u * j] = t;
        work[at + 2u * j + 1u] = j;
    }
}
