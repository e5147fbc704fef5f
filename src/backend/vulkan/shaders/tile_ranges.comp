#version 450
// tile_ranges.comp — stage `tile_ranges`: start and end of every tile's run in the sorted pairs
// (ranges are zeroed first: empty tiles stay [0, 0)), and the Gaussian index of every sorted pair.
// Args: pair count.
#include "common.glsl"

layout(std430, binding = 0) readonly buffer B0 { uint key_hi[]; };
layout(std430, binding = 1) readonly buffer B1 { uint val[]; };
layout(std430, binding = 2) readonly buffer B2 { uint pair_gid[]; };
layout(std430, binding = 3) buffer B3 { uint range[]; };
layout(std430, binding = 4) writeonly buffer B4 { uint sorted_gid[]; };

void main() {
    uint s = gid();
    uint np = pc.u[ARG(0)];
    if (s >= np) return;
    uint tile = key_hi[s];
    if (s == 0u || key_hi[s - 1] != tile) range[2 * tile] = s;
    if (s == np - 1u || key_hi[s + 1] != tile) range[2 * tile + 1] = s + 1u;
    sorted_gid[s] = pair_gid[val[s]];
}
