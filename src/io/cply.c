/* cply.c — PlayCanvas's compressed .ply (what splat-transform and SuperSplat write as
 * NAME.compressed.ply), read only. Binary little-endian, three elements:
 *   chunk   one per 256 Gaussians, float: min_x min_y min_z max_x max_y max_z, min_scale_x..z,
 *           max_scale_x..z (log scales) and, optionally, min_r min_g min_b max_r max_g max_b
 *           (base colour 0.5 + C0 f_dc)
 *   vertex  uint32 packed_position (x 11 bits, y 10, z 11, from the top: fractions of the
 *           chunk's range), packed_rotation (2-bit index of the largest component, then the other
 *           three in order, 10 bits each: sqrt(2)/2 q + 1/2; rot_0..3 order), packed_scale (as
 *           position, over the chunk's scale range), packed_color (R G B A bytes from the top:
 *           fractions of the chunk's colour range, or the colour itself without one; A =
 *           sigmoid(opacity))
 *   sh      optional, uchar f_rest_0..N-1 (N = 9, 24, 45; channel-major like the .ply):
 *           byte b is 8 (b + 1/2) / 256 - 4 (0 and 255 are the ends of the range, -4 and 4)
 * The .ply's axes, unchanged. Opacities of 0 and 255 are moved half a step inwards (they have
 * no finite logit), as for .splat. ply.c parses the header and hands it here. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "io/export.h"
#include "io/model_check.h"
#include "io/ply_internal.h"

enum { CHUNK = 256 };
static const char *const chunk_names[18] = {"min_x", "min_y", "min_z", "max_x", "max_y", "max_z",
                                            "min_scale_x", "min_scale_y", "min_scale_z", "max_scale_x",
                                            "max_scale_y", "max_scale_z", "min_r", "min_g", "min_b",
                                            "max_r", "max_g", "max_b"};
static const char *const vertex_names[4] = {"packed_position", "packed_rotation", "packed_scale", "packed_color"};

static const ply_elem *element(const ply_file *pf, const char *name) {
    for (int i = 0; i < pf->nelems; i++)
        if (!strcmp(pf->elems[i].name, name)) return &pf->elems[i];
    return NULL;
}

int sp_cply_detect(const ply_file *pf) {
    const ply_elem *v = element(pf, "vertex");
    return element(pf, "chunk") && v && sp_ply_find_prop(v, "packed_position") >= 0;
}

static uint32_t le32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static float le_float(const uint8_t *p) {
    uint32_t u = le32(p);
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* Byte offsets of the named properties of e (all of type t); -1 with the error set if one is
 * missing or of another type. */
static int offsets(const ply_file *pf, const ply_elem *e, const char *const *names, int n, ply_type t,
                   const char *type_name, int *off) {
    for (int j = 0; j < n; j++) {
        int p = sp_ply_find_prop(e, names[j]);
        if (p < 0) return sp_error("%s: compressed .ply: element '%s' has no property '%s'", pf->path, e->name, names[j]);
        if (e->props[p].type != t)
            return sp_error("%s:%d: compressed .ply: property '%s' must be %s", pf->path, e->props[p].line, names[j], type_name);
        off[j] = 0;
        for (int i = 0; i < p; i++) off[j] += sp_ply_type_size(e->props[i].type);
    }
    return 0;
}

static float lerp(float a, float b, float t) { return a * (1 - t) + b * t; }

int sp_cply_read_body(ply_file *pf, off_t file_size, sp_gaussians *g) {
    memset(g, 0, sizeof *g);
    const char *path = pf->path;
    if (pf->format != F_BLE) return sp_error("%s: a compressed .ply must be binary_little_endian", path);
    const ply_elem *ch = element(pf, "chunk"), *v = element(pf, "vertex"), *sh = element(pf, "sh");
    /* every element's place in the body (lists have no fixed size) */
    long long at = 0, start[3] = {-1, -1, -1}, stride[3] = {0, 0, 0};
    const ply_elem *want[3] = {ch, v, sh};
    for (int i = 0; i < pf->nelems; i++) {
        const ply_elem *e = &pf->elems[i];
        long long size = 0;
        for (int p = 0; p < e->nprops; p++) {
            if (e->props[p].is_list)
                return sp_error("%s:%d: compressed .ply: list property '%s' is not supported", path, e->props[p].line,
                                e->props[p].name);
            size += sp_ply_type_size(e->props[p].type);
        }
        for (int k = 0; k < 3; k++)
            if (want[k] == e) start[k] = at, stride[k] = size;
        if (size && e->count > (LLONG_MAX - at) / size) return sp_error("%s: element '%s' is too large", path, e->name);
        at += size * e->count;
    }
    long long n = v->count;
    if (n == 0) return sp_error("%s: the model has no Gaussians", path);
    if (n > INT_MAX / 2) return sp_error("%s:%d: too many vertices (%lld)", path, v->line, n);
    if (ch->count != (n + CHUNK - 1) / CHUNK)
        return sp_error("%s:%d: compressed .ply: %lld chunks for %lld vertices (expected %lld)", path, ch->line, ch->count,
                        n, (n + CHUNK - 1) / CHUNK);
    int coff[18], voff[4], soff[45], has_colour = sp_ply_find_prop(ch, "min_r") >= 0, nrest = 0;
    if (offsets(pf, ch, chunk_names, has_colour ? 18 : 12, T_F32, "float", coff) ||
        offsets(pf, v, vertex_names, 4, T_U32, "uint", voff))
        return -1;
    if (sh) {
        nrest = sh->nprops;
        if (nrest != 9 && nrest != 24 && nrest != 45)
            return sp_error("%s:%d: compressed .ply: %d SH properties: expected 9, 24 or 45", path, sh->line, nrest);
        if (sh->count != n)
            return sp_error("%s:%d: compressed .ply: %lld SH rows for %lld vertices", path, sh->line, sh->count, n);
        char names[45][16];
        const char *np[45];
        for (int j = 0; j < nrest; j++) snprintf(names[j], sizeof names[j], "f_rest_%d", j), np[j] = names[j];
        if (offsets(pf, sh, np, nrest, T_U8, "uchar", soff)) return -1;
    }
    off_t here = ftello(pf->f);
    long long avail = here >= 0 && file_size > here ? (long long)(file_size - here) : 0;
    if (at > avail)
        return sp_error("%s: compressed .ply: the header's elements need %lld bytes but the file has %lld after the "
                        "header (truncated?)", path, at, avail);
    uint8_t *body = sp_model_buffer(path, (size_t)(at > 0 ? at : 1), 1, "the compressed .ply");
    if (!body) return -1;
    if (fread(body, 1, (size_t)at, pf->f) != (size_t)at) {
        free(body);
        return sp_error("%s: read failed", path);
    }
    int degree = nrest == 45 ? 3 : nrest == 24 ? 2 : nrest == 9 ? 1 : 0;
    if (sp_model_alloc(path, g, (int)n, degree)) {
        free(body);
        return -1;
    }
    g->n = (int)n;
    int K = g->K, rest = K - 1;
    const float s = 0.70710678f * 2; /* undoes sqrt(2)/2 */
    for (long long i = 0; i < n; i++) {
        const uint8_t *c = body + start[0] + stride[0] * (i / CHUNK), *r = body + start[1] + stride[1] * i;
        float f[18];
        for (int j = 0; j < (has_colour ? 18 : 12); j++) f[j] = le_float(c + coff[j]);
        uint32_t pos = le32(r + voff[0]), rot = le32(r + voff[1]), scl = le32(r + voff[2]), col = le32(r + voff[3]);
        float pt[3] = {(pos >> 21) / 2047.0f, ((pos >> 11) & 1023) / 1023.0f, (pos & 2047) / 2047.0f};
        float st[3] = {(scl >> 21) / 2047.0f, ((scl >> 11) & 1023) / 1023.0f, (scl & 2047) / 2047.0f};
        for (int k = 0; k < 3; k++) {
            g->means[3 * i + k] = lerp(f[k], f[3 + k], pt[k]);
            g->log_scales[3 * i + k] = lerp(f[6 + k], f[9 + k], st[k]);
        }
        int big = (int)(rot >> 30);
        float *q = g->quats + 4 * i, sum = 0;
        for (int k = 0, shift = 20; k < 4; k++) {
            if (k == big) continue;
            q[k] = (((rot >> shift) & 1023) / 1023.0f - 0.5f) * s;
            sum += q[k] * q[k];
            shift -= 10;
        }
        q[big] = sqrtf(fmaxf(0, 1 - sum));
        float *d = g->sh + i * K * 3;
        for (int k = 0; k < 3; k++) {
            float t = ((col >> (24 - 8 * k)) & 255) / 255.0f;
            d[k] = ((has_colour ? lerp(f[12 + k], f[15 + k], t) : t) - 0.5f) / SP_SH_C0;
        }
        g->opacity_logits[i] = sp_logitf(sp_alpha_from_u8((uint8_t)(col & 255)));
        if (!sh) continue;
        const uint8_t *b = body + start[2] + stride[2] * i;
        for (int c3 = 0; c3 < 3; c3++)
            for (int k = 1; k <= rest; k++) {
                uint8_t byte = b[soff[c3 * rest + k - 1]];
                float u = byte == 0 ? 0 : byte == 255 ? 1 : (byte + 0.5f) / 256;
                d[3 * k + c3] = (u - 0.5f) * 8;
            }
    }
    free(body);
    return 0;
}
