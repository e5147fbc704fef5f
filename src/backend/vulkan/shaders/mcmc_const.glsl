// mcmc_const.glsl — the constants of backend/mcmc_rule.h that the Vulkan shaders need (shaders/
// mcmc_rule.glsl), written so that both GLSL and C read this file: the C side of the backend
// (vk_mcmc.c) includes it and checks each value against mcmc_rule.h, at compile time where the
// header names it and by recomputing draws at the first use where it does not (the 64-bit mixing
// constants, as (low, high) pairs of 32-bit words here: GLSL has no 64-bit integers).
#ifndef SPLAT_VK_MCMC_CONST
#define SPLAT_VK_MCMC_CONST

#define VK_MCMC_MAX_COPIES 51   /* SP_MCMC_MAX_COPIES */
#define VK_MCMC_WEIGHT_BITS 24  /* SP_MCMC_WEIGHT_ONE = 2^24 */
/* sp_mcmc_mix's multipliers and sp_mcmc_draw_point's stream and draw multipliers */
#define VK_MCMC_MIX1_LO 0x1CE4E5B9u
#define VK_MCMC_MIX1_HI 0xBF58476Du
#define VK_MCMC_MIX2_LO 0x133111EBu
#define VK_MCMC_MIX2_HI 0x94D049BBu
#define VK_MCMC_STREAM_LO 0x7F4A7C15u
#define VK_MCMC_STREAM_HI 0x9E3779B9u
#define VK_MCMC_DRAW_LO 0xD192ED03u
#define VK_MCMC_DRAW_HI 0xD1B54A32u
/* sp_mcmc_spread's opacity margin 1e-6, a double as (low, high) words */
#define VK_MCMC_EPS_LO 0xA0B5ED8Du
#define VK_MCMC_EPS_HI 0x3EB0C6F7u

#endif
