/* campath.c — orbit, spiral and interpolated camera paths (definitions in campath.h). */
#include "scene/campath.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"

#define PI_F 3.14159265358979f

static float dot3(const float a[3], const float b[3]) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }

static void cross3(const float a[3], const float b[3], float o[3]) {
    o[0] = a[1] * b[2] - a[2] * b[1];
    o[1] = a[2] * b[0] - a[0] * b[2];
    o[2] = a[0] * b[1] - a[1] * b[0];
}

static float normalize3(float v[3]) {
    float n = sqrtf(dot3(v, v));
    if (n > 0)
        for (int k = 0; k < 3; k++) v[k] /= n;
    return n;
}

/* Any unit vector orthogonal to unit u. */
static void orthogonal3(const float u[3], float o[3]) {
    float a[3] = {fabsf(u[0]) < 0.9f ? 1.0f : 0.0f, fabsf(u[0]) < 0.9f ? 0.0f : 1.0f, 0};
    cross3(u, a, o);
    normalize3(o);
}

static void set_t_from_eye(sp_camera *cam, const float eye[3]) {
    for (int i = 0; i < 3; i++) cam->t[i] = -(cam->R[3 * i] * eye[0] + cam->R[3 * i + 1] * eye[1] + cam->R[3 * i + 2] * eye[2]);
}

int sp_path_kind_parse(const char *name, sp_path_kind *kind) {
    if (name && !strcmp(name, "orbit")) *kind = SP_PATH_ORBIT;
    else if (name && !strcmp(name, "spiral")) *kind = SP_PATH_SPIRAL;
    else if (name && !strcmp(name, "interp")) *kind = SP_PATH_INTERP;
    else return sp_error("unknown camera path '%s' (use orbit, spiral or interp)", name ? name : "");
    return 0;
}

void sp_camera_look_at(sp_camera *cam, const float eye[3], const float target[3], const float up[3]) {
    float z[3] = {target[0] - eye[0], target[1] - eye[1], target[2] - eye[2]}, x[3], y[3];
    normalize3(z);
    cross3(z, up, x);
    if (normalize3(x) < 1e-6f) orthogonal3(z, x); /* looking straight along up */
    cross3(z, x, y);                               /* y = z x x points down in the image */
    for (int k = 0; k < 3; k++) {
        cam->R[k] = x[k];
        cam->R[3 + k] = y[k];
        cam->R[6 + k] = z[k];
    }
    set_t_from_eye(cam, eye);
}

/* Up direction of the training cameras: the unit u closest to orthogonal to every camera's image x
 * axis (cameras without roll have horizontal x axes), signed like the mean of their image-up
 * vectors (minus image y). Power iteration on tr(M) I - M, M = sum x_i x_i^T, started from that
 * mean: where several directions fit equally (a forward-facing capture), it keeps the mean. */
static void mean_up(const sp_split *s, float up[3]) {
    double M[9] = {0}, u[3] = {0, 0, 0};
    for (int i = 0; i < s->n; i++) {
        const float *R = s->views[i].cam.R;
        for (int a = 0; a < 3; a++) {
            u[a] -= R[3 + a];
            for (int b = 0; b < 3; b++) M[3 * a + b] += (double)R[a] * R[b];
        }
    }
    double tr = M[0] + M[4] + M[8];
    for (int it = 0; it < 200; it++) {
        double v[3], n = 0;
        for (int a = 0; a < 3; a++) {
            v[a] = tr * u[a] - (M[3 * a] * u[0] + M[3 * a + 1] * u[1] + M[3 * a + 2] * u[2]);
            n += v[a] * v[a];
        }
        if (n < 1e-30) break;
        for (int a = 0; a < 3; a++) u[a] = v[a] / sqrt(n);
    }
    for (int a = 0; a < 3; a++) up[a] = (float)u[a];
    if (normalize3(up) < 1e-6f) up[0] = 0, up[1] = 0, up[2] = 1;
}

/* Focus point; when the cameras do not look at one point (forward-facing captures): in front of
 * the mean camera centre, along the mean view direction, at the scene extent. */
static void focus_point(const sp_dataset *d, float f[3], float *dist) {
    if (sp_dataset_focus(d, f, dist) == 0) return;
    float c[3] = {0, 0, 0}, fwd[3] = {0, 0, 0};
    const sp_split *s = &d->train;
    for (int i = 0; i < s->n; i++) {
        float ci[3];
        sp_camera_center(&s->views[i].cam, ci);
        for (int k = 0; k < 3; k++) c[k] += ci[k] / s->n, fwd[k] += s->views[i].cam.R[6 + k];
    }
    normalize3(fwd);
    *dist = d->extent > 0 ? d->extent : 1.0f;
    for (int k = 0; k < 3; k++) f[k] = c[k] + *dist * fwd[k];
}

void sp_campath_orbit(const sp_dataset *d, sp_orbit *o) {
    const sp_split *s = &d->train;
    float dist;
    focus_point(d, o->focus, &dist);
    mean_up(s, o->up);
    o->height = o->radius = 0;
    for (int i = 0; i < s->n; i++) {
        float c[3], v[3];
        sp_camera_center(&s->views[i].cam, c);
        for (int k = 0; k < 3; k++) v[k] = c[k] - o->focus[k];
        float h = dot3(v, o->up);
        for (int k = 0; k < 3; k++) v[k] -= h * o->up[k];
        o->height += h / s->n;
        o->radius += sqrtf(dot3(v, v)) / s->n;
    }
    if (o->radius < 0.1f * dist) o->radius = 0.1f * dist;
}

static void orbit_path(const sp_dataset *d, int frames, sp_camera *out) {
    sp_orbit o;
    sp_campath_orbit(d, &o);
    float c0[3], e1[3], e2[3];
    sp_camera_center(&d->train.views[0].cam, c0);
    for (int k = 0; k < 3; k++) e1[k] = c0[k] - o.focus[k];
    float h = dot3(e1, o.up);
    for (int k = 0; k < 3; k++) e1[k] -= h * o.up[k];
    if (normalize3(e1) < 1e-6f) orthogonal3(o.up, e1);
    cross3(o.up, e1, e2);
    for (int j = 0; j < frames; j++) {
        float th = 2 * PI_F * j / frames, eye[3];
        for (int k = 0; k < 3; k++)
            eye[k] = o.focus[k] + o.height * o.up[k] + o.radius * (cosf(th) * e1[k] + sinf(th) * e2[k]);
        sp_camera_look_at(&out[j], eye, o.focus, o.up);
    }
}

static int cmp_float(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* 90th percentile of |v_i|. */
static float p90_abs(float *v, int n) {
    for (int i = 0; i < n; i++) v[i] = fabsf(v[i]);
    qsort(v, (size_t)n, sizeof *v, cmp_float);
    return v[(int)(0.9f * (n - 1))];
}

static void spiral_path(const sp_dataset *d, int frames, sp_camera *out) {
    const sp_split *s = &d->train;
    float focus[3], dist, up[3], base[3] = {0, 0, 0}, fwd[3] = {0, 0, 0};
    focus_point(d, focus, &dist);
    mean_up(s, up);
    for (int i = 0; i < s->n; i++) {
        float c[3];
        sp_camera_center(&s->views[i].cam, c);
        for (int k = 0; k < 3; k++) base[k] += c[k] / s->n, fwd[k] += s->views[i].cam.R[6 + k] / s->n;
    }
    float r[3];
    sp_camera b = s->views[0].cam;
    if (sqrtf(dot3(fwd, fwd)) >= 0.9f) { /* the cameras face one way: the mean pose */
        normalize3(fwd);
        float target[3];
        for (int k = 0; k < 3; k++) target[k] = base[k] + dist * fwd[k];
        sp_camera_look_at(&b, base, target, up);
        float *off = SP_NEW(float, 3 * (size_t)s->n);
        for (int i = 0; i < s->n; i++) {
            float c[3];
            sp_camera_center(&s->views[i].cam, c);
            for (int a = 0; a < 3; a++)
                off[a * s->n + i] = b.R[3 * a] * (c[0] - base[0]) + b.R[3 * a + 1] * (c[1] - base[1]) +
                                    b.R[3 * a + 2] * (c[2] - base[2]);
        }
        for (int a = 0; a < 3; a++) r[a] = fmaxf(p90_abs(off + a * s->n, s->n), 0.02f * dist);
        free(off);
    } else { /* cameras all around: spiral near the first camera */
        sp_camera_center(&s->views[0].cam, base);
        sp_camera_look_at(&b, base, focus, up);
        float l = 0;
        for (int k = 0; k < 3; k++) l += (focus[k] - base[k]) * (focus[k] - base[k]);
        r[0] = r[1] = 0.1f * sqrtf(l);
        r[2] = 0.05f * sqrtf(l);
    }
    for (int j = 0; j < frames; j++) {
        float th = 2 * 2 * PI_F * j / frames; /* two turns */
        float o[3] = {r[0] * cosf(th), r[1] * sinf(th), r[2] * sinf(0.5f * th)}, eye[3];
        for (int k = 0; k < 3; k++) eye[k] = base[k] + o[0] * b.R[k] + o[1] * b.R[3 + k] + o[2] * b.R[6 + k];
        sp_camera_look_at(&out[j], eye, focus, up);
    }
}

/* ---- rotations as quaternions (w, x, y, z) ---- */
static void mat_to_quat(const float R[9], float q[4]) {
    float tr = R[0] + R[4] + R[8];
    if (tr > 0) {
        float s = 2 * sqrtf(tr + 1);
        q[0] = 0.25f * s, q[1] = (R[7] - R[5]) / s, q[2] = (R[2] - R[6]) / s, q[3] = (R[3] - R[1]) / s;
    } else if (R[0] > R[4] && R[0] > R[8]) {
        float s = 2 * sqrtf(1 + R[0] - R[4] - R[8]);
        q[0] = (R[7] - R[5]) / s, q[1] = 0.25f * s, q[2] = (R[1] + R[3]) / s, q[3] = (R[2] + R[6]) / s;
    } else if (R[4] > R[8]) {
        float s = 2 * sqrtf(1 + R[4] - R[0] - R[8]);
        q[0] = (R[2] - R[6]) / s, q[1] = (R[1] + R[3]) / s, q[2] = 0.25f * s, q[3] = (R[5] + R[7]) / s;
    } else {
        float s = 2 * sqrtf(1 + R[8] - R[0] - R[4]);
        q[0] = (R[3] - R[1]) / s, q[1] = (R[2] + R[6]) / s, q[2] = (R[5] + R[7]) / s, q[3] = 0.25f * s;
    }
}

static void quat_to_mat(const float q[4], float R[9]) {
    float w = q[0], x = q[1], y = q[2], z = q[3];
    R[0] = 1 - 2 * (y * y + z * z), R[1] = 2 * (x * y - w * z), R[2] = 2 * (x * z + w * y);
    R[3] = 2 * (x * y + w * z), R[4] = 1 - 2 * (x * x + z * z), R[5] = 2 * (y * z - w * x);
    R[6] = 2 * (x * z - w * y), R[7] = 2 * (y * z + w * x), R[8] = 1 - 2 * (x * x + y * y);
}

static void slerp(const float a[4], const float b_in[4], float t, float q[4]) {
    float b[4], d = 0;
    for (int k = 0; k < 4; k++) d += a[k] * b_in[k];
    float sgn = d < 0 ? -1.0f : 1.0f; /* the shorter way round */
    d *= sgn;
    for (int k = 0; k < 4; k++) b[k] = sgn * b_in[k];
    float wa = 1 - t, wb = t;
    if (d < 0.9995f) {
        float th = acosf(d), s = sinf(th);
        wa = sinf((1 - t) * th) / s;
        wb = sinf(t * th) / s;
    }
    float n = 0;
    for (int k = 0; k < 4; k++) q[k] = wa * a[k] + wb * b[k], n += q[k] * q[k];
    for (int k = 0; k < 4; k++) q[k] /= sqrtf(n);
}

void sp_campath_interp(const sp_camera *keys, int nkeys, int frames, sp_camera *out) {
    for (int j = 0; j < frames; j++) {
        float u = frames > 1 && nkeys > 1 ? (float)j * (nkeys - 1) / (frames - 1) : 0;
        int i = (int)u;
        if (i > nkeys - 2) i = nkeys > 1 ? nkeys - 2 : 0;
        float t = nkeys > 1 ? u - i : 0;
        int i0 = i > 0 ? i - 1 : 0, i2 = sp_mini(i + 1, nkeys - 1), i3 = sp_mini(i + 2, nkeys - 1);
        float p[4][3];
        const int idx[4] = {i0, i, i2, i3};
        for (int a = 0; a < 4; a++) sp_camera_center(&keys[idx[a]], p[a]);
        /* uniform Catmull-Rom between p1 and p2 */
        float t2 = t * t, t3 = t2 * t, eye[3];
        for (int k = 0; k < 3; k++)
            eye[k] = 0.5f * (2 * p[1][k] + (p[2][k] - p[0][k]) * t + (2 * p[0][k] - 5 * p[1][k] + 4 * p[2][k] - p[3][k]) * t2 +
                             (3 * p[1][k] - p[0][k] - 3 * p[2][k] + p[3][k]) * t3);
        float qa[4], qb[4], q[4];
        mat_to_quat(keys[i].R, qa);
        mat_to_quat(keys[i2].R, qb);
        slerp(qa, qb, t, q);
        out[j] = keys[0];
        if (t == 0) memcpy(out[j].R, keys[i].R, sizeof out[j].R); /* exactly the key pose */
        else quat_to_mat(q, out[j].R);
        set_t_from_eye(&out[j], eye);
    }
}

typedef struct {
    float angle;
    int index;
} keyed;

static int by_angle(const void *a, const void *b) {
    const keyed *x = a, *y = b;
    if (x->angle != y->angle) return x->angle < y->angle ? -1 : 1;
    return x->index - y->index;
}

static void interp_path(const sp_dataset *d, int frames, sp_camera *out) {
    const sp_split *s = &d->train;
    float focus[3], dist, up[3], e1[3], e2[3];
    int has_focus = sp_dataset_focus(d, focus, &dist) == 0;
    mean_up(s, up);
    orthogonal3(up, e1);
    cross3(up, e1, e2);
    keyed *order = SP_NEW(keyed, s->n);
    for (int i = 0; i < s->n; i++) {
        float c[3];
        sp_camera_center(&s->views[i].cam, c);
        for (int k = 0; k < 3; k++) c[k] -= has_focus ? focus[k] : 0;
        order[i].angle = has_focus ? atan2f(dot3(c, e2), dot3(c, e1)) : (float)i;
        order[i].index = i;
    }
    qsort(order, (size_t)s->n, sizeof *order, by_angle);
    int nkeys = sp_mini(s->n, 8);
    sp_camera *keys = SP_NEW(sp_camera, nkeys);
    for (int k = 0; k < nkeys; k++) {
        int src = nkeys > 1 ? (int)((long)k * (s->n - 1) / (nkeys - 1)) : 0;
        keys[k] = s->views[order[src].index].cam;
        keys[k].width = s->views[0].cam.width, keys[k].height = s->views[0].cam.height;
        keys[k].fx = s->views[0].cam.fx, keys[k].fy = s->views[0].cam.fy;
        keys[k].cx = s->views[0].cam.cx, keys[k].cy = s->views[0].cam.cy;
    }
    sp_campath_interp(keys, nkeys, frames, out);
    free(keys);
    free(order);
}

int sp_campath_make(const sp_dataset *d, sp_path_kind kind, int frames, sp_camera *out) {
    if (d->train.n < 1) return sp_error("%s: no training cameras to derive a camera path from", d->path ? d->path : "dataset");
    if (frames < 1) return sp_error("a camera path needs at least one frame");
    const sp_camera *first = &d->train.views[0].cam;
    for (int j = 0; j < frames; j++) out[j] = *first;
    switch (kind) {
    case SP_PATH_ORBIT: orbit_path(d, frames, out); break;
    case SP_PATH_SPIRAL: spiral_path(d, frames, out); break;
    case SP_PATH_INTERP: interp_path(d, frames, out); break;
    }
    return 0;
}
