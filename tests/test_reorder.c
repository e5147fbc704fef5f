/* test_reorder.c — the Morton order of the Gaussians (backend/morton_rule.h, backend/ref/reorder.c):
 * the rule's edge cases (cells at the box's ends, non-finite values, flat axes, the interleave),
 * the order itself (codes never decrease along it, equal codes keep index order, every Gaussian
 * once), and cpu_reorder moving parameters and both moments together. */
#include "testutil.h"

#include <math.h>

#include "backend/morton_rule.h"
#include "backend/ref/reorder.h"
#include "parity.h"

static void test_rule_edges(void **state) {
    (void)state;
    assert_int_equal(sp_morton_spread(0x3ffu), 0x09249249u);
    assert_int_equal(sp_morton_spread(1u), 1u);
    assert_int_equal(sp_morton_spread(2u), 8u);
    assert_int_equal(sp_morton_spread(0x7ffu), 0x09249249u); /* only 10 bits count */
    /* extent 1: scale 2^9, the top end in cell 512 at most; never past 1023 */
    int e = sp_morton_exponent(-0.5f, 0.5f);
    assert_int_equal(e, 9);
    assert_int_equal(sp_morton_cell(-0.5f, -0.5f, e), 0u);
    assert_int_equal(sp_morton_cell(0.5f, -0.5f, e), 512u);
    int e2 = sp_morton_exponent(0.0f, 1023.9f); /* f 2^10 just under 1024 */
    assert_true(sp_morton_cell(1023.9f, 0.0f, e2) <= 1023u);
    assert_int_equal(sp_morton_cell(nanf(""), -0.5f, e), 0u);
    assert_int_equal(sp_morton_cell(INFINITY, -0.5f, e), 0u);
    assert_int_equal(sp_morton_cell(-1.0f, -0.5f, e), 0u); /* below the box */
    assert_int_equal(sp_morton_exponent(2.0f, 2.0f), SP_MORTON_FLAT);
    assert_int_equal(sp_morton_exponent(-INFINITY, 2.0f), SP_MORTON_FLAT);
    assert_int_equal(sp_morton_cell(7.0f, 2.0f, SP_MORTON_FLAT), 0u);
    /* a tiny box still spreads over the cells */
    int et = sp_morton_exponent(1.0f, 1.0f + 1e-6f);
    assert_true(sp_morton_cell(1.0f + 1e-6f, 1.0f, et) >= 512u);
    float lo[3] = {0, 0, 0};
    int ee[3] = {0, 0, 0};
    float m[3] = {1.0f, 2.0f, 3.0f}; /* cells 1, 2, 3: spread 1, 8, 9; y shifted by 1, z by 2 */
    assert_int_equal(sp_morton_code(m, lo, ee), 1u | (8u << 1) | ((1u | 8u) << 2));
}

static void test_order_sorted_stable_permutation(void **state) {
    (void)state;
    sp_rng r = pt_rng(41);
    int n = 20000;
    float *means = malloc((size_t)n * 12);
    for (int i = 0; i < n; i++)
        for (int k = 0; k < 3; k++) means[3 * i + k] = 10.0f * sp_rng_uniform(&r) - (k == 2 ? 40.0f : 3.0f);
    for (int i = 0; i < 300; i++) memcpy(means + 3 * (i * 61 % n), means + 3 * 7, 12); /* many equal codes */
    means[3 * 11] = nanf(""), means[3 * 12 + 1] = INFINITY, means[3 * 13 + 2] = -INFINITY;
    int32_t *order = malloc((size_t)n * 4);
    assert_int_equal(cpu_morton_order(means, n, order), 0);
    char *seen = calloc((size_t)n, 1);
    float lo[3];
    int e[3];
    cpu_morton_box(means, n, lo, e);
    int ok = 1;
    for (int i = 0; i < n; i++) {
        ok &= order[i] >= 0 && order[i] < n && !seen[order[i]];
        if (order[i] >= 0 && order[i] < n) seen[order[i]] = 1;
        if (i > 0) {
            uint32_t a = sp_morton_code(means + 3 * (size_t)order[i - 1], lo, e),
                     b = sp_morton_code(means + 3 * (size_t)order[i], lo, e);
            ok &= a < b || (a == b && order[i - 1] < order[i]);
        }
    }
    assert_true(ok);
    /* the box ignores the non-finite values */
    for (int k = 0; k < 3; k++) assert_true(isfinite(lo[k]) && e[k] != SP_MORTON_FLAT);
    free(means), free(order), free(seen);
}

static void test_flat_and_tiny(void **state) {
    (void)state;
    float one[3] = {1, 2, 3};
    int32_t o1[1] = {-1};
    assert_int_equal(cpu_morton_order(one, 1, o1), 0);
    assert_int_equal(o1[0], 0);
    /* every mean equal: every code 0, the order the identity */
    float same[3 * 5];
    for (int i = 0; i < 15; i++) same[i] = 4.0f;
    int32_t o5[5];
    assert_int_equal(cpu_morton_order(same, 5, o5), 0);
    for (int i = 0; i < 5; i++) assert_int_equal(o5[i], i);
    /* only x varies (y, z flat): the order is by x */
    float line[3 * 4] = {3, 0, 0, 1, 0, 0, 2, 0, 0, 0, 0, 0};
    int32_t o4[4];
    assert_int_equal(cpu_morton_order(line, 4, o4), 0);
    const int32_t want[4] = {3, 1, 2, 0};
    assert_memory_equal(o4, want, sizeof want);
}

static void test_reorder_moves_stores_together(void **state) {
    (void)state;
    sp_rng r = pt_rng(42);
    sp_gaussians g, m, v, g0;
    int n = 3000;
    pt_random_gaussians(&g, &r, n, 2, 5.0f);
    sp_gaussians_init(&m, n, 2), sp_gaussians_init(&v, n, 2);
    m.n = v.n = n;
    for (int i = 0; i < n; i++) { /* tags: each Gaussian's index in every field of its moments */
        for (int k = 0; k < 3; k++) m.means[3 * i + k] = (float)i, v.log_scales[3 * i + k] = (float)-i;
        m.opacity_logits[i] = (float)i, v.sh[(size_t)3 * g.K * i + 4] = (float)i;
    }
    sp_gaussians_clone(&g0, &g);
    int32_t *order = malloc((size_t)n * 4);
    assert_int_equal(cpu_morton_order(g.means, n, order), 0);
    assert_int_equal(cpu_reorder(&g, &m, &v), 0);
    assert_int_equal(g.n, n);
    int ok = 1;
    size_t k3 = 3 * (size_t)g.K;
    for (int i = 0; i < n; i++) {
        int s = order[i];
        ok &= !memcmp(g.means + 3 * i, g0.means + 3 * s, 12) && !memcmp(g.quats + 4 * i, g0.quats + 4 * s, 16) &&
              !memcmp(g.sh + k3 * i, g0.sh + k3 * s, k3 * 4) && g.opacity_logits[i] == g0.opacity_logits[s] &&
              !memcmp(g.log_scales + 3 * i, g0.log_scales + 3 * s, 12);
        ok &= m.means[3 * i + 2] == (float)s && m.opacity_logits[i] == (float)s && v.log_scales[3 * i] == (float)-s &&
              v.sh[k3 * i + 4] == (float)s;
    }
    assert_true(ok);
    /* a second reorder changes nothing: the order is already sorted and ties keep their order */
    sp_gaussians g1;
    sp_gaussians_clone(&g1, &g);
    assert_int_equal(cpu_reorder(&g, NULL, NULL), 0);
    assert_true(pt_stores_equal(&g, &g1));
    free(order);
    sp_gaussians_free(&g), sp_gaussians_free(&m), sp_gaussians_free(&v), sp_gaussians_free(&g0), sp_gaussians_free(&g1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rule_edges),
        cmocka_unit_test(test_order_sorted_stable_permutation),
        cmocka_unit_test(test_flat_and_tiny),
        cmocka_unit_test(test_reorder_moves_stores_together),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
