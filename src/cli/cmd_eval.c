/* cmd_eval.c — `splat eval` (scores a trained model on held-out views) and `splat render`
 * (writes a model's renders of a split, or along a camera path, as PNG files), both through the
 * public API (include/splat.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

typedef struct {
    const char *run, *ply, *data, *split, *out, *background, *backend;
    const char *antialias; /* on | off: render.antialias (default: the run's, else off) */
    int downscale;         /* 0: the run's data.downscale (1 without a run) */
    const char *path; /* render --path orbit|spiral|interp */
    int frames;
} eval_args;

static int parse(const char *cmd, int argc, char **argv, eval_args *a) {
    memset(a, 0, sizeof *a);
    int downscale_given = 0;
    long long n;
    for (int i = 1; i < argc; i++) {
        const char *v;
        if ((v = cli_value(argc, argv, &i, "--run"))) a->run = v;
        else if ((v = cli_value(argc, argv, &i, "--ply"))) a->ply = v;
        else if ((v = cli_value(argc, argv, &i, "--data"))) a->data = v;
        else if ((v = cli_value(argc, argv, &i, "--split"))) a->split = v;
        else if ((v = cli_value(argc, argv, &i, "--out"))) a->out = v;
        else if ((v = cli_value(argc, argv, &i, "--background"))) a->background = v;
        else if ((v = cli_value(argc, argv, &i, "--backend"))) a->backend = v;
        else if ((v = cli_value(argc, argv, &i, "--downscale"))) {
            if (cli_int(cmd, "--downscale", v, 1, 64, &n)) return -1;
            a->downscale = (int)n, downscale_given = 1;
        }
        else if ((v = cli_value(argc, argv, &i, "--antialias"))) a->antialias = v;
        else if ((v = cli_value(argc, argv, &i, "--path"))) a->path = v;
        else if ((v = cli_value(argc, argv, &i, "--frames"))) {
            if (cli_int(cmd, "--frames", v, 1, 100000, &n)) return -1;
            a->frames = (int)n;
        }
        else {
            fprintf(stderr, "splat: unknown option '%s' (see --help)\n", argv[i]);
            return -1;
        }
    }
    if (a->split && strcmp(a->split, "test") && strcmp(a->split, "val") && strcmp(a->split, "train")) {
        fprintf(stderr, "splat: --split must be test, val or train, got '%s'\n", a->split);
        return -1;
    }
    if (downscale_given && a->downscale < 1) {
        fprintf(stderr, "splat: --downscale must be >= 1\n");
        return -1;
    }
    if (a->antialias && strcmp(a->antialias, "on") && strcmp(a->antialias, "off")) {
        fprintf(stderr, "splat: --antialias must be on or off, got '%s'\n", a->antialias);
        return -1;
    }
    if (a->path && strcmp(a->path, "orbit") && strcmp(a->path, "spiral") && strcmp(a->path, "interp")) {
        fprintf(stderr, "splat: --path: unknown camera path '%s' (use orbit, spiral or interp)\n", a->path);
        return -1;
    }
    if (a->frames && !a->path) {
        fprintf(stderr, "splat: --frames goes with --path (frames along a camera path)\n");
        return -1;
    }
    return 0;
}

/* Shared by eval and render: a context with the configuration (from the run or defaults), the
 * dataset's cameras checked, and the model loaded. */
typedef struct {
    splat_context *ctx;
    char data_path[4096];
    int num_gaussians, sh_degree;
    float bg[3];
} session;

static int open_session(const eval_args *a, session *s) {
    memset(s, 0, sizeof *s);
    s->ctx = cli_open_context();
    if (!s->ctx) return -1;
    splat_context *ctx = s->ctx;
    char *ply = NULL;
    cli_problems probs = {0};
    if (a->run) {
        char *cp = cli_path_join(a->run, "config.toml");
        if (splat_config_load_file(ctx, cp) != SPLAT_OK) cli_add_problems(ctx, &probs);
        free(cp);
        ply = a->ply ? cli_strdup(a->ply) : cli_path_join(a->run, "point_cloud.ply");
    } else {
        ply = cli_strdup(a->ply);
    }
    if (a->data && splat_config_set_string(ctx, "data.path", a->data) != SPLAT_OK) cli_add_problems(ctx, &probs);
    if (a->background && splat_config_set_string(ctx, "data.background", a->background) != SPLAT_OK)
        cli_add_problems(ctx, &probs);
    if (a->backend && splat_config_set_string(ctx, "backend.kind", a->backend) != SPLAT_OK)
        cli_add_problems(ctx, &probs);
    if (a->downscale > 0) {
        char *set = cli_strfmt("data.downscale=%d", a->downscale);
        if (splat_config_set(ctx, set) != SPLAT_OK) cli_add_problems(ctx, &probs);
        free(set);
    }
    if (a->antialias && splat_config_set(ctx, !strcmp(a->antialias, "on") ? "render.antialias=true"
                                                                           : "render.antialias=false") != SPLAT_OK)
        cli_add_problems(ctx, &probs);
    int rc = -1, n;
    if (!probs.n && splat_dataset_views(ctx, "train", &n) != SPLAT_OK) cli_add_problems(ctx, &probs);
    for (int i = 0; i < probs.n; i++) fprintf(stderr, "error: %s\n", probs.items[i]);
    if (probs.n) goto done;
    if (splat_load_model(ctx, ply) != SPLAT_OK) { /* .ply, .splat, .spz, .sog */
        cli_print_error(ctx);
        goto done;
    }
    splat_model_info(ctx, &s->num_gaussians, &s->sh_degree);
    cli_config_string(ctx, "data.path", s->data_path, sizeof s->data_path);
    char v[64];
    cli_config_string(ctx, "data.background", v, sizeof v);
    float b = !strcmp(v, "black") ? 0.0f : 1.0f;
    s->bg[0] = s->bg[1] = s->bg[2] = b;
    rc = 0;
done:
    free(ply);
    cli_problems_free(&probs);
    return rc;
}

static void close_session(session *s) { splat_close(s->ctx); }

/* Renders cam on the session's background and writes it as an RGB PNG. */
static int render_png(session *s, const splat_camera *cam, const char *path) {
    if (splat_render_png(s->ctx, cam, s->bg, path) != SPLAT_OK) return cli_error("%s", splat_errmsg(s->ctx));
    return 0;
}

int cmd_eval(int argc, char **argv) {
    if (cli_help_requested(argc, argv)) {
        printf("usage: splat eval --run DIR [--split val|test] [--downscale N] [--antialias on|off]\n"
               "       splat eval --ply FILE --data DIR [--split val|test] [--background white|black]\n"
               "\n"
               "Renders the held-out views with a trained model and prints PSNR and SSIM (renders\n"
               "quantized to 8 bits, as a user would save them) per view and on average. With --run,\n"
               "the run's config.toml and point_cloud.ply are used and RUN/eval_<split>.toml is written.\n"
               "--downscale N scores at 1/N of the dataset's image size (default: the run's data.downscale).\n"
               "--antialias on|off renders with or without the opacity-compensated filter\n"
               "(render.antialias; default: the run's setting, off for --ply). A model trained with it\n"
               "should be rendered with it; off shows how a standard 3DGS viewer draws it.\n");
        return 0;
    }
    eval_args a;
    if (parse("eval", argc, argv, &a)) return 2;
    if (!a.run && !(a.ply && a.data)) {
        fprintf(stderr, "splat eval: give --run DIR, or --ply FILE and --data DIR\n");
        return 2;
    }
    session s;
    if (open_session(&a, &s)) {
        close_session(&s);
        return 1;
    }
    int ntest = 0;
    splat_dataset_views(s.ctx, "test", &ntest);
    const char *split = a.split ? a.split : (ntest ? "test" : "val");
    int nviews = 0;
    splat_dataset_views(s.ctx, split, &nviews);
    if (!nviews) {
        fprintf(stderr, "error: %s: the dataset has no %s views\n", s.data_path, split);
        close_session(&s);
        return 1;
    }
    splat_eval_result r;
    splat_status st = splat_evaluate(s.ctx, split, &r);
    if (st == SPLAT_OK) {
        for (int i = 0; i < r.num_views; i++)
            printf("%-28s PSNR %7.3f  SSIM %.4f\n", r.view_names[i], r.view_psnr[i], r.view_ssim[i]);
        printf("%s: %d views, PSNR %.3f dB, SSIM %.4f, %d Gaussians\n", split, r.num_views, r.psnr, r.ssim,
               s.num_gaussians);
        if (a.run) {
            char *name = cli_strfmt("eval_%s.toml", split);
            char *p = cli_path_join(a.run, name);
            st = splat_eval_save(s.ctx, p);
            free(name);
            free(p);
        }
    }
    if (st != SPLAT_OK) cli_print_error(s.ctx);
    close_session(&s);
    return st != SPLAT_OK ? 1 : 0;
}

/* `render --path`: frames along a camera path derived from the training cameras (splat_camera_path)
 * as OUT/frame_0000.png ..., then OUT/<path>.mp4 when ffmpeg is on PATH. */
static int render_path(const eval_args *a, session *s) {
    int frames = a->frames > 0 ? a->frames : 120;
    splat_camera *cams = CLI_NEW(splat_camera, frames);
    int rc = splat_camera_path(s->ctx, a->path, frames, cams) == SPLAT_OK ? 0 : cli_error("%s", splat_errmsg(s->ctx));
    if (rc == 0) rc = cli_mkdir_p(a->out);
    int w = rc == 0 ? cams[0].width : 1, h = rc == 0 ? cams[0].height : 1;
    for (int j = 0; rc == 0 && j < frames; j++) {
        char *p = cli_strfmt("%s/frame_%04d.png", a->out, j);
        rc = render_png(s, &cams[j], p);
        free(p);
    }
    free(cams);
    if (rc) {
        fprintf(stderr, "error: %s\n", cli_last_error());
        return 1;
    }
    printf("wrote %d frames (%s path, %dx%d) to %s\n", frames, a->path, w, h, a->out);
    char *name = cli_strfmt("%s.mp4", a->path), *mp4 = cli_path_join(a->out, name);
    int v = cli_encode_video(a->out, "frame_%04d.png", 30, mp4);
    if (v > 0) printf("wrote %s\n", mp4);
    else if (v == 0) printf("ffmpeg is not on PATH: no video (the PNG frames are complete)\n");
    else fprintf(stderr, "warning: %s; the PNG frames are complete\n", cli_last_error());
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
               ".splat, .spz or .sog (docs/formats.md).\n"
               "\n"
               "usage: splat render --ply FILE --data DIR [--split test] --out DIR [--background white|black]\n"
               "\n"
               "Renders every view of a split with the model and writes OUT/<split>/<name>.png, so the\n"
               "renders of different splits never overwrite each other.\n"
               "\n"
               "OUT must be new, empty, or an earlier render output (only frame_*.png, *.mp4 and\n"
               "train|val|test/*.png); it may not be or lie inside the dataset, a run folder or hold the model.\n"
               "Ranges: --frames 1..100000, --downscale 1..64.\n"
               "\n"
               "Both: --antialias on renders a model trained with render.antialias = true as it was trained\n"
               "(docs/math.md, \"Antialiasing\"); --downscale N renders at 1/N of the dataset's size.\n");
        return 0;
    }
    eval_args a;
    if (parse("render", argc, argv, &a)) return 2;
    if (!a.ply || !a.data || !a.out) {
        fprintf(stderr, "splat render: --ply FILE, --data DIR and --out DIR are required\n");
        return 2;
    }
    {
        const char *inputs[] = {a.data, a.ply, NULL}; /* render takes no --run */
        if (cli_guard_out_dir("render", "render", a.out, inputs)) return 2;
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
    int n = 0, rc = 0;
    splat_dataset_views(s.ctx, split, &n);
    if (!n) rc = cli_error("%s: the dataset has no %s views", s.data_path, split);
    char *outdir = cli_path_join(a.out, split); /* per split: train and val views may share names */
    if (rc == 0 && cli_mkdir_p(outdir)) rc = -1;
    for (int i = 0; rc == 0 && i < n; i++) {
        splat_camera cam;
        char name[4096];
        if (splat_dataset_camera(s.ctx, split, i, &cam) != SPLAT_OK ||
            splat_dataset_view_name(s.ctx, split, i, name, sizeof name) != SPLAT_OK) {
            rc = cli_error("%s", splat_errmsg(s.ctx));
            break;
        }
        const char *base = strrchr(name, '/');
        char *p = cli_strfmt("%s/%s.png", outdir, base ? base + 1 : name);
        rc = render_png(&s, &cam, p);
        free(p);
    }
    if (rc) fprintf(stderr, "error: %s\n", cli_last_error());
    else printf("wrote %d renders to %s\n", n, outdir);
    free(outdir);
    close_session(&s);
    return rc ? 1 : 0;
}
