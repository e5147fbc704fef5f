#version 450
// tile_ranges.comp — stage `tile_ranges`: start and end of every tile's run in the sorted pairs,
// and the Gaussian index of every sorted pair. An empty tile gets [k, k) with k the number of pairs
// of the tiles before it, as in the CPU reference (the pair that starts the next run writes it).
// The pair count comes from args (pair_args.comp: word 18). Args: -, tile count.
#include "common.glsl"

layout(std430, binding = 0) readonly buffer B0 { uint key_hi[]; };
layout(std430, binding = 1) readonly buffer B1 { uint val[]; };
layout(std430, binding = 2) readonly buffer B2 { uint pair_gid[]; };
layout(std430, binding = 3) buffer B3 { uint range[]; };
layout(std430, binding = 4) writeonly buffer B4 { uint sorted_gid[]; };
layout(std430, binding = 5) readonly buffer B5 { uint args[]; };

void main() {
    uint s = gid();
    uint np = args[18];
    if (s >= np) return;
    uint tile = key_hi[s], tiles = pc.u[ARG(1)];
    if (s == 0u || key_hi[s - 1] != tile) {
        for (uint t = s == 0u ? 0u : key_hi[s - 1] + 1u; t < tile; t++) {
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
    } else if (key_hi[s + 1] != tile) {
        range[2 * tile + 1] = s + 1u;
    }
    sorted_gid[s] = pair_gid[val[s]];
}
