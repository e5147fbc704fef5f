/* synth_capture.c — the large procedural capture of synth.h (SP_SYNTH_CAPTURE): seven copies of
 * the object group on a detailed ground under a far dome, seen by a distorted lens from many
 * places, written as an instant-ngp / nerfstudio transforms.json capture of JPEG images. It is
 * what the benchmarks of captures at scale train on (bench/large.sh): far more detail than one
 * object, opaque images, lens distortion. Everything is a pure function of the options. */
#include "scene/synth.h"
#include "scene/synth_internal.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "core/threads.h"
#include "io/image.h"
#include "io/undistort.h"

#define GROUPS 7          /* one at the origin, six on a circle */
#define RING_R 9.0f       /* radius of that circle */
#define GROUP_BOUND 1.25f /* every group lies within this of its centre */
#define DOME_R 60.0f      /* the sky and skyline: a sphere around the origin */
#define HFOV_DEG 60.0
#define QUALITY 92
#define BATCH 8

static const double K1 = -0.04, K2 = 0.008, P1 = 0.0005, P2 = -0.0003;

void sp_synth_capture_defaults(sp_synth_opts *o) {
    sp_synth_defaults(o);
    o->scene = SP_SYNTH_CAPTURE;
    o->width = 1600;
    o->height = 1200;
    o->num_train = 1000;
    o->num_val = o->num_test = 0;
    o->samples = 1;
}

/* Group g: its centre on the ground plane and its turn about z. */
static void group_at(int g, float c[3], float *cs, float *sn) {
    float a = g == 0 ? 0.0f : (float)(g - 1) * (PI_F / 3.0f), turn = 0.65f * (float)g;
    c[0] = g == 0 ? 0.0f : RING_R * cosf(a);
    c[1] = g == 0 ? 0.0f : RING_R * sinf(a);
    c[2] = 0.0f;
    *cs = cosf(turn), *sn = sinf(turn);
}

static inline void rotz(const float v[3], float c, float s, float o[3]) {
    o[0] = c * v[0] - s * v[1];
    o[1] = s * v[0] + c * v[1];
    o[2] = v[2];
}

/* A hash of an integer lattice point into [0, 1). */
static float hash2(int x, int y, uint64_t salt) {
    uint64_t h = sp_hash64(((uint64_t)(uint32_t)x << 32) | (uint32_t)y, salt);
    return (float)(h >> 40) * (1.0f / 16777216.0f);
}

/* Value noise: the lattice hashes, smoothly interpolated. */
static float vnoise(float x, float y, uint64_t salt) {
    float fx = floorf(x), fy = floorf(y), u = x - fx, v = y - fy;
    int ix = (int)fx, iy = (int)fy;
    u = u * u * (3.0f - 2.0f * u), v = v * v * (3.0f - 2.0f * v);
    float a = hash2(ix, iy, salt), b = hash2(ix + 1, iy, salt);
    float c = hash2(ix, iy + 1, salt), d = hash2(ix + 1, iy + 1, salt);
    return (a + (b - a) * u) + ((c + (d - c) * u) - (a + (b - a) * u)) * v;
}

/* Octaves of value noise, each twice the frequency and half the weight of the last; in [0, 1). */
static float fbm(float x, float y, uint64_t salt, int octaves) {
    float sum = 0.0f, w = 0.5f, total = 0.0f;
    for (int k = 0; k < octaves; k++, w *= 0.5f, x *= 2.0f, y *= 2.0f) {
        sum += w * vnoise(x, y, salt + (uint64_t)k);
        total += w;
    }
    return sum / total;
}

/* The first group surface along the ray (colour and distance), or 0. */
static int groups_shade(const float o[3], const float d[3], float col[3], float *t) {
    float best = INFINITY;
    for (int g = 0; g < GROUPS; g++) {
        float c[3], cs, sn, rel[3], lo[3], ld[3], gc[3], tg;
        group_at(g, c, &cs, &sn);
        for (int k = 0; k < 3; k++) rel[k] = o[k] - c[k];
        /* the ray misses the group's bounding sphere: nothing to trace */
        float dd = dot3(d, d), od = dot3(rel, d), oo = dot3(rel, rel), R2 = GROUP_BOUND * GROUP_BOUND;
        if (oo > R2 && (od >= 0.0f || od * od < dd * (oo - R2))) continue;
        rotz(rel, cs, -sn, lo);
        rotz(d, cs, -sn, ld);
        if (sp_synth_objects_shade(lo, ld, gc, &tg) && tg < best) {
            best = tg;
            for (int k = 0; k < 3; k++) col[k] = gc[k];
        }
    }
    *t = best;
    return best < INFINITY;
}

/* 1 when a group blocks the light from p. */
static int in_shadow(const float p[3], const float L[3]) {
    for (int g = 0; g < GROUPS; g++) {
        float c[3], cs, sn, rel[3], lo[3], ld[3];
        group_at(g, c, &cs, &sn);
        for (int k = 0; k < 3; k++) rel[k] = p[k] - c[k];
        if (dot3(rel, rel) > 36.0f) continue; /* shadows reach no further than this */
        rotz(rel, cs, -sn, lo);
        rotz(L, cs, -sn, ld);
        if (sp_synth_ray_hits(lo, ld)) return 1;
    }
    return 0;
}

/* The ground's albedo at (x, y): paving near the centre, a gravel ring, grass with flowers. */
static void ground_albedo(float x, float y, float col[3]) {
    float r = sqrtf(x * x + y * y);
    if (r < 3.2f) {
        float u = x / 0.3f, v = y / 0.3f, fu = u - floorf(u), fv = v - floorf(v);
        if (fu < 0.05f || fv < 0.05f) {
            col[0] = 0.36f, col[1] = 0.34f, col[2] = 0.31f;
            return;
        }
        float tone = (0.55f + 0.3f * hash2((int)floorf(u), (int)floorf(v), 11)) *
                     (0.88f + 0.12f * vnoise(x * 24.0f, y * 24.0f, 12));
        col[0] = tone, col[1] = 0.93f * tone, col[2] = 0.82f * tone;
    } else if (r < 3.6f) {
        float g = 0.45f + 0.35f * vnoise(x * 40.0f, y * 40.0f, 13);
        col[0] = g, col[1] = 0.97f * g, col[2] = 0.9f * g;
    } else {
        float broad = fbm(x * 0.4f, y * 0.4f, 20, 3), fine = vnoise(x * 9.0f, y * 9.0f, 24),
              blades = vnoise(x * 35.0f, y * 35.0f, 25);
        float k = 0.55f + 0.45f * broad;
        col[0] = (0.16f + 0.1f * fine) * k;
        col[1] = (0.36f + 0.22f * broad + 0.12f * blades) * k;
        col[2] = (0.1f + 0.06f * blades) * k;
        int cx = (int)floorf(x * 6.0f), cy = (int)floorf(y * 6.0f);
        if (hash2(cx, cy, 30) < 0.06f) { /* a flower in this cell: a disc at a hashed spot */
            float px = ((float)cx + 0.2f + 0.6f * hash2(cx, cy, 31)) / 6.0f,
                  py = ((float)cy + 0.2f + 0.6f * hash2(cx, cy, 32)) / 6.0f;
            if ((x - px) * (x - px) + (y - py) * (y - py) < 0.0009f) {
                float h = hash2(cx, cy, 33);
                if (h < 0.33f) col[0] = 0.95f, col[1] = 0.85f, col[2] = 0.2f;
                else if (h < 0.66f) col[0] = 0.95f, col[1] = 0.95f, col[2] = 0.92f;
                else col[0] = 0.6f, col[1] = 0.3f, col[2] = 0.75f;
            }
        }
    }
}

/* The dome seen along direction d (unit): a skyline of buildings with windows, then sky and clouds. */
static void dome_colour(const float d[3], float col[3]) {
    float el = asinf(fmaxf(-1.0f, fminf(1.0f, d[2]))), az = atan2f(d[1], d[0]) + PI_F;
    float deg = az * (180.0f / PI_F);
    int building = (int)floorf(deg * 0.8f);
    float height = 0.03f + 0.14f * hash2(building, 0, 40) * hash2(building, 1, 40);
    if (el < height) {
        float wu = deg * 0.8f * 5.0f, wv = el * (180.0f / PI_F) * 4.0f;
        float fu = wu - floorf(wu), fv = wv - floorf(wv);
        float base = 0.3f + 0.35f * hash2(building, 2, 41);
        if (fu > 0.25f && fu < 0.75f && fv > 0.3f && fv < 0.8f) {
            if (hash2((int)floorf(wu), (int)floorf(wv), 42) < 0.3f) col[0] = 0.98f, col[1] = 0.85f, col[2] = 0.45f;
            else col[0] = 0.12f, col[1] = 0.16f, col[2] = 0.25f;
        } else {
            col[0] = base, col[1] = 0.95f * base, col[2] = 0.9f * base + 0.05f;
        }
        return;
    }
    float t = fminf(1.0f, el / (0.5f * PI_F));
    float sky[3] = {0.72f + (0.28f - 0.72f) * t, 0.84f + (0.48f - 0.84f) * t, 0.96f + (0.86f - 0.96f) * t};
    float h = 1.0f / (d[2] + 0.15f); /* clouds on a plane above: no seam where the azimuth wraps */
    float cloud = fbm(d[0] * h * 2.5f, d[1] * h * 2.5f, 50, 5);
    float c = cloud > 0.55f ? fminf(1.0f, (cloud - 0.55f) * 4.0f) : 0.0f;
    for (int k = 0; k < 3; k++) col[k] = sky[k] + (0.97f - sky[k]) * c;
}

/* The colour seen along the ray from o with direction d (unit). */
static void shade_capture(const float o[3], const float d[3], float col[3]) {
    float tg, t_ground = INFINITY, gc[3];
    int group = groups_shade(o, d, gc, &tg);
    if (d[2] < 0.0f) {
        float t = (SP_SYNTH_GROUND_Z - o[2]) / d[2];
        float x = o[0] + t * d[0], y = o[1] + t * d[1];
        if (x * x + y * y < DOME_R * DOME_R) t_ground = t;
    }
    if (group && tg < t_ground) {
        for (int k = 0; k < 3; k++) col[k] = gc[k];
    } else if (t_ground < INFINITY) {
        float p[3] = {o[0] + t_ground * d[0], o[1] + t_ground * d[1], SP_SYNTH_GROUND_Z + 1e-3f}, L[3], a[3];
        sp_synth_light(L);
        float lit = in_shadow(p, L) ? 0.0f : L[2];
        ground_albedo(p[0], p[1], a);
        for (int k = 0; k < 3; k++) col[k] = fminf(1.0f, a[k] * (AMBIENT + DIFFUSE * lit));
    } else {
        dome_colour(d, col);
    }
}

/* Camera-to-world (OpenGL axes, row-major) of view `index`. */
static void capture_c2w(const sp_synth_opts *o, int index, float m[16]) {
    sp_rng r;
    sp_rng_seed(&r, sp_hash64(o->seed, 0xca97u), (uint64_t)index);
    float C[3];
    for (int tries = 0;; tries++) { /* a place outside every group */
        float rr = sqrtf(2.5f * 2.5f + (12.0f * 12.0f - 2.5f * 2.5f) * sp_rng_uniform(&r)),
              az = 2.0f * PI_F * sp_rng_uniform(&r);
        C[0] = rr * cosf(az), C[1] = rr * sinf(az), C[2] = SP_SYNTH_GROUND_Z + 0.3f + 2.5f * sp_rng_uniform(&r);
        int clear = 1;
        for (int g = 0; g < GROUPS && clear; g++) {
            float c[3], cs, sn;
            group_at(g, c, &cs, &sn);
            clear = (C[0] - c[0]) * (C[0] - c[0]) + (C[1] - c[1]) * (C[1] - c[1]) > 1.6f * 1.6f;
        }
        if (clear || tries > 64) break;
    }
    float T[3], kind = sp_rng_uniform(&r);
    if (kind < 0.5f) { /* the central group */
        T[0] = 0.8f * (2.0f * sp_rng_uniform(&r) - 1.0f), T[1] = 0.8f * (2.0f * sp_rng_uniform(&r) - 1.0f);
        T[2] = SP_SYNTH_GROUND_Z + 0.3f + 0.6f * sp_rng_uniform(&r);
    } else if (kind < 0.8f) { /* another group */
        float c[3], cs, sn;
        group_at(1 + (int)(sp_rng_uniform(&r) * (GROUPS - 1)) % (GROUPS - 1), c, &cs, &sn);
        T[0] = c[0] + 0.5f * (2.0f * sp_rng_uniform(&r) - 1.0f), T[1] = c[1] + 0.5f * (2.0f * sp_rng_uniform(&r) - 1.0f);
        T[2] = SP_SYNTH_GROUND_Z + 0.5f;
    } else { /* out to the horizon, roughly away from the centre */
        float a = atan2f(C[1], C[0]) + (sp_rng_uniform(&r) - 0.5f) * 2.0f;
        T[0] = C[0] + 30.0f * cosf(a), T[1] = C[1] + 30.0f * sinf(a), T[2] = C[2] + 1.5f;
    }
    float z[3] = {C[0] - T[0], C[1] - T[1], C[2] - T[2]}, x[3], y[3], up[3] = {0.0f, 0.0f, 1.0f};
    normalize3(z);
    cross3(up, z, x);
    normalize3(x);
    cross3(z, x, y);
    for (int i = 0; i < 3; i++) {
        m[i * 4 + 0] = x[i] + 0.0f;
        m[i * 4 + 1] = y[i] + 0.0f;
        m[i * 4 + 2] = z[i] + 0.0f;
        m[i * 4 + 3] = C[i] + 0.0f;
    }
    m[12] = m[13] = m[14] = 0.0f;
    m[15] = 1.0f;
}

static sp_lens capture_lens(const sp_synth_opts *o) {
    sp_lens l = {0};
    l.width = o->width, l.height = o->height;
    l.fx = l.fy = 0.5 * o->width / tan(0.5 * HFOV_DEG * M_PI / 180.0);
    l.cx = 0.5 * o->width, l.cy = 0.5 * o->height;
    l.k1 = K1, l.k2 = K2, l.p1 = P1, l.p2 = P2;
    return l;
}

/* Row j of one view (RGB). ray[] holds each pixel centre's undistorted normalized coordinates
 * (with one sample per pixel); more samples undistort each jittered position. */
static void render_row(const sp_synth_opts *o, const sp_lens *l, const float *ray, const float m[16],
                       uint64_t view_seed, int j, uint8_t *px) {
    int W = o->width, S = o->samples;
    float origin[3] = {m[3], m[7], m[11]};
    for (int i = 0; i < W; i++) {
        sp_rng r;
        sp_rng_seed(&r, view_seed, (uint64_t)j * (uint64_t)W + (uint64_t)i);
        float acc[3] = {0, 0, 0};
        for (int s = 0; s < S; s++) {
            double u = ray[2 * ((size_t)j * W + i)], v = ray[2 * ((size_t)j * W + i) + 1];
            if (S > 1) {
                double xd = (i + sp_rng_uniform(&r) - l->cx) / l->fx, yd = (j + sp_rng_uniform(&r) - l->cy) / l->fy;
                if (sp_lens_undistort_point(l, xd, yd, &u, &v)) u = xd, v = yd;
            }
            float d[3], col[3];
            /* OpenCV camera ray (x right, y down, z forward) = (X, -Y, -Z) of the OpenGL axes */
            for (int k = 0; k < 3; k++) d[k] = (float)u * m[k * 4 + 0] - (float)v * m[k * 4 + 1] - m[k * 4 + 2];
            normalize3(d);
            shade_capture(origin, d, col);
            for (int k = 0; k < 3; k++) acc[k] += col[k];
        }
        uint8_t *p = px + 3 * ((size_t)j * W + i);
        for (int k = 0; k < 3; k++) p[k] = (uint8_t)(fminf(1.0f, acc[k] / (float)S) * 255.0f + 0.5f);
    }
}

int sp_synth_write_capture(const char *dir, const sp_synth_opts *o) {
    if (o->num_train < 1 || o->num_val != 0 || o->num_test != 0)
        return sp_error("%s: the capture scene takes one view count (the loader holds out every 8th), got %d/%d/%d",
                        dir, o->num_train, o->num_val, o->num_test);
    char *images = sp_path_join(dir, "images");
    if (sp_mkdir_p(images)) {
        free(images);
        return -1;
    }
    int W = o->width, H = o->height;
    sp_lens l = capture_lens(o);
    float *ray = sp_try_alloc((size_t)W * H, 2 * sizeof(float), "the synthetic capture's lens table",
                              "lower the image size");
    uint8_t *px = ray ? sp_try_alloc((size_t)W * H * 3, BATCH, "the synthetic capture's images", "lower the image size")
                     : NULL;
    if (!ray || !px) {
        free(ray), free(images);
        return -1;
    }
#pragma omp parallel for schedule(dynamic, 4) num_threads(sp_omp_threads())
    for (int j = 0; j < H; j++)
        for (int i = 0; i < W; i++) {
            double xd = (i + 0.5 - l.cx) / l.fx, yd = (j + 0.5 - l.cy) / l.fy, u, v;
            if (sp_lens_undistort_point(&l, xd, yd, &u, &v)) u = xd, v = yd;
            ray[2 * ((size_t)j * W + i)] = (float)u, ray[2 * ((size_t)j * W + i) + 1] = (float)v;
        }
    cJSON *root = cJSON_CreateObject(), *frames = cJSON_CreateArray();
    cJSON_AddStringToObject(root, "camera_model", "OPENCV");
    cJSON_AddNumberToObject(root, "fl_x", l.fx);
    cJSON_AddNumberToObject(root, "fl_y", l.fy);
    cJSON_AddNumberToObject(root, "cx", l.cx);
    cJSON_AddNumberToObject(root, "cy", l.cy);
    cJSON_AddNumberToObject(root, "w", W);
    cJSON_AddNumberToObject(root, "h", H);
    cJSON_AddNumberToObject(root, "k1", K1);
    cJSON_AddNumberToObject(root, "k2", K2);
    cJSON_AddNumberToObject(root, "p1", P1);
    cJSON_AddNumberToObject(root, "p2", P2);
    cJSON_AddItemToObject(root, "frames", frames);
    size_t stride = (size_t)W * H * 3;
    float m[BATCH][16];
    uint64_t seeds[BATCH];
    int rc = 0;
    for (int v0 = 0; rc == 0 && v0 < o->num_train; v0 += BATCH) {
        int nb = sp_mini(BATCH, o->num_train - v0);
        for (int b = 0; b < nb; b++) {
            capture_c2w(o, v0 + b, m[b]);
            seeds[b] = sp_hash64(sp_hash64(o->seed, 0xca98u), (uint64_t)(v0 + b));
        }
#pragma omp parallel for collapse(2) schedule(dynamic, 2) num_threads(sp_omp_threads())
        for (int b = 0; b < nb; b++)
            for (int j = 0; j < H; j++) render_row(o, &l, ray, m[b], seeds[b], j, px + stride * b);
        char *paths[BATCH];
        sp_image imgs[BATCH];
        for (int b = 0; b < nb; b++) {
            char name[32], fp[48];
            snprintf(name, sizeof name, "%05d.jpg", v0 + b);
            paths[b] = sp_path_join(images, name);
            imgs[b] = (sp_image){W, H, 3, px + stride * b};
            snprintf(fp, sizeof fp, "images/%05d.jpg", v0 + b);
            sp_synth_add_frame(frames, fp, m[b]);
        }
        rc = sp_synth_save_images(paths, imgs, nb, QUALITY);
        for (int b = 0; b < nb; b++) free(paths[b]);
    }
    free(px);
    free(ray);
    if (rc == 0) {
        char *path = sp_path_join(dir, "transforms.json");
        rc = sp_synth_write_json(root, path, 0);
        free(path);
    }
    cJSON_Delete(root);
    free(images);
    return rc;
}
