/* train_and_render.c — splat as a library, through include/splat.h only: makes the demo scene,
 * trains on it for a few hundred steps, scores the test views and renders one new view.
 *
 *   cc train_and_render.c $(pkg-config --cflags --libs splat) -o train_and_render
 *   ./train_and_render WORKDIR [STEPS]
 *
 * Writes WORKDIR/scene (the demo scene), WORKDIR/run (the run folder), WORKDIR/model.spz and
 * WORKDIR/view.ppm (the new view on white). Exits 1 when a call fails, printing its message. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <splat.h>

/* Library messages, warnings and errors only. */
static void on_log(void *user, splat_log_level level, const char *message) {
    (void)user;
    fprintf(stderr, "[splat %s] %s\n", level >= SPLAT_LOG_ERROR ? "error" : "warning", message);
}

static void on_progress(void *user, const splat_progress *p) {
    int *last = user;
    if (p->final ? p->step != *last : p->step >= *last + 100) {
        printf("step %4d/%d  loss %.4f  %d Gaussians\n", p->step, p->max_steps, p->loss, p->num_gaussians);
        *last = p->step;
    }
}

/* Binary PPM (RGB) from RGBA8 pixels. */
static int write_ppm(const char *path, const unsigned char *rgba, int w, int h) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    fprintf(f, "P6\n%d %d\n255\n", w, h);
    for (int i = 0; i < w * h; i++) fwrite(rgba + 4 * i, 1, 3, f);
    return fclose(f);
}

#define CHECK(call)                                                                                  \
    do {                                                                                             \
        splat_status st_ = (call);                                                                   \
        if (st_ != SPLAT_OK) {                                                                       \
            fprintf(stderr, "%s failed (%s): %s\n", #call, splat_status_name(st_), splat_errmsg(ctx)); \
            splat_close(ctx);                                                                        \
            return 1;                                                                                \
        }                                                                                            \
    } while (0)

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s WORKDIR [STEPS]\n", argv[0]);
        return 2;
    }
    const char *work = argv[1];
    int steps = argc > 2 ? atoi(argv[2]) : 300;
    char scene[4096], run[4096], set[4200], spz[4096], ppm[4096];
    snprintf(scene, sizeof scene, "%s/scene", work);
    snprintf(run, sizeof run, "%s/run", work);
    snprintf(spz, sizeof spz, "%s/model.spz", work);
    snprintf(ppm, sizeof ppm, "%s/view.ppm", work);

    splat_context *ctx;
    if (splat_open(&ctx) != SPLAT_OK) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    printf("splat %s\n", splat_version());
    CHECK(splat_set_log(ctx, on_log, NULL, SPLAT_LOG_WARN));

    /* the demo scene: 48x48 pixels, 16 train, 2 val, 4 test views */
    CHECK(splat_synth(ctx, scene, 48, 16, 2, 4, 0));

    /* a short run on the CPU */
    snprintf(set, sizeof set, "data.path=%s", scene);
    CHECK(splat_config_set(ctx, set));
    snprintf(set, sizeof set, "output.run_dir=%s", run);
    CHECK(splat_config_set(ctx, set));
    snprintf(set, sizeof set, "trainer.max_steps=%d", steps);
    CHECK(splat_config_set(ctx, set));
    CHECK(splat_config_load_string(ctx,
                                   "[init]\ncount = 3000\n"
                                   "[trainer]\nsh_interval = 100\n"
                                   "[refine]\nstart = 50\nstop = 250\nevery = 50\n"
                                   "[output]\nsave_renders = false\n"
                                   "[backend]\nkind = \"cpu\"\n",
                                   "example settings"));
    int last = 0;
    splat_train_opts opts = {.force = 1, .progress = on_progress, .user = &last};
    CHECK(splat_train(ctx, &opts));

    int n, degree;
    CHECK(splat_model_info(ctx, &n, &degree));
    splat_eval_result ev;
    CHECK(splat_evaluate(ctx, "test", &ev));
    printf("trained %d Gaussians (SH degree %d) in %s: test PSNR %.2f dB, SSIM %.4f over %d views\n", n, degree,
           splat_run_dir(ctx), ev.psnr, ev.ssim, ev.num_views);

    /* a view no training camera had: above the scene, looking down at it (world z is up) */
    enum { W = 96, H = 72 };
    splat_camera cam;
    const float eye[3] = {2.5f, -2.5f, 2.8f}, target[3] = {0, 0, 0}, up[3] = {0, 0, 1};
    CHECK(splat_camera_look_at(&cam, W, H, 0.69f, eye, target, up));
    static unsigned char rgba[W * H * 4];
    const float white[3] = {1, 1, 1};
    CHECK(splat_render(ctx, &cam, white, SPLAT_RGBA8, rgba, 0));
    int covered = 0; /* pixels that are not plain background */
    for (int i = 0; i < W * H; i++)
        covered += rgba[4 * i] < 250 || rgba[4 * i + 1] < 250 || rgba[4 * i + 2] < 250;
    if (write_ppm(ppm, rgba, W, H)) {
        fprintf(stderr, "%s: cannot write\n", ppm);
        splat_close(ctx);
        return 1;
    }
    CHECK(splat_export(ctx, spz, NULL));
    printf("rendered %dx%d to %s (%d%% of the pixels show the scene); exported %s\n", W, H, ppm,
           100 * covered / (W * H), spz);
    splat_close(ctx);
    return covered > 0 ? 0 : 1;
}
