// chunks.glsl — what rasterize, chunk_items and backward_raster share about the per-pixel backward
// in chunks (docs/vulkan.md): a tile's list is walked backward by one item per CHUNK list
// positions (the tile's 256 pixels in one workgroup, or in several: masks.glsl), each starting from
// the per-pixel state the forward pass stored at its chunk's end.
//   state (vec4 T, colour in front): tile t's slots start at chunk_first(start_t, t); the slot of
//     list offset o is chunk_first + o / CHUNK, TILE_PX pixels each (indexed by the pixel's place
//     in the tile). start / CHUNK + t leaves room for every tile without a scan:
//     (pairs / CHUNK + tiles + 2) slots in all (vk_chunk_slots).
//   work (uint): [0, tiles] chunk count per tile, scanned in place into each tile's first item
//     (entry `tiles` becomes the item total); [WORK_MAXC, + tiles) each tile's largest
//     contributor count (rasterize takes maxima over its workgroups into both: the host zeroes
//     them first); from WORK_ITEMS, (tile, chunk) pairs, one per item of the backward.
// CHUNK is a multiple of the batch a subgroup of rasterize walks (SG_LANES: a power of two, at
// most 64), so every chunk starts at a batch's start.
#include "chunk_const.glsl"
#define CHUNK VK_BWD_CHUNK
#define TILE_PX 256u
#define WORK_MAXC(tiles) ((tiles) + 1u)
#define WORK_ITEMS(tiles) (2u * (tiles) + 1u)

uint chunk_first(uint start, uint tile) { return start / CHUNK + tile; }
