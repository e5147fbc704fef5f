/* stage_math.h — the per-Gaussian and per-pixel math of docs/math.md, written once over a real type.
 *
 * This header has no include guard on purpose: it is a template. Before including it, define
 *   SP_REAL    the scalar type (float for the CPU stages, double for the gradient tests)
 *   SP_SUFFIX  a name suffix (f, d); every function and type below is named NAME_SUFFIX
 * and, optionally, SP_MATH_EVENT(kind, j): a hook called at every discrete decision of the
 * per-pixel rasterizer (skip, clamp, stop, blend), which tests use to detect when a finite
 * difference step crosses a discontinuity. The stages in project.c, raster.c and sh.c are thin
 * loops around these functions, so the float product and the double reference run the same code.
 *
 * The rasterizer is written twice: per pixel (sp_m_raster_pixel, sp_m_raster_pixel_back), which
 * reads like docs/math.md and is what the double reference runs, and per tile
 * (sp_m_raster_tile, sp_m_raster_tile_back), the fast splat-major form the CPU backend runs. The
 * tests hold the two to bit-identical float results.
 *
 * Constants are written through SP_R() so that float instances compute in float throughout. */
#ifndef SP_REAL
#error "define SP_REAL and SP_SUFFIX before including stage_math.h"
#endif

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "scene/camera.h"

#ifndef SP_MATH_EVENT
#define SP_MATH_EVENT(kind, j) ((void)0)
#endif

/* Discrete decisions reported through SP_MATH_EVENT. */
#ifndef SP_EV_BLEND
#define SP_EV_BLEND 1
#define SP_EV_SKIP_POWER 2
#define SP_EV_SKIP_ALPHA 3
#define SP_EV_CLAMP 4
#define SP_EV_STOP 5
#endif

#define SP_R(x) ((SP_REAL)(x))
#define SPM_CAT2(a, b) a##_##b
#define SPM_CAT(a, b) SPM_CAT2(a, b)
#define SPM(name) SPM_CAT(name, SP_SUFFIX)

/* Elementary functions in the instance's precision. */
static inline SP_REAL SPM(sp_m_exp)(SP_REAL x) { return _Generic(x, float: expf, default: exp)(x); }
static inline SP_REAL SPM(sp_m_log)(SP_REAL x) { return _Generic(x, float: logf, default: log)(x); }
static inline SP_REAL SPM(sp_m_sqrt)(SP_REAL x) { return _Generic(x, float: sqrtf, default: sqrt)(x); }
static inline SP_REAL SPM(sp_m_floor)(SP_REAL x) { return _Generic(x, float: floorf, default: floor)(x); }

/* Camera in the instance's precision, with its centre (for view directions). */
typedef struct {
    int w, h, tiles_x, tiles_y;
    SP_REAL fx, fy, cx, cy;
    SP_REAL R[9], t[3], C[3];
} SPM(sp_mcam);

static inline void SPM(sp_mcam_init)(SPM(sp_mcam) * c, const sp_camera *cam) {
    c->w = cam->width;
    c->h = cam->height;
    c->tiles_x = (cam->width + 15) / 16;
    c->tiles_y = (cam->height + 15) / 16;
    c->fx = cam->fx;
    c->fy = cam->fy;
    c->cx = cam->cx;
    c->cy = cam->cy;
    for (int i = 0; i < 9; i++) c->R[i] = cam->R[i];
    for (int i = 0; i < 3; i++) c->t[i] = cam->t[i];
    /* C = -R^T t */
    for (int i = 0; i < 3; i++) c->C[i] = -(c->R[0 * 3 + i] * c->t[0] + c->R[1 * 3 + i] * c->t[1] + c->R[2 * 3 + i] * c->t[2]);
}

/* ---------------------------------------------------------------------------------------------
 * Spherical harmonics (real basis of the 3DGS format, degree 0..3). */

static inline void SPM(sp_m_sh_eval)(int degree, const SP_REAL *sh, const SP_REAL d[3], SP_REAL out[3]) {
    const SP_REAL C0 = SP_R(0.28209479177387814), C1 = SP_R(0.4886025119029199);
    for (int ch = 0; ch < 3; ch++) out[ch] = C0 * sh[ch];
    if (degree < 1) return;
    SP_REAL x = d[0], y = d[1], z = d[2];
    for (int ch = 0; ch < 3; ch++) out[ch] += -C1 * y * sh[3 + ch] + C1 * z * sh[6 + ch] - C1 * x * sh[9 + ch];
    if (degree < 2) return;
    SP_REAL xx = x * x, yy = y * y, zz = z * z, xy = x * y, yz = y * z, xz = x * z;
    SP_REAL b2[5] = {SP_R(1.0925484305920792) * xy, SP_R(-1.0925484305920792) * yz,
                     SP_R(0.31539156525252005) * (SP_R(2) * zz - xx - yy), SP_R(-1.0925484305920792) * xz,
                     SP_R(0.5462742152960396) * (xx - yy)};
    for (int k = 0; k < 5; k++)
        for (int ch = 0; ch < 3; ch++) out[ch] += b2[k] * sh[(4 + k) * 3 + ch];
    if (degree < 3) return;
    SP_REAL b3[7] = {SP_R(-0.5900435899266435) * y * (SP_R(3) * xx - yy),
                     SP_R(2.890611442640554) * xy * z,
                     SP_R(-0.4570457994644658) * y * (SP_R(4) * zz - xx - yy),
                     SP_R(0.3731763325901154) * z * (SP_R(2) * zz - SP_R(3) * xx - SP_R(3) * yy),
                     SP_R(-0.4570457994644658) * x * (SP_R(4) * zz - xx - yy),
                     SP_R(1.445305721320277) * z * (xx - yy),
                     SP_R(-0.5900435899266435) * x * (xx - SP_R(3) * yy)};
    for (int k = 0; k < 7; k++)
        for (int ch = 0; ch < 3; ch++) out[ch] += b3[k] * sh[(9 + k) * 3 + ch];
}

/* Adds dL/dsh (the (degree+1)^2 coefficients used) and dL/dd (d treated as a free 3-vector). */
static inline void SPM(sp_m_sh_eval_back)(int degree, const SP_REAL *sh, const SP_REAL d[3], const SP_REAL g[3],
                                          SP_REAL *dsh, SP_REAL dd[3]) {
    const SP_REAL C0 = SP_R(0.28209479177387814), C1 = SP_R(0.4886025119029199);
    for (int ch = 0; ch < 3; ch++) dsh[ch] += C0 * g[ch];
    if (degree < 1) return;
    SP_REAL x = d[0], y = d[1], z = d[2];
    /* basis values b[k] and their gradients db[k] = (d/dx, d/dy, d/dz) */
    SP_REAL b[16], db[16][3];
    int nb = 3;
    b[0] = -C1 * y, b[1] = C1 * z, b[2] = -C1 * x;
    SP_REAL db1[3][3] = {{0, -C1, 0}, {0, 0, C1}, {-C1, 0, 0}};
    memcpy(db, db1, sizeof db1);
    if (degree >= 2) {
        SP_REAL xx = x * x, yy = y * y, zz = z * z;
        const SP_REAL k0 = SP_R(1.0925484305920792), k1 = SP_R(-1.0925484305920792),
                      k2 = SP_R(0.31539156525252005), k3 = SP_R(-1.0925484305920792), k4 = SP_R(0.5462742152960396);
        b[3] = k0 * x * y;
        b[4] = k1 * y * z;
        b[5] = k2 * (SP_R(2) * zz - xx - yy);
        b[6] = k3 * x * z;
        b[7] = k4 * (xx - yy);
        SP_REAL db2[5][3] = {{k0 * y, k0 * x, 0},
                             {0, k1 * z, k1 * y},
                             {k2 * SP_R(-2) * x, k2 * SP_R(-2) * y, k2 * SP_R(4) * z},
                             {k3 * z, 0, k3 * x},
                             {k4 * SP_R(2) * x, k4 * SP_R(-2) * y, 0}};
        memcpy(db[3], db2, sizeof db2);
        nb = 8;
        if (degree >= 3) {
            const SP_REAL c0 = SP_R(-0.5900435899266435), c1 = SP_R(2.890611442640554),
                          c2 = SP_R(-0.4570457994644658), c3 = SP_R(0.3731763325901154),
                          c4 = SP_R(-0.4570457994644658), c5 = SP_R(1.445305721320277),
                          c6 = SP_R(-0.5900435899266435);
            b[8] = c0 * y * (SP_R(3) * xx - yy);
            b[9] = c1 * x * y * z;
            b[10] = c2 * y * (SP_R(4) * zz - xx - yy);
            b[11] = c3 * z * (SP_R(2) * zz - SP_R(3) * xx - SP_R(3) * yy);
            b[12] = c4 * x * (SP_R(4) * zz - xx - yy);
            b[13] = c5 * z * (xx - yy);
            b[14] = c6 * x * (xx - SP_R(3) * yy);
            SP_REAL db3[7][3] = {
                {c0 * SP_R(6) * x * y, c0 * (SP_R(3) * xx - SP_R(3) * yy), 0},
                {c1 * y * z, c1 * x * z, c1 * x * y},
                {c2 * SP_R(-2) * x * y, c2 * (SP_R(4) * zz - xx - SP_R(3) * yy), c2 * SP_R(8) * y * z},
                {c3 * SP_R(-6) * x * z, c3 * SP_R(-6) * y * z, c3 * (SP_R(6) * zz - SP_R(3) * xx - SP_R(3) * yy)},
                {c4 * (SP_R(4) * zz - SP_R(3) * xx - yy), c4 * SP_R(-2) * x * y, c4 * SP_R(8) * x * z},
                {c5 * SP_R(2) * x * z, c5 * SP_R(-2) * y * z, c5 * (xx - yy)},
                {c6 * (SP_R(3) * xx - SP_R(3) * yy), c6 * SP_R(-6) * x * y, 0}};
            memcpy(db[8], db3, sizeof db3);
            nb = 15;
        }
    }
    for (int k = 0; k < nb; k++) {
        SP_REAL gb = 0;
        for (int ch = 0; ch < 3; ch++) {
            dsh[(1 + k) * 3 + ch] += b[k] * g[ch];
            gb += sh[(1 + k) * 3 + ch] * g[ch];
        }
        for (int i = 0; i < 3; i++) dd[i] += gb * db[k][i];
    }
}

/* ---------------------------------------------------------------------------------------------
 * project (one Gaussian). */

/* Everything `project` produces for one Gaussian. Not visible: all zero (rect empty). */
typedef struct {
    SP_REAL mean2d[2], conic[3], depth, opacity, color[3], radius;
    int32_t rect[4];
    uint8_t clamped[3];
} SPM(sp_mproj);

/* Standard rotation matrix of a unit quaternion (w, x, y, z), row-major. */
static inline void SPM(sp_m_quat_rot)(const SP_REAL q[4], SP_REAL R[9]) {
    SP_REAL w = q[0], x = q[1], y = q[2], z = q[3];
    R[0] = SP_R(1) - SP_R(2) * (y * y + z * z);
    R[1] = SP_R(2) * (x * y - w * z);
    R[2] = SP_R(2) * (x * z + w * y);
    R[3] = SP_R(2) * (x * y + w * z);
    R[4] = SP_R(1) - SP_R(2) * (x * x + z * z);
    R[5] = SP_R(2) * (y * z - w * x);
    R[6] = SP_R(2) * (x * z - w * y);
    R[7] = SP_R(2) * (y * z + w * x);
    R[8] = SP_R(1) - SP_R(2) * (x * x + y * y);
}

/* Intermediate values of project shared with project_back. */
typedef struct {
    SP_REAL p[3];      /* camera-space point */
    SP_REAL qn[4];     /* normalized quaternion */
    SP_REAL qlen;      /* |q| */
    SP_REAL Rq[9], s[3], M[9], S[6]; /* rotation, scales, M = Rq diag(s), Sigma (xx xy xz yy yz zz) */
    SP_REAL u, v;      /* clamped directions */
    int clamp_u, clamp_v;
    SP_REAL T[6];      /* J W, 2x3 row-major */
    SP_REAL a, b, c;   /* 2D covariance with low-pass */
    SP_REAL det;
    SP_REAL det0;      /* determinant of the 2D covariance before the low-pass (antialias) */
} SPM(sp_mgeo);

/* The low-pass filter: pixels^2 added to the diagonal of every 2D covariance. */
#ifndef SP_M_LOWPASS
#define SP_M_LOWPASS 0.3
#endif

/* Steps 1-5 of project. Returns 0 when the Gaussian is not visible (behind the near plane or
 * degenerate 2D covariance). */
static inline int SPM(sp_m_geometry)(const SPM(sp_mcam) * cam, const SP_REAL m[3], const SP_REAL ls[3],
                                     const SP_REAL q[4], SPM(sp_mgeo) * g) {
    const SP_REAL *W = cam->R;
    for (int i = 0; i < 3; i++) g->p[i] = W[i * 3 + 0] * m[0] + W[i * 3 + 1] * m[1] + W[i * 3 + 2] * m[2] + cam->t[i];
    SP_REAL z = g->p[2];
    if (!(z >= SP_R(0.2))) return 0;
    SP_REAL qq = q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3];
    g->qlen = SPM(sp_m_sqrt)(qq);
    if (!(g->qlen > 0)) return 0;
    for (int i = 0; i < 4; i++) g->qn[i] = q[i] / g->qlen;
    SPM(sp_m_quat_rot)(g->qn, g->Rq);
    for (int i = 0; i < 3; i++) g->s[i] = SPM(sp_m_exp)(ls[i]);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) g->M[i * 3 + j] = g->Rq[i * 3 + j] * g->s[j];
    const SP_REAL *M = g->M;
    /* Sigma = M M^T, upper triangle */
    int si = 0;
    for (int i = 0; i < 3; i++)
        for (int j = i; j < 3; j++)
            g->S[si++] = M[i * 3 + 0] * M[j * 3 + 0] + M[i * 3 + 1] * M[j * 3 + 1] + M[i * 3 + 2] * M[j * 3 + 2];
    /* Jacobian with clamped direction */
    SP_REAL ulo = -(cam->cx + SP_R(0.15) * cam->w) / cam->fx;
    SP_REAL uhi = (cam->w - cam->cx + SP_R(0.15) * cam->w) / cam->fx;
    SP_REAL vlo = -(cam->cy + SP_R(0.15) * cam->h) / cam->fy;
    SP_REAL vhi = (cam->h - cam->cy + SP_R(0.15) * cam->h) / cam->fy;
    SP_REAL u = g->p[0] / z, v = g->p[1] / z;
    g->clamp_u = g->clamp_v = 0;
    if (u < ulo) u = ulo, g->clamp_u = 1;
    if (u > uhi) u = uhi, g->clamp_u = 1;
    if (v < vlo) v = vlo, g->clamp_v = 1;
    if (v > vhi) v = vhi, g->clamp_v = 1;
    g->u = u;
    g->v = v;
    SP_REAL tx = u * z, ty = v * z;
    SP_REAL J00 = cam->fx / z, J02 = -cam->fx * tx / (z * z);
    SP_REAL J11 = cam->fy / z, J12 = -cam->fy * ty / (z * z);
    for (int k = 0; k < 3; k++) {
        g->T[k] = J00 * W[0 * 3 + k] + J02 * W[2 * 3 + k];
        g->T[3 + k] = J11 * W[1 * 3 + k] + J12 * W[2 * 3 + k];
    }
    /* Sigma' = T Sigma T^T */
    const SP_REAL *S = g->S;
    SP_REAL Sf[9] = {S[0], S[1], S[2], S[1], S[3], S[4], S[2], S[4], S[5]};
    SP_REAL TS[6];
    for (int r = 0; r < 2; r++)
        for (int k = 0; k < 3; k++)
            TS[r * 3 + k] = g->T[r * 3 + 0] * Sf[0 * 3 + k] + g->T[r * 3 + 1] * Sf[1 * 3 + k] + g->T[r * 3 + 2] * Sf[2 * 3 + k];
    SP_REAL s00 = TS[0] * g->T[0] + TS[1] * g->T[1] + TS[2] * g->T[2];
    SP_REAL s01 = TS[0] * g->T[3] + TS[1] * g->T[4] + TS[2] * g->T[5];
    SP_REAL s11 = TS[3] * g->T[3] + TS[4] * g->T[4] + TS[5] * g->T[5];
    g->a = s00 + SP_R(SP_M_LOWPASS);
    g->b = s01;
    g->c = s11 + SP_R(SP_M_LOWPASS);
    g->det = g->a * g->c - g->b * g->b;
    /* det(T Sigma T^T) without the cancellation of s00 s11 - s01^2 (needle-like Gaussians): a sum of
     * squares of the 2x2 minors of T Rq diag(s), which are s_i s_j n_k with n = Rq^T (T_0 x T_1)
     * (Cauchy-Binet; (i, j, k) cyclic) */
    const SP_REAL *Tm = g->T, *Rm = g->Rq;
    SP_REAL x0 = Tm[1] * Tm[5] - Tm[2] * Tm[4], x1 = Tm[2] * Tm[3] - Tm[0] * Tm[5], x2 = Tm[0] * Tm[4] - Tm[1] * Tm[3];
    SP_REAL mn[3];
    for (int k = 0; k < 3; k++) mn[k] = Rm[0 * 3 + k] * x0 + Rm[1 * 3 + k] * x1 + Rm[2 * 3 + k] * x2;
    mn[0] = g->s[1] * g->s[2] * mn[0];
    mn[1] = g->s[2] * g->s[0] * mn[1];
    mn[2] = g->s[0] * g->s[1] * mn[2];
    g->det0 = mn[0] * mn[0] + mn[1] * mn[1] + mn[2] * mn[2];
    if (!(g->det > 0)) return 0;
    return 1;
}

static inline SP_REAL SPM(sp_m_clampr)(SP_REAL x, SP_REAL lo, SP_REAL hi) { return x < lo ? lo : (x > hi ? hi : x); }

/* The antialias opacity factor rho = sqrt(det0 / det): the low-pass filter keeps the Gaussian's
 * integral instead of its peak (docs/math.md, "Antialiasing"). 0 when the unfiltered covariance is
 * degenerate. */
static inline SP_REAL SPM(sp_m_aa_rho)(const SPM(sp_mgeo) * g) {
    return g->det0 > 0 ? SPM(sp_m_sqrt)(g->det0 / g->det) : SP_R(0);
}

/* project for one Gaussian: m[3], ls[3], q[4], logit, sh[K][3] (first (degree+1)^2 used).
 * antialias != 0: the opacity is scaled by sp_m_aa_rho (and the visibility and extent follow it). */
static inline int SPM(sp_m_project)(const SPM(sp_mcam) * cam, const SP_REAL m[3], const SP_REAL ls[3],
                                    const SP_REAL q[4], SP_REAL logit, const SP_REAL *sh, int degree,
                                    int antialias, SPM(sp_mproj) * o) {
    memset(o, 0, sizeof *o);
    SPM(sp_mgeo) g;
    if (!SPM(sp_m_geometry)(cam, m, ls, q, &g)) return 0;
    SP_REAL z = g.p[2];
    SP_REAL mx = cam->fx * g.p[0] / z + cam->cx, my = cam->fy * g.p[1] / z + cam->cy;
    SP_REAL sig = SP_R(1) / (SP_R(1) + SPM(sp_m_exp)(-logit));
    if (antialias) sig = sig * SPM(sp_m_aa_rho)(&g);
    if (!(sig >= SP_R(1) / SP_R(255))) return 0;
    SP_REAL tau = SP_R(2) * SPM(sp_m_log)(SP_R(255) * sig);
    SP_REAL ex = SPM(sp_m_sqrt)(tau * g.a), ey = SPM(sp_m_sqrt)(tau * g.c);
    SP_REAL tw = (SP_REAL)cam->tiles_x, th = (SP_REAL)cam->tiles_y;
    SP_REAL x0 = SPM(sp_m_clampr)(SPM(sp_m_floor)((mx - ex) / SP_R(16)), 0, tw);
    SP_REAL x1 = SPM(sp_m_clampr)(SPM(sp_m_floor)((mx + ex) / SP_R(16)) + SP_R(1), 0, tw);
    SP_REAL y0 = SPM(sp_m_clampr)(SPM(sp_m_floor)((my - ey) / SP_R(16)), 0, th);
    SP_REAL y1 = SPM(sp_m_clampr)(SPM(sp_m_floor)((my + ey) / SP_R(16)) + SP_R(1), 0, th);
    if (!(x0 < x1 && y0 < y1)) return 0; /* also rejects NaN */
    o->rect[0] = (int32_t)x0;
    o->rect[1] = (int32_t)y0;
    o->rect[2] = (int32_t)x1;
    o->rect[3] = (int32_t)y1;
    o->radius = ex > ey ? ex : ey;
    o->mean2d[0] = mx;
    o->mean2d[1] = my;
    o->conic[0] = g.c / g.det;
    o->conic[1] = -g.b / g.det;
    o->conic[2] = g.a / g.det;
    o->depth = z;
    o->opacity = sig;
    /* colour from the view direction */
    SP_REAL d[3] = {m[0] - cam->C[0], m[1] - cam->C[1], m[2] - cam->C[2]};
    SP_REAL dl = SPM(sp_m_sqrt)(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
    if (dl > 0)
        for (int i = 0; i < 3; i++) d[i] /= dl;
    SP_REAL col[3];
    SPM(sp_m_sh_eval)(degree, sh, d, col);
    for (int ch = 0; ch < 3; ch++) {
        SP_REAL cc = col[ch] + SP_R(0.5);
        o->clamped[ch] = cc < 0;
        o->color[ch] = cc < 0 ? SP_R(0) : cc;
    }
    return 1;
}

/* project_back for one visible Gaussian: given dL/d(mean2d, conic, opacity, color), ADDS the
 * gradients w.r.t. m, ls, q, logit and sh (first (degree+1)^2 coefficients). `clamped` is the
 * mask written by project; antialias as there (dopacity is then w.r.t. the scaled opacity). */
static inline void SPM(sp_m_project_back)(const SPM(sp_mcam) * cam, const SP_REAL m[3], const SP_REAL ls[3],
                                          const SP_REAL q[4], SP_REAL logit, const SP_REAL *sh, int degree,
                                          int antialias, const uint8_t clamped[3], const SP_REAL dmean2d[2],
                                          const SP_REAL dconic[3], SP_REAL dopacity, const SP_REAL dcolor[3],
                                          SP_REAL dm[3], SP_REAL dls[3], SP_REAL dq[4], SP_REAL *dlogit,
                                          SP_REAL *dsh) {
    SPM(sp_mgeo) g;
    if (!SPM(sp_m_geometry)(cam, m, ls, q, &g)) return;
    const SP_REAL *W = cam->R;
    SP_REAL z = g.p[2], iz = SP_R(1) / z, iz2 = iz * iz;
    SP_REAL dp[3] = {0, 0, 0};

    /* opacity = sigmoid(logit) (times rho with antialias) */
    SP_REAL sig = SP_R(1) / (SP_R(1) + SPM(sp_m_exp)(-logit));
    SP_REAL rho = antialias ? SPM(sp_m_aa_rho)(&g) : SP_R(1);
    *dlogit += dopacity * rho * sig * (SP_R(1) - sig);

    /* mean2d = (fx px/z + cx, fy py/z + cy) */
    dp[0] += cam->fx * iz * dmean2d[0];
    dp[1] += cam->fy * iz * dmean2d[1];
    dp[2] += -cam->fx * g.p[0] * iz2 * dmean2d[0] - cam->fy * g.p[1] * iz2 * dmean2d[1];

    /* conic = (c, -b, a) / det */
    SP_REAL a = g.a, b = g.b, c = g.c, id2 = SP_R(1) / (g.det * g.det);
    SP_REAL dA = dconic[0], dB = dconic[1], dC = dconic[2];
    SP_REAL da = id2 * (-c * c * dA + b * c * dB - b * b * dC);
    SP_REAL db = id2 * (SP_R(2) * b * c * dA - (a * c + b * b) * dB + SP_R(2) * a * b * dC);
    SP_REAL dc = id2 * (-b * b * dA + a * b * dB - a * a * dC);
    if (antialias && rho > 0) {
        /* rho^2 = det0 / det with det0 = (a - s)(c - s) - b^2, det = a c - b^2 (s the low-pass) */
        SP_REAL h = SP_R(0.5) * dopacity * sig * rho, i0 = SP_R(1) / g.det0, i1 = SP_R(1) / g.det;
        da += h * ((c - SP_R(SP_M_LOWPASS)) * i0 - c * i1);
        db += h * SP_R(2) * b * (i1 - i0);
        dc += h * ((a - SP_R(SP_M_LOWPASS)) * i0 - a * i1);
    }
    /* Sigma' = T Sigma T^T, symmetric gradient G' = [[da, db/2], [db/2, dc]] */
    SP_REAL G[4] = {da, SP_R(0.5) * db, SP_R(0.5) * db, dc};
    const SP_REAL *S = g.S, *T = g.T;
    SP_REAL Sf[9] = {S[0], S[1], S[2], S[1], S[3], S[4], S[2], S[4], S[5]};
    SP_REAL TS[6];
    for (int r = 0; r < 2; r++)
        for (int k = 0; k < 3; k++)
            TS[r * 3 + k] = T[r * 3 + 0] * Sf[0 * 3 + k] + T[r * 3 + 1] * Sf[1 * 3 + k] + T[r * 3 + 2] * Sf[2 * 3 + k];
    /* dT = 2 G' T Sigma */
    SP_REAL dT[6];
    for (int r = 0; r < 2; r++)
        for (int k = 0; k < 3; k++) dT[r * 3 + k] = SP_R(2) * (G[r * 2 + 0] * TS[0 * 3 + k] + G[r * 2 + 1] * TS[1 * 3 + k]);
    /* dSigma = T^T G' T (full symmetric 3x3) */
    SP_REAL GT[6];
    for (int r = 0; r < 2; r++)
        for (int k = 0; k < 3; k++) GT[r * 3 + k] = G[r * 2 + 0] * T[0 * 3 + k] + G[r * 2 + 1] * T[1 * 3 + k];
    SP_REAL dS[9];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) dS[i * 3 + j] = T[0 * 3 + i] * GT[0 * 3 + j] + T[1 * 3 + i] * GT[1 * 3 + j];
    /* Sigma = M M^T: dM = 2 dSigma M */
    SP_REAL dM[9];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            dM[i * 3 + j] = SP_R(2) * (dS[i * 3 + 0] * g.M[0 * 3 + j] + dS[i * 3 + 1] * g.M[1 * 3 + j] +
                                       dS[i * 3 + 2] * g.M[2 * 3 + j]);
    /* M = Rq diag(s) */
    SP_REAL dR[9];
    for (int j = 0; j < 3; j++) {
        SP_REAL ds = 0;
        for (int i = 0; i < 3; i++) {
            dR[i * 3 + j] = dM[i * 3 + j] * g.s[j];
            ds += dM[i * 3 + j] * g.Rq[i * 3 + j];
        }
        dls[j] += ds * g.s[j];
    }
    /* Rq(qn) -> qn */
    SP_REAL w = g.qn[0], x = g.qn[1], y = g.qn[2], zq = g.qn[3];
    SP_REAL dqn[4];
    dqn[0] = SP_R(2) * (-zq * dR[1] + y * dR[2] + zq * dR[3] - x * dR[5] - y * dR[6] + x * dR[7]);
    dqn[1] = SP_R(2) * (y * dR[1] + zq * dR[2] + y * dR[3] - SP_R(2) * x * dR[4] - w * dR[5] + zq * dR[6] + w * dR[7] -
                        SP_R(2) * x * dR[8]);
    dqn[2] = SP_R(2) * (-SP_R(2) * y * dR[0] + x * dR[1] + w * dR[2] + x * dR[3] + zq * dR[5] - w * dR[6] + zq * dR[7] -
                        SP_R(2) * y * dR[8]);
    dqn[3] = SP_R(2) * (-SP_R(2) * zq * dR[0] - w * dR[1] + x * dR[2] + w * dR[3] - SP_R(2) * zq * dR[4] + y * dR[5] +
                        x * dR[6] + y * dR[7]);
    /* qn = q / |q| */
    SP_REAL qd = dqn[0] * g.qn[0] + dqn[1] * g.qn[1] + dqn[2] * g.qn[2] + dqn[3] * g.qn[3];
    for (int i = 0; i < 4; i++) dq[i] += (dqn[i] - g.qn[i] * qd) / g.qlen;

    /* T = J W: dJ = dT W^T (only the non-zero entries of J) */
    SP_REAL dJ00 = dT[0] * W[0] + dT[1] * W[1] + dT[2] * W[2];
    SP_REAL dJ02 = dT[0] * W[6] + dT[1] * W[7] + dT[2] * W[8];
    SP_REAL dJ11 = dT[3] * W[3] + dT[4] * W[4] + dT[5] * W[5];
    SP_REAL dJ12 = dT[3] * W[6] + dT[4] * W[7] + dT[5] * W[8];
    /* J00 = fx/z, J02 = -fx tx/z^2, J11 = fy/z, J12 = -fy ty/z^2, tx = u z, ty = v z */
    SP_REAL tx = g.u * z, ty = g.v * z;
    dp[2] += -cam->fx * iz2 * dJ00 - cam->fy * iz2 * dJ11 + SP_R(2) * cam->fx * tx * iz2 * iz * dJ02 +
             SP_R(2) * cam->fy * ty * iz2 * iz * dJ12;
    SP_REAL dtx = -cam->fx * iz2 * dJ02, dty = -cam->fy * iz2 * dJ12;
    if (g.clamp_u) dp[2] += g.u * dtx; /* tx = u_clamped z */
    else dp[0] += dtx;                 /* tx = (px/z) z = px */
    if (g.clamp_v) dp[2] += g.v * dty;
    else dp[1] += dty;

    /* p = W m + t */
    for (int k = 0; k < 3; k++) dm[k] += W[0 * 3 + k] * dp[0] + W[1 * 3 + k] * dp[1] + W[2 * 3 + k] * dp[2];

    /* colour: c = SH(d) + 0.5, masked where clamped; d = (m - C)/|m - C| */
    SP_REAL gc[3];
    for (int ch = 0; ch < 3; ch++) gc[ch] = clamped[ch] ? SP_R(0) : dcolor[ch];
    SP_REAL d[3] = {m[0] - cam->C[0], m[1] - cam->C[1], m[2] - cam->C[2]};
    SP_REAL dl = SPM(sp_m_sqrt)(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
    if (dl > 0)
        for (int i = 0; i < 3; i++) d[i] /= dl;
    SP_REAL dd[3] = {0, 0, 0};
    SPM(sp_m_sh_eval_back)(degree, sh, d, gc, dsh, dd);
    if (degree > 0 && dl > 0) {
        SP_REAL dot = dd[0] * d[0] + dd[1] * d[1] + dd[2] * d[2];
        for (int i = 0; i < 3; i++) dm[i] += (dd[i] - d[i] * dot) / dl;
    }
}

/* ---------------------------------------------------------------------------------------------
 * rasterize / backward_raster (one pixel over a tile's depth-ordered list). */

/* One projected Gaussian as the rasterizer reads it (also used for its gradient). */
typedef struct {
    SP_REAL x, y;    /* mean2d */
    SP_REAL a, b, c; /* conic */
    SP_REAL op;      /* sigmoid opacity */
    SP_REAL col[3];
    SP_REAL pmin;    /* below this power alpha < 1/255 for certain (sp_m_splat_pmin); unused in gradients */
} SPM(sp_msplat);

/* A power below which op e^power < 1/255 holds with a margin far above rounding error: the
 * rasterizer skips those without evaluating exp. Larger powers take the exact test, so the
 * decisions are exactly those of docs/math.md. */
static inline SP_REAL SPM(sp_m_splat_pmin)(SP_REAL op) {
    return op > 0 ? -SPM(sp_m_log)(SP_R(255) * op) - SP_R(1e-3) : SP_R(-1e30);
}

/* The alpha of splat g at a pixel where its power (docs/math.md) is `power`, clamped to 0.99, and
 * its exp term in *e; 0 when the pair is skipped (power outside [pmin, 0], or alpha below 1/255). */
static inline SP_REAL SPM(sp_m_alpha_of_power)(const SPM(sp_msplat) * g, SP_REAL power, SP_REAL *e) {
    if (power < g->pmin || power > 0) return 0;
    *e = SPM(sp_m_exp)(power);
    SP_REAL al = g->op * *e;
    if (al > SP_R(0.99)) al = SP_R(0.99);
    return al < SP_R(1) / SP_R(255) ? 0 : al;
}

/* sp_m_alpha_of_power at offset (dx, dy) = mean - pixel centre. */
static inline SP_REAL SPM(sp_m_alpha)(const SPM(sp_msplat) * g, SP_REAL dx, SP_REAL dy, SP_REAL *e) {
    SP_REAL power = SP_R(-0.5) * (g->a * dx * dx + g->c * dy * dy) - g->b * dx * dy;
    return SPM(sp_m_alpha_of_power)(g, power, e);
}

/* Composites splats s[0..n) front to back at pixel (px, py) (integer pixel coordinates).
 * Writes rgb (background included), final T and n_contrib. */
static inline void SPM(sp_m_raster_pixel)(const SPM(sp_msplat) * s, int n, int px, int py, const SP_REAL bg[3],
                                          SP_REAL rgb[3], SP_REAL *final_T, int32_t *n_contrib) {
    SP_REAL fx = (SP_REAL)px + SP_R(0.5), fy = (SP_REAL)py + SP_R(0.5);
    SP_REAL T = 1, C0 = 0, C1 = 0, C2 = 0;
    int32_t last = 0;
    for (int j = 0; j < n; j++) {
        const SPM(sp_msplat) *g = &s[j];
        SP_REAL dx = g->x - fx, dy = g->y - fy;
        SP_REAL power = SP_R(-0.5) * (g->a * dx * dx + g->c * dy * dy) - g->b * dx * dy;
        if (power < g->pmin) {
            SP_MATH_EVENT(SP_EV_SKIP_ALPHA, j);
            continue;
        }
        if (power > 0) {
            SP_MATH_EVENT(SP_EV_SKIP_POWER, j);
            continue;
        }
        SP_REAL al = g->op * SPM(sp_m_exp)(power);
        if (al > SP_R(0.99)) {
            SP_MATH_EVENT(SP_EV_CLAMP, j);
            al = SP_R(0.99);
        }
        if (al < SP_R(1) / SP_R(255)) {
            SP_MATH_EVENT(SP_EV_SKIP_ALPHA, j);
            continue;
        }
        SP_REAL Tn = T * (SP_R(1) - al);
        if (Tn < SP_R(1e-4)) {
            SP_MATH_EVENT(SP_EV_STOP, j);
            break;
        }
        SP_MATH_EVENT(SP_EV_BLEND, j);
        SP_REAL w = al * T;
        C0 += g->col[0] * w;
        C1 += g->col[1] * w;
        C2 += g->col[2] * w;
        T = Tn;
        last = j + 1;
    }
    rgb[0] = C0 + T * bg[0];
    rgb[1] = C1 + T * bg[1];
    rgb[2] = C2 + T * bg[2];
    *final_T = T;
    *n_contrib = last;
}

/* Backward of sp_m_raster_pixel for one pixel: G = dL/drgb. ADDS into gs[j] (same layout as the
 * splats: dmean2d, dconic, dopacity, dcolor) for the splats this pixel blended. */
static inline void SPM(sp_m_raster_pixel_back)(const SPM(sp_msplat) * s, int n_contrib, int px, int py,
                                               const SP_REAL bg[3], SP_REAL final_T, const SP_REAL G[3],
                                               SPM(sp_msplat) * gs) {
    SP_REAL fx = (SP_REAL)px + SP_R(0.5), fy = (SP_REAL)py + SP_R(0.5);
    SP_REAL T = final_T;
    SP_REAL B0 = T * bg[0], B1 = T * bg[1], B2 = T * bg[2];
    for (int j = n_contrib - 1; j >= 0; j--) {
        const SPM(sp_msplat) *g = &s[j];
        SP_REAL dx = g->x - fx, dy = g->y - fy, e;
        SP_REAL al = SPM(sp_m_alpha)(g, dx, dy, &e);
        if (al == 0) continue;
        SP_REAL inv = SP_R(1) / (SP_R(1) - al);
        SP_REAL Tj = T * inv;
        SP_REAL w = al * Tj;
        SPM(sp_msplat) *d = &gs[j];
        d->col[0] += w * G[0];
        d->col[1] += w * G[1];
        d->col[2] += w * G[2];
        SP_REAL dal = G[0] * (g->col[0] * Tj - B0 * inv) + G[1] * (g->col[1] * Tj - B1 * inv) +
                      G[2] * (g->col[2] * Tj - B2 * inv);
        B0 += g->col[0] * w;
        B1 += g->col[1] * w;
        B2 += g->col[2] * w;
        T = Tj;
        /* The clamp passes gradients straight through (3DGS convention): opaque cores keep
         * moving and keep feeding the densification statistics. */
        d->op += dal * e;
        SP_REAL dpow = dal * g->op * e;
        d->a += dpow * SP_R(-0.5) * dx * dx;
        d->b += dpow * -(dx * dy);
        d->c += dpow * SP_R(-0.5) * dy * dy;
        d->x += dpow * -(g->a * dx + g->b * dy);
        d->y += dpow * -(g->b * dx + g->c * dy);
    }
}

/* ---------------------------------------------------------------------------------------------
 * The same two functions for a whole tile at once, splat-major: each splat visits only the pixels
 * of its footprint box (the ellipse where power >= pmin, widened by a pixel), in row-major order,
 * and pixels outside it would skip that splat anyway. Within the box, row by row, only the pixels
 * that can take part are visited: still blending (forward) or within their n_contrib (backward),
 * and with a power that reaches pmin (sp_m_row_reach, whose powers then give the alphas), each test
 * four pixels at a time (lego on the cpu backend: rasterize 23.1 -> 17-19 ms a step, backward 34 ->
 * 29-33; bench/RESULTS.md 2026-12-04 session 29). Every pixel sees exactly the sequence of
 * decisions and arithmetic of sp_m_raster_pixel / sp_m_raster_pixel_back, and every splat's
 * gradient is summed over pixels in row-major order as there, so the results are bit-identical;
 * this form is just faster. Tiles are at most 16 x 16 pixels. */

/* Pixel box [*bx0, *bx1) x [*by0, *by1) inside the tile that can see splat g. */
static inline void SPM(sp_m_splat_box)(const SPM(sp_msplat) * g, int x0, int y0, int tw, int th, int *bx0, int *bx1,
                                       int *by0, int *by1) {
    *bx0 = 0, *bx1 = tw, *by0 = 0, *by1 = th;
    SP_REAL det = g->a * g->c - g->b * g->b, tau = SP_R(-2) * g->pmin;
    if (!(det > 0 && g->a > 0 && tau >= 0 && tau < SP_R(1e6))) return; /* no bound: the whole tile */
    SP_REAL hx = SPM(sp_m_sqrt)(tau * g->c / det) + SP_R(1), hy = SPM(sp_m_sqrt)(tau * g->a / det) + SP_R(1);
    /* pixel px sees the splat only if |px + 0.5 - x| <= hx - 1 */
    SP_REAL lx = SPM(sp_m_floor)(g->x - hx) - (SP_REAL)x0, ux = SPM(sp_m_floor)(g->x + hx) + SP_R(1) - (SP_REAL)x0;
    SP_REAL ly = SPM(sp_m_floor)(g->y - hy) - (SP_REAL)y0, uy = SPM(sp_m_floor)(g->y + hy) + SP_R(1) - (SP_REAL)y0;
    if (!(lx < SP_R(1e6) && ux > SP_R(-1e6) && ly < SP_R(1e6) && uy > SP_R(-1e6))) return; /* NaN, huge */
    *bx0 = lx > 0 ? (int)lx : 0;
    *bx1 = ux < (SP_REAL)tw ? (int)ux : tw;
    *by0 = ly > 0 ? (int)ly : 0;
    *by1 = uy < (SP_REAL)th ? (int)uy : th;
}

#ifndef SP_M_BITS4
/* Bit k set where lane k of a four-lane int comparison result (all ones or zero per lane) is set:
 * one movmskps on x86-64, a portable fold otherwise. */
typedef int32_t sp_m_v4i __attribute__((vector_size(16)));
typedef float sp_m_v4f __attribute__((vector_size(16)));
typedef double sp_m_v4d __attribute__((vector_size(32)));
static inline uint32_t sp_m_bits4_i(sp_m_v4i m) {
#if defined(__SSE__)
    return (uint32_t)__builtin_ia32_movmskps((sp_m_v4f)m);
#else
    return (uint32_t)(m[0] & 1) | (uint32_t)(m[1] & 2) | (uint32_t)(m[2] & 4) | (uint32_t)(m[3] & 8);
#endif
}
/* Bit k set where a[k] < b. Float lanes compare to int lanes (sp_m_bits4_i); double lanes to 64-bit
 * lanes, long with gcc and long long with clang, so that result is folded as whatever it is. */
static inline uint32_t sp_m_lt_bits4_f(sp_m_v4f a, float b) { return sp_m_bits4_i((sp_m_v4i)(a < b)); }
static inline uint32_t sp_m_lt_bits4_d(sp_m_v4d a, double b) {
    __typeof__(a < b) m = a < b;
    return (uint32_t)(m[0] & 1) | (uint32_t)(m[1] & 2) | (uint32_t)(m[2] & 4) | (uint32_t)(m[3] & 8);
}
#define SP_M_BITS4(m) sp_m_bits4_i(m)
#define SP_M_LT_BITS4(a, b) _Generic((a)[0], float: sp_m_lt_bits4_f, double: sp_m_lt_bits4_d)(a, b)
#endif

/* Four pixels of a row at once (GCC vector extensions: SSE on x86-64, NEON on arm64). */
typedef SP_REAL SPM(sp_mv4) __attribute__((vector_size(4 * sizeof(SP_REAL))));

/* Bit lx - bx0 set for each pixel lx in [bx0, bx1) of tile row dy (dy = g->y - pixel centre y)
 * whose power is not below g->pmin: the pixels sp_m_alpha does not skip at once. The power is
 * computed as sp_m_alpha computes it, operation for operation, four pixels at a time, so a clear
 * bit is a pixel that would have been skipped (NaN powers keep their bit, as sp_m_alpha passes
 * them on); pw[lx - bx0] receives each pixel's power. bx1 - bx0 <= 32. */
static inline uint32_t SPM(sp_m_row_reach)(const SPM(sp_msplat) * g, int x0, int bx0, int bx1, SP_REAL dy,
                                           SP_REAL pw[32]) {
    uint32_t bits = 0;
    SP_REAL cdd = g->c * dy * dy;
    for (int lx = bx0; lx < bx1; lx += 4) {
        SP_REAL c0 = (SP_REAL)(x0 + lx);
        SPM(sp_mv4) cx = {c0, c0 + SP_R(1), c0 + SP_R(2), c0 + SP_R(3)};
        SPM(sp_mv4) dx = g->x - (cx + SP_R(0.5));
        SPM(sp_mv4) power = SP_R(-0.5) * (g->a * dx * dx + cdd) - g->b * dx * dy;
        memcpy(pw + (lx - bx0), &power, sizeof power);
        bits |= (SP_M_LT_BITS4(power, g->pmin) ^ 15u) << (lx - bx0);
    }
    return bx1 - bx0 < 32 ? bits & ((1u << (bx1 - bx0)) - 1u) : bits;
}

/* Bit lx - bx0 set for each pixel lx in [bx0, bx1) of a row whose n_contrib (nc: the row's
 * first) is above j: the pixels that blended splat j. bx1 - bx0 <= 32. */
static inline uint32_t SPM(sp_m_row_after)(const int32_t *nc, int bx0, int bx1, int32_t j) {
    uint32_t bits = 0;
    for (int lx = bx0; lx < bx1; lx += 4) {
        sp_m_v4i c = {nc[lx], lx + 1 < bx1 ? nc[lx + 1] : 0, lx + 2 < bx1 ? nc[lx + 2] : 0, lx + 3 < bx1 ? nc[lx + 3] : 0};
        bits |= SP_M_BITS4(c > j) << (lx - bx0);
    }
    return bits;
}

/* Forward of a tw x th tile at pixel (x0, y0) over splats s[0..n). Outputs per tile pixel,
 * row-major with stride tw: rgb[3], final_T, n_contrib. With weight (n entries) each splat's
 * blending weights alpha T over the tile's pixels are added into weight[j], in row-major order. */
static inline void SPM(sp_m_raster_tile)(const SPM(sp_msplat) * s, int n, int x0, int y0, int tw, int th,
                                         const SP_REAL bg[3], SP_REAL *rgb, SP_REAL *final_T, int32_t *n_contrib,
                                         SP_REAL *weight) {
    SP_REAL T[256], C[256][3];
    uint32_t live[16]; /* per row: bit lx while pixel lx still blends (tiles are at most 16 x 16) */
    int np = tw * th, active = np;
    for (int p = 0; p < np; p++) {
        T[p] = 1, C[p][0] = C[p][1] = C[p][2] = 0;
        n_contrib[p] = 0;
    }
    for (int ly = 0; ly < th; ly++) live[ly] = (1u << tw) - 1u;
    for (int j = 0; j < n && active > 0; j++) {
        const SPM(sp_msplat) *g = &s[j];
        int bx0, bx1, by0, by1;
        SPM(sp_m_splat_box)(g, x0, y0, tw, th, &bx0, &bx1, &by0, &by1);
        if (bx0 >= bx1) continue;
        for (int ly = by0; ly < by1; ly++) {
            uint32_t cand = (live[ly] >> bx0) & ((1u << (bx1 - bx0)) - 1u);
            if (!cand) continue;
            SP_REAL dy = g->y - ((SP_REAL)(y0 + ly) + SP_R(0.5));
            SP_REAL pw[32], e;
            cand &= SPM(sp_m_row_reach)(g, x0, bx0, bx1, dy, pw);
            while (cand) { /* the row's pixels left to right, as the plain loop visits them */
                int lx = bx0 + __builtin_ctz(cand);
                cand &= cand - 1u;
                int p = ly * tw + lx;
                SP_REAL al = SPM(sp_m_alpha_of_power)(g, pw[lx - bx0], &e);
                if (al == 0) continue;
                SP_REAL Tn = T[p] * (SP_R(1) - al);
                if (Tn < SP_R(1e-4)) {
                    live[ly] &= ~(1u << lx);
                    active--;
                    continue;
                }
                SP_REAL w = al * T[p];
                C[p][0] += g->col[0] * w;
                C[p][1] += g->col[1] * w;
                C[p][2] += g->col[2] * w;
                if (weight) weight[j] += w;
                T[p] = Tn;
                n_contrib[p] = j + 1;
            }
        }
    }
    for (int p = 0; p < np; p++) {
        rgb[3 * p + 0] = C[p][0] + T[p] * bg[0];
        rgb[3 * p + 1] = C[p][1] + T[p] * bg[1];
        rgb[3 * p + 2] = C[p][2] + T[p] * bg[2];
        final_T[p] = T[p];
    }
}

/* Backward of a tile: G, final_T, n_contrib per tile pixel (row-major, stride tw; G has 3 per
 * pixel). Writes gs[j] for j < n (zero for splats no pixel blended). */
static inline void SPM(sp_m_raster_tile_back)(const SPM(sp_msplat) * s, int n, int x0, int y0, int tw, int th,
                                              const SP_REAL bg[3], const SP_REAL *final_T,
                                              const int32_t *n_contrib, const SP_REAL *G, SPM(sp_msplat) * gs) {
    SP_REAL T[256], B[256][3];
    int np = tw * th, maxc = 0;
    for (int p = 0; p < np; p++) {
        T[p] = final_T[p];
        B[p][0] = T[p] * bg[0], B[p][1] = T[p] * bg[1], B[p][2] = T[p] * bg[2];
        if (n_contrib[p] > maxc) maxc = n_contrib[p];
    }
    memset(gs, 0, sizeof(SPM(sp_msplat)) * (size_t)n);
    for (int j = maxc - 1; j >= 0; j--) {
        const SPM(sp_msplat) *g = &s[j];
        SPM(sp_msplat) d = {0};
        int bx0, bx1, by0, by1;
        SPM(sp_m_splat_box)(g, x0, y0, tw, th, &bx0, &bx1, &by0, &by1);
        for (int ly = by0; ly < by1 && bx0 < bx1; ly++) {
            uint32_t cand = SPM(sp_m_row_after)(n_contrib + ly * tw, bx0, bx1, j);
            if (!cand) continue;
            SP_REAL dy = g->y - ((SP_REAL)(y0 + ly) + SP_R(0.5));
            SP_REAL pw[32];
            cand &= SPM(sp_m_row_reach)(g, x0, bx0, bx1, dy, pw);
            while (cand) { /* the row's pixels left to right, as the plain loop visits them */
                int lx = bx0 + __builtin_ctz(cand);
                cand &= cand - 1u;
                int p = ly * tw + lx;
                SP_REAL dx = g->x - ((SP_REAL)(x0 + lx) + SP_R(0.5)), e;
                SP_REAL al = SPM(sp_m_alpha_of_power)(g, pw[lx - bx0], &e);
                if (al == 0) continue;
                const SP_REAL *Gp = G + 3 * p;
                SP_REAL inv = SP_R(1) / (SP_R(1) - al);
                SP_REAL Tj = T[p] * inv;
                SP_REAL w = al * Tj;
                d.col[0] += w * Gp[0];
                d.col[1] += w * Gp[1];
                d.col[2] += w * Gp[2];
                SP_REAL dal = Gp[0] * (g->col[0] * Tj - B[p][0] * inv) + Gp[1] * (g->col[1] * Tj - B[p][1] * inv) +
                              Gp[2] * (g->col[2] * Tj - B[p][2] * inv);
                B[p][0] += g->col[0] * w;
                B[p][1] += g->col[1] * w;
                B[p][2] += g->col[2] * w;
                T[p] = Tj;
                d.op += dal * e; /* straight through the clamp, as above */
                SP_REAL dpow = dal * g->op * e;
                d.a += dpow * SP_R(-0.5) * dx * dx;
                d.b += dpow * -(dx * dy);
                d.c += dpow * SP_R(-0.5) * dy * dy;
                d.x += dpow * -(g->a * dx + g->b * dy);
                d.y += dpow * -(g->b * dx + g->c * dy);
            }
        }
        gs[j] = d;
    }
}

#undef SP_R
#undef SPM_CAT2
#undef SPM_CAT
#undef SPM
