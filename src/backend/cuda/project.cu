/* project.cu — the `project` and `project_back` stages on the GPU (docs/math.md): per Gaussian,
 * world -> camera, EWA 2D covariance with low-pass, opacity-aware tile rect and SH colour, and the
 * exact chain rule back to means, scales, rotations, opacity logits and SH coefficients.
 * One thread per Gaussian; no atomics, so both stages are deterministic. */
#include "backend/cuda/cuda_internal.h"
#include "backend/cuda/update.cuh"
#include "backend/tile_cull.h"

#define SH_C0 0.28209479177387814f
#define SH_C1 0.4886025119029199f
#define SH_C2_0 1.0925484305920792f
#define SH_C2_1 -1.0925484305920792f
#define SH_C2_2 0.31539156525252005f
#define SH_C2_3 -1.0925484305920792f
#define SH_C2_4 0.5462742152960396f
#define SH_C3_0 -0.5900435899266435f
#define SH_C3_1 2.890611442640554f
#define SH_C3_2 -0.4570457994644658f
#define SH_C3_3 0.3731763325901154f
#define SH_C3_4 -0.4570457994644658f
#define SH_C3_5 1.445305721320277f
#define SH_C3_6 -0.5900435899266435f
/* The per-Gaussian math is __host__ __device__ so it can be checked on the host.
 *
 * The 2D covariance is ill-conditioned (conic = inverse of a nearly singular matrix for thin
 * Gaussians): a one-ulp difference in an intermediate shows up as 1e-4 relative in the conic. So
 * the geometry is computed in exactly the CPU reference's operation order, without fused
 * multiply-adds on the device (FMUL/FADD/FSUB round every step), and exp in double rounded to
 * float (what a correctly rounded expf gives). This costs nothing measurable: project is cheap. */
#define CU_HD __host__ __device__
#ifdef __CUDA_ARCH__
#define FMUL(a, b) __fmul_rn((a), (b))
#define FADD(a, b) __fadd_rn((a), (b))
#define FSUB(a, b) __fsub_rn((a), (b))
#define EXPF(x) ((float)exp((double)(x)))
#else
#define FMUL(a, b) ((a) * (b))
#define FADD(a, b) ((a) + (b))
#define FSUB(a, b) ((a) - (b))
#define EXPF(x) expf(x)
#endif
/* a0 b0 + a1 b1 + a2 b2, left to right, each step rounded */
#define DOT3(a0, b0, a1, b1, a2, b2) FADD(FADD(FMUL(a0, b0), FMUL(a1, b1)), FMUL(a2, b2))

/* Real SH basis values Y[0..K) at unit direction d. */
CU_HD static void sh_basis(int degree, float x, float y, float z, float *Y) {
    Y[0] = SH_C0;
    if (degree < 1) return;
    Y[1] = -SH_C1 * y;
    Y[2] = SH_C1 * z;
    Y[3] = -SH_C1 * x;
    if (degree < 2) return;
    float xx = x * x, yy = y * y, zz = z * z, xy = x * y, yz = y * z, xz = x * z;
    Y[4] = SH_C2_0 * xy;
    Y[5] = SH_C2_1 * yz;
    Y[6] = SH_C2_2 * (2.0f * zz - xx - yy);
    Y[7] = SH_C2_3 * xz;
    Y[8] = SH_C2_4 * (xx - yy);
    if (degree < 3) return;
    Y[9] = SH_C3_0 * y * (3.0f * xx - yy);
    Y[10] = SH_C3_1 * xy * z;
    Y[11] = SH_C3_2 * y * (4.0f * zz - xx - yy);
    Y[12] = SH_C3_3 * z * (2.0f * zz - 3.0f * xx - 3.0f * yy);
    Y[13] = SH_C3_4 * x * (4.0f * zz - xx - yy);
    Y[14] = SH_C3_5 * z * (xx - yy);
    Y[15] = SH_C3_6 * x * (xx - 3.0f * yy);
}

/* Derivatives of the basis w.r.t. x, y, z (DC has none). */
CU_HD static void sh_basis_grad(int degree, float x, float y, float z, float *dX, float *dY, float *dZ) {
    dX[0] = dY[0] = dZ[0] = 0.0f;
    if (degree < 1) return;
    dX[1] = 0.0f, dY[1] = -SH_C1, dZ[1] = 0.0f;
    dX[2] = 0.0f, dY[2] = 0.0f, dZ[2] = SH_C1;
    dX[3] = -SH_C1, dY[3] = 0.0f, dZ[3] = 0.0f;
    if (degree < 2) return;
    float xx = x * x, yy = y * y, zz = z * z;
    dX[4] = SH_C2_0 * y, dY[4] = SH_C2_0 * x, dZ[4] = 0.0f;
    dX[5] = 0.0f, dY[5] = SH_C2_1 * z, dZ[5] = SH_C2_1 * y;
    dX[6] = -2.0f * SH_C2_2 * x, dY[6] = -2.0f * SH_C2_2 * y, dZ[6] = 4.0f * SH_C2_2 * z;
    dX[7] = SH_C2_3 * z, dY[7] = 0.0f, dZ[7] = SH_C2_3 * x;
    dX[8] = 2.0f * SH_C2_4 * x, dY[8] = -2.0f * SH_C2_4 * y, dZ[8] = 0.0f;
    if (degree < 3) return;
    dX[9] = 6.0f * SH_C3_0 * x * y, dY[9] = SH_C3_0 * (3.0f * xx - 3.0f * yy), dZ[9] = 0.0f;
    dX[10] = SH_C3_1 * y * z, dY[10] = SH_C3_1 * x * z, dZ[10] = SH_C3_1 * x * y;
    dX[11] = -2.0f * SH_C3_2 * x * y, dY[11] = SH_C3_2 * (4.0f * zz - xx - 3.0f * yy),
    dZ[11] = 8.0f * SH_C3_2 * y * z;
    dX[12] = -6.0f * SH_C3_3 * x * z, dY[12] = -6.0f * SH_C3_3 * y * z,
    dZ[12] = SH_C3_3 * (6.0f * zz - 3.0f * xx - 3.0f * yy);
    dX[13] = SH_C3_4 * (4.0f * zz - 3.0f * xx - yy), dY[13] = -2.0f * SH_C3_4 * x * y,
    dZ[13] = 8.0f * SH_C3_4 * x * z;
    dX[14] = 2.0f * SH_C3_5 * x * z, dY[14] = -2.0f * SH_C3_5 * y * z, dZ[14] = SH_C3_5 * (xx - yy);
    dX[15] = SH_C3_6 * (3.0f * xx - 3.0f * yy), dY[15] = -6.0f * SH_C3_6 * x * y, dZ[15] = 0.0f;
}

/* Unit-quaternion rotation matrix, row-major. */
CU_HD static void quat_to_rot(float w, float x, float y, float z, float *R) {
    R[0] = FSUB(1.0f, FMUL(2.0f, FADD(FMUL(y, y), FMUL(z, z))));
    R[1] = FMUL(2.0f, FSUB(FMUL(x, y), FMUL(w, z)));
    R[2] = FMUL(2.0f, FADD(FMUL(x, z), FMUL(w, y)));
    R[3] = FMUL(2.0f, FADD(FMUL(x, y), FMUL(w, z)));
    R[4] = FSUB(1.0f, FMUL(2.0f, FADD(FMUL(x, x), FMUL(z, z))));
    R[5] = FMUL(2.0f, FSUB(FMUL(y, z), FMUL(w, x)));
    R[6] = FMUL(2.0f, FSUB(FMUL(x, z), FMUL(w, y)));
    R[7] = FMUL(2.0f, FADD(FMUL(y, z), FMUL(w, x)));
    R[8] = FSUB(1.0f, FMUL(2.0f, FADD(FMUL(x, x), FMUL(y, y))));
}

/* Forward geometry shared by project and project_back. */
typedef struct {
    float p[3], z;
    float qn[4], qlen;
    float Rq[9], s[3], M[9], Sigma[6]; /* Sigma: xx xy xz yy yz zz */
    float u, v;
    int clamp_u, clamp_v;
    float T[6]; /* 2 x 3 */
    float a, b, c;
    float det0; /* determinant before the low-pass (antialias) */
} cu_geom;

/* Returns 0 when behind the near plane (other fields then undefined). */
CU_HD static int geom_forward(const cu_params *P, int i, const sp_camera *cam, cu_geom *g) {
    const float *m = P->means + 3 * (size_t)i;
    const float *R = cam->R;
    for (int r = 0; r < 3; r++)
        g->p[r] = FADD(DOT3(R[3 * r], m[0], R[3 * r + 1], m[1], R[3 * r + 2], m[2]), cam->t[r]);
    g->z = g->p[2];
    if (!(g->z >= 0.2f)) return 0;
    const float *q = P->quats + 4 * (size_t)i;
    float qq = FADD(FADD(FADD(FMUL(q[0], q[0]), FMUL(q[1], q[1])), FMUL(q[2], q[2])), FMUL(q[3], q[3]));
    g->qlen = sqrtf(qq);
    if (!(g->qlen > 0.0f)) return 0;
    for (int k = 0; k < 4; k++) g->qn[k] = q[k] / g->qlen;
    quat_to_rot(g->qn[0], g->qn[1], g->qn[2], g->qn[3], g->Rq);
    const float *ls = P->log_scales + 3 * (size_t)i;
    for (int k = 0; k < 3; k++) g->s[k] = EXPF(ls[k]);
    for (int r = 0; r < 3; r++)
        for (int k = 0; k < 3; k++) g->M[3 * r + k] = FMUL(g->Rq[3 * r + k], g->s[k]);
    const float *M = g->M;
    g->Sigma[0] = DOT3(M[0], M[0], M[1], M[1], M[2], M[2]);
    g->Sigma[1] = DOT3(M[0], M[3], M[1], M[4], M[2], M[5]);
    g->Sigma[2] = DOT3(M[0], M[6], M[1], M[7], M[2], M[8]);
    g->Sigma[3] = DOT3(M[3], M[3], M[4], M[4], M[5], M[5]);
    g->Sigma[4] = DOT3(M[3], M[6], M[4], M[7], M[5], M[8]);
    g->Sigma[5] = DOT3(M[6], M[6], M[7], M[7], M[8], M[8]);
    float W = (float)cam->width, H = (float)cam->height;
    float ulo = -FADD(cam->cx, FMUL(0.15f, W)) / cam->fx, uhi = FADD(FSUB(W, cam->cx), FMUL(0.15f, W)) / cam->fx;
    float vlo = -FADD(cam->cy, FMUL(0.15f, H)) / cam->fy, vhi = FADD(FSUB(H, cam->cy), FMUL(0.15f, H)) / cam->fy;
    float u = g->p[0] / g->z, v = g->p[1] / g->z;
    g->clamp_u = u < ulo || u > uhi;
    g->clamp_v = v < vlo || v > vhi;
    g->u = fminf(fmaxf(u, ulo), uhi);
    g->v = fminf(fmaxf(v, vlo), vhi);
    float z = g->z;
    float tx = FMUL(g->u, z), ty = FMUL(g->v, z);
    float z2 = FMUL(z, z);
    float j00 = cam->fx / z, j02 = FMUL(-cam->fx, tx) / z2;
    float j11 = cam->fy / z, j12 = FMUL(-cam->fy, ty) / z2;
    for (int k = 0; k < 3; k++) {
        g->T[k] = FADD(FMUL(j00, R[k]), FMUL(j02, R[6 + k]));
        g->T[3 + k] = FADD(FMUL(j11, R[3 + k]), FMUL(j12, R[6 + k]));
    }
    /* Sigma' = T Sigma T^T */
    const float *S = g->Sigma;
    float TS0[3], TS1[3];
    for (int k = 0; k < 3; k++) {
        int r0 = k == 0 ? 0 : (k == 1 ? 1 : 2), r1 = k == 0 ? 1 : (k == 1 ? 3 : 4), r2 = k == 0 ? 2 : (k == 1 ? 4 : 5);
        TS0[k] = DOT3(g->T[0], S[r0], g->T[1], S[r1], g->T[2], S[r2]);
        TS1[k] = DOT3(g->T[3], S[r0], g->T[4], S[r1], g->T[5], S[r2]);
    }
    g->a = FADD(DOT3(TS0[0], g->T[0], TS0[1], g->T[1], TS0[2], g->T[2]), 0.3f);
    g->b = DOT3(TS0[0], g->T[3], TS0[1], g->T[4], TS0[2], g->T[5]);
    g->c = FADD(DOT3(TS1[0], g->T[3], TS1[1], g->T[4], TS1[2], g->T[5]), 0.3f);
    /* det(T Sigma T^T) as a sum of squares, in the CPU reference's order (sp_m_geometry) */
    const float *Tm = g->T, *Rm = g->Rq;
    float x0 = FSUB(FMUL(Tm[1], Tm[5]), FMUL(Tm[2], Tm[4])), x1 = FSUB(FMUL(Tm[2], Tm[3]), FMUL(Tm[0], Tm[5]));
    float x2 = FSUB(FMUL(Tm[0], Tm[4]), FMUL(Tm[1], Tm[3]));
    float mn[3];
    for (int k = 0; k < 3; k++) mn[k] = DOT3(Rm[k], x0, Rm[3 + k], x1, Rm[6 + k], x2);
    mn[0] = FMUL(FMUL(g->s[1], g->s[2]), mn[0]);
    mn[1] = FMUL(FMUL(g->s[2], g->s[0]), mn[1]);
    mn[2] = FMUL(FMUL(g->s[0], g->s[1]), mn[2]);
    g->det0 = DOT3(mn[0], mn[0], mn[1], mn[1], mn[2], mn[2]);
    return 1;
}

/* The antialias opacity factor sqrt(det0 / det) (docs/math.md, "Antialiasing"), as sp_m_aa_rho. */
CU_HD static float aa_rho(const cu_geom *g, float det) {
    return g->det0 > 0.0f ? sqrtf(g->det0 / det) : 0.0f;
}

CU_HD static void view_dir(const float *m, const float *C, float *d, float *len) {
    float x = m[0] - C[0], y = m[1] - C[1], z = m[2] - C[2];
    *len = sqrtf(x * x + y * y + z * z);
    float inv = 1.0f / *len;
    d[0] = x * inv, d[1] = y * inv, d[2] = z * inv;
}

CU_HD void cuda_project_one(const cu_params &P, int i, int K, const sp_camera &cam, float3 C, int sh_degree,
                           int antialias, const cu_proj &out) {
    int32_t *rect = out.rect + 4 * (size_t)i;
    rect[0] = rect[1] = rect[2] = rect[3] = 0;
    out.radius[i] = 0.0f;
    out.touched[i] = 0;
    cu_geom g;
    if (!geom_forward(&P, i, &cam, &g)) return;
    float det = FSUB(FMUL(g.a, g.c), FMUL(g.b, g.b));
    if (!(det > 0.0f)) return;
    float sigma = 1.0f / (1.0f + EXPF(-P.opacity_logits[i]));
    if (antialias) sigma = FMUL(sigma, aa_rho(&g, det));
    if (!(sigma >= 1.0f / 255.0f)) return;
    float mx = cam.fx * g.p[0] / g.z + cam.cx, my = cam.fy * g.p[1] / g.z + cam.cy;
    float tau = 2.0f * logf(255.0f * sigma);
    float ex = sqrtf(FMUL(tau, g.a)), ey = sqrtf(FMUL(tau, g.c));
    int tiles_x = (cam.width + CU_TILE - 1) / CU_TILE, tiles_y = (cam.height + CU_TILE - 1) / CU_TILE;
    int x0 = (int)fminf(fmaxf(floorf((mx - ex) / 16.0f), 0.0f), (float)tiles_x);
    int x1 = (int)fminf(fmaxf(floorf((mx + ex) / 16.0f) + 1.0f, 0.0f), (float)tiles_x);
    int y0 = (int)fminf(fmaxf(floorf((my - ey) / 16.0f), 0.0f), (float)tiles_y);
    int y1 = (int)fminf(fmaxf(floorf((my + ey) / 16.0f) + 1.0f, 0.0f), (float)tiles_y);
    if (!(x0 < x1 && y0 < y1)) return;
    rect[0] = x0, rect[1] = y0, rect[2] = x1, rect[3] = y1;
    out.radius[i] = fmaxf(ex, ey);
    out.mean2d[2 * i] = mx;
    out.mean2d[2 * i + 1] = my;
    float cA = g.c / det, cB = -g.b / det, cC = g.a / det;
    out.conic[3 * i] = cA;
    out.conic[3 * i + 1] = cB;
    out.conic[3 * i + 2] = cC;
    /* tiles of the rect the ellipse reaches (tile_cull.h); emit_pairs makes the same decisions */
    sp_tile_ellipse_t te = sp_tile_ellipse(mx, my, cA, cB, cC, sigma);
    uint32_t hits = 0;
    for (int ty = y0; ty < y1; ty++)
        for (int tx = x0; tx < x1; tx++) hits += (uint32_t)sp_tile_hit(&te, tx, ty);
    out.touched[i] = hits;
    out.depth[i] = g.z;
    out.opacity[i] = sigma;
    /* colour */
    float d[3], len, Y[16];
    float Cw[3] = {C.x, C.y, C.z};
    view_dir(P.means + 3 * (size_t)i, Cw, d, &len);
    sh_basis(sh_degree, d[0], d[1], d[2], Y);
    int used = (sh_degree + 1) * (sh_degree + 1);
    const float *sh = P.sh + 3 * (size_t)K * i;
    float acc[3] = {0.0f, 0.0f, 0.0f};
#ifdef __CUDA_ARCH__
    /* 16-byte loads when every Gaussian's coefficients start on a 16-byte boundary (3K a multiple
     * of 4, the array aligned): 12 loads instead of 48 at degree 3. Element j is coefficient j / 3,
     * channel j % 3; each channel's sum runs over increasing k as below. */
    if (!(3 * K & 3) && !((uintptr_t)P.sh & 15u)) {
        const float4 *s4 = (const float4 *)sh;
        int nv = 3 * used;
#pragma unroll
        for (int q = 0; q < 12; q++) {
            if (4 * q >= nv) break;
            float4 f = s4[q];
            float fv[4] = {f.x, f.y, f.z, f.w};
#pragma unroll
            for (int r = 0; r < 4; r++)
                if (4 * q + r < nv) acc[(4 * q + r) % 3] += Y[(4 * q + r) / 3] * fv[r];
        }
    } else
#endif
        for (int ch = 0; ch < 3; ch++)
            for (int k = 0; k < used; k++) acc[ch] += Y[k] * sh[3 * k + ch];
    float col[3];
    for (int ch = 0; ch < 3; ch++) {
        float c = acc[ch] + 0.5f;
        out.clamped[3 * i + ch] = c < 0.0f;
        out.color[3 * i + ch] = col[ch] = fmaxf(c, 0.0f);
    }
    if (out.splat) cuda_splat_record(out.splat + 3 * (size_t)i, mx, my, cA, cB, cC, sigma, col);
}

__global__ void k_project(cu_params P, int n, int K, sp_camera cam, float3 C, int sh_degree, int antialias,
                          cu_proj out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) cuda_project_one(P, i, K, cam, C, sh_degree, antialias, out);
}

static float3 camera_center(const sp_camera *cam) {
    /* -R^T t */
    const float *R = cam->R, *t = cam->t;
    float3 c;
    c.x = -(R[0] * t[0] + R[3] * t[1] + R[6] * t[2]);
    c.y = -(R[1] * t[0] + R[4] * t[1] + R[7] * t[2]);
    c.z = -(R[2] * t[0] + R[5] * t[1] + R[8] * t[2]);
    return c;
}

/* The SH degree is capped to what K coefficients hold. */
static int cap_degree(int sh_degree, int K) {
    while (sh_degree > 0 && (sh_degree + 1) * (sh_degree + 1) > K) sh_degree--;
    return sh_degree < 0 ? 0 : sh_degree;
}

void cuda_project(const cu_params *p, int n, int K, const sp_camera *cam, int sh_degree, int antialias, cu_proj *out,
                  cudaStream_t s) {
    if (n <= 0) return;
    sh_degree = cap_degree(sh_degree, K);
    k_project<<<CU_GRID(n, 256), 256, 0, s>>>(*p, n, K, *cam, camera_center(cam), sh_degree, antialias, *out);
}

/* Colour gradient dc -> SH gradients (into gsh, zero past the active degree) and the view
 * direction's share of dL/dmean (added to dm). Reads each coefficient before writing its gradient
 * (sh and gsh may alias). */
template <int DEG>
CU_HD static inline void color_back(const float *m, float3 C, int K, const float *dc, const float *sh, float *gsh,
                                    float *dm) {
    const int used = (DEG + 1) * (DEG + 1);
    float d[3], len, Y[16], dX[16], dY[16], dZ[16];
    float Cw[3] = {C.x, C.y, C.z};
    view_dir(m, Cw, d, &len);
    sh_basis(DEG, d[0], d[1], d[2], Y);
    sh_basis_grad(DEG, d[0], d[1], d[2], dX, dY, dZ);
    float dd[3] = {0.0f, 0.0f, 0.0f};
    for (int k = 0; k < used; k++) {
        float dot = 0.0f;
        for (int ch = 0; ch < 3; ch++) {
            dot += sh[3 * k + ch] * dc[ch];
            gsh[3 * k + ch] = Y[k] * dc[ch];
        }
        dd[0] += dot * dX[k], dd[1] += dot * dY[k], dd[2] += dot * dZ[k];
    }
    for (int k = 3 * used; k < 3 * K; k++) gsh[k] = 0.0f;
    /* d = v / |v|: dv = (dd - d (d . dd)) / |v| */
    float dot = d[0] * dd[0] + d[1] * dd[1] + d[2] * dd[2];
    for (int k = 0; k < 3; k++) dm[k] += (dd[k] - d[k] * dot) / len;
}

/* One Gaussian's gradients other than SH (those go to the caller's slot). */
typedef struct {
    float means[3], log_scales[3], quats[4], opacity_logit;
} cu_ggrad;

/* sh: this Gaussian's 3K SH coefficients; gsh: where their 3K gradients go. The kernel stages both
 * in one shared-memory slot (sh == gsh) so that global reads and writes are coalesced: every
 * coefficient is read before its gradient overwrites it. The host passes the arrays. */
CU_HD static cu_ggrad cuda_project_back_one(const cu_params &P, int i, int K, const sp_camera &cam, float3 C,
                                      int sh_degree, int antialias, const cu_proj &proj, const cu_proj_grad &G,
                                      const float *sh, float *gsh, float *grad_accum, float *grad_count,
                                      float *max_radius) {
    const int32_t *rect = proj.rect + 4 * (size_t)i;
    int visible = rect[0] < rect[2] && rect[1] < rect[3];
    cu_ggrad out;
    float *gm = out.means, *gls = out.log_scales, *gq = out.quats;
    for (int k = 0; k < 3; k++) gm[k] = gls[k] = 0.0f;
    for (int k = 0; k < 4; k++) gq[k] = 0.0f;
    out.opacity_logit = 0.0f;
    if (!visible) {
        for (int k = 0; k < 3 * K; k++) gsh[k] = 0.0f;
        return out;
    }
    cu_geom g;
    geom_forward(&P, i, &cam, &g);
    /* opacity = sigmoid(logit), times rho with antialias (proj.opacity is then the product) */
    float sigma = proj.opacity[i], rho = 1.0f;
    if (antialias) {
        sigma = 1.0f / (1.0f + EXPF(-P.opacity_logits[i]));
        rho = aa_rho(&g, FSUB(FMUL(g.a, g.c), FMUL(g.b, g.b)));
    }
    out.opacity_logit = G.opacity[i] * rho * sigma * (1.0f - sigma);

    float dm[3] = {0.0f, 0.0f, 0.0f}; /* dL/dmean (world) */
    /* colour -> SH and view direction (degree a template argument: the basis stays in registers) */
    {
        float dc[3];
        for (int ch = 0; ch < 3; ch++) dc[ch] = proj.clamped[3 * i + ch] ? 0.0f : G.color[3 * i + ch];
        const float *m = P.means + 3 * (size_t)i;
        switch (sh_degree) {
        case 0: color_back<0>(m, C, K, dc, sh, gsh, dm); break;
        case 1: color_back<1>(m, C, K, dc, sh, gsh, dm); break;
        case 2: color_back<2>(m, C, K, dc, sh, gsh, dm); break;
        default: color_back<3>(m, C, K, dc, sh, gsh, dm); break;
        }
    }
    /* conic -> a, b, c */
    float a = g.a, b = g.b, c = g.c;
    float det = FSUB(FMUL(a, c), FMUL(b, b));
    float id2 = 1.0f / (det * det);
    float gA = G.conic[3 * i], gB = G.conic[3 * i + 1], gC = G.conic[3 * i + 2];
    float da = (-c * c * gA + b * c * gB - b * b * gC) * id2;
    float db = (2.0f * b * c * gA - (det + 2.0f * b * b) * gB + 2.0f * a * b * gC) * id2;
    float dcc = (-b * b * gA + a * b * gB - a * a * gC) * id2;
    if (antialias && rho > 0.0f) {
        /* rho^2 = det0 / det with det0 = (a - 0.3)(c - 0.3) - b^2 */
        float h = 0.5f * G.opacity[i] * sigma * rho, i0 = 1.0f / g.det0, i1 = 1.0f / det;
        da += h * ((c - 0.3f) * i0 - c * i1);
        db += h * 2.0f * b * (i1 - i0);
        dcc += h * ((a - 0.3f) * i0 - a * i1);
    }
    /* Sigma' = T Sigma T^T with G' = [[da, db/2], [db/2, dc]]: dT = 2 G' T Sigma, dSigma = T^T G' T */
    float G00 = da, G01 = 0.5f * db, G11 = dcc;
    const float *T = g.T, *S = g.Sigma;
    float Sf[9] = {S[0], S[1], S[2], S[1], S[3], S[4], S[2], S[4], S[5]};
    float TS[6]; /* T Sigma (2 x 3) */
    for (int r = 0; r < 2; r++)
        for (int k = 0; k < 3; k++)
            TS[3 * r + k] = T[3 * r] * Sf[k] + T[3 * r + 1] * Sf[3 + k] + T[3 * r + 2] * Sf[6 + k];
    float dT[6];
    for (int k = 0; k < 3; k++) {
        dT[k] = 2.0f * (G00 * TS[k] + G01 * TS[3 + k]);
        dT[3 + k] = 2.0f * (G01 * TS[k] + G11 * TS[3 + k]);
    }
    float dS[9]; /* T^T G' T */
    for (int r = 0; r < 3; r++)
        for (int k = 0; k < 3; k++)
            dS[3 * r + k] = T[r] * (G00 * T[k] + G01 * T[3 + k]) + T[3 + r] * (G01 * T[k] + G11 * T[3 + k]);
    /* T = J R: dJ = dT R^T (entries 00, 02, 11, 12) */
    const float *R = cam.R;
    float dj00 = dT[0] * R[0] + dT[1] * R[1] + dT[2] * R[2];
    float dj02 = dT[0] * R[6] + dT[1] * R[7] + dT[2] * R[8];
    float dj11 = dT[3] * R[3] + dT[4] * R[4] + dT[5] * R[5];
    float dj12 = dT[3] * R[6] + dT[4] * R[7] + dT[5] * R[8];
    float z = g.z, z2 = z * z, z3 = z2 * z;
    float fx = cam.fx, fy = cam.fy;
    float dp[3] = {0.0f, 0.0f, 0.0f};
    dp[2] += -fx / z2 * dj00 - fy / z2 * dj11;
    if (g.clamp_u) dp[2] += fx * g.u / z2 * dj02; /* j02 = -fx u / z with u fixed */
    else dp[0] += -fx / z2 * dj02, dp[2] += 2.0f * fx * g.p[0] / z3 * dj02;
    if (g.clamp_v) dp[2] += fy * g.v / z2 * dj12;
    else dp[1] += -fy / z2 * dj12, dp[2] += 2.0f * fy * g.p[1] / z3 * dj12;
    /* mean2d */
    float gmx = G.mean2d[2 * i], gmy = G.mean2d[2 * i + 1];
    dp[0] += fx / z * gmx;
    dp[1] += fy / z * gmy;
    dp[2] += -fx * g.p[0] / z2 * gmx - fy * g.p[1] / z2 * gmy;
    for (int k = 0; k < 3; k++) dm[k] += R[k] * dp[0] + R[3 + k] * dp[1] + R[6 + k] * dp[2];
    for (int k = 0; k < 3; k++) gm[k] = dm[k];
    /* Sigma = M M^T: dM = 2 dSigma M (dSigma symmetric) */
    float dM[9];
    for (int r = 0; r < 3; r++)
        for (int k = 0; k < 3; k++)
            dM[3 * r + k] =
                2.0f * (dS[3 * r] * g.M[k] + dS[3 * r + 1] * g.M[3 + k] + dS[3 * r + 2] * g.M[6 + k]);
    /* M = Rq diag(s) */
    float dRq[9];
    for (int k = 0; k < 3; k++) {
        float ds = dM[k] * g.Rq[k] + dM[3 + k] * g.Rq[3 + k] + dM[6 + k] * g.Rq[6 + k];
        gls[k] = ds * g.s[k];
        for (int r = 0; r < 3; r++) dRq[3 * r + k] = dM[3 * r + k] * g.s[k];
    }
    float w = g.qn[0], x = g.qn[1], y = g.qn[2], zq = g.qn[3];
    const float *Gq = dRq;
    float dqn[4];
    dqn[0] = 2.0f * (-zq * Gq[1] + y * Gq[2] + zq * Gq[3] - x * Gq[5] - y * Gq[6] + x * Gq[7]);
    dqn[1] = 2.0f * (y * Gq[1] + zq * Gq[2] + y * Gq[3] - 2.0f * x * Gq[4] - w * Gq[5] + zq * Gq[6] + w * Gq[7] -
                     2.0f * x * Gq[8]);
    dqn[2] = 2.0f * (-2.0f * y * Gq[0] + x * Gq[1] + w * Gq[2] + x * Gq[3] + zq * Gq[5] - w * Gq[6] + zq * Gq[7] -
                     2.0f * y * Gq[8]);
    dqn[3] = 2.0f * (-2.0f * zq * Gq[0] - w * Gq[1] + x * Gq[2] + w * Gq[3] - 2.0f * zq * Gq[4] + y * Gq[5] +
                     x * Gq[6] + y * Gq[7]);
    float qd = dqn[0] * g.qn[0] + dqn[1] * g.qn[1] + dqn[2] * g.qn[2] + dqn[3] * g.qn[3];
    for (int k = 0; k < 4; k++) gq[k] = (dqn[k] - g.qn[k] * qd) / g.qlen;

    if (grad_accum) {
        float nx = gmx * 0.5f * (float)cam.width, ny = gmy * 0.5f * (float)cam.height;
        grad_accum[i] += sqrtf(nx * nx + ny * ny);
        grad_count[i] += 1.0f;
        max_radius[i] = fmaxf(max_radius[i], proj.radius[i]);
    }
    return out;
}

/* Gaussian i's gradients (all but SH) into the packed gradient arrays. */
CU_HD static void cu_store_ggrad(const cu_params &out, int i, const cu_ggrad &g) {
    for (int k = 0; k < 3; k++) {
        out.means[3 * (size_t)i + k] = g.means[k];
        out.log_scales[3 * (size_t)i + k] = g.log_scales[k];
    }
    for (int k = 0; k < 4; k++) out.quats[4 * (size_t)i + k] = g.quats[k];
    out.opacity_logits[i] = g.opacity_logit;
}

/* Copies the 3K SH coefficients of each of the block's B Gaussians to s_sh (stride 3K + 1: value e
 * of the span, Gaussian e / 3K's coefficient e % 3K, at s_sh[e + e / 3K]): coalesced loads,
 * CU_SH_UNROLL of them issued before their stores so that their latencies overlap; without
 * bounds tests when the span is a whole number of rounds (full blocks at degree 3). */
#define CU_SH_UNROLL 8
template <int B, int KC>
__device__ __forceinline__ static void cu_sh_span(const float *P_sh, int n, int K, float *s_sh) {
    const int per = 3 * (KC ? KC : K);
    int i0 = blockIdx.x * B;
    int count = min(B, n - i0) * per;
    const float *src = P_sh + (size_t)per * i0;
    if (count % (B * CU_SH_UNROLL) == 0) {
        for (int e0 = threadIdx.x; e0 < count; e0 += B * CU_SH_UNROLL) {
            float v[CU_SH_UNROLL];
#pragma unroll
            for (int u = 0; u < CU_SH_UNROLL; u++) v[u] = src[e0 + u * B];
#pragma unroll
            for (int u = 0; u < CU_SH_UNROLL; u++) {
                int e = e0 + u * B;
                s_sh[e + e / per] = v[u];
            }
        }
        return;
    }
    for (int e0 = threadIdx.x; e0 < count; e0 += B * CU_SH_UNROLL) {
        float v[CU_SH_UNROLL];
#pragma unroll
        for (int u = 0; u < CU_SH_UNROLL; u++) v[u] = e0 + u * B < count ? src[e0 + u * B] : 0.0f;
#pragma unroll
        for (int u = 0; u < CU_SH_UNROLL; u++) {
            int e = e0 + u * B;
            if (e < count) s_sh[e + e / per] = v[u];
        }
    }
}

/* One thread per Gaussian. The SH coefficients (3K floats per Gaussian, contiguous per Gaussian)
 * are read and their gradients written through shared memory, a block's span at a time, so that
 * global accesses are coalesced; each thread's slice has stride 3K + 1 to spread the banks. At
 * least 8 blocks per multiprocessor (64 registers, a few spilled): more warps hide the latency of
 * the loads (0.103 -> 0.088 ms/step with the unrolled span on lego at 340k, H200). */
#define CU_PB_BLOCK 128
/* The kernels' SH coefficient count K as a compile-time constant where it is one of the degrees'
 * counts (1, 4, 9, 16; 0: K at run time): the spans' divisions by 3K become multiplications. */
#define CU_SH_K_DISPATCH(K, LAUNCH)                                                                        \
    switch (K) {                                                                                           \
    case 1: LAUNCH(1); break;                                                                              \
    case 4: LAUNCH(4); break;                                                                              \
    case 9: LAUNCH(9); break;                                                                              \
    case 16: LAUNCH(16); break;                                                                            \
    default: LAUNCH(0); break;                                                                             \
    }
template <int KC>
__global__ void __launch_bounds__(CU_PB_BLOCK, 8)
    k_project_back(cu_params P, int n, int Kr, sp_camera cam, float3 C, int sh_degree, int antialias, cu_proj proj,
                   cu_proj_grad G, cu_params out, float *grad_accum, float *grad_count, float *max_radius) {
    extern __shared__ float s_sh[];
    const int K = KC ? KC : Kr;
    int i0 = blockIdx.x * CU_PB_BLOCK, i = i0 + (int)threadIdx.x;
    int per = 3 * K, stride = per + 1;
    int count = min(CU_PB_BLOCK, n - i0) * per;
    cu_sh_span<CU_PB_BLOCK, KC>(P.sh, n, K, s_sh);
    __syncthreads();
    float *mine = s_sh + threadIdx.x * stride;
    if (i < n)
        cu_store_ggrad(out, i,
                       cuda_project_back_one(P, i, K, cam, C, sh_degree, antialias, proj, G, mine, mine, grad_accum,
                                             grad_count, max_radius));
    __syncthreads();
    float *dst = out.sh + (size_t)per * i0;
#pragma unroll 4
    for (int e = threadIdx.x; e < count; e += CU_PB_BLOCK) dst[e] = s_sh[e + e / per];
}

/* project_back fused with the step's update (cuda_project_back_update): the gradients of a
 * Gaussian never leave the multiprocessor. Each thread computes its Gaussian's gradients (SH ones
 * into its shared slot, as k_project_back) and adds MCMC's regularizer terms; the others go to
 * shared memory too. Then the block updates its Gaussians' contiguous spans of every parameter
 * group (cu_adam_span: consecutive threads on consecutive 16-byte pieces). Then the position
 * noise (it reads the updated opacity, scales and rotation). The same arithmetic, in the same
 * order, as k_project_back + k_mcmc_reg + k_adam4 + k_mcmc_noise. */

/* Where a span's gradients and learning rates come from (cu_adam_span): elem(e) / rate(e) for one
 * value e of the span; for the body's 16-byte pieces at(e) places a cursor on a piece's first
 * value, grad(j) / lr(j) read its value j (0..3) and next() moves it on by 4 CU_PB_BLOCK values
 * (a thread's next piece). cu_span_flat: a parameter group's span, gradient e at g[e], one
 * learning rate. */
struct cu_span_flat {
    const float *g;
    float r;
    const uint8_t *vis; /* the block's Gaussians in view; per values a Gaussian */
    int per;
    int e;
    __device__ float elem(int i) const { return g[i]; }
    __device__ float rate(int) const { return r; }
    __device__ void at(int i) { e = i; }
    __device__ float grad(int j) const { return g[e + j]; }
    __device__ float lr(int) const { return r; }
    __device__ void next() { e += 4 * CU_PB_BLOCK; }
    __device__ bool vis_elem(int i) const { return vis[i / per]; }
    __device__ bool vis_of(int j) const { return vis[(e + j) / per]; }
};

/* The SH span: value e is coefficient e % per of the block's Gaussian e / per, its gradient in that
 * Gaussian's shared slot (stride per + 1: at s[e + e / per]), its rate lr[4] for the three DC
 * values (e % per < 3), else lr[5]. The body's cursor keeps the Gaussian g and place c of its
 * piece's first value, moved on by additions instead of dividing each value's index by per (a
 * piece's value j is in the next Gaussian when c + j >= per: its slot one float further). With
 * cu_sh_span's full-block path, 3M Gaussians on lego: 1.64 -> 1.59 ms/step (bench/RESULTS.md,
 * session 28; the same bits). */
template <int PER>
struct cu_span_sh {
    const float *s;
    float r_dc, r_rest;
    int per;
    const uint8_t *vis;
    int e, g, c;
    __device__ int P() const { return PER ? PER : per; }
    __device__ float elem(int i) const { return s[i + i / P()]; }
    __device__ float rate(int i) const { return i % P() < 3 ? r_dc : r_rest; }
    __device__ void at(int i) { e = i, g = i / P(), c = i - g * P(); }
    __device__ float grad(int j) const { return s[e + g + j + (c + j >= P())]; }
    __device__ float lr(int j) const { return c + j < 3 || c + j >= P() ? r_dc : r_rest; }
    __device__ void next() {
        const int step = 4 * CU_PB_BLOCK, sg = step / P();
        e += step, g += sg, c += step - sg * P();
        if (c >= P()) c -= P(), g++;
    }
    __device__ bool vis_elem(int i) const { return vis[i / P()]; }
    __device__ bool vis_of(int j) const { return vis[g + (c + j >= P())]; }
};

/* One element's update (a span's ragged ends). PK: adam.moments16, the moments the packed words at
 * m (v not touched), element e being value base + e of the packed layout. */
template <bool PK, typename Span>
__device__ __forceinline__ void cu_adam_elem(float *p, float *m, float *v, int e, const Span &sp,
                                             const cu_adam_args &a, uint64_t base) {
    float gi = sp.elem(e);
    if (a.sparse && gi == 0.0f && !sp.vis_elem(e)) return;
    if (PK) {
        float pp = p[e];
        uint32_t w = __float_as_uint(m[e]);
        adam_val_m16(&pp, gi, &w, sp.rate(e), &a, base + (uint64_t)e);
        p[e] = pp, m[e] = __uint_as_float(w);
        return;
    }
    float pp = p[e], mm = m[e], vv = v[e];
    adam_val(&pp, gi, &mm, &vv, sp.rate(e), &a);
    p[e] = pp, m[e] = mm, v[e] = vv;
}

/* The block's span [0, len) of one group: the body in 16-byte pieces (value, moments), consecutive
 * threads on consecutive pieces; the elements before the first 16-byte boundary and after the last
 * one on their own (a group starts wherever the groups before it end in the flat arrays). p, m and
 * v sit at the same offset past a 16-byte boundary (the same layout in cudaMalloc'd buffers); if
 * they did not, every element would go on its own. PK and base: cu_adam_elem's (v is then not
 * read, nor its alignment). */
template <bool PK = false, typename Span>
__device__ __forceinline__ void cu_adam_span(float *p, float *m, float *v, int len, Span sp, const cu_adam_args &a,
                                             uint64_t base = 0) {
    uintptr_t ap = (uintptr_t)p;
    int same = !((ap ^ (uintptr_t)m) & 15u) && (PK || !((ap ^ (uintptr_t)v) & 15u)) && !(ap & 3u);
    int head = same ? min((int)((4u - ((ap >> 2) & 3u)) & 3u), len) : len;
    int nq = (len - head) >> 2, tail = head + 4 * nq, t = (int)threadIdx.x;
    /* the ragged ends, element k of head + (len - tail) (all len when not aligned alike) */
    for (int k = t; k < head + (len - tail); k += CU_PB_BLOCK)
        cu_adam_elem<PK>(p, m, v, k < head ? k : tail + k - head, sp, a, base);
    float4 *p4 = (float4 *)(p + head), *m4 = (float4 *)(m + head), *v4 = PK ? NULL : (float4 *)(v + head);
    if (t < nq) sp.at(head + 4 * t);
    for (int q = t; q < nq; q += CU_PB_BLOCK, sp.next()) {
        float gg[4];
        bool on[4], any = false;
#pragma unroll
        for (int j = 0; j < 4; j++) {
            gg[j] = sp.grad(j);
            on[j] = !a.sparse || gg[j] != 0.0f || sp.vis_of(j);
            any |= on[j];
        }
        if (!any) continue;
        if (PK) {
            float4 pp = p4[q];
            uint4 ww = ((uint4 *)m4)[q];
            float *fp = &pp.x;
            uint32_t *fw = &ww.x;
            uint64_t e0 = base + (uint64_t)(head + 4 * q);
#pragma unroll
            for (int j = 0; j < 4; j++)
                if (on[j]) adam_val_m16(&fp[j], gg[j], &fw[j], sp.lr(j), &a, e0 + j);
            p4[q] = pp, ((uint4 *)m4)[q] = ww;
            continue;
        }
        float4 pp = p4[q], mm = m4[q], vv = v4[q];
        float *fp = &pp.x, *fm = &mm.x, *fv = &vv.x;
#pragma unroll
        for (int j = 0; j < 4; j++)
            if (on[j]) adam_val(&fp[j], gg[j], &fm[j], &fv[j], sp.lr(j), &a);
        p4[q] = pp, m4[q] = mm, v4[q] = vv;
    }
}

/* KC: K at compile time (CU_SH_K_DISPATCH; 3M Gaussians on lego: 2.05 -> 1.85 ms/step).
 * 7 blocks a multiprocessor: their shared memory (3K + 12 floats a Gaussian, 30 KiB at degree 3)
 * fits, with up to 73 registers a thread (72 used, few spills). Measured (bench/RESULTS.md, sessions
 * 25-26): 16-byte pieces one at a time beat 4 scalar elements loaded ahead (3M: 2.05 against 2.10
 * ms/step) and two pieces ahead (2.87); more shared memory a Gaussian (the SH gradients' factors
 * beside the coefficients, saving the coefficients' second read) loses the occupancy it needs (2.74). */
template <int KC>
__global__ void __launch_bounds__(CU_PB_BLOCK, 7)
    k_project_back_update(cu_params P, int n, int Kr, sp_camera cam, float3 C, int sh_degree, int antialias,
                          cu_proj proj, cu_proj_grad G, cu_update u, float *grad_accum, float *grad_count,
                          float *max_radius) {
    extern __shared__ float s_sh[];
    const int B = CU_PB_BLOCK;
    const int K = KC ? KC : Kr;
    int i0 = blockIdx.x * B, t = (int)threadIdx.x, i = i0 + t;
    int per = 3 * K, stride = per + 1, cnt = min(B, n - i0);
    float *s_g = s_sh + B * stride; /* means 3B, log_scales 3B, quats 4B, opacity B */
    uint8_t *s_vis = (uint8_t *)(s_g + 11 * B); /* sparse: the block's Gaussians in view */
    s_vis[t] = i < n && proj.rect[4 * (size_t)i] < proj.rect[4 * (size_t)i + 2] &&
               proj.rect[4 * (size_t)i + 1] < proj.rect[4 * (size_t)i + 3];
    cu_sh_span<CU_PB_BLOCK, KC>(P.sh, n, K, s_sh);
    __syncthreads();
    if (i < n) {
        cu_ggrad g = cuda_project_back_one(P, i, K, cam, C, sh_degree, antialias, proj, G, s_sh + t * stride,
                                           s_sh + t * stride, grad_accum, grad_count, max_radius);
        if (u.wo != 0.0f || u.ws != 0.0f)
            mcmc_reg_one(P.opacity_logits[i], P.log_scales + 3 * (size_t)i, u.wo, u.ws, &g.opacity_logit,
                         g.log_scales);
        for (int k = 0; k < 3; k++) s_g[3 * t + k] = g.means[k], s_g[3 * B + 3 * t + k] = g.log_scales[k];
        for (int k = 0; k < 4; k++) s_g[6 * B + 4 * t + k] = g.quats[k];
        s_g[10 * B + t] = g.opacity_logit;
    }
    __syncthreads();
    const cu_adam_args &a = u.adam;
    size_t b3 = 3 * (size_t)i0, b4 = 4 * (size_t)i0, bs = (size_t)per * i0;
    if (a.moments16) { /* each group's span at its place in the packed layout (moments16_rule.h) */
        uint64_t N = (uint64_t)n;
        cu_adam_span<true>(P.means + b3, u.m1.means + b3, NULL, 3 * cnt, cu_span_flat{s_g, a.lr[0], s_vis, 3}, a, b3);
        cu_adam_span<true>(P.log_scales + b3, u.m1.log_scales + b3, NULL, 3 * cnt,
                           cu_span_flat{s_g + 3 * B, a.lr[1], s_vis, 3}, a, 3 * N + b3);
        cu_adam_span<true>(P.quats + b4, u.m1.quats + b4, NULL, 4 * cnt, cu_span_flat{s_g + 6 * B, a.lr[2], s_vis, 4},
                           a, 6 * N + b4);
        cu_adam_span<true>(P.opacity_logits + i0, u.m1.opacity_logits + i0, NULL, cnt,
                           cu_span_flat{s_g + 10 * B, a.lr[3], s_vis, 1}, a, 10 * N + (uint64_t)i0);
        cu_adam_span<true>(P.sh + bs, u.m1.sh + bs, NULL, per * cnt,
                           cu_span_sh<3 * KC>{s_sh, a.lr[4], a.lr[5], per, s_vis}, a, 11 * N + bs);
    } else {
        cu_adam_span(P.means + b3, u.m1.means + b3, u.m2.means + b3, 3 * cnt, cu_span_flat{s_g, a.lr[0], s_vis, 3},
                     a);
        cu_adam_span(P.log_scales + b3, u.m1.log_scales + b3, u.m2.log_scales + b3, 3 * cnt,
                     cu_span_flat{s_g + 3 * B, a.lr[1], s_vis, 3}, a);
        cu_adam_span(P.quats + b4, u.m1.quats + b4, u.m2.quats + b4, 4 * cnt,
                     cu_span_flat{s_g + 6 * B, a.lr[2], s_vis, 4}, a);
        cu_adam_span(P.opacity_logits + i0, u.m1.opacity_logits + i0, u.m2.opacity_logits + i0, cnt,
                     cu_span_flat{s_g + 10 * B, a.lr[3], s_vis, 1}, a);
        cu_adam_span(P.sh + bs, u.m1.sh + bs, u.m2.sh + bs, per * cnt,
                     cu_span_sh<3 * KC>{s_sh, a.lr[4], a.lr[5], per, s_vis}, a);
    }
    if (u.noise == 0.0f) return;
    __syncthreads(); /* the block's updates are visible to the noise of each Gaussian */
    if (i < n) mcmc_noise_one(P, i, u.noise, u.seed);
}

void cuda_project_back_update(cu_params *p, int n, int K, const sp_camera *cam, int sh_degree, int antialias,
                              const cu_proj *proj, const cu_proj_grad *g, const cu_update *u, float *grad_accum,
                              float *grad_count, float *max_radius, cudaStream_t s) {
    if (n <= 0) return;
    sh_degree = cap_degree(sh_degree, K);
    size_t smem = (size_t)CU_PB_BLOCK * ((3 * K + 1 + 11) * sizeof(float) + 1);
#define CU_PBU(KC)                                                                                          \
    k_project_back_update<KC><<<CU_GRID(n, CU_PB_BLOCK), CU_PB_BLOCK, smem, s>>>(                              \
        *p, n, K, *cam, camera_center(cam), sh_degree, antialias, *proj, *g, *u, grad_accum, grad_count, max_radius)
    CU_SH_K_DISPATCH(K, CU_PBU)
#undef CU_PBU
}

void cuda_project_back(const cu_params *p, int n, int K, const sp_camera *cam, int sh_degree, int antialias,
                       const cu_proj *proj, const cu_proj_grad *g, cu_params *out, float *grad_accum,
                       float *grad_count, float *max_radius, cudaStream_t s) {
    if (n <= 0) return;
    sh_degree = cap_degree(sh_degree, K);
    size_t smem = (size_t)CU_PB_BLOCK * (3 * K + 1) * sizeof(float);
#define CU_PB(KC)                                                                                           \
    k_project_back<KC><<<CU_GRID(n, CU_PB_BLOCK), CU_PB_BLOCK, smem, s>>>(                                     \
        *p, n, K, *cam, camera_center(cam), sh_degree, antialias, *proj, *g, *out, grad_accum, grad_count, max_radius)
    CU_SH_K_DISPATCH(K, CU_PB)
#undef CU_PB
}

/* The same per-Gaussian math run on the host (no GPU needed): lets tests check the kernels'
 * arithmetic against the CPU reference on machines without a device. */
void cuda_project_host(const cu_params *p, int n, int K, const sp_camera *cam, int sh_degree, int antialias,
                       cu_proj *out) {
    sh_degree = cap_degree(sh_degree, K);
    float3 C = camera_center(cam);
    for (int i = 0; i < n; i++) cuda_project_one(*p, i, K, *cam, C, sh_degree, antialias, *out);
}

void cuda_project_back_host(const cu_params *p, int n, int K, const sp_camera *cam, int sh_degree, int antialias,
                            const cu_proj *proj, const cu_proj_grad *g, cu_params *out) {
    sh_degree = cap_degree(sh_degree, K);
    float3 C = camera_center(cam);
    for (int i = 0; i < n; i++)
        cu_store_ggrad(*out, i,
                       cuda_project_back_one(*p, i, K, *cam, C, sh_degree, antialias, *proj, *g,
                                             p->sh + 3 * (size_t)K * i, out->sh + 3 * (size_t)K * i, NULL, NULL,
                                             NULL));
}
