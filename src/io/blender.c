/* blender.c — the NeRF-synthetic ("Blender") dataset loader.
 *
 * A scene directory holds transforms_train.json (required) and optionally transforms_val.json and
 * transforms_test.json, one per split. Each file gives the field of view (camera_angle_x, and
 * optionally camera_angle_y) or explicit intrinsics (fl_x, fl_y, cx, cy; w, h), globally or per
 * frame, and a list of frames, each an image file_path (relative to the json's directory, with or
 * without extension) and a 4x4 camera-to-world transform_matrix in OpenGL axes.
 *
 * Loading runs in three passes: parse every json into frame records (single-threaded), decode
 * the images in parallel (OpenMP over frames), then check sizes and build the views. Every
 * problem is reported with the file it concerns; the dataset is only returned when there is none. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>
#include <omp.h>

#include "core/threads.h"
#include "io/image.h"
#include "io/loader.h"
#include "io/sanity.h"

/* One frame of one transforms file, after parsing. */
typedef struct {
    int index;       /* position in frames[] */
    char *name;      /* file_path as written */
    char *path;      /* resolved image path (NULL: not found) */
    float c2w[16];   /* row-major, OpenGL axes */
    /* Intrinsics as given; NAN where absent (resolved once the image size is known). */
    double angle_x, angle_y, fl_x, fl_y, cx, cy, w, h;
    int ok;          /* parsed without problems */
    /* Filled by the decoding pass. */
    sp_image img;    /* pixels (downscaled) or only the size when pixels are not kept */
    int src_w, src_h;  /* size of the file before downscaling */
    char *err;       /* decoding error, if any */
} bl_frame;

typedef struct {
    const char *split;   /* "train", "val", "test" */
    char *json_path;     /* directory-joined path of the transforms file */
    const char *json_name;
    bl_frame *frames;
    int n;
} bl_file;

static int is_regular_file(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* Line number (1-based) of position pos in text. */
static int line_of(const char *text, const char *pos) {
    int line = 1;
    for (const char *p = text; *p && p < pos; p++)
        if (*p == '\n') line++;
    return line;
}

/* A number from obj[key], or NAN when absent. Adds a problem and sets *bad when present but not
 * a number. */
static double get_num(const cJSON *obj, const char *key, const char *where, sp_problems *pr, int *bad) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v) return NAN;
    if (!cJSON_IsNumber(v)) {
        sp_problems_add(pr, "%s: %s is not a number", where, key);
        *bad = 1;
        return NAN;
    }
    return v->valuedouble;
}

/* Resolves file_path against dir: as given, then with .png, .jpg, .jpeg appended. Returns the
 * found path or NULL; *shown receives the path to name in a "no such file" message. */
static char *resolve_image(const char *dir, const char *file_path, char **shown) {
    /* "./train/r_0", ".//r_0": the leading "./" and the slashes after it stay in the json's folder
     * (dropping only the "./" of ".//r_0" would leave "/r_0", a path at the file system's root) */
    while (file_path[0] == '.' && file_path[1] == '/') {
        file_path += 2;
        while (file_path[0] == '/') file_path++;
    }
    char *base = sp_path_join(dir, file_path);
    static const char *exts[] = {"", ".png", ".jpg", ".jpeg", ".PNG", ".JPG", ".JPEG"};
    for (size_t i = 0; i < sizeof exts / sizeof *exts; i++) {
        char *p = sp_strfmt("%s%s", base, exts[i]);
        if (is_regular_file(p)) {
            free(base);
            return p;
        }
        free(p);
    }
    /* Name the likely file: as given when it has an extension, else with ".png". */
    const char *slash = strrchr(base, '/');
    const char *leaf = slash ? slash + 1 : base;
    *shown = strchr(leaf, '.') ? sp_strdup(base) : sp_strfmt("%s.png", base);
    free(base);
    return NULL;
}

/* Reads a 4x4 camera-to-world matrix; 0 on success, else adds a problem. */
static int get_matrix(const cJSON *fr, const char *where, float m[16], sp_problems *pr) {
    const cJSON *tm = cJSON_GetObjectItemCaseSensitive(fr, "transform_matrix");
    if (!tm) {
        sp_problems_add(pr, "%s: missing transform_matrix", where);
        return -1;
    }
    if (!cJSON_IsArray(tm) || cJSON_GetArraySize(tm) != 4) {
        sp_problems_add(pr, "%s: transform_matrix is not a 4x4 array of numbers", where);
        return -1;
    }
    double md[16];
    for (int r = 0; r < 4; r++) {
        const cJSON *row = cJSON_GetArrayItem(tm, r);
        if (!cJSON_IsArray(row) || cJSON_GetArraySize(row) != 4) {
            sp_problems_add(pr, "%s: transform_matrix is not a 4x4 array of numbers (row %d)", where, r);
            return -1;
        }
        for (int c = 0; c < 4; c++) {
            const cJSON *v = cJSON_GetArrayItem(row, c);
            if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble)) {
                sp_problems_add(pr, "%s: transform_matrix[%d][%d] is not a number", where, r, c);
                return -1;
            }
            md[r * 4 + c] = v->valuedouble;
        }
    }
    char why[256];
    if (sp_check_c2w(md, why, sizeof why)) {
        sp_problems_add(pr, "%s: %s", where, why);
        return -1;
    }
    for (int i = 0; i < 16; i++) m[i] = (float)md[i];
    return 0;
}

/* Intrinsics as written in one place (the file's top level or one frame; NAN where absent):
 * each present value must be usable. Returns 1 after adding a problem per bad value. */
static int check_intrinsics(const char *where, const double v[8], sp_problems *pr) {
    static const char *names[8] = {"camera_angle_x", "camera_angle_y", "fl_x", "fl_y", "cx", "cy", "w", "h"};
    char why[256];
    int bad = 0;
    for (int k = 0; k < 8; k++) {
        if (isnan(v[k])) continue; /* absent */
        int rc = k < 2   ? sp_check_angle(v[k], names[k], why, sizeof why)
                 : k < 4 ? sp_check_focal(v[k], names[k], why, sizeof why)
                 : k < 6 ? sp_check_principal(v[k], names[k], why, sizeof why)
                         : sp_check_image_size(v[k], v[k], why, sizeof why);
        if (rc && k >= 6)
            snprintf(why, sizeof why, "%s %g is not a whole number of pixels from 1 to %d", names[k], v[k],
                     SP_IMAGE_MAX_SIDE);
        if (rc) {
            sp_problems_add(pr, "%s: %s", where, why);
            bad = 1;
        }
    }
    return bad;
}

/* Parses one transforms file into f->frames. Returns -1 when the file is unusable as a whole
 * (absent, not JSON, no frames); frame-level problems mark the frame and are added to pr. */
static int parse_file(bl_file *f, const char *dir, const sp_load_opts *lo, sp_problems *pr) {
    char *text;
    size_t len;
    if (sp_read_file(f->json_path, &text, &len)) {
        sp_problems_add(pr, "%s", sp_last_error());
        return -1;
    }
    const char *start = text;
    if (len >= 3 && !memcmp(text, "\xEF\xBB\xBF", 3)) start += 3; /* UTF-8 byte order mark */
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithOpts(start, &end, 1);
    if (!root) {
        const char *pos = end ? end : text;
        if (pos < text || pos > text + len) pos = text + len;
        sp_problems_add(pr, "%s:%d: invalid JSON", f->json_path, line_of(text, pos));
        free(text);
        return -1;
    }
    free(text);
    int rc = 0;
    const char *jp = f->json_path;
    if (!cJSON_IsObject(root)) {
        sp_problems_add(pr, "%s: top level is not a JSON object", jp);
        rc = -1;
        goto done;
    }
    const cJSON *frames = cJSON_GetObjectItemCaseSensitive(root, "frames");
    if (!frames) {
        sp_problems_add(pr, "%s: missing frames", jp);
        rc = -1;
        goto done;
    }
    if (!cJSON_IsArray(frames)) {
        sp_problems_add(pr, "%s: frames is not an array", jp);
        rc = -1;
        goto done;
    }
    int n = cJSON_GetArraySize(frames);
    if (n == 0) {
        sp_problems_add(pr, "%s: no frames", jp);
        rc = -1;
        goto done;
    }
    /* Global intrinsics. */
    int gbad = 0;
    double g_ax = get_num(root, "camera_angle_x", jp, pr, &gbad);
    double g_ay = get_num(root, "camera_angle_y", jp, pr, &gbad);
    double g_fx = get_num(root, "fl_x", jp, pr, &gbad);
    double g_fy = get_num(root, "fl_y", jp, pr, &gbad);
    double g_cx = get_num(root, "cx", jp, pr, &gbad);
    double g_cy = get_num(root, "cy", jp, pr, &gbad);
    double g_w = get_num(root, "w", jp, pr, &gbad);
    double g_h = get_num(root, "h", jp, pr, &gbad);
    const double given[8] = {g_ax, g_ay, g_fx, g_fy, g_cx, g_cy, g_w, g_h};
    if (!gbad) gbad = check_intrinsics(jp, given, pr);
    if (gbad) rc = -1;

    f->frames = SP_NEW(bl_frame, n);
    f->n = n;
    for (int i = 0; i < n; i++) {
        bl_frame *fr = &f->frames[i];
        fr->index = i;
        const cJSON *o = cJSON_GetArrayItem(frames, i);
        char *where = sp_strfmt("%s: frame %d", jp, i);
        if (!cJSON_IsObject(o)) {
            sp_problems_add(pr, "%s: not an object", where);
            free(where);
            continue;
        }
        int bad = 0;
        const cJSON *fp = cJSON_GetObjectItemCaseSensitive(o, "file_path");
        if (!fp) {
            sp_problems_add(pr, "%s: missing file_path", where);
            bad = 1;
        } else if (!cJSON_IsString(fp) || !fp->valuestring[0]) {
            sp_problems_add(pr, "%s: file_path is not a non-empty string", where);
            bad = 1;
        } else if (sp_check_image_name(where, "file_path", fp->valuestring, lo, pr)) {
            bad = 1;
        }
        if (get_matrix(o, where, fr->c2w, pr)) bad = 1;
        double own[8];
        int kbad = 0;
#define FRAME_NUM(field, key, k)                               \
    own[k] = get_num(o, key, where, pr, &kbad);                \
    fr->field = isnan(own[k]) ? given[k] : own[k];
        FRAME_NUM(angle_x, "camera_angle_x", 0)
        FRAME_NUM(angle_y, "camera_angle_y", 1)
        FRAME_NUM(fl_x, "fl_x", 2)
        FRAME_NUM(fl_y, "fl_y", 3)
        FRAME_NUM(cx, "cx", 4)
        FRAME_NUM(cy, "cy", 5)
        FRAME_NUM(w, "w", 6)
        FRAME_NUM(h, "h", 7)
#undef FRAME_NUM
        if (kbad || check_intrinsics(where, own, pr)) bad = 1;
        if (isnan(fr->angle_x) && isnan(fr->fl_x)) {
            sp_problems_add(pr, "%s: no camera_angle_x or fl_x", where);
            bad = 1;
        }
        if (!bad) {
            fr->name = sp_strdup(fp->valuestring);
            char *shown = NULL;
            fr->path = resolve_image(dir, fp->valuestring, &shown);
            if (!fr->path) {
                sp_problems_add(pr, "%s: no such file (frame %d of %s)", shown, i, f->json_name);
                free(shown);
                bad = 1;
            }
        }
        fr->ok = !bad;
        if (bad) rc = -1;
        free(where);
    }
done:
    cJSON_Delete(root);
    return rc;
}

/* Decodes (and downscales) the image of every parsed frame; errors are kept per frame. */
static void decode_frames(bl_frame **all, int n, const sp_load_opts *o) {
    int threads = sp_omp_threads_for(o->threads);
    int ds = o->downscale > 1 ? o->downscale : 1;
#pragma omp parallel for num_threads(threads) schedule(dynamic)
    for (int i = 0; i < n; i++) {
        bl_frame *fr = all[i];
        sp_image img = {0};
        if (!o->load_pixels && o->header_only ? sp_image_probe(fr->path, &img.width, &img.height, &img.channels)
                                              : sp_image_load(fr->path, &img)) {
            fr->err = sp_strdup(sp_last_error());
            continue;
        }
        fr->src_w = img.width;
        fr->src_h = img.height;
        if (ds > 1) {
            if (o->load_pixels) {
                sp_image small;
                if (sp_image_downscale(&img, ds, &small)) {
                    fr->err = sp_strfmt("%s: %s", fr->path, sp_last_error());
                    sp_image_free(&img);
                    continue;
                }
                sp_image_free(&img);
                img = small;
            } else {
                /* Same size as sp_image_downscale would produce. */
                img.width /= ds;
                img.height /= ds;
                if (img.width < 1 || img.height < 1)
                    fr->err = sp_strfmt("%s: image of %dx%d is too small to downscale by %d", fr->path,
                                        fr->src_w, fr->src_h, ds);
            }
        }
        if (!o->load_pixels) {
            free(img.pixels);
            img.pixels = NULL;
        }
        fr->img = img;
    }
}

/* Adds alpha 255 to an RGB pixel buffer. */
static uint8_t *rgb_to_rgba(const uint8_t *p, size_t npix) {
    uint8_t *q = sp_malloc(npix * 4);
    for (size_t i = 0; i < npix; i++) {
        q[4 * i + 0] = p[3 * i + 0];
        q[4 * i + 1] = p[3 * i + 1];
        q[4 * i + 2] = p[3 * i + 2];
        q[4 * i + 3] = 255;
    }
    return q;
}

/* Camera intrinsics of a frame at its file's size (src_w x src_h), then scaled to the loaded
 * size. When the json gives w/h, the given intrinsics refer to that size. */
static void frame_camera(const bl_frame *fr, sp_camera *cam) {
    memset(cam, 0, sizeof *cam);
    double W = !isnan(fr->w) && fr->w > 0 ? fr->w : fr->src_w;
    double H = !isnan(fr->h) && fr->h > 0 ? fr->h : fr->src_h;
    double fx = !isnan(fr->fl_x) ? fr->fl_x : 0.5 * W / tan(0.5 * fr->angle_x);
    double fy;
    if (!isnan(fr->fl_y))
        fy = fr->fl_y;
    else if (!isnan(fr->angle_y) && fr->angle_y > 0 && fr->angle_y < M_PI)
        fy = 0.5 * H / tan(0.5 * fr->angle_y);
    else
        fy = fx;
    cam->width = (int)lround(W);
    cam->height = (int)lround(H);
    cam->fx = (float)fx;
    cam->fy = (float)fy;
    cam->cx = (float)(!isnan(fr->cx) ? fr->cx : 0.5 * W);
    cam->cy = (float)(!isnan(fr->cy) ? fr->cy : 0.5 * H);
    sp_camera_set_c2w_opengl(cam, fr->c2w);
    if (cam->width != fr->img.width || cam->height != fr->img.height)
        sp_camera_resize(cam, fr->img.width, fr->img.height);
}

static void free_file(bl_file *f) {
    for (int i = 0; i < f->n; i++) {
        bl_frame *fr = &f->frames[i];
        free(fr->name);
        free(fr->path);
        free(fr->err);
        sp_image_free(&fr->img);
    }
    free(f->frames);
    free(f->json_path);
    memset(f, 0, sizeof *f);
}

int sp_load_blender(const char *path, const sp_load_opts *opts, sp_dataset *out, sp_problems *problems) {
    static const sp_load_opts defaults = {.downscale = 1, .threads = 0, .load_pixels = 1};
    const sp_load_opts *o = opts ? opts : &defaults;
    int problems_before = problems->n;
    memset(out, 0, sizeof *out);

    bl_file files[3] = {{.split = "train", .json_name = "transforms_train.json"},
                        {.split = "val", .json_name = "transforms_val.json"},
                        {.split = "test", .json_name = "transforms_test.json"}};
    int nframes = 0;
    for (int s = 0; s < 3; s++) {
        bl_file *f = &files[s];
        f->json_path = sp_path_join(path, f->json_name);
        if (s > 0 && !sp_file_exists(f->json_path)) continue; /* val/test are optional */
        if (s == 0 && !sp_file_exists(f->json_path)) {
            sp_problems_add(problems, "%s: no such file (a Blender scene needs transforms_train.json)",
                            f->json_path);
            continue;
        }
        parse_file(f, path, o, problems);
        for (int i = 0; i < f->n; i++) nframes += f->frames[i].ok;
    }

    /* Decode all usable frames of all splits in one parallel pass. */
    bl_frame **all = SP_NEW(bl_frame *, nframes);
    int k = 0;
    for (int s = 0; s < 3; s++)
        for (int i = 0; i < files[s].n; i++)
            if (files[s].frames[i].ok) all[k++] = &files[s].frames[i];
    decode_frames(all, nframes, o);
    free(all);

    /* Sizes, alpha and problems, in file order. */
    int has_alpha = 0;
    for (int s = 0; s < 3; s++) {
        bl_file *f = &files[s];
        const bl_frame *first = NULL;
        for (int i = 0; i < f->n; i++) {
            bl_frame *fr = &f->frames[i];
            if (!fr->ok) continue;
            if (fr->err) {
                sp_problems_add(problems, "%s", fr->err);
                fr->ok = 0;
                continue;
            }
            if (!first) {
                first = fr;
            } else if (fr->src_w != first->src_w || fr->src_h != first->src_h) {
                sp_problems_add(problems, "%s: image is %dx%d, expected %dx%d like %s (frame %d of %s)", fr->path,
                                fr->src_w, fr->src_h, first->src_w, first->src_h, first->path, i, f->json_name);
                fr->ok = 0;
                continue;
            }
            if (fr->img.channels == 4) has_alpha = 1;
        }
    }

    int ok = problems->n == problems_before;
    if (ok) {
        out->path = sp_strdup(path);
        out->format = sp_strdup("blender");
        out->has_alpha = has_alpha;
        for (int s = 0; s < 3; s++) {
            bl_file *f = &files[s];
            sp_split *split = sp_dataset_split(out, f->split);
            split->views = SP_NEW(sp_view, f->n ? f->n : 1);
            split->n = f->n;
            for (int i = 0; i < f->n; i++) {
                bl_frame *fr = &f->frames[i];
                sp_view *v = &split->views[i];
                v->name = fr->name;
                v->path = fr->path;
                fr->name = fr->path = NULL;
                frame_camera(fr, &v->cam);
                v->channels = has_alpha ? 4 : 3;
                v->downscale = o->downscale > 1 ? o->downscale : 1;
                if (fr->img.pixels) {
                    if (has_alpha && fr->img.channels == 3) {
                        v->pixels = rgb_to_rgba(fr->img.pixels, (size_t)fr->img.width * fr->img.height);
                        sp_image_free(&fr->img);
                    } else {
                        v->pixels = fr->img.pixels;
                        fr->img.pixels = NULL;
                    }
                }
            }
        }
        sp_dataset_compute_extent(out);
        /* Random initialization box: NeRF-synthetic objects are modelled inside [-1.3, 1.3]^3 around
         * the origin (the convention of the Blender renders), whatever the camera distance. */
        for (int c = 0; c < 3; c++) {
            out->init_min[c] = -1.3f;
            out->init_max[c] = 1.3f;
        }
    }
    for (int s = 0; s < 3; s++) free_file(&files[s]);
    if (!ok) {
        sp_dataset_free(out);
        sp_error("%s", problems->items[problems_before]);
        return -1;
    }
    return 0;
}
