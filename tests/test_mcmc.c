/* test_mcmc.c — MCMC densification (refine.strategy = "mcmc"): the relocation formulas keep the
 * peak opacity and the integrated opacity profile of a Gaussian and its copies; sampling draws in
 * proportion to opacity, never a zero weight, the same for the same seed; relocation moves exactly
 * the dead; growth never passes the budget; plans applied to host stores copy and reset what they
 * should and refuse bad entries; the regularizer gradients match finite differences; the position
 * noise is shaped by the covariance and gated to transparent Gaussians; config validation. */
#include "testutil.h"

#include <math.h>

#include "backend/ref/mcmc.h"
#include "train/config.h"
#include "train/schedule.h"
#include "train/mcmc.h"

static double sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }

/* 1 - (1 - o')^N = o: a stack of N copies is as opaque at its centre as the source. */
static void test_opacity_keeps_peak(void **state) {
    const double os[] = {0.01, 0.3, 0.7, 0.99};
    for (int a = 0; a < 4; a++)
        for (int N = 1; N <= 20; N++) {
            double on = sp_mcmc_opacity(os[a], N);
            assert_true(on > 0 && on <= os[a] + 1e-15);
            assert_true(fabs(1.0 - pow(1.0 - on, N) - os[a]) < 1e-12);
        }
    assert_true(sp_mcmc_opacity(0.4, 1) == 0.4);
}

/* The integral along a line through the centre of 1 - (1 - o' g'(x))^N, g' of scale s f, equals
 * that of o g(x) of scale s: o s sqrt(2 pi) (trapezoid rule on a fine grid). */
static void test_scale_keeps_profile_integral(void **state) {
    const double os[] = {0.05, 0.5, 0.9, 0.995};
    const int Ns[] = {2, 3, 5, 10, 30, SP_MCMC_MAX_COPIES};
    double s = 0.7;
    for (int a = 0; a < 4; a++)
        for (int b = 0; b < 6; b++) {
            int N = Ns[b];
            double o = os[a], on = sp_mcmc_opacity(o, N), f = sp_mcmc_scale_factor(o, on, N), sn = s * f;
            assert_true(f > 0 && f < 10);
            double h = sn / 200, sum = 0;
            for (int i = -20000; i <= 20000; i++) {
                double x = i * h, g = exp(-x * x / (2 * sn * sn));
                double y = 1.0 - pow(1.0 - on * g, N);
                sum += (i == -20000 || i == 20000) ? 0.5 * y : y;
            }
            double want = o * s * sqrt(2 * M_PI), got = sum * h;
            if (fabs(got - want) > 1e-6 * want) fail_msg("o %g N %d: integral %.9g, want %.9g", o, N, got, want);
        }
    assert_true(sp_mcmc_scale_factor(0.3, 0.3, 1) == 1.0);
}

/* Draw counts follow the weights (within 5 sigma), zero weights are never drawn, one seed gives one
 * sequence and another seed another. */
static void test_sampling(void **state) {
    enum { N = 6, DRAWS = 200000 };
    float w[N] = {0.5f, 0.0f, 0.1f, 0.25f, 0.0f, 0.15f};
    int32_t *a = sp_malloc(DRAWS * 4), *b = sp_malloc(DRAWS * 4), *c = sp_malloc(DRAWS * 4);
    assert_int_equal(sp_mcmc_sample(w, N, DRAWS, 5, 1, a), DRAWS);
    assert_int_equal(sp_mcmc_sample(w, N, DRAWS, 5, 1, b), DRAWS);
    assert_int_equal(sp_mcmc_sample(w, N, DRAWS, 6, 1, c), DRAWS);
    assert_memory_equal(a, b, DRAWS * 4);
    assert_true(memcmp(a, c, DRAWS * 4) != 0);
    int count[N] = {0};
    for (int k = 0; k < DRAWS; k++) {
        assert_true(a[k] >= 0 && a[k] < N);
        count[a[k]]++;
    }
    for (int i = 0; i < N; i++) {
        double p = w[i], want = p * DRAWS, sd = sqrt(DRAWS * p * (1 - p));
        if (p == 0) assert_int_equal(count[i], 0);
        else if (fabs(count[i] - want) > 5 * sd) fail_msg("index %d: %d draws, want %.0f +- %.0f", i, count[i], want, sd);
    }
    float zero[3] = {0, 0, NAN};
    assert_int_equal(sp_mcmc_sample(zero, 3, 10, 1, 1, a), 0);
    free(a), free(b), free(c);
}

/* Relocation: every dead Gaussian is written once, from a live source; each source group gets the
 * opacity of sp_mcmc_opacity for its size and the scaled log-scales; live non-sources untouched. */
static void test_relocate(void **state) {
    enum { N = 2000 };
    float logits[N], ls[3 * N], l2[N], ls2[3 * N];
    sp_rng r;
    sp_rng_seed(&r, 3, 0);
    int ndead = 0;
    for (int i = 0; i < N; i++) {
        logits[i] = -8.0f + 12.0f * sp_rng_uniform(&r);
        if (i == 7) logits[i] = NAN; /* non-finite counts as dead */
        for (int k = 0; k < 3; k++) ls[3 * i + k] = -4.0f + sp_rng_uniform(&r);
        ndead += !(sigmoid(logits[i]) >= 0.005) || isnan(logits[i]);
    }
    memcpy(l2, logits, sizeof l2), memcpy(ls2, ls, sizeof ls2);
    sp_mcmc_buf buf = {0};
    int moved = sp_mcmc_relocate(&buf, N, logits, ls, 0.005f, 42);
    assert_int_equal(moved, ndead);
    assert_int_equal(buf.n_after, N);
    int written[N] = {0}, copies[N] = {0};
    for (int k = 0; k < buf.count; k++) {
        int d = buf.dst[k], s = buf.src[k];
        written[d]++;
        assert_true(sigmoid(logits[s]) >= 0.005); /* a live source */
        copies[s]++;                              /* the source's own entry counts itself */
    }
    for (int i = 0; i < N; i++) {
        int dead = !(sigmoid(logits[i]) >= 0.005) || isnan(logits[i]);
        if (dead) assert_int_equal(written[i], 1);
        assert_true(written[i] <= 1);
    }
    sp_mcmc_apply_host(&buf, l2, ls2);
    for (int k = 0; k < buf.count; k++) {
        int d = buf.dst[k], s = buf.src[k], c = copies[s];
        double o = sigmoid(logits[s]), on = sp_mcmc_opacity(o, c < SP_MCMC_MAX_COPIES ? c : SP_MCMC_MAX_COPIES);
        assert_true(fabs(sigmoid(l2[d]) - fmax(on, 0.005)) < 1e-6);
        double f = sp_mcmc_scale_factor(o, on, c);
        for (int j = 0; j < 3; j++) assert_true(fabs(ls2[3 * d + j] - (ls[3 * s + j] + log(f))) < 1e-5);
    }
    for (int i = 0; i < N; i++)
        if (!written[i]) assert_true(l2[i] == logits[i] || (isnan(l2[i]) && isnan(logits[i])));
    /* deterministic */
    sp_mcmc_buf again = {0};
    assert_int_equal(sp_mcmc_relocate(&again, N, logits, ls, 0.005f, 42), moved);
    assert_memory_equal(again.src, buf.src, (size_t)buf.count * 4);
    assert_memory_equal(again.dst, buf.dst, (size_t)buf.count * 4);
    sp_mcmc_buf_free(&again);
    sp_mcmc_buf_free(&buf);
    /* nothing alive: nothing moves */
    float all_dead[4] = {-20, -20, -20, -20};
    assert_int_equal(sp_mcmc_relocate(&buf, 4, all_dead, ls, 0.005f, 1), 0);
    assert_int_equal(buf.count, 0);
    sp_mcmc_buf_free(&buf);
}

static void fill(sp_gaussians *g, sp_rng *r, float lo, float hi) {
    size_t n = (size_t)g->n;
    for (size_t i = 0; i < 3 * n; i++) g->means[i] = lo + (hi - lo) * sp_rng_uniform(r);
    for (size_t i = 0; i < 3 * n; i++) g->log_scales[i] = -4.0f + sp_rng_uniform(r);
    for (size_t i = 0; i < 4 * n; i++) g->quats[i] = lo + (hi - lo) * sp_rng_uniform(r);
    for (size_t i = 0; i < n; i++) g->opacity_logits[i] = -7.0f + 9.0f * sp_rng_uniform(r);
    for (size_t i = 0; i < 3 * n * g->K; i++) g->sh[i] = lo + (hi - lo) * sp_rng_uniform(r);
}

/* Growth on stores, refine after refine: the count reaches the budget and never passes it; new
 * Gaussians are copies of their source (means, quats, SH) with zero moments; untouched ones keep
 * theirs; a bad plan is refused with the entry named and nothing changed. */
static void test_growth_and_apply(void **state) {
    sp_rng r;
    sp_rng_seed(&r, 9, 0);
    sp_gaussians g, m, v;
    int n0 = 300, budget = 1000;
    sp_gaussians_init(&g, n0, 1), sp_gaussians_init(&m, n0, 1), sp_gaussians_init(&v, n0, 1);
    g.n = m.n = v.n = n0;
    fill(&g, &r, -1, 1), fill(&m, &r, 0.5f, 1), fill(&v, &r, 0.5f, 1);
    int reached = 0;
    for (int it = 0; it < 30; it++) {
        int n = g.n;
        sp_mcmc_buf buf = {0};
        int moved = sp_mcmc_relocate(&buf, n, g.opacity_logits, g.log_scales, 0.005f, 100 + it);
        assert_true(moved >= 0);
        sp_mcmc_plan p = sp_mcmc_plan_of(&buf);
        assert_int_equal(cpu_mcmc_apply(&g, &m, &v, &p), 0);
        sp_mcmc_buf_clear(&buf);
        int add = sp_mcmc_add_count(n, 0.3, budget);
        int added = sp_mcmc_add(&buf, n, g.opacity_logits, g.log_scales, add, 0.005f, 200 + it);
        assert_int_equal(added, add);
        p = sp_mcmc_plan_of(&buf);
        assert_int_equal(cpu_mcmc_apply(&g, &m, &v, &p), 0);
        assert_int_equal(g.n, n + add);
        assert_true(g.n <= budget);
        for (int k = 0; k < buf.count; k++) {
            int d = buf.dst[k], s = buf.src[k];
            assert_memory_equal(g.means + 3 * d, g.means + 3 * s, 12);
            assert_memory_equal(g.quats + 4 * d, g.quats + 4 * s, 16);
            assert_memory_equal(g.sh + 3 * g.K * d, g.sh + 3 * g.K * s, 12 * g.K);
            assert_true(m.opacity_logits[d] == 0 && v.means[3 * d] == 0 && m.sh[3 * g.K * d] == 0);
        }
        reached |= g.n == budget;
        sp_mcmc_buf_free(&buf);
    }
    assert_true(reached);
    assert_int_equal(sp_mcmc_add_count(budget, 0.3, budget), 0);
    assert_int_equal(sp_mcmc_add_count(990, 0.3, budget), 10);
    assert_int_equal(sp_mcmc_add_count(100, 0.05, budget), 5);
    /* bad plans */
    int32_t d = g.n, s = 0;
    float lg = 0, l3[3] = {0};
    sp_mcmc_plan bad = {g.n, 1, &d, &s, &lg, l3};
    int n = g.n;
    assert_int_equal(cpu_mcmc_apply(&g, &m, &v, &bad), -1);
    assert_non_null(strstr(sp_last_error(), "plan entry 0"));
    sp_mcmc_plan shrink = {n - 1, 0, NULL, NULL, NULL, NULL};
    assert_int_equal(cpu_mcmc_apply(&g, &m, &v, &shrink), -1);
    sp_mcmc_plan grow_unwritten = {n + 5, 0, NULL, NULL, NULL, NULL};
    assert_int_equal(cpu_mcmc_apply(&g, &m, &v, &grow_unwritten), -1);
    assert_int_equal(g.n, n);
    sp_gaussians_free(&g), sp_gaussians_free(&m), sp_gaussians_free(&v);
}

/* R = wo mean sigmoid(logit) + ws mean exp(log_scale): cpu_mcmc_reg's gradient against central
 * differences of R in double. */
static void test_reg_gradient_fd(void **state) {
    enum { N = 7 };
    sp_gaussians g, grad;
    sp_gaussians_init(&g, N, 0), sp_gaussians_init(&grad, N, 0);
    g.n = grad.n = N;
    sp_rng r;
    sp_rng_seed(&r, 4, 0);
    fill(&g, &r, -1, 1);
    sp_gaussians_zero(&grad);
    double wo = 0.01, ws = 0.02;
    cpu_mcmc_reg(&g, &grad, (float)wo, (float)ws);
    double h = 1e-4;
    for (int i = 0; i < N; i++) {
        double x = g.opacity_logits[i];
        double fd = wo / N * (sigmoid(x + h) - sigmoid(x - h)) / (2 * h);
        if (fabs(grad.opacity_logits[i] - fd) > 1e-5 * fabs(fd) + 1e-12)
            fail_msg("opacity %d: %g, finite difference %g", i, grad.opacity_logits[i], fd);
        for (int k = 0; k < 3; k++) {
            double l = g.log_scales[3 * i + k];
            double fs = ws / (3.0 * N) * (exp(l + h) - exp(l - h)) / (2 * h);
            if (fabs(grad.log_scales[3 * i + k] - fs) > 1e-5 * fabs(fs) + 1e-12)
                fail_msg("log_scale %d.%d: %g, finite difference %g", i, k, grad.log_scales[3 * i + k], fs);
        }
    }
    for (int i = 0; i < 3 * N; i++) assert_true(grad.means[i] == 0 && grad.quats[i] == 0);
    /* added, not written: a second call doubles */
    float once = grad.opacity_logits[0];
    cpu_mcmc_reg(&g, &grad, (float)wo, (float)ws);
    assert_true(fabsf(grad.opacity_logits[0] - 2 * once) <= 1e-6f * fabsf(once));
    sp_gaussians_free(&g), sp_gaussians_free(&grad);
}

/* Noise: the same (seed, index) gives the same displacement; opaque Gaussians do not move; over
 * many transparent Gaussians with scales (0.1, 0.01, 0.003) along the axes (identity rotation) the
 * displacement's variance per axis is (scale * s^2)^2 (Sigma e has covariance Sigma^2). */
static void test_noise(void **state) {
    enum { N = 40000 };
    sp_gaussians g, h;
    sp_gaussians_init(&g, N, 0);
    g.n = N;
    sp_gaussians_zero(&g);
    const float s[3] = {0.1f, 0.01f, 0.003f};
    for (int i = 0; i < N; i++) {
        g.quats[4 * i] = 1;
        for (int k = 0; k < 3; k++) g.log_scales[3 * i + k] = logf(s[k]);
        g.opacity_logits[i] = i < N - 100 ? -12.0f : 4.0f; /* the last 100 opaque */
    }
    sp_gaussians_clone(&h, &g);
    float scale = 50.0f;
    cpu_mcmc_noise(&g, scale, 99);
    cpu_mcmc_noise(&h, scale, 99);
    assert_memory_equal(g.means, h.means, (size_t)N * 12);
    for (int i = N - 100; i < N; i++) assert_true(g.means[3 * i] == 0 && g.means[3 * i + 1] == 0);
    double gate = 1.0 / (1.0 + exp(-100.0 * ((1.0 - sigmoid(-12.0)) - 0.995)));
    for (int k = 0; k < 3; k++) {
        double sum2 = 0;
        for (int i = 0; i < N - 100; i++) sum2 += (double)g.means[3 * i + k] * g.means[3 * i + k];
        double var = sum2 / (N - 100), want = pow(scale * gate * s[k] * s[k], 2);
        if (fabs(var / want - 1) > 0.05) fail_msg("axis %d: variance %g, want %g", k, var, want);
    }
    sp_gaussians_free(&g), sp_gaussians_free(&h);
}

/* The first problem of a training config with `base` (assignments split at spaces) and then set1,
 * set2 applied ("" if none). */
static const char *problems_with(const char *base, const char *set1, const char *set2) {
    static char out[2048];
    char list[256];
    sp_config c;
    sp_config_defaults(&c);
    sp_problems p = {0};
    out[0] = 0;
    snprintf(list, sizeof list, "%s", base);
    int bad = sp_config_set(&c, "data.path=/x", &p);
    for (char *sv = NULL, *a = strtok_r(list, " ", &sv); a && !bad; a = strtok_r(NULL, " ", &sv))
        bad = sp_config_set(&c, a, &p);
    if (bad || (set1 && sp_config_set(&c, set1, &p)) || (set2 && sp_config_set(&c, set2, &p)) ||
        sp_config_validate_for_training(&c, &p))
        snprintf(out, sizeof out, "%s", p.n ? p.items[0] : "?");
    sp_problems_free(&p);
    return out;
}

static const char *problems_of(const char *set1, const char *set2) {
    return problems_with("refine.strategy=mcmc", set1, set2);
}

static void test_config(void **state) {
    sp_config c;
    sp_config_defaults(&c);
    assert_string_equal(c.refine.strategy, "auto");
    assert_int_equal(c.refine.max_gaussians, 0); /* auto (test_auto_budget) */
    assert_int_equal(c.refine.mcmc_stop, 16667); /* 3DGS-MCMC's 25000 of 30000 steps, scaled to 20000 */
    assert_true(c.refine.mcmc_noise_lr == 5e5 && c.refine.mcmc_opacity_reg == 0.0015 && c.refine.mcmc_scale_reg == 0.01);
    assert_true(c.init.opacity == 0.0 && c.adam.opacity_lr == 0.05);
    assert_string_equal(problems_of(NULL, NULL), "");
    assert_string_equal(problems_of("backend.kind=vulkan", NULL), ""); /* vulkan has it too */
    assert_non_null(strstr(problems_of("backend.devices=0,1", NULL), "runs on one device"));
    /* sparse Adam's in-view flags differ between devices' views */
    assert_non_null(strstr(problems_with("refine.strategy=adc", "backend.devices=0,1", "adam.sparse=true"),
                           "sparse Adam trains on one device"));
    assert_string_equal(problems_with("refine.strategy=adc", "backend.devices=0,1", NULL), "");
    assert_non_null(strstr(problems_with("refine.strategy=mcmc init.method=random", "refine.max_gaussians=5000",
                                         "init.count=6000"),
                           "init.count (6000)"));
    assert_string_equal(problems_of("refine.max_gaussians=5000", "init.count=6000"), ""); /* auto: with the dataset */
    assert_string_equal(problems_of("refine.max_gaussians=5000", "init.method=points"), "");
    assert_non_null(strstr(problems_of("refine.strategy=gibbs", NULL), "refine.strategy"));
    assert_non_null(strstr(problems_of("refine.max_gaussians=-1", NULL), "refine.max_gaussians"));
    assert_string_equal(problems_of("refine.max_gaussians=0", "init.count=600000"), ""); /* auto: decided later */
    assert_non_null(strstr(problems_of("refine.mcmc_noise_lr=-1", NULL), "refine.mcmc_noise_lr"));
}

/* refine.strategy = auto follows the backend; init.opacity = 0 and init.scale_factor = 0 follow
 * the strategy; refine.stop
 * bounds adc's refine steps, mcmc_stop mcmc's (the schedule reads the resolved strategy). */
static void test_resolve_strategy(void **state) {
    (void)state;
    sp_config c;
    sp_config_defaults(&c);
    assert_int_equal(sp_config_resolve_strategy(&c, 1), 0);
    assert_string_equal(c.refine.strategy, "mcmc");
    assert_true(c.init.opacity == 0.5);
    assert_true(c.init.scale_factor == 0.3);
    sp_schedule s;
    sp_schedule_make(&c, &s);
    assert_int_equal(s.refine_stop, 16667);
    assert_true(sp_schedule_refine_due(&s, 16600) && !sp_schedule_refine_due(&s, 16700));

    sp_config_defaults(&c);
    assert_int_equal(sp_config_resolve_strategy(&c, 0), 0); /* vulkan, several devices */
    assert_string_equal(c.refine.strategy, "adc");
    assert_true(c.init.opacity == 0.1);
    assert_true(c.init.scale_factor == 1.0);
    sp_schedule_make(&c, &s);
    assert_int_equal(s.refine_stop, 8333);

    sp_config_defaults(&c); /* what is written stays */
    snprintf(c.refine.strategy, sizeof c.refine.strategy, "adc");
    c.init.opacity = 0.3;
    c.init.scale_factor = 0.5;
    assert_int_equal(sp_config_resolve_strategy(&c, 1), 0);
    assert_string_equal(c.refine.strategy, "adc");
    assert_true(c.init.opacity == 0.3);
    assert_true(c.init.scale_factor == 0.5);

    sp_config_defaults(&c); /* a random initialization larger than the budget it resolved to */
    snprintf(c.init.method, sizeof c.init.method, "random");
    c.refine.max_gaussians = 280000;
    c.init.count = c.refine.max_gaussians + 1;
    assert_int_equal(sp_config_resolve_strategy(&c, 1), -1);
    assert_non_null(strstr(sp_last_error(), "init.count"));
    /* init.method = auto: random only where the dataset has no sparse points, so decided with it */
    snprintf(c.init.method, sizeof c.init.method, "auto");
    assert_int_equal(sp_config_resolve_strategy(&c, 1), 0);
    assert_string_equal(c.refine.strategy, "mcmc");
    assert_int_equal(sp_config_check_mcmc_init(&c, 0), -1);
    assert_non_null(strstr(sp_last_error(), "init.count"));
    assert_int_equal(sp_config_check_mcmc_init(&c, 5000), 0);
    assert_true(sp_config_init_from_points(&c, 5000) && !sp_config_init_from_points(&c, 0));
    snprintf(c.init.method, sizeof c.init.method, "points");
    assert_int_equal(sp_config_check_mcmc_init(&c, 0), 0);
    assert_true(sp_config_init_from_points(&c, 0)); /* (training then says the dataset has no points) */
    snprintf(c.init.method, sizeof c.init.method, "random");
    assert_int_equal(sp_config_check_mcmc_init(&c, 5000), -1);
    assert_false(sp_config_init_from_points(&c, 5000));
    c.init.count = c.refine.max_gaussians; /* at the budget: fine */
    assert_int_equal(sp_config_check_mcmc_init(&c, 0), 0);
    sp_config_defaults(&c);
    c.refine.max_gaussians = 280000;
    c.init.count = c.refine.max_gaussians + 1;
    assert_int_equal(sp_config_resolve_strategy(&c, 0), 0);
    assert_string_equal(c.refine.strategy, "adc");
}

/* refine.max_gaussians = 0: the budget from the capture's size, its floor, the sparse points, the
 * ceiling and the device's memory, each named as the bound that decided. */
static void test_auto_budget(void **state) {
    (void)state;
    const char *why;
    assert_int_equal(sp_mcmc_auto_budget(100 * 800.0 * 800.0, 0, 0, &why), 340000); /* lego */
    assert_string_equal(why, "the floor");
    assert_int_equal(sp_mcmc_auto_budget(100 * 200.0 * 200.0, 0, 0, &why), 340000); /* the small lego */
    assert_string_equal(why, "the floor");
    assert_int_equal(sp_mcmc_auto_budget(58 * 1067.0 * 1902.0, 0, 0, &why), 340000); /* fox: 117.7M pixels */
    assert_string_equal(why, "the floor");
    assert_int_equal(sp_mcmc_auto_budget(200 * 1600.0 * 1200.0, 0, 0, &why), 1020000);
    assert_string_equal(why, "the training pixels");
    assert_int_equal(sp_mcmc_auto_budget(62 * 670.0 * 1230.0, 4414, 0, &why), 340000); /* beer */
    assert_int_equal(sp_mcmc_auto_budget(1e6, 300000, 0, &why), 600000);
    assert_string_equal(why, "twice the sparse points");
    assert_int_equal(sp_mcmc_auto_budget(1e12, 0, 0, &why), SP_MCMC_BUDGET_MAX);
    assert_string_equal(why, "the ceiling");
    /* 8 GiB free: half of it at 1536 bytes a Gaussian */
    assert_int_equal(sp_mcmc_auto_budget(875 * 1600.0 * 1200.0, 0, 8.0 * 1073741824.0, &why), 2796000);
    assert_string_equal(why, "half of the device's free memory");
    assert_int_equal(sp_mcmc_auto_budget(875 * 1600.0 * 1200.0, 0, 0, NULL), 4462000); /* 4462500, rounded down to thousands */
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_auto_budget),
        cmocka_unit_test(test_resolve_strategy),
        cmocka_unit_test(test_opacity_keeps_peak),
        cmocka_unit_test(test_scale_keeps_profile_integral),
        cmocka_unit_test(test_sampling),
        cmocka_unit_test(test_relocate),
        cmocka_unit_test(test_growth_and_apply),
        cmocka_unit_test(test_reg_gradient_fd),
        cmocka_unit_test(test_noise),
        cmocka_unit_test(test_config),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
