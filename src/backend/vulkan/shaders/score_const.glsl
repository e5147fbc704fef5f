// score_const.glsl — the tiling of score.comp and the layout of its table, written so that both
// GLSL and C read this file: score.comp includes it, and so does vk_backend.h, which sizes the
// dispatch and writes the table (vk_score in vk_backend.c).
#ifndef SPLAT_VK_SCORE_CONST
#define SPLAT_VK_SCORE_CONST

#define VK_SCORE_TILE 16 /* a workgroup's output tile: 16 x 16 pixels of one channel */
/* The table (doubles) at the start of score.comp's binding 2: v / 255 as sp_ssim_u8 takes it
 * (rounded to float) for v = 0..255, then the 11 window weights (sp_ssim_window), C1 and C2;
 * the workgroups' partial sums follow it from double VK_SCORE_TAB on. */
#define VK_SCORE_WIN 256
#define VK_SCORE_C1 267
#define VK_SCORE_C2 268
#define VK_SCORE_TAB 272

#endif
