#version 450
// emit_count.comp — first half of `emit_pairs`: how many tiles each visible Gaussian reaches
// (tile culling, tilecull.glsl). Thread n writes the trailing 0 that makes the exclusive scan's
// last entry the pair total. The depth span of the Gaussians that reach a tile goes into pargs
// (sort_const.glsl, VK_PA_SPAN: a subgroup's minimum, then one atomicMin). Args: n.
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "common.glsl"
#include "tilecull.glsl"
#include "sort_const.glsl"

layout(std430, binding = 0) readonly buffer B0 { float mean2d[]; };
layout(std430, binding = 1) readonly buffer B1 { float conic[]; };
layout(std430, binding = 2) readonly buffer B2 { float opac[]; };
layout(std430, binding = 3) readonly buffer B3 { int rect[]; };
layout(std430, binding = 4) writeonly buffer B4 { uint touched[]; };
layout(std430, binding = 5) readonly buffer B5 { float depth[]; };
layout(std430, binding = 6) buffer B6 { uint args[]; };

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
    uint v = c != 0u ? floatBitsToUint(depth[i]) >> VK_DEPTH_KEY_DROP : 0u; // tile_cull.h's sp_depth_key
    uint lo = subgroupMin(c != 0u ? v : 0xffffffffu), nhi = subgroupMin(c != 0u ? ~v : 0xffffffffu);
    if (subgroupElect() && lo != 0xffffffffu) {
        atomicMin(args[VK_PA_SPAN], lo);
        atomicMin(args[VK_PA_SPAN + 1u], nhi);
    }
}
