#version 450
// mcmc.comp — the per-step terms of MCMC densification over the parameter buffer
// (backend/ref/mcmc.c, docs/math.md "MCMC"), one invocation per Gaussian:
//   mode 0: the regularizer gradients added to Gr: w_o * s (1 - s) per opacity logit (s its
//           sigmoid) and w_s * exp(l) per log-scale;
//   mode 1: the position noise on P's means: f * Sigma e, f = noise scale times the gate of the
//           opacity, Sigma = R diag(s^2) R^T, e three normals of the host's PCG32 stream (seed, i)
//           (src/core/core.c), its 64-bit words kept as (low, high) pairs of 32-bit ones.
// Words (no camera): 20 mode, 21 n, 22 means offset, 23 log-scales offset, 24 quats offset, 25
// opacity offset; mode 0: 26 w_o (weight / n), 27 w_s (weight / 3n); mode 1: 26 noise scale, 27
// seed low word, 28 seed high word, 29 gate k, 30 gate x0.
#include "common.glsl"

layout(std430, binding = 0) buffer B0 { float P[]; };
layout(std430, binding = 1) buffer B1 { float Gr[]; };

uvec2 add64(uvec2 a, uvec2 b) {
    uint carry;
    uint lo = uaddCarry(a.x, b.x, carry);
    return uvec2(lo, a.y + b.y + carry);
}

uvec2 mul64(uvec2 a, uvec2 b) {
    uint hi, lo;
    umulExtended(a.x, b.x, hi, lo);
    return uvec2(lo, hi + a.x * b.y + a.y * b.x);
}

uvec2 shr64(uvec2 a, uint s) { return uvec2((a.x >> s) | (a.y << (32u - s)), a.y >> s); } // 0 < s < 32

uvec2 g_state, g_inc;

uint rng_u32() {
    uvec2 old = g_state;
    g_state = add64(mul64(old, uvec2(0x4C957F2Du, 0x5851F42Du)), g_inc); // 6364136223846793005
    uint xs = shr64(shr64(old, 18u) ^ old, 27u).x;
    uint rot = old.y >> 27u;
    return (xs >> rot) | (xs << ((32u - rot) & 31u));
}

void rng_seed(uvec2 seed, uint stream) {
    g_state = uvec2(0u);
    g_inc = uvec2((stream << 1u) | 1u, stream >> 31u);
    rng_u32();
    g_state = add64(g_state, seed);
    rng_u32();
}

float rng_normal() {
    float u1 = (float(rng_u32() >> 8u) + 0.5) * (1.0 / 16777216.0);
    float u2 = float(rng_u32() >> 8u) * (1.0 / 16777216.0);
    return sqrt(-2.0 * log(u1)) * cos(6.28318530718 * u2);
}

void main() {
    uint i = gid();
    if (i >= pc.u[21]) return;
    uint om = pc.u[22], ol = pc.u[23], oq = pc.u[24], oo = pc.u[25];
    if (pc.u[20] == 0u) { // sigma (1 - sigma) = e / (1 + e)^2, e = exp(-|logit|), as the host
        float e = exp(-abs(P[oo + i])), d = 1.0 + e;
        Gr[oo + i] += pf(26) * fdiv(e, d * d);
        for (uint k = 0u; k < 3u; k++) Gr[ol + 3u * i + k] += pf(27) * exp(P[ol + 3u * i + k]);
        return;
    }
    float o = 1.0 / (1.0 + exp(-P[oo + i]));
    float gate = 1.0 / (1.0 + exp(-pf(29) * ((1.0 - o) - pf(30))));
    float f = pf(26) * gate;
    if (f == 0.0) return; // adds exactly nothing (the host skips drawing too)
    vec4 q = vec4(P[oq + 4u * i], P[oq + 4u * i + 1u], P[oq + 4u * i + 2u], P[oq + 4u * i + 3u]);
    float qn = sqrt(q.x * q.x + q.y * q.y + q.z * q.z + q.w * q.w);
    float w = q.x / qn, x = q.y / qn, y = q.z / qn, z = q.w / qn;
    float R[9] = float[9](1.0 - 2.0 * (y * y + z * z), 2.0 * (x * y - w * z), 2.0 * (x * z + w * y),
                          2.0 * (x * y + w * z), 1.0 - 2.0 * (x * x + z * z), 2.0 * (y * z - w * x),
                          2.0 * (x * z - w * y), 2.0 * (y * z + w * x), 1.0 - 2.0 * (x * x + y * y));
    rng_seed(uvec2(pc.u[27], pc.u[28]), i);
    float e[3], t[3];
    [[unroll]] for (int k = 0; k < 3; k++) e[k] = rng_normal();
    [[unroll]] for (int k = 0; k < 3; k++) { // Sigma e = R diag(s^2) R^T e
        float s = exp(P[ol + 3u * i + uint(k)]);
        t[k] = s * s * (R[k] * e[0] + R[3 + k] * e[1] + R[6 + k] * e[2]);
    }
    [[unroll]] for (int k = 0; k < 3; k++)
        P[om + 3u * i + uint(k)] += f * (R[3 * k] * t[0] + R[3 * k + 1] * t[1] + R[3 * k + 2] * t[2]);
}
