/* morton_rule.h — the spatial order of the Gaussians (backend.h's reorder), written once for the
 * host (backend/ref/reorder.c, the reference the cpu backend runs) and the CUDA kernels
 * (cuda/reorder.cu), so every backend puts the same Gaussian in the same place:
 *
 *   - the box: per axis the least and greatest finite mean (min and max are exact in any order);
 *   - the cells: axis value x falls in cell floor((x - lo) * 2^e), e the largest exponent that
 *     keeps the box's extent under 1024 cells; the subtraction is one IEEE rounding and the scale a
 *     power of two, so the cell is exact on every device; a non-finite value, and every value of an
 *     axis whose extent is zero or not finite, is cell 0;
 *   - the code: the three 10-bit cells interleaved (x in bit 0, y in bit 1, z in bit 2, ...), 30
 *     bits; the Gaussians sorted by code, equal codes in their old order (a stable sort).
 *
 * Gaussians near in space then lie near in memory, so a tile's pairs gather the Gaussians'
 * per-step records from fewer cache lines than the order refine leaves them in (appended and
 * relocated copies, spatially random). */
#ifndef SPLAT_MORTON_RULE_H
#define SPLAT_MORTON_RULE_H

#include <math.h>
#include <stdint.h>

#if defined(__CUDACC__)
#define SP_MO_FN __host__ __device__ static inline
#else
#define SP_MO_FN static inline
#endif

#define SP_MORTON_BITS 10   /* cells an axis: 1 << SP_MORTON_BITS */
#define SP_MORTON_FLAT -1000 /* an axis of zero or non-finite extent: every value in cell 0 */

/* The scale exponent of an axis whose box is [lo, hi]: (hi - lo) * 2^e < 2^SP_MORTON_BITS, or
 * SP_MORTON_FLAT. */
SP_MO_FN int sp_morton_exponent(float lo, float hi) {
#if defined(__CUDA_ARCH__)
    float d = __fsub_rn(hi, lo);
#else
    float d = hi - lo;
#endif
    if (!(d > 1e-30f) || !(d < 3.0e38f)) return SP_MORTON_FLAT;
    int k;
    (void)frexpf(d, &k); /* d = f 2^k, 0.5 <= f < 1: d 2^(10 - k) = f 2^10 < 2^10 */
    return SP_MORTON_BITS - k;
}

/* The cell of axis value x (box low end lo, exponent e of sp_morton_exponent). */
SP_MO_FN uint32_t sp_morton_cell(float x, float lo, int e) {
    if (e == SP_MORTON_FLAT) return 0u;
#if defined(__CUDA_ARCH__)
    float v = __fsub_rn(x, lo);
#else
    float v = x - lo;
#endif
    if (!(v >= 0.0f) || !(v < 3.0e38f)) return 0u; /* NaN, infinite, or below the box */
    float c = floorf(ldexpf(v, e));
    const float top = (float)((1 << SP_MORTON_BITS) - 1);
    return (uint32_t)(c < top ? c : top);
}

/* The 10 low bits of v spread to every third bit (bit i to bit 3i). */
SP_MO_FN uint32_t sp_morton_spread(uint32_t v) {
    v &= 0x3ffu;
    v = (v | (v << 16)) & 0x030000ffu;
    v = (v | (v << 8)) & 0x0300f00fu;
    v = (v | (v << 4)) & 0x030c30c3u;
    v = (v | (v << 2)) & 0x09249249u;
    return v;
}

/* The code of a mean m[3] in the box (lo[3], exponents e[3]). */
SP_MO_FN uint32_t sp_morton_code(const float *m, const float *lo, const int *e) {
    return sp_morton_spread(sp_morton_cell(m[0], lo[0], e[0])) |
           (sp_morton_spread(sp_morton_cell(m[1], lo[1], e[1])) << 1) |
           (sp_morton_spread(sp_morton_cell(m[2], lo[2], e[2])) << 2);
}

#endif
