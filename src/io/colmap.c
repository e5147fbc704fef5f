/* colmap.c — COLMAP sparse models (cameras, images, points3D; binary or text) as an sp_dataset.
 * The model is looked for in PATH/sparse/0, PATH/sparse, then PATH. COLMAP poses are already
 * world -> camera in OpenCV axes. Images come from PATH/<opts->images>, else PATH/images_<N>
 * when N = opts->downscale > 1 and that folder exists (used as is), else PATH/images (then
 * downscaled on load). Intrinsics are scaled by the ratio of the size found to the model's
 * size, and distortion is removed on load (io/undistort.c). */
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "io/loader.h"
#include "io/sanity.h"
#include "io/undistort.h"

/* COLMAP's camera models, indexed by model id, with their parameter counts. */
static const struct {
    const char *name;
    int nparams;
} models[] = {
    {"SIMPLE_PINHOLE", 3}, {"PINHOLE", 4},  {"SIMPLE_RADIAL", 4}, {"RADIAL", 5},
    {"OPENCV", 8},         {"OPENCV_FISHEYE", 8}, {"FULL_OPENCV", 12}, {"FOV", 5},
    {"SIMPLE_RADIAL_FISHEYE", 4}, {"RADIAL_FISHEYE", 5}, {"THIN_PRISM_FISHEYE", 12},
    {"RAD_TAN_THIN_PRISM_FISHEYE", 16},
};
#define NUM_MODELS ((int)(sizeof models / sizeof *models))
#define NUM_SUPPORTED 5 /* ids 0..4 */
#define SUPPORTED_LIST "SIMPLE_PINHOLE, PINHOLE, SIMPLE_RADIAL, RADIAL, OPENCV"
#define MAX_PARAMS 16
#define MAX_REPORTED 10 /* missing images reported one by one before summarizing */

typedef struct {
    long long id;
    int model; /* index into models[], -1 unknown */
    long long width, height;
    double params[MAX_PARAMS];
    int line; /* text: line of the camera (0: binary) */
} cm_camera;

typedef struct {
    long long id, camera_id;
    double q[4], t[3];
    char *name;
    int line; /* text: line of the image (0: binary) */
} cm_image;

/* "path:LINE" for text files, "path" for binary ones. */
static const char *locate(char *buf, size_t n, const char *path, int line) {
    if (line > 0) snprintf(buf, n, "%s:%d", path, line);
    else snprintf(buf, n, "%s", path);
    return buf;
}

typedef struct {
    cm_camera *cams;
    int ncams;
    cm_image *imgs;
    int nimgs;
    float *xyz;
    uint8_t *rgb;
    int npts;
    int npts_bad; /* points refused (the first MAX_REPORTED are reported one by one) */
} cm_model;

static void model_free(cm_model *m) {
    for (int i = 0; i < m->nimgs; i++) free(m->imgs[i].name);
    free(m->cams);
    free(m->imgs);
    free(m->xyz);
    free(m->rgb);
    memset(m, 0, sizeof *m);
}

static int model_by_name(const char *s) {
    for (int i = 0; i < NUM_MODELS; i++)
        if (!strcmp(models[i].name, s)) return i;
    return -1;
}

/* ---- binary ---- */

typedef struct {
    const uint8_t *p;
    size_t n, off;
    const char *path;
    sp_problems *problems;
    int bad;
} breader;

static int need(breader *r, size_t k, const char *what) {
    if (r->bad) return -1;
    if (r->n - r->off < k) {
        sp_problems_add(r->problems, "%s: truncated: %s at byte %zu needs %zu bytes, only %zu left", r->path, what,
                        r->off, k, r->n - r->off);
        r->bad = 1;
        return -1;
    }
    return 0;
}
static uint64_t rd_u64(breader *r, const char *what) {
    uint64_t v = 0;
    if (need(r, 8, what)) return 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | r->p[r->off + i];
    r->off += 8;
    return v;
}
static uint32_t rd_u32(breader *r, const char *what) {
    uint32_t v = 0;
    if (need(r, 4, what)) return 0;
    for (int i = 3; i >= 0; i--) v = v << 8 | r->p[r->off + i];
    r->off += 4;
    return v;
}
static double rd_f64(breader *r, const char *what) {
    uint64_t u = rd_u64(r, what);
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}
/* A count followed by records of at least min_size bytes each: rejects counts the file cannot
 * hold before anything is allocated. */
static uint64_t rd_count(breader *r, size_t min_size, const char *what) {
    uint64_t c = rd_u64(r, what);
    if (r->bad) return 0;
    if (c > (r->n - r->off) / min_size) {
        sp_problems_add(r->problems, "%s: says %llu %s but the %zu bytes left can hold at most %zu", r->path,
                        (unsigned long long)c, what, r->n - r->off, (r->n - r->off) / min_size);
        r->bad = 1;
        return 0;
    }
    return c;
}

static int read_file_problem(const char *path, char **data, size_t *n, sp_problems *problems) {
    if (sp_read_file(path, data, n)) {
        sp_problems_add(problems, "%s", sp_last_error());
        return -1;
    }
    return 0;
}

static int cameras_bin(const char *path, cm_model *m, sp_problems *problems) {
    char *data;
    size_t n;
    if (read_file_problem(path, &data, &n, problems)) return -1;
    breader r = {(const uint8_t *)data, n, 0, path, problems, 0};
    int p0 = problems->n;
    uint64_t count = rd_count(&r, 24 + 3 * 8, "cameras");
    m->cams = SP_NEW(cm_camera, count ? count : 1);
    for (uint64_t i = 0; i < count && !r.bad; i++) {
        cm_camera *c = &m->cams[m->ncams];
        c->id = rd_u32(&r, "camera id");
        uint32_t model = rd_u32(&r, "camera model");
        c->width = (long long)rd_u64(&r, "camera width");
        c->height = (long long)rd_u64(&r, "camera height");
        if (r.bad) break;
        if (model >= (uint32_t)NUM_MODELS) {
            sp_problems_add(problems, "%s: camera %lld has unknown model id %u (supported: " SUPPORTED_LIST ")", path,
                            c->id, model);
            break; /* its parameter count is unknown: nothing after it can be read */
        }
        c->model = (int)model;
        for (int k = 0; k < models[model].nparams; k++) {
            double v = rd_f64(&r, "camera parameters");
            if (k < MAX_PARAMS) c->params[k] = v;
        }
        if (r.bad) break;
        if ((int)model >= NUM_SUPPORTED)
            sp_problems_add(problems, "%s: camera %lld uses model %s, which splat does not support (supported: " SUPPORTED_LIST ")",
                            path, c->id, models[model].name);
        m->ncams++;
    }
    if (!r.bad && r.off != n)
        sp_problems_add(problems, "%s: %zu unexpected bytes after the last camera", path, n - r.off);
    free(data);
    return problems->n == p0 ? 0 : -1;
}

static int images_bin(const char *path, cm_model *m, sp_problems *problems) {
    char *data;
    size_t n;
    if (read_file_problem(path, &data, &n, problems)) return -1;
    breader r = {(const uint8_t *)data, n, 0, path, problems, 0};
    int p0 = problems->n;
    uint64_t count = rd_count(&r, 4 + 7 * 8 + 4 + 2 + 8, "images");
    m->imgs = SP_NEW(cm_image, count ? count : 1);
    for (uint64_t i = 0; i < count && !r.bad; i++) {
        cm_image im = {0};
        im.id = rd_u32(&r, "image id");
        for (int k = 0; k < 4; k++) im.q[k] = rd_f64(&r, "image rotation");
        for (int k = 0; k < 3; k++) im.t[k] = rd_f64(&r, "image translation");
        im.camera_id = rd_u32(&r, "image camera id");
        if (r.bad) break;
        const uint8_t *s = r.p + r.off, *e = memchr(s, 0, r.n - r.off);
        if (!e) {
            sp_problems_add(problems, "%s: truncated: name of image %lld at byte %zu has no end", path, im.id, r.off);
            r.bad = 1;
            break;
        }
        if (e == s) sp_problems_add(problems, "%s: image %lld has an empty name", path, im.id);
        im.name = sp_strdup((const char *)s);
        r.off += (size_t)(e - s) + 1;
        uint64_t np = rd_count(&r, 24, "2D points");
        if (!r.bad) r.off += np * 24;
        m->imgs[m->nimgs++] = im;
    }
    if (!r.bad && r.off != n)
        sp_problems_add(problems, "%s: %zu unexpected bytes after the last image", path, n - r.off);
    free(data);
    return problems->n == p0 ? 0 : -1;
}

static int points_bin(const char *path, cm_model *m, sp_problems *problems) {
    char *data;
    size_t n;
    if (read_file_problem(path, &data, &n, problems)) return -1;
    breader r = {(const uint8_t *)data, n, 0, path, problems, 0};
    int p0 = problems->n;
    uint64_t count = rd_count(&r, 8 + 24 + 3 + 8 + 8, "points");
    if (count > 0x7fffffff) count = 0, sp_problems_add(problems, "%s: too many points", path);
    m->xyz = SP_NEW(float, 3 * (count ? count : 1));
    m->rgb = SP_NEW(uint8_t, 3 * (count ? count : 1));
    for (uint64_t i = 0; i < count && !r.bad; i++) {
        rd_u64(&r, "point id");
        double x[3];
        for (int k = 0; k < 3; k++) x[k] = rd_f64(&r, "point position");
        if (need(&r, 3, "point colour")) break;
        uint8_t *c = &m->rgb[3 * m->npts];
        memcpy(c, r.p + r.off, 3);
        r.off += 3;
        rd_f64(&r, "point error");
        uint64_t tl = rd_count(&r, 8, "track entries");
        if (r.bad) break;
        r.off += tl * 8;
        char why[200];
        if (sp_check_point(x, why, sizeof why)) {
            if (m->npts_bad++ < MAX_REPORTED)
                sp_problems_add(problems, "%s: point %llu: %s", path, (unsigned long long)i, why);
            continue;
        }
        for (int k = 0; k < 3; k++) m->xyz[3 * m->npts + k] = (float)x[k];
        m->npts++;
    }
    if (!r.bad && r.off != n)
        sp_problems_add(problems, "%s: %zu unexpected bytes after the last point", path, n - r.off);
    free(data);
    return problems->n == p0 ? 0 : -1;
}

/* ---- text ---- */

/* Splits a line into whitespace-separated tokens (in place). */
static int tokenize(char *line, char **tok, int max) {
    int n = 0;
    char *save = NULL;
    for (char *t = strtok_r(line, " \t\r", &save); t; t = strtok_r(NULL, " \t\r", &save)) {
        if (n == max) return max + 1;
        tok[n++] = t;
    }
    return n;
}
static int parse_ll(const char *s, long long *v) {
    char *e;
    *v = strtoll(s, &e, 10);
    return *s && !*e ? 0 : -1;
}
static int parse_d(const char *s, double *v) {
    char *e;
    *v = strtod(s, &e);
    return *s && !*e && isfinite(*v) ? 0 : -1;
}

/* Calls fn on each line (1-based numbers); stops at the first -1. */
typedef int (*line_fn)(char *line, int lineno, void *ctx);
static int each_line(const char *path, line_fn fn, void *ctx, sp_problems *problems) {
    char *data;
    size_t n;
    if (read_file_problem(path, &data, &n, problems)) return -1;
    int rc = 0, lineno = 0;
    char *p = data;
    while (p < data + n) {
        char *e = strchr(p, '\n');
        if (e) *e = 0;
        lineno++;
        if (fn(p, lineno, ctx)) {
            rc = -1;
            break;
        }
        if (!e) break;
        p = e + 1;
    }
    free(data);
    return rc;
}

typedef struct {
    const char *path;
    cm_model *m;
    int cap;
    sp_problems *problems;
    int expect_points_line; /* images.txt: the line after an image line lists its 2D points */
} text_ctx;

static int is_blank_or_comment(const char *l) {
    while (*l == ' ' || *l == '\t' || *l == '\r') l++;
    return !*l || *l == '#';
}

static int camera_line(char *line, int lineno, void *vctx) {
    text_ctx *c = vctx;
    if (is_blank_or_comment(line)) return 0;
    char *tok[32];
    int nt = tokenize(line, tok, 31);
    long long id, w, h;
    if (nt < 4 || parse_ll(tok[0], &id) || parse_ll(tok[2], &w) || parse_ll(tok[3], &h)) {
        sp_problems_add(c->problems, "%s:%d: expected CAMERA_ID MODEL WIDTH HEIGHT PARAMS...", c->path, lineno);
        return -1;
    }
    int model = model_by_name(tok[1]);
    if (model < 0 || model >= NUM_SUPPORTED) {
        sp_problems_add(c->problems, "%s:%d: camera %lld uses model %s, which splat does not support (supported: " SUPPORTED_LIST ")",
                        c->path, lineno, id, tok[1]);
        return 0; /* the line is well formed: keep reading to report every camera */
    }
    if (nt - 4 != models[model].nparams) {
        sp_problems_add(c->problems, "%s:%d: camera %lld: model %s takes %d parameters, found %d", c->path, lineno, id,
                        tok[1], models[model].nparams, nt - 4);
        return -1;
    }
    if (c->m->ncams == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 16;
        c->m->cams = sp_realloc(c->m->cams, (size_t)c->cap * sizeof *c->m->cams);
    }
    cm_camera *cam = &c->m->cams[c->m->ncams];
    memset(cam, 0, sizeof *cam);
    cam->id = id, cam->model = model, cam->width = w, cam->height = h, cam->line = lineno;
    for (int k = 0; k < nt - 4; k++)
        if (parse_d(tok[4 + k], &cam->params[k])) {
            sp_problems_add(c->problems, "%s:%d: camera %lld: parameter %d (\"%s\") is not a number", c->path, lineno, id,
                            k + 1, tok[4 + k]);
            return -1;
        }
    c->m->ncams++;
    return 0;
}

/* A POINTS2D line: X Y POINT3D_ID triplets of numbers (possibly none). */
static int is_points_line(const char *l) {
    int n = 0;
    for (;;) {
        while (*l == ' ' || *l == '\t' || *l == '\r') l++;
        if (!*l) return n % 3 == 0;
        char *e;
        strtod(l, &e);
        if (e == l || (*e && *e != ' ' && *e != '\t' && *e != '\r')) return 0;
        l = e;
        n++;
    }
}

static int image_line(char *line, int lineno, void *vctx) {
    text_ctx *c = vctx;
    if (c->expect_points_line) {
        c->expect_points_line = 0;
        if (!is_points_line(line)) {
            const cm_image *prev = &c->m->imgs[c->m->nimgs - 1];
            sp_problems_add(c->problems,
                            "%s:%d: expected the 2D points of image %lld (%s) from line %d (X Y POINT3D_ID triplets): "
                            "images.txt needs a points line, empty when there are none, after every image line",
                            c->path, lineno, prev->id, prev->name, lineno - 1);
            return -1;
        }
        return 0;
    }
    if (is_blank_or_comment(line)) return 0;
    char *tok[11];
    int nt = tokenize(line, tok, 10);
    cm_image im = {0};
    int bad = nt < 10 || parse_ll(tok[0], &im.id) || parse_ll(tok[8], &im.camera_id);
    for (int k = 0; k < 7 && !bad; k++) bad = parse_d(tok[1 + k], k < 4 ? &im.q[k] : &im.t[k - 4]);
    if (bad || nt > 10) {
        sp_problems_add(c->problems, "%s:%d: expected IMAGE_ID QW QX QY QZ TX TY TZ CAMERA_ID NAME", c->path, lineno);
        return -1;
    }
    im.name = sp_strdup(tok[9]);
    im.line = lineno;
    if (c->m->nimgs == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 16;
        c->m->imgs = sp_realloc(c->m->imgs, (size_t)c->cap * sizeof *c->m->imgs);
    }
    c->m->imgs[c->m->nimgs++] = im;
    c->expect_points_line = 1;
    return 0;
}

static int point_line(char *line, int lineno, void *vctx) {
    text_ctx *c = vctx;
    if (is_blank_or_comment(line)) return 0;
    char *tok[9];
    int nt = tokenize(line, tok, 8); /* the track that follows is not needed */
    long long id, rgb[3];
    double x[3], err;
    int bad = nt < 8 || parse_ll(tok[0], &id);
    for (int k = 0; k < 3 && !bad; k++)
        bad = parse_d(tok[1 + k], &x[k]) || parse_ll(tok[4 + k], &rgb[k]) || rgb[k] < 0 || rgb[k] > 255;
    if (bad || parse_d(tok[7], &err)) {
        sp_problems_add(c->problems, "%s:%d: expected POINT3D_ID X Y Z R G B ERROR TRACK...", c->path, lineno);
        return -1;
    }
    char why[200];
    if (sp_check_point(x, why, sizeof why)) {
        if (c->m->npts_bad++ < MAX_REPORTED) sp_problems_add(c->problems, "%s:%d: point %lld: %s", c->path, lineno, id, why);
        return 0;
    }
    if (c->m->npts == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 1024;
        c->m->xyz = sp_realloc(c->m->xyz, (size_t)c->cap * 3 * sizeof(float));
        c->m->rgb = sp_realloc(c->m->rgb, (size_t)c->cap * 3);
    }
    for (int k = 0; k < 3; k++) {
        c->m->xyz[3 * c->m->npts + k] = (float)x[k];
        c->m->rgb[3 * c->m->npts + k] = (uint8_t)rgb[k];
    }
    c->m->npts++;
    return 0;
}

static int read_text(const char *path, line_fn fn, cm_model *m, sp_problems *problems) {
    text_ctx c = {path, m, 0, problems, 0};
    int p0 = problems->n;
    each_line(path, fn, &c, problems);
    return problems->n == p0 ? 0 : -1;
}

/* ---- dataset ---- */

static char *find_model_dir(const char *path) {
    const char *subs[] = {"sparse/0", "sparse", ""};
    for (int i = 0; i < 3; i++) {
        char *d = *subs[i] ? sp_path_join(path, subs[i]) : sp_strdup(path);
        char *b = sp_path_join(d, "cameras.bin"), *t = sp_path_join(d, "cameras.txt");
        int ok = sp_file_exists(b) || sp_file_exists(t);
        free(b);
        free(t);
        if (ok) return d;
        free(d);
    }
    return NULL;
}

/* "images_2, images_4" — the downscaled image folders present, for a helpful message. */
static char *list_image_folders(const char *path) {
    DIR *d = opendir(path);
    char buf[512] = "";
    if (!d) return sp_strdup("");
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strncmp(e->d_name, "images", 6) || !strcmp(e->d_name, "images")) continue;
        size_t l = strlen(buf);
        int f = 0, len = 0; /* images_<N>/ is what data.downscale=N picks */
        if (sscanf(e->d_name, "images_%d%n", &f, &len) == 1 && !e->d_name[len] && f > 1)
            snprintf(buf + l, sizeof buf - l, "%sdata.downscale=%d (%.100s/)", l ? ", " : "", f, e->d_name);
        else
            snprintf(buf + l, sizeof buf - l, "%sdata.images=\"%.100s\" (%.100s/)", l ? ", " : "", e->d_name, e->d_name);
    }
    closedir(d);
    return sp_strdup(buf);
}

static void quat_to_matrix(const double q_in[4], float R[9]) {
    double n = sqrt(q_in[0] * q_in[0] + q_in[1] * q_in[1] + q_in[2] * q_in[2] + q_in[3] * q_in[3]);
    double w = q_in[0] / n, x = q_in[1] / n, y = q_in[2] / n, z = q_in[3] / n;
    R[0] = (float)(1 - 2 * (y * y + z * z)), R[1] = (float)(2 * (x * y - w * z)), R[2] = (float)(2 * (x * z + w * y));
    R[3] = (float)(2 * (x * y + w * z)), R[4] = (float)(1 - 2 * (x * x + z * z)), R[5] = (float)(2 * (y * z - w * x));
    R[6] = (float)(2 * (x * z - w * y)), R[7] = (float)(2 * (y * z + w * x)), R[8] = (float)(1 - 2 * (x * x + y * y));
}

static sp_lens camera_lens(const cm_camera *c) {
    sp_lens l = {0};
    const double *p = c->params;
    l.width = (int)c->width, l.height = (int)c->height;
    switch (c->model) {
    case 0: l.fx = l.fy = p[0], l.cx = p[1], l.cy = p[2]; break;                                /* SIMPLE_PINHOLE */
    case 1: l.fx = p[0], l.fy = p[1], l.cx = p[2], l.cy = p[3]; break;                          /* PINHOLE */
    case 2: l.fx = l.fy = p[0], l.cx = p[1], l.cy = p[2], l.k1 = p[3]; break;                   /* SIMPLE_RADIAL */
    case 3: l.fx = l.fy = p[0], l.cx = p[1], l.cy = p[2], l.k1 = p[3], l.k2 = p[4]; break;      /* RADIAL */
    case 4:                                                                                      /* OPENCV */
        l.fx = p[0], l.fy = p[1], l.cx = p[2], l.cy = p[3];
        l.k1 = p[4], l.k2 = p[5], l.p1 = p[6], l.p2 = p[7];
        break;
    }
    return l;
}

static int cmp_camera_id(const void *a, const void *b) {
    long long x = ((const cm_camera *)a)->id, y = ((const cm_camera *)b)->id;
    return x < y ? -1 : x > y;
}

/* A supported camera's size and intrinsics against the shared limits (io/sanity.h). */
static void check_camera(const cm_camera *c, const char *fcam, sp_problems *problems) {
    if (c->model < 0 || c->model >= NUM_SUPPORTED) return; /* reported when read */
    char loc[1200], why[200];
    locate(loc, sizeof loc, fcam, c->line);
    if (sp_check_image_size((double)c->width, (double)c->height, why, sizeof why)) {
        sp_problems_add(problems, "%s: camera %lld: %s", loc, c->id, why);
        return;
    }
    for (int k = 0; k < models[c->model].nparams; k++)
        if (!isfinite(c->params[k])) {
            sp_problems_add(problems, "%s: camera %lld: parameter %d is not finite", loc, c->id, k + 1);
            return;
        }
    sp_lens l = camera_lens(c);
    if (sp_check_focal(l.fx, "focal length", why, sizeof why) || sp_check_focal(l.fy, "focal length", why, sizeof why) ||
        sp_check_principal(l.cx, "principal point x", why, sizeof why) ||
        sp_check_principal(l.cy, "principal point y", why, sizeof why))
        sp_problems_add(problems, "%s: camera %lld: %s", loc, c->id, why);
}

static int load_colmap(const char *path, const sp_load_opts *opts, sp_dataset *out, sp_problems *problems) {
    int p0 = problems->n;
    char *dir = find_model_dir(path);
    if (!dir) {
        sp_problems_add(problems, "%s: no COLMAP model (cameras.bin or cameras.txt in %s/sparse/0, %s/sparse or %s)", path,
                        path, path, path);
        return -1;
    }
    char *cb = sp_path_join(dir, "cameras.bin");
    int bin = sp_file_exists(cb);
    free(cb);
    const char *ext = bin ? "bin" : "txt";
    char *fcam = sp_strfmt("%s/cameras.%s", dir, ext), *fimg = sp_strfmt("%s/images.%s", dir, ext),
         *fpts = sp_strfmt("%s/points3D.%s", dir, ext);
    cm_model m = {0};
    sp_capture_view *views = NULL;
    int nviews = 0;

    if (bin ? cameras_bin(fcam, &m, problems) : read_text(fcam, camera_line, &m, problems)) goto done;
    for (int i = 0; i < m.ncams; i++) check_camera(&m.cams[i], fcam, problems);
    /* sorted by id: duplicates are neighbours and images find their camera by bisection, so
     * a model with very many cameras and images stays fast */
    if (m.ncams > 1) qsort(m.cams, (size_t)m.ncams, sizeof *m.cams, cmp_camera_id);
    for (int i = 1; i < m.ncams; i++)
        if (m.cams[i].id == m.cams[i - 1].id && (i < 2 || m.cams[i - 2].id != m.cams[i].id))
            sp_problems_add(problems, "%s: camera %lld is defined twice", fcam, m.cams[i].id);
    if (problems->n != p0) goto done;
    if (!sp_file_exists(fimg)) {
        sp_problems_add(problems, "%s: missing (the model in %s has cameras but no images)", fimg, dir);
        goto done;
    }
    if (bin ? images_bin(fimg, &m, problems) : read_text(fimg, image_line, &m, problems)) goto done;
    if (sp_file_exists(fpts)) {
        int rc = bin ? points_bin(fpts, &m, problems) : read_text(fpts, point_line, &m, problems);
        if (m.npts_bad > MAX_REPORTED)
            sp_problems_add(problems, "%s: %d more points refused", fpts, m.npts_bad - MAX_REPORTED);
        if (rc) goto done;
    } else {
        SP_WARN("%s: missing; Gaussians will start from random points", fpts);
    }
    if (m.nimgs == 0) {
        sp_problems_add(problems, "%s: no images", fimg);
        goto done;
    }

    /* image folder */
    int ds = opts->downscale > 1 ? opts->downscale : 1, load_ds = ds;
    char *folder = NULL;
    if (opts->images && *opts->images) {
        folder = sp_path_join(path, opts->images);
    } else {
        char *sub = sp_strfmt("images_%d", ds);
        folder = sp_path_join(path, sub);
        free(sub);
        if (ds > 1 && sp_dir_exists(folder)) {
            load_ds = 1;
        } else {
            free(folder);
            folder = sp_path_join(path, "images");
        }
    }
    if (!sp_dir_exists(folder)) {
        char *alts = list_image_folders(path);
        if (*alts)
            sp_problems_add(problems, "%s: no such image folder; this scene has %s",
                            folder, alts);
        else
            sp_problems_add(problems, "%s: no such image folder", folder);
        free(alts);
        free(folder);
        goto done;
    }

    views = SP_NEW(sp_capture_view, m.nimgs);
    int missing = 0;
    for (int i = 0; i < m.nimgs; i++) {
        cm_image *im = &m.imgs[i];
        cm_camera key = {.id = im->camera_id};
        const cm_camera *cam = m.ncams ? bsearch(&key, m.cams, (size_t)m.ncams, sizeof *m.cams, cmp_camera_id) : NULL;
        if (!cam) {
            sp_problems_add(problems, "%s: image %lld (%s) refers to camera %lld, which %s does not define", fimg, im->id,
                            im->name, im->camera_id, fcam);
            continue;
        }
        if (cam->model < 0 || cam->model >= NUM_SUPPORTED) continue; /* reported with the camera */
        char loc[1200], why[200];
        locate(loc, sizeof loc, fimg, im->line);
        double qn = sqrt(im->q[0] * im->q[0] + im->q[1] * im->q[1] + im->q[2] * im->q[2] + im->q[3] * im->q[3]);
        if (!(qn > 1e-8) || !isfinite(qn)) {
            sp_problems_add(problems, "%s: image %lld (%s) has an invalid pose (rotation quaternion %g %g %g %g)", loc,
                            im->id, im->name, im->q[0], im->q[1], im->q[2], im->q[3]);
            continue;
        }
        if (sp_check_translation(im->t, "translation", why, sizeof why)) {
            sp_problems_add(problems, "%s: image %lld (%s) has an invalid pose: %s", loc, im->id, im->name, why);
            continue;
        }
        if (sp_check_image_name(loc, "image name", im->name, opts, problems)) continue;
        char *ipath = sp_path_join(folder, im->name);
        if (!sp_file_exists(ipath)) {
            if (missing++ < MAX_REPORTED)
                sp_problems_add(problems, "%s: image %lld (%s) not found: %s", fimg, im->id, im->name, ipath);
            free(ipath);
            continue;
        }
        sp_capture_view *v = &views[nviews++];
        v->name = sp_strdup(im->name);
        v->path = ipath;
        v->where = sp_strfmt("%s: image %lld (%s)", fimg, im->id, im->name);
        v->downscale = load_ds;
        v->lens = camera_lens(cam);
        v->angle_x = v->angle_y = NAN;
        quat_to_matrix(im->q, v->R);
        for (int k = 0; k < 3; k++) v->t[k] = (float)im->t[k];
    }
    if (missing > MAX_REPORTED)
        sp_problems_add(problems, "%s: %d more images not found in %s", fimg, missing - MAX_REPORTED, folder);
    free(folder);
    if (problems->n != p0) goto done;

    out->num_points = m.npts;
    out->points = m.xyz, m.xyz = NULL;
    out->point_colors = m.rgb, m.rgb = NULL;
    sp_capture_load(out, views, nviews, opts, problems);
    nviews = 0;

done:
    for (int i = 0; i < nviews; i++) sp_capture_view_free(&views[i]);
    free(views);
    model_free(&m);
    free(fcam);
    free(fimg);
    free(fpts);
    free(dir);
    return problems->n == p0 ? 0 : -1;
}

int sp_load_colmap(const char *path, const sp_load_opts *opts, sp_dataset *out, sp_problems *problems) {
    sp_problems local = {0};
    sp_problems *pr = problems ? problems : &local;
    int p0 = pr->n;
    memset(out, 0, sizeof *out);
    out->path = sp_strdup(path);
    out->format = sp_strdup("colmap");
    sp_load_opts defaults = {.downscale = 1, .load_pixels = 1};
    int rc = load_colmap(path, opts ? opts : &defaults, out, pr);
    if (rc || pr->n != p0) {
        sp_error("%s", pr->n > p0 ? pr->items[p0] : "COLMAP model could not be loaded");
        sp_dataset_free(out);
        rc = -1;
    }
    sp_problems_free(&local);
    return rc;
}
