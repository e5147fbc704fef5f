#version 450
// emit_pairs.comp — second half of `emit_pairs`: each visible Gaussian writes one key per tile it
// reaches, at its scanned offset, tiles of its rect row-major: key (tile, depth bits) as one 32-bit
// word or two (sort_const.glsl, VK_PA_KEY: pair_args.comp's layout), the pair's own index as the
// sort value and the Gaussian's index. Args: n.
#include "common.glsl"
#include "tilecull.glsl"
#include "sort_const.glsl"

layout(std430, binding = 0) readonly buffer B0 { float mean2d[]; };
layout(std430, binding = 1) readonly buffer B1 { float conic[]; };
layout(std430, binding = 2) readonly buffer B2 { float opac[]; };
layout(std430, binding = 3) readonly buffer B3 { int rect[]; };
layout(std430, binding = 4) readonly buffer B4 { float depth[]; };
layout(std430, binding = 5) readonly buffer B5 { uint offsets[]; };
layout(std430, binding = 6) writeonly buffer B6 { uint key_hi[]; };
layout(std430, binding = 7) writeonly buffer B7 { uint key_lo[]; };
layout(std430, binding = 8) writeonly buffer B8 { uint val[]; };
layout(std430, binding = 9) writeonly buffer B9 { uint pair_gid[]; };
layout(std430, binding = 10) readonly buffer B10 { uint args[]; };

void main() {
    uint i = gid();
    uint n = pc.u[ARG(0)];
    if (i >= n) return;
    ivec4 r = ivec4(rect[4 * i], rect[4 * i + 1], rect[4 * i + 2], rect[4 * i + 3]);
    if (!(r.x < r.z && r.y < r.w)) return;
    Ell e = tile_ellipse(mean2d[2 * i], mean2d[2 * i + 1], conic[3 * i], conic[3 * i + 1], conic[3 * i + 2], opac[i]);
    uint o = offsets[i];
    uint db = floatBitsToUint(depth[i]) & ~((1u << VK_DEPTH_KEY_DROP) - 1u); // tile_cull.h's sp_depth_key
    uint shift = args[VK_PA_KEY + 1u], dk = (db >> VK_DEPTH_KEY_DROP) - args[VK_PA_KEY];
    for (int y = r.y; y < r.w; y++)
        for (int x = r.x; x < r.z; x++)
            if (tile_hit(e, x, y)) {
                uint tile = uint(y * TILES_X + x);
                if (shift < 32u) {
                    key_lo[o] = (tile << shift) | dk;
                } else {
                    key_hi[o] = tile;
                    key_lo[o] = db;
                }
                val[o] = o;
                pair_gid[o] = i;
                o++;
            }
}
