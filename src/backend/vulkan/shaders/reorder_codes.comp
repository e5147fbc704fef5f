#version 450
// reorder_codes.comp — every Gaussian's Morton code for the reorder (vk_reorder.c), with
// backend/morton_rule.h's arithmetic so that the codes are the host's bit for bit: the box from
// reorder_box.comp (an axis without a finite mean: lo 0, flat), per axis the scale exponent e of
// the extent d = hi - lo (the largest keeping d 2^e under 1024 cells, or flat), the cell
// floor((x - lo) 2^e) clamped to 1023 (a non-finite x, or a flat axis: cell 0), and the three
// 10-bit cells interleaved. The subtraction is `precise` (one IEEE rounding, nothing fused); the
// exponent is read from d's bits (d is normal there: frexp's exponent exactly) and the scale is
// the exact power of two 2^e, built from its bits (e stays within -118 .. 109, normal), so the
// product is ldexpf's on every driver. Writes the code as the sort's key and the index as its
// value (the sort's pair buffers, set 0).
// Args: n, the means' region offset (floats).
#include "common.glsl"

layout(std430, binding = 0) readonly buffer B0 { float P[]; };
layout(std430, binding = 1) readonly buffer B1 { uint box[]; };
layout(std430, binding = 2) writeonly buffer B2 { uint code[]; };
layout(std430, binding = 3) writeonly buffer B3 { uint idx[]; };

#define BITS 10     // SP_MORTON_BITS
#define FLAT -1000  // SP_MORTON_FLAT

float from_ordered(uint u) { return uintBitsToFloat((u & 0x80000000u) != 0u ? u & 0x7fffffffu : ~u); }

// sp_morton_exponent (lo and hi finite: d is never NaN)
int exponent(float lo, float hi) {
    precise float d = hi - lo;
    if (!(d > 1e-30) || !(d < 3.0e38)) return FLAT;
    int k = int((floatBitsToUint(d) >> 23) & 255u) - 126; // d = f 2^k, 0.5 <= f < 1
    return BITS - k;
}

// sp_morton_cell
uint cell(float x, float lo, int e) {
    if (e == FLAT) return 0u;
    if ((floatBitsToUint(x) & 0x7f800000u) == 0x7f800000u) return 0u; // NaN or infinite
    precise float v = x - lo;
    if (!(v >= 0.0) || !(v < 3.0e38)) return 0u;
    precise float s = v * uintBitsToFloat(uint(e + 127) << 23);
    float c = floor(s);
    return uint(c < 1023.0 ? c : 1023.0);
}

// sp_morton_spread
uint spread(uint v) {
    v &= 0x3ffu;
    v = (v | (v << 16)) & 0x030000ffu;
    v = (v | (v << 8)) & 0x0300f00fu;
    v = (v | (v << 4)) & 0x030c30c3u;
    v = (v | (v << 2)) & 0x09249249u;
    return v;
}

void main() {
    uint i = gid(), n = pc.u[ARG(0)], at = pc.u[ARG(1)];
    if (i >= n) return;
    uint c = 0u;
    [[unroll]] for (uint k = 0u; k < 3u; k++) {
        bool any = box[k] != 0xffffffffu;
        float lo = any ? from_ordered(box[k]) : 0.0, hi = any ? from_ordered(box[3u + k]) : 0.0;
        c |= spread(cell(P[at + 3u * i + k], lo, exponent(lo, hi))) << k;
    }
    code[i] = c;
    idx[i] = i;
}
