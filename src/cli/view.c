/* view.c — the model viewer's HTTP server (libmicrohttpd), shared by `splat view` and
 * `splat train --view`. Routes: "/" (the page, web/view.html embedded at build time),
 * "/api/info" (model, cameras, live training state as JSON), "/api/render" (a JPEG rendered with
 * splat_render from any camera), "/api/gt" (a dataset view's ground-truth image as JPEG, from
 * splat_dataset_image), encoded with splat_encode_jpeg. Nothing else is served. Requests are
 * handled one at a time by the server's single thread; the context serializes its own calls, so the training thread never waits for a render (it skips a busy
 * context, train_take_model in src/api/api_run.c). */
#ifdef SPLAT_HAVE_VIEW
#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <math.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>


#include "cli/cli.h"
#include "cli/view.h"
#include "cli/view_html.h" /* generated from web/view.html by the Makefile */

#define CURVE_MAX 4096       /* points kept per live curve (halved, every other one, when full) */
#define RENDER_MAX_SIDE 4096 /* a render request's largest side */
#define MODEL_REFRESH_S 0.5  /* live: a fresh model copy at most this often */
#define PAGE_ACTIVE_S 2.0    /* live: a page counts as open this long after its last render */

typedef struct {
    int n;
    double *x, *y;
} curve;

struct view_server {
    struct MHD_Daemon *d;
    splat_context *ctx;
    int live;
    char data_path[4096];
    char backend[64];
    int antialias;
    float default_bg;
    /* live state, written by the training thread, read by the server's */
    pthread_mutex_t mu;
    splat_progress prog;
    int have_prog;
    curve loss, psnr;
    double last_render_t, last_model_t;
};

/* ---- responses ---- */

static enum MHD_Result send_buf(struct MHD_Connection *conn, unsigned status, const char *type, void *data,
                                size_t n, enum MHD_ResponseMemoryMode mode) {
    struct MHD_Response *r = MHD_create_response_from_buffer(n, data, mode);
    if (!r) {
        if (mode == MHD_RESPMEM_MUST_FREE) free(data);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", type);
    MHD_add_response_header(r, "Cache-Control", "no-store");
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    enum MHD_Result rc = MHD_queue_response(conn, status, r);
    MHD_destroy_response(r);
    return rc;
}

static enum MHD_Result send_text(struct MHD_Connection *conn, unsigned status, const char *msg) {
    char *s = cli_strfmt("%s\n", msg);
    return send_buf(conn, status, "text/plain; charset=utf-8", s, strlen(s), MHD_RESPMEM_MUST_FREE);
}

static enum MHD_Result send_json(struct MHD_Connection *conn, cJSON *j) {
    char *s = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    if (!s) return send_text(conn, 500, "out of memory");
    return send_buf(conn, 200, "application/json", s, strlen(s), MHD_RESPMEM_MUST_FREE);
}

static enum MHD_Result send_jpeg(struct MHD_Connection *conn, const uint8_t *rgb, int w, int h, int quality) {
    unsigned char *jpg;
    unsigned long n;
    if (splat_encode_jpeg(rgb, w, h, quality, &jpg, &n)) return send_text(conn, 500, "JPEG encoding failed");
    return send_buf(conn, 200, "image/jpeg", jpg, n, MHD_RESPMEM_MUST_FREE);
}

/* ---- query arguments ---- */

static const char *arg(struct MHD_Connection *c, const char *name) {
    return MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, name);
}

/* A number argument in [lo, hi]; missing: def. -1 (and *bad set) when malformed. */
static double num_arg(struct MHD_Connection *c, const char *name, double def, double lo, double hi, int *bad) {
    const char *s = arg(c, name);
    if (!s) return def;
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end || !isfinite(v) || v < lo || v > hi) {
        *bad = 1;
        return def;
    }
    return v;
}

/* n comma-separated finite floats. */
static int floats_arg(struct MHD_Connection *c, const char *name, float *out, int n) {
    const char *s = arg(c, name);
    if (!s) return -1;
    for (int i = 0; i < n; i++) {
        char *end;
        double v = strtod(s, &end);
        if (end == s || !isfinite(v)) return -1;
        out[i] = (float)v;
        s = end;
        if (i + 1 < n) {
            if (*s != ',') return -1;
            s++;
        }
    }
    return *s ? -1 : 0;
}

static const char *split_arg(struct MHD_Connection *c) {
    const char *s = arg(c, "split");
    if (!s) return "test";
    if (!strcmp(s, "train") || !strcmp(s, "val") || !strcmp(s, "test")) return s;
    return NULL;
}

static double now_s(void) { return cli_now(); }

/* ---- /api/info ---- */

static cJSON *camera_json(const splat_camera *c) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "w", c->width);
    cJSON_AddNumberToObject(o, "h", c->height);
    cJSON_AddNumberToObject(o, "fx", c->fx);
    cJSON_AddNumberToObject(o, "fy", c->fy);
    cJSON_AddNumberToObject(o, "cx", c->cx);
    cJSON_AddNumberToObject(o, "cy", c->cy);
    cJSON_AddItemToObject(o, "R", cJSON_CreateFloatArray(c->R, 9));
    cJSON_AddItemToObject(o, "t", cJSON_CreateFloatArray(c->t, 3));
    return o;
}

static cJSON *curve_json(const curve *cv) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < cv->n; i++) {
        cJSON *p = cJSON_CreateArray();
        cJSON_AddItemToArray(p, cJSON_CreateNumber(cv->x[i]));
        cJSON_AddItemToArray(p, cJSON_CreateNumber(cv->y[i]));
        cJSON_AddItemToArray(a, p);
    }
    return a;
}

/* The live training state (step, loss, Gaussians, PSNR and their curves). */
static cJSON *live_json(view_server *v) {
    pthread_mutex_lock(&v->mu);
    cJSON *l = cJSON_CreateObject();
    splat_progress p = v->prog;
    cJSON_AddBoolToObject(l, "started", v->have_prog);
    cJSON_AddNumberToObject(l, "step", p.step);
    cJSON_AddNumberToObject(l, "max_steps", p.max_steps);
    if (isfinite(p.loss)) cJSON_AddNumberToObject(l, "loss", p.loss);
    cJSON_AddNumberToObject(l, "gaussians", p.num_gaussians);
    cJSON_AddNumberToObject(l, "steps_per_s", isfinite(p.steps_per_s) ? p.steps_per_s : 0);
    cJSON_AddNumberToObject(l, "elapsed_s", isfinite(p.elapsed_s) ? p.elapsed_s : 0);
    if (isfinite(p.psnr)) cJSON_AddNumberToObject(l, "psnr", p.psnr);
    cJSON_AddBoolToObject(l, "final", p.final);
    cJSON_AddItemToObject(l, "loss_curve", curve_json(&v->loss));
    cJSON_AddItemToObject(l, "psnr_curve", curve_json(&v->psnr));
    pthread_mutex_unlock(&v->mu);
    return l;
}

static enum MHD_Result api_info(view_server *v, struct MHD_Connection *conn) {
    cJSON *j = cJSON_CreateObject();
    int n = 0, deg = 0;
    int have_model = splat_model_info(v->ctx, &n, &deg) == SPLAT_OK;
    cJSON_AddBoolToObject(j, "model", have_model);
    cJSON_AddNumberToObject(j, "gaussians", n);
    cJSON_AddNumberToObject(j, "sh_degree", deg);
    cJSON_AddStringToObject(j, "data", v->data_path);
    cJSON_AddStringToObject(j, "backend", v->backend);
    cJSON_AddBoolToObject(j, "antialias", v->antialias);
    cJSON_AddStringToObject(j, "background", v->default_bg > 0.5f ? "white" : "black");
    cJSON *cams = cJSON_AddObjectToObject(j, "cameras");
    static const char *const splits[] = {"train", "val", "test"};
    for (int s = 0; s < 3; s++) {
        cJSON *arr = cJSON_AddArrayToObject(cams, splits[s]);
        int count = 0;
        splat_dataset_views(v->ctx, splits[s], &count);
        for (int i = 0; i < count; i++) {
            splat_camera c;
            char name[512];
            if (splat_dataset_camera(v->ctx, splits[s], i, &c) != SPLAT_OK) break;
            cJSON *o = camera_json(&c);
            if (splat_dataset_view_name(v->ctx, splits[s], i, name, sizeof name) == SPLAT_OK)
                cJSON_AddStringToObject(o, "name", name);
            cJSON_AddItemToArray(arr, o);
        }
    }
    cJSON_AddBoolToObject(j, "live", v->live);
    if (v->live) cJSON_AddItemToObject(j, "training", live_json(v));
    return send_json(conn, j);
}

static enum MHD_Result api_live(view_server *v, struct MHD_Connection *conn) {
    if (!v->live) return send_text(conn, 404, "not a live view: `splat train --view` shows training");
    return send_json(conn, live_json(v));
}

/* ---- /api/render ---- */

static float bg_arg(view_server *v, struct MHD_Connection *c, int *bad) {
    const char *s = arg(c, "bg");
    if (!s) return v->default_bg;
    if (!strcmp(s, "white")) return 1.0f;
    if (!strcmp(s, "black")) return 0.0f;
    *bad = 1;
    return 0;
}

static enum MHD_Result api_render(view_server *v, struct MHD_Connection *conn) {
    int bad = 0;
    splat_camera cam;
    memset(&cam, 0, sizeof cam);
    const char *split = arg(conn, "split");
    if (split) { /* a dataset camera, exactly as `splat render` renders it */
        split = split_arg(conn);
        int i = (int)num_arg(conn, "i", 0, 0, 1e9, &bad);
        if (!split || bad) return send_text(conn, 400, "split must be train, val or test and i a view index");
        if (splat_dataset_camera(v->ctx, split, i, &cam) != SPLAT_OK)
            return send_text(conn, 404, splat_errmsg(v->ctx));
    } else {
        cam.width = (int)num_arg(conn, "w", 0, 1, RENDER_MAX_SIDE, &bad);
        cam.height = (int)num_arg(conn, "h", 0, 1, RENDER_MAX_SIDE, &bad);
        cam.fx = (float)num_arg(conn, "fx", 0, 1e-3, 1e7, &bad);
        cam.fy = (float)num_arg(conn, "fy", cam.fx, 1e-3, 1e7, &bad);
        cam.cx = (float)num_arg(conn, "cx", 0.5 * cam.width, -1e7, 1e7, &bad);
        cam.cy = (float)num_arg(conn, "cy", 0.5 * cam.height, -1e7, 1e7, &bad);
        if (bad || !cam.width || !cam.height || !(cam.fx > 0) || floats_arg(conn, "R", cam.R, 9) ||
            floats_arg(conn, "t", cam.t, 3))
            return send_text(conn, 400,
                             "give split=&i= (a dataset camera) or w, h (1..4096), fx (> 0), optional fy, cx, cy, "
                             "R (9 numbers, row-major world to camera) and t (3 numbers)");
    }
    float b = bg_arg(v, conn, &bad), bg[3] = {b, b, b};
    int sh = (int)num_arg(conn, "sh", -1, -1, 3, &bad);
    int quality = (int)num_arg(conn, "q", 90, 10, 100, &bad);
    if (bad) return send_text(conn, 400, "bg must be white or black, sh -1..3, q 10..100");
    pthread_mutex_lock(&v->mu);
    v->last_render_t = now_s();
    pthread_mutex_unlock(&v->mu);
    size_t px = (size_t)cam.width * cam.height;
    uint8_t *rgba = malloc(px * 4);
    if (!rgba) return send_text(conn, 503, "out of memory for the render");
    splat_status st = splat_set_render_sh_degree(v->ctx, sh);
    if (st == SPLAT_OK) st = splat_render(v->ctx, &cam, bg, SPLAT_RGBA8, rgba, 0);
    if (st != SPLAT_OK) {
        free(rgba);
        unsigned code = st == SPLAT_NO_MODEL ? 503 : st == SPLAT_INVALID ? 400 : 500;
        return send_text(conn, code, splat_errmsg(v->ctx));
    }
    for (size_t i = 0; i < px; i++) memmove(rgba + 3 * i, rgba + 4 * i, 3);
    enum MHD_Result rc = send_jpeg(conn, rgba, cam.width, cam.height, quality);
    free(rgba);
    return rc;
}

/* ---- /api/gt ---- */

static enum MHD_Result api_gt(view_server *v, struct MHD_Connection *conn) {
    int bad = 0;
    const char *split = split_arg(conn);
    int i = (int)num_arg(conn, "i", 0, 0, 1e9, &bad);
    float b = bg_arg(v, conn, &bad), bg[3] = {b, b, b};
    if (!split || bad) return send_text(conn, 400, "split must be train, val or test, i a view index, bg white|black");
    int count = 0;
    if (!v->data_path[0] || splat_dataset_views(v->ctx, split, &count) != SPLAT_OK)
        return send_text(conn, 404, "no dataset: give --data DIR");
    if (i >= count) return send_text(conn, 404, "no such view");
    splat_camera cam;
    if (splat_dataset_camera(v->ctx, split, i, &cam) != SPLAT_OK) return send_text(conn, 500, splat_errmsg(v->ctx));
    size_t px = (size_t)cam.width * cam.height;
    uint8_t *rgba = malloc(px * 4);
    if (!rgba) return send_text(conn, 503, "out of memory for the image");
    /* the image as training sees it (downscaled, undistorted), on the page's background */
    if (splat_dataset_image(v->ctx, split, i, bg, SPLAT_RGBA8, rgba, 0) != SPLAT_OK) {
        free(rgba);
        return send_text(conn, 500, splat_errmsg(v->ctx));
    }
    for (size_t p = 0; p < px; p++) memmove(rgba + 3 * p, rgba + 4 * p, 3);
    enum MHD_Result rc = send_jpeg(conn, rgba, cam.width, cam.height, 95);
    free(rgba);
    return rc;
}

/* ---- routing ---- */

static enum MHD_Result handle(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                              const char *version, const char *upload_data, size_t *upload_size, void **state) {
    view_server *v = cls;
    (void)version;
    (void)upload_data;
    if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
        if (*upload_size) { /* read and drop any body before answering */
            *upload_size = 0;
            return MHD_YES;
        }
        return send_text(conn, 405, "only GET is served");
    }
    if (!*state) { /* first call: headers only */
        static int started;
        *state = &started;
        return MHD_YES;
    }
    if (strstr(url, "..") || strchr(url, '\\')) return send_text(conn, 400, "bad path");
    if (!strcmp(url, "/") || !strcmp(url, "/index.html") || !strcmp(url, "/view.html"))
        return send_buf(conn, 200, "text/html; charset=utf-8", (void *)web_view_html, web_view_html_len,
                        MHD_RESPMEM_PERSISTENT);
    if (!strcmp(url, "/api/info")) return api_info(v, conn);
    if (!strcmp(url, "/api/render")) return api_render(v, conn);
    if (!strcmp(url, "/api/gt")) return api_gt(v, conn);
    if (!strcmp(url, "/api/live")) return api_live(v, conn);
    return send_text(conn, 404, "not found");
}

static void mhd_log(void *cls, const char *fmt, va_list ap) {
    (void)cls;
    (void)fmt;
    (void)ap; /* refused connections and bad requests are answered, not logged */
}

/* ---- start / stop ---- */

int view_parse_port(const char *s) {
    if (!s || !*s) return VIEW_DEFAULT_PORT;
    char *end;
    long p = strtol(s, &end, 10);
    if (*end || p < 0 || p > 65535) return -1;
    return (int)p;
}

view_server *view_start(splat_context *ctx, const char *host, int port, int live) {
    view_server *v = calloc(1, sizeof *v);
    if (!v) return NULL;
    v->ctx = ctx;
    v->live = live;
    pthread_mutex_init(&v->mu, NULL);
    v->prog.loss = v->prog.psnr = NAN;
    cli_config_string(ctx, "data.path", v->data_path, sizeof v->data_path);
    cli_config_string(ctx, "backend.kind", v->backend, sizeof v->backend);
    if (splat_config_get_bool(ctx, "render.antialias", &v->antialias) != SPLAT_OK) v->antialias = 0;
    char s[64];
    cli_config_string(ctx, "data.background", s, sizeof s);
    v->default_bg = !strcmp(s, "black") ? 0.0f : 1.0f;
    struct sockaddr_in addr;
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_port = htons((uint16_t)port);
    if (inet_pton(AF_INET, host, &addr.sin_addr) != 1) {
        fprintf(stderr, "splat view: --host must be an IPv4 address such as 127.0.0.1, got '%s'\n", host);
        view_stop(v);
        return NULL;
    }
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_USE_ERROR_LOG;
    v->d = MHD_start_daemon(flags, (uint16_t)port, NULL, NULL, handle, v, MHD_OPTION_SOCK_ADDR, &addr,
                            MHD_OPTION_CONNECTION_LIMIT, (unsigned)64, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
                            (unsigned)32, MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(32 * 1024),
                            MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)15, MHD_OPTION_LISTEN_BACKLOG_SIZE,
                            (unsigned)64, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL, MHD_OPTION_END);
    if (!v->d) {
        fprintf(stderr, "splat view: cannot listen on %s:%d (in use? try --port N, or --port 0 for any)\n", host,
                port);
        view_stop(v);
        return NULL;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(v->d, MHD_DAEMON_INFO_BIND_PORT);
    int bound = info ? info->port : port;
    printf("viewer: http://%s:%d/\n", host, bound);
    fflush(stdout);
    return v;
}

void view_stop(view_server *v) {
    if (!v) return;
    if (v->d) MHD_stop_daemon(v->d);
    free(v->loss.x);
    free(v->loss.y);
    free(v->psnr.x);
    free(v->psnr.y);
    pthread_mutex_destroy(&v->mu);
    free(v);
}

/* ---- live ---- */

static void curve_push(curve *c, double x, double y) {
    if (!isfinite(y)) return;
    if (c->n && c->x[c->n - 1] == x) return;
    if (!c->x) {
        c->x = malloc(CURVE_MAX * sizeof(double));
        c->y = malloc(CURVE_MAX * sizeof(double));
        if (!c->x || !c->y) {
            free(c->x);
            free(c->y);
            c->x = c->y = NULL;
            return;
        }
    }
    if (c->n == CURVE_MAX) { /* keep every other point */
        for (int i = 0; i < CURVE_MAX / 2; i++) c->x[i] = c->x[2 * i], c->y[i] = c->y[2 * i];
        c->n = CURVE_MAX / 2;
    }
    c->x[c->n] = x;
    c->y[c->n] = y;
    c->n++;
}

void view_progress(view_server *v, const splat_progress *p) {
    if (!v) return;
    pthread_mutex_lock(&v->mu);
    v->prog = *p;
    v->have_prog = 1;
    curve_push(&v->loss, p->step, p->loss);
    if (!v->psnr.n || v->psnr.y[v->psnr.n - 1] != p->psnr) curve_push(&v->psnr, p->step, p->psnr);
    pthread_mutex_unlock(&v->mu);
}

int view_want_model(void *user) {
    view_server *v = user;
    if (!v) return 0;
    double t = now_s();
    pthread_mutex_lock(&v->mu);
    int want = v->last_render_t > 0 && t - v->last_render_t < PAGE_ACTIVE_S && t - v->last_model_t >= MODEL_REFRESH_S;
    if (want) v->last_model_t = t;
    pthread_mutex_unlock(&v->mu);
    return want;
}

#else /* built without libmicrohttpd (VIEW=0) */
#include <stdio.h>

#include "cli/view.h"

view_server *view_start(splat_context *ctx, const char *host, int port, int live) {
    (void)ctx, (void)host, (void)port, (void)live;
    fprintf(stderr, "splat: this build has no viewer (built with VIEW=0; install libmicrohttpd-dev and rebuild)\n");
    return NULL;
}
void view_stop(view_server *v) { (void)v; }
void view_progress(view_server *v, const splat_progress *p) { (void)v, (void)p; }
int view_want_model(void *user) { (void)user; return 0; }
int view_parse_port(const char *s) {
    (void)s;
    return VIEW_DEFAULT_PORT;
}
#endif
