/* backend_ops_mcmc.h — the MCMC checks of the parity harness (test_backend_ops.c): the stage
 * table's mcmc_step (regularizer gradients and position noise, the kernels a training step runs)
 * and mcmc_apply against the CPU reference (backend/ref/mcmc.c), and a relocation / growth plan
 * decided on the host (train/mcmc.c) applied through the backend's ops. A backend without MCMC
 * (ops->mcmc_apply NULL: the trainer refuses refine.strategy = "mcmc" there) is skipped with a note.
 * Tolerances: gradients 1e-6 relative (max over values; the gradients start in [0, 1e-7], the
 * sign of the terms added, so no sum cancels, and sigma (1 - sigma) is computed without
 * cancellation: what is left is an exp a few ulp from the host's on a Vulkan device), means 1e-6 abs (the noise is computed through exp and the PCG32 stream as
 * on the host), plans bit-identical (copies and set values); decisions made on the device
 * (ops->mcmc_refine, step_mcmc_device) as the host makes them.
 * Included once, by test_backend_ops.c. */
#ifndef SPLAT_BACKEND_OPS_MCMC_H
#define SPLAT_BACKEND_OPS_MCMC_H

#include "backend/ref/mcmc.h"
#include "train/mcmc.h"

/* A store whose opacities span dead (< 0.005) to opaque and whose scales span 1e-3 .. 0.05. */
static void mcmc_store(sp_gaussians *g, sp_rng *r, int n, int deg) {
    pt_random_gaussians(g, r, n, deg, 1.0f);
    for (int i = 0; i < n; i++) {
        g->opacity_logits[i] = -9.0f + 14.0f * sp_rng_uniform(r);
        for (int k = 0; k < 3; k++) g->log_scales[3 * i + k] = logf(1e-3f) + 3.9f * sp_rng_uniform(r);
    }
}

/* The decisions made on the device (ops->mcmc_refine) against the host's (sp_mcmc_refine's host
 * path, here on host stores): the same Gaussians relocated and added, so copied values (means,
 * rotations, SH) and the zeroed moments are bit-identical, and the spread opacities and scales,
 * computed in double on either side, agree to 1e-6 relative (an INFO line counts the values that
 * differ in any bit). Three rounds: 20 % dead; none dead; 97 % dead with the live ones' logits up to
 * 40 (opacities of 1 in float and in double) and each source drawn dozens of times, so the spread
 * runs up to its cap of SP_MCMC_MAX_COPIES copies. */
static int step_mcmc_device(const tcase *c, sp_backend *b, sp_rng *r) {
    const char *stage = "mcmc";
    int ok = 1, n = 4000;
    for (int round = 0; round < 3; round++) {
        sp_gaussians g, m, v, ref[3], out[3];
        mcmc_store(&g, r, n, 3);
        if (round == 1)
            for (int i = 0; i < n; i++) g.opacity_logits[i] = fabsf(g.opacity_logits[i]); /* none dead */
        if (round == 2) /* 3 % alive, from nearly dead to opaque beyond what a double tells from 1 */
            for (int i = 0; i < n; i++)
                g.opacity_logits[i] = sp_rng_uniform(r) < 0.03f ? -5.0f + 45.0f * sp_rng_uniform(r)
                                                                : -9.0f + 3.5f * sp_rng_uniform(r);
        sp_gaussians_init(&m, n, 3), sp_gaussians_init(&v, n, 3);
        m.n = v.n = n;
        fill_store(r, &m, -0.1f, 0.1f, 0);
        fill_store(r, &v, 0.0f, 0.01f, 0);
        sp_gaussians_clone(&ref[0], &g), sp_gaussians_clone(&ref[1], &m), sp_gaussians_clone(&ref[2], &v);
        memset(out, 0, sizeof out);
        assert_int_equal(b->ops->set_gaussians(b, &g, &m, &v), 0);
        uint64_t seed = sp_rng_u32(r);
        int add = sp_mcmc_add_count(n, 0.05, n + 150), rel = -1, added = -1;
        int rc = b->ops->mcmc_refine(b, 0.005f, add, seed, &rel, &added);
        /* the host: relocate, apply, then add on the updated values, apply */
        sp_mcmc_buf buf = {0};
        float *logits = sp_malloc((size_t)(n + add) * 4), *ls = sp_malloc((size_t)(n + add) * 12);
        memcpy(logits, g.opacity_logits, (size_t)n * 4), memcpy(ls, g.log_scales, (size_t)n * 12);
        int want_rel = sp_mcmc_relocate(&buf, n, logits, ls, 0.005f, sp_hash64(seed, 1));
        sp_mcmc_plan p = sp_mcmc_plan_of(&buf);
        assert_int_equal(cpu_mcmc_apply(&ref[0], &ref[1], &ref[2], &p), 0);
        sp_mcmc_apply_host(&buf, logits, ls);
        sp_mcmc_buf_clear(&buf);
        int want_add = sp_mcmc_add(&buf, n, logits, ls, add, 0.005f, sp_hash64(seed, 2));
        p = sp_mcmc_plan_of(&buf);
        assert_int_equal(cpu_mcmc_apply(&ref[0], &ref[1], &ref[2], &p), 0);
        sp_mcmc_buf_free(&buf);
        free(logits), free(ls);
        char what[160];
        snprintf(what, sizeof what, "decided on the device: %d relocated (host %d), %d added (host %d)", rel, want_rel,
                 added, want_add);
        if (rc || b->ops->get_gaussians(b, &out[0], &out[1], &out[2])) {
            ok &= pt_report(0, c->label, stage, what, sp_last_error(), 1, 0);
        } else {
            int n2 = ref[0].n;
            int same_counts = rel == want_rel && added == want_add && out[0].n == n2 && (round == 1 || rel > 0);
            ok &= pt_report(same_counts, c->label, stage, what, "same counts (1=yes)", same_counts, 1);
            if (same_counts) {
                size_t K3 = 3 * (size_t)ref[0].K;
                int copies = !memcmp(out[0].means, ref[0].means, (size_t)n2 * 12) &&
                             !memcmp(out[0].quats, ref[0].quats, (size_t)n2 * 16) &&
                             !memcmp(out[0].sh, ref[0].sh, (size_t)n2 * K3 * 4) && pt_stores_equal(&out[1], &ref[1]) &&
                             pt_stores_equal(&out[2], &ref[2]);
                snprintf(what, sizeof what, "device decisions: means, rotations, SH and moments (%d Gaussians)", n2);
                ok &= pt_report(copies, c->label, stage, what, "bit-identical to the host (1=yes)", copies, 1);
                double e = fmax(pt_max_rel(out[0].opacity_logits, ref[0].opacity_logits, (size_t)n2, 1, NULL, 0),
                                pt_max_rel(out[0].log_scales, ref[0].log_scales, 3 * (size_t)n2, 1, NULL, 0));
                snprintf(what, sizeof what, "device decisions: spread opacities and scales (%d Gaussians)", n2);
                ok &= pt_report(e <= 1e-6, c->label, stage, what, "max rel err", e, 1e-6);
                int differ = 0;
                for (int i = 0; i < n2; i++) {
                    differ += memcmp(&out[0].opacity_logits[i], &ref[0].opacity_logits[i], 4) != 0;
                    differ += memcmp(&out[0].log_scales[3 * (size_t)i], &ref[0].log_scales[3 * (size_t)i], 12) != 0;
                }
                printf("INFO %s mcmc: device decisions round %d: %d of %d spread values differ from the host's in "
                       "some bit\n", c->label, round, differ, 2 * n2);
            }
        }
        for (int k = 0; k < 3; k++) sp_gaussians_free(&ref[k]), sp_gaussians_free(&out[k]);
        sp_gaussians_free(&g), sp_gaussians_free(&m), sp_gaussians_free(&v);
    }
    return ok;
}

static int step_mcmc(const tcase *c, sp_backend *b) {
    const char *stage = "mcmc";
    if (!b->ops->mcmc_apply) {
        printf("%s: no MCMC densification (refine.strategy = \"mcmc\" is refused): skipped\n", c->label);
        return 1;
    }
    const sp_stage_ops *st = b->ops->stages;
    int ok = 1;
    char what[160];
    sp_rng r = pt_rng(950);
    int n = 3000;
    /* 1. mcmc_step vs cpu_mcmc_reg + cpu_mcmc_noise */
    if (!st || !st->mcmc_step || !st->mcmc_apply) {
        ok &= pt_report(0, c->label, stage, "mcmc_step / mcmc_apply in the stage table", "missing (1=yes)", 1, 0);
    } else {
        sp_gaussians g[2], gr[2];
        mcmc_store(&g[0], &r, n, 1);
        sp_gaussians_init(&gr[0], n, 1);
        gr[0].n = n;
        fill_store(&r, &gr[0], 0.0f, 1e-7f, 0);
        sp_gaussians_clone(&g[1], &g[0]), sp_gaussians_clone(&gr[1], &gr[0]);
        float wo = 0.01f, ws = 0.01f, scale = 5e5f * 1.6e-4f;
        uint64_t seed = sp_rng_u32(&r);
        cpu_mcmc_reg(&g[0], &gr[0], wo, ws);
        cpu_mcmc_noise(&g[0], scale, seed);
        if (st->mcmc_step(b, &g[1], &gr[1], wo, ws, scale, seed)) {
            ok &= pt_report(0, c->label, stage, "mcmc_step", sp_last_error(), 1, 0);
        } else {
            double eg = fmax(pt_max_rel(gr[1].opacity_logits, gr[0].opacity_logits, (size_t)n, 1, NULL, 0),
                             pt_max_rel(gr[1].log_scales, gr[0].log_scales, 3 * (size_t)n, 1, NULL, 0));
            snprintf(what, sizeof what, "regularizer gradients (%d Gaussians)", n);
            ok &= pt_report(eg <= 1e-6, c->label, stage, what, "max rel err", eg, 1e-6);
            double em = pt_max_abs(g[1].means, g[0].means, 3 * (size_t)n);
            snprintf(what, sizeof what, "position noise (%d Gaussians)", n);
            ok &= pt_report(em <= 1e-6, c->label, stage, what, "max abs err", em, 1e-6);
            ok &= check_finite(c, stage, what, pt_store_nonfinite(&g[1]) + pt_store_nonfinite(&gr[1]));
        }
        for (int k = 0; k < 2; k++) sp_gaussians_free(&g[k]), sp_gaussians_free(&gr[k]);
    }
    /* 2. a host plan (relocate, then add) through the ops and through the stage table */
    sp_gaussians g, m, v, out, om, ov;
    mcmc_store(&g, &r, n, 2);
    sp_gaussians_init(&m, n, 2), sp_gaussians_init(&v, n, 2);
    m.n = v.n = n;
    fill_store(&r, &m, -0.1f, 0.1f, 0);
    fill_store(&r, &v, 0.0f, 0.01f, 0);
    memset(&out, 0, sizeof out), memset(&om, 0, sizeof om), memset(&ov, 0, sizeof ov);
    assert_int_equal(b->ops->set_gaussians(b, &g, &m, &v), 0);
    sp_gaussians ref[3], viast[3];
    sp_gaussians_clone(&ref[0], &g), sp_gaussians_clone(&ref[1], &m), sp_gaussians_clone(&ref[2], &v);
    sp_gaussians_clone(&viast[0], &g), sp_gaussians_clone(&viast[1], &m), sp_gaussians_clone(&viast[2], &v);
    float *logits = sp_malloc((size_t)2 * n * 4), *ls = sp_malloc((size_t)2 * n * 12);
    assert_int_equal(b->ops->mcmc_read(b, logits, ls), 0);
    int same_read = !memcmp(logits, g.opacity_logits, (size_t)n * 4) && !memcmp(ls, g.log_scales, (size_t)n * 12);
    ok &= pt_report(same_read, c->label, stage, "mcmc_read returns the stored values", "equal (1=yes)", same_read, 1);
    sp_mcmc_buf buf = {0};
    int moved = sp_mcmc_relocate(&buf, n, logits, ls, 0.005f, 77);
    sp_mcmc_plan p = sp_mcmc_plan_of(&buf);
    int rc_ops = b->ops->mcmc_apply(b, &p);
    assert_int_equal(cpu_mcmc_apply(&ref[0], &ref[1], &ref[2], &p), 0);
    int rc_st = st && st->mcmc_apply ? st->mcmc_apply(b, &viast[0], &viast[1], &viast[2], &p) : -1;
    sp_mcmc_apply_host(&buf, logits, ls);
    sp_mcmc_buf_clear(&buf);
    int add = sp_mcmc_add_count(n, 0.05, n + 100);
    int added = sp_mcmc_add(&buf, n, logits, ls, add, 0.005f, 78);
    p = sp_mcmc_plan_of(&buf);
    rc_ops |= b->ops->mcmc_apply(b, &p);
    assert_int_equal(cpu_mcmc_apply(&ref[0], &ref[1], &ref[2], &p), 0);
    if (rc_st == 0 && st->mcmc_apply(b, &viast[0], &viast[1], &viast[2], &p)) rc_st = -1;
    printf("INFO %s mcmc: %d relocated, %d added (%d -> %d)\n", c->label, moved, added, n, ref[0].n);
    snprintf(what, sizeof what, "plan through the ops: %d relocated, %d added", moved, added);
    if (rc_ops || b->ops->get_gaussians(b, &out, &om, &ov)) {
        ok &= pt_report(0, c->label, stage, what, sp_last_error(), 1, 0);
    } else {
        int same = moved > 0 && added == add && add > 0 && pt_stores_equal(&out, &ref[0]) && pt_stores_equal(&om, &ref[1]) &&
                   pt_stores_equal(&ov, &ref[2]) && b->ops->num_gaussians(b) == n + added;
        ok &= pt_report(same, c->label, stage, what, "bit-identical to the CPU (1=yes)", same, 1);
    }
    snprintf(what, sizeof what, "plan through the stage table: %d relocated, %d added", moved, added);
    int same_st = rc_st == 0 && pt_stores_equal(&viast[0], &ref[0]) && pt_stores_equal(&viast[1], &ref[1]) &&
                  pt_stores_equal(&viast[2], &ref[2]);
    ok &= pt_report(same_st, c->label, stage, what, "bit-identical to the CPU (1=yes)", same_st, 1);
    /* a bad plan is an error naming the entry, and changes nothing */
    int32_t bad_dst = n + added + 5, bad_src = 0;
    float bl = 0.0f, bls[3] = {0, 0, 0};
    sp_mcmc_plan bad = {n + added, 1, &bad_dst, &bad_src, &bl, bls};
    int rb = b->ops->mcmc_apply(b, &bad);
    int refused = rb == -1 && strstr(sp_last_error(), "plan entry 0") && b->ops->num_gaussians(b) == n + added;
    ok &= pt_report(refused, c->label, stage, "an invalid plan is refused", "refused (1=yes)", refused, 1);
    sp_mcmc_buf_free(&buf);
    free(logits), free(ls);
    for (int k = 0; k < 3; k++) sp_gaussians_free(&ref[k]), sp_gaussians_free(&viast[k]);
    sp_gaussians_free(&g), sp_gaussians_free(&m), sp_gaussians_free(&v);
    sp_gaussians_free(&out), sp_gaussians_free(&om), sp_gaussians_free(&ov);
    if (b->ops->mcmc_refine) ok &= step_mcmc_device(c, b, &r);
    return ok;
}

#endif
