/* dataset.c — split lookup, scene extent and freeing of loaded datasets. */
#include "scene/dataset.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/threads.h"

sp_split *sp_dataset_split(sp_dataset *d, const char *name) {
    if (!strcmp(name, "train")) return &d->train;
    if (!strcmp(name, "val")) return &d->val;
    if (!strcmp(name, "test")) return &d->test;
    return NULL;
}

void sp_dataset_compute_extent(sp_dataset *d) {
    double c[3] = {0, 0, 0};
    int n = d->train.n;
    for (int i = 0; i < n; i++) {
        float cc[3];
        sp_camera_center(&d->train.views[i].cam, cc);
        for (int k = 0; k < 3; k++) c[k] += cc[k];
    }
    for (int k = 0; k < 3; k++) d->center[k] = n ? (float)(c[k] / n) : 0.0f;
    double r = 0;
    for (int i = 0; i < n; i++) {
        float cc[3];
        sp_camera_center(&d->train.views[i].cam, cc);
        double dx = cc[0] - d->center[0], dy = cc[1] - d->center[1], dz = cc[2] - d->center[2];
        double dist = sqrt(dx * dx + dy * dy + dz * dz);
        if (dist > r) r = dist;
    }
    d->extent = (float)(1.1 * (r > 0 ? r : 1.0));
}

/* Solves the 3x3 system A x = b by Cramer's rule; -1 when A is near singular relative to its size. */
static int solve3(const double A[9], const double b[3], double x[3]) {
    double det = A[0] * (A[4] * A[8] - A[5] * A[7]) - A[1] * (A[3] * A[8] - A[5] * A[6]) +
                 A[2] * (A[3] * A[7] - A[4] * A[6]);
    double scale = A[0] + A[4] + A[8]; /* trace: the eigenvalues sum */
    if (!(fabs(det) > 1e-3 * scale * scale * scale)) return -1;
    for (int c = 0; c < 3; c++) {
        double M[9];
        for (int k = 0; k < 9; k++) M[k] = (k % 3 == c) ? b[k / 3] : A[k];
        x[c] = (M[0] * (M[4] * M[8] - M[5] * M[7]) - M[1] * (M[3] * M[8] - M[5] * M[6]) +
                M[2] * (M[3] * M[7] - M[4] * M[6])) /
               det;
    }
    return 0;
}

int sp_dataset_focus(const sp_dataset *d, float focus[3], float *mean_dist) {
    const sp_split *s = &d->train;
    if (s->n < 2) return -1;
    /* minimise sum_i |(I - a_i a_i^T)(p - c_i)|^2 over p: sum (I - a a^T) p = sum (I - a a^T) c */
    double A[9] = {0}, b[3] = {0};
    for (int i = 0; i < s->n; i++) {
        const sp_camera *cam = &s->views[i].cam;
        float c[3];
        sp_camera_center(cam, c);
        double a[3] = {cam->R[6], cam->R[7], cam->R[8]}; /* camera z (forward) in world axes */
        double len = sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2]);
        for (int k = 0; k < 3; k++) a[k] /= len;
        for (int r = 0; r < 3; r++)
            for (int k = 0; k < 3; k++) {
                double P = (r == k) - a[r] * a[k];
                A[3 * r + k] += P;
                b[r] += P * c[k];
            }
    }
    double p[3];
    if (solve3(A, b, p)) return -1;
    int in_front = 0;
    double dist = 0.0;
    for (int i = 0; i < s->n; i++) {
        const sp_camera *cam = &s->views[i].cam;
        float c[3];
        sp_camera_center(cam, c);
        double v[3] = {p[0] - c[0], p[1] - c[1], p[2] - c[2]};
        in_front += v[0] * cam->R[6] + v[1] * cam->R[7] + v[2] * cam->R[8] > 0.0;
        dist += sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
    }
    if (2 * in_front < s->n) return -1;
    for (int k = 0; k < 3; k++) focus[k] = (float)p[k];
    *mean_dist = (float)(dist / s->n);
    return 0;
}

void sp_view_composite(const sp_view *v, sp_alpha_mode alpha, const float bg[3], float *t) {
    int px = v->cam.width * v->cam.height, c = v->channels;
#pragma omp parallel for schedule(static) num_threads(sp_omp_threads())
    for (int i = 0; i < px; i++) {
        const uint8_t *p = v->pixels + (size_t)i * c;
        float a = c == 4 ? p[3] * (1.0f / 255.0f) : 1.0f;
        for (int k = 0; k < 3; k++) {
            float col = p[k] * (1.0f / 255.0f);
            t[3 * i + k] = (alpha == SP_ALPHA_PREMULTIPLIED || c != 4 ? col : col * a) + bg[k] * (1.0f - a);
        }
    }
}

void sp_view_free(sp_view *v) {
    free(v->name);
    free(v->path);
    free(v->pixels);
    memset(v, 0, sizeof *v);
}

static void free_split(sp_split *s) {
    for (int i = 0; i < s->n; i++) sp_view_free(&s->views[i]);
    free(s->views);
    memset(s, 0, sizeof *s);
}

void sp_dataset_free(sp_dataset *d) {
    free_split(&d->train);
    free_split(&d->val);
    free_split(&d->test);
    free(d->path);
    free(d->format);
    free(d->points);
    free(d->point_colors);
    memset(d, 0, sizeof *d);
}
