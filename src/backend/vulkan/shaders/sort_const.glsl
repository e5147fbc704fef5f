// sort_const.glsl — the sizes of the `sort` radix sort and where its words sit in pargs (the
// buffer pair_args.comp fills), written so that both GLSL and C read this file: the shaders
// sort_count, sort_scan, sort_hist, sort_scatter, pair_args, tile_ranges and warp_masks include it, and so
// does vk_backend.h, which sizes pargs and the histogram and records the dispatches.
#ifndef SPLAT_VK_SORT_CONST
#define SPLAT_VK_SORT_CONST

#define VK_DEPTH_KEY_DROP 4 /* tile_cull.h's SP_DEPTH_KEY_DROP (vk_backend.c checks they agree) */
#define VK_SORT_KPT 8u                           /* keys per invocation of sort_hist / sort_scatter */
#define VK_SORT_CHUNK (VK_SORT_KPT * 256u)       /* keys per workgroup (a chunk): 2048 */
#define VK_SORT_COUNT_CHUNKS 4u                  /* chunks per workgroup of sort_count */
#define VK_SORT_MAX_PASSES 8u                    /* 8-bit digits of a 64-bit key */
#define VK_SORT_SLOTS 8u                         /* sort_scatter's rank counters: 8 sets of 256 */
/* pargs words of the sort's plan (sort_scan.comp, pass 0, writes them): per pass p, 8 words from
 * VK_PA_SORT_PLAN + 8 p: sort_hist's workgroups (x, y, 1), sort_scatter's workgroups (x, y, 1),
 * the set (0 or 1) the pass reads, and 1 when it writes the low key words (every pass but the
 * last that runs). Then the set that holds the sorted keys after the last pass. */
#define VK_PA_SORT_PLAN 40u
#define VK_PA_SORT_FINAL (VK_PA_SORT_PLAN + 8u * VK_SORT_MAX_PASSES)
/* The pair keys' layout (pargs words; emit_pairs.comp, docs/math.md). VK_PA_SPAN, + 1: the smallest
 * depth key >> VK_DEPTH_KEY_DROP of the Gaussians that touch a tile and the complement of the
 * largest (emit_count.comp's atomicMin; pair_args.comp reads them and sets them to 0xffffffff for
 * the next count: leftovers only widen the span). VK_PA_KEY, + 1: that smallest, lo, and the
 * shift d (the bit width of largest - lo) when d and the tile ids fit in 32 bits: one-word keys
 * tile << d | (depth key >> VK_DEPTH_KEY_DROP) - lo in key_lo, the last sort pass writing them into
 * key_hi's set (where tile_ranges and warp_masks read the tiles); else 32: two words, the tile in
 * key_hi and the depth key in key_lo. Both order the pairs alike. */
#define VK_PA_SPAN 20u
#define VK_PA_KEY 22u
#define VK_KEY_TILE(k, shift) ((shift) < 32u ? (k) >> (shift) : (k))
/* the digit counts over all keys, [pass][256], zeroed by pair_args and summed by sort_count */
#define VK_PA_SORT_DIGITS 128u
#define VK_PA_SORT_END (VK_PA_SORT_DIGITS + 256u * VK_SORT_MAX_PASSES)

#endif
