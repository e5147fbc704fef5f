#version 450
// project_back.comp — stage `project_back`: chain rule from the projected gradients to the
// parameters (docs/math.md; sp_m_project_back), one invocation per Gaussian writing all of its
// gradients (zeros when it was not visible). With `collect` it also accumulates the densification
// statistics: |dL/dmean2d| in NDC units, the count, and the largest screen radius.
// The SH coefficients (3K floats per Gaussian, contiguous per Gaussian) are read, and their
// gradients written, through shared memory a workgroup's span at a time, as the CUDA kernel does:
// consecutive invocations touch consecutive floats of device memory (coalesced), and each
// invocation's slot (stride 3K + 1, so that the slots start in different banks) holds its
// coefficients until their gradients overwrite them. The host dispatches WG (64) Gaussians per
// workgroup: 64 slots of at most 49 floats are 12.25 KiB.
// Args: n, K, degree, offsets of means, log_scales, quats, opacity, sh; collect, w/2, h/2; antialias.
#define WG 64
#include "common.glsl"

layout(std430, binding = 0) readonly buffer B0 { float P[]; };
layout(std430, binding = 1) readonly buffer B1 { int rect[]; };
layout(std430, binding = 2) readonly buffer B2 { uint clamped[]; };
layout(std430, binding = 3) readonly buffer B3 { float pgrad[]; };
layout(std430, binding = 4) writeonly buffer B4 { float Gr[]; };
layout(std430, binding = 5) buffer B5 { float grad_accum[]; };
layout(std430, binding = 6) buffer B6 { int grad_count[]; };
layout(std430, binding = 7) buffer B7 { float max_radius[]; };
layout(std430, binding = 8) readonly buffer B8 { float radius[]; };

#define SH_MAX_FLOATS 48 // 3 x 16 coefficients (degree 3)
shared float s_sh[WG * (SH_MAX_FLOATS + 1)];

uint g_sh; // this invocation's slot in s_sh
#define SHV(k) vec3(s_sh[g_sh + 3 * (k)], s_sh[g_sh + 3 * (k) + 1], s_sh[g_sh + 3 * (k) + 2])
#include "shmath.glsl"

void sh_put(int k, vec3 v) {
    [[unroll]] for (int ch = 0; ch < 3; ch++) s_sh[g_sh + 3 * k + ch] = v[ch];
}

// Coefficient k with basis value bk and basis gradient dbk (w.r.t. the direction): its own
// gradient bk g replaces it in the slot, and its share (sh_k . g) dbk of dL/dd goes to dd.
void sh_term(int k, float bk, vec3 dbk, vec3 g, inout vec3 dd) {
    dd += dot(SHV(k), g) * dbk;
    sh_put(k, bk * g);
}

// dL/dsh of sh_eval into the slot (coefficients past the degree get zero), and dL/dd returned
// (d a free 3-vector), as sp_m_sh_eval_back. Straight-line code: the basis and its gradients
// stay in registers, and the degree is the same for the whole dispatch.
vec3 sh_back(int degree, int K, vec3 d, vec3 g) {
    vec3 dd = vec3(0.0);
    sh_put(0, SH_C0 * g);
    float x = d.x, y = d.y, z = d.z;
    if (degree >= 1) {
        sh_term(1, -SH_C1 * y, vec3(0.0, -SH_C1, 0.0), g, dd);
        sh_term(2, SH_C1 * z, vec3(0.0, 0.0, SH_C1), g, dd);
        sh_term(3, -SH_C1 * x, vec3(-SH_C1, 0.0, 0.0), g, dd);
    }
    float xx = x * x, yy = y * y, zz = z * z;
    if (degree >= 2) {
        const float k0 = 1.0925484305920792, k1 = -1.0925484305920792, k2 = 0.31539156525252005,
                    k3 = -1.0925484305920792, k4 = 0.5462742152960396;
        sh_term(4, k0 * x * y, vec3(k0 * y, k0 * x, 0.0), g, dd);
        sh_term(5, k1 * y * z, vec3(0.0, k1 * z, k1 * y), g, dd);
        sh_term(6, k2 * (2.0 * zz - xx - yy), vec3(k2 * -2.0 * x, k2 * -2.0 * y, k2 * 4.0 * z), g, dd);
        sh_term(7, k3 * x * z, vec3(k3 * z, 0.0, k3 * x), g, dd);
        sh_term(8, k4 * (xx - yy), vec3(k4 * 2.0 * x, k4 * -2.0 * y, 0.0), g, dd);
    }
    if (degree >= 3) {
        const float c0 = -0.5900435899266435, c1 = 2.890611442640554, c2 = -0.4570457994644658,
                    c3 = 0.3731763325901154, c4 = -0.4570457994644658, c5 = 1.445305721320277,
                    c6 = -0.5900435899266435;
        sh_term(9, c0 * y * (3.0 * xx - yy), vec3(c0 * 6.0 * x * y, c0 * (3.0 * xx - 3.0 * yy), 0.0), g, dd);
        sh_term(10, c1 * x * y * z, vec3(c1 * y * z, c1 * x * z, c1 * x * y), g, dd);
        sh_term(11, c2 * y * (4.0 * zz - xx - yy),
                vec3(c2 * -2.0 * x * y, c2 * (4.0 * zz - xx - 3.0 * yy), c2 * 8.0 * y * z), g, dd);
        sh_term(12, c3 * z * (2.0 * zz - 3.0 * xx - 3.0 * yy),
                vec3(c3 * -6.0 * x * z, c3 * -6.0 * y * z, c3 * (6.0 * zz - 3.0 * xx - 3.0 * yy)), g, dd);
        sh_term(13, c4 * x * (4.0 * zz - xx - yy),
                vec3(c4 * (4.0 * zz - 3.0 * xx - yy), c4 * -2.0 * x * y, c4 * 8.0 * x * z), g, dd);
        sh_term(14, c5 * z * (xx - yy), vec3(c5 * 2.0 * x * z, c5 * -2.0 * y * z, c5 * (xx - yy)), g, dd);
        sh_term(15, c6 * x * (xx - 3.0 * yy), vec3(c6 * (3.0 * xx - 3.0 * yy), c6 * -6.0 * x * y, 0.0), g, dd);
    }
    for (int k = (degree + 1) * (degree + 1); k < K; k++) sh_put(k, vec3(0.0));
    return dd;
}

// The chain rule for Gaussian i (its SH coefficients in the slot, their gradients left there).
void back_one(uint i, int K, int degree) {
    uint om = pc.u[ARG(3)] + 3 * i, ol = pc.u[ARG(4)] + 3 * i, oq = pc.u[ARG(5)] + 4 * i, oo = pc.u[ARG(6)] + i;
    vec3 dm = vec3(0.0), dls = vec3(0.0);
    vec4 dq = vec4(0.0);
    float dlogit = 0.0;
    bool vis = rect[4 * i] < rect[4 * i + 2] && rect[4 * i + 1] < rect[4 * i + 3];
    vec3 m = vec3(P[om], P[om + 1], P[om + 2]);
    vec3 ls = vec3(P[ol], P[ol + 1], P[ol + 2]);
    vec4 q = vec4(P[oq], P[oq + 1], P[oq + 2], P[oq + 3]);
    Geo g;
    bool wrote_sh = false;
    if (vis && geometry(m, ls, q, g)) {
        float R[9] = float[9](pf(0), pf(1), pf(2), pf(3), pf(4), pf(5), pf(6), pf(7), pf(8));
        float fx = pf(12), fy = pf(13);
        float z = g.p[2], iz = 1.0 / z, iz2 = iz * iz;
        vec3 dp = vec3(0.0);
        float logit = P[oo];
        float sig = 1.0 / (1.0 + exp(-logit));
        float dmx = pgrad[9 * i], dmy = pgrad[9 * i + 1];
        float dA = pgrad[9 * i + 2], dB = pgrad[9 * i + 3], dC = pgrad[9 * i + 4], dop = pgrad[9 * i + 5];
        vec3 dcol = vec3(pgrad[9 * i + 6], pgrad[9 * i + 7], pgrad[9 * i + 8]);
        bool aa = pc.u[ARG(11)] != 0u; // antialias: opacity = sig * rho, rho = sqrt(det0 / det)
        float rho = aa ? (g.det0 > 0.0 ? sqrt(fdiv(g.det0, g.det)) : 0.0) : 1.0;
        dlogit += dop * rho * sig * (1.0 - sig);
        dp[0] += fx * iz * dmx;
        dp[1] += fy * iz * dmy;
        dp[2] += -fx * g.p[0] * iz2 * dmx - fy * g.p[1] * iz2 * dmy;
        float a = g.a, b = g.b, c = g.c, id2 = 1.0 / (g.det * g.det);
        float da = id2 * (-c * c * dA + b * c * dB - b * b * dC);
        float db = id2 * (2.0 * b * c * dA - (a * c + b * b) * dB + 2.0 * a * b * dC);
        float dc = id2 * (-b * b * dA + a * b * dB - a * a * dC);
        if (aa && rho > 0.0) {
            float h = 0.5 * dop * sig * rho, i0 = 1.0 / g.det0, i1 = 1.0 / g.det;
            da += h * ((c - 0.3) * i0 - c * i1);
            db += h * 2.0 * b * (i1 - i0);
            dc += h * ((a - 0.3) * i0 - a * i1);
        }
        float Gm[4] = float[4](da, 0.5 * db, 0.5 * db, dc);
        float Sf[9] = float[9](g.S[0], g.S[1], g.S[2], g.S[1], g.S[3], g.S[4], g.S[2], g.S[4], g.S[5]);
        float TS[6], dT[6], GT[6], dS[9], dM[9], dR[9];
        [[unroll]] for (int r = 0; r < 2; r++)
            [[unroll]] for (int k = 0; k < 3; k++) TS[r * 3 + k] = g.T[r * 3 + 0] * Sf[0 * 3 + k] + g.T[r * 3 + 1] * Sf[1 * 3 + k] + g.T[r * 3 + 2] * Sf[2 * 3 + k];
        [[unroll]] for (int r = 0; r < 2; r++)
            [[unroll]] for (int k = 0; k < 3; k++) dT[r * 3 + k] = 2.0 * (Gm[r * 2 + 0] * TS[0 * 3 + k] + Gm[r * 2 + 1] * TS[1 * 3 + k]);
        [[unroll]] for (int r = 0; r < 2; r++)
            [[unroll]] for (int k = 0; k < 3; k++) GT[r * 3 + k] = Gm[r * 2 + 0] * g.T[0 * 3 + k] + Gm[r * 2 + 1] * g.T[1 * 3 + k];
        [[unroll]] for (int ii = 0; ii < 3; ii++)
            [[unroll]] for (int j = 0; j < 3; j++) dS[ii * 3 + j] = g.T[0 * 3 + ii] * GT[0 * 3 + j] + g.T[1 * 3 + ii] * GT[1 * 3 + j];
        [[unroll]] for (int ii = 0; ii < 3; ii++)
            [[unroll]] for (int j = 0; j < 3; j++)
                dM[ii * 3 + j] = 2.0 * (dS[ii * 3 + 0] * g.M[j][0] + dS[ii * 3 + 1] * g.M[j][1] + dS[ii * 3 + 2] * g.M[j][2]);
        [[unroll]] for (int j = 0; j < 3; j++) {
            float ds = 0.0;
            [[unroll]] for (int ii = 0; ii < 3; ii++) {
                dR[ii * 3 + j] = dM[ii * 3 + j] * g.s[j];
                ds += dM[ii * 3 + j] * g.Rq[j][ii];
            }
            dls[j] += ds * g.s[j];
        }
        float w = g.qn[0], x = g.qn[1], y = g.qn[2], zq = g.qn[3];
        vec4 dqn;
        dqn[0] = 2.0 * (-zq * dR[1] + y * dR[2] + zq * dR[3] - x * dR[5] - y * dR[6] + x * dR[7]);
        dqn[1] = 2.0 * (y * dR[1] + zq * dR[2] + y * dR[3] - 2.0 * x * dR[4] - w * dR[5] + zq * dR[6] + w * dR[7] - 2.0 * x * dR[8]);
        dqn[2] = 2.0 * (-2.0 * y * dR[0] + x * dR[1] + w * dR[2] + x * dR[3] + zq * dR[5] - w * dR[6] + zq * dR[7] - 2.0 * y * dR[8]);
        dqn[3] = 2.0 * (-2.0 * zq * dR[0] - w * dR[1] + x * dR[2] + w * dR[3] - 2.0 * zq * dR[4] + y * dR[5] + x * dR[6] + y * dR[7]);
        float qd = dqn[0] * g.qn[0] + dqn[1] * g.qn[1] + dqn[2] * g.qn[2] + dqn[3] * g.qn[3];
        [[unroll]] for (int k = 0; k < 4; k++) dq[k] += (dqn[k] - g.qn[k] * qd) / g.qlen;
        float dJ00 = dT[0] * R[0] + dT[1] * R[1] + dT[2] * R[2];
        float dJ02 = dT[0] * R[6] + dT[1] * R[7] + dT[2] * R[8];
        float dJ11 = dT[3] * R[3] + dT[4] * R[4] + dT[5] * R[5];
        float dJ12 = dT[3] * R[6] + dT[4] * R[7] + dT[5] * R[8];
        float tx = g.u * z, ty = g.v * z;
        dp[2] += -fx * iz2 * dJ00 - fy * iz2 * dJ11 + 2.0 * fx * tx * iz2 * iz * dJ02 + 2.0 * fy * ty * iz2 * iz * dJ12;
        float dtx = -fx * iz2 * dJ02, dty = -fy * iz2 * dJ12;
        if (g.cu) dp[2] += g.u * dtx; else dp[0] += dtx;
        if (g.cv) dp[2] += g.v * dty; else dp[1] += dty;
        [[unroll]] for (int k = 0; k < 3; k++) dm[k] += R[0 * 3 + k] * dp[0] + R[1 * 3 + k] * dp[1] + R[2 * 3 + k] * dp[2];
        vec3 gc;
        [[unroll]] for (int ch = 0; ch < 3; ch++) gc[ch] = clamped[3 * i + ch] != 0u ? 0.0 : dcol[ch];
        vec3 d = m - cam_C();
        float dl = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
        if (dl > 0.0) d /= dl;
        vec3 dd = sh_back(degree, K, d, gc);
        wrote_sh = true;
        if (degree > 0 && dl > 0.0) {
            float dot_ = dd[0] * d[0] + dd[1] * d[1] + dd[2] * d[2];
            dm += (dd - d * dot_) / dl;
        }
        if (pc.u[ARG(8)] != 0u) {
            float gx = dmx * pf(ARG(9)), gy = dmy * pf(ARG(10));
            grad_accum[i] += sqrt(gx * gx + gy * gy);
            grad_count[i] += 1;
            if (radius[i] > max_radius[i]) max_radius[i] = radius[i];
        }
    }
    [[unroll]] for (int k = 0; k < 3; k++) { Gr[om + k] = dm[k]; Gr[ol + k] = dls[k]; }
    [[unroll]] for (int k = 0; k < 4; k++) Gr[oq + k] = dq[k];
    Gr[oo] = dlogit;
    if (!wrote_sh)
        for (int k = 0; k < K; k++) sh_put(k, vec3(0.0));
}

// Float e of the workgroup's span is coefficient float e % per of its Gaussian e / per, at
// (e / per) * stride + e % per in s_sh. Reading, an invocation loads SH_UNROLL floats (e = t,
// t + WG, ..) before it stores any, so that several loads are in flight; writing, it visits
// e = t, t + WG, .. with its row and column advanced by WG / per and WG % per each time.
#define SH_UNROLL 8
void stage_in(uint t, uint count, uint per, uint base) {
    uint stride = per + 1u;
    for (uint e0 = t; e0 < count; e0 += uint(WG * SH_UNROLL)) {
        float v[SH_UNROLL];
        [[unroll]] for (int u = 0; u < SH_UNROLL; u++) {
            uint e = e0 + uint(u * WG);
            v[u] = e < count ? P[base + e] : 0.0;
        }
        [[unroll]] for (int u = 0; u < SH_UNROLL; u++) {
            uint e = e0 + uint(u * WG), r = e / per;
            if (e < count) s_sh[r * stride + (e - r * per)] = v[u];
        }
    }
}

void stage_out(uint t, uint count, uint per, uint base) {
    uint stride = per + 1u, row = t / per, col = t % per, drow = uint(WG) / per, dcol = uint(WG) % per;
    for (uint e = t; e < count; e += WG) {
        Gr[base + e] = s_sh[row * stride + col];
        row += drow;
        col += dcol;
        if (col >= per) { col -= per; row++; }
    }
}

void main() {
    uint t = gl_LocalInvocationID.x, i = gid(), i0 = i - t;
    int n = pi(ARG(0)), K = pi(ARG(1)), degree = pi(ARG(2));
    uint per = 3u * uint(K);
    uint count = i0 < uint(n) ? min(uint(WG), uint(n) - i0) * per : 0u; // this workgroup's SH floats
    uint base = pc.u[ARG(7)] + i0 * per;
    stage_in(t, count, per, base);
    barrier();
    g_sh = t * (per + 1u);
    if (i < uint(n)) back_one(i, K, degree);
    barrier();
    stage_out(t, count, per, base);
}
