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
/* the digit counts over all keys, [pass][256], zeroed by pair_args and summed by sort_count */
#define VK_PA_SORT_DIGITS 128u
#define VK_PA_SORT_END (VK_PA_SORT_DIGITS + 256u * VK_SORT_MAX_PASSES)

#endif
