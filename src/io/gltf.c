/* gltf.c — export as glTF 2.0 binary (.glb) with the KHR_gaussian_splatting extension: one mesh
 * primitive in POINTS mode whose attributes are POSITION (float VEC3, with min/max), COLOR_0
 * (normalized u8 RGBA: base colour and opacity, for viewers without the extension) and
 * KHR_gaussian_splatting:ROTATION (float VEC4, x y z w), :SCALE (float VEC3, linear), :OPACITY
 * (float, 0..1), :SH_DEGREE_l_COEF_m (float VEC3 RGB per SH coefficient, l = 0..degree).
 * glTF is y up (x left, z forward seen from the default camera: the .ply's axes turned 180
 * degrees about z), so positions become (-x, -y, z), rotations are composed with that turn and
 * the SH coefficients odd in (x, y) change sign. Write only. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "io/export.h"
#include "io/model_check.h"

enum { GL_FLOAT = 5126, GL_UNSIGNED_BYTE = 5121, GL_ARRAY_BUFFER = 34962 };

/* Sign of SH coefficient k (3DGS order, DC k = 0) under (x, y, z) -> (-x, -y, z). */
static float sh_sign_about_z(int k) {
    static const float s[16] = {1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1};
    return k >= 0 && k < 16 ? s[k] : 1.0f;
}

static uint8_t to_u8(float x) {
    float r = roundf(x);
    return (uint8_t)(r < 0 ? 0 : r > 255 ? 255 : r);
}

typedef struct {
    char name[64];
    size_t offset, bytes;
    int component, normalized;
    const char *type;
} gl_attr;

int sp_glb_write(const char *path, const sp_gaussians *g) {
    if (g->sh_degree < 0 || g->sh_degree > 3 || g->K != sp_sh_coeffs(g->sh_degree))
        return sp_error("%s: cannot write SH degree %d", path, g->sh_degree);
    if (g->n <= 0) return sp_error("%s: the model has no Gaussians to write", path);
    size_t n = (size_t)g->n, K = (size_t)g->K;
    /* bytes: position 12, colour 4, rotation 16, scale 12, opacity 4, 12 per SH coefficient */
    size_t total = n * (12 + 4 + 16 + 12 + 4 + 12 * K);
    uint8_t *bin = sp_model_buffer(path, total, 1, "the glTF buffer");
    if (!bin) return -1;
    gl_attr attrs[5 + 16];
    int na = 0;
    size_t at = 0;
#define ATTR(NAME, BYTES, COMP, TYPE, NORM)                                                                  \
    do {                                                                                                     \
        snprintf(attrs[na].name, sizeof attrs[na].name, "%s", NAME);                                         \
        attrs[na].offset = at, attrs[na].bytes = (BYTES), attrs[na].component = (COMP), attrs[na].type = TYPE; \
        attrs[na].normalized = NORM;                                                                         \
        at += (BYTES);                                                                                       \
        na++;                                                                                                \
    } while (0)
    float lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    float *pos = (float *)(bin + at);
    ATTR("POSITION", 12 * n, GL_FLOAT, "VEC3", 0);
    uint8_t *col = bin + at;
    ATTR("COLOR_0", 4 * n, GL_UNSIGNED_BYTE, "VEC4", 1);
    float *rot = (float *)(bin + at);
    ATTR("KHR_gaussian_splatting:ROTATION", 16 * n, GL_FLOAT, "VEC4", 0);
    float *scl = (float *)(bin + at);
    ATTR("KHR_gaussian_splatting:SCALE", 12 * n, GL_FLOAT, "VEC3", 0);
    float *opa = (float *)(bin + at);
    ATTR("KHR_gaussian_splatting:OPACITY", 4 * n, GL_FLOAT, "SCALAR", 0);
    float *sh[16];
    for (size_t k = 0; k < K; k++) {
        int l = k == 0 ? 0 : k < 4 ? 1 : k < 9 ? 2 : 3, m = (int)k - l * l;
        char name[64];
        snprintf(name, sizeof name, "KHR_gaussian_splatting:SH_DEGREE_%d_COEF_%d", l, m);
        sh[k] = (float *)(bin + at);
        ATTR(name, 12 * n, GL_FLOAT, "VEC3", 0);
    }
#undef ATTR
    for (size_t i = 0; i < n; i++) {
        const float *p = g->means + 3 * i, *q = g->quats + 4 * i, *c = g->sh + i * K * 3;
        float v[3] = {-p[0], -p[1], p[2]};
        for (int k = 0; k < 3; k++) {
            pos[3 * i + k] = v[k];
            lo[k] = fminf(lo[k], v[k]), hi[k] = fmaxf(hi[k], v[k]);
            scl[3 * i + k] = expf(g->log_scales[3 * i + k]);
            col[4 * i + k] = to_u8(255.0f * (0.5f + SP_SH_C0 * c[k]));
        }
        float a = sp_sigmoidf(g->opacity_logits[i]);
        col[4 * i + 3] = to_u8(255.0f * a);
        opa[i] = a;
        /* (0, 0, 0, 1) * q, the turn about z composed with the rotation: w, x, y, z =
         * (-qz, -qy, qx, qw); stored x, y, z, w */
        float norm = sqrtf(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
        float u = norm > 0 ? 1.0f / norm : 0.0f;
        rot[4 * i + 0] = -q[2] * u, rot[4 * i + 1] = q[1] * u, rot[4 * i + 2] = q[0] * u, rot[4 * i + 3] = -q[3] * u;
        if (norm == 0) rot[4 * i + 3] = 1;
        for (size_t k = 0; k < K; k++)
            for (int ch = 0; ch < 3; ch++) sh[k][3 * i + ch] = sh_sign_about_z((int)k) * c[3 * k + ch];
    }
    cJSON *root = cJSON_CreateObject(), *asset = cJSON_AddObjectToObject(root, "asset");
    cJSON_AddStringToObject(asset, "version", "2.0");
    cJSON_AddStringToObject(asset, "generator", "splat");
    cJSON *used = cJSON_AddArrayToObject(root, "extensionsUsed");
    cJSON_AddItemToArray(used, cJSON_CreateString("KHR_gaussian_splatting"));
    cJSON_AddNumberToObject(root, "scene", 0);
    cJSON *scene = cJSON_CreateObject(), *nodes = cJSON_AddArrayToObject(scene, "nodes");
    cJSON_AddItemToArray(nodes, cJSON_CreateNumber(0));
    cJSON_AddItemToArray(cJSON_AddArrayToObject(root, "scenes"), scene);
    cJSON *node = cJSON_CreateObject();
    cJSON_AddNumberToObject(node, "mesh", 0);
    cJSON_AddItemToArray(cJSON_AddArrayToObject(root, "nodes"), node);
    cJSON *buf = cJSON_CreateObject();
    cJSON_AddNumberToObject(buf, "byteLength", (double)total);
    cJSON_AddItemToArray(cJSON_AddArrayToObject(root, "buffers"), buf);
    cJSON *views = cJSON_AddArrayToObject(root, "bufferViews"), *accs = cJSON_AddArrayToObject(root, "accessors");
    cJSON *prim = cJSON_CreateObject(), *attributes = cJSON_AddObjectToObject(prim, "attributes");
    for (int a = 0; a < na; a++) {
        cJSON *v = cJSON_CreateObject();
        cJSON_AddNumberToObject(v, "buffer", 0);
        cJSON_AddNumberToObject(v, "byteOffset", (double)attrs[a].offset);
        cJSON_AddNumberToObject(v, "byteLength", (double)attrs[a].bytes);
        cJSON_AddNumberToObject(v, "target", GL_ARRAY_BUFFER);
        cJSON_AddItemToArray(views, v);
        cJSON *acc = cJSON_CreateObject();
        cJSON_AddNumberToObject(acc, "bufferView", a);
        cJSON_AddNumberToObject(acc, "componentType", attrs[a].component);
        cJSON_AddNumberToObject(acc, "count", (double)n);
        cJSON_AddStringToObject(acc, "type", attrs[a].type);
        if (attrs[a].normalized) cJSON_AddTrueToObject(acc, "normalized");
        if (a == 0) {
            cJSON *mn = cJSON_AddArrayToObject(acc, "min"), *mx = cJSON_AddArrayToObject(acc, "max");
            for (int k = 0; k < 3; k++) {
                cJSON_AddItemToArray(mn, cJSON_CreateNumber(lo[k]));
                cJSON_AddItemToArray(mx, cJSON_CreateNumber(hi[k]));
            }
        }
        cJSON_AddItemToArray(accs, acc);
        cJSON_AddNumberToObject(attributes, attrs[a].name, a);
    }
    cJSON_AddNumberToObject(prim, "mode", 0); /* POINTS */
    cJSON *ext = cJSON_AddObjectToObject(cJSON_AddObjectToObject(prim, "extensions"), "KHR_gaussian_splatting");
    cJSON_AddStringToObject(ext, "kernel", "ellipse");
    cJSON_AddStringToObject(ext, "colorSpace", "srgb_rec709_display");
    cJSON_AddStringToObject(ext, "sortingMethod", "cameraDistance");
    cJSON_AddStringToObject(ext, "projection", "perspective");
    cJSON *mesh = cJSON_CreateObject();
    cJSON_AddItemToArray(cJSON_AddArrayToObject(mesh, "primitives"), prim);
    cJSON_AddItemToArray(cJSON_AddArrayToObject(root, "meshes"), mesh);
    char *json = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    if (!json) {
        free(bin);
        return sp_error("%s: out of memory for the glTF description", path);
    }
    /* GLB: 12-byte header, JSON chunk (padded with spaces), BIN chunk (padded with zeros; every
     * attribute is a multiple of 4 bytes, so the buffer already is) */
    size_t jlen = strlen(json), jpad = (jlen + 3) & ~(size_t)3;
    size_t file = 12 + 8 + jpad + 8 + total;
    if (file > 0xffffffffu) {
        free(json), free(bin);
        return sp_error("%s: %zu Gaussians make a .glb larger than the format's 4 GB", path, n);
    }
    sp_afile af;
    int rc = sp_afile_open(&af, path);
    if (rc == 0) {
        uint32_t h[5] = {0x46546c67u, 2, (uint32_t)file, (uint32_t)jpad, 0x4e4f534au};
        uint32_t bh[2] = {(uint32_t)total, 0x004e4942u};
        fwrite(h, 4, 5, af.f); /* little-endian hosts only, as the rest of the writers */
        fwrite(json, 1, jlen, af.f);
        for (size_t k = jlen; k < jpad; k++) fputc(' ', af.f);
        fwrite(bh, 4, 2, af.f);
        fwrite(bin, 1, total, af.f);
        rc = sp_afile_commit(&af);
    }
    free(json);
    free(bin);
    return rc;
}
