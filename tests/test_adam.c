/* test_adam.c — the `adam` stage (cpu_adam): exact values of the first steps worked out by
 * hand, the folded bias correction against the textbook form, zero gradients, thread-count
 * independence, and convergence on a quadratic; the SH moments packed 16 bits each
 * (adam.moments16, backend/moments16_rule.h): the rounding, its bias, the update and the stores. */
#include <math.h>
#include <omp.h>

#include "testutil.h"

#include "backend/backend.h"
#include "backend/ref/stages.h"

/* Two parameters, three steps, β = (0.9, 0.999), lr 0.1, eps 1e-8.
 * Parameter 0 from 1.0 with gradients 0.5, −1, 0.25:
 *   step 1: m = 0.05, v = 2.5e-4, m̂ = 0.5, v̂ = 0.25, p = 1 − 0.1·0.5/(0.5 + 1e-8) = 0.900000002
 *   step 2: m = 0.045 − 0.1 = −0.055, v = 2.4975e-4 + 1e-3 = 1.24975e-3,
 *           m̂ = −0.055/0.19 = −0.2894737, v̂ = 1.24975e-3/1.999e-3 = 0.6251876,
 *           p = 0.900000002 + 0.1·0.2894737/0.7906880 = 0.9366104
 *   step 3: m = −0.0245, v = 1.31100025e-3, m̂ = −0.0245/0.271 = −0.0904059,
 *           v̂ = 1.31100025e-3/2.997001e-3 = 0.4374375, p = 0.9366104 + 0.1·0.0904059/0.6613906 = 0.9502794
 * Parameter 1 from −2.0 with gradients 3, 3, −0.001: the first two steps move it by lr each
 * (m̂/sqrt(v̂) = 1 while the gradient is constant): −2.1, −2.2, then −2.2772852. */
static void test_hand_computed_steps(void **state) {
    (void)state;
    float p[2] = {1.0f, -2.0f}, m[2] = {0, 0}, v[2] = {0, 0};
    const float grads[3][2] = {{0.5f, 3.0f}, {-1.0f, 3.0f}, {0.25f, -0.001f}};
    const double want_p[3][2] = {{0.900000002, -2.0999999997}, {0.9366104, -2.1999999993}, {0.9502794, -2.2772852}};
    const double want_m[3][2] = {{0.05, 0.3}, {-0.055, 0.57}, {-0.0245, 0.5129}};
    const double want_v[3][2] = {{2.5e-4, 9e-3}, {1.24975e-3, 1.7991e-2}, {1.31100025e-3, 1.797301e-2}};
    for (int s = 0; s < 3; s++) {
        cpu_adam(p, grads[s], m, v, 2, 0.1f, 0.9f, 0.999f, 1e-8f, s + 1, 0, NULL, 1, -1);
        for (int i = 0; i < 2; i++) {
            if (fabs(p[i] - want_p[s][i]) > 1e-6) fail_msg("step %d param %d: %.9g, want %.9g", s + 1, i, p[i], want_p[s][i]);
            assert_true(fabs(m[i] - want_m[s][i]) < 1e-6 * fmax(1.0, fabs(want_m[s][i])));
            /* 1 − 0.999f is 9.99987e-4 in float: v carries that 1.3e-5 relative offset. */
            assert_true(fabs(v[i] - want_v[s][i]) < 3e-5 * fabs(want_v[s][i]));
        }
    }
}

static void test_zero_gradient_and_empty(void **state) {
    (void)state;
    float p[3] = {1, 2, 3}, g[3] = {0, 0, 0}, m[3] = {0, 0, 0}, v[3] = {0, 0, 0};
    cpu_adam(p, g, m, v, 3, 0.5f, 0.9f, 0.999f, 1e-15f, 1, 0, NULL, 1, -1);
    assert_true(p[0] == 1 && p[1] == 2 && p[2] == 3);
    assert_true(m[0] == 0 && v[2] == 0);
    cpu_adam(NULL, NULL, NULL, NULL, 0, 0.1f, 0.9f, 0.999f, 1e-8f, 1, 0, NULL, 1, -1); /* nothing to do */
    /* A step below 1 is treated as the first step (no division by 1 − β^0 = 0). */
    float q = 1.0f, gq = 0.5f, mq = 0, vq = 0;
    cpu_adam(&q, &gq, &mq, &vq, 1, 0.1f, 0.9f, 0.999f, 1e-8f, 0, 0, NULL, 1, -1);
    assert_true(isfinite(q) && fabs(q - 0.9) < 1e-6);
}

static void test_thread_count_independent(void **state) {
    (void)state;
    enum { N = 40009 }; /* large enough for the parallel path */
    float *p1 = SP_NEW(float, N), *p2 = SP_NEW(float, N), *g = SP_NEW(float, N);
    float *m1 = SP_NEW(float, N), *m2 = SP_NEW(float, N), *v1 = SP_NEW(float, N), *v2 = SP_NEW(float, N);
    sp_rng r;
    sp_rng_seed(&r, 5, 0);
    tu_fill_uniform(&r, p1, N, -1, 1);
    memcpy(p2, p1, N * sizeof(float));
    int threads = omp_get_max_threads();
    for (int s = 1; s <= 4; s++) {
        tu_fill_uniform(&r, g, N, -2, 2);
        omp_set_num_threads(1);
        cpu_adam(p1, g, m1, v1, N, 0.01f, 0.9f, 0.999f, 1e-15f, s, 0, NULL, 1, -1);
        omp_set_num_threads(3);
        cpu_adam(p2, g, m2, v2, N, 0.01f, 0.9f, 0.999f, 1e-15f, s, 0, NULL, 1, -1);
    }
    omp_set_num_threads(threads);
    assert_memory_equal(p1, p2, N * sizeof(float));
    assert_memory_equal(v1, v2, N * sizeof(float));
    free(p1), free(p2), free(g), free(m1), free(m2), free(v1), free(v2);
}

/* Interleaving calls with other betas and steps gives the same result as running alone. */
static void test_interleaved_settings(void **state) {
    (void)state;
    float p1[2] = {1, -1}, m1[2] = {0}, v1[2] = {0}, p2[2] = {1, -1}, m2[2] = {0}, v2[2] = {0};
    float q[3] = {0.5f, 0, 2}, mq[3] = {0}, vq[3] = {0};
    const float g[2] = {0.3f, -0.7f}, gq[3] = {1, 2, 3};
    for (int s = 1; s <= 5; s++) {
        cpu_adam(q, gq, mq, vq, 3, 0.1f, 0.5f, 0.9f, 1e-8f, s, 0, NULL, 1, -1);   /* same step, other betas */
        cpu_adam(p1, g, m1, v1, 2, 0.01f, 0.9f, 0.999f, 1e-8f, s, 0, NULL, 1, -1);
        cpu_adam(q, gq, mq, vq, 3, 0.1f, 0.9f, 0.999f, 1e-8f, 100 - s, 0, NULL, 1, -1); /* same betas, other step */
    }
    for (int s = 1; s <= 5; s++) cpu_adam(p2, g, m2, v2, 2, 0.01f, 0.9f, 0.999f, 1e-8f, s, 0, NULL, 1, -1);
    assert_memory_equal(p1, p2, sizeof p1);
    assert_memory_equal(v1, v2, sizeof v1);
}

/* The update with the bias correction folded into lr and eps (sp_adam_bias) against the textbook
 * form lr · (m / (1 − β1^t)) / (sqrt(v / (1 − β2^t)) + eps) in double, over steps 1 .. 30000 and
 * moments spread over many decades: within a few float roundings of it. */
static void test_folded_bias_matches_textbook(void **state) {
    (void)state;
    const float b1 = 0.9f, b2 = 0.999f, eps = 1e-15f, lr = 1.6e-4f;
    const int steps[] = {1, 2, 3, 10, 100, 1000, 7000, 30000};
    double worst = 0.0;
    for (size_t k = 0; k < sizeof steps / sizeof steps[0]; k++)
        for (int e = -20; e <= 2; e++) {
            float p = 0.0f, m = 0.0f, v = 0.0f, g = (float)pow(10.0, e) * (e & 1 ? -1.0f : 1.0f);
            /* moments as if the gradient had been g for a while */
            m = 0.7f * g, v = 0.8f * g * g;
            double mi = (double)(b1 * m + (1.0f - b1) * g), vi = (double)(b2 * v + (1.0f - b2) * g * g);
            double want = -(double)lr * (mi / (1.0 - pow(b1, steps[k]))) /
                          (sqrt(vi / (1.0 - pow(b2, steps[k]))) + (double)eps);
            cpu_adam(&p, &g, &m, &v, 1, lr, b1, b2, eps, steps[k], 0, NULL, 1, -1);
            double rel = fabs((double)p - want) / fabs(want);
            if (rel > worst) worst = rel;
        }
    if (worst > 4e-7) fail_msg("folded update %.3g away from the textbook form (relative)", worst);
}

/* f(p) = Σ a_i (p_i − c_i)², badly scaled on purpose (Adam is scale-free per coordinate). */
static void test_quadratic_converges(void **state) {
    (void)state;
    enum { N = 5 };
    const float a[N] = {1e-3f, 0.1f, 1.0f, 10.0f, 1e3f}, c[N] = {0.5f, -3.0f, 2.0f, 0.0f, 7.0f};
    float p[N] = {0}, g[N], m[N] = {0}, v[N] = {0};
    for (int s = 1; s <= 3000; s++) {
        for (int i = 0; i < N; i++) g[i] = 2.0f * a[i] * (p[i] - c[i]);
        float lr = 0.05f * powf(0.01f, (float)s / 3000.0f); /* exponential decay, as for the means */
        cpu_adam(p, g, m, v, N, lr, 0.9f, 0.999f, 1e-15f, s, 0, NULL, 1, -1);
    }
    for (int i = 0; i < N; i++)
        if (fabsf(p[i] - c[i]) > 1e-2f) fail_msg("coordinate %d: %g, minimum at %g", i, p[i], c[i]);
}

/* Sparse: an element with a zero gradient keeps value and moments bit for bit; the others take
 * exactly the dense update. The dense update of the same zero moves it (its momentum). */
static void test_sparse_skips_zero_gradients(void **state) {
    (void)state;
    float p[4] = {1, 2, 3, 4}, m[4] = {0.1f, -0.2f, 0.3f, 0}, v[4] = {0.01f, 0.02f, 0.03f, 0};
    float pd[4], md[4], vd[4];
    memcpy(pd, p, sizeof p), memcpy(md, m, sizeof m), memcpy(vd, v, sizeof v);
    const float g[4] = {0.5f, 0.0f, -0.25f, 0.0f};
    cpu_adam(p, g, m, v, 4, 0.01f, 0.9f, 0.999f, 1e-15f, 3, 1, NULL, 1, -1);
    cpu_adam(pd, g, md, vd, 4, 0.01f, 0.9f, 0.999f, 1e-15f, 3, 0, NULL, 1, -1);
    for (int i = 0; i < 4; i += 2) {
        assert_memory_equal(&p[i], &pd[i], sizeof(float));
        assert_memory_equal(&m[i], &md[i], sizeof(float));
        assert_memory_equal(&v[i], &vd[i], sizeof(float));
    }
    assert_true(p[1] == 2.0f && m[1] == -0.2f && v[1] == 0.02f);
    assert_true(p[3] == 4.0f && m[3] == 0.0f && v[3] == 0.0f);
    assert_true(pd[1] != 2.0f); /* dense: the momentum still moves it */
    /* SH: the DC and rest rates as cpu_adam_sh applies them, zeros left alone */
    float sh[6] = {1, 1, 1, 1, 1, 1}, gs[6] = {1, 0, 1, 1, 0, 1}, ms[6] = {0}, vs[6] = {0};
    cpu_adam_sh(sh, gs, ms, vs, 1, 2, 0.1f, 0.001f, 0.9f, 0.999f, 1e-15f, 1, 1, NULL, -1);
    assert_true(sh[1] == 1.0f && sh[4] == 1.0f && ms[1] == 0.0f && vs[4] == 0.0f);
    assert_true(fabsf(sh[0] - 0.9f) < 1e-6f && fabsf(sh[3] - 0.999f) < 1e-6f);
}

/* Sparse with a Gaussian in view: its zero-gradient values take the dense update (their momentum
 * goes on), while a Gaussian out of view keeps its zero-gradient values and updates the others. */
static void test_sparse_in_view_takes_whole_update(void **state) {
    (void)state;
    /* two Gaussians of 3 values: the first in view, the second not */
    float p[6] = {1, 2, 3, 4, 5, 6}, m[6] = {0.1f, -0.2f, 0.3f, 0.1f, -0.2f, 0.3f};
    float v[6] = {0.01f, 0.02f, 0.03f, 0.01f, 0.02f, 0.03f}, pd[6], md[6], vd[6];
    memcpy(pd, p, sizeof p), memcpy(md, m, sizeof m), memcpy(vd, v, sizeof v);
    const float g[6] = {0.5f, 0.0f, 0.0f, 0.5f, 0.0f, 0.0f};
    const uint8_t seen[2] = {1, 0};
    cpu_adam(p, g, m, v, 6, 0.01f, 0.9f, 0.999f, 1e-15f, 3, 1, seen, 3, -1);
    cpu_adam(pd, g, md, vd, 6, 0.01f, 0.9f, 0.999f, 1e-15f, 3, 0, NULL, 1, -1);
    assert_memory_equal(p, pd, 4 * sizeof(float)); /* in view: as dense; out of view: its nonzero one too */
    assert_memory_equal(m, md, 4 * sizeof(float));
    assert_memory_equal(v, vd, 4 * sizeof(float));
    assert_true(p[4] == 5.0f && p[5] == 6.0f && m[4] == -0.2f && v[5] == 0.03f);
    /* SH, K = 2 (6 values a Gaussian): the same per Gaussian */
    float sh[12], gs[12] = {0}, ms[12], vs[12], shd[12], msd[12], vsd[12];
    for (int i = 0; i < 12; i++) sh[i] = 1.0f + (float)i, ms[i] = 0.05f, vs[i] = 0.01f;
    gs[0] = gs[6] = 1.0f;
    memcpy(shd, sh, sizeof sh), memcpy(msd, ms, sizeof ms), memcpy(vsd, vs, sizeof vs);
    const uint8_t seen2[2] = {0, 1};
    cpu_adam_sh(sh, gs, ms, vs, 2, 2, 0.1f, 0.001f, 0.9f, 0.999f, 1e-15f, 2, 1, seen2, -1);
    cpu_adam_sh(shd, gs, msd, vsd, 2, 2, 0.1f, 0.001f, 0.9f, 0.999f, 1e-15f, 2, 0, NULL, -1);
    assert_memory_equal(sh + 6, shd + 6, 6 * sizeof(float));
    assert_memory_equal(ms + 6, msd + 6, 6 * sizeof(float));
    assert_memory_equal(sh, shd, sizeof(float)); /* out of view, gradient 1: updated */
    for (int i = 1; i < 6; i++) assert_true(sh[i] == 1.0f + (float)i && ms[i] == 0.05f && vs[i] == 0.01f);
}

/* backend/moments16_rule.h: m's bfloat16 rounding with given bits. 1 + 2^-10 has 0x2000 below the
 * kept bits: it rounds up exactly when the added bits carry, r >= 0xe000; a bfloat16 value stays
 * as it is whatever r; zero stays zero; infinities stay, NaN stays NaN; a negative value rounds
 * its magnitude; a carry out of the mantissa moves the exponent. v keeps one mantissa bit more
 * and no sign: 1 + 2^-10 has 0x2000 of 15 dropped bits, up when r >= 0x6000; -0 is 0. */
static void test_m16_round(void **state) {
    (void)state;
    float x = 1.0f + 1.0f / 1024.0f;
    assert_int_equal(sp_m16_round(x, 0xdfff), 0x3f80);
    assert_int_equal(sp_m16_round(x, 0xe000), 0x3f81);
    assert_int_equal(sp_m16_round(-x, 0xe000), 0xbf81);
    for (uint32_t r = 0; r <= 0xffff; r += 0x1111) {
        assert_int_equal(sp_m16_round(1.5f, r), 0x3fc0);
        assert_int_equal(sp_m16_round(0.0f, r), 0);
        assert_int_equal(sp_m16_round(INFINITY, r), 0x7f80);
    }
    uint32_t nan = sp_m16_round(NAN, 0xffff);
    assert_true(isnan(sp_m16_u2f(nan << 16)));
    assert_int_equal(sp_m16_round(sp_m16_u2f(0x3fffffffu), 1), 0x4000); /* 1.99999988 up to 2 */
    assert_int_equal(sp_m16_round(x, 0x8000), 0x3f80);                  /* nearest */
    assert_int_equal(sp_m16_round_v(x, 0x5fff), 0x7f00);
    assert_int_equal(sp_m16_round_v(x, 0x6000), 0x7f01);
    assert_int_equal(sp_m16_round_v(-0.0f, 0x7fff), 0);
    assert_int_equal(sp_m16_round_v(INFINITY, 0x7fff), 0xff00);
    assert_true(isnan(sp_m16_u2f(sp_m16_round_v(NAN, 0) << 15)));
    assert_true(sp_m16_v(sp_m16_pack(0.0f, 1.0f + 1.0f / 256.0f, 0)) == 1.0f + 1.0f / 256.0f); /* 8 bits kept */
    /* the word: m in the low half, v in the high half, both recovered exactly */
    uint32_t w = sp_m16_pack(-0.375f, 6.0f, 0);
    assert_true(sp_m16_m(w) == -0.375f && sp_m16_v(w) == 6.0f);
}

/* Stochastic rounding is unbiased: over 65536 consecutive coefficients' bits at one step, the mean
 * of the rounded values is the value to within a hundredth of a 16-bit step (the bits are a hash,
 * not a counter, so this checks that they are spread evenly). */
static void test_m16_unbiased(void **state) {
    (void)state;
    const float xs[3] = {1.0f + 0.3f / 128.0f, 3.1415927f, 1.2345e-7f};
    for (int k = 0; k < 3; k++)
        for (int half = 0; half < 2; half++) {
            double sum = 0.0;
            for (uint32_t e = 0; e < 65536; e++) {
                uint32_t r = sp_m16_bits(7, e);
                uint32_t w = half ? sp_m16_pack(0.0f, xs[k], r) : sp_m16_pack(xs[k], 0.0f, r);
                sum += half ? sp_m16_v(w) : sp_m16_m(w);
            }
            double ulp = ldexp(1.0, ilogb(xs[k]) - (half ? 8 : 7));
            if (fabs(sum / 65536.0 - xs[k]) > 0.01 * ulp)
                fail_msg("%s of %.9g: mean %.9g, off by %.3g steps", half ? "v" : "m", xs[k], sum / 65536.0,
                         (sum / 65536.0 - xs[k]) / ulp);
        }
}

/* The packed update (cpu_adam_sh with bf16) decays v as the float update does: 3000 steps of zero
 * gradient from v = 1e-6 leave 0.999^3000 of it, within 2 % (rounding v to nearest would leave it
 * at 1e-6: 0.999 v rounds back to v); and over 200 steps of a constant gradient m, v and the value
 * follow the float update: m within two 16-bit steps, v within 8 % (root mean square 2.5 %: each
 * step's rounding adds noise of up to a step to v, which decays only as 0.999^t; measured 3.9 %
 * and 1.1 %), the value's displacement within 2 % (0.9 %). The SH stores' pack and unpack:
 * unpack(pack(m, v)) is m and v rounded to nearest, and a value 16 bits hold comes back exactly. */
static void test_m16_update(void **state) {
    (void)state;
    enum { N = 64, K = 1 };
    float p[3 * N], g[3 * N], w[3 * N], pf[3 * N], mf[3 * N], vf[3 * N];
    for (int i = 0; i < 3 * N; i++) {
        p[i] = pf[i] = 0.0f, g[i] = 0.0f, mf[i] = 0.0f, vf[i] = 1e-6f;
        uint32_t u = sp_m16_pack_nearest(0.0f, 1e-6f);
        memcpy(&w[i], &u, 4);
    }
    for (int s = 1; s <= 3000; s++) cpu_adam_sh(p, g, w, NULL, N, K, 0.01f, 0.01f, 0.9f, 0.999f, 1e-15f, s, 0, NULL, 0);
    double mean = 0.0;
    for (int i = 0; i < 3 * N; i++) {
        uint32_t u;
        memcpy(&u, &w[i], 4);
        mean += sp_m16_v(u) / (3.0 * N);
    }
    double want = 1e-6 * pow(0.999, 3000);
    if (fabs(mean / want - 1.0) > 0.02) fail_msg("v after 3000 zero steps: %.4g, want %.4g", mean, want);
    for (int i = 0; i < 3 * N; i++) {
        p[i] = pf[i] = 1.0f, g[i] = 0.01f * (float)(i + 1), vf[i] = 0.0f;
        uint32_t u = 0;
        memcpy(&w[i], &u, 4);
    }
    for (int s = 1; s <= 200; s++) {
        cpu_adam_sh(p, g, w, NULL, N, K, 0.001f, 0.001f, 0.9f, 0.999f, 1e-15f, s, 0, NULL, 0);
        cpu_adam_sh(pf, g, mf, vf, N, K, 0.001f, 0.001f, 0.9f, 0.999f, 1e-15f, s, 0, NULL, -1);
    }
    double ss = 0.0;
    for (int i = 0; i < 3 * N; i++) {
        uint32_t u;
        memcpy(&u, &w[i], 4);
        double dv = (sp_m16_v(u) - vf[i]) / vf[i];
        ss += dv * dv;
        assert_true(fabsf(sp_m16_m(u) - mf[i]) <= mf[i] / 64.0f);
        assert_true(fabs(dv) <= 0.08);
        assert_true(fabsf(p[i] - pf[i]) <= 0.02f * fabsf(1.0f - pf[i]));
    }
    assert_true(sqrt(ss / (3 * N)) <= 0.025);
    float m2[4] = {0.1f, -2.5f, 3e-20f, 0.0f}, v2[4] = {1e-9f, 0.25f, 7e-30f, 1.0f}, om[4], ov[4];
    float mm[4], vv[4];
    memcpy(mm, m2, sizeof mm), memcpy(vv, v2, sizeof vv);
    sp_m16_pack_store(mm, vv, 4);
    for (int i = 0; i < 4; i++) assert_true(vv[i] == 0.0f);
    sp_m16_unpack_store(mm, om, ov, 4);
    for (int i = 0; i < 4; i++) {
        uint32_t u = sp_m16_pack_nearest(m2[i], v2[i]);
        assert_true(om[i] == sp_m16_m(u) && ov[i] == sp_m16_v(u));
    }
    assert_true(om[1] == -2.5f && ov[1] == 0.25f && ov[3] == 1.0f && om[3] == 0.0f);
    sp_m16_unpack_store(mm, NULL, ov, 4); /* v alone */
    assert_true(ov[1] == 0.25f);
}

/* adam.moments16 = auto (-1): sp_backend_create gives the backend its kind's choice (on for cuda,
 * off for cpu and vulkan), and a set value stays as it was set. */
static void test_m16_auto(void **state) {
    (void)state;
    assert_int_equal(sp_backend_moments16_auto("cuda"), 1);
    assert_int_equal(sp_backend_moments16_auto("cpu"), 0);
    assert_int_equal(sp_backend_moments16_auto("vulkan"), 0);
    for (int set = -1; set <= 1; set++) {
        sp_backend *b = sp_backend_create("cpu", &(sp_backend_config){.threads = 1, .moments16 = set});
        assert_non_null(b);
        assert_int_equal(b->cfg.moments16, set < 0 ? 0 : set);
        b->ops->destroy(b);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sparse_skips_zero_gradients),
        cmocka_unit_test(test_sparse_in_view_takes_whole_update),
        cmocka_unit_test(test_hand_computed_steps),
        cmocka_unit_test(test_folded_bias_matches_textbook),
        cmocka_unit_test(test_zero_gradient_and_empty),
        cmocka_unit_test(test_thread_count_independent),
        cmocka_unit_test(test_interleaved_settings),
        cmocka_unit_test(test_quadratic_converges),
        cmocka_unit_test(test_m16_round),
        cmocka_unit_test(test_m16_unbiased),
        cmocka_unit_test(test_m16_update),
        cmocka_unit_test(test_m16_auto),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
