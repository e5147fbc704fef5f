/* tile_cull.h — does a projected Gaussian reach a tile? Shared by the CPU and CUDA backends so that
 * both emit exactly the same (tile, Gaussian) pairs (docs/math.md, emit_pairs).
 *
 * A Gaussian's tile rect is the bounding box of its ellipse q(d) = A dx^2 + 2 B dx dy + C dy^2 <= tau
 * with tau = 2 ln(255 sigma) (beyond it alpha < 1/255 and nothing is blended). For thin or tilted
 * ellipses most tiles of the box are never reached; a tile is kept when the minimum of q over its
 * pixel centres' square is <= tau. The minimum of the convex q over a box that does not hold the
 * mean lies on an edge, where it is a 1D quadratic clamped to the edge.
 *
 * Every step is rounded as written (no fused multiply-adds on the device) and tau is computed in
 * double, so host and device decide identically. */
#ifndef SPLAT_TILE_CULL_H
#define SPLAT_TILE_CULL_H

#include <math.h>

#define SP_CULL_TILE 16

#if defined(__CUDACC__)
#define SP_TC_FN __host__ __device__ static inline
#else
#define SP_TC_FN static inline
#endif
#if defined(__CUDA_ARCH__)
#define SP_TC_MUL(a, b) __fmul_rn((a), (b))
#define SP_TC_ADD(a, b) __fadd_rn((a), (b))
#else
#define SP_TC_MUL(a, b) ((a) * (b))
#define SP_TC_ADD(a, b) ((a) + (b))
#endif

/* The ellipse level for opacity sigma (>= 1/255 for visible Gaussians), widened by 0.1 % and
 * padded so that float rounding in the rasterizer's own alpha test never meets a culled tile. */
#define SP_TILE_TAU_WIDEN 1.001
#define SP_TILE_TAU_PAD 1e-3
SP_TC_FN float sp_tile_tau(float sigma) {
    return (float)(2.0 * log(255.0 * (double)sigma) * SP_TILE_TAU_WIDEN + SP_TILE_TAU_PAD);
}

/* A Gaussian as the test sees it; sp_tile_ellipse fills it once per Gaussian. */
typedef struct {
    float mx, my, A, B, C, tau;
    float bx, by; /* B / A and B / C: the clamped 1-D minimisers along the edges */
} sp_tile_ellipse_t;

/* The same with tau given (sp_tile_tau of the opacity, computed once where many tests share it). */
SP_TC_FN sp_tile_ellipse_t sp_tile_ellipse_tau(float mx, float my, float A, float B, float C, float tau) {
    sp_tile_ellipse_t e;
    e.mx = mx, e.my = my, e.A = A, e.B = B, e.C = C;
    e.tau = tau;
    e.bx = A > 0.0f ? B / A : 0.0f;
    e.by = C > 0.0f ? B / C : 0.0f;
    return e;
}

SP_TC_FN sp_tile_ellipse_t sp_tile_ellipse(float mx, float my, float A, float B, float C, float sigma) {
    return sp_tile_ellipse_tau(mx, my, A, B, C, sp_tile_tau(sigma));
}

/* q at (dx, dy). */
SP_TC_FN float sp_tile_q(const sp_tile_ellipse_t *e, float dx, float dy) {
    return SP_TC_ADD(SP_TC_ADD(SP_TC_MUL(SP_TC_MUL(e->A, dx), dx), SP_TC_MUL(SP_TC_MUL(2.0f, e->B), SP_TC_MUL(dx, dy))),
                     SP_TC_MUL(SP_TC_MUL(e->C, dy), dy));
}

SP_TC_FN float sp_tile_clamp(float v, float lo, float hi) { return v < lo ? lo : (v > hi ? hi : v); }

/* 1 when the Gaussian reaches a pixel centre of the w x h pixel rectangle whose top-left pixel is
 * (px, py): the minimum of q over the square of pixel centres is <= tau. Edge y = ya: q(dx) is
 * smallest at dx = -(B/A) ya, clamped to the edge; likewise for the other three. */
SP_TC_FN int sp_rect_hit(const sp_tile_ellipse_t *e, int px, int py, int w, int h) {
    float x0 = (float)px + 0.5f, y0 = (float)py + 0.5f;
    float xa = x0 - e->mx, xb = (x0 + (float)(w - 1)) - e->mx;
    float ya = y0 - e->my, yb = (y0 + (float)(h - 1)) - e->my;
    if (xa <= 0.0f && xb >= 0.0f && ya <= 0.0f && yb >= 0.0f) return 1;
    if (!(e->A > 0.0f && e->C > 0.0f)) return 1; /* not an ellipse: keep the whole box */
    float q = sp_tile_q(e, sp_tile_clamp(-SP_TC_MUL(e->bx, ya), xa, xb), ya);
    float t = sp_tile_q(e, sp_tile_clamp(-SP_TC_MUL(e->bx, yb), xa, xb), yb);
    q = t < q ? t : q;
    t = sp_tile_q(e, xa, sp_tile_clamp(-SP_TC_MUL(e->by, xa), ya, yb));
    q = t < q ? t : q;
    t = sp_tile_q(e, xb, sp_tile_clamp(-SP_TC_MUL(e->by, xb), ya, yb));
    q = t < q ? t : q;
    return q <= e->tau;
}

/* 1 when the Gaussian reaches a pixel centre of tile (tx, ty). */
SP_TC_FN int sp_tile_hit(const sp_tile_ellipse_t *e, int tx, int ty) {
    return sp_rect_hit(e, tx * SP_CULL_TILE, ty * SP_CULL_TILE, SP_CULL_TILE, SP_CULL_TILE);
}

/* A pair's sort key is (tile, depth key): the depth key is the depth's float bits (positive floats
 * order as their bits) without the low SP_DEPTH_KEY_DROP; depths that then tie keep the Gaussians'
 * index order (the sort is stable), and a radix sort need not look at the dropped bits (CUDA's starts
 * at that bit; Vulkan's skips a digit of constant value: shaders/sort_const.glsl, VK_DEPTH_KEY_DROP).
 * Dropping 4 (ties within 2^-19, relative: about 10 um at a depth of 4) brings the key of up to 4096
 * tiles from 44 to 40 bits, one of CUDA's 8-bit sort passes fewer. Dropping 12 (ties within 2^-11)
 * saved two passes on lego (0.104 -> 0.076 ms/step) at equal PSNR but cost mic 0.05 dB (37.22 ->
 * 37.16 test PSNR on the H200: bench/RESULTS.md, session 20); a key of 20 bits from 2^-3 over 32
 * octaves (ties within 2^-15) cost mic 0.02-0.05 dB seed for seed (session 23). */
#define SP_DEPTH_KEY_DROP 4
SP_TC_FN unsigned sp_depth_key(float d) {
    union { float f; unsigned u; } v;
    v.f = d;
    return v.u & ~((1u << SP_DEPTH_KEY_DROP) - 1u);
}

#endif
