#version 450
// emit_count.comp — first half of `emit_pairs`: how many tiles each visible Gaussian reaches
// (tile culling, tilecull.glsl). Thread n writes the trailing 0 that makes the exclusive scan's
// last entry the pair total. Args: n.
#include "common.glsl"
#include "tilecull.glsl"

layout(std430, binding = 0) readonly buffer B0 { float mean2d[]; };
layout(std430, binding = 1) readonly buffer B1 { float conic[]; };
layout(std430, binding = 2) readonly buffer B2 { float opac[]; };
layout(std430, binding = 3) readonly buffer B3 { int rect[]; };
layout(std430, binding = 4) writeonly buffer B4 { uint touched[]; };

void main() {
    uint i = gid();
    uint n = pc.u[ARG(0)];
    if (i > n) return;
    uint c = 0;
    if (i < n) {
        ivec4 r = ivec4(rect[4 * i], rect[4 * i + 1], rect[4 * i + 2], rect[4 * i + 3]);
        if (r.x < r.z && r.y < r.w) {
            Ell e = tile_ellipse(mean2d[2 * i], mean2d[2 * i + 1], conic[3 * i], conic[3 * i + 1], conic[3 * i + 2], opac[i]);
            for (int y = r.y; y < r.w; y++)
                for (int x = r.x; x < r.z; x++) c += tile_hit(e, x, y) ? 1u : 0u;
        }
    }
    touched[i] = c;
}
