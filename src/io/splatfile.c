/* splatfile.c — the .splat web format (32 bytes per Gaussian, layout in export.h): writer with the
 * size-times-opacity ordering web viewers expect, and a reader back into the Gaussian store. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "io/export.h"
#include "io/model_check.h"

enum { SPLAT_RECORD = 32 };

static uint8_t to_u8(float x) {
    float r = roundf(x);
    return (uint8_t)(r < 0 ? 0 : r > 255 ? 255 : r);
}

static void put_f32(uint8_t *p, float v) {
    uint32_t u;
    memcpy(&u, &v, 4);
    for (int k = 0; k < 4; k++) p[k] = (uint8_t)(u >> (8 * k));
}

static float get_f32(const uint8_t *p) {
    uint32_t u = 0;
    for (int k = 0; k < 4; k++) u |= (uint32_t)p[k] << (8 * k);
    float v;
    memcpy(&v, &u, 4);
    return v;
}

typedef struct {
    float key;
    int index;
} sort_item;

/* Largest key first; equal keys keep index order, so the output is deterministic. */
static int by_key_desc(const void *a, const void *b) {
    const sort_item *x = a, *y = b;
    if (x->key != y->key) return x->key > y->key ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

/* One Gaussian as a 32-byte record. */
static void pack_record(const sp_gaussians *g, int i, uint8_t *r) {
    for (int k = 0; k < 3; k++) put_f32(r + 4 * k, g->means[3 * (size_t)i + k]);
    for (int k = 0; k < 3; k++) put_f32(r + 12 + 4 * k, expf(g->log_scales[3 * (size_t)i + k]));
    const float *dc = g->sh + (size_t)i * g->K * 3;
    for (int c = 0; c < 3; c++) r[24 + c] = to_u8(255.0f * (0.5f + SP_SH_C0 * dc[c]));
    r[27] = to_u8(255.0f * sp_sigmoidf(g->opacity_logits[i]));
    const float *q = g->quats + 4 * (size_t)i;
    float norm = sqrtf(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
    for (int k = 0; k < 4; k++) r[28 + k] = norm > 0 ? to_u8(128.0f * q[k] / norm + 128.0f) : (k == 0 ? 255 : 128);
}

int sp_splat_write(const char *path, const sp_gaussians *g) {
    sort_item *order = SP_NEW(sort_item, g->n > 0 ? g->n : 1);
    for (int i = 0; i < g->n; i++) {
        const float *ls = g->log_scales + 3 * (size_t)i;
        order[i].key = expf(ls[0] + ls[1] + ls[2]) * sp_sigmoidf(g->opacity_logits[i]);
        order[i].index = i;
    }
    qsort(order, (size_t)g->n, sizeof *order, by_key_desc);
    size_t bytes = (size_t)g->n * SPLAT_RECORD;
    uint8_t *buf = sp_malloc(bytes ? bytes : 1);
    for (int j = 0; j < g->n; j++) pack_record(g, order[j].index, buf + (size_t)j * SPLAT_RECORD);
    int rc = sp_write_file_atomic(path, buf, bytes);
    free(buf);
    free(order);
    return rc;
}

int sp_splat_read(const char *path, sp_gaussians *g) {
    memset(g, 0, sizeof *g);
    char *data;
    size_t n;
    if (sp_model_read_bytes(path, &data, &n)) return -1;
    if (n == 0) {
        free(data);
        return sp_error("%s: the model has no Gaussians (empty .splat file)", path);
    }
    if (n % SPLAT_RECORD != 0) {
        free(data);
        return sp_error("%s: not a .splat file: %zu bytes is not a multiple of %d", path, n, SPLAT_RECORD);
    }
    if (n / SPLAT_RECORD > INT_MAX / 2) {
        free(data);
        return sp_error("%s: %zu Gaussians is more than this reader accepts", path, n / SPLAT_RECORD);
    }
    int count = (int)(n / SPLAT_RECORD);
    if (sp_model_alloc(path, g, count, 0)) {
        free(data);
        return -1;
    }
    g->n = count;
    const uint8_t *rec = (const uint8_t *)data;
    for (int i = 0; i < count; i++, rec += SPLAT_RECORD) {
        for (int k = 0; k < 3; k++) {
            float m = get_f32(rec + 4 * k), s = get_f32(rec + 12 + 4 * k);
            g->means[3 * (size_t)i + k] = m;
            /* a negative scale has no logarithm: NaN, refused by the shared check */
            g->log_scales[3 * (size_t)i + k] = s < 0 ? NAN : logf(s > 1e-30f ? s : 1e-30f);
        }
        for (int c = 0; c < 3; c++) g->sh[3 * (size_t)i + c] = (rec[24 + c] / 255.0f - 0.5f) / SP_SH_C0;
        g->opacity_logits[i] = sp_logitf(sp_alpha_from_u8(rec[27]));
        float q[4], norm = 0;
        for (int k = 0; k < 4; k++) {
            q[k] = (rec[28 + k] - 128.0f) / 128.0f;
            norm += q[k] * q[k];
        }
        norm = sqrtf(norm);
        for (int k = 0; k < 4; k++) g->quats[4 * (size_t)i + k] = norm > 0 ? q[k] / norm : 0.0f;
    }
    free(data);
    return sp_model_check(path, g);
}
