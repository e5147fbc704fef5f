#version 450
// project.comp — stage `project`: per Gaussian, world -> camera, EWA 2D covariance + low-pass,
// depth, tile rect, opacity and SH colour (docs/math.md; backend/ref/stage_math.h sp_m_project).
// Args: n, K, degree, offsets of means, log_scales, quats, opacity logits, sh in P; antialias.
#include "common.glsl"

layout(std430, binding = 0) readonly buffer BP { float P[]; };
layout(std430, binding = 1) writeonly buffer B1 { float mean2d[]; };
layout(std430, binding = 2) writeonly buffer B2 { float conic[]; };
layout(std430, binding = 3) writeonly buffer B3 { float depth[]; };
layout(std430, binding = 4) writeonly buffer B4 { float opac[]; };
layout(std430, binding = 5) writeonly buffer B5 { float color[]; };
layout(std430, binding = 6) writeonly buffer B6 { int rect[]; };
layout(std430, binding = 7) writeonly buffer B7 { float radius[]; };
layout(std430, binding = 8) writeonly buffer B8 { uint clamped[]; };

uint g_sh;
#define SHV(k) vec3(P[g_sh + 3 * (k)], P[g_sh + 3 * (k) + 1], P[g_sh + 3 * (k) + 2])
#include "shmath.glsl"

void main() {
    uint i = gid();
    int n = pi(ARG(0)), K = pi(ARG(1)), degree = pi(ARG(2));
    if (i >= uint(n)) return;
    uint om = pc.u[ARG(3)] + 3 * i, ol = pc.u[ARG(4)] + 3 * i, oq = pc.u[ARG(5)] + 4 * i;
    g_sh = pc.u[ARG(7)] + i * uint(K) * 3;
    vec3 m = vec3(P[om], P[om + 1], P[om + 2]);
    vec3 ls = vec3(P[ol], P[ol + 1], P[ol + 2]);
    vec4 q = vec4(P[oq], P[oq + 1], P[oq + 2], P[oq + 3]);
    float logit = P[pc.u[ARG(6)] + i];
    // not visible: every field zero, rect empty
    mean2d[2 * i] = 0.0; mean2d[2 * i + 1] = 0.0;
    [[unroll]] for (int k = 0; k < 3; k++) { conic[3 * i + k] = 0.0; color[3 * i + k] = 0.0; clamped[3 * i + k] = 0u; }
    depth[i] = 0.0; opac[i] = 0.0; radius[i] = 0.0;
    [[unroll]] for (int k = 0; k < 4; k++) rect[4 * i + k] = 0;
    Geo g;
    if (!geometry(m, ls, q, g)) return;
    float fx = pf(12), fy = pf(13), cx = pf(14), cy = pf(15);
    float z = g.p[2];
    precise float mx = fdiv(fx * g.p[0], z) + cx; // rounded as the CPU's fx * p / z + c
    precise float my = fdiv(fy * g.p[1], z) + cy;
    float sig = 1.0 / (1.0 + exp(-logit));
    if (pc.u[ARG(8)] != 0u) sig *= g.det0 > 0.0 ? sqrt(fdiv(g.det0, g.det)) : 0.0; // antialias: times rho
    if (!(sig >= 1.0 / 255.0)) return;
    float tau = 2.0 * log(255.0 * sig);
    float ex = sqrt(tau * g.a), ey = sqrt(tau * g.c);
    float tw = float(TILES_X), th = float(TILES_Y);
    float x0 = clamp(floor((mx - ex) / 16.0), 0.0, tw);
    float x1 = clamp(floor((mx + ex) / 16.0) + 1.0, 0.0, tw);
    float y0 = clamp(floor((my - ey) / 16.0), 0.0, th);
    float y1 = clamp(floor((my + ey) / 16.0) + 1.0, 0.0, th);
    if (!(x0 < x1 && y0 < y1)) return;
    rect[4 * i] = int(x0); rect[4 * i + 1] = int(y0); rect[4 * i + 2] = int(x1); rect[4 * i + 3] = int(y1);
    radius[i] = ex > ey ? ex : ey;
    mean2d[2 * i] = mx; mean2d[2 * i + 1] = my;
    conic[3 * i] = fdiv(g.c, g.det); conic[3 * i + 1] = fdiv(-g.b, g.det); conic[3 * i + 2] = fdiv(g.a, g.det);
    depth[i] = z;
    opac[i] = sig;
    vec3 C = cam_C();
    vec3 d = m - C;
    float dl = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
    if (dl > 0.0) d /= dl;
    vec3 col = sh_eval(degree, d);
    [[unroll]] for (int ch = 0; ch < 3; ch++) {
        float cc = col[ch] + 0.5;
        clamped[3 * i + ch] = cc < 0.0 ? 1u : 0u;
        color[3 * i + ch] = cc < 0.0 ? 0.0 : cc;
    }
}
