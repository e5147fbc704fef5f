// shmath.glsl — spherical harmonics (degree 0..3, the 3DGS real basis) and the per-Gaussian
// geometry of `project` (docs/math.md), as in backend/ref/stage_math.h, in float.

const float SH_C0 = 0.28209479177387814, SH_C1 = 0.4886025119029199;

// sh(k, ch) reads coefficient k, channel ch of the Gaussian being evaluated (defined by the includer).
vec3 sh_eval(int degree, vec3 d) {
    vec3 o = SH_C0 * SHV(0);
    if (degree < 1) return o;
    float x = d.x, y = d.y, z = d.z;
    o += -SH_C1 * y * SHV(1) + SH_C1 * z * SHV(2) - SH_C1 * x * SHV(3);
    if (degree < 2) return o;
    float xx = x * x, yy = y * y, zz = z * z, xy = x * y, yz = y * z, xz = x * z;
    o += (1.0925484305920792 * xy) * SHV(4);
    o += (-1.0925484305920792 * yz) * SHV(5);
    o += (0.31539156525252005 * (2.0 * zz - xx - yy)) * SHV(6);
    o += (-1.0925484305920792 * xz) * SHV(7);
    o += (0.5462742152960396 * (xx - yy)) * SHV(8);
    if (degree < 3) return o;
    o += (-0.5900435899266435 * y * (3.0 * xx - yy)) * SHV(9);
    o += (2.890611442640554 * xy * z) * SHV(10);
    o += (-0.4570457994644658 * y * (4.0 * zz - xx - yy)) * SHV(11);
    o += (0.3731763325901154 * z * (2.0 * zz - 3.0 * xx - 3.0 * yy)) * SHV(12);
    o += (-0.4570457994644658 * x * (4.0 * zz - xx - yy)) * SHV(13);
    o += (1.445305721320277 * z * (xx - yy)) * SHV(14);
    o += (-0.5900435899266435 * x * (xx - 3.0 * yy)) * SHV(15);
    return o;
}

struct Geo {
    vec3 p;      // camera-space centre
    vec4 qn;     // normalized quaternion
    float qlen;
    mat3 Rq;     // rotation (Rq[col][row], GLSL order)
    vec3 s;      // scales
    mat3 M;      // Rq diag(s)
    float S[6];  // Sigma upper triangle
    float u, v;
    bool cu, cv; // Jacobian direction clamped
    float T[6];  // 2x3
    float a, b, c, det;
    float det0;  // determinant before the low-pass (antialias)
};

mat3 cam_W() { // world -> camera rotation, W[row][col] = R[row*3+col]; stored as GLSL mat3 m[col][row]
    return mat3(pf(0), pf(3), pf(6), pf(1), pf(4), pf(7), pf(2), pf(5), pf(8));
}
vec3 cam_t() { return vec3(pf(9), pf(10), pf(11)); }
vec3 cam_C() {
    float R[9] = float[9](pf(0), pf(1), pf(2), pf(3), pf(4), pf(5), pf(6), pf(7), pf(8));
    vec3 t = cam_t();
    vec3 C;
    [[unroll]] for (int i = 0; i < 3; i++) C[i] = -(R[0 * 3 + i] * t[0] + R[1 * 3 + i] * t[1] + R[2 * 3 + i] * t[2]);
    return C;
}

// The loops here stay rolled (no [[unroll]]): with them unrolled in the SPIR-V, NVIDIA's driver
// no longer rounded the `precise` projection as the CPU does (the H200 harness's project mean2d
// case, 4e-5 relative at af785d5).
bool geometry(vec3 m, vec3 ls, vec4 q, out Geo g) {
    float R[9] = float[9](pf(0), pf(1), pf(2), pf(3), pf(4), pf(5), pf(6), pf(7), pf(8));
    float fx = pf(12), fy = pf(13), cx = pf(14), cy = pf(15);
    float w = float(CAM_W), h = float(CAM_H);
    for (int i = 0; i < 3; i++) { // precise: no fused multiply-add, rounded as the CPU rounds
        precise float pw = R[i * 3 + 0] * m[0] + R[i * 3 + 1] * m[1] + R[i * 3 + 2] * m[2] + pf(9 + i);
        g.p[i] = pw;
    }
    float z = g.p[2];
    if (!(z >= 0.2)) return false;
    float qq = q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3];
    g.qlen = sqrt(qq);
    if (!(g.qlen > 0.0)) return false;
    g.qn = q / g.qlen;
    float qw = g.qn[0], qx = g.qn[1], qy = g.qn[2], qz = g.qn[3];
    float Rq[9] = float[9](1.0 - 2.0 * (qy * qy + qz * qz), 2.0 * (qx * qy - qw * qz), 2.0 * (qx * qz + qw * qy),
                           2.0 * (qx * qy + qw * qz), 1.0 - 2.0 * (qx * qx + qz * qz), 2.0 * (qy * qz - qw * qx),
                           2.0 * (qx * qz - qw * qy), 2.0 * (qy * qz + qw * qx), 1.0 - 2.0 * (qx * qx + qy * qy));
    for (int i = 0; i < 3; i++) g.s[i] = exp(ls[i]);
    float M[9];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) { M[i * 3 + j] = Rq[i * 3 + j] * g.s[j]; g.Rq[j][i] = Rq[i * 3 + j]; g.M[j][i] = M[i * 3 + j]; }
    for (int e = 0; e < 6; e++) { // upper triangle (i, j) row-major: 00 01 02 11 12 22
        int i = e < 3 ? 0 : (e < 5 ? 1 : 2), j = e < 3 ? e : (e < 5 ? e - 2 : 2);
        g.S[e] = M[i * 3 + 0] * M[j * 3 + 0] + M[i * 3 + 1] * M[j * 3 + 1] + M[i * 3 + 2] * M[j * 3 + 2];
    }
    float ulo = -(cx + 0.15 * w) / fx, uhi = (w - cx + 0.15 * w) / fx;
    float vlo = -(cy + 0.15 * h) / fy, vhi = (h - cy + 0.15 * h) / fy;
    float u = g.p[0] / z, v = g.p[1] / z;
    g.cu = false; g.cv = false;
    if (u < ulo) { u = ulo; g.cu = true; }
    if (u > uhi) { u = uhi; g.cu = true; }
    if (v < vlo) { v = vlo; g.cv = true; }
    if (v > vhi) { v = vhi; g.cv = true; }
    g.u = u; g.v = v;
    float tx = u * z, ty = v * z;
    float J00 = fx / z, J02 = -fx * tx / (z * z), J11 = fy / z, J12 = -fy * ty / (z * z);
    for (int k = 0; k < 3; k++) {
        g.T[k] = J00 * R[0 * 3 + k] + J02 * R[2 * 3 + k];
        g.T[3 + k] = J11 * R[1 * 3 + k] + J12 * R[2 * 3 + k];
    }
    float Sf[9] = float[9](g.S[0], g.S[1], g.S[2], g.S[1], g.S[3], g.S[4], g.S[2], g.S[4], g.S[5]);
    precise float TS[6]; // precise: no FMA contraction, rounded as the CPU's float code
    for (int r = 0; r < 2; r++)
        for (int k = 0; k < 3; k++) TS[r * 3 + k] = g.T[r * 3 + 0] * Sf[0 * 3 + k] + g.T[r * 3 + 1] * Sf[1 * 3 + k] + g.T[r * 3 + 2] * Sf[2 * 3 + k];
    precise float s00 = TS[0] * g.T[0] + TS[1] * g.T[1] + TS[2] * g.T[2];
    precise float s01 = TS[0] * g.T[3] + TS[1] * g.T[4] + TS[2] * g.T[5];
    precise float s11 = TS[3] * g.T[3] + TS[4] * g.T[4] + TS[5] * g.T[5];
    g.a = s00 + 0.3;
    g.b = s01;
    g.c = s11 + 0.3;
    precise float det = g.a * g.c - g.b * g.b;
    g.det = det;
    // det(T Sigma T^T) as a sum of squares of the minors of T Rq diag(s) (sp_m_geometry)
    precise float x0 = g.T[1] * g.T[5] - g.T[2] * g.T[4], x1 = g.T[2] * g.T[3] - g.T[0] * g.T[5];
    precise float x2 = g.T[0] * g.T[4] - g.T[1] * g.T[3];
    precise float mn[3];
    for (int k = 0; k < 3; k++) mn[k] = Rq[0 * 3 + k] * x0 + Rq[1 * 3 + k] * x1 + Rq[2 * 3 + k] * x2;
    precise float m0 = g.s[1] * g.s[2] * mn[0], m1 = g.s[2] * g.s[0] * mn[1], m2 = g.s[0] * g.s[1] * mn[2];
    precise float det0 = m0 * m0 + m1 * m1 + m2 * m2;
    g.det0 = det0;
    return g.det > 0.0;
}
