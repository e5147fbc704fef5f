/* raster.c — the tile stages on the CPU: emit_pairs + sort + tile_ranges (cpu_bin), rasterize and
 * backward_raster, plus the buffer helpers of stages.h.
 *
 * Determinism. cpu_bin fills each tile's list in Gaussian index order and then sorts it stably by
 * depth key (tile_cull.h), which equals a stable sort of the 64-bit keys. backward_raster never
 * adds one tile's contribution into another's: each tile accumulates its pixels (in row-major
 * order) into one gradient slot per (Gaussian, tile) pair, and a second loop sums every Gaussian's
 * slots in the order of its tiles (row-major over its rect; tiles it does not reach hold zeros).
 * The result is bit-identical for any thread count and any schedule. */
#include <stdlib.h>
#include <string.h>

#include "backend/ref/stages.h"
#include "backend/tile_cull.h"
#include "core/core.h"

#define SP_REAL float
#define SP_SUFFIX f
#include "backend/ref/stage_math.h"
#include "core/threads.h"

_Static_assert(SP_TILE * SP_TILE <= 256, "the tile functions of stage_math.h hold at most 256 pixels");

/* ---- buffers ---- */

/* Buffers scale with the scene: allocated fallibly (core.h); on failure what was allocated is
 * freed and the error says how much memory the Gaussian count needed. */
#define SCENE_HINT "lower refine.capacity"
#define IMAGE_HINT "raise data.downscale"

int sp_proj_alloc(sp_proj *p, int n) {
    size_t m = n > 0 ? (size_t)n : 1;
    memset(p, 0, sizeof *p);
    const char *w = "the projected Gaussians";
    if (!(p->mean2d = sp_try_alloc(2 * m, sizeof(float), w, SCENE_HINT)) ||
        !(p->conic = sp_try_alloc(3 * m, sizeof(float), w, SCENE_HINT)) ||
        !(p->depth = sp_try_alloc(m, sizeof(float), w, SCENE_HINT)) ||
        !(p->opacity = sp_try_alloc(m, sizeof(float), w, SCENE_HINT)) ||
        !(p->color = sp_try_alloc(3 * m, sizeof(float), w, SCENE_HINT)) ||
        !(p->rect = sp_try_alloc(4 * m, sizeof(int32_t), w, SCENE_HINT)) ||
        !(p->radius = sp_try_alloc(m, sizeof(float), w, SCENE_HINT)) ||
        !(p->clamped = sp_try_alloc(3 * m, sizeof(uint8_t), w, SCENE_HINT))) {
        sp_proj_free(p);
        return -1;
    }
    return 0;
}

void sp_proj_free(sp_proj *p) {
    free(p->mean2d);
    free(p->conic);
    free(p->depth);
    free(p->opacity);
    free(p->color);
    free(p->rect);
    free(p->radius);
    free(p->clamped);
    memset(p, 0, sizeof *p);
}

int sp_proj_grad_alloc(sp_proj_grad *g, int n) {
    size_t m = n > 0 ? (size_t)n : 1;
    memset(g, 0, sizeof *g);
    const char *w = "the projected gradients";
    if (!(g->mean2d = sp_try_alloc(2 * m, sizeof(float), w, SCENE_HINT)) ||
        !(g->conic = sp_try_alloc(3 * m, sizeof(float), w, SCENE_HINT)) ||
        !(g->opacity = sp_try_alloc(m, sizeof(float), w, SCENE_HINT)) ||
        !(g->color = sp_try_alloc(3 * m, sizeof(float), w, SCENE_HINT))) {
        sp_proj_grad_free(g);
        return -1;
    }
    return 0;
}

void sp_proj_grad_zero(sp_proj_grad *g, int n) {
    if (n <= 0) return;
    memset(g->mean2d, 0, sizeof(float) * 2 * (size_t)n);
    memset(g->conic, 0, sizeof(float) * 3 * (size_t)n);
    memset(g->opacity, 0, sizeof(float) * (size_t)n);
    memset(g->color, 0, sizeof(float) * 3 * (size_t)n);
}

void sp_proj_grad_free(sp_proj_grad *g) {
    free(g->mean2d);
    free(g->conic);
    free(g->opacity);
    free(g->color);
    memset(g, 0, sizeof *g);
}

int sp_raster_out_alloc(sp_raster_out *r, int w, int h) {
    size_t px = (size_t)w * (size_t)h;
    if (px == 0) px = 1;
    memset(r, 0, sizeof *r);
    const char *what = "the rendered image";
    if (!(r->rgb = sp_try_alloc(3 * px, sizeof(float), what, IMAGE_HINT)) ||
        !(r->final_T = sp_try_alloc(px, sizeof(float), what, IMAGE_HINT)) ||
        !(r->n_contrib = sp_try_alloc(px, sizeof(int32_t), what, IMAGE_HINT))) {
        sp_raster_out_free(r);
        return -1;
    }
    return 0;
}

void sp_raster_out_free(sp_raster_out *r) {
    free(r->rgb);
    free(r->final_T);
    free(r->n_contrib);
    memset(r, 0, sizeof *r);
}

void sp_bins_free(sp_bins *b) {
    free(b->ids);
    free(b->range);
    memset(b, 0, sizeof *b);
}

/* ---- emit_pairs + sort + tile_ranges ---- */

static inline int rect_visible(const int32_t *r) { return r[0] < r[2] && r[1] < r[3]; }

/* Gaussian i as the tile test (tile_cull.h) sees it. */
static inline sp_tile_ellipse_t tile_ellipse(const sp_proj *proj, int i) {
    const float *m = proj->mean2d + 2 * (size_t)i, *c = proj->conic + 3 * (size_t)i;
    return sp_tile_ellipse(m[0], m[1], c[0], c[1], c[2], proj->opacity[i]);
}

/* Stable sort of ids[0..n) by key[0..n) (ids arrive in ascending index order, so ties keep index
 * order). LSD radix over the 32 key bits, insertion sort for short lists. tk, ti: scratch of n. */
static void sort_tile(uint32_t *key, uint32_t *ids, int64_t n, uint32_t *tk, uint32_t *ti) {
    if (n <= 48) {
        for (int64_t i = 1; i < n; i++) {
            uint32_t k = key[i], v = ids[i];
            int64_t j = i - 1;
            while (j >= 0 && key[j] > k) {
                key[j + 1] = key[j];
                ids[j + 1] = ids[j];
                j--;
            }
            key[j + 1] = k;
            ids[j + 1] = v;
        }
        return;
    }
    uint32_t *sk = key, *si = ids, *dk = tk, *di = ti;
    for (int shift = 0; shift < 32; shift += 8) {
        int64_t cnt[256] = {0};
        for (int64_t i = 0; i < n; i++) cnt[(sk[i] >> shift) & 255]++;
        if (cnt[(sk[0] >> shift) & 255] == n) continue; /* all equal in this digit */
        int64_t sum = 0;
        for (int b = 0; b < 256; b++) {
            int64_t c = cnt[b];
            cnt[b] = sum;
            sum += c;
        }
        for (int64_t i = 0; i < n; i++) {
            int64_t o = cnt[(sk[i] >> shift) & 255]++;
            dk[o] = sk[i];
            di[o] = si[i];
        }
        uint32_t *t;
        t = sk, sk = dk, dk = t;
        t = si, si = di, di = t;
    }
    if (si != ids) memcpy(ids, si, sizeof(uint32_t) * (size_t)n);
}

/* emit_pairs over the k-th of K index ranges of the Gaussians, in index order: without ids, adds
 * each reached tile's count into c[tile]; with ids, writes each Gaussian into its tiles' slots at
 * the cursors c[tile] and moves them on. */
static void emit_range(const sp_proj *proj, int n, int K, int k, int tx, int64_t *c, uint32_t *ids) {
    for (int i = (int)((int64_t)n * k / K), i1 = (int)((int64_t)n * (k + 1) / K); i < i1; i++) {
        const int32_t *r = proj->rect + 4 * i;
        if (!rect_visible(r)) continue;
        sp_tile_ellipse_t e = tile_ellipse(proj, i);
        for (int y = r[1]; y < r[3]; y++)
            for (int x = r[0]; x < r[2]; x++) {
                if (!sp_tile_hit(&e, x, y)) continue;
                if (ids) ids[c[y * tx + x]++] = (uint32_t)i;
                else c[y * tx + x]++;
            }
    }
}

int cpu_bin(const sp_proj *proj, int n, const sp_camera *cam, sp_bins *bins) {
    const int tx = (cam->width + SP_TILE - 1) / SP_TILE, ty = (cam->height + SP_TILE - 1) / SP_TILE;
    const int tiles = tx * ty;
    bins->tiles_x = tx;
    bins->tiles_y = ty;
    uint32_t *range = sp_try_realloc(bins->range, 2 * (size_t)(tiles > 0 ? tiles : 1), sizeof(uint32_t),
                                     "the tile ranges", IMAGE_HINT);
    if (!range) return -1;
    bins->range = range;
    /* emit_pairs in K index ranges of the Gaussians at once (each range by one thread): counts per
     * (range, tile), cursors from a prefix over tiles then ranges, and each range fills its tiles'
     * slots in index order, so every tile's list starts sorted by index whatever the thread count */
    const int K = sp_maxi(1, sp_mini(sp_mini(sp_omp_threads(), 64), n / 1024));
    int64_t *cur = sp_try_alloc((size_t)K * tiles + 1, sizeof(int64_t), "the tile counts", IMAGE_HINT);
    if (!cur) return -1;
#pragma omp parallel for schedule(static, 1) if (K > 1) num_threads(K)
    for (int k = 0; k < K; k++) emit_range(proj, n, K, k, tx, cur + (size_t)k * tiles, NULL);
    int64_t total = 0, maxlen = 0;
    for (int t = 0; t < tiles; t++) {
        bins->range[2 * t] = (uint32_t)total;
        int64_t first = total;
        for (int k = 0; k < K; k++) {
            int64_t c = cur[(size_t)k * tiles + t];
            cur[(size_t)k * tiles + t] = total;
            total += c;
        }
        if (total - first > maxlen) maxlen = total - first;
        bins->range[2 * t + 1] = (uint32_t)total;
    }
    bins->num_pairs = total;
    if (total > bins->cap) {
        int64_t cap = total + total / 4 + 1024;
        free(bins->ids);
        bins->cap = 0;
        char what[96];
        snprintf(what, sizeof what, "the tile lists (%lld Gaussian-tile pairs)", (long long)total);
        bins->ids = sp_try_alloc((size_t)cap, sizeof(uint32_t), what, SCENE_HINT " or raise data.downscale");
        if (!bins->ids) {
            free(cur);
            return -1;
        }
        bins->cap = cap;
    }
#pragma omp parallel for schedule(static, 1) if (K > 1) num_threads(K)
    for (int k = 0; k < K; k++) emit_range(proj, n, K, k, tx, cur + (size_t)k * tiles, bins->ids);
    free(cur);

    /* sort: each tile by depth, stable */
#pragma omp parallel if (total > 4096) num_threads(sp_omp_threads())
    {
        uint32_t *scratch = sp_malloc(sizeof(uint32_t) * 3 * (size_t)(maxlen > 0 ? maxlen : 1));
        uint32_t *key = scratch, *tk = scratch + maxlen, *ti = scratch + 2 * maxlen;
#pragma omp for schedule(dynamic, 1)
        for (int t = 0; t < tiles; t++) {
            int64_t s = bins->range[2 * t], e = bins->range[2 * t + 1];
            uint32_t *ids = bins->ids + s;
            for (int64_t k = 0; k < e - s; k++) key[k] = sp_depth_key(proj->depth[ids[k]]);
            sort_tile(key, ids, e - s, tk, ti);
        }
        free(scratch);
    }
    return 0;
}

/* ---- rasterize ---- */

static int64_t max_tile_len(const sp_bins *bins) {
    int64_t m = 0;
    for (int t = 0; t < bins->tiles_x * bins->tiles_y; t++) {
        int64_t l = (int64_t)bins->range[2 * t + 1] - bins->range[2 * t];
        if (l > m) m = l;
    }
    return m;
}

static inline void load_splat(const sp_proj *p, uint32_t id, sp_msplat_f *s) {
    s->x = p->mean2d[2 * id];
    s->y = p->mean2d[2 * id + 1];
    s->a = p->conic[3 * id];
    s->b = p->conic[3 * id + 1];
    s->c = p->conic[3 * id + 2];
    s->op = p->opacity[id];
    s->col[0] = p->color[3 * id];
    s->col[1] = p->color[3 * id + 1];
    s->col[2] = p->color[3 * id + 2];
    s->pmin = sp_m_splat_pmin_f(s->op);
}

/* 1 + the largest Gaussian index in the lists (0 for none). */
static int listed_count(const sp_bins *bins) {
    int n = 0;
#pragma omp parallel for schedule(static) reduction(max : n) num_threads(sp_omp_threads())
    for (int64_t k = 0; k < bins->num_pairs; k++)
        if ((int)bins->ids[k] + 1 > n) n = (int)bins->ids[k] + 1;
    return n;
}

/* rec[i] = Gaussian i's splat (load_splat) for every i < n with a visible rect (the others are in
 * no list): the tile loops then gather one record per pair, not four arrays' entries and a log.
 * A work-shared loop: called by every thread of a parallel region. */
static void splat_records(const sp_proj *proj, int n, sp_msplat_f *rec) {
#pragma omp for schedule(static)
    for (int i = 0; i < n; i++)
        if (rect_visible(proj->rect + 4 * (size_t)i)) load_splat(proj, (uint32_t)i, &rec[i]);
}

/* The forward pass over every tile; with pair_w (num_pairs entries) each pair's blending weight
 * summed over its tile's pixels. */
static void raster_tiles(const sp_proj *proj, const sp_bins *bins, const sp_camera *cam, const float bg[3],
                         sp_raster_out *out, float *pair_w) {
    const int W = cam->width, H = cam->height, tx = bins->tiles_x, tiles = bins->tiles_x * bins->tiles_y;
    const int64_t maxlen = max_tile_len(bins);
    const int count = listed_count(bins);
    sp_msplat_f *rec = sp_malloc(sizeof(sp_msplat_f) * (size_t)(count > 0 ? count : 1));
#pragma omp parallel num_threads(sp_omp_threads())
    {
        sp_msplat_f *buf = sp_malloc(sizeof(sp_msplat_f) * (size_t)(maxlen > 0 ? maxlen : 1));
        splat_records(proj, count, rec);
#pragma omp for schedule(dynamic, 1)
        for (int t = 0; t < tiles; t++) {
            const uint32_t s = bins->range[2 * t], n = bins->range[2 * t + 1] - s;
            for (uint32_t j = 0; j < n; j++) buf[j] = rec[bins->ids[s + j]];
            const int x0 = (t % tx) * SP_TILE, y0 = (t / tx) * SP_TILE;
            const int tw = sp_mini(SP_TILE, W - x0), th = sp_mini(SP_TILE, H - y0);
            float rgb[SP_TILE * SP_TILE * 3], T[SP_TILE * SP_TILE];
            int32_t nc[SP_TILE * SP_TILE];
            if (pair_w) memset(pair_w + s, 0, sizeof(float) * n);
            sp_m_raster_tile_f(buf, (int)n, x0, y0, tw, th, bg, rgb, T, nc, pair_w ? pair_w + s : NULL);
            if (!out) continue;
            for (int ly = 0; ly < th; ly++) {
                size_t pix = (size_t)(y0 + ly) * W + x0;
                memcpy(out->rgb + 3 * pix, rgb + 3 * ly * tw, sizeof(float) * 3 * tw);
                memcpy(out->final_T + pix, T + ly * tw, sizeof(float) * tw);
                memcpy(out->n_contrib + pix, nc + ly * tw, sizeof(int32_t) * tw);
            }
        }
        free(buf);
    }
    free(rec);
}

void cpu_rasterize(const sp_proj *proj, const sp_bins *bins, const sp_camera *cam, const float bg[3],
                   sp_raster_out *out) {
    raster_tiles(proj, bins, cam, bg, out, NULL);
}

int cpu_blend_weights(const sp_proj *proj, const sp_bins *bins, const sp_camera *cam, float *weight) {
    float *pair_w = sp_try_alloc((size_t)(bins->num_pairs > 0 ? bins->num_pairs : 1), sizeof(float),
                                 "blend weights", NULL);
    if (!pair_w) return -1;
    const float bg[3] = {0, 0, 0};
    raster_tiles(proj, bins, cam, bg, NULL, pair_w);
    /* tile-major order: the same sums for any thread count */
    for (int64_t p = 0; p < bins->num_pairs; p++) weight[bins->ids[p]] += pair_w[p];
    free(pair_w);
    return 0;
}

int cpu_blend_weights_views(const sp_params *p, int antialias, const sp_camera *cams, int count, sp_proj *proj,
                            sp_bins *bins, float *weight) {
    memset(weight, 0, (size_t)p->n * sizeof(float));
    int rc = 0;
    for (int c = 0; c < count && rc == 0; c++) {
        cpu_project_aa(p, &cams[c], 0, antialias, proj); /* SH degree 0: colours do not matter */
        rc = cpu_bin(proj, p->n, &cams[c], bins);
        if (rc == 0) rc = cpu_blend_weights(proj, bins, &cams[c], weight);
    }
    return rc;
}

/* ---- backward_raster ---- */

void cpu_backward_raster(const sp_proj *proj, const sp_bins *bins, const sp_camera *cam, const float bg[3],
                         const sp_raster_out *fwd, const float *dl_drgb, sp_proj_grad *g) {
    const int W = cam->width, H = cam->height, tx = bins->tiles_x, tiles = bins->tiles_x * bins->tiles_y;
    const int64_t np = bins->num_pairs;
    if (np == 0) return;
    /* n = 1 + largest index in the lists; pairs of Gaussian i are slots goff[i] .. goff[i+1] */
    const int n = listed_count(bins);
    int64_t *goff = SP_NEW(int64_t, (size_t)n + 1);
    /* Gaussian i's slot of tile (tx, ty) is at[i].base + ty * at[i].w + tx: one gather per pair */
    struct {
        int64_t base;
        int64_t w;
    } *at = sp_malloc(sizeof *at * (size_t)(n > 0 ? n : 1));
#pragma omp parallel for schedule(static) num_threads(sp_omp_threads())
    for (int i = 0; i < n; i++) {
        const int32_t *r = proj->rect + 4 * i;
        int vis = rect_visible(r);
        goff[i + 1] = vis ? (int64_t)(r[2] - r[0]) * (r[3] - r[1]) : 0;
        at[i].w = vis ? r[2] - r[0] : 0;
    }
    for (int i = 0; i < n; i++) goff[i + 1] += goff[i];
    /* one slot per tile of each rect; tiles the Gaussian does not reach (tile_cull.h) stay zero */
    sp_msplat_f *slots = sp_calloc((size_t)(goff[n] > 0 ? goff[n] : 1), sizeof(sp_msplat_f));
    const int64_t maxlen = max_tile_len(bins);
    sp_msplat_f *rec = sp_malloc(sizeof(sp_msplat_f) * (size_t)n);

#pragma omp parallel num_threads(sp_omp_threads())
    {
        sp_msplat_f *buf = sp_malloc(sizeof(sp_msplat_f) * 2 * (size_t)(maxlen > 0 ? maxlen : 1));
        sp_msplat_f *acc = buf + maxlen;
        splat_records(proj, n, rec);
#pragma omp for schedule(static)
        for (int i = 0; i < n; i++) at[i].base = goff[i] - (int64_t)proj->rect[4 * i + 1] * at[i].w - proj->rect[4 * i];
#pragma omp for schedule(dynamic, 1)
        for (int t = 0; t < tiles; t++) {
            const uint32_t s = bins->range[2 * t], n_t = bins->range[2 * t + 1] - s;
            if (n_t == 0) continue;
            const int tile_x = t % tx, tile_y = t / tx;
            const int x0 = tile_x * SP_TILE, y0 = tile_y * SP_TILE;
            const int tw = sp_mini(SP_TILE, W - x0), th = sp_mini(SP_TILE, H - y0);
            float G[SP_TILE * SP_TILE * 3], T[SP_TILE * SP_TILE];
            int32_t nc[SP_TILE * SP_TILE], used = 0; /* list positions >= max n_contrib get nothing */
            for (int ly = 0; ly < th; ly++) {
                size_t pix = (size_t)(y0 + ly) * W + x0;
                memcpy(G + 3 * ly * tw, dl_drgb + 3 * pix, sizeof(float) * 3 * tw);
                memcpy(T + ly * tw, fwd->final_T + pix, sizeof(float) * tw);
                memcpy(nc + ly * tw, fwd->n_contrib + pix, sizeof(int32_t) * tw);
            }
            for (int p = 0; p < tw * th; p++) used = sp_maxi(used, nc[p]);
            for (int32_t j = 0; j < used; j++) buf[j] = rec[bins->ids[s + j]];
            sp_m_raster_tile_back_f(buf, (int)n_t, x0, y0, tw, th, bg, T, nc, G, acc);
            for (uint32_t j = 0; j < n_t; j++) {
                uint32_t id = bins->ids[s + j];
                slots[at[id].base + tile_y * at[id].w + tile_x] = acc[j];
            }
        }
        free(buf);

        /* fixed-order reduction per Gaussian */
#pragma omp for schedule(static)
        for (int i = 0; i < n; i++) {
            if (goff[i + 1] == goff[i]) continue;
            sp_msplat_f sum = slots[goff[i]];
            for (int64_t k = goff[i] + 1; k < goff[i + 1]; k++) {
                const sp_msplat_f *q = &slots[k];
                sum.x += q->x;
                sum.y += q->y;
                sum.a += q->a;
                sum.b += q->b;
                sum.c += q->c;
                sum.op += q->op;
                sum.col[0] += q->col[0];
                sum.col[1] += q->col[1];
                sum.col[2] += q->col[2];
            }
            g->mean2d[2 * i] += sum.x;
            g->mean2d[2 * i + 1] += sum.y;
            g->conic[3 * i] += sum.a;
            g->conic[3 * i + 1] += sum.b;
            g->conic[3 * i + 2] += sum.c;
            g->opacity[i] += sum.op;
            g->color[3 * i] += sum.col[0];
            g->color[3 * i + 1] += sum.col[1];
            g->color[3 * i + 2] += sum.col[2];
        }
    }
    free(slots);
    free(goff);
    free(at);
    free(rec);
}
