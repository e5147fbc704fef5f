/* eval.c — evaluation of a split: render on the backend (a batch of views at a time, spread over
 * the devices where the backend has several), then quantize, score and save renders on the host
 * in parallel. On a GPU backend the two overlap: the calling thread renders batch k+1 while the
 * other threads score batch k. The cpu backend renders a batch, then scores it (its render is a
 * parallel loop of its own, which must not run inside the scoring's). A backend that scores on
 * its device (ops->score: cuda, and vulkan where the device has 64-bit floats) keeps the render
 * there and gets only the 8-bit ground truth. Every way, every score and picture is the same
 * (the device's SSIM to rounding). */
#include "core/threads.h"
#include "eval/eval.h"

#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "eval/metrics.h"
#include "eval/plot.h"
#include "io/image.h"
#include "io/viewload.h"

/* The ground truth in 8 bits, as sp_view_composite then sp_image_quantize give it, tabulated once
 * per evaluation: a channel's value depends only on that channel's byte, the alpha byte (RGBA
 * views) and the background, so a table of every (byte, alpha) pair gives each view's pixels by
 * lookup, exactly as compositing and quantizing them would. */
typedef struct {
    uint8_t rgba[256 * 256 * 3]; /* [alpha][byte][channel] */
    uint8_t rgb[256 * 3];        /* [byte][channel], opaque views */
} gt_table;

static gt_table *gt_table_make(sp_alpha_mode alpha, const float bg[3]) {
    gt_table *t = sp_malloc(sizeof *t);
    float *f = sp_malloc((size_t)256 * 256 * 3 * sizeof(float));
    uint8_t *px = sp_malloc((size_t)256 * 256 * 4);
    for (int a = 0; a < 256; a++)
        for (int v = 0; v < 256; v++) {
            uint8_t *p = px + ((size_t)a * 256 + v) * 4;
            p[0] = p[1] = p[2] = (uint8_t)v;
            p[3] = (uint8_t)a;
        }
    /* the table is a 256 x 256 RGBA view (one row per alpha), and a 256 x 1 RGB one */
    sp_view v4 = {.cam = {.width = 256, .height = 256}, .channels = 4, .pixels = px};
    sp_view_composite(&v4, alpha, bg, f);
    sp_image_quantize(f, 256, 256, t->rgba);
    for (int v = 0; v < 256; v++) px[3 * v] = px[3 * v + 1] = px[3 * v + 2] = (uint8_t)v;
    sp_view v3 = {.cam = {.width = 256, .height = 1}, .channels = 3, .pixels = px};
    sp_view_composite(&v3, alpha, bg, f);
    sp_image_quantize(f, 256, 1, t->rgb);
    free(px);
    free(f);
    return t;
}

/* The view's pixels composited on the background and quantized (channels as sp_view_composite
 * reads them: alpha only in a 4-channel image). */
static void gt_quantize(const gt_table *t, const uint8_t *pixels, int channels, size_t px, uint8_t *g8) {
    for (size_t i = 0; i < px; i++) {
        const uint8_t *p = pixels + i * channels;
        const uint8_t *row = channels == 4 ? t->rgba + (size_t)p[3] * 256 * 3 : t->rgb;
        for (int k = 0; k < 3; k++) g8[3 * i + k] = row[3 * p[k] + k];
    }
}

/* One evaluation's shared state: inputs, results, and the first failure. */
typedef struct {
    const sp_split *split;
    const gt_table *gt;
    const char *renders_dir;
    sp_eval_result *out;
    int failed_view; /* lowest index of a view whose scoring failed, or -1 */
    char err[2048];  /* its error */
    const sp_eval_cancel *cancel;
    int cancelled; /* stopped before a batch: cancel said so */
} eval_job;

/* 1 (and j->cancelled) when the evaluation is to stop before its next batch. */
static int stop_now(eval_job *j) {
    if (j->cancel && j->cancel->fn && j->cancel->fn(j->cancel->user)) j->cancelled = 1;
    return j->cancelled;
}

/* "./test/r_12" -> "r_12", "0009.jpg" -> "0009" (malloc'd) */
static char *base_name(const char *name) {
    const char *s = strrchr(name, '/');
    char *b = sp_strdup(s ? s + 1 : name);
    char *dot = strrchr(b, '.');
    if (dot && dot != b) *dot = 0;
    return b;
}

/* Labels the halves of a [prediction | ground truth] picture (after scoring; skipped on views too
 * small for the text). */
static void label_halves(uint8_t *rgb, int w, int h) {
    static const uint8_t ink[3] = {0, 0, 0}, box[3] = {255, 255, 255};
    int scale = w >= 600 ? 2 : 1;
    if (w < sp_plot_text_width("ground truth", scale) + 8 || h < 16) return;
    sp_plot_label(rgb, 2 * w, h, 3 * scale, 3 * scale, scale, "prediction", ink, box);
    sp_plot_label(rgb, 2 * w, h, w + 3 * scale, 3 * scale, scale, "ground truth", ink, box);
}

/* Writes renders_dir/<index>_<name>.png as [prediction | ground truth]. */
static int save_side_by_side(const sp_view *v, int index, const uint8_t *p8, const uint8_t *g8,
                             const char *renders_dir) {
    int w = v->cam.width, h = v->cam.height;
    sp_image side = {2 * w, h, 3, sp_try_alloc((size_t)w * h, 6, "an evaluation image", "raise data.downscale")};
    if (!side.pixels) return -1;
    for (int y = 0; y < h; y++) {
        memcpy(side.pixels + (size_t)y * 6 * w, p8 + (size_t)y * 3 * w, (size_t)3 * w);
        memcpy(side.pixels + (size_t)y * 6 * w + 3 * w, g8 + (size_t)y * 3 * w, (size_t)3 * w);
    }
    label_halves(side.pixels, w, h);
    char *base = base_name(v->name);
    char *file = sp_strfmt("%s/%03d_%s.png", renders_dir, index, base);
    int rc = sp_image_save_png(file, &side);
    free(file);
    free(base);
    free(side.pixels);
    return rc;
}

/* View i's ground truth in 8 bits into g8 [h][w][3] (a streamed view is decoded for this only). */
static int view_gt8(const eval_job *j, int i, uint8_t *g8) {
    const sp_view *v = &j->split->views[i];
    size_t px = (size_t)v->cam.width * v->cam.height;
    if (v->pixels) {
        gt_quantize(j->gt, v->pixels, v->channels, px, g8);
        return 0;
    }
    uint8_t *pixels; /* streamed (data.cache_mb) */
    if (sp_view_load_pixels(v, &pixels)) return -1;
    gt_quantize(j->gt, pixels, v->channels, px, g8);
    free(pixels);
    return 0;
}

/* Scores view i, rendered in pred, and writes its picture when renders_dir is set. */
static int score_view(const eval_job *j, int i, const float *pred) {
    const sp_view *v = &j->split->views[i];
    int w = v->cam.width, h = v->cam.height;
    size_t px = (size_t)w * h;
    const char *what = "an evaluation image", *hint = "raise data.downscale";
    /* not zeroed: every byte is written below */
    uint8_t *p8 = sp_try_realloc(NULL, px, 3, what, hint), *g8 = sp_try_realloc(NULL, px, 3, what, hint);
    int rc = -1;
    if (p8 && g8 && view_gt8(j, i, g8) == 0) {
        sp_image_quantize(pred, w, h, p8);
        j->out->psnr[i] = sp_psnr_u8(p8, g8, w, h);
        j->out->ssim[i] = sp_ssim_u8(p8, g8, w, h);
        rc = j->renders_dir ? save_side_by_side(v, i, p8, g8, j->renders_dir) : 0;
    }
    free(p8);
    free(g8);
    return rc;
}

/* A failure of view i (any thread): kept when its view comes first. */
static void keep_failure(eval_job *j, int i) {
#pragma omp critical(sp_eval_failure)
    if (j->failed_view < 0 || i < j->failed_view) {
        j->failed_view = i;
        snprintf(j->err, sizeof j->err, "%s", sp_last_error());
    }
}

/* score_view from any thread. */
static void score_task(eval_job *j, int i, const float *pred) {
    if (score_view(j, i, pred)) keep_failure(j, i);
}

/* A backend that scores on its device (ops->score): for each batch the team makes the ground
 * truths, the calling thread scores view after view on the device, then the team writes the
 * batch's pictures. The scores are the host's (backend.h). A failure (a ground truth, a score)
 * stops after the views before it are scored and drawn. */
static void run_on_device(sp_backend *b, eval_job *j, int batch, int sh_degree, const float bg[3], char *render_err,
                          size_t err_size) {
    int n = j->split->n;
    uint8_t *g8[SP_EVAL_BATCH] = {0}, *p8[SP_EVAL_BATCH] = {0};
    for (int first = 0; first < n && j->failed_view < 0 && !render_err[0] && !stop_now(j); first += batch) {
        int count = n - first < batch ? n - first : batch, scored = 0;
#pragma omp parallel for schedule(dynamic, 1) num_threads(sp_omp_threads())
        for (int k = 0; k < count; k++) {
            const sp_camera *c = &j->split->views[first + k].cam;
            size_t bytes = (size_t)c->width * c->height * 3;
            const char *what = "an evaluation image", *hint = "raise data.downscale";
            uint8_t *g = sp_try_realloc(g8[k], bytes, 1, what, hint), *p = NULL;
            if (g) g8[k] = g;
            if (g && j->renders_dir && (p = sp_try_realloc(p8[k], bytes, 1, what, hint))) p8[k] = p;
            if (!g || (j->renders_dir && !p) || view_gt8(j, first + k, g)) keep_failure(j, first + k);
        }
        int limit = j->failed_view >= 0 ? j->failed_view - first : count; /* the views before a failure */
        for (; scored < limit; scored++) {
            int i = first + scored;
            const sp_camera *c = &j->split->views[i].cam;
            uint64_t sse;
            double ssim;
            if (b->ops->score(b, c, sh_degree, bg, g8[scored], p8[scored], &sse, &ssim)) {
                snprintf(render_err, err_size, "%s", sp_last_error());
                break;
            }
            j->out->psnr[i] = sp_psnr_sse(sse, (uint64_t)c->width * c->height * 3);
            j->out->ssim[i] = ssim;
        }
        if (j->renders_dir) {
#pragma omp parallel for schedule(dynamic, 1) num_threads(sp_omp_threads())
            for (int k = 0; k < scored; k++)
                if (save_side_by_side(&j->split->views[first + k], first + k, p8[k], g8[k], j->renders_dir))
                    keep_failure(j, first + k);
        }
    }
    for (int k = 0; k < SP_EVAL_BATCH; k++) free(g8[k]), free(p8[k]);
}

/* Renders views [first, first + count) into pred[0 .. count-1], resizing the buffers to fit. */
static int render_batch(sp_backend *b, const sp_split *split, int first, int count, int sh_degree,
                        const float bg[3], float **pred) {
    const sp_camera *cams[SP_EVAL_BATCH];
    for (int k = 0; k < count; k++) {
        const sp_camera *c = &split->views[first + k].cam;
        float *p = sp_try_realloc(pred[k], (size_t)c->width * c->height * 3, sizeof(float), "the evaluation renders",
                                  "raise data.downscale");
        if (!p) return -1;
        pred[k] = p;
        cams[k] = c;
    }
    /* the batch's renders, spread over the devices of a replicated backend */
    return sp_backend_render_many(b, cams, count, sh_degree, bg, pred);
}

/* Render a batch, then score it in parallel; batch after batch. */
static void run_serial(sp_backend *b, eval_job *j, int batch, int sh_degree, const float bg[3], float **pred,
                       char *render_err, size_t err_size) {
    int n = j->split->n;
    for (int first = 0; first < n && !stop_now(j); first += batch) {
        int count = n - first < batch ? n - first : batch;
        if (render_batch(b, j->split, first, count, sh_degree, bg, pred)) {
            snprintf(render_err, err_size, "%s", sp_last_error());
            return;
        }
#pragma omp parallel for schedule(dynamic, 1) num_threads(sp_omp_threads())
        for (int k = 0; k < count; k++) score_task(j, first + k, pred[k]);
        if (j->failed_view >= 0) return;
    }
}

/* 1 once a view's score has failed. */
static int any_failed(eval_job *j) {
    int f;
#pragma omp critical(sp_eval_failure)
    f = j->failed_view >= 0;
    return f;
}

/* The calling thread renders batch k into one set of buffers while the team's other threads
 * score batch k-1 from the other set (tasks; batch k's follow at once, so the team never waits
 * between batches). Before rendering into a set it waits for the scores of the batch that set
 * held, scoring meanwhile. Results and the error reported are run_serial's; on a failure, the
 * views of the batch after the failed one may be scored (and drawn) too, none later. */
static void run_overlapped(sp_backend *b, eval_job *j, int batch, int sh_degree, const float bg[3], float **pred,
                           char *render_err, size_t err_size) {
    int n = j->split->n;
#pragma omp parallel num_threads(sp_omp_threads())
#pragma omp master
    {
        for (int first = 0, set = 0; first < n; first += batch, set ^= 1) {
            int count = n - first < batch ? n - first : batch;
            float **buf = pred + set * SP_EVAL_BATCH;
            /* buf[0] stands for the set in the dependences: its scores are done */
            if (first >= 2 * batch) { /* the set's last batch */
#pragma omp taskwait depend(inout : buf[0])
            }
            if (any_failed(j) || stop_now(j)) break;
            if (render_batch(b, j->split, first, count, sh_degree, bg, buf)) {
                /* kept now: scoring on this thread may set its own error later */
                snprintf(render_err, err_size, "%s", sp_last_error());
                break;
            }
            for (int k = 0; k < count; k++) {
                int i = first + k;
                const float *p = buf[k];
#pragma omp task firstprivate(i, p) depend(in : buf[0])
                score_task(j, i, p);
            }
        }
#pragma omp taskwait
    }
}

int sp_eval_views_sched(sp_backend *b, const sp_split *split, sp_alpha_mode alpha, int sh_degree, const float bg[3],
                        const char *renders_dir, int overlap, int batch, const sp_eval_cancel *cancel,
                        sp_eval_result *out) {
    memset(out, 0, sizeof *out);
    double t0 = sp_now();
    int n = split->n;
    out->n = n;
    out->names = SP_NEW(char *, n);
    out->psnr = SP_NEW(double, n);
    out->ssim = SP_NEW(double, n);
    for (int i = 0; i < n; i++) out->names[i] = sp_strdup(split->views[i].name);
    if (renders_dir && sp_mkdir_p(renders_dir)) {
        sp_eval_result_free(out);
        return -1;
    }
    if (batch < 1 || batch > SP_EVAL_BATCH) batch = SP_EVAL_BATCH;
    eval_job j = {split, gt_table_make(alpha, bg), renders_dir, out, -1, "", cancel, 0};
    float *pred[2 * SP_EVAL_BATCH] = {0}; /* two sets when overlapping */
    char render_err[2048] = "";
    if (b->ops->score)
        run_on_device(b, &j, batch, sh_degree, bg, render_err, sizeof render_err);
    else if (overlap)
        run_overlapped(b, &j, batch, sh_degree, bg, pred, render_err, sizeof render_err);
    else
        run_serial(b, &j, batch, sh_degree, bg, pred, render_err, sizeof render_err);
    for (int k = 0; k < 2 * SP_EVAL_BATCH; k++) free(pred[k]);
    free((void *)j.gt);
    /* as rendering and scoring one view after another would report: a failed score before a failed
     * render (every view scored comes before the batch whose render failed) */
    if (j.failed_view >= 0 || render_err[0]) {
        sp_error("%s", j.failed_view >= 0 ? j.err : render_err);
        sp_eval_result_free(out);
        return -1;
    }
    if (j.cancelled) {
        sp_eval_result_free(out);
        return 1;
    }
    for (int i = 0; i < n; i++) {
        out->mean_psnr += out->psnr[i] / n;
        out->mean_ssim += out->ssim[i] / n;
    }
    out->seconds = sp_now() - t0;
    return 0;
}

/* GPU backends (the kinds table's gpu flag; the replicated backend is named cuda) overlap, in
 * batches of half the size, so that their two sets of buffers hold as many renders as one set
 * does on the cpu backend (and the first render and the last scores, which cannot overlap, are
 * half as long). */
static int renders_on_gpu(const sp_backend *b) {
    const sp_backend_kind *k = sp_backend_find_kind(b->ops->name);
    return k && k->gpu;
}

int sp_eval_views_cancel(sp_backend *b, const sp_split *split, sp_alpha_mode alpha, int sh_degree, const float bg[3],
                         const char *renders_dir, const sp_eval_cancel *cancel, sp_eval_result *out) {
    int gpu = renders_on_gpu(b);
    return sp_eval_views_sched(b, split, alpha, sh_degree, bg, renders_dir, gpu, gpu ? SP_EVAL_BATCH / 2 : SP_EVAL_BATCH,
                               cancel, out);
}

int sp_eval_views(sp_backend *b, const sp_split *split, sp_alpha_mode alpha, int sh_degree, const float bg[3],
                  const char *renders_dir, sp_eval_result *out) {
    return sp_eval_views_cancel(b, split, alpha, sh_degree, bg, renders_dir, NULL, out);
}

void sp_eval_result_free(sp_eval_result *r) {
    for (int i = 0; i < r->n; i++) free(r->names ? r->names[i] : NULL);
    free(r->names);
    free(r->psnr);
    free(r->ssim);
    memset(r, 0, sizeof *r);
}
