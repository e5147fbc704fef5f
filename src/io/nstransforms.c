/* nstransforms.c — nerfstudio / instant-ngp transforms.json as an sp_dataset.
 * One file lists every frame; intrinsics (fl_x, fl_y, cx, cy, w, h, k1, k2, k3, p1, p2, or
 * camera_angle_x / camera_angle_y) are global or per frame, a frame's value winning.
 * transform_matrix is camera -> world in OpenGL axes. Poses are kept as given (instant-ngp
 * scenes are often not centred; the scene extent takes care of scale). Distortion is removed
 * on load (io/undistort.c). */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "io/loader.h"
#include "io/sanity.h"
#include "io/undistort.h"

/* A number under key in a frame, else in the root; NAN when neither has it. A present value
 * that is not a number is a problem. */
static double get_num(const cJSON *frame, const cJSON *root, const char *key, const char *where, int *bad,
                      sp_problems *problems) {
    const cJSON *objs[2] = {frame, root};
    for (int i = 0; i < 2; i++) {
        const cJSON *v = objs[i] ? cJSON_GetObjectItemCaseSensitive(objs[i], key) : NULL;
        if (!v || cJSON_IsNull(v)) continue;
        if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble)) {
            sp_problems_add(problems, "%s: %s is not a number", where, key);
            *bad = 1;
            return NAN;
        }
        return v->valuedouble;
    }
    return NAN;
}

static const char *get_str(const cJSON *frame, const cJSON *root, const char *key) {
    const cJSON *objs[2] = {frame, root};
    for (int i = 0; i < 2; i++) {
        const cJSON *v = objs[i] ? cJSON_GetObjectItemCaseSensitive(objs[i], key) : NULL;
        if (cJSON_IsString(v)) return v->valuestring;
    }
    return NULL;
}

/* Camera-to-world from a 4x4 (or 3x4) array of numbers: 0, or -1 with the reason in why. */
static int get_matrix(const cJSON *frame, float m[16], char *why, size_t nwhy) {
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(frame, "transform_matrix");
    int rows = cJSON_IsArray(a) ? cJSON_GetArraySize(a) : 0;
    snprintf(why, nwhy, "transform_matrix is not a 4x4 camera-to-world matrix");
    if (rows != 3 && rows != 4) return -1;
    double md[16];
    for (int i = 0; i < 16; i++) md[i] = i == 15 ? 1.0 : 0.0;
    for (int r = 0; r < rows; r++) {
        const cJSON *row = cJSON_GetArrayItem(a, r);
        if (!cJSON_IsArray(row) || cJSON_GetArraySize(row) != 4) return -1;
        for (int c = 0; c < 4; c++) {
            const cJSON *v = cJSON_GetArrayItem(row, c);
            if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble)) return -1;
            md[r * 4 + c] = v->valuedouble;
        }
    }
    if (sp_check_c2w(md, why, nwhy)) return -1;
    for (int i = 0; i < 16; i++) m[i] = (float)md[i];
    return 0;
}

/* The image file for file_path: as given, then with .png, .jpg, .jpeg appended. */
static char *resolve_image(const char *base, const char *file_path) {
    static const char *exts[] = {"", ".png", ".jpg", ".jpeg"};
    char *p = sp_path_join(base, file_path);
    for (int i = 0; i < 4; i++) {
        char *c = sp_strfmt("%s%s", p, exts[i]);
        if (sp_file_exists(c)) {
            free(p);
            return c;
        }
        free(c);
    }
    free(p);
    return NULL;
}

/* "images/x.png" -> "images_4/x.png" (nerfstudio's downscaled copies), else NULL. */
static char *downscaled_path(const char *file_path, int ds) {
    const char *p = file_path;
    if (!strncmp(p, "./", 2)) p += 2;
    if (strncmp(p, "images/", 7)) return NULL;
    return sp_strfmt("images_%d/%s", ds, p + 7);
}

static int load_transforms(const char *json_path, const sp_load_opts *opts, sp_dataset *out, sp_problems *problems) {
    int p0 = problems->n;
    char *text;
    size_t n;
    if (sp_read_file(json_path, &text, &n)) {
        sp_problems_add(problems, "%s", sp_last_error());
        return -1;
    }
    cJSON *root = cJSON_ParseWithLength(text, n);
    if (!root) {
        const char *e = cJSON_GetErrorPtr();
        int line = 1;
        for (const char *q = text; e && q < e && *q; q++) line += *q == '\n';
        sp_problems_add(problems, "%s:%d: not valid JSON", json_path, line);
        free(text);
        return -1;
    }
    free(text);
    char *base = sp_path_dir(json_path);
    const cJSON *frames = cJSON_GetObjectItemCaseSensitive(root, "frames");
    int nf = cJSON_IsArray(frames) ? cJSON_GetArraySize(frames) : 0;
    sp_capture_view *views = NULL;
    int nviews = 0, ds = opts->downscale > 1 ? opts->downscale : 1, warned_pinhole = 0;
    if (!cJSON_IsObject(root)) {
        sp_problems_add(problems, "%s: expected a JSON object", json_path);
        goto done;
    }
    if (!cJSON_IsArray(frames)) {
        sp_problems_add(problems, "%s: no \"frames\" array", json_path);
        goto done;
    }
    if (nf == 0) {
        sp_problems_add(problems, "%s: \"frames\" is empty", json_path);
        goto done;
    }
    views = SP_NEW(sp_capture_view, nf);
    for (int i = 0; i < nf; i++) {
        const cJSON *f = cJSON_GetArrayItem(frames, i);
        char *where = sp_strfmt("%s: frame %d", json_path, i);
        int bad = 0;
        const char *fp = cJSON_IsObject(f) ? get_str(f, NULL, "file_path") : NULL;
        float c2w[16];
        if (!cJSON_IsObject(f)) {
            sp_problems_add(problems, "%s: not an object", where);
            bad = 1;
        } else {
            if (!fp || !*fp) sp_problems_add(problems, "%s: no file_path", where), bad = 1;
            else if (sp_check_image_name(where, "file_path", fp, opts, problems)) bad = 1;
            char why[256];
            if (get_matrix(f, c2w, why, sizeof why)) sp_problems_add(problems, "%s: %s", where, why), bad = 1;
        }
        if (bad) {
            free(where);
            continue;
        }
        const char *model = get_str(f, root, "camera_model");
        int pinhole_model = 0;
        if (model) {
            if (!strcmp(model, "PINHOLE") || !strcmp(model, "SIMPLE_PINHOLE"))
                pinhole_model = 1;
            else if (strcmp(model, "OPENCV") && strcmp(model, "SIMPLE_RADIAL") && strcmp(model, "RADIAL")) {
                sp_problems_add(problems, "%s: camera_model %s is not supported (supported: OPENCV, PINHOLE)", where, model);
                free(where);
                continue;
            }
        }
        double w = get_num(f, root, "w", where, &bad, problems), h = get_num(f, root, "h", where, &bad, problems);
        double fx = get_num(f, root, "fl_x", where, &bad, problems), fy = get_num(f, root, "fl_y", where, &bad, problems);
        double cx = get_num(f, root, "cx", where, &bad, problems), cy = get_num(f, root, "cy", where, &bad, problems);
        double ax = get_num(f, root, "camera_angle_x", where, &bad, problems);
        double ay = get_num(f, root, "camera_angle_y", where, &bad, problems);
        double k[6];
        static const char *knames[6] = {"k1", "k2", "k3", "p1", "p2", "k4"};
        for (int q = 0; q < 6; q++) {
            k[q] = get_num(f, root, knames[q], where, &bad, problems);
            if (isnan(k[q])) k[q] = 0;
        }
        if (isnan(fx) && isnan(ax)) sp_problems_add(problems, "%s: no focal length (fl_x or camera_angle_x)", where), bad = 1;
        if (isnan(w) != isnan(h)) sp_problems_add(problems, "%s: w and h must be given together", where), bad = 1;
        char why[256];
        if (!isnan(w) && !isnan(h) && sp_check_image_size(w, h, why, sizeof why))
            sp_problems_add(problems, "%s: %s", where, why), bad = 1;
        const double given[6] = {fx, fy, cx, cy, ax, ay};
        static const char *gnames[6] = {"fl_x", "fl_y", "cx", "cy", "camera_angle_x", "camera_angle_y"};
        for (int q = 0; q < 6; q++) {
            if (isnan(given[q])) continue;
            int rc = q < 2   ? sp_check_focal(given[q], gnames[q], why, sizeof why)
                     : q < 4 ? sp_check_principal(given[q], gnames[q], why, sizeof why)
                             : sp_check_angle(given[q], gnames[q], why, sizeof why);
            if (rc) sp_problems_add(problems, "%s: %s", where, why), bad = 1;
        }
        if (!pinhole_model && k[5] != 0)
            sp_problems_add(problems, "%s: k4 is set, but only fisheye models use it (camera_model OPENCV takes k1, k2, k3, p1, p2)",
                            where),
                bad = 1;
        char *ipath = NULL;
        int load_ds = ds;
        if (!bad && ds > 1) {
            char *alt = downscaled_path(fp, ds);
            if (alt && (ipath = resolve_image(base, alt))) load_ds = 1;
            free(alt);
        }
        if (!bad && !ipath && !(ipath = resolve_image(base, fp)))
            sp_problems_add(problems, "%s: image %s not found in %s (also tried .png, .jpg, .jpeg)", where, fp, base), bad = 1;
        if (bad) {
            free(ipath);
            free(where);
            continue;
        }
        if (pinhole_model && (k[0] || k[1] || k[2] || k[3] || k[4]) && !warned_pinhole++)
            SP_WARN("%s: camera_model %s: distortion coefficients are ignored", where, model);
        sp_capture_view *v = &views[nviews++];
        v->name = sp_strdup(fp);
        v->path = ipath;
        v->where = where;
        v->downscale = load_ds;
        v->angle_x = ax, v->angle_y = ay;
        sp_lens *l = &v->lens;
        if (!isnan(w)) {
            l->width = (int)w, l->height = (int)h;
            if (isnan(fx)) fx = 0.5 * w / tan(0.5 * ax);
            if (isnan(fy)) fy = isnan(ay) ? fx : 0.5 * h / tan(0.5 * ay);
            if (isnan(cx)) cx = 0.5 * w;
            if (isnan(cy)) cy = 0.5 * h;
        } else if (!isnan(fx) && isnan(fy) && isnan(ay)) {
            fy = fx;
        }
        l->fx = fx, l->fy = fy, l->cx = cx, l->cy = cy;
        if (!pinhole_model) l->k1 = k[0], l->k2 = k[1], l->k3 = k[2], l->p1 = k[3], l->p2 = k[4];
        sp_camera tmp;
        sp_camera_set_c2w_opengl(&tmp, c2w);
        memcpy(v->R, tmp.R, sizeof v->R);
        memcpy(v->t, tmp.t, sizeof v->t);
    }
    if (problems->n != p0) goto done;
    sp_capture_load(out, views, nviews, opts, problems);
    nviews = 0;

done:
    for (int i = 0; i < nviews; i++) sp_capture_view_free(&views[i]);
    free(views);
    free(base);
    cJSON_Delete(root);
    return problems->n == p0 ? 0 : -1;
}

int sp_load_transforms(const char *path, const sp_load_opts *opts, sp_dataset *out, sp_problems *problems) {
    sp_problems local = {0};
    sp_problems *pr = problems ? problems : &local;
    int p0 = pr->n;
    memset(out, 0, sizeof *out);
    if (!sp_dir_exists(path) && !sp_file_exists(path)) {
        sp_problems_add(pr, "%s: no such folder or file (expected a scene folder with transforms.json, or the file)", path);
        sp_error("%s", pr->items[p0]);
        sp_problems_free(&local);
        return -1;
    }
    char *json = sp_dir_exists(path) ? sp_path_join(path, "transforms.json") : sp_strdup(path);
    out->path = sp_dir_exists(path) ? sp_strdup(path) : sp_path_dir(path);
    out->format = sp_strdup("transforms");
    sp_load_opts defaults = {.downscale = 1, .load_pixels = 1};
    int rc = load_transforms(json, opts ? opts : &defaults, out, pr);
    if (rc || pr->n != p0) {
        sp_error("%s", pr->n > p0 ? pr->items[p0] : "transforms.json could not be loaded");
        sp_dataset_free(out);
        rc = -1;
    }
    free(json);
    sp_problems_free(&local);
    return rc;
}
