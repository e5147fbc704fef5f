#version 450
// warp_masks.comp — part of `tile_ranges` (profiled with it): after the sort, each sorted pair's
// warp mask (masks.glsl): bit r set when the pair's Gaussian reaches a pixel centre of the r-th
// 8x4 rectangle of the pair's tile (tilecull.glsl's rect_hit at the tile test's level). rasterize
// and backward_raster then load into a subgroup only the Gaussians that reach its pixels and test
// nothing more. One invocation per four consecutive pairs (one mask word); the pair count comes
// from args (pair_args.comp: word 18), the workgroups are tile_ranges' (words 3-5: one per WG
// pairs, four times what the words need; the rest leave at once). Reads the sorted tile words
// (key_hi of the set the sort's plan names, VK_KEY_TILE of them: sort_const.glsl) and sorted_gid.
#include "common.glsl"
#include "tilecull.glsl"
#include "masks.glsl"
#include "sort_const.glsl"

layout(std430, binding = 0) readonly buffer B0 { uint key_hi0[]; };
layout(std430, binding = 1) readonly buffer B1 { uint key_hi1[]; };
layout(std430, binding = 2) readonly buffer B2 { uint sorted_gid[]; };
layout(std430, binding = 3) readonly buffer B3 { float mean2d[]; };
layout(std430, binding = 4) readonly buffer B4 { float conic[]; };
layout(std430, binding = 5) readonly buffer B5 { float opac[]; };
layout(std430, binding = 6) readonly buffer B6 { uint args[]; };
layout(std430, binding = 7) writeonly buffer B7 { uint wmask[]; };

void main() {
    uint w = gid(), np = args[18];
    if (4u * w >= np) return;
    uint set = args[VK_PA_SORT_FINAL];
    uint word = 0u;
    for (uint u = 0u; u < 4u; u++) {
        uint k = 4u * w + u;
        if (k >= np) break;
        uint tile = VK_KEY_TILE(set == 0u ? key_hi0[k] : key_hi1[k], args[VK_PA_KEY + 1u]), id = sorted_gid[k];
        int tx = int(tile) % TILES_X, ty = int(tile) / TILES_X;
        Ell e = tile_ellipse(mean2d[2 * id], mean2d[2 * id + 1], conic[3 * id], conic[3 * id + 1], conic[3 * id + 2],
                             opac[id]);
        uint m = 0u;
        [[unroll]] for (uint r = 0u; r < 8u; r++) {
            ivec2 o = tile_pixel(32u * r);
            if (rect_hit(e, tx * 16 + o.x, ty * 16 + o.y, RECT_W, RECT_H)) m |= 1u << r;
        }
        word |= m << (8u * u);
    }
    wmask[w] = word;
}
