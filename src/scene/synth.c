/* synth.c — ray-traces the procedural test scene of synth.h into NeRF-synthetic files.
 *
 * World axes: z up (as in Blender). Every object is an analytic primitive in a local frame that is
 * the world frame turned about z and shifted; the ray is taken into that frame, intersected, and
 * the normal turned back. Each pixel averages `samples` stratified, jittered rays whose offsets
 * come from a per-pixel RNG stream, so the result does not depend on the thread schedule. */
#include "core/threads.h"
#include "scene/synth.h"
#include "scene/synth_internal.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "io/image.h"

/* ---- scene description ---- */

typedef enum { PRIM_SPHERE, PRIM_BOX, PRIM_CYLINDER } prim_kind;
typedef enum { PAT_CHECKER_SPHERE, PAT_STRIPED_BOX, PAT_BANDED_CYLINDER, PAT_PEDESTAL, PAT_LATITUDE } pattern;

typedef struct {
    prim_kind kind;
    pattern pat;
    float c[3];    /* centre */
    float s[3];    /* sphere: radius; box: half extents; cylinder: radius, half height */
    float cs, sn;  /* cosine and sine of the rotation of the local frame about world z */
} prim;

static const prim SCENE[] = {
    /* pedestal disc; its top face is at z = -0.45, its bottom at z = -0.57 */
    {PRIM_CYLINDER, PAT_PEDESTAL, {0.0f, 0.0f, -0.51f}, {1.05f, 0.06f, 0.0f}, 1.0f, 0.0f},
    /* checkered sphere at the origin */
    {PRIM_SPHERE, PAT_CHECKER_SPHERE, {0.0f, 0.0f, 0.0f}, {0.45f, 0.0f, 0.0f}, 0.95533649f, 0.29552021f}, /* 0.3 rad */
    /* box standing on the pedestal, turned 30 degrees */
    {PRIM_BOX, PAT_STRIPED_BOX, {0.62f, -0.38f, -0.25f}, {0.2f, 0.2f, 0.2f}, 0.8660254f, 0.5f}, /* 30 deg */
    /* upright cylinder */
    {PRIM_CYLINDER, PAT_BANDED_CYLINDER, {-0.55f, 0.38f, -0.15f}, {0.16f, 0.3f, 0.0f}, 1.0f, 0.0f},
    /* small striped sphere */
    {PRIM_SPHERE, PAT_LATITUDE, {-0.2f, -0.72f, -0.3f}, {0.15f, 0.0f, 0.0f}, 1.0f, 0.0f},
};
#define NUM_PRIMS ((int)(sizeof SCENE / sizeof *SCENE))

/* Direction towards the light (normalized at use); the light mix is in synth_internal.h. */
static const float LIGHT_DIR[3] = {0.35f, -0.45f, 0.82f};

void sp_synth_light(float L[3]) {
    for (int k = 0; k < 3; k++) L[k] = LIGHT_DIR[k];
    normalize3(L);
}

/* Rotates v about z by angle (given as its cosine and sine). */
static inline void rotz(const float v[3], float c, float s, float o[3]) {
    o[0] = c * v[0] - s * v[1];
    o[1] = s * v[0] + c * v[1];
    o[2] = v[2];
}

/* ---- intersection in the local frame ---- */

/* Each returns the smallest t > tmin of the ray o + t d with the primitive, or INFINITY, and the
 * outward local normal there. */
static float hit_sphere(const float *s, const float o[3], const float d[3], float tmin, float n[3]) {
    float r = s[0];
    float b = dot3(o, d), cc = dot3(o, o) - r * r, a = dot3(d, d);
    float disc = b * b - a * cc;
    if (disc < 0.0f) return INFINITY;
    float q = sqrtf(disc);
    float t = (-b - q) / a;
    if (t <= tmin) t = (-b + q) / a;
    if (t <= tmin) return INFINITY;
    for (int k = 0; k < 3; k++) n[k] = (o[k] + t * d[k]) / r;
    return t;
}

static float hit_box(const float *h, const float o[3], const float d[3], float tmin, float n[3]) {
    float t0 = -INFINITY, t1 = INFINITY;
    int a0 = 0, a1 = 0;
    float s0 = 1.0f, s1 = 1.0f;
    for (int k = 0; k < 3; k++) {
        if (d[k] == 0.0f) {
            if (o[k] < -h[k] || o[k] > h[k]) return INFINITY;
            continue;
        }
        float inv = 1.0f / d[k];
        float ta = (-h[k] - o[k]) * inv, tb = (h[k] - o[k]) * inv;
        float sa = -1.0f, sb = 1.0f; /* outward normal sign of the face hit at ta, tb */
        if (ta > tb) {
            float tmp = ta; ta = tb; tb = tmp;
            sa = 1.0f, sb = -1.0f;
        }
        if (ta > t0) t0 = ta, a0 = k, s0 = sa;
        if (tb < t1) t1 = tb, a1 = k, s1 = sb;
    }
    if (t0 > t1) return INFINITY;
    float t;
    if (t0 > tmin) {
        t = t0;
        n[0] = n[1] = n[2] = 0.0f;
        n[a0] = s0;
    } else if (t1 > tmin) {
        t = t1;
        n[0] = n[1] = n[2] = 0.0f;
        n[a1] = s1;
    } else {
        return INFINITY;
    }
    return t;
}

static float hit_cylinder(const float *s, const float o[3], const float d[3], float tmin, float n[3]) {
    float r = s[0], hh = s[1], best = INFINITY;
    /* side */
    float a = d[0] * d[0] + d[1] * d[1];
    if (a > 0.0f) {
        float b = o[0] * d[0] + o[1] * d[1], cc = o[0] * o[0] + o[1] * o[1] - r * r;
        float disc = b * b - a * cc;
        if (disc >= 0.0f) {
            float q = sqrtf(disc);
            float ts[2] = {(-b - q) / a, (-b + q) / a};
            for (int i = 0; i < 2; i++) {
                float t = ts[i], z = o[2] + t * d[2];
                if (t > tmin && t < best && z >= -hh && z <= hh) {
                    best = t;
                    n[0] = (o[0] + t * d[0]) / r, n[1] = (o[1] + t * d[1]) / r, n[2] = 0.0f;
                }
            }
        }
    }
    /* caps */
    if (d[2] != 0.0f) {
        for (int sgn = -1; sgn <= 1; sgn += 2) {
            float t = (sgn * hh - o[2]) / d[2];
            float x = o[0] + t * d[0], y = o[1] + t * d[1];
            if (t > tmin && t < best && x * x + y * y <= r * r) {
                best = t;
                n[0] = n[1] = 0.0f, n[2] = (float)sgn;
            }
        }
    }
    return best;
}

typedef struct {
    float t;
    int prim;
    float lp[3], ln[3]; /* local hit point and normal */
    float n[3];         /* world normal */
} hit;

/* Closest hit of the ray along d (any length) beyond tmin; returns 0 when nothing is hit.
 * With any_hit set it returns on the first hit found (shadow rays). */
static int trace(const float o[3], const float d[3], float tmin, int any_hit, hit *h) {
    h->t = INFINITY;
    h->prim = -1;
    { /* the whole scene lies inside a sphere of radius SP_SYNTH_SCENE_RADIUS at the origin */
        float dd = dot3(d, d), od = dot3(o, d), oo = dot3(o, o), R = SP_SYNTH_SCENE_RADIUS;
        if (oo > R * R && (od >= 0.0f || od * od < dd * (oo - R * R))) return 0;
    }
    for (int i = 0; i < NUM_PRIMS; i++) {
        const prim *p = &SCENE[i];
        float c = p->cs, s = p->sn;
        float rel[3] = {o[0] - p->c[0], o[1] - p->c[1], o[2] - p->c[2]}, lo[3], ld[3], ln[3];
        rotz(rel, c, -s, lo);
        rotz(d, c, -s, ld);
        float t;
        switch (p->kind) {
        case PRIM_SPHERE: t = hit_sphere(p->s, lo, ld, tmin, ln); break;
        case PRIM_BOX: t = hit_box(p->s, lo, ld, tmin, ln); break;
        default: t = hit_cylinder(p->s, lo, ld, tmin, ln); break;
        }
        if (t < h->t) {
            h->t = t;
            h->prim = i;
            for (int k = 0; k < 3; k++) h->lp[k] = lo[k] + t * ld[k], h->ln[k] = ln[k];
            rotz(ln, c, s, h->n);
            if (any_hit) return 1;
        }
    }
    return h->prim >= 0;
}

/* ---- textures ---- */

static void set3(float o[3], float r, float g, float b) { o[0] = r, o[1] = g, o[2] = b; }

static void albedo(const hit *h, float col[3]) {
    const prim *p = &SCENE[h->prim];
    const float *q = h->lp, *n = h->ln;
    switch (p->pat) {
    case PAT_CHECKER_SPHERE: {
        float r = p->s[0];
        float th = atan2f(q[1], q[0]) + PI_F; /* [0, 2 pi] */
        float ph = acosf(fmaxf(-1.0f, fminf(1.0f, q[2] / r)));
        int ck = parity(th / (2.0f * PI_F) * 12.0f) ^ parity(ph / PI_F * 8.0f);
        if (fabsf(q[2]) < 0.025f * r) set3(col, 0.1f, 0.1f, 0.12f); /* dark equator line */
        else if (ck) set3(col, 0.86f, 0.24f, 0.14f);
        else set3(col, 0.96f, 0.9f, 0.74f);
        break;
    }
    case PAT_STRIPED_BOX: {
        int ax = fabsf(n[0]) > 0.5f ? 0 : fabsf(n[1]) > 0.5f ? 1 : 2;
        int ua = (ax + 1) % 3, va = (ax + 2) % 3;
        float u = q[ua] / p->s[ua], v = q[va] / p->s[va];
        int face = 2 * ax + (n[ax] > 0.0f);
        if (fabsf(u) > 0.86f || fabsf(v) > 0.86f) {
            set3(col, 0.08f, 0.08f, 0.18f); /* dark frame on every face */
        } else if (parity((u + v) * 2.5f)) {
            set3(col, 0.14f, 0.32f + 0.08f * (face % 3), 0.82f);
        } else {
            set3(col, 0.62f + 0.06f * (face % 3), 0.8f, 0.96f);
        }
        break;
    }
    case PAT_BANDED_CYLINDER: {
        if (fabsf(n[2]) > 0.5f) { /* caps: rings */
            float rr = sqrtf(q[0] * q[0] + q[1] * q[1]) / p->s[0];
            if (parity(rr * 4.0f)) set3(col, 0.95f, 0.85f, 0.2f);
            else set3(col, 0.2f, 0.55f, 0.2f);
        } else {
            float th = atan2f(q[1], q[0]) + PI_F;
            int ck = parity(th / (2.0f * PI_F) * 10.0f) ^ parity((q[2] / p->s[1] + 1.0f) * 2.0f);
            if (ck) set3(col, 0.12f, 0.55f, 0.22f);
            else set3(col, 0.7f, 0.9f, 0.45f);
        }
        break;
    }
    case PAT_PEDESTAL: {
        float rr = sqrtf(q[0] * q[0] + q[1] * q[1]);
        if (n[2] > 0.5f) { /* top: polar checker */
            float th = atan2f(q[1], q[0]) + PI_F;
            int ck = parity(rr * 5.0f) ^ parity(th / (2.0f * PI_F) * 16.0f);
            if (ck) set3(col, 0.45f, 0.42f, 0.4f);
            else set3(col, 0.8f, 0.78f, 0.72f);
        } else if (n[2] < -0.5f) {
            set3(col, 0.3f, 0.3f, 0.32f);
        } else {
            float th = atan2f(q[1], q[0]) + PI_F;
            if (parity(th / (2.0f * PI_F) * 48.0f)) set3(col, 0.25f, 0.22f, 0.35f);
            else set3(col, 0.6f, 0.55f, 0.75f);
        }
        break;
    }
    default: { /* PAT_LATITUDE */
        if (parity((q[2] / p->s[0] + 1.0f) * 3.0f)) set3(col, 0.55f, 0.2f, 0.7f);
        else set3(col, 1.0f, 0.82f, 0.25f);
        break;
    }
    }
}

int sp_synth_ray_hits(const float o[3], const float d[3]) {
    hit h;
    return trace(o, d, 1e-4f, 0, &h);
}

int sp_synth_objects_shade(const float o[3], const float d[3], float col[3], float *t) {
    hit h;
    if (!trace(o, d, 1e-4f, 0, &h)) return 0;
    if (t) *t = h.t;
    float L[3];
    sp_synth_light(L);
    float n[3] = {h.n[0], h.n[1], h.n[2]};
    if (dot3(n, d) > 0.0f) n[0] = -n[0], n[1] = -n[1], n[2] = -n[2];
    float ndl = dot3(n, L), lit = 0.0f;
    if (ndl > 0.0f) {
        float p[3];
        for (int k = 0; k < 3; k++) p[k] = o[k] + h.t * d[k] + 1e-4f * n[k];
        hit sh;
        lit = trace(p, L, 1e-4f, 1, &sh) ? 0.0f : ndl;
    }
    float a[3];
    albedo(&h, a);
    for (int k = 0; k < 3; k++) col[k] = fminf(1.0f, a[k] * (AMBIENT + DIFFUSE * lit));
    return 1;
}

/* ---- cameras ---- */

void sp_synth_defaults(sp_synth_opts *o) {
    o->scene = SP_SYNTH_OBJECTS;
    o->width = 128;
    o->height = 128;
    o->num_train = 100;
    o->num_val = 25;
    o->num_test = 25;
    o->samples = 4;
    o->seed = 0;
}

void sp_synth_camera_c2w(const sp_synth_opts *o, int split, int index, float m[16]) {
    sp_rng r;
    sp_rng_seed(&r, sp_hash64(o->seed, 0x5e17u + (uint64_t)split), (uint64_t)index);
    float az = 2.0f * PI_F * sp_rng_uniform(&r);
    float up = 0.12f + 0.8f * sp_rng_uniform(&r); /* sine of the elevation: upper hemisphere */
    float hor = sqrtf(1.0f - up * up);
    float C[3] = {SP_SYNTH_CAMERA_RADIUS * hor * cosf(az), SP_SYNTH_CAMERA_RADIUS * hor * sinf(az),
                  SP_SYNTH_CAMERA_RADIUS * up};
    /* OpenGL axes: the camera looks along -z, so z points from the origin to the camera. */
    float z[3] = {C[0], C[1], C[2]}, x[3], y[3], wup[3] = {0.0f, 0.0f, 1.0f};
    normalize3(z);
    cross3(wup, z, x); /* right = forward x up = up x backward */
    normalize3(x);
    cross3(z, x, y);
    for (int i = 0; i < 3; i++) {
        m[i * 4 + 0] = x[i] + 0.0f; /* + 0: no "-0" in the JSON */
        m[i * 4 + 1] = y[i] + 0.0f;
        m[i * 4 + 2] = z[i] + 0.0f;
        m[i * 4 + 3] = C[i] + 0.0f;
    }
    m[12] = m[13] = m[14] = 0.0f;
    m[15] = 1.0f;
}

/* ---- rendering ---- */

/* Renders row j of one view into RGBA pixels (straight alpha). */
static void render_row(const sp_synth_opts *o, const float m[16], uint64_t view_seed, int j, uint8_t *px) {
    int W = o->width, H = o->height, S = o->samples;
    float fx = 0.5f * (float)W / tanf(0.5f * (float)SP_SYNTH_CAMERA_ANGLE_X);
    float fy = fx, cx = 0.5f * (float)W, cy = 0.5f * (float)H;
    float origin[3] = {m[3], m[7], m[11]};
    int grid = 1;
    while (grid * grid < S) grid++;
    for (int i = 0; i < W; i++) {
        sp_rng r;
        sp_rng_seed(&r, view_seed, (uint64_t)j * (uint64_t)W + (uint64_t)i);
        float acc[3] = {0, 0, 0};
        int hits = 0;
        for (int s = 0; s < S; s++) {
            float ox = 0.5f, oy = 0.5f;
            if (S > 1) { /* one jittered sample per stratum of a grid x grid pattern */
                int cell = s % (grid * grid);
                ox = ((float)(cell % grid) + sp_rng_uniform(&r)) / (float)grid;
                oy = ((float)(cell / grid) + sp_rng_uniform(&r)) / (float)grid;
            }
            /* OpenCV camera ray (x right, y down, z forward) = (X, -Y, -Z) of the OpenGL axes */
            float u = ((float)i + ox - cx) / fx, v = ((float)j + oy - cy) / fy, d[3], col[3];
            for (int k = 0; k < 3; k++) d[k] = u * m[k * 4 + 0] - v * m[k * 4 + 1] - m[k * 4 + 2];
            normalize3(d);
            if (sp_synth_objects_shade(origin, d, col, NULL)) {
                hits++;
                for (int k = 0; k < 3; k++) acc[k] += col[k];
            }
        }
        uint8_t *p = px + 4 * ((size_t)j * W + i);
        for (int k = 0; k < 3; k++) p[k] = hits ? (uint8_t)(acc[k] / (float)hits * 255.0f + 0.5f) : 0;
        p[3] = (uint8_t)((float)hits / (float)S * 255.0f + 0.5f);
    }
}

void sp_synth_add_frame(cJSON *frames, const char *file_path, const float m[16]) {
    cJSON *f = cJSON_CreateObject(), *mat = cJSON_CreateArray();
    cJSON_AddStringToObject(f, "file_path", file_path);
    for (int r = 0; r < 4; r++) {
        cJSON *row = cJSON_CreateArray();
        for (int c = 0; c < 4; c++) cJSON_AddItemToArray(row, cJSON_CreateNumber((double)m[r * 4 + c]));
        cJSON_AddItemToArray(mat, row);
    }
    cJSON_AddItemToObject(f, "transform_matrix", mat);
    cJSON_AddItemToArray(frames, f);
}

int sp_synth_save_images(char *const *paths, const sp_image *imgs, int n, int jpeg_quality) {
    char *failure = NULL; /* first error message of a worker thread */
#pragma omp parallel for schedule(dynamic, 1) num_threads(sp_omp_threads())
    for (int k = 0; k < n; k++) {
        int rc = imgs[k].channels == 4 ? sp_image_save_png(paths[k], &imgs[k])
                                       : sp_image_save_jpeg(paths[k], &imgs[k], jpeg_quality);
        if (rc != 0) {
#pragma omp critical(synth_failure)
            if (!failure) failure = sp_strdup(sp_last_error());
        }
    }
    if (!failure) return 0;
    sp_error("%s", failure);
    free(failure);
    return -1;
}

int sp_synth_write_json(cJSON *root, const char *path, int pretty) {
    char *text = pretty ? cJSON_Print(root) : cJSON_PrintUnformatted(root);
    int rc = text ? sp_write_file_atomic(path, text, strlen(text))
                  : sp_error("%s: out of memory while formatting JSON", path);
    free(text);
    return rc;
}

static const char *SPLIT_NAMES[3] = {"train", "val", "test"};
#define BATCH 8 /* views rendered (and written) together: rows of all of them share one parallel loop */

/* Renders and writes every image of one split, then its transforms JSON. */
static int write_split(const char *dir, const sp_synth_opts *o, int split, int count) {
    char *sub = sp_path_join(dir, SPLIT_NAMES[split]);
    if (sp_mkdir_p(sub) != 0) {
        free(sub);
        return -1;
    }
    cJSON *root = cJSON_CreateObject(), *frames = cJSON_CreateArray();
    cJSON_AddNumberToObject(root, "camera_angle_x", SP_SYNTH_CAMERA_ANGLE_X);
    cJSON_AddItemToObject(root, "frames", frames);
    int W = o->width, H = o->height;
    size_t stride = (size_t)W * H * 4;
    uint8_t *px = sp_malloc(stride * BATCH);
    float m[BATCH][16];
    uint64_t seeds[BATCH];
    int rc = 0;
    for (int v0 = 0; rc == 0 && v0 < count; v0 += BATCH) {
        int nb = sp_mini(BATCH, count - v0);
        for (int b = 0; b < nb; b++) {
            sp_synth_camera_c2w(o, split, v0 + b, m[b]);
            seeds[b] = sp_hash64(sp_hash64(o->seed, (uint64_t)split), (uint64_t)(v0 + b));
        }
#pragma omp parallel for collapse(2) schedule(dynamic, 2) num_threads(sp_omp_threads())
        for (int b = 0; b < nb; b++)
            for (int j = 0; j < H; j++) render_row(o, m[b], seeds[b], j, px + stride * b);
        char *paths[BATCH];
        sp_image imgs[BATCH];
        for (int b = 0; b < nb; b++) {
            char name[64], fp[96];
            snprintf(name, sizeof name, "r_%d.png", v0 + b);
            paths[b] = sp_path_join(sub, name);
            imgs[b] = (sp_image){W, H, 4, px + stride * b};
            snprintf(fp, sizeof fp, "./%s/r_%d", SPLIT_NAMES[split], v0 + b);
            sp_synth_add_frame(frames, fp, m[b]);
        }
        rc = sp_synth_save_images(paths, imgs, nb, 0);
        for (int b = 0; b < nb; b++) free(paths[b]);
    }
    free(px);
    if (rc == 0) {
        char name[64];
        snprintf(name, sizeof name, "transforms_%s.json", SPLIT_NAMES[split]);
        char *path = sp_path_join(dir, name);
        rc = sp_synth_write_json(root, path, 1);
        free(path);
    }
    cJSON_Delete(root);
    free(sub);
    return rc;
}

int sp_synth_write(const char *dir, const sp_synth_opts *o) {
    if (!dir || !*dir) return sp_error("synth: no output directory given");
    if (o->width < 1 || o->height < 1 || o->width > 16384 || o->height > 16384)
        return sp_error("%s: synth image size %dx%d is out of range (1..16384)", dir, o->width, o->height);
    if (o->num_train < 0 || o->num_val < 0 || o->num_test < 0 || o->num_train > 100000 || o->num_val > 100000 ||
        o->num_test > 100000)
        return sp_error("%s: synth view counts %d/%d/%d are out of range (0..100000)", dir, o->num_train,
                        o->num_val, o->num_test);
    if (o->num_train + o->num_val + o->num_test == 0) return sp_error("%s: synth needs at least one view", dir);
    if (o->samples < 1 || o->samples > 1024)
        return sp_error("%s: synth samples per pixel %d is out of range (1..1024)", dir, o->samples);
    if (o->scene == SP_SYNTH_CAPTURE) return sp_synth_write_capture(dir, o);
    if (sp_mkdir_p(dir) != 0) return -1;
    int counts[3] = {o->num_train, o->num_val, o->num_test};
    for (int s = 0; s < 3; s++) /* an empty val or test split is left out (the loader rejects empty files) */
        if ((s == 0 || counts[s] > 0) && write_split(dir, o, s, counts[s]) != 0) return -1;
    return 0;
}
