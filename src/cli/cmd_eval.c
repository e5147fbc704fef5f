/* cmd_eval.c — `splat eval` (scores a trained model on held-out views) and `splat render`
 * (writes a model's renders of a split as PNG files). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "cli/cli.h"
#include "core/core.h"
#include "eval/eval.h"
#include "io/export.h"
#include "io/image.h"
#include "io/loader.h"
#include "io/ply.h"
#include "scene/campath.h"
#include "train/report.h"

typedef struct {
    const char *run, *ply, *data, *split, *out, *background, *backend;
    int downscale;
    const char *path; /* render --path orbit|spiral|interp */
    int frames;
} eval_args;

static int parse(int argc, char **argv, eval_args *a) {
    memset(a, 0, sizeof *a);
    a->downscale = 1;
    for (int i = 1; i < argc; i++) {
        const char *v;
        if ((v = cli_value(argc, argv, &i, "--run"))) a->run = v;
        else if ((v = cli_value(argc, argv, &i, "--ply"))) a->ply = v;
        else if ((v = cli_value(argc, argv, &i, "--data"))) a->data = v;
        else if ((v = cli_value(argc, argv, &i, "--split"))) a->split = v;
        else if ((v = cli_value(argc, argv, &i, "--out"))) a->out = v;
        else if ((v = cli_value(argc, argv, &i, "--background"))) a->background = v;
        else if ((v = cli_value(argc, argv, &i, "--backend"))) a->backend = v;
        else if ((v = cli_value(argc, argv, &i, "--downscale"))) a->downscale = atoi(v);
        else if ((v = cli_value(argc, argv, &i, "--path"))) a->path = v;
        else if ((v = cli_value(argc, argv, &i, "--frames"))) a->frames = atoi(v);
        else {
            fprintf(stderr, "splat: unknown option '%s' (see --help)\n", argv[i]);
            return -1;
        }
    }
    if (a->split && strcmp(a->split, "test") && strcmp(a->split, "val") && strcmp(a->split, "train")) {
        fprintf(stderr, "splat: --split must be test, val or train, got '%s'\n", a->split);
        return -1;
    }
    if (a->downscale < 1) {
        fprintf(stderr, "splat: --downscale must be >= 1\n");
        return -1;
    }
    sp_path_kind kind;
    if (a->path && sp_path_kind_parse(a->path, &kind)) {
        fprintf(stderr, "splat: --path: %s\n", sp_last_error());
        return -1;
    }
    if (a->frames < 0 || a->frames > 100000 || (a->frames && !a->path)) {
        fprintf(stderr, "splat: --frames must be between 1 and 100000, with --path\n");
        return -1;
    }
    return 0;
}

/* Shared by eval and render: config (from the run or defaults), dataset, model, backend. */
typedef struct {
    sp_config cfg;
    sp_dataset data;
    sp_gaussians g;
    sp_backend *b;
    float bg[3];
    sp_alpha_mode alpha;
} session;

static int open_session(const eval_args *a, session *s) {
    memset(s, 0, sizeof *s);
    sp_config_defaults(&s->cfg);
    char *ply = NULL;
    sp_problems probs = {0};
    if (a->run) {
        char *cp = sp_path_join(a->run, "config.toml");
        sp_config_load(cp, &s->cfg, &probs);
        free(cp);
        ply = a->ply ? sp_strdup(a->ply) : sp_path_join(a->run, "point_cloud.ply");
    } else {
        ply = sp_strdup(a->ply);
    }
    if (a->data) snprintf(s->cfg.data.path, sizeof s->cfg.data.path, "%s", a->data);
    if (a->background) snprintf(s->cfg.data.background, sizeof s->cfg.data.background, "%s", a->background);
    if (a->backend) snprintf(s->cfg.backend.kind, sizeof s->cfg.backend.kind, "%s", a->backend);
    if (a->downscale > 1) s->cfg.data.downscale = a->downscale;
    int rc = -1;
    if (!probs.n) {
        sp_load_opts lo = {.downscale = s->cfg.data.downscale, .threads = s->cfg.backend.threads, .load_pixels = 1,
                           .images = s->cfg.data.images, .holdout_every = s->cfg.data.holdout_every};
        sp_dataset_load(s->cfg.data.path, s->cfg.data.format, &lo, &s->data, &probs);
    }
    for (int i = 0; i < probs.n; i++) fprintf(stderr, "error: %s\n", probs.items[i]);
    if (probs.n) goto done;
    if (sp_model_read(ply, &s->g)) { /* .ply, .splat or .spz */
        fprintf(stderr, "error: %s\n", sp_last_error());
        goto done;
    }
    sp_backend_config bc = {.threads = s->cfg.backend.threads, .deterministic = s->cfg.backend.deterministic};
    s->b = sp_backend_create(s->cfg.backend.kind, &bc);
    if (!s->b || s->b->ops->set_gaussians(s->b, &s->g, NULL, NULL)) {
        fprintf(stderr, "error: %s\n", sp_last_error());
        goto done;
    }
    float v = !strcmp(s->cfg.data.background, "black") ? 0.0f : 1.0f;
    s->bg[0] = s->bg[1] = s->bg[2] = v;
    s->alpha = !strcmp(s->cfg.data.alpha, "premultiplied") ? SP_ALPHA_PREMULTIPLIED : SP_ALPHA_STRAIGHT;
    rc = 0;
done:
    free(ply);
    sp_problems_free(&probs);
    return rc;
}

static void close_session(session *s) {
    if (s->b) s->b->ops->destroy(s->b);
    sp_dataset_free(&s->data);
    sp_gaussians_free(&s->g);
}

int cmd_eval(int argc, char **argv) {
    if (cli_help_requested(argc, argv)) {
        printf("usage: splat eval --run DIR [--split val|test]\n"
               "       splat eval --ply FILE --data DIR [--split val|test] [--background white|black]\n"
               "\n"
               "Renders the held-out views with a trained model and prints PSNR and SSIM (renders\n"
               "quantized to 8 bits, as a user would save them) per view and on average. With --run,\n"
               "the run's config.toml and point_cloud.ply are used and RUN/eval_<split>.toml is written.\n");
        return 0;
    }
    eval_args a;
    if (parse(argc, argv, &a)) return 2;
    if (!a.run && !(a.ply && a.data)) {
        fprintf(stderr, "splat eval: give --run DIR, or --ply FILE and --data DIR\n");
        return 2;
    }
    session s;
    if (open_session(&a, &s)) {
        close_session(&s);
        return 1;
    }
    const char *split = a.split ? a.split : (s.data.test.n ? "test" : "val");
    sp_split *sp = sp_dataset_split(&s.data, split);
    if (!sp || !sp->n) {
        fprintf(stderr, "error: %s: the dataset has no %s views\n", s.cfg.data.path, split);
        close_session(&s);
        return 1;
    }
    sp_eval_result r;
    int rc = sp_eval_views(s.b, sp, s.alpha, s.g.sh_degree, s.bg, NULL, &r);
    if (rc == 0) {
        for (int i = 0; i < r.n; i++) printf("%-28s PSNR %7.3f  SSIM %.4f\n", r.names[i], r.psnr[i], r.ssim[i]);
        printf("%s: %d views, PSNR %.3f dB, SSIM %.4f, %d Gaussians\n", split, r.n, r.mean_psnr, r.mean_ssim, s.g.n);
        if (a.run) {
            char *name = sp_strfmt("eval_%s.toml", split);
            char *p = sp_path_join(a.run, name);
            rc = sp_report_write_eval(p, split, &r, s.g.n);
            free(name);
            free(p);
        }
        sp_eval_result_free(&r);
    }
    if (rc) fprintf(stderr, "error: %s\n", sp_last_error());
    close_session(&s);
    return rc ? 1 : 0;
}

/* `render --path`: frames along a camera path derived from the training cameras (scene/campath.h)
 * as OUT/frame_0000.png ..., then OUT/<path>.mp4 when ffmpeg is on PATH. */
static int render_path(const eval_args *a, session *s) {
    sp_path_kind kind;
    sp_path_kind_parse(a->path, &kind); /* validated by parse() */
    int frames = a->frames > 0 ? a->frames : 120;
    sp_camera *cams = SP_NEW(sp_camera, frames);
    int rc = sp_campath_make(&s->data, kind, frames, cams);
    if (rc == 0) rc = sp_mkdir_p(a->out);
    int w = rc == 0 ? cams[0].width : 1, h = rc == 0 ? cams[0].height : 1;
    float *rgb = sp_malloc((size_t)w * h * 3 * sizeof(float));
    sp_image img = {w, h, 3, sp_malloc((size_t)w * h * 3)};
    for (int j = 0; rc == 0 && j < frames; j++) {
        rc = s->b->ops->render(s->b, &cams[j], s->g.sh_degree, s->bg, rgb);
        if (rc) break;
        sp_image_quantize(rgb, w, h, img.pixels);
        char *p = sp_strfmt("%s/frame_%04d.png", a->out, j);
        rc = sp_image_save_png(p, &img);
        free(p);
    }
    free(rgb);
    free(img.pixels);
    free(cams);
    if (rc) {
        fprintf(stderr, "error: %s\n", sp_last_error());
        return 1;
    }
    printf("wrote %d frames (%s path, %dx%d) to %s\n", frames, a->path, w, h, a->out);
    char *name = sp_strfmt("%s.mp4", a->path), *mp4 = sp_path_join(a->out, name);
    int v = cli_encode_video(a->out, "frame_%04d.png", 30, mp4);
    if (v > 0) printf("wrote %s\n", mp4);
    else if (v == 0) printf("ffmpeg is not on PATH: no video (the PNG frames are complete)\n");
    else fprintf(stderr, "warning: %s; the PNG frames are complete\n", sp_last_error());
    free(name);
    free(mp4);
    return 0;
}

int cmd_render(int argc, char **argv) {
    if (cli_help_requested(argc, argv)) {
        /* the --path usage comes first: frames along a camera path (render_path) */
        printf("usage: splat render --ply FILE --data DIR --path orbit|spiral|interp [--frames N] --out DIR\n"
               "\n"
               "Renders N frames (default 120) along a camera path derived from the training cameras:\n"
               "  orbit   a circle around the point the cameras look at, at their mean distance and height\n"
               "  spiral  a spiral around the mean pose (forward-facing captures) or the first camera\n"
               "  interp  a smooth path through up to 8 training poses\n"
               "as OUT/frame_0000.png ..., and OUT/<path>.mp4 when ffmpeg is on PATH. FILE may be .ply,\n"
               ".splat or .spz (docs/formats.md).\n"
               "\n"
               "usage: splat render --ply FILE --data DIR [--split test] --out DIR [--background white|black]\n"
               "\n"
               "Renders every view of a split with the model and writes OUT/<split>/<name>.png, so the\n"
               "renders of different splits never overwrite each other.\n");
        return 0;
    }
    eval_args a;
    if (parse(argc, argv, &a)) return 2;
    if (!a.ply || !a.data || !a.out) {
        fprintf(stderr, "splat render: --ply FILE, --data DIR and --out DIR are required\n");
        return 2;
    }
    session s;
    if (open_session(&a, &s)) {
        close_session(&s);
        return 1;
    }
    if (a.path) {
        int prc = render_path(&a, &s);
        close_session(&s);
        return prc;
    }
    const char *split = a.split ? a.split : "test";
    sp_split *sp = sp_dataset_split(&s.data, split);
    int rc = 0;
    if (!sp || !sp->n) rc = sp_error("%s: the dataset has no %s views", s.cfg.data.path, split);
    char *outdir = sp_path_join(a.out, split); /* per split: train and val views may share names */
    if (rc == 0 && sp_mkdir_p(outdir)) rc = -1;
    for (int i = 0; rc == 0 && i < sp->n; i++) {
        const sp_camera *c = &sp->views[i].cam;
        float *rgb = sp_malloc((size_t)c->width * c->height * 3 * sizeof(float));
        sp_image img = {c->width, c->height, 3, sp_malloc((size_t)c->width * c->height * 3)};
        rc = s.b->ops->render(s.b, c, s.g.sh_degree, s.bg, rgb);
        if (rc == 0) {
            sp_image_quantize(rgb, c->width, c->height, img.pixels);
            const char *base = strrchr(sp->views[i].name, '/');
            char *p = sp_strfmt("%s/%s.png", outdir, base ? base + 1 : sp->views[i].name);
            rc = sp_image_save_png(p, &img);
            free(p);
        }
        free(rgb);
        free(img.pixels);
    }
    if (rc) fprintf(stderr, "error: %s\n", sp_last_error());
    else printf("wrote %d renders to %s\n", sp->n, outdir);
    free(outdir);
    close_session(&s);
    return rc ? 1 : 0;
}
