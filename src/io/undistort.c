/* undistort.c — the OpenCV radial-tangential lens model, removal of distortion from images by
 * inverse mapping with a border crop, and sp_capture_load: the part of the COLMAP and
 * transforms.json loaders that decodes, scales, undistorts and splits the views. */
#include "core/threads.h"
#include "io/undistort.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

int sp_lens_is_pinhole(const sp_lens *l) {
    return l->k1 == 0 && l->k2 == 0 && l->k3 == 0 && l->p1 == 0 && l->p2 == 0;
}

void sp_lens_distort(const sp_lens *l, double x, double y, double *xd, double *yd) {
    double r2 = x * x + y * y;
    double d = 1.0 + r2 * (l->k1 + r2 * (l->k2 + r2 * l->k3));
    *xd = x * d + 2.0 * l->p1 * x * y + l->p2 * (r2 + 2.0 * x * x);
    *yd = y * d + l->p1 * (r2 + 2.0 * y * y) + 2.0 * l->p2 * x * y;
}

/* Jacobian of sp_lens_distort at (x, y): j = [dxd/dx, dxd/dy, dyd/dx, dyd/dy]. */
static void lens_jacobian(const sp_lens *l, double x, double y, double j[4]) {
    double r2 = x * x + y * y;
    double d = 1.0 + r2 * (l->k1 + r2 * (l->k2 + r2 * l->k3));
    double dd = l->k1 + r2 * (2.0 * l->k2 + 3.0 * r2 * l->k3); /* d(d)/d(r2) */
    j[0] = d + 2.0 * x * x * dd + 2.0 * l->p1 * y + 6.0 * l->p2 * x;
    j[1] = 2.0 * x * y * dd + 2.0 * l->p1 * x + 2.0 * l->p2 * y;
    j[2] = 2.0 * x * y * dd + 2.0 * l->p1 * x + 2.0 * l->p2 * y;
    j[3] = d + 2.0 * y * y * dd + 6.0 * l->p1 * y + 2.0 * l->p2 * x;
}

int sp_lens_undistort_point(const sp_lens *l, double xd, double yd, double *x, double *y) {
    double u = xd, v = yd;
    for (int it = 0; it < 50; it++) {
        double fx, fy, j[4];
        sp_lens_distort(l, u, v, &fx, &fy);
        fx -= xd, fy -= yd;
        if (fabs(fx) < 1e-12 && fabs(fy) < 1e-12) break;
        lens_jacobian(l, u, v, j);
        double det = j[0] * j[3] - j[1] * j[2];
        if (!(fabs(det) > 1e-12)) return sp_error("lens model is not invertible at (%g, %g)", xd, yd);
        u -= (j[3] * fx - j[1] * fy) / det;
        v -= (-j[2] * fx + j[0] * fy) / det;
        if (!isfinite(u) || !isfinite(v)) break;
    }
    double cx, cy;
    sp_lens_distort(l, u, v, &cx, &cy);
    if (!(fabs(cx - xd) < 1e-9 && fabs(cy - yd) < 1e-9))
        return sp_error("lens model could not be inverted at (%g, %g)", xd, yd);
    *x = u, *y = v;
    return 0;
}

/* Whether output pixel (i, j) of the uncropped undistorted image has a source: its centre maps
 * inside the source area and the model is locally invertible (no fold) there. */
static int pixel_ok(const sp_lens *l, int i, int j) {
    double x = (i + 0.5 - l->cx) / l->fx, y = (j + 0.5 - l->cy) / l->fy, xd, yd, jac[4];
    sp_lens_distort(l, x, y, &xd, &yd);
    double u = l->fx * xd + l->cx, v = l->fy * yd + l->cy;
    if (!(u >= 0.0 && u <= l->width && v >= 0.0 && v <= l->height)) return 0;
    lens_jacobian(l, x, y, jac);
    return jac[0] * jac[3] - jac[1] * jac[2] > 0.0;
}

int sp_undistort_crop(const sp_lens *l, sp_crop *c) {
    memset(c, 0, sizeof *c);
    if (sp_lens_is_pinhole(l)) return 0;
    int w = l->width, h = l->height;
    /* Shrink every side whose border row/column still has a pixel without a source. The valid
     * region of a sane lens is star-shaped around the principal point, so a valid border
     * implies a valid interior. */
    for (;;) {
        int x0 = c->left, x1 = w - c->right - 1, y0 = c->top, y1 = h - c->bottom - 1;
        if (x1 - x0 + 1 < (w + 1) / 2 || y1 - y0 + 1 < (h + 1) / 2)
            return sp_error("distortion (k1 %g, k2 %g, k3 %g, p1 %g, p2 %g) leaves less than half of a "
                            "%dx%d image usable; the coefficients do not fit this image",
                            l->k1, l->k2, l->k3, l->p1, l->p2, w, h);
        int bl = 0, bt = 0, br = 0, bb = 0;
        for (int i = x0; i <= x1; i++) {
            if (!bt && !pixel_ok(l, i, y0)) bt = 1;
            if (!bb && !pixel_ok(l, i, y1)) bb = 1;
        }
        for (int j = y0; j <= y1; j++) {
            if (!bl && !pixel_ok(l, x0, j)) bl = 1;
            if (!br && !pixel_ok(l, x1, j)) br = 1;
        }
        if (!(bl | bt | br | bb)) return 0;
        c->left += bl, c->top += bt, c->right += br, c->bottom += bb;
    }
}

int sp_undistort_image(const sp_image *src, const sp_lens *l, const sp_crop *c, sp_image *dst) {
    memset(dst, 0, sizeof *dst);
    if (src->width != l->width || src->height != l->height)
        return sp_error("image is %dx%d but its lens is for %dx%d", src->width, src->height, l->width, l->height);
    int w = src->width, h = src->height, ch = src->channels;
    int ow = w - c->left - c->right, oh = h - c->top - c->bottom;
    if (ow < 1 || oh < 1 || c->left < 0 || c->top < 0 || c->right < 0 || c->bottom < 0)
        return sp_error("crop %d,%d,%d,%d does not fit a %dx%d image", c->left, c->top, c->right, c->bottom, w, h);
    dst->width = ow, dst->height = oh, dst->channels = ch;
    dst->pixels = sp_malloc((size_t)ow * oh * ch);
    int alpha = ch == 4;
    for (int j = 0; j < oh; j++) {
        double y = (j + c->top + 0.5 - l->cy) / l->fy;
        for (int i = 0; i < ow; i++) {
            double x = (i + c->left + 0.5 - l->cx) / l->fx, xd, yd;
            sp_lens_distort(l, x, y, &xd, &yd);
            /* continuous source position, in units where pixel k's centre is at k */
            double sx = l->fx * xd + l->cx - 0.5, sy = l->fy * yd + l->cy - 0.5;
            sx = sx < 0 ? 0 : sx > w - 1 ? w - 1 : sx;
            sy = sy < 0 ? 0 : sy > h - 1 ? h - 1 : sy;
            int ix = (int)sx, iy = (int)sy;
            if (ix > w - 2) ix = w > 1 ? w - 2 : 0;
            if (iy > h - 2) iy = h > 1 ? h - 2 : 0;
            double fx = w > 1 ? sx - ix : 0, fy = h > 1 ? sy - iy : 0;
            int ix1 = w > 1 ? ix + 1 : ix, iy1 = h > 1 ? iy + 1 : iy;
            const uint8_t *p[4] = {src->pixels + ((size_t)iy * w + ix) * ch, src->pixels + ((size_t)iy * w + ix1) * ch,
                                   src->pixels + ((size_t)iy1 * w + ix) * ch, src->pixels + ((size_t)iy1 * w + ix1) * ch};
            double wt[4] = {(1 - fx) * (1 - fy), fx * (1 - fy), (1 - fx) * fy, fx * fy};
            uint8_t *o = dst->pixels + ((size_t)j * ow + i) * ch;
            double a = 0;
            if (alpha)
                for (int k = 0; k < 4; k++) a += wt[k] * p[k][3];
            for (int q = 0; q < ch; q++) {
                double v = 0;
                if (alpha && q < 3) {
                    for (int k = 0; k < 4; k++) v += wt[k] * p[k][q] * p[k][3];
                    v = a > 0 ? v / a : 0;
                } else {
                    for (int k = 0; k < 4; k++) v += wt[k] * p[k][q];
                }
                o[q] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v + 0.5);
            }
        }
    }
    return 0;
}

/* ---- loading captured views ---- */

void sp_capture_view_free(sp_capture_view *v) {
    free(v->name);
    free(v->path);
    free(v->where);
    v->name = v->path = v->where = NULL;
}

static int cmp_view_name(const void *a, const void *b) {
    return strcmp(((const sp_capture_view *)a)->name, ((const sp_capture_view *)b)->name);
}

typedef struct {
    sp_image img;
    int orig_w, orig_h; /* decoded size before the load-time downscale */
    char *err;
    sp_lens lens;       /* scaled to img's size */
    sp_crop crop;
} view_work;

int sp_capture_load(sp_dataset *out, sp_capture_view *views, int n, const sp_load_opts *opts,
                    sp_problems *problems) {
    int nprob0 = problems->n;
    qsort(views, (size_t)n, sizeof *views, cmp_view_name);
    for (int i = 1; i < n; i++)
        if (!strcmp(views[i - 1].name, views[i].name))
            sp_problems_add(problems, "%s: image %s is listed twice", views[i].where, views[i].name);
    view_work *wk = SP_NEW(view_work, n);
    int nt = sp_omp_threads_for(opts->threads);
    int load_pixels = opts->load_pixels;

    /* 1. decode (and downscale) in parallel; errors are kept per view and reported in order */
#pragma omp parallel for num_threads(nt) schedule(dynamic)
    for (int i = 0; i < n; i++) {
        view_work *w = &wk[i];
        sp_image im = {0};
        int header_only = !load_pixels && opts->header_only;
        if (header_only ? sp_image_probe(views[i].path, &im.width, &im.height, &im.channels)
                        : sp_image_load(views[i].path, &im)) {
            w->err = sp_strdup(sp_last_error());
            continue;
        }
        w->orig_w = im.width, w->orig_h = im.height;
        if (header_only && views[i].downscale > 1) { /* the size sp_image_downscale gives */
            im.width /= views[i].downscale, im.height /= views[i].downscale;
            if (im.width < 1 || im.height < 1)
                w->err = sp_strfmt("%s: image of %dx%d is too small to downscale by %d", views[i].path, w->orig_w,
                                   w->orig_h, views[i].downscale);
        } else if (views[i].downscale > 1) {
            sp_image small;
            if (sp_image_downscale(&im, views[i].downscale, &small)) {
                w->err = sp_strfmt("%s: %s", views[i].path, sp_last_error());
                sp_image_free(&im);
                continue;
            }
            sp_image_free(&im);
            im = small;
        }
        if (!load_pixels) free(im.pixels), im.pixels = NULL; /* sizes are all a check needs */
        w->img = im;
    }

    /* 2. intrinsics: resolve defaults, check the aspect ratio, scale to the decoded size */
    for (int i = 0; i < n; i++) {
        view_work *w = &wk[i];
        sp_capture_view *v = &views[i];
        if (w->err) {
            sp_problems_add(problems, "%s: %s", v->where, w->err);
            continue;
        }
        sp_lens l = v->lens;
        if (l.width <= 0 || l.height <= 0) {
            l.width = w->orig_w, l.height = w->orig_h;
            if (isnan(l.fx)) l.fx = isnan(v->angle_x) ? NAN : 0.5 * l.width / tan(0.5 * v->angle_x);
            if (isnan(l.fy)) l.fy = isnan(v->angle_y) ? l.fx : 0.5 * l.height / tan(0.5 * v->angle_y);
            if (isnan(l.cx)) l.cx = 0.5 * l.width;
            if (isnan(l.cy)) l.cy = 0.5 * l.height;
        }
        if (!(l.fx > 0 && l.fy > 0 && isfinite(l.fx) && isfinite(l.fy) && isfinite(l.cx) && isfinite(l.cy))) {
            sp_problems_add(problems, "%s: invalid intrinsics (fx %g, fy %g, cx %g, cy %g)", v->where, l.fx, l.fy,
                            l.cx, l.cy);
            continue;
        }
        int W = w->img.width, H = w->img.height;
        double sx = (double)W / l.width, sy = (double)H / l.height;
        /* integer downscaling rounds sizes, so allow a pixel and a half either way */
        if (fabs(W - l.width * sy) > 1.5 || fabs(H - l.height * sx) > 1.5) {
            sp_problems_add(problems,
                            "%s: image %s is %dx%d, which is not a scaled copy of the %dx%d the camera "
                            "model describes (aspect ratio differs)",
                            v->where, v->path, w->orig_w, w->orig_h, l.width, l.height);
            continue;
        }
        l.fx *= sx, l.cx *= sx, l.fy *= sy, l.cy *= sy;
        l.width = W, l.height = H;
        w->lens = l;
        if (sp_undistort_crop(&l, &w->crop))
            sp_problems_add(problems, "%s: %s", v->where, sp_last_error());
    }

    if (problems->n == nprob0) {
        /* 3. one crop per image size, so views that shared a size still do */
        for (int i = 0; i < n; i++)
            for (int k = 0; k < n; k++) {
                if (wk[k].img.width != wk[i].img.width || wk[k].img.height != wk[i].img.height) continue;
                sp_crop *a = &wk[i].crop;
                const sp_crop *b = &wk[k].crop;
                a->left = sp_maxi(a->left, b->left), a->top = sp_maxi(a->top, b->top);
                a->right = sp_maxi(a->right, b->right), a->bottom = sp_maxi(a->bottom, b->bottom);
            }
        /* 4. undistort in parallel */
#pragma omp parallel for num_threads(nt) schedule(dynamic)
        for (int i = 0; i < n; i++) {
            view_work *w = &wk[i];
            const sp_crop *c = &w->crop;
            int crop = c->left | c->top | c->right | c->bottom;
            if (!load_pixels || (sp_lens_is_pinhole(&w->lens) && !crop)) continue;
            sp_image u;
            if (sp_undistort_image(&w->img, &w->lens, c, &u)) {
                w->err = sp_strdup(sp_last_error());
                continue;
            }
            sp_image_free(&w->img);
            w->img = u;
        }
        for (int i = 0; i < n; i++)
            if (wk[i].err) sp_problems_add(problems, "%s: %s", views[i].where, wk[i].err);
    }

    /* 5. views and splits */
    if (problems->n == nprob0) {
        int he = opts->holdout_every > 0 ? opts->holdout_every : 0;
        out->train.views = SP_NEW(sp_view, n);
        out->test.views = SP_NEW(sp_view, n);
        for (int i = 0; i < n; i++) {
            view_work *w = &wk[i];
            sp_split *s = he && i % he == 0 ? &out->test : &out->train;
            sp_view *o = &s->views[s->n++];
            const sp_crop *c = &w->crop;
            o->name = views[i].name, views[i].name = NULL;
            o->path = views[i].path, views[i].path = NULL;
            o->cam.width = w->lens.width - c->left - c->right;
            o->cam.height = w->lens.height - c->top - c->bottom;
            o->cam.fx = (float)w->lens.fx, o->cam.fy = (float)w->lens.fy;
            o->cam.cx = (float)(w->lens.cx - c->left), o->cam.cy = (float)(w->lens.cy - c->top);
            memcpy(o->cam.R, views[i].R, sizeof o->cam.R);
            memcpy(o->cam.t, views[i].t, sizeof o->cam.t);
            o->channels = w->img.channels;
            o->downscale = views[i].downscale > 1 ? views[i].downscale : 1;
            o->undistorted = !sp_lens_is_pinhole(&w->lens) || (c->left | c->top | c->right | c->bottom);
            if (o->undistorted) o->lens = w->lens, o->crop = *c;
            if (o->channels == 4) out->has_alpha = 1;
            if (load_pixels) o->pixels = w->img.pixels, w->img.pixels = NULL;
        }
        if (out->train.n == 0)
            sp_problems_add(problems, "%s: no training views (holdout_every %d leaves none)", out->path ? out->path : "",
                            he);
    }

    for (int i = 0; i < n; i++) {
        sp_image_free(&wk[i].img);
        free(wk[i].err);
        sp_capture_view_free(&views[i]);
    }
    free(wk);
    if (problems->n != nprob0) {
        sp_error("%s", problems->items[nprob0]);
        return -1;
    }

    sp_dataset_compute_extent(out);
    if (out->num_points > 0) {
        for (int k = 0; k < 3; k++) out->init_min[k] = INFINITY, out->init_max[k] = -INFINITY;
        for (int p = 0; p < out->num_points; p++)
            for (int k = 0; k < 3; k++) {
                float x = out->points[p * 3 + k];
                if (x < out->init_min[k]) out->init_min[k] = x;
                if (x > out->init_max[k]) out->init_max[k] = x;
            }
    } else {
        /* No sparse points: a cube around what the cameras look at, of half-size the mean camera
         * distance to it (docs/datasets.md); for forward-facing captures (no such point) the
         * cameras' box. */
        float focus[3], dist;
        int ok = sp_dataset_focus(out, focus, &dist) == 0;
        for (int k = 0; k < 3; k++) {
            out->init_min[k] = ok ? focus[k] - dist : out->center[k] - out->extent;
            out->init_max[k] = ok ? focus[k] + dist : out->center[k] + out->extent;
        }
        out->init_by_views = 1;
    }
    return 0;
}
