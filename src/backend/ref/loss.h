/* loss.h — constants and helpers of the `loss` stage (fused L1 + D-SSIM) shared by the CPU
 * reference in loss.c, the GPU kernels and the evaluation metrics. The stage functions
 * themselves (cpu_loss, sp_ssim) are declared in stages.h. */
#ifndef SPLAT_REF_LOSS_H
#define SPLAT_REF_LOSS_H

#define SP_SSIM_RADIUS 5 /* window is (2 * radius + 1)^2 = 11 x 11 */
#define SP_SSIM_WINDOW (2 * SP_SSIM_RADIUS + 1)
#define SP_SSIM_SIGMA 1.5
#define SP_SSIM_C1 (0.01 * 0.01)
#define SP_SSIM_C2 (0.03 * 0.03)

/* The normalized 1-D Gaussian window (sums to 1); the 2-D window is its outer product. */
void sp_ssim_window(double g[SP_SSIM_WINDOW]);

#endif
