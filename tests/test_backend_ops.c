/* test_backend_ops.c — the one parity harness for every backend (ggml's test-backend-ops is the
 * model). For every backend kind compiled in (backend.h's table) whose device is present, under
 * every variant it honours (deterministic on/off, cas_atomics), every stage of its
 * table (backend/stage_ops.h) runs on random inputs of several sizes (rasterize and backward_raster
 * also on a hand-made projection, k_sizes) and is compared with the CPU reference
 * (backend/ref/stages.h); project, project_back and the render / train_step check run once more
 * with the opacity-compensated filter on (sp_backend_config.antialias, first variant). Then whole
 * steps through the backend's ops: render, one train_step's loss and gradients (and the same over
 * small image shapes, alpha modes and SSIM weights), refine, a short training run with its
 * profile, and (in
 * deterministic mode) two runs that must agree bit for bit. The cpu kind runs too, as a
 * self-check of the harness. A new backend needs no test code here: it adds a row to the kind
 * table and fills its stage table. A missing stage of a GPU backend is a failure; a kind without
 * a device prints "no device: skipped".
 *
 * Each comparison prints one line: PASS/FAIL, target, stage, what, measured error, tolerance.
 * Tolerances (tuned for CUDA on an H200):
 *   project        1e-5 relative per value (floor: 1e-3 of the array's largest magnitude; the radius
 *                  error times min(1, 2 ln(255 opacity)), its condition number); for the
 *                  conic, 1e-5 relative error of its quadratic form; visibility may differ for
 *                  0.1 % of Gaussians, the rect (float rounding) for 0.5 % (at least 1), clamp flags never
 *   bin            (emit_pairs + sort + tile_ranges) identical per-tile lists from the same
 *                  projection (where an empty tile's range starts is not compared; vulkan, whose
 *                  ellipse level is a float: once the Gaussians within that level's rounding of
 *                  a tile are removed); from the backend's own projection, lists match once
 *                  Gaussians whose rect or culled tile set differs by float rounding are removed
 *   rasterize      max abs 1e-4 on rgb and final_T; threshold flips on 0.1 % of pixels (at least 1)
 *   backward_raster relative L2 < 1e-3 per gradient array (reference: the CPU backward of the
 *                  backend's own forward output; pixels where that output has a threshold flip
 *                  against the CPU forward, bounded as for rasterize, carry no loss gradient)
 *   project_back   relative L2 < 1e-4 per parameter group
 *   loss           value 1e-5 relative, gradient 1e-4 relative L2
 *   adam           max abs 1e-6
 *   refine         identical counts and order, copies bit-identical, values through expf/logf/cosf
 *                  within 1e-5 abs (log-scales 1e-6)
 *   every output   no NaN or Inf; in deterministic mode, a second call repeats bit for bit
 *   mcmc           regularizer gradients 1e-6 relative, position noise 1e-6 abs, plans bit-identical
 *                  (backend_ops_mcmc.h; a backend without MCMC is skipped)
 *   sort           (a backend's pair sort on its own, where its stage table has one) the order of a
 *                  stable sort, exactly, on keys made to reach every path of a radix sort
 *   reorder        (where the backend has it) parameters and moments in the host's Morton order,
 *                  bit-identical (backend_ops_reorder.h)
 *   sparse adam    out-of-view Gaussians' zero-gradient values and moments kept bit for bit, in-view
 *                  ones' zero-gradient values the dense update (first moment 1e-6 relative)
 *   whole step     render max abs 1e-4 (threshold flips 0.1 %); train_step loss 1e-5 relative and
 *                  gradients (read back through Adam's first moment) relative L2 < 1e-3; the second
 *                  moment and the update agree with the first (1e-5 relative, plus p's rounding)
 *   score          (the evaluation on the device) 8-bit render identical, squared-difference sum
 *                  exact, SSIM within 1e-12 of the host's sp_ssim_u8, repeats bit for bit
 *
 * Usage: test_backend_ops [--backend KIND] [--filter GLOB]   the parity tests (make test runs them);
 *                                                   --filter: only the tests whose name matches
 *                                                   (cmocka's pattern: * and ?), e.g. '*sort*'
 *        test_backend_ops --list                    one line per kind compiled in: name, device|no-device,
 *                                                   gpu|cpu, the variants it honours (comma-separated)
 *        test_backend_ops --perf [--backend KIND] [--size N] [--steps S]   ms per stage
 * SPLAT_TEST_SEED=<n> repeats a run's random inputs. */
#include "testutil.h"

#include <float.h>
#include <math.h>
#include <time.h>

#include "backend/backend.h"
#include "backend/ref/refine.h"
#include "backend/ref/stages.h"
#include "backend/stage_ops.h"
#include "backend/tile_cull.h"
#include "eval/metrics.h"
#include "io/image.h"
#include "parity.h"
#include "scene/gaussians.h"
#include "train/prune.h"
#ifdef SPLAT_HAVE_CUDA
#include "backend/cuda/cuda_test_api.h"
#endif

/* ---- what one test runs on ---- */
typedef struct {
    const sp_backend_kind *kind;  /* NULL for a bare stage table (host_ops) */
    const sp_stage_ops *host_ops; /* a stage table run without a backend; only its stages are tested */
    sp_backend_config cfg;
    char label[96];
    int check; /* index into k_checks */
} tcase;

/* Inputs of several shapes: nothing at all, a handful, one tile, the sizes the tolerances were tuned
 * on (images not a multiple of 16), and hundreds of Gaussians per tile; for the raster stages also
 * a projection made by hand (crafted: raster_case_make) that puts Gaussians where the tile and warp
 * mask tests decide. */
typedef struct {
    const char *name;
    int n, w, h;
    int crafted; /* 1: rasterize and backward_raster only, a hand-made projection, no scene; 2: bin
                    only (over 4095 tiles with depths from 1 to 6: CUDA's 64-bit pair keys; the
                    scenes' smaller images take its 32-bit ones) */
} size_case;
static const size_case k_sizes[] = {
    {"empty", 0, 37, 29, 0},   {"tiny", 9, 23, 18, 0},   {"one tile", 60, 16, 16, 0}, {"medium", 3000, 157, 101, 0},
    {"dense", 4000, 45, 38, 0}, {"edges", 1500, 61, 45, 1}, {"wide", 3000, 1040, 1040, 2},
};
#define NUM_SIZES ((int)(sizeof k_sizes / sizeof *k_sizes))

static int at_least_1(int x) { return x > 1 ? x : 1; }

/* Bit-identical repeat (deterministic mode) and finiteness, one line each. */
static int check_repeat(const tcase *c, const char *stage, const char *what, int same) {
    if (!c->cfg.deterministic) return 1;
    return pt_report(same, c->label, stage, what, "bit-identical repeat (1=yes)", same, 1);
}

static int check_finite(const tcase *c, const char *stage, const char *what, size_t bad) {
    return pt_report(bad == 0, c->label, stage, what, "non-finite outputs", (double)bad, 0);
}

static int proj_equal(const sp_proj *a, const sp_proj *b, int n) {
    size_t N = (size_t)n;
    return !memcmp(a->mean2d, b->mean2d, N * 8) && !memcmp(a->conic, b->conic, N * 12) &&
           !memcmp(a->depth, b->depth, N * 4) && !memcmp(a->opacity, b->opacity, N * 4) &&
           !memcmp(a->color, b->color, N * 12) && !memcmp(a->rect, b->rect, N * 16) &&
           !memcmp(a->radius, b->radius, N * 4) && !memcmp(a->clamped, b->clamped, N * 3);
}

static int visible(const sp_proj *p, int i) {
    return p->rect[4 * i] < p->rect[4 * i + 2] && p->rect[4 * i + 1] < p->rect[4 * i + 3];
}

/* ---- project ---- */
static int check_project(const tcase *c, sp_backend *b, const sp_stage_ops *ops, const size_case *sz, int si) {
    sp_rng r = pt_rng(100 + si);
    pt_scene s;
    pt_scene_make(&s, &r, sz->n, sz->w, sz->h, 3);
    int ok = 1, n = s.n;
    for (int deg = 0; deg <= 3; deg += 3) {
        sp_proj ref, got, again;
        sp_proj_alloc(&ref, n), sp_proj_alloc(&got, n), sp_proj_alloc(&again, n);
        cpu_project_aa(&s.p, &s.cam, deg, c->cfg.antialias, &ref);
        char what[96];
        snprintf(what, sizeof what, "(%s, deg %d)", sz->name, deg);
        if (ops->project(b, &s.p, &s.cam, deg, &got)) {
            ok = pt_report(0, c->label, "project", what, sp_last_error(), 1, 0);
            goto next;
        }
        int vis_mismatch = 0, rect_diff = 0, clamp_diff = 0;
        uint8_t *m = sp_calloc((size_t)(n ? n : 1), 1);
        for (int i = 0; i < n; i++) {
            int va = visible(&got, i), vb = visible(&ref, i);
            m[i] = va && vb;
            if (va != vb) vis_mismatch++;
            if (!m[i]) continue;
            if (memcmp(got.rect + 4 * i, ref.rect + 4 * i, 16)) rect_diff++;
            for (int k = 0; k < 3; k++)
                if (got.clamped[3 * i + k] != ref.clamped[3 * i + k] && fabsf(ref.color[3 * i + k]) > 1e-6f)
                    clamp_diff++;
        }
        const double tol = 1e-5;
        struct {
            const char *name;
            const float *a, *b;
            int stride;
        } arrs[] = {{"mean2d", got.mean2d, ref.mean2d, 2}, {"conic", got.conic, ref.conic, 3},
                    {"depth", got.depth, ref.depth, 1},    {"opacity", got.opacity, ref.opacity, 1},
                    {"color", got.color, ref.color, 3},    {"radius", got.radius, ref.radius, 1}};
        size_t bad = 0;
        for (size_t k = 0; k < sizeof arrs / sizeof *arrs; k++) {
            snprintf(what, sizeof what, "%s (%s, deg %d)", arrs[k].name, sz->name, deg);
            double e = pt_max_rel(arrs[k].a, arrs[k].b, (size_t)n, arrs[k].stride, m, 1e-3);
            bad += pt_nonfinite(arrs[k].a, (size_t)n * arrs[k].stride);
            if (!strcmp(arrs[k].name, "radius")) {
                /* radius = sqrt(tau a), tau = 2 ln(255 opacity): a relative error x of the opacity
                 * moves it by x / tau, large for Gaussians just above the 1/255 cut (many with the
                 * antialias filter). Each error is scaled by min(1, tau) so that the opacity's
                 * tolerance carries over. */
                printf("INFO %s project %s: unscaled max rel err %.3g\n", c->label, what, e);
                e = 0.0;
                double mx = 0.0;
                for (int i = 0; i < n; i++)
                    if (m[i]) mx = fmax(mx, fabs((double)ref.radius[i]));
                for (int i = 0; i < n; i++) {
                    if (!m[i]) continue;
                    double tau = 2.0 * log(255.0 * (double)ref.opacity[i]);
                    double d = fabs((double)got.radius[i] - ref.radius[i]) /
                               fmax(fabs((double)ref.radius[i]), 1e-3 * mx);
                    e = fmax(e, d * fmin(1.0, tau));
                }
                ok &= pt_report(e <= tol, c->label, "project", what, "max rel err x min(1, tau)", e, tol);
                continue;
            }
            if (!strcmp(arrs[k].name, "conic")) {
                /* The conic inverts a nearly singular matrix for thin Gaussians, so per-component
                 * errors are the input's ulps times its condition number. The stated tolerance
                 * applies to the relative error of the quadratic form it defines. */
                printf("INFO %s project %s: per-component max rel err %.3g\n", c->label, what, e);
                e = pt_conic_form_err(got.conic, ref.conic, n, m);
                ok &= pt_report(e <= tol, c->label, "project", what, "quadratic-form rel err", e, tol);
                continue;
            }
            ok &= pt_report(e <= tol, c->label, "project", what, "max rel err", e, tol);
        }
        snprintf(what, sizeof what, "(%s, deg %d)", sz->name, deg);
        printf("INFO %s project %s: visibility differs for %d of %d, rect (float rounding) for %d, clamp flag for %d\n",
               c->label, what, vis_mismatch, n, rect_diff, clamp_diff);
        int allow = at_least_1(n / 200);
        ok &= pt_report(vis_mismatch <= at_least_1(n / 1000) && rect_diff <= allow && clamp_diff == 0, c->label,
                        "project", what, "visibility/rect/clamped mismatches", vis_mismatch + rect_diff + clamp_diff,
                        allow);
        ok &= check_finite(c, "project", what, bad);
        if (c->cfg.deterministic) {
            int rc = ops->project(b, &s.p, &s.cam, deg, &again);
            ok &= check_repeat(c, "project", what, rc == 0 && proj_equal(&got, &again, n));
        }
        free(m);
    next:
        sp_proj_free(&ref), sp_proj_free(&got), sp_proj_free(&again);
    }
    pt_scene_free(&s);
    return ok;
}

/* ---- bin: emit_pairs + sort + tile_ranges ---- */
/* Tiles whose lists differ (a different tile grid counts every tile). Only the lists matter: where
 * an empty tile's range starts is not compared. Ranges must already be valid (bins_invalid). */
static int bins_diff_tiles(const sp_bins *a, const sp_bins *b) {
    int tiles = a->tiles_x * a->tiles_y;
    if (a->tiles_x != b->tiles_x || a->tiles_y != b->tiles_y) return tiles > 0 ? tiles : 1;
    int bad = a->num_pairs != b->num_pairs;
    for (int t = 0; t < tiles; t++) {
        uint32_t sa = a->range[2 * t], la = a->range[2 * t + 1] - sa;
        uint32_t sb = b->range[2 * t], lb = b->range[2 * t + 1] - sb;
        bad += la != lb || (la && memcmp(a->ids + sa, b->ids + sb, (size_t)la * 4));
    }
    return bad;
}

static int bins_equal(const sp_bins *a, const sp_bins *b) { return bins_diff_tiles(a, b) == 0; }

/* Lists that index past n or ranges out of order are as bad as NaN. */
static size_t bins_invalid(const sp_bins *b, int n) {
    size_t bad = 0;
    for (int64_t j = 0; j < b->num_pairs; j++) bad += b->ids[j] >= (uint32_t)n;
    for (int t = 0; t < b->tiles_x * b->tiles_y; t++)
        bad += b->range[2 * t] > b->range[2 * t + 1] || b->range[2 * t + 1] > (uint64_t)b->num_pairs;
    return bad;
}

/* Tiles whose lists differ once the Gaussians marked in skip are removed from both (a and b on the
 * same tile grid, b's ids checked against n). */
static int bins_diff_tiles_except(const sp_bins *a, const sp_bins *b, const uint8_t *skip, int n) {
    if (a->tiles_x != b->tiles_x || a->tiles_y != b->tiles_y) return 1;
    int bad_tiles = 0;
    for (int t = 0; t < a->tiles_x * a->tiles_y; t++) {
        uint32_t ia = a->range[2 * t], ea = a->range[2 * t + 1], ib = b->range[2 * t], eb = b->range[2 * t + 1];
        for (;;) {
            while (ia < ea && skip[a->ids[ia]]) ia++;
            while (ib < eb && ib < b->num_pairs && b->ids[ib] < (uint32_t)n && skip[b->ids[ib]]) ib++;
            if (ia >= ea || ib >= eb) {
                if (ia < ea || ib < eb) bad_tiles++;
                break;
            }
            if (ib >= b->num_pairs || a->ids[ia] != b->ids[ib]) {
                bad_tiles++;
                break;
            }
            ia++, ib++;
        }
    }
    return bad_tiles;
}

/* The vulkan backend computes the ellipse level tau in float with the shading language's log
 * (docs/vulkan.md, tilecull.glsl), whose error bound is a few units in the last place, or an
 * absolute 2^-21 near log 1: marks the Gaussians of proj whose tile decisions change when tau
 * moves by that much (1e-5 relative plus 4e-6), the only ones whose lists may differ from the
 * host's. Returns their count. */
static int mark_tau_borderline(const sp_proj *proj, int n, uint8_t *mark) {
    int count = 0;
    for (int i = 0; i < n; i++) {
        const int32_t *rr = proj->rect + 4 * i;
        if (!(rr[0] < rr[2] && rr[1] < rr[3])) continue;
        float tau = sp_tile_tau(proj->opacity[i]), d = fabsf(tau) * 1e-5f + 4e-6f;
        const float *m = proj->mean2d + 2 * i, *q = proj->conic + 3 * i;
        sp_tile_ellipse_t lo = sp_tile_ellipse_tau(m[0], m[1], q[0], q[1], q[2], tau - d);
        sp_tile_ellipse_t hi = sp_tile_ellipse_tau(m[0], m[1], q[0], q[1], q[2], tau + d);
        int flip = 0;
        for (int y = rr[1]; y < rr[3] && !flip; y++)
            for (int x = rr[0]; x < rr[2] && !flip; x++) flip = sp_tile_hit(&lo, x, y) != sp_tile_hit(&hi, x, y);
        if (flip && !mark[i]) mark[i] = 1, count++;
    }
    return count;
}

static int check_bin(const tcase *c, sp_backend *b, const sp_stage_ops *ops, const size_case *sz, int si) {
    const char *stage = "bin";
    sp_rng r = pt_rng(200 + si);
    pt_scene s;
    pt_scene_make(&s, &r, sz->n, sz->w, sz->h, 1);
    int n = s.n, ok = 1;
    char what[96];
    sp_proj ref;
    sp_proj_alloc(&ref, n);
    cpu_project(&s.p, &s.cam, 1, &ref);
    sp_bins bc = {0}, bg = {0}, bg2 = {0}, bp = {0};
    uint8_t *border = NULL;
    cpu_bin(&ref, n, &s.cam, &bc);
    snprintf(what, sizeof what, "same projection (%s)", sz->name);
    if (ops->bin(b, &ref, n, &s.cam, &bg)) {
        ok = pt_report(0, c->label, stage, what, sp_last_error(), 1, 0);
        goto out;
    }
    printf("INFO %s bin (%s): %lld pairs over %d tiles\n", c->label, sz->name, (long long)bc.num_pairs,
           bc.tiles_x * bc.tiles_y);
    size_t invalid = bins_invalid(&bg, n);
    ok &= check_finite(c, stage, what, invalid);
    if (invalid) goto out;
    /* vulkan: tau in float (mark_tau_borderline); every other backend decides exactly as the host */
    int float_tau = c->kind && !strcmp(c->kind->name, "vulkan");
    border = sp_calloc((size_t)(n ? n : 1), 1);
    int nborder = float_tau ? mark_tau_borderline(&ref, n, border) : 0;
    int dt = float_tau ? bins_diff_tiles_except(&bc, &bg, border, n) : bins_diff_tiles(&bg, &bc);
    if (float_tau)
        printf("INFO %s bin %s: %d Gaussians reach a tile within the float level's rounding (allowed)\n", c->label,
               what, nborder);
    ok &= pt_report(dt == 0, c->label, stage, what, "tiles whose lists differ", dt, 0);
    if (c->cfg.deterministic) {
        int rc = ops->bin(b, &ref, n, &s.cam, &bg2);
        ok &= check_repeat(c, stage, what, rc == 0 && !bins_invalid(&bg2, n) && bins_equal(&bg, &bg2));
    }
    /* The backend's own projection: per tile, the lists agree once Gaussians whose rect or culled
     * tile set differs by float rounding are removed. */
    if (ops->project) {
        sp_proj got;
        sp_proj_alloc(&got, n);
        snprintf(what, sizeof what, "own projection (%s)", sz->name);
        if (ops->project(b, &s.p, &s.cam, 1, &got) || ops->bin(b, &got, n, &s.cam, &bp)) {
            ok = pt_report(0, c->label, stage, what, sp_last_error(), 1, 0);
            sp_proj_free(&got);
            goto out;
        }
        uint8_t *differs = sp_calloc((size_t)(n ? n : 1), 1);
        int ndiff = 0;
        if (float_tau) memcpy(differs, border, (size_t)n), ndiff = nborder;
        for (int i = 0; i < n; i++) {
            const int32_t *rr = ref.rect + 4 * i;
            int d = memcmp(got.rect + 4 * i, rr, 16) != 0;
            sp_tile_ellipse_t ec = sp_tile_ellipse(ref.mean2d[2 * i], ref.mean2d[2 * i + 1], ref.conic[3 * i],
                                                   ref.conic[3 * i + 1], ref.conic[3 * i + 2], ref.opacity[i]);
            sp_tile_ellipse_t eg = sp_tile_ellipse(got.mean2d[2 * i], got.mean2d[2 * i + 1], got.conic[3 * i],
                                                   got.conic[3 * i + 1], got.conic[3 * i + 2], got.opacity[i]);
            for (int y = rr[1]; y < rr[3] && !d; y++)
                for (int x = rr[0]; x < rr[2] && !d; x++) d = sp_tile_hit(&ec, x, y) != sp_tile_hit(&eg, x, y);
            if (d && !differs[i]) differs[i] = 1, ndiff++;
        }
        int bad_tiles = bins_diff_tiles_except(&bc, &bp, differs, n);
        printf("INFO %s bin %s: %d Gaussians have a rect or culled tile set differing by float rounding (allowed)\n",
               c->label, what, ndiff);
        ok &= pt_report(bad_tiles == 0, c->label, stage, what, "tiles whose lists differ", bad_tiles, 0);
        free(differs);
        sp_proj_free(&got);
    }
out:
    free(border);
    sp_bins_free(&bc), sp_bins_free(&bg), sp_bins_free(&bg2), sp_bins_free(&bp);
    sp_proj_free(&ref);
    pt_scene_free(&s);
    return ok;
}

/* ---- rasterize and backward_raster: CPU projection and lists of a random scene ---- */
typedef struct {
    pt_scene s;
    sp_proj proj;
    sp_bins bins;
    float bg[3];
} raster_case;

/* A projection made by hand (no camera model) for n Gaussians on a w x h image whose border tiles
 * are partial: a third small (0.3 to 3 pixels) or thin ones with their means on and around the
 * borders of the 8x4 pixel rectangles of the warp masks and of the 16x16 tiles (exactly on them,
 * a hundredth, a quarter, half and one pixel off), a third thin long tilted ones anywhere (means a
 * little outside the image too), a third large ones (8 to 30 pixels) over many tiles at low
 * opacity, so that the lists are long and the backward walks several chunks. Opacities from just
 * above 1/255 (a Gaussian that reaches only the pixels next to its mean) to 1 (alpha clamped).
 * The rect is the tiles of the mean +- 3.5 sigma; the tile test then culls. */
static void craft_proj(sp_rng *r, int n, int w, int h, sp_proj *p) {
    static const float off[] = {-1.0f, -0.5f, -0.25f, -0.01f, 0.0f, 0.01f, 0.25f, 0.5f, 1.0f};
    int tx = (w + SP_TILE - 1) / SP_TILE, ty = (h + SP_TILE - 1) / SP_TILE;
    for (int i = 0; i < n; i++) {
        int kind = i % 3;
        float mx, my, s1, s2, op;
        float u = sp_rng_uniform(r);
        if (kind == 0) { /* on a rectangle's border (every tile border is one) */
            mx = 8.0f * (float)(int)(sp_rng_uniform(r) * (float)(w / 8 + 2)) + off[sp_rng_u32(r) % 9];
            my = 4.0f * (float)(int)(sp_rng_uniform(r) * (float)(h / 4 + 2)) + off[sp_rng_u32(r) % 9];
            s1 = 0.3f + 2.7f * sp_rng_uniform(r);
            s2 = i % 2 ? s1 * (0.7f + 0.6f * sp_rng_uniform(r)) : 0.3f + 0.3f * sp_rng_uniform(r);
            op = u < 0.3f ? 0.004f + 0.004f * sp_rng_uniform(r) : u < 0.7f ? 0.2f + 0.8f * sp_rng_uniform(r) : 1.0f;
        } else if (kind == 1) { /* thin, long, tilted */
            mx = -4.0f + (float)(w + 8) * sp_rng_uniform(r);
            my = -4.0f + (float)(h + 8) * sp_rng_uniform(r);
            s1 = 0.3f + 0.3f * sp_rng_uniform(r);
            s2 = 4.0f + 16.0f * sp_rng_uniform(r);
            op = u < 0.3f ? 0.004f + 0.01f * sp_rng_uniform(r) : 0.1f + 0.8f * sp_rng_uniform(r);
        } else { /* large, faint */
            mx = -8.0f + (float)(w + 16) * sp_rng_uniform(r);
            my = -8.0f + (float)(h + 16) * sp_rng_uniform(r);
            s1 = 8.0f + 22.0f * sp_rng_uniform(r);
            s2 = 8.0f + 22.0f * sp_rng_uniform(r);
            op = 0.01f + 0.07f * u;
        }
        float th = 6.2831853f * sp_rng_uniform(r), cs = cosf(th), sn = sinf(th);
        /* covariance R diag(s1^2, s2^2) R^T, its inverse the conic */
        double v1 = (double)s1 * s1, v2 = (double)s2 * s2;
        double cxx = cs * cs * v1 + sn * sn * v2, cxy = cs * sn * (v1 - v2), cyy = sn * sn * v1 + cs * cs * v2;
        double det = cxx * cyy - cxy * cxy;
        float rad = ceilf(3.5f * (s1 > s2 ? s1 : s2)) + 1.0f;
        int x0 = (int)floorf((mx - rad) / SP_TILE), x1 = (int)floorf((mx + rad) / SP_TILE) + 1;
        int y0 = (int)floorf((my - rad) / SP_TILE), y1 = (int)floorf((my + rad) / SP_TILE) + 1;
        x0 = x0 < 0 ? 0 : x0, y0 = y0 < 0 ? 0 : y0, x1 = x1 > tx ? tx : x1, y1 = y1 > ty ? ty : y1;
        int32_t *rc = p->rect + 4 * i;
        if (!(x0 < x1 && y0 < y1)) { /* not visible: every field 0 */
            memset(p->mean2d + 2 * i, 0, 8), memset(p->conic + 3 * i, 0, 12), memset(rc, 0, 16);
            p->depth[i] = p->opacity[i] = p->radius[i] = 0.0f;
            memset(p->color + 3 * i, 0, 12), memset(p->clamped + 3 * i, 0, 3);
            continue;
        }
        p->mean2d[2 * i] = mx, p->mean2d[2 * i + 1] = my;
        p->conic[3 * i] = (float)(cyy / det), p->conic[3 * i + 1] = (float)(-cxy / det);
        p->conic[3 * i + 2] = (float)(cxx / det);
        p->depth[i] = 1.0f + 5.0f * sp_rng_uniform(r);
        p->opacity[i] = op;
        for (int k = 0; k < 3; k++) p->color[3 * i + k] = sp_rng_uniform(r), p->clamped[3 * i + k] = 0;
        rc[0] = x0, rc[1] = y0, rc[2] = x1, rc[3] = y1;
        p->radius[i] = rad;
    }
}

static void raster_case_make(raster_case *rc, uint64_t stream, const size_case *sz) {
    sp_rng r = pt_rng(stream);
    sp_proj_alloc(&rc->proj, sz->n);
    if (sz->crafted) { /* no scene: the camera's image size and the Gaussian count only */
        memset(&rc->s, 0, sizeof rc->s);
        rc->s.n = sz->n, rc->s.cam.width = sz->w, rc->s.cam.height = sz->h;
        rc->s.cam.R[0] = rc->s.cam.R[4] = rc->s.cam.R[8] = 1.0f;
        rc->s.cam.fx = rc->s.cam.fy = (float)sz->w, rc->s.cam.cx = 0.5f * sz->w, rc->s.cam.cy = 0.5f * sz->h;
        craft_proj(&r, sz->n, sz->w, sz->h, &rc->proj);
    } else {
        pt_scene_make(&rc->s, &r, sz->n, sz->w, sz->h, 2);
        cpu_project(&rc->s.p, &rc->s.cam, 2, &rc->proj);
    }
    memset(&rc->bins, 0, sizeof rc->bins);
    cpu_bin(&rc->proj, sz->n, &rc->s.cam, &rc->bins);
    for (int k = 0; k < 3; k++) rc->bg[k] = sp_rng_uniform(&r);
}

static void raster_case_free(raster_case *rc) {
    sp_bins_free(&rc->bins);
    sp_proj_free(&rc->proj);
    pt_scene_free(&rc->s);
}

static int raster_equal(const sp_raster_out *a, const sp_raster_out *b, int np) {
    return !memcmp(a->rgb, b->rgb, (size_t)np * 12) && !memcmp(a->final_T, b->final_T, (size_t)np * 4) &&
           !memcmp(a->n_contrib, b->n_contrib, (size_t)np * 4);
}

/* Whether pixel p of two renders of one input differs by a threshold flip: a splat near the 1/255
 * alpha cut (or T near the stop) blended by one and not the other, seen as a different contributor
 * count or a colour or final T off by more than 1e-4. *d and *dT get the pixel's differences. */
static int threshold_flip(const sp_raster_out *ref, const sp_raster_out *got, int p, double *d, double *dT) {
    *d = 0.0;
    for (int k = 0; k < 3; k++) *d = fmax(*d, fabs((double)got->rgb[3 * p + k] - ref->rgb[3 * p + k]));
    *dT = fabs((double)got->final_T[p] - ref->final_T[p]);
    return got->n_contrib[p] != ref->n_contrib[p] || !(*d <= 1e-4) || !(*dT <= 1e-4);
}

static int check_rasterize(const tcase *c, sp_backend *b, const sp_stage_ops *ops, const size_case *sz, int si) {
    const char *stage = "rasterize";
    raster_case rc;
    raster_case_make(&rc, 300 + si, sz);
    int w = sz->w, h = sz->h, ok = 1;
    char what[96];
    sp_raster_out ref, got, again;
    sp_raster_out_alloc(&ref, w, h), sp_raster_out_alloc(&got, w, h), sp_raster_out_alloc(&again, w, h);
    cpu_rasterize(&rc.proj, &rc.bins, &rc.s.cam, rc.bg, &ref);
    if (ops->rasterize(b, &rc.proj, rc.s.n, &rc.bins, &rc.s.cam, rc.bg, &got)) {
        ok = pt_report(0, c->label, stage, sz->name, sp_last_error(), 1, 0);
        goto out;
    }
    double e_rgb = 0.0, e_T = 0.0;
    int flips = 0;
    for (int p = 0; p < w * h; p++) {
        double d, dT;
        if (threshold_flip(&ref, &got, p, &d, &dT)) {
            flips++;
            continue;
        }
        e_rgb = fmax(e_rgb, d);
        e_T = fmax(e_T, dT);
    }
    printf("INFO %s rasterize (%s): %d of %d pixels differ by a threshold flip (n_contrib or > 1e-4)\n", c->label,
           sz->name, flips, w * h);
    snprintf(what, sizeof what, "rgb (%s)", sz->name);
    ok &= pt_report(e_rgb <= 1e-4, c->label, stage, what, "max abs err", e_rgb, 1e-4);
    snprintf(what, sizeof what, "final_T (%s)", sz->name);
    ok &= pt_report(e_T <= 1e-4, c->label, stage, what, "max abs err", e_T, 1e-4);
    snprintf(what, sizeof what, "threshold flips (%s)", sz->name);
    ok &= pt_report(flips <= at_least_1(w * h / 1000), c->label, stage, what, "pixels", flips, at_least_1(w * h / 1000));
    ok &= check_finite(c, stage, sz->name, pt_nonfinite(got.rgb, (size_t)w * h * 3) + pt_nonfinite(got.final_T, (size_t)w * h));
    if (c->cfg.deterministic) {
        int r2 = ops->rasterize(b, &rc.proj, rc.s.n, &rc.bins, &rc.s.cam, rc.bg, &again);
        ok &= check_repeat(c, stage, sz->name, r2 == 0 && raster_equal(&got, &again, w * h));
    }
out:
    sp_raster_out_free(&ref), sp_raster_out_free(&got), sp_raster_out_free(&again);
    raster_case_free(&rc);
    return ok;
}

static void grad_alloc(sp_proj_grad *g, int n) {
    sp_proj_grad_alloc(g, n);
    sp_proj_grad_zero(g, n);
}

static int proj_grads_equal(const sp_proj_grad *a, const sp_proj_grad *b, int n) {
    size_t N = (size_t)n;
    return !memcmp(a->mean2d, b->mean2d, N * 8) && !memcmp(a->conic, b->conic, N * 12) &&
           !memcmp(a->opacity, b->opacity, N * 4) && !memcmp(a->color, b->color, N * 12);
}

/* The backend's forward output is the input of both backward passes: a backward variant that
 * replays its own forward pass (per-splat) then sees the same fwd as the reference. */
static int check_backward_raster(const tcase *c, sp_backend *b, const sp_stage_ops *ops, const size_case *sz, int si) {
    const char *stage = "backward_raster";
    raster_case rc;
    raster_case_make(&rc, 400 + si, sz);
    int w = sz->w, h = sz->h, n = sz->n, ok = 1;
    char what[96];
    float *dl = sp_malloc((size_t)w * h * 3 * 4);
    sp_rng r = pt_rng(450 + si);
    tu_fill_uniform(&r, dl, (size_t)w * h * 3, -1.0f, 1.0f);
    sp_raster_out fwd;
    sp_raster_out_alloc(&fwd, w, h);
    sp_proj_grad ref, got, again;
    grad_alloc(&ref, n), grad_alloc(&got, n), grad_alloc(&again, n);
    if (!ops->rasterize || ops->rasterize(b, &rc.proj, n, &rc.bins, &rc.s.cam, rc.bg, &fwd))
        cpu_rasterize(&rc.proj, &rc.bins, &rc.s.cam, rc.bg, &fwd);
    /* A pixel where the backend's forward decided a threshold flip differently from the reference's
     * (the rasterize check bounds how many) takes no loss gradient: the reference backward walks its
     * own decisions back from the backend's final T there, which is not a gradient of either. */
    sp_raster_out cref;
    sp_raster_out_alloc(&cref, w, h);
    cpu_rasterize(&rc.proj, &rc.bins, &rc.s.cam, rc.bg, &cref);
    int flips = 0;
    for (int p = 0; p < w * h; p++) {
        double d, dT;
        if (threshold_flip(&cref, &fwd, p, &d, &dT)) flips++, dl[3 * p] = dl[3 * p + 1] = dl[3 * p + 2] = 0.0f;
    }
    sp_raster_out_free(&cref);
    snprintf(what, sizeof what, "forward's threshold flips (%s)", sz->name);
    ok &= pt_report(flips <= at_least_1(w * h / 1000), c->label, stage, what, "pixels", flips, at_least_1(w * h / 1000));
    cpu_backward_raster(&rc.proj, &rc.bins, &rc.s.cam, rc.bg, &fwd, dl, &ref);
    if (ops->backward_raster(b, &rc.proj, n, &rc.bins, &rc.s.cam, rc.bg, &fwd, dl, &got)) {
        ok = pt_report(0, c->label, stage, sz->name, sp_last_error(), 1, 0);
        goto out;
    }
    struct {
        const char *name;
        const float *x, *y;
        int stride;
    } arrs[] = {{"dmean2d", got.mean2d, ref.mean2d, 2},
                {"dconic", got.conic, ref.conic, 3},
                {"dopacity", got.opacity, ref.opacity, 1},
                {"dcolor", got.color, ref.color, 3}};
    size_t bad = 0;
    for (int k = 0; k < 4; k++) {
        snprintf(what, sizeof what, "%s (%s)", arrs[k].name, sz->name);
        double e = pt_rel_l2(arrs[k].x, arrs[k].y, (size_t)n * arrs[k].stride);
        bad += pt_nonfinite(arrs[k].x, (size_t)n * arrs[k].stride);
        ok &= pt_report(e < 1e-3, c->label, stage, what, "rel L2 err", e, 1e-3);
    }
    ok &= check_finite(c, stage, sz->name, bad);
    if (c->cfg.deterministic) {
        int r2 = ops->backward_raster(b, &rc.proj, n, &rc.bins, &rc.s.cam, rc.bg, &fwd, dl, &again);
        ok &= check_repeat(c, stage, sz->name, r2 == 0 && proj_grads_equal(&got, &again, n));
    }
out:
    sp_proj_grad_free(&ref), sp_proj_grad_free(&got), sp_proj_grad_free(&again);
    sp_raster_out_free(&fwd);
    free(dl);
    raster_case_free(&rc);
    return ok;
}

/* ---- project_back ---- */
static sp_params_grad params_grad_alloc(int n, int K, float **buf) {
    size_t N = (size_t)n;
    *buf = sp_calloc((N ? N : 1) * (11 + 3 * (size_t)K), 4);
    sp_params_grad g = {n, K, *buf, *buf + 3 * N, *buf + 6 * N, *buf + 10 * N, *buf + 11 * N};
    return g;
}

static int check_project_back(const tcase *c, sp_backend *b, const sp_stage_ops *ops, const size_case *sz, int si) {
    const char *stage = "project_back";
    sp_rng r = pt_rng(500 + si);
    pt_scene s;
    pt_scene_make(&s, &r, sz->n, sz->w, sz->h, 3);
    int n = s.n, ok = 1;
    size_t N = (size_t)n, total = N * (11 + 3 * (size_t)s.K);
    for (int deg = 1; deg <= 3; deg += 2) {
        char what[96];
        sp_proj proj;
        sp_proj_alloc(&proj, n);
        cpu_project_aa(&s.p, &s.cam, deg, c->cfg.antialias, &proj);
        sp_proj_grad pg;
        sp_proj_grad_alloc(&pg, n);
        tu_fill_uniform(&r, pg.mean2d, N * 2, -1.0f, 1.0f);
        tu_fill_uniform(&r, pg.conic, N * 3, -10.0f, 10.0f);
        tu_fill_uniform(&r, pg.opacity, N, -1.0f, 1.0f);
        tu_fill_uniform(&r, pg.color, N * 3, -1.0f, 1.0f);
        float *buf[3];
        sp_params_grad out[3];
        for (int k = 0; k < 3; k++) out[k] = params_grad_alloc(n, s.K, &buf[k]);
        cpu_project_back_aa(&s.p, &s.cam, deg, c->cfg.antialias, &proj, &pg, &out[0]);
        snprintf(what, sizeof what, "(%s, deg %d)", sz->name, deg);
        if (ops->project_back(b, &s.p, &s.cam, deg, &proj, &pg, &out[1])) {
            ok = pt_report(0, c->label, stage, what, sp_last_error(), 1, 0);
        } else {
            struct {
                const char *name;
                const float *a, *b;
                size_t cnt;
            } g[] = {{"means", out[1].means, out[0].means, 3 * N},
                     {"log_scales", out[1].log_scales, out[0].log_scales, 3 * N},
                     {"quats", out[1].quats, out[0].quats, 4 * N},
                     {"opacity_logits", out[1].opacity_logits, out[0].opacity_logits, N},
                     {"sh", out[1].sh, out[0].sh, 3 * (size_t)s.K * N}};
            for (int k = 0; k < 5; k++) {
                snprintf(what, sizeof what, "%s (%s, deg %d)", g[k].name, sz->name, deg);
                double e = pt_rel_l2(g[k].a, g[k].b, g[k].cnt);
                ok &= pt_report(e < 1e-4, c->label, stage, what, "rel L2 err", e, 1e-4);
            }
            snprintf(what, sizeof what, "(%s, deg %d)", sz->name, deg);
            ok &= check_finite(c, stage, what, pt_nonfinite(buf[1], total));
            if (c->cfg.deterministic) {
                int r2 = ops->project_back(b, &s.p, &s.cam, deg, &proj, &pg, &out[2]);
                ok &= check_repeat(c, stage, what, r2 == 0 && !memcmp(buf[1], buf[2], total * 4));
            }
        }
        for (int k = 0; k < 3; k++) free(buf[k]);
        sp_proj_grad_free(&pg);
        sp_proj_free(&proj);
    }
    pt_scene_free(&s);
    return ok;
}

/* ---- loss ---- */
/* One w x h pair of images with ssim_weight lambda: the render is the target plus uniform noise of
 * width `noise`, with exact matches (L1 gradient 0) every 7th value. */
static int loss_case(const tcase *c, sp_backend *b, const sp_stage_ops *ops, int w, int h, float lambda,
                     float noise, uint64_t seed) {
    const char *stage = "loss";
    sp_rng r = pt_rng(seed);
    int ok = 1;
    size_t cnt = (size_t)w * h * 3;
    float *rgb = sp_malloc(cnt * 4), *tgt = sp_malloc(cnt * 4), *gc = sp_malloc(cnt * 4), *gg = sp_malloc(cnt * 4);
    float *g2 = sp_malloc(cnt * 4);
    tu_fill_uniform(&r, tgt, cnt, 0.0f, 1.0f);
    for (size_t i = 0; i < cnt; i++) rgb[i] = tgt[i] + noise * (sp_rng_uniform(&r) - 0.5f);
    for (size_t i = 0; i < cnt; i += 7) rgb[i] = tgt[i]; /* exact matches: L1 gradient 0 */
    double lc = cpu_loss(rgb, tgt, w, h, lambda, gc), lg = 0.0, l2 = 0.0;
    char shape[48], what[96];
    if (lambda == 0.2f) snprintf(shape, sizeof shape, "%dx%d", w, h);
    else snprintf(shape, sizeof shape, "%dx%d ssim_weight %g", w, h, (double)lambda);
    if (ops->loss(b, rgb, tgt, w, h, lambda, &lg, gg)) {
        ok = pt_report(0, c->label, stage, shape, sp_last_error(), 1, 0);
        goto out;
    }
    snprintf(what, sizeof what, "value %s", shape);
    double ev = fabs(lg - lc) / fmax(fabs(lc), 1e-12);
    if (isnan(ev)) ev = INFINITY;
    ok &= pt_report(ev <= 1e-5, c->label, stage, what, "rel err", ev, 1e-5);
    snprintf(what, sizeof what, "gradient %s", shape);
    double eg = pt_rel_l2(gg, gc, cnt);
    ok &= pt_report(eg <= 1e-4, c->label, stage, what, "rel L2 err", eg, 1e-4);
    ok &= check_finite(c, stage, shape, pt_nonfinite(gg, cnt) + !isfinite(lg));
    if (c->cfg.deterministic) {
        int r2 = ops->loss(b, rgb, tgt, w, h, lambda, &l2, g2);
        ok &= check_repeat(c, stage, shape, r2 == 0 && l2 == lg && !memcmp(gg, g2, cnt * 4));
    }
out:
    free(rgb), free(tgt), free(gc), free(gg), free(g2);
    return ok;
}

/* Each size case with ssim_weight 0.2; with the first, once, shapes at the borders of the GPU
 * tilings (one pixel, one row, one column, under, at and past multiples of 16 and 32) and the
 * weights 0 (L1 only) and 1 (D-SSIM only). These renders lie farther from their targets: at
 * weight 1 the value is 1 - mean SSIM, whose relative error grows as the mean SSIM nears 1 (with
 * the noise of the size cases, mean SSIM ~0.96, the float window sums of a GPU leave up to ~7e-6
 * of it on a 5x7 image). */
static int check_loss(const tcase *c, sp_backend *b, const sp_stage_ops *ops, const size_case *sz, int si) {
    static const struct {
        int w, h;
        float lambda;
    } k_shapes[] = {{1, 1, 0.2f},  {5, 7, 1.0f},  {33, 17, 0.0f}, {32, 32, 0.2f},
                    {64, 33, 1.0f}, {97, 1, 0.2f}, {1, 45, 0.0f},  {65, 96, 0.2f}};
    int ok = loss_case(c, b, ops, sz->w, sz->h, 0.2f, 0.2f, 600 + (uint64_t)si);
    if (si == 0)
        for (size_t i = 0; i < sizeof k_shapes / sizeof *k_shapes; i++)
            ok &= loss_case(c, b, ops, k_shapes[i].w, k_shapes[i].h, k_shapes[i].lambda, 0.6f, 650 + (uint64_t)i);
    return ok;
}

/* ---- adam ---- */
/* Dense, and sparse (adam.sparse) over a gradient with exact zeros: single ones and runs that
 * cover whole 4-float groups, so the GPU's skip of a group is checked as well as its lanes. */
static int check_adam_mode(const tcase *c, sp_backend *b, const sp_stage_ops *ops, const size_case *sz, int si,
                           int sparse) {
    const char *stage = sparse ? "adam (sparse)" : "adam";
    sp_rng r = pt_rng(700 + si);
    int64_t n = sz->n ? 3 * (int64_t)sz->n + 7 : 0;
    size_t bytes = (size_t)(n ? n : 1) * 4;
    float *p[3], *m[3], *v[3], *g = sp_malloc(bytes);
    tu_fill_uniform(&r, g, (size_t)n, -1.0f, 1.0f);
    if (sparse)
        for (int64_t i = 0; i < n; i++)
            if (i % 7 == 3 || (i / 16) % 3 == 1) g[i] = 0.0f;
    for (int k = 0; k < 3; k++) p[k] = sp_malloc(bytes), m[k] = sp_malloc(bytes), v[k] = sp_malloc(bytes);
    tu_fill_uniform(&r, p[0], (size_t)n, -2.0f, 2.0f);
    tu_fill_uniform(&r, m[0], (size_t)n, -0.1f, 0.1f);
    tu_fill_uniform(&r, v[0], (size_t)n, 0.0f, 0.01f);
    /* moments and gradients at the edges of the GPU's square root and division (their slow paths):
     * all zero (a value untouched since its reset), a second moment below 2^-100 (denormal ones
     * too) with no gradient, a gradient whose square underflows to zero */
    for (int64_t i = 0; i < n; i++) {
        if (i % 11 == 5) g[i] = m[0][i] = v[0][i] = 0.0f;
        else if (i % 13 == 6) /* (m small enough that the step stays below 1) */
            g[i] = 0.0f, m[0][i] *= 1e-14f, v[0][i] = ldexpf(1.0f + (float)(i % 7), -100 - (int)(i % 49));
        else if (i % 17 == 2) g[i] = 1e-30f, m[0][i] = v[0][i] = 0.0f;
    }
    for (int k = 1; k < 3; k++) memcpy(p[k], p[0], bytes), memcpy(m[k], m[0], bytes), memcpy(v[k], v[0], bytes);
    int ok = 1;
    char what[96];
    cpu_adam(p[0], g, m[0], v[0], n, 0.01f, 0.9f, 0.999f, 1e-15f, 7, sparse, NULL, 1, -1);
    if (ops->adam(b, p[1], g, m[1], v[1], n, 0.01f, 0.9f, 0.999f, 1e-15f, 7, sparse)) {
        ok = pt_report(0, c->label, stage, sz->name, sp_last_error(), 1, 0);
        goto out;
    }
    const char *names[3] = {"param", "m", "v"};
    float **arr[3] = {p, m, v};
    for (int k = 0; k < 3; k++) {
        snprintf(what, sizeof what, "%s (%lld values)", names[k], (long long)n);
        double e = pt_max_abs(arr[k][1], arr[k][0], (size_t)n);
        ok &= pt_report(e <= 1e-6, c->label, stage, what, "max abs err", e, 1e-6);
    }
    snprintf(what, sizeof what, "(%lld values)", (long long)n);
    ok &= check_finite(c, stage, what,
                       pt_nonfinite(p[1], (size_t)n) + pt_nonfinite(m[1], (size_t)n) + pt_nonfinite(v[1], (size_t)n));
    if (c->cfg.deterministic) {
        int r2 = ops->adam(b, p[2], g, m[2], v[2], n, 0.01f, 0.9f, 0.999f, 1e-15f, 7, sparse);
        ok &= check_repeat(c, stage, what,
                           r2 == 0 && !memcmp(p[1], p[2], (size_t)n * 4) && !memcmp(m[1], m[2], (size_t)n * 4) &&
                               !memcmp(v[1], v[2], (size_t)n * 4));
    }
out:
    for (int k = 0; k < 3; k++) free(p[k]), free(m[k]), free(v[k]);
    free(g);
    return ok;
}

static int check_adam(const tcase *c, sp_backend *b, const sp_stage_ops *ops, const size_case *sz, int si) {
    int ok = check_adam_mode(c, b, ops, sz, si, 0);
    return check_adam_mode(c, b, ops, sz, si, 1) & ok;
}

/* ---- refine over host stores ---- */
static void fill_store(sp_rng *r, sp_gaussians *g, float lo, float hi, int params) {
    size_t n = (size_t)g->n;
    if (params) {
        tu_fill_uniform(r, g->means, n * 3, -1.0f, 1.0f);
        tu_fill_uniform(r, g->log_scales, n * 3, -4.0f, -1.0f);
        tu_fill_uniform(r, g->quats, n * 4, -1.0f, 1.0f);
        tu_fill_uniform(r, g->opacity_logits, n, -5.0f, 5.0f);
        tu_fill_uniform(r, g->sh, n * 3 * g->K, -1.0f, 1.0f);
        return;
    }
    tu_fill_uniform(r, g->means, n * 3, lo, hi);
    tu_fill_uniform(r, g->log_scales, n * 3, lo, hi);
    tu_fill_uniform(r, g->quats, n * 4, lo, hi);
    tu_fill_uniform(r, g->opacity_logits, n, lo, hi);
    tu_fill_uniform(r, g->sh, n * 3 * g->K, lo, hi);
}

static double moments_diff(const sp_gaussians *a, const sp_gaussians *b) {
    size_t N = (size_t)a->n, K3 = 3 * (size_t)a->K;
    double e = pt_max_abs(a->means, b->means, N * 3);
    e = fmax(e, pt_max_abs(a->log_scales, b->log_scales, N * 3));
    e = fmax(e, pt_max_abs(a->quats, b->quats, N * 4));
    e = fmax(e, pt_max_abs(a->opacity_logits, b->opacity_logits, N));
    return fmax(e, pt_max_abs(a->sh, b->sh, N * K3));
}

static int check_refine(const tcase *c, sp_backend *b, const sp_stage_ops *ops, const size_case *sz, int si) {
    const char *stage = "refine";
    sp_rng r = pt_rng(800 + si);
    int ok = 1;
    for (int run = 0; run < 2; run++) {
        int n = sz->n, deg = 1;
        sp_gaussians g[3], m[3], v[3];
        sp_gaussians_init(&g[0], n ? n : 1, deg), sp_gaussians_init(&m[0], n ? n : 1, deg);
        sp_gaussians_init(&v[0], n ? n : 1, deg);
        g[0].n = m[0].n = v[0].n = n;
        fill_store(&r, &g[0], 0, 0, 1);
        fill_store(&r, &m[0], 0.0f, 1.0f, 0);
        fill_store(&r, &v[0], 0.0f, 1.0f, 0);
        for (int k = 1; k < 3; k++)
            sp_gaussians_clone(&g[k], &g[0]), sp_gaussians_clone(&m[k], &m[0]), sp_gaussians_clone(&v[k], &v[0]);
        size_t N = n ? (size_t)n : 1;
        float *acc = sp_malloc(N * 4), *rad = sp_malloc(N * 4);
        int32_t *cnt = sp_malloc(N * 4);
        for (int i = 0; i < n; i++) {
            cnt[i] = (int32_t)(sp_rng_u32(&r) % 6);
            acc[i] = 6e-4f * sp_rng_uniform(&r) * (float)cnt[i];
            rad[i] = 80.0f * sp_rng_uniform(&r);
        }
        sp_refine_args a;
        memset(&a, 0, sizeof a);
        a.densify = 1, a.grad_threshold = 2e-4f, a.clone_max_scale = 0.12f;
        a.split_count = run ? 3 : 2, a.split_shrink = 1.6f;
        a.prune_opacity = 0.05f, a.prune_world_scale = 0.3f;
        a.opacity_decay = run ? 0.0f : 0.01f, a.opacity_reset = run ? 0.3f : 0.0f;
        a.capacity = n + n / 12 + 3;
        a.seed = sp_rng_u32(&r);
        sp_refine_result rc, rg, r2;
        sp_refine_stats st = {0};
        sp_refine_stats_reserve(&st, (int)N);
        sp_refine_stats_reset(&st, n);
        memcpy(st.grad_accum, acc, (size_t)n * 4), memcpy(st.grad_count, cnt, (size_t)n * 4);
        memcpy(st.max_radius, rad, (size_t)n * 4);
        assert_int_equal(cpu_refine(&g[0], &m[0], &v[0], &st, &a, &rc), 0);
        char what[160];
        snprintf(what, sizeof what, "(%s, split_count %d)", sz->name, a.split_count);
        if (ops->refine(b, &g[1], &m[1], &v[1], acc, cnt, rad, &a, &rg)) {
            ok = pt_report(0, c->label, stage, what, sp_last_error(), 1, 0);
        } else {
            printf("INFO %s refine %s: cpu %d->%d c%d s%d p%d, backend %d->%d c%d s%d p%d\n", c->label, what,
                   rc.n_before, rc.n_after, rc.cloned, rc.split, rc.pruned, rg.n_before, rg.n_after, rg.cloned, rg.split,
                   rg.pruned);
            int same = !memcmp(&rc, &rg, sizeof rc) && g[1].n == g[0].n && m[1].n == g[0].n && v[1].n == g[0].n;
            snprintf(what, sizeof what, "counts (%s, split_count %d)", sz->name, a.split_count);
            ok &= pt_report(same, c->label, stage, what, "equal (1=yes)", same, 1);
            if (same) {
                size_t M = (size_t)g[0].n, K3 = 3 * (size_t)g[0].K;
                double eq = pt_max_abs(g[1].quats, g[0].quats, M * 4), esh = pt_max_abs(g[1].sh, g[0].sh, M * K3);
                double em = pt_max_abs(g[1].means, g[0].means, M * 3);
                double els = pt_max_abs(g[1].log_scales, g[0].log_scales, M * 3);
                double eo = pt_max_abs(g[1].opacity_logits, g[0].opacity_logits, M);
                double emom = fmax(moments_diff(&m[1], &m[0]), moments_diff(&v[1], &v[0]));
                snprintf(what, sizeof what, "copied values and moments (%s, split_count %d)", sz->name, a.split_count);
                ok &= pt_report(eq == 0.0 && esh == 0.0 && emom == 0.0, c->label, stage, what, "max abs err",
                                fmax(fmax(eq, esh), emom), 0.0);
                snprintf(what, sizeof what, "means / log_scales / logits (%s, split_count %d)", sz->name, a.split_count);
                ok &= pt_report(em <= 1e-5 && els <= 1e-6 && eo <= 1e-5, c->label, stage, what, "max abs err",
                                fmax(fmax(em, els), eo), 1e-5);
            }
            snprintf(what, sizeof what, "(%s, split_count %d)", sz->name, a.split_count);
            ok &= check_finite(c, stage, what, pt_store_nonfinite(&g[1]) + pt_store_nonfinite(&m[1]) + pt_store_nonfinite(&v[1]));
            if (c->cfg.deterministic) {
                int rr = ops->refine(b, &g[2], &m[2], &v[2], acc, cnt, rad, &a, &r2);
                ok &= check_repeat(c, stage, what,
                                   rr == 0 && !memcmp(&rg, &r2, sizeof rg) && pt_stores_equal(&g[1], &g[2]) &&
                                       pt_stores_equal(&m[1], &m[2]) && pt_stores_equal(&v[1], &v[2]));
            }
        }
        free(acc), free(rad), free(cnt);
        sp_refine_stats_free(&st);
        for (int k = 0; k < 3; k++) sp_gaussians_free(&g[k]), sp_gaussians_free(&m[k]), sp_gaussians_free(&v[k]);
    }
    return ok;
}

#include "backend_ops_perf.h"
#include "backend_ops_steps.h"
#include "backend_ops_mcmc.h"
#include "backend_ops_sort.h"
#include "backend_ops_reorder.h"
#include "backend_ops_sparse.h"
#include "backend_ops_m16.h"

/* ---- the table of checks ---- */
typedef int (*stage_check_fn)(const tcase *, sp_backend *, const sp_stage_ops *, const size_case *, int);
typedef int (*step_check_fn)(const tcase *, sp_backend *);

/* Whether a stage table has the stage a check needs. */
static int has_stage(const sp_stage_ops *o, int stage) {
    const void *f[] = {(const void *)o->project, (const void *)o->bin, (const void *)o->rasterize,
                       (const void *)o->backward_raster, (const void *)o->project_back, (const void *)o->loss,
                       (const void *)o->adam, (const void *)o->refine};
    return f[stage] != NULL;
}

static const struct {
    const char *name;
    stage_check_fn stage; /* over every size, with the stage table */
    step_check_fn step;   /* through the backend's ops */
} k_checks[] = {
    {"project", check_project, NULL},
    {"bin", check_bin, NULL},
    {"rasterize", check_rasterize, NULL},
    {"backward_raster", check_backward_raster, NULL},
    {"project_back", check_project_back, NULL},
    {"loss", check_loss, NULL},
    {"adam", check_adam, NULL},
    {"refine", check_refine, NULL},
    {"render and train_step vs CPU stages", NULL, step_render_and_gradients},
    {"train_step loss over image shapes and alpha modes", NULL, step_loss_shapes},
    {"refine through the ops", NULL, step_refine_ops},
    {"training run and profile", NULL, step_train_and_profile},
    {"deterministic training repeats", NULL, step_deterministic_repeat},
    {"staged views train like uploaded views", NULL, step_staged_views},
    {"fused update matches split kernels", NULL, step_fused_update},
    {"mcmc stages and plans", NULL, step_mcmc},
    {"prune by blend weight", NULL, step_blend_weights_drop},
    {"evaluation scores on the device", NULL, step_score},
    {"sort on its own", NULL, step_sort},
    {"reorder (Morton order) as the host's", NULL, step_reorder},
    {"sparse Adam: the Gaussians in view take the whole update", NULL, step_sparse_in_view},
    {"SH moments in 16 bits follow the rule", NULL, step_moments16},
    {"16-bit moments through refine, mcmc and reorder", NULL, step_moments16_structure},
};
#define NUM_CHECKS ((int)(sizeof k_checks / sizeof *k_checks))
#define NUM_STAGE_CHECKS 8

/* The checks whose result depends on the antialias filter. */
static int projects(int ch) {
    return k_checks[ch].stage == check_project || k_checks[ch].stage == check_project_back ||
           k_checks[ch].step == step_render_and_gradients;
}

static void run_case(void **state) {
    const tcase *c = *state;
    const char *name = k_checks[c->check].name;
    if (c->kind && !c->kind->available()) {
        printf("%s: no device: skipped\n", c->kind->name);
        skip();
    }
    sp_backend *b = NULL;
    const sp_stage_ops *ops = c->host_ops;
    if (c->kind) {
        b = c->kind->create(&c->cfg);
        if (!b) fail_msg("%s: backend creation failed: %s", c->label, sp_last_error());
        ops = b->ops->stages;
    }
    int ok = 1;
    if (k_checks[c->check].stage) {
        if (!ops || !has_stage(ops, c->check)) {
            if (!c->kind) { /* a bare partial table: only what it has */
                printf("%s: no %s stage: skipped\n", c->label, name);
                skip();
            }
            ok = pt_report(0, c->label, name, "stage table", "missing (1=yes)", 1, 0);
        } else {
            for (int si = 0; si < NUM_SIZES; si++)
                if (!k_sizes[si].crafted ||
                    (k_sizes[si].crafted == 1 && (k_checks[c->check].stage == check_rasterize ||
                                                  k_checks[c->check].stage == check_backward_raster)) ||
                    (k_sizes[si].crafted == 2 && k_checks[c->check].stage == check_bin))
                    ok &= k_checks[c->check].stage(c, b, ops, &k_sizes[si], si);
        }
    } else {
        ok = k_checks[c->check].step(c, b);
    }
    if (b) b->ops->destroy(b);
    assert_true(ok);
}

/* "a|b|c" lists name. */
static int choice_listed(const char *choices, const char *name) {
    char *all = sp_strfmt("|%s|", choices), *one = sp_strfmt("|%s|", name);
    int found = strstr(all, one) != NULL;
    free(all), free(one);
    return found;
}

/* The kind table itself: unique names, cpu last and always there, each kind one of backend.kind's
 * choices; each kind with a device creates a backend of its name with a stage table (and MCMC ops
 * exactly when its row says so: refine.strategy = auto reads the row) and describes its device;
 * auto picks the first kind that wants it, and an unknown kind is an error that names it. */
static void test_kind_table(void **state) {
    (void)state;
    int nk;
    const sp_backend_kind *const *kinds = sp_backend_kinds(&nk);
    assert_true(nk >= 1);
    assert_string_equal(kinds[nk - 1]->name, "cpu");
    assert_true(kinds[nk - 1]->available());
    sp_backend_config cfg;
    memset(&cfg, 0, sizeof cfg);
    const char *auto_kind = NULL;
    for (int i = 0; i < nk; i++) {
        for (int j = 0; j < i; j++) assert_true(strcmp(kinds[i]->name, kinds[j]->name) != 0);
        assert_ptr_equal(sp_backend_find_kind(kinds[i]->name), kinds[i]);
        assert_true(choice_listed(sp_backend_kind_choices, kinds[i]->name));
        assert_non_null(kinds[i]->create);
        assert_non_null(kinds[i]->describe);
        int want = kinds[i]->auto_pick ? kinds[i]->auto_pick() : kinds[i]->available();
        if (!auto_kind && want) auto_kind = kinds[i]->name;
        if (!kinds[i]->available()) continue;
        sp_backend *b = sp_backend_create(kinds[i]->name, &cfg);
        if (!b) fail_msg("%s: %s", kinds[i]->name, sp_last_error());
        assert_string_equal(b->ops->name, kinds[i]->name);
        assert_non_null(b->ops->stages);
        assert_int_equal(kinds[i]->mcmc, b->ops->mcmc_read != NULL && b->ops->mcmc_apply != NULL);
        b->ops->destroy(b);
        char line[256];
        if (sp_backend_describe(kinds[i]->name, &cfg, line, sizeof line)) fail_msg("%s: %s", kinds[i]->name, line);
        tu_assert_contains(line, kinds[i]->name);
    }
    assert_ptr_equal(sp_backend_resolve_kind(auto_kind), sp_backend_find_kind(auto_kind));
    assert_string_equal(sp_backend_resolve_kind("auto")->name, auto_kind);
    sp_backend *b = sp_backend_create("auto", &cfg);
    assert_non_null(b);
    printf("PASS kinds: %d compiled in, auto picks %s\n", nk, b->ops->name);
    assert_string_equal(b->ops->name, auto_kind);
    b->ops->destroy(b);
    assert_null(sp_backend_create("no-such-kind", &cfg));
    tu_assert_contains(sp_last_error(), "unknown backend kind \"no-such-kind\"");
    assert_null(sp_backend_find_kind("no-such-kind"));
}

/* Every subset of the variant switches a kind honours, as configs. A kind that does not switch
 * deterministic mode on and off is deterministic if it is the CPU reference. */
static int variant_configs(const sp_backend_kind *k, sp_backend_config *out, char labels[][96]) {
    int n = 0;
    unsigned v = k->variants;
    for (unsigned s = 0; s < 8; s++) {
        if (s & ~v) continue;
        sp_backend_config cfg;
        memset(&cfg, 0, sizeof cfg);
        cfg.deterministic = (v & SP_VARIANT_DETERMINISTIC) ? !!(s & SP_VARIANT_DETERMINISTIC) : !k->gpu;
        cfg.cas_atomics = !!(s & SP_VARIANT_CAS_ATOMICS);
        snprintf(labels[n], 96, "%s[%s%s]", k->name, cfg.deterministic ? "deterministic" : "atomics",
                 cfg.cas_atomics ? ",cas_atomics" : "");
        out[n++] = cfg;
    }
    return n;
}

static int list_kinds(void) {
    int nk;
    const sp_backend_kind *const *kinds = sp_backend_kinds(&nk);
    for (int i = 0; i < nk; i++) {
        unsigned v = kinds[i]->variants;
        char vars[64] = "";
        if (v & SP_VARIANT_DETERMINISTIC) strcat(vars, ",deterministic");
        if (v & SP_VARIANT_CAS_ATOMICS) strcat(vars, ",cas_atomics");
        printf("%s %s %s %s\n", kinds[i]->name, kinds[i]->available() ? "device" : "no-device",
               kinds[i]->gpu ? "gpu" : "cpu", v ? vars + 1 : "-");
    }
    return 0;
}

int main(int argc, char **argv) {
    const char *only = NULL, *filter = NULL;
    int perf = 0, size = 0, steps = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--list")) return list_kinds();
        if (!strcmp(argv[i], "--perf")) perf = 1;
        else if (!strcmp(argv[i], "--backend") && i + 1 < argc) only = argv[++i];
        else if (!strcmp(argv[i], "--filter") && i + 1 < argc) filter = argv[++i];
        else if (!strcmp(argv[i], "--size") && i + 1 < argc) size = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--steps") && i + 1 < argc) steps = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: %s [--list] [--perf] [--backend KIND] [--filter GLOB] [--size N] [--steps S]\n",
                    argv[0]);
            return 2;
        }
    }
    if (only && !sp_backend_find_kind(only)) {
        fprintf(stderr, "%s: no backend kind \"%s\" in this build (--list shows them)\n", argv[0], only);
        return 2;
    }
    /* One Vulkan backend lives for the whole run: the Vulkan loader unloads the driver when its last
     * instance goes, and NVIDIA's driver takes glibc static TLS that is never given back, so some
     * forty loads in one process fail with "cannot allocate memory in static TLS block". */
    sp_backend *keep = NULL;
    const sp_backend_kind *vk = sp_backend_find_kind("vulkan");
    if (vk && (!only || !strcmp(only, "vulkan")) && vk->available()) {
        sp_backend_config kcfg = {0};
        keep = vk->create(&kcfg);
    }
    if (perf) {
        int prc = perf_main(only, size, steps);
        if (keep) keep->ops->destroy(keep);
        return prc;
    }

    const char *e = getenv("SPLAT_TEST_SEED");
    pt_seed = (e && *e) ? strtoull(e, NULL, 10) : (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 16);
    printf("parity seed %llu (SPLAT_TEST_SEED=%llu repeats this run)\n", (unsigned long long)pt_seed,
           (unsigned long long)pt_seed);

    int nk;
    const sp_backend_kind *const *kinds = sp_backend_kinds(&nk);
    size_t max_tests = (size_t)(nk + 1) * 9 * NUM_CHECKS + 2 * NUM_STAGE_CHECKS + 1;
    tcase *cases = sp_calloc(max_tests, sizeof *cases);
    struct CMUnitTest *tests = sp_calloc(max_tests, sizeof *tests);
    char **names = sp_calloc(max_tests, sizeof *names);
    int nt = 0;
    tests[nt++] = (struct CMUnitTest){"backend kind table", test_kind_table, NULL, NULL, NULL};
    for (int k = 0; k < nk; k++) {
        if (only && strcmp(only, kinds[k]->name)) continue;
        if (!kinds[k]->available()) { /* one skipped test says so */
            cases[nt].kind = kinds[k];
            snprintf(cases[nt].label, sizeof cases[nt].label, "%s", kinds[k]->name);
            names[nt] = sp_strfmt("%s: device", kinds[k]->name);
            tests[nt] = (struct CMUnitTest){names[nt], run_case, NULL, NULL, &cases[nt]};
            nt++;
            continue;
        }
        sp_backend_config cfgs[9];
        char labels[9][96];
        int nv = variant_configs(kinds[k], cfgs, labels);
        /* the antialias filter: the first variant again, for the checks that project */
        cfgs[nv] = cfgs[0];
        cfgs[nv].antialias = 1;
        char first[96];
        memcpy(first, labels[0], sizeof first);
        snprintf(labels[nv], sizeof labels[nv], "%.*s,antialias]", (int)strlen(first) - 1, first);
        nv++;
        for (int v = 0; v < nv; v++)
            for (int ch = 0; ch < NUM_CHECKS; ch++) {
                if (cfgs[v].antialias && !projects(ch)) continue;
                if ((k_checks[ch].step == step_deterministic_repeat || k_checks[ch].step == step_staged_views ||
                     k_checks[ch].step == step_fused_update || k_checks[ch].step == step_moments16) &&
                    !cfgs[v].deterministic)
                    continue;
                if (k_checks[ch].step == step_sort && v > 0) continue; /* no variant changes the sort */
                tcase *c = &cases[nt];
                c->kind = kinds[k];
                c->cfg = cfgs[v];
                c->check = ch;
                memcpy(c->label, labels[v], sizeof c->label);
                names[nt] = sp_strfmt("%s %s", labels[v], k_checks[ch].name);
                tests[nt] = (struct CMUnitTest){names[nt], run_case, NULL, NULL, c};
                nt++;
            }
    }
#ifdef SPLAT_HAVE_CUDA
    /* The CUDA kernels' per-Gaussian project / project_back code, run on the host: checks their
     * arithmetic on a machine without a GPU. */
    if (!only || !strcmp(only, "cuda"))
        for (int t = 0; t < 2 * NUM_STAGE_CHECKS; t++) { /* without, then with the antialias filter */
            int aa = t / NUM_STAGE_CHECKS, ch = t % NUM_STAGE_CHECKS;
            tcase *c = &cases[nt];
            c->host_ops = cuda_host_math_stages(aa);
            c->cfg.deterministic = 1;
            c->cfg.antialias = aa;
            c->check = ch;
            snprintf(c->label, sizeof c->label, "cuda-kernel-math-on-host%s", aa ? "[antialias]" : "");
            if (!has_stage(c->host_ops, ch)) continue;
            names[nt] = sp_strfmt("%s %s", c->label, k_checks[ch].name);
            tests[nt] = (struct CMUnitTest){names[nt], run_case, NULL, NULL, c};
            nt++;
        }
#endif
    if (filter) cmocka_set_test_filter(filter);
    int rc = _cmocka_run_group_tests("backend_ops", tests, (size_t)nt, NULL, NULL);
    printf("parity seed %llu: %d comparison(s) failed\n", (unsigned long long)pt_seed, pt_failures);
    for (int i = 0; i < nt; i++) free(names[i]);
    free(names), free(tests), free(cases);
    if (keep) keep->ops->destroy(keep);
    return rc;
}
