#version 450
// adam.comp — stage `adam`: one bias-corrected Adam update over every parameter group of the
// parameter buffer at once (backend/ref/adam.c). Five regions (start, length) with their own
// learning rates; in the SH region the first 3 floats of each Gaussian (DC) take lr_dc.
// Each invocation updates four consecutive floats of one region through 16-byte loads and
// stores (the CUDA kernel's design): every region starts at a multiple of 4 floats (the host's
// layout: vk_ensure_gaussians keeps the capacity a multiple of 4), and the floats of a region's
// last group of four that lie past its length keep their values (they are slack of the buffer,
// which no other invocation touches).
// Words (no camera here): 0-5 lr_t means, log_scales, quats, opacity, sh dc, sh rest (the learning
// rates with the bias correction folded in, sp_adam_bias); 6 beta1, 7 beta2, 8 eps_t; 9 in view by
// the rectangles (1: a training step's update, whose project left each Gaussian's screen rectangle
// in R, and a sparse update then gives a Gaussian in view the whole update); 10 the step the packed
// moments' random bits are drawn for (sp_m16_step); 11-20 (start, length) x 5; 21 floats per
// Gaussian's SH (3K); 22 groups of four to visit (the sum of ceil(length / 4)); 23 sparse (1: an
// element whose gradient is exactly 0 keeps its value and moments unless its Gaussian is in view,
// adam.sparse); 24 packed moments (1: adam.moments16, M1 holds each value's m and v in 16 bits each
// in one word and M2 is not touched: backend/moments16_rule.h, whose bits this repeats; a value's
// index in the packed layout of the n Gaussians is its region's place there, the sum of the
// lengths of the regions before it, plus its offset in the region).
#include "common.glsl"

layout(std430, binding = 0) buffer B0 { vec4 P[]; };
layout(std430, binding = 1) readonly buffer B1 { vec4 Gr[]; };
layout(std430, binding = 2) buffer B2 { uvec4 M1[]; }; // float bits, or packed words
layout(std430, binding = 3) buffer B3 { vec4 M2[]; };
layout(std430, binding = 4) readonly buffer B4 { int R[]; };

bool in_view(uint g) { return R[4u * g] < R[4u * g + 2u] && R[4u * g + 1u] < R[4u * g + 3u]; }

// moments16_rule.h: the random bits of value e (below 2^32 here) at step t, m as bfloat16 bits
// rounded with r, v as its bits 30 .. 15 rounded with r.
uint m16_bits(uint t, uint e) {
    uint x = e * 0x9e3779b1u;
    x += t * 0x85ebca77u;
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    x ^= x >> 16;
    return x;
}
uint m16_round(float x, uint r) {
    uint u = floatBitsToUint(x);
    if ((u & 0x7f800000u) == 0x7f800000u) return (u >> 16) | ((u & 0x007fffffu) != 0u ? 0x0040u : 0u);
    return (u + r) >> 16;
}
uint m16_round_v(float v, uint r) {
    uint u = floatBitsToUint(v) & 0x7fffffffu;
    if ((u & 0x7f800000u) == 0x7f800000u) return (u >> 15) | ((u & 0x007fffffu) != 0u ? 0x0080u : 0u);
    return (u + r) >> 15;
}

void main() {
    uint q = gid();
    if (q >= pc.u[22]) return;
    // the region of group q: groups are numbered region after region
    int r = 0;
    uint first = 0u, packed_at = 0u; // packed_at: the region's place in the packed layout
    for (; r < 5; r++) {
        uint groups = (pc.u[12 + 2 * r] + 3u) >> 2;
        if (q < first + groups) break;
        first += groups;
        packed_at += pc.u[12 + 2 * r];
    }
    if (r == 5) return;
    uint off = 4u * (q - first), len = pc.u[12 + 2 * r];
    uint quad = (pc.u[11 + 2 * r] >> 2) + (q - first);
    vec4 g = Gr[quad];
    bool sparse = pc.u[23] != 0u, by_view = sparse && pc.u[9] != 0u;
    bool packed = pc.u[24] != 0u;
    float lr[4];
    bool seen[4];
    uint per = pc.u[21], k = r == 4 ? off % per : 0u;
    uint width = r == 4 ? per : r == 2 ? 4u : r == 3 ? 1u : 3u; // floats a Gaussian in this region
    [[unroll]] for (int i = 0; i < 4; i++) {
        lr[i] = r == 4 ? (k < 3u ? pf(4) : pf(5)) : pf(r);
        if (++k == per) k = 0u;
        if (off + uint(i) >= len) lr[i] = -1.0; // past the region: left as it is
        seen[i] = by_view && lr[i] >= 0.0 && in_view((off + uint(i)) / width);
    }
    if (sparse && g == vec4(0.0) && !(seen[0] || seen[1] || seen[2] || seen[3])) return;
    float b1 = pf(6), b2 = pf(7), eps = pf(8);
    uvec4 w = M1[quad];
    vec4 m, v = packed ? vec4(0.0) : M2[quad], p = P[quad];
    [[unroll]] for (int i = 0; i < 4; i++) {
        m[i] = packed ? uintBitsToFloat(w[i] << 16) : uintBitsToFloat(w[i]);
        if (packed) v[i] = uintBitsToFloat((w[i] >> 16) << 15);
    }
    [[unroll]] for (int i = 0; i < 4; i++) {
        float gi = g[i];
        if (lr[i] < 0.0 || (sparse && gi == 0.0 && !seen[i])) continue;
        float mi = b1 * m[i] + (1.0 - b1) * gi;
        float vi = b2 * v[i] + (1.0 - b2) * gi * gi;
        p[i] -= lr[i] * mi / (sqrt(vi) + eps);
        if (packed) {
            uint rb = m16_bits(pc.u[10], packed_at + off + uint(i));
            w[i] = m16_round(mi, rb & 0xffffu) | (m16_round_v(vi, rb >> 17) << 16);
        } else {
            w[i] = floatBitsToUint(mi);
            v[i] = vi;
        }
    }
    M1[quad] = w;
    if (!packed) M2[quad] = v;
    P[quad] = p;
}
