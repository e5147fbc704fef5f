/* dataset.c — split lookup, scene extent and freeing of loaded datasets. */
#include "scene/dataset.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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

void sp_view_composite(const sp_view *v, sp_alpha_mode alpha, const float bg[3], float *t) {
    int px = v->cam.width * v->cam.height, c = v->channels;
#pragma omp parallel for schedule(static)
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
