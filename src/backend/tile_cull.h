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

/* A pair's sort key is (tile, depth key). The depth key keeps the order of the depths (positive
 * floats order as their bits) in the top 32 - SP_DEPTH_KEY_DROP bits of a word whose low
 * SP_DEPTH_KEY_DROP bits are zero, so that a radix sort need not look at them (CUDA's starts at that
 * bit; Vulkan's skips a digit of constant value: shaders/sort_const.glsl, VK_DEPTH_KEY_DROP):
 * the float's bits less those of 2^-3 (the near plane is at 0.2), clamped to the 28 bits of 32
 * octaves (2^-3 to 2^29: 5 bits of exponent and 23 of mantissa), without their low 8. Depths less
 * than 2^-15 apart (relative: about 0.1 mm at a depth of 4) can tie, and keep the Gaussians' index
 * order (the sort is stable). The key of up to 4096 tiles is then 32 bits, CUDA's 4 sort passes of
 * 8 bits, where the float's bits without their low 4 (ties within 2^-19) took 5; the float's bits
 * without their low 12 (ties within 2^-11, and no room for depths past 2^32) cost mic 0.05 dB
 * (37.22 -> 37.16 test PSNR on the H200: bench/RESULTS.md, session 20). */
#define SP_DEPTH_KEY_DROP 12
#define SP_DEPTH_KEY_LO (124u << 23)        /* the bits of 2^-3 */
#define SP_DEPTH_KEY_SPAN ((1u << 28) - 1u) /* 32 octaves above it */
SP_TC_FN unsigned sp_depth_key(float d) {
    union { float f; unsigned u; } v;
    v.f = d;
    unsigned c = v.u < SP_DEPTH_KEY_LO ? 0u : v.u - SP_DEPTH_KEY_LO;
    if (c > SP_DEPTH_KEY_SPAN) c = SP_DEPTH_KEY_SPAN; /* also a negative depth's bits (not visible) */
    return (c >> 8) << SP_DEPTH_KEY_DROP;
}

#endif
