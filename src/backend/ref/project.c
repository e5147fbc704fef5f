/* project.c — the `project` and `project_back` stages on the CPU: one OpenMP loop over Gaussians
 * around the per-Gaussian math of stage_math.h. Each Gaussian writes only its own outputs, so the
 * results do not depend on the thread count. */
#include <string.h>

#include "backend/ref/mcmc.h"
#include "backend/ref/stages.h"
#include "scene/gaussians.h"

#define SP_REAL float
#define SP_SUFFIX f
#include "backend/ref/stage_math.h"
#include "core/threads.h"

/* The degree actually evaluated: no more than the K stored coefficients hold. */
static int usable_degree(int sh_degree, int K) {
    int d = sh_degree < 0 ? 0 : sh_degree > 3 ? 3 : sh_degree;
    while (d > 0 && sp_sh_coeffs(d) > K) d--;
    return d;
}

void cpu_project(const sp_params *p, const sp_camera *cam, int sh_degree, sp_proj *out) {
    cpu_project_aa(p, cam, sh_degree, 0, out);
}

void cpu_project_aa(const sp_params *p, const sp_camera *cam, int sh_degree, int antialias, sp_proj *out) {
    sh_degree = usable_degree(sh_degree, p->K);
    sp_mcam_f mc;
    sp_mcam_init_f(&mc, cam);
    const int K = p->K;
#pragma omp parallel for schedule(static) num_threads(sp_omp_threads())
    for (int i = 0; i < p->n; i++) {
        sp_mproj_f o;
        sp_m_project_f(&mc, p->means + 3 * i, p->log_scales + 3 * i, p->quats + 4 * i, p->opacity_logits[i],
                       p->sh + (size_t)i * K * 3, sh_degree, antialias, &o);
        out->mean2d[2 * i] = o.mean2d[0];
        out->mean2d[2 * i + 1] = o.mean2d[1];
        for (int k = 0; k < 3; k++) {
            out->conic[3 * i + k] = o.conic[k];
            out->color[3 * i + k] = o.color[k];
            out->clamped[3 * i + k] = o.clamped[k];
        }
        out->depth[i] = o.depth;
        out->opacity[i] = o.opacity;
        out->radius[i] = o.radius;
        for (int k = 0; k < 4; k++) out->rect[4 * i + k] = o.rect[k];
    }
}

/* Whether Gaussian i goes through project_back: its rect is visible and some pixel gave it a
 * gradient. A visible Gaussian that no pixel blended (hidden behind others, or faint everywhere it
 * reaches) has all nine gradients exactly 0, and every term project_back would add is then a
 * product with one of them: +0 or -0, which leaves the +0 it adds to as it was. So the results are
 * bit-identical without the work (lego 200x200 on the cpu backend: bench/RESULTS.md 2026-12-05). */
static inline int takes_back(const sp_proj *proj, const sp_proj_grad *g, int i) {
    const int32_t *r = proj->rect + 4 * (size_t)i;
    if (!(r[0] < r[2] && r[1] < r[3])) return 0;
    const float *m = g->mean2d + 2 * (size_t)i, *c = g->conic + 3 * (size_t)i, *col = g->color + 3 * (size_t)i;
    return m[0] != 0.0f || m[1] != 0.0f || c[0] != 0.0f || c[1] != 0.0f || c[2] != 0.0f || g->opacity[i] != 0.0f ||
           col[0] != 0.0f || col[1] != 0.0f || col[2] != 0.0f;
}

void cpu_project_back(const sp_params *p, const sp_camera *cam, int sh_degree, const sp_proj *proj,
                      const sp_proj_grad *g, sp_params_grad *out) {
    cpu_project_back_aa(p, cam, sh_degree, 0, proj, g, out);
}

void cpu_project_back_aa(const sp_params *p, const sp_camera *cam, int sh_degree, int antialias, const sp_proj *proj,
                         const sp_proj_grad *g, sp_params_grad *out) {
    sh_degree = usable_degree(sh_degree, p->K);
    sp_mcam_f mc;
    sp_mcam_init_f(&mc, cam);
    const int K = p->K;
#pragma omp parallel for schedule(static) num_threads(sp_omp_threads())
    for (int i = 0; i < p->n; i++) {
        if (!takes_back(proj, g, i)) continue;
        sp_m_project_back_f(&mc, p->means + 3 * i, p->log_scales + 3 * i, p->quats + 4 * i, p->opacity_logits[i],
                            p->sh + (size_t)i * K * 3, sh_degree, antialias, proj->clamped + 3 * i, g->mean2d + 2 * i,
                            g->conic + 3 * i, g->opacity[i], g->color + 3 * i, out->means + 3 * i,
                            out->log_scales + 3 * i, out->quats + 4 * i, out->opacity_logits + i,
                            out->sh + (size_t)i * K * 3);
    }
}

void cpu_project_back_update(sp_params_grad *p, sp_params_grad *m, sp_params_grad *v, const sp_camera *cam,
                             int sh_degree, int antialias, const sp_proj *proj, const sp_proj_grad *g,
                             const sp_update_args *u) {
    sh_degree = usable_degree(sh_degree, p->K);
    sp_mcam_f mc;
    sp_mcam_init_f(&mc, cam);
    const int K = p->K, per = 3 * K;
    int reg = u->opacity_reg != 0.0f || u->scale_reg != 0.0f;
    float wo = 0.0f, ws = 0.0f;
    if (reg) cpu_mcmc_weights(u->opacity_reg, u->scale_reg, p->n, &wo, &ws);
    sp_adam_bias_t bias = sp_adam_bias(u->beta1, u->beta2, u->eps, u->step);
    uint32_t t = sp_m16_step(u->step); /* adam.moments16: the step its random bits are drawn for */
    float b1 = u->beta1, b2 = u->beta2, eps = bias.eps, lr[6];
    for (int k = 0; k < 6; k++) lr[k] = sp_adam_lr(&bias, u->lr[k]);
#pragma omp parallel for schedule(static) num_threads(sp_omp_threads())
    for (int i = 0; i < p->n; i++) {
        float gm[3] = {0}, gls[3] = {0}, gq[4] = {0}, glogit = 0.0f, gsh[3 * 16] = {0};
        float *pm = p->means + 3 * i, *pls = p->log_scales + 3 * i, *pq = p->quats + 4 * i;
        float *psh = p->sh + (size_t)i * per;
        if (takes_back(proj, g, i))
            sp_m_project_back_f(&mc, pm, pls, pq, p->opacity_logits[i], psh, sh_degree, antialias,
                                proj->clamped + 3 * i, g->mean2d + 2 * i, g->conic + 3 * i, g->opacity[i],
                                g->color + 3 * i, gm, gls, gq, &glogit, gsh);
        if (reg) cpu_mcmc_reg_one(p->opacity_logits[i], pls, wo, ws, &glogit, gls);
        struct {
            float *p, *m, *v;
            const float *g;
            int count;
            float lr;
        } grp[4] = {{pm, m->means + 3 * i, v->means + 3 * i, gm, 3, lr[0]},
                    {pls, m->log_scales + 3 * i, v->log_scales + 3 * i, gls, 3, lr[1]},
                    {pq, m->quats + 4 * i, v->quats + 4 * i, gq, 4, lr[2]},
                    {p->opacity_logits + i, m->opacity_logits + i, v->opacity_logits + i, &glogit, 1, lr[3]}};
        /* sparse: a Gaussian in view takes the whole update (cpu_adam) */
        const int32_t *rr = proj->rect + 4 * (size_t)i;
        int sparse = u->sparse && !(rr[0] < rr[2] && rr[1] < rr[3]);
        for (int k = 0; k < 4; k++)
            for (int e = 0; e < grp[k].count; e++) {
                if (u->moments16) /* packed moments in m (moments16_rule.h), as cpu_adam's */
                    cpu_adam_one_m16(grp[k].p + e, grp[k].g[e], grp[k].m + e, grp[k].lr, b1, b2, eps, sparse,
                                     sp_m16_bits(t, (uint64_t)(sp_m16_group_start(k, p->n) + (int64_t)grp[k].count * i + e)));
                else
                    cpu_adam_one(grp[k].p + e, grp[k].g[e], grp[k].m + e, grp[k].v + e, grp[k].lr, b1, b2, eps, sparse);
            }
        float *msh = m->sh + (size_t)i * per, *vsh = v->sh + (size_t)i * per;
        if (u->moments16) { /* as cpu_adam_sh's */
            uint64_t o = (uint64_t)(sp_m16_group_start(4, p->n) + (int64_t)i * per);
            if (sparse) {
                for (int e = 0; e < per; e++)
                    cpu_adam_one_m16(psh + e, gsh[e], msh + e, e < 3 ? lr[4] : lr[5], b1, b2, eps, 1,
                                      sp_m16_bits(t, o + e));
            } else { /* dense: as below, the SH rest's loop without a branch */
                for (int e = 0; e < 3; e++)
                    cpu_adam_one_m16(psh + e, gsh[e], msh + e, lr[4], b1, b2, eps, 0, sp_m16_bits(t, o + e));
                for (int e = 3; e < per; e++)
                    cpu_adam_one_m16(psh + e, gsh[e], msh + e, lr[5], b1, b2, eps, 0, sp_m16_bits(t, o + e));
            }
        } else if (sparse) {
            for (int e = 0; e < per; e++)
                cpu_adam_one(psh + e, gsh[e], msh + e, vsh + e, e < 3 ? lr[4] : lr[5], b1, b2, eps, 1);
        } else { /* dense: no branch in the loop, so the SH rest's loop vectorizes */
            for (int e = 0; e < 3; e++) cpu_adam_one(psh + e, gsh[e], msh + e, vsh + e, lr[4], b1, b2, eps, 0);
            for (int e = 3; e < per; e++) cpu_adam_one(psh + e, gsh[e], msh + e, vsh + e, lr[5], b1, b2, eps, 0);
        }
        if (u->noise_scale != 0.0f)
            cpu_mcmc_noise_one(pm, pq, pls, p->opacity_logits[i], u->noise_scale, u->noise_seed, i);
    }
}
