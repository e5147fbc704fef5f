// masks.glsl — the warp masks: what warp_masks.comp writes per sorted pair and how rasterize and
// backward_raster read them (docs/vulkan.md; the CUDA backend's k_warp_masks).
// A tile's 256 places in tile_pixel order (common.glsl) fall into 8 rectangles of RECT_W x RECT_H
// pixels: rectangle r holds places 32 r .. 32 r + 31 (Morton order: five consecutive bits of the
// place are x bits 0-2 and y bits 0-1), its top-left pixel is tile_pixel(32 r). Bit r of a pair's
// mask says whether the pair's Gaussian reaches a pixel centre of rectangle r of the pair's tile
// (rect_hit of tilecull.glsl at the tile test's level tau: conservative, so a Gaussian a pixel of
// the rectangle blends always has its bit). Four pairs share a uint: pair k's mask is byte k % 4
// of word k / 4 (no 8-bit storage needed).
//
// A subgroup of the raster shaders reads the masks through the set of rectangles its invocations
// sit in, SG_RECTS: the OR over its lanes of each lane's own rectangle bit, so it is right for any
// subgroup size and any placement of invocations in subgroups. With the usual placement (a
// workgroup's invocations fill its subgroups in order, and the workgroup is a multiple of the
// subgroup size) a subgroup of 4, 8, 16 or 32 lanes lies inside one rectangle (one bit), one of 64
// covers two (an 8x8 square: a Gaussian is taken when it reaches either), and so do the 64
// invocations of a workgroup on a device with subgroups of 128 (four in the deterministic
// backward's workgroups of 256). A Gaussian whose mask has none of the subgroup's bits is blended
// by none of its pixels.
#define RECT_W 8
#define RECT_H 4

// The mask of sorted pair k (a uint), with the masks bound as `wmask`.
#define PAIR_MASK(k) ((wmask[(k) >> 2] >> (((k) & 3u) << 3)) & 0xffu)
// The rectangles of this invocation's subgroup (needs GL_KHR_shader_subgroup_arithmetic), for the
// invocation at place t of the tile.
#define SG_RECTS(t) subgroupOr(1u << ((t) >> 5))
// Lanes of this invocation's subgroup that hold invocations: the subgroup size, or the workgroup
// size when that is smaller (a workgroup of 64 on a device with subgroups of 128 is one partial
// subgroup, its invocations taken to be lanes 0 .. 63). Each subgroup walks its tile's list
// SG_LANES positions at a time, lane l taking position base + l into slot
// gl_SubgroupID * SG_LANES + l of the workgroup's shared arrays, so every lane from 0 to
// SG_LANES - 1 must hold an invocation: true where drivers fill subgroups (a workgroup of 64 is a
// whole number of subgroups of 4 .. 64 lanes), and assumed of the partial one (the reduce-scatter's
// shuffles, reduce9.glsl, assume it as well).
#define SG_LANES min(gl_SubgroupSize, uint(WG))
