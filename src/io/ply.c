/* ply.c — reading and writing the standard 3DGS .ply (see ply.h for the layout).
 *
 * The writer always produces binary little-endian floats in the canonical property order. The
 * reader parses the header into elements and typed properties, maps the properties it needs by
 * name, skips any elements before `vertex`, then streams the vertex records (binary in chunks,
 * ascii line by line) into the Gaussian store, transposing f_rest from channel-major to our
 * coefficient-major sh[N][K][3]. A header in PlayCanvas's compressed layout (a `chunk` element,
 * packed vertices) is handed to cply.c. */
#include "io/ply.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "io/model_check.h"
#include "io/ply_internal.h"

/* ---- byte order ---- */
static int host_is_le(void) {
    const uint16_t one = 1;
    uint8_t b;
    memcpy(&b, &one, 1);
    return b == 1;
}

static void swap_bytes(uint8_t *p, int n) {
    for (int i = 0; i < n / 2; i++) {
        uint8_t t = p[i];
        p[i] = p[n - 1 - i];
        p[n - 1 - i] = t;
    }
}

/* ---- writing ---- */
/* Canonical property names for K SH coefficients, in file order; returns the count. */
static int canonical_names(int K, char names[][24]) {
    int n = 0;
    static const char *head[] = {"x", "y", "z", "nx", "ny", "nz", "f_dc_0", "f_dc_1", "f_dc_2"};
    static const char *tail[] = {"opacity", "scale_0", "scale_1", "scale_2", "rot_0", "rot_1", "rot_2", "rot_3"};
    for (size_t i = 0; i < sizeof head / sizeof *head; i++) snprintf(names[n++], 24, "%s", head[i]);
    for (int i = 0; i < 3 * (K - 1); i++) snprintf(names[n++], 24, "f_rest_%d", i);
    for (size_t i = 0; i < sizeof tail / sizeof *tail; i++) snprintf(names[n++], 24, "%s", tail[i]);
    return n;
}

/* One Gaussian as floats in canonical order. */
static void pack_vertex(const sp_gaussians *g, int i, float *v) {
    int K = g->K, n = 0;
    const float *sh = g->sh + (size_t)i * K * 3;
    for (int k = 0; k < 3; k++) v[n++] = g->means[3 * (size_t)i + k];
    for (int k = 0; k < 3; k++) v[n++] = 0.0f; /* normals */
    for (int c = 0; c < 3; c++) v[n++] = sh[c];
    for (int c = 0; c < 3; c++)
        for (int k = 1; k < K; k++) v[n++] = sh[k * 3 + c];
    v[n++] = g->opacity_logits[i];
    for (int k = 0; k < 3; k++) v[n++] = g->log_scales[3 * (size_t)i + k];
    for (int k = 0; k < 4; k++) v[n++] = g->quats[4 * (size_t)i + k];
}

int sp_ply_write(const char *path, const sp_gaussians *g) {
    int K = g->K;
    if (K != sp_sh_coeffs(g->sh_degree) || g->sh_degree < 0 || g->sh_degree > 3)
        return sp_error("%s: cannot write SH degree %d (K = %d)", path, g->sh_degree, K);
    char names[64][24];
    int nprops = canonical_names(K, names);
    sp_afile af;
    if (sp_afile_open(&af, path)) return -1;
    fprintf(af.f, "ply\nformat binary_little_endian 1.0\nelement vertex %d\n", g->n);
    for (int p = 0; p < nprops; p++) fprintf(af.f, "property float %s\n", names[p]);
    fputs("end_header\n", af.f);

    enum { CHUNK = 4096 };
    float *buf = sp_malloc((size_t)CHUNK * nprops * sizeof(float));
    int le = host_is_le();
    for (int i0 = 0; i0 < g->n; i0 += CHUNK) {
        int m = sp_mini(CHUNK, g->n - i0);
        for (int i = 0; i < m; i++) pack_vertex(g, i0 + i, buf + (size_t)i * nprops);
        if (!le)
            for (size_t j = 0; j < (size_t)m * nprops; j++) swap_bytes((uint8_t *)(buf + j), 4);
        if (fwrite(buf, sizeof(float) * nprops, (size_t)m, af.f) != (size_t)m) {
            free(buf);
            int rc = sp_error("%s: write failed: %s", path, strerror(errno));
            sp_afile_abort(&af);
            return rc;
        }
    }
    free(buf);
    return sp_afile_commit(&af);
}

/* ---- reading: header ---- */
/* Bounds on a header (a 3DGS file has one or two elements and at most 62 properties): they keep
 * the header checks (duplicate names) cheap on hostile files. */
#define MAX_ELEMS 256
#define MAX_PROPS 1024

static const struct {
    const char *name;
    ply_type type;
} type_names[] = {
    {"char", T_I8},   {"int8", T_I8},     {"uchar", T_U8},   {"uint8", T_U8},     {"short", T_I16},
    {"int16", T_I16}, {"ushort", T_U16},  {"uint16", T_U16}, {"int", T_I32},      {"int32", T_I32},
    {"uint", T_U32},  {"uint32", T_U32},  {"float", T_F32},  {"float32", T_F32},  {"double", T_F64},
    {"float64", T_F64},
};

static ply_type parse_type(const char *s) {
    for (size_t i = 0; i < sizeof type_names / sizeof *type_names; i++)
        if (!strcmp(s, type_names[i].name)) return type_names[i].type;
    return T_NONE;
}

int sp_ply_type_size(ply_type t) {
    switch (t) {
    case T_I8: case T_U8: return 1;
    case T_I16: case T_U16: return 2;
    case T_I32: case T_U32: case T_F32: return 4;
    case T_F64: return 8;
    default: return 0;
    }
}

static void free_header(ply_file *pf) {
    for (int i = 0; i < pf->nelems; i++) free(pf->elems[i].props);
    free(pf->elems);
    pf->elems = NULL;
    pf->nelems = 0;
}

/* Reads one '\n'-terminated line (the '\n' and a '\r' before it removed). Returns 0, 1 at end of
 * file, or -1 (error set) for an overlong line. */
static int read_line(ply_file *pf, char *buf, size_t cap) {
    if (!fgets(buf, (int)cap, pf->f)) return 1;
    pf->line++;
    size_t n = strlen(buf);
    if (n == cap - 1 && buf[n - 1] != '\n' && !feof(pf->f))
        return sp_error("%s:%d: line too long", pf->path, pf->line);
    if (n && buf[n - 1] == '\n') buf[--n] = 0;
    if (n && buf[n - 1] == '\r') buf[--n] = 0;
    return 0;
}

static int parse_header(ply_file *pf) {
    char line[1024];
    int rc = read_line(pf, line, sizeof line);
    if (rc != 0 || strcmp(line, "ply") != 0) return sp_error("%s: not a PLY file", pf->path);
    int have_format = 0;
    for (;;) {
        rc = read_line(pf, line, sizeof line);
        if (rc < 0) return -1;
        if (rc > 0) return sp_error("%s: header has no end_header", pf->path);
        if (pf->line > 100000) return sp_error("%s: header too long", pf->path);
        char *save = NULL;
        char *kw = strtok_r(line, " \t", &save);
        if (!kw) continue;
        if (!strcmp(kw, "end_header")) break;
        if (!strcmp(kw, "comment") || !strcmp(kw, "obj_info")) continue;
        if (!strcmp(kw, "format")) {
            char *fmt = strtok_r(NULL, " \t", &save), *ver = strtok_r(NULL, " \t", &save);
            if (!fmt || !ver) return sp_error("%s:%d: incomplete format line", pf->path, pf->line);
            if (!strcmp(fmt, "ascii"))
                pf->format = F_ASCII;
            else if (!strcmp(fmt, "binary_little_endian"))
                pf->format = F_BLE;
            else if (!strcmp(fmt, "binary_big_endian"))
                pf->format = F_BBE;
            else
                return sp_error("%s:%d: unknown format '%s'", pf->path, pf->line, fmt);
            if (strcmp(ver, "1.0") != 0)
                return sp_error("%s:%d: unsupported PLY version '%s'", pf->path, pf->line, ver);
            have_format = 1;
        } else if (!strcmp(kw, "element")) {
            char *name = strtok_r(NULL, " \t", &save), *count = strtok_r(NULL, " \t", &save);
            char *end = NULL;
            long long c = count ? strtoll(count, &end, 10) : -1;
            if (!name || !count || *end || c < 0 || strtok_r(NULL, " \t", &save))
                return sp_error("%s:%d: bad element line (expected 'element NAME COUNT')", pf->path, pf->line);
            if (pf->nelems == MAX_ELEMS)
                return sp_error("%s:%d: more than %d elements", pf->path, pf->line, MAX_ELEMS);
            pf->elems = sp_realloc(pf->elems, (size_t)(pf->nelems + 1) * sizeof *pf->elems);
            ply_elem *e = &pf->elems[pf->nelems++];
            memset(e, 0, sizeof *e);
            snprintf(e->name, sizeof e->name, "%s", name);
            e->count = c;
            e->line = pf->line;
        } else if (!strcmp(kw, "property")) {
            if (!pf->nelems) return sp_error("%s:%d: property before any element", pf->path, pf->line);
            ply_elem *e = &pf->elems[pf->nelems - 1];
            char *t = strtok_r(NULL, " \t", &save);
            int is_list = t && !strcmp(t, "list");
            if (is_list) {
                char *ct = strtok_r(NULL, " \t", &save);
                if (ct && parse_type(ct) == T_NONE)
                    return sp_error("%s:%d: unknown property type '%s'", pf->path, pf->line, ct);
                t = strtok_r(NULL, " \t", &save);
            }
            char *name = strtok_r(NULL, " \t", &save);
            if (!t || !name || strtok_r(NULL, " \t", &save))
                return sp_error("%s:%d: bad property line (expected 'property TYPE NAME')", pf->path, pf->line);
            ply_type ty = parse_type(t);
            if (ty == T_NONE) return sp_error("%s:%d: unknown property type '%s'", pf->path, pf->line, t);
            if (e->nprops == MAX_PROPS)
                return sp_error("%s:%d: element '%s' has more than %d properties", pf->path, pf->line, e->name, MAX_PROPS);
            for (int i = 0; i < e->nprops; i++)
                if (!strcmp(e->props[i].name, name))
                    return sp_error("%s:%d: duplicate property '%s'", pf->path, pf->line, name);
            e->props = sp_realloc(e->props, (size_t)(e->nprops + 1) * sizeof *e->props);
            ply_prop *p = &e->props[e->nprops++];
            memset(p, 0, sizeof *p);
            snprintf(p->name, sizeof p->name, "%s", name);
            p->type = ty;
            p->is_list = is_list;
            p->line = pf->line;
        } else {
            return sp_error("%s:%d: unknown header keyword '%s'", pf->path, pf->line, kw);
        }
    }
    if (!have_format) return sp_error("%s: header has no format line", pf->path);
    return 0;
}

/* ---- reading: body ---- */
/* Binary value of type t at p as float (floats bit-exact). */
static float bin_value(const uint8_t *p, ply_type t, int swap) {
    uint8_t b[8];
    int n = sp_ply_type_size(t);
    memcpy(b, p, (size_t)n);
    if (swap) swap_bytes(b, n);
    switch (t) {
    case T_I8: return (float)(int8_t)b[0];
    case T_U8: return (float)b[0];
    case T_I16: { int16_t v; memcpy(&v, b, 2); return (float)v; }
    case T_U16: { uint16_t v; memcpy(&v, b, 2); return (float)v; }
    case T_I32: { int32_t v; memcpy(&v, b, 4); return (float)v; }
    case T_U32: { uint32_t v; memcpy(&v, b, 4); return (float)v; }
    case T_F32: { float v; memcpy(&v, b, 4); return v; }
    case T_F64: { double v; memcpy(&v, b, 8); return (float)v; }
    default: return 0.0f;
    }
}

/* Where each destination float of a Gaussian comes from: property index per slot. Slots in
 * order: x y z, dc0..2, rest[0..3(K-1)) channel-major, opacity, scale0..2, rot0..3. */
typedef struct {
    int K;
    int nslots;
    int slot_prop[64];
} ply_map;

static void store_vertex(sp_gaussians *g, int i, const ply_map *m, const float *vals) {
    int K = m->K, s = 0;
    float *sh = g->sh + (size_t)i * K * 3;
    for (int k = 0; k < 3; k++) g->means[3 * (size_t)i + k] = vals[m->slot_prop[s++]];
    for (int c = 0; c < 3; c++) sh[c] = vals[m->slot_prop[s++]];
    for (int c = 0; c < 3; c++)
        for (int k = 1; k < K; k++) sh[k * 3 + c] = vals[m->slot_prop[s++]];
    g->opacity_logits[i] = vals[m->slot_prop[s++]];
    for (int k = 0; k < 3; k++) g->log_scales[3 * (size_t)i + k] = vals[m->slot_prop[s++]];
    for (int k = 0; k < 4; k++) g->quats[4 * (size_t)i + k] = vals[m->slot_prop[s++]];
}

int sp_ply_find_prop(const ply_elem *e, const char *name) {
    for (int i = 0; i < e->nprops; i++)
        if (!strcmp(e->props[i].name, name)) return i;
    return -1;
}

/* Builds the slot map for the vertex element and infers the SH degree. */
static int build_map(const ply_file *pf, const ply_elem *v, ply_map *m, int *degree) {
    for (int i = 0; i < v->nprops; i++)
        if (v->props[i].is_list)
            return sp_error("%s:%d: list property '%s' in the vertex element is not supported", pf->path,
                            v->props[i].line, v->props[i].name);
    int nrest = 0;
    for (int i = 0; i < v->nprops; i++)
        if (!strncmp(v->props[i].name, "f_rest_", 7)) nrest++;
    int deg;
    switch (nrest) {
    case 0: deg = 0; break;
    case 9: deg = 1; break;
    case 24: deg = 2; break;
    case 45: deg = 3; break;
    default:
        return sp_error("%s: %d f_rest properties: expected 0, 9, 24 or 45 (SH degree 0 to 3)", pf->path, nrest);
    }
    int K = sp_sh_coeffs(deg);
    char names[64][24];
    int n = canonical_names(K, names);
    m->K = K;
    m->nslots = 0;
    for (int j = 0; j < n; j++) {
        if (!strcmp(names[j], "nx") || !strcmp(names[j], "ny") || !strcmp(names[j], "nz")) continue;
        int p = sp_ply_find_prop(v, names[j]);
        if (p < 0) return sp_error("%s: vertex element has no property '%s'", pf->path, names[j]);
        m->slot_prop[m->nslots++] = p;
    }
    *degree = deg;
    return 0;
}

/* Skips the records of an element before the vertex element. */
static int skip_element(ply_file *pf, const ply_elem *e) {
    if (pf->format == F_ASCII) {
        char line[4096];
        for (long long i = 0; i < e->count; i++) {
            int rc = read_line(pf, line, sizeof line);
            if (rc < 0) return -1;
            if (rc > 0) return sp_error("%s: truncated in element '%s'", pf->path, e->name);
        }
        return 0;
    }
    long long size = 0;
    for (int i = 0; i < e->nprops; i++) {
        if (e->props[i].is_list)
            return sp_error("%s:%d: list property in element '%s' before 'vertex' is not supported", pf->path,
                            e->props[i].line, e->name);
        size += sp_ply_type_size(e->props[i].type);
    }
    if (size && e->count > LLONG_MAX / size) return sp_error("%s: element '%s' is too large", pf->path, e->name);
    if (fseeko(pf->f, (off_t)(size * e->count), SEEK_CUR) != 0)
        return sp_error("%s: cannot skip element '%s': %s", pf->path, e->name, strerror(errno));
    return 0;
}

static int read_binary(ply_file *pf, const ply_elem *v, const ply_map *m, sp_gaussians *g) {
    int stride = 0, offs[1024];
    if (v->nprops > 1024) return sp_error("%s: too many vertex properties (%d)", pf->path, v->nprops);
    for (int i = 0; i < v->nprops; i++) {
        offs[i] = stride;
        stride += sp_ply_type_size(v->props[i].type);
    }
    /* Check the size first: no allocation for a count the file cannot hold. */
    off_t here = ftello(pf->f);
    if (here < 0 || fseeko(pf->f, 0, SEEK_END) != 0) return sp_error("%s: cannot seek", pf->path);
    off_t end = ftello(pf->f);
    fseeko(pf->f, here, SEEK_SET);
    long long avail = end > here ? (long long)(end - here) / stride : 0;
    if (avail < v->count)
        return sp_error("%s: truncated: expected %lld vertices, found %lld", pf->path, v->count, avail);
    int swap = (pf->format == F_BLE) != host_is_le();
    int n = (int)v->count;
    if (sp_gaussians_try_reserve(g, n)) return -1;
    g->n = n;
    enum { CHUNK = 4096 };
    uint8_t *buf = sp_malloc((size_t)CHUNK * (stride > 0 ? stride : 1));
    float vals[1024];
    for (int i0 = 0; i0 < n; i0 += CHUNK) {
        int c = sp_mini(CHUNK, n - i0);
        size_t got = fread(buf, (size_t)stride, (size_t)c, pf->f);
        if (got != (size_t)c) {
            free(buf);
            return sp_error("%s: truncated: expected %d vertices, found %lld", pf->path, n, (long long)i0 + (long long)got);
        }
        for (int i = 0; i < c; i++) {
            const uint8_t *rec = buf + (size_t)i * stride;
            for (int p = 0; p < v->nprops; p++) vals[p] = bin_value(rec + offs[p], v->props[p].type, swap);
            store_vertex(g, i0 + i, m, vals);
        }
    }
    free(buf);
    return 0;
}

static int read_ascii(ply_file *pf, const ply_elem *v, const ply_map *m, sp_gaussians *g) {
    if (v->nprops > 1024) return sp_error("%s: too many vertex properties (%d)", pf->path, v->nprops);
    size_t cap = 16 * (size_t)v->nprops + 4096;
    char *line = sp_malloc(cap);
    float vals[1024];
    int rc = 0;
    for (long long i = 0; i < v->count; i++) {
        int r = read_line(pf, line, cap);
        if (r < 0) { rc = -1; break; }
        if (r > 0) {
            rc = sp_error("%s: truncated: expected %lld vertices, found %lld", pf->path, v->count, i);
            break;
        }
        char *s = line;
        int p = 0;
        for (; p < v->nprops; p++) {
            while (*s == ' ' || *s == '\t') s++;
            if (!*s) break;
            char *end;
            errno = 0;
            if (v->props[p].type == T_F32)
                vals[p] = strtof(s, &end);
            else
                vals[p] = (float)strtod(s, &end);
            if (end == s || (*end && *end != ' ' && *end != '\t')) {
                rc = sp_error("%s:%d: bad value for '%s'", pf->path, pf->line, v->props[p].name);
                break;
            }
            s = end;
        }
        if (rc) break;
        while (*s == ' ' || *s == '\t') s++;
        if (p < v->nprops || *s) {
            rc = sp_error("%s:%d: expected %d values per vertex", pf->path, pf->line, v->nprops);
            break;
        }
        if (i >= g->cap && sp_gaussians_try_reserve(g, (int)sp_mini(INT_MAX / 2, 2 * g->cap))) {
            rc = -1;
            break;
        }
        store_vertex(g, (int)i, m, vals);
        g->n = (int)i + 1;
    }
    free(line);
    return rc;
}

int sp_ply_read(const char *path, sp_gaussians *g) {
    memset(g, 0, sizeof *g);
    ply_file pf = {.path = path};
    off_t file_size;
    if (sp_model_open(path, &pf.f, &file_size)) return -1;
    int rc = parse_header(&pf);
    if (rc == 0 && sp_cply_detect(&pf)) { /* PlayCanvas's compressed layout (cply.c) */
        rc = sp_cply_read_body(&pf, file_size, g);
        free_header(&pf);
        fclose(pf.f);
        return rc ? rc : sp_model_check(path, g);
    }
    int vi = -1;
    if (rc == 0) {
        for (int i = 0; i < pf.nelems; i++)
            if (!strcmp(pf.elems[i].name, "vertex")) {
                vi = i;
                break;
            }
        if (vi < 0) rc = sp_error("%s: no vertex element", path);
    }
    ply_map m;
    int degree = 0;
    if (rc == 0) rc = build_map(&pf, &pf.elems[vi], &m, &degree);
    if (rc == 0 && pf.elems[vi].count > INT_MAX / 2)
        rc = sp_error("%s:%d: too many vertices (%lld)", path, pf.elems[vi].line, pf.elems[vi].count);
    for (int i = 0; rc == 0 && i < vi; i++) rc = skip_element(&pf, &pf.elems[i]);
    if (rc == 0) {
        const ply_elem *v = &pf.elems[vi];
        /* the store grows with the data (ascii) or after the size check (binary) */
        rc = sp_gaussians_try_init(g, pf.format == F_ASCII ? (int)sp_mini((int)v->count, 1 << 16) : 1, degree);
        if (rc == 0) rc = pf.format == F_ASCII ? read_ascii(&pf, v, &m, g) : read_binary(&pf, v, &m, g);
        if (rc && strncmp(sp_last_error(), path, strlen(path)) != 0) {
            char *msg = sp_strdup(sp_last_error()); /* out of memory: name the file */
            sp_error("%s: %s", path, msg);
            free(msg);
        }
    }
    free_header(&pf);
    fclose(pf.f);
    if (rc) {
        sp_gaussians_free(g);
        return rc;
    }
    return sp_model_check(path, g);
}
