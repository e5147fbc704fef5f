/* shaders.c — the Vulkan backend's compute shaders as SPIR-V words, compiled from
 * shaders/NAME.comp by glslc at build time (the Makefile writes one NAME.spv.h per shader into
 * the build folder) and embedded here, in the order of the VP_* pipeline enum. */
#include "backend/vulkan/vk_internal.h"

static const uint32_t spv_project[] =
#include "project.spv.h"
    ;
static const uint32_t spv_emit_count[] =
#include "emit_count.spv.h"
    ;
static const uint32_t spv_emit_pairs[] =
#include "emit_pairs.spv.h"
    ;
static const uint32_t spv_scan_block[] =
#include "scan_block.spv.h"
    ;
static const uint32_t spv_scan_add[] =
#include "scan_add.spv.h"
    ;
static const uint32_t spv_sort_hist[] =
#include "sort_hist.spv.h"
    ;
static const uint32_t spv_sort_scatter[] =
#include "sort_scatter.spv.h"
    ;
static const uint32_t spv_sort_count[] =
#include "sort_count.spv.h"
    ;
static const uint32_t spv_sort_scan[] =
#include "sort_scan.spv.h"
    ;
static const uint32_t spv_tile_ranges[] =
#include "tile_ranges.spv.h"
    ;
static const uint32_t spv_warp_masks[] =
#include "warp_masks.spv.h"
    ;
static const uint32_t spv_rasterize[] =
#include "rasterize.spv.h"
    ;
static const uint32_t spv_rasterize_w[] =
#include "rasterize_w.spv.h"
    ;
static const uint32_t spv_backward_raster[] =
#include "backward_raster.spv.h"
    ;
static const uint32_t spv_backward_raster_cas[] =
#include "backward_raster_cas.spv.h"
    ;
static const uint32_t spv_backward_raster_det[] =
#include "backward_raster_det.spv.h"
    ;
static const uint32_t spv_grad_gather[] =
#include "grad_gather.spv.h"
    ;
static const uint32_t spv_project_back[] =
#include "project_back.spv.h"
    ;
static const uint32_t spv_adam[] =
#include "adam.spv.h"
    ;
static const uint32_t spv_loss_ssim[] =
#include "loss_ssim.spv.h"
    ;
static const uint32_t spv_loss_grad[] =
#include "loss_grad.spv.h"
    ;
static const uint32_t spv_refine_gather[] =
#include "refine_gather.spv.h"
    ;
static const uint32_t spv_finite[] =
#include "finite.spv.h"
    ;
static const uint32_t spv_pair_args[] =
#include "pair_args.spv.h"
    ;
static const uint32_t spv_chunk_items[] =
#include "chunk_items.spv.h"
    ;
static const uint32_t spv_mcmc[] =
#include "mcmc.spv.h"
    ;
static const uint32_t spv_mcmc_weights[] =
#include "mcmc_weights.spv.h"
    ;
static const uint32_t spv_mcmc_blocks[] =
#include "mcmc_blocks.spv.h"
    ;
static const uint32_t spv_mcmc_finish[] =
#include "mcmc_finish.spv.h"
    ;
static const uint32_t spv_mcmc_draw[] =
#include "mcmc_draw.spv.h"
    ;
static const uint32_t spv_mcmc_spread[] =
#include "mcmc_spread.spv.h"
    ;
static const uint32_t spv_mcmc_apply[] =
#include "mcmc_apply.spv.h"
    ;
static const uint32_t spv_score[] =
#include "score.spv.h"
    ;
static const uint32_t spv_reorder_box[] =
#include "reorder_box.spv.h"
    ;
static const uint32_t spv_reorder_codes[] =
#include "reorder_codes.spv.h"
    ;
static const uint32_t spv_reorder_gather[] =
#include "reorder_gather.spv.h"
    ;

#define S(name) {#name, spv_##name, sizeof spv_##name}
const vk_spirv vk_shaders[VP_COUNT] = {
    S(project),      S(emit_count),      S(emit_pairs),  S(scan_block),  S(scan_add),
    S(sort_hist),    S(sort_scatter),    S(sort_count),  S(sort_scan),   S(tile_ranges), S(warp_masks), S(rasterize),   S(backward_raster),
    S(backward_raster_cas), S(backward_raster_det), S(grad_gather), S(project_back), S(adam),
    S(loss_ssim),    S(loss_grad),
    S(refine_gather), S(finite), S(pair_args), S(chunk_items), S(rasterize_w), S(mcmc),
    S(mcmc_weights), S(mcmc_blocks), S(mcmc_finish), S(mcmc_draw), S(mcmc_spread), S(mcmc_apply), S(score),
    S(reorder_box), S(reorder_codes), S(reorder_gather),
};
