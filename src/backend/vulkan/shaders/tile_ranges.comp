#version 450
// tile_ranges.comp — stage `tile_ranges`: start and end of every tile's run in the sorted pairs,
// and the Gaussian index of every sorted pair. An empty tile gets [k, k) with k the number of pairs
// of the tiles before it, as in the CPU reference (the pair that starts the next run writes it).
// The sorted pairs are in the set of key and value buffers the sort's plan names (sort_const.glsl:
// it depends on how many passes ran), the tile in key_hi (or its high bits: VK_KEY_TILE); with Args' keep set, values left in the other set are copied
// to the set `keep - 1` (the one the host binds to the deterministic backward_raster).
// The pair count comes from args (pair_args.comp: word 18). Args: -, tile count, keep.
#include "common.glsl"
#include "sort_const.glsl"

layout(std430, binding = 0) readonly buffer B0 { uint key_hi0[]; };
layout(std430, binding = 1) readonly buffer B1 { uint key_hi1[]; };
layout(std430, binding = 2) buffer B2 { uint val0[]; };
layout(std430, binding = 3) buffer B3 { uint val1[]; };
layout(std430, binding = 4) readonly buffer B4 { uint pair_gid[]; };
layout(std430, binding = 5) buffer B5 { uint range[]; };
layout(std430, binding = 6) writeonly buffer B6 { uint sorted_gid[]; };
layout(std430, binding = 7) readonly buffer B7 { uint args[]; };

uint shift;
uint key(uint set, uint s) { return VK_KEY_TILE(set == 0u ? key_hi0[s] : key_hi1[s], shift); }

void main() {
    uint s = gid();
    uint np = args[18];
    if (s >= np) return;
    shift = args[VK_PA_KEY + 1u];
    uint set = args[VK_PA_SORT_FINAL], keep = pc.u[ARG(2)];
    uint tile = key(set, s), tiles = pc.u[ARG(1)];
    if (s == 0u || key(set, s - 1u) != tile) {
        for (uint t = s == 0u ? 0u : key(set, s - 1u) + 1u; t < tile; t++) {
            range[2 * t] = s;
            range[2 * t + 1] = s;
        }
        range[2 * tile] = s;
    }
    if (s == np - 1u) {
        range[2 * tile + 1] = np;
        for (uint t = tile + 1u; t < tiles; t++) {
            range[2 * t] = np;
            range[2 * t + 1] = np;
        }
    } else if (key(set, s + 1u) != tile) {
        range[2 * tile + 1] = s + 1u;
    }
    uint v = set == 0u ? val0[s] : val1[s];
    sorted_gid[s] = pair_gid[v];
    if (keep == 2u && set == 0u) val1[s] = v;
    if (keep == 1u && set == 1u) val0[s] = v;
}
