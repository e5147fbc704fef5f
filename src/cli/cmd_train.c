/* cmd_train.c — `splat train` and `splat check`: configuration from defaults, a file, a dataset
 * folder given as an argument and --set overrides, then training (through the public API,
 * include/splat.h), or a report of every problem found without training. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/view.h"

typedef struct {
    const char *config;
    const char *resume;
    const char *data; /* positional DATASET_DIR: sets data.path */
    const char *sets[256];
    int nsets;
    int force;
    int print_config; /* check: print the resolved configuration */
    int view_port;    /* --view[=PORT]: -1 none */
    const char *view_host;
    const char *dist_file; /* --dist-file: wins over SPLAT_DIST_FILE */
} train_args;

static int parse_args(int argc, char **argv, train_args *t, int allow_resume) {
    memset(t, 0, sizeof *t);
    t->view_port = -1;
    t->view_host = "127.0.0.1";
    for (int i = 1; i < argc; i++) {
        const char *v;
        if (allow_resume && !strncmp(argv[i], "--view", 6) && (!argv[i][6] || argv[i][6] == '=')) {
            /* --view, --view=PORT or --view PORT */
            const char *p = argv[i][6] ? argv[i] + 7 : "";
            if (!argv[i][6] && i + 1 < argc && argv[i + 1][0] >= '0' && argv[i + 1][0] <= '9') p = argv[++i];
            t->view_port = view_parse_port(p);
            if (t->view_port < 0 || (argv[i][6] == '=' && !*p)) {
                fprintf(stderr, "splat: --view takes a port 0..65535, got '%s'\n", p);
                return -1;
            }
        } else if (allow_resume && (v = cli_value(argc, argv, &i, "--view-host"))) t->view_host = v;
        else if ((v = cli_value(argc, argv, &i, "--config"))) t->config = v;
        else if ((v = cli_value(argc, argv, &i, "--set"))) {
            if (t->nsets == 256) {
                fprintf(stderr, "splat: too many --set options\n");
                return -1;
            }
            t->sets[t->nsets++] = v;
        } else if (allow_resume && (v = cli_value(argc, argv, &i, "--resume"))) t->resume = v;
        else if (allow_resume && cli_flag(argv[i], "--force")) t->force = 1;
        else if (!allow_resume && cli_flag(argv[i], "--print-config")) t->print_config = 1;
        else if ((v = cli_value(argc, argv, &i, "--dist-file"))) t->dist_file = v;
        else if (argv[i][0] != '-' && !t->data) t->data = argv[i];
        else {
            fprintf(stderr, "splat: unknown option '%s' (see --help)\n", argv[i]);
            return -1;
        }
    }
    return 0;
}

/* The last component of a folder path ("../data/lego/" -> "lego"). */
static void dataset_name(const char *dir, char *out, size_t size) {
    size_t end = strlen(dir);
    while (end > 1 && dir[end - 1] == '/') end--;
    size_t start = end;
    while (start > 0 && dir[start - 1] != '/') start--;
    if (end > start && !(end - start <= 2 && dir[start] == '.')) snprintf(out, size, "%.*s", (int)(end - start), dir + start);
}

static void print_problems(const cli_problems *p) {
    for (int i = 0; i < p->n; i++) fprintf(stderr, "error: %s\n", p->items[i]);
}

/* The configuration from defaults, --config (or RUN_DIR/config.toml when resuming), the dataset
 * folder and --set, in a context; every problem goes to probs. */
static int api_config(const train_args *t, splat_context *ctx, cli_problems *probs) {
    char *path = t->config ? cli_strdup(t->config) : t->resume ? cli_path_join(t->resume, "config.toml") : NULL;
    if (path && splat_config_load_file(ctx, path) != SPLAT_OK) cli_add_problems(ctx, probs);
    free(path);
    if (t->data) {
        if (splat_config_set_string(ctx, "data.path", t->data) != SPLAT_OK) cli_add_problems(ctx, probs);
        char name[1024] = "";
        /* no config file: the run is named after the dataset folder (runs/lego) */
        if (!t->config && !t->resume) dataset_name(t->data, name, sizeof name);
        if (name[0] && splat_config_set_string(ctx, "experiment.name", name) != SPLAT_OK) cli_add_problems(ctx, probs);
    }
    for (int i = 0; i < t->nsets; i++)
        if (splat_config_set(ctx, t->sets[i]) != SPLAT_OK) cli_add_set_problems(ctx, probs);
    if (t->resume && splat_config_set_string(ctx, "output.run_dir", t->resume) != SPLAT_OK)
        cli_add_problems(ctx, probs);
    if (splat_config_check(ctx) != SPLAT_OK) cli_add_problems(ctx, probs);
    return probs->n ? -1 : 0;
}

/* What the callbacks of one training share: the --view server (or NULL) and the progress clock. */
typedef struct {
    view_server *server;
    cli_clock clock;
} train_ui;

static void show_progress(void *user, const splat_progress *p) {
    train_ui *ui = user;
    view_progress(ui->server, p); /* --view: the live page's scalars (no-op without a server) */
    sp_cli_progress(p, &ui->clock);
    cli_set_live_line(!p->final && isatty(STDERR_FILENO)); /* sp_cli_progress draws a live line on a terminal */
}

static int want_model(void *user) { return view_want_model(((train_ui *)user)->server); }

/* --resume DIR before anything else: a folder that is not there, or holds no run, said plainly. */
static int check_resume_dir(const char *dir) {
    if (!*dir) {
        fprintf(stderr, "splat train: --resume needs a run folder (splat train --resume runs/NAME)\n");
        return -1;
    }
    if (!cli_dir_exists(dir)) {
        fprintf(stderr, "splat train: --resume %s: no such run folder%s\n", dir,
                cli_file_exists(dir) ? " (it is a file)" : "");
        return -1;
    }
    char *cfg = cli_path_join(dir, "config.toml");
    int ok = cli_file_exists(cfg);
    free(cfg);
    if (!ok) {
        fprintf(stderr, "splat train: --resume %s: not a run folder (no config.toml in it; a run folder is what "
                "splat train writes: config.toml, checkpoint.bin, point_cloud.ply, ...)\n", dir);
        return -1;
    }
    return 0;
}

/* An int setting of the context (0 when it cannot be read). */
static int config_int(splat_context *ctx, const char *key) {
    int v = 0;
    return splat_config_get_int(ctx, key, &v) == SPLAT_OK ? v : 0;
}

/* Before training: what the terminal should know that the library only writes to log.txt (a short
 * run whose densification runs to its last step), and the plan the progress clock follows. */
static void plan_run(splat_context *ctx, const train_args *t, cli_clock *clock) {
    memset(clock, 0, sizeof *clock);
    clock->resumed = t->resume != NULL;
    splat_set_log(ctx, NULL, NULL, SPLAT_LOG_INFO); /* the loader's warnings come once, from training */
    splat_status st = splat_train_plan(ctx, &clock->plan);
    splat_set_log(ctx, cli_log, NULL, SPLAT_LOG_INFO);
    if (st != SPLAT_OK) return; /* the trainer reports the problem */
    const splat_plan *p = &clock->plan;
    clock->have_plan = 1;
    clock->announce = !strcmp(p->backend, "cpu");
    if (!config_int(ctx, "trainer.schedule_steps") && p->refine_stop > p->max_steps && p->refine_start < p->max_steps)
        fprintf(stderr, "note: densification runs to the last step of this %d-step run (refine.%s = %d); "
                "--set trainer.schedule_steps=20000 scales the default schedules (written for 20000 steps) to it "
                "(docs/config.md)\n",
                p->max_steps, strcmp(p->strategy, "mcmc") ? "stop" : "mcmc_stop", p->refine_stop);
}

/* After a failed training: when the run folder's checkpoint is damaged, say what is still intact
 * and never suggest --force (it would delete the run's good files with the damaged one). */
static void damaged_checkpoint_note(const char *dir) {
    char *ck = cli_path_join(dir, "checkpoint.bin");
    splat_context *probe = NULL;
    /* a checkpoint that does not load as a model (its checks, CRC included) is damaged */
    if (cli_file_exists(ck) && splat_open(&probe) == SPLAT_OK && splat_load_model(probe, ck) != SPLAT_OK) {
        char *ply = cli_path_join(dir, "point_cloud.ply");
        fprintf(stderr, "note: %s is damaged and cannot be resumed; the run folder is unchanged%s. Keep a copy of it "
                "(cp -r %s %s.bak) before training it again: --force would delete every file of the run with the "
                "damaged checkpoint\n", ck, cli_file_exists(ply) ? " and its point_cloud.ply (the last saved model) is "
                "intact: splat eval/render/export still read it" : "", dir, dir);
        free(ply);
    }
    splat_close(probe);
    free(ck);
}

int sp_cli_interrupted(void *user) {
    (void)user;
    return sp_interrupted();
}

int cmd_train(int argc, char **argv) {
    if (cli_help_requested(argc, argv)) {
        printf("usage: splat train DATASET_DIR [--set section.key=value ...] [--force] [--view [PORT]]\n"
               "       splat train [DATASET_DIR] --config FILE [--set section.key=value ...] [--force]\n"
               "       splat train --resume RUN_DIR [--set section.key=value ...]\n"
               "\n"
               "Trains on a dataset folder (NeRF-synthetic, COLMAP or transforms.json, detected) and writes a\n"
               "run folder (default runs/<name>; without --config the name is the dataset folder's):\n"
               "config.toml, log.txt, point_cloud.ply, checkpoint.bin, renders/, curves.png, result.toml.\n"
               "  DATASET_DIR         the dataset (sets data.path; overrides the config file's)\n"
               "  --config FILE       TOML configuration (docs/config.md lists every key; defaults without it)\n"
               "  --set KEY=VALUE     override one key, e.g. --set trainer.max_steps=7000 (repeatable)\n"
               "  --resume RUN_DIR    continue an interrupted run from RUN_DIR/checkpoint.bin, with\n"
               "                      RUN_DIR/config.toml (plus --set overrides)\n"
               "  --force             replace a run already in the run folder (its files are deleted)\n"
               "  --view [PORT]       show the model in a web browser while it trains, at\n"
               "                      http://127.0.0.1:PORT/ (default %d); --view-host ADDR serves on another\n"
               "                      address (no authentication: a warning is printed); docs/view.md\n"
               "  --dist-file PATH    several processes (SPLAT_RANK, SPLAT_WORLD_SIZE or mpirun): the file\n"
               "                      through which rank 0 hands out the NCCL id (docs/scale.md)\n"
               "A run folder that already holds a run is never overwritten without --force, and a command\n"
               "that fails before training starts changes nothing in it.\n"
               "Ctrl-C stops cleanly: the model and a checkpoint are saved; a second Ctrl-C exits at once.\n",
               VIEW_DEFAULT_PORT);
        return 0;
    }
    train_args t;
    if (parse_args(argc, argv, &t, 1)) return 2;
    if (t.resume && check_resume_dir(t.resume)) return 2;
    if (!t.config && !t.resume && !t.data) {
        fprintf(stderr, "splat train: give a dataset folder (splat train DIR), --config FILE or --resume RUN_DIR\n");
        return 2;
    }
    if (t.force && t.resume) {
        fprintf(stderr, "splat train: --force replaces a run and --resume continues one: give only one\n");
        return 2;
    }
    splat_context *ctx = cli_open_context();
    if (!ctx) return 2;
    cli_problems probs = {0};
    if (api_config(&t, ctx, &probs)) {
        print_problems(&probs);
        fprintf(stderr, "splat train: %d problem%s in the configuration; nothing was trained%s\n", probs.n,
                probs.n == 1 ? "" : "s", t.resume ? " and the run folder is unchanged" : "");
        cli_problems_free(&probs);
        splat_close(ctx);
        return 2;
    }
    cli_problems_free(&probs);
    /* several processes: this one's place, from SPLAT_RANK ... or Open MPI's variables */
    splat_dist dist;
    const char *why = cli_dist_from_env(t.dist_file, &dist) ? cli_last_error()
                      : splat_set_dist(ctx, &dist) != SPLAT_OK ? splat_errmsg(ctx)
                                                                : NULL;
    if (why) {
        fprintf(stderr, "splat: error: %s\n", why);
        splat_close(ctx);
        return 1;
    }
    train_ui ui = {0};
    plan_run(ctx, &t, &ui.clock);
    sp_install_interrupt_handler();
    splat_train_opts o = {.resume_dir = t.resume, .force = t.force, .progress = show_progress,
                          .cancel = sp_cli_interrupted, .user = &ui};
    /* --view: a second context, configured as the run, receives the model when a page asks */
    splat_context *live = NULL;
    if (t.view_port >= 0) {
        live = cli_open_context();
        cli_problems vp = {0};
        if (live && api_config(&t, live, &vp) == 0) {
            view_warn_host(t.view_host);
            ui.server = view_start(live, t.view_host, t.view_port, 1);
        }
        cli_problems_free(&vp);
        if (!ui.server) {
            splat_close(live);
            splat_close(ctx);
            return 1;
        }
        o.live_model = live;
        o.want_model = want_model;
    }
    /* the trainer has logged what went wrong (or where a stopped run is kept) */
    splat_status st = splat_train(ctx, &o);
    view_stop(ui.server);
    splat_close(live);
    char *run = t.resume ? cli_strdup(t.resume) : cli_run_dir(ctx);
    splat_close(ctx);
    if (st != SPLAT_OK && st != SPLAT_CANCELLED && !t.force) damaged_checkpoint_note(run);
    free(run);
    switch (st) {
    case SPLAT_OK: return 0;
    case SPLAT_CANCELLED: return 130;
    case SPLAT_INVALID: return 2;
    default: return 1;
    }
}

static void summarize_split(const char *name, const splat_split_info *s) {
    if (!s->views) {
        printf("  %-5s: none\n", name);
        return;
    }
    printf("  %-5s: %d views, %dx%d, %d channels, fx %.2f fy %.2f cx %.2f cy %.2f\n", name, s->views, s->width,
           s->height, s->channels, s->fx, s->fy, s->cx, s->cy);
}

/* check: how long the run would take (estimate.c), and the shorter recipe for a long CPU run. */
static void print_estimate(const train_args *t, const splat_dist *dist) {
    splat_context *ctx;
    if (splat_open(&ctx) != SPLAT_OK) return;
    cli_problems probs = {0};
    splat_plan p;
    if (api_config(t, ctx, &probs) || splat_set_dist(ctx, dist) != SPLAT_OK || splat_train_plan(ctx, &p) != SPLAT_OK) {
        printf("\n# estimate\n  none: %s\n", probs.n ? probs.items[0] : splat_errmsg(ctx));
        cli_problems_free(&probs);
        splat_close(ctx);
        return;
    }
    cli_problems_free(&probs);
    splat_close(ctx);
    char growth[160] = "";
    double end_n = cli_est_count(&p, 0, p.initial_gaussians, 0.0, p.max_steps);
    if (end_n > p.initial_gaussians)
        snprintf(growth, sizeof growth, ", the Gaussians growing from %d to %.0f by step %d", p.initial_gaussians,
                 end_n, cli_est_growth_end(&p, 0, p.initial_gaussians, 0.0));
    else if (strcmp(p.strategy, "mcmc"))
        snprintf(growth, sizeof growth, ", from %d Gaussians (adc: the count the gradients reach changes it)",
                 p.initial_gaussians);
    else
        snprintf(growth, sizeof growth, ", %d Gaussians", p.initial_gaussians);
    printf("\n# estimate\n");
    double s = cli_est_run_seconds(&p);
    if (isfinite(s)) {
        char d[32];
        cli_fmt_duration(s, d, sizeof d);
        printf("  about %s of training: %d steps on the cpu backend (%d thread%s)%s\n"
               "  (at the speed of the 2-core dev machine's CPU; the first progress lines of splat train measure "
               "this one's)\n", d,
               p.max_steps, p.threads, p.threads == 1 ? "" : "s", growth);
        const char *recipe = cli_est_short_recipe(&p);
        if (recipe && s > 1800) printf("  %s\n", recipe);
    } else {
        printf("  %d steps on the %s backend%s; the first progress lines of splat train estimate the time (no "
               "model of a GPU's speed here)\n", p.max_steps, p.backend, growth);
    }
}

int cmd_check(int argc, char **argv) {
    if (cli_help_requested(argc, argv)) {
        printf("usage: splat check DATASET_DIR [--set section.key=value ...] [--print-config]\n"
               "       splat check [DATASET_DIR] --config FILE [--set section.key=value ...] [--print-config]\n"
               "\n"
               "Validates the configuration and the dataset without training. Prints the verdict first (OK, or\n"
               "every problem with its file and line; exit status 1 if any), then a dataset summary.\n"
               "  --print-config      also print the resolved configuration (every key, defaults included)\n");
        return 0;
    }
    train_args t;
    if (parse_args(argc, argv, &t, 0)) return 2;
    if (!t.config && !t.data) {
        fprintf(stderr, "splat check: give a dataset folder (splat check DIR) or --config FILE\n");
        return 2;
    }
    splat_context *ctx = cli_open_context();
    if (!ctx) return 2;
    cli_problems probs = {0};
    api_config(&t, ctx, &probs);
    splat_dataset_info d;
    memset(&d, 0, sizeof d);
    double load_s = 0;
    char path[4096];
    cli_config_string(ctx, "data.path", path, sizeof path);
    if (path[0] && cli_dir_exists(path)) {
        double t0 = cli_now();
        if (splat_dataset_check(ctx, &d) != SPLAT_OK) cli_add_problems(ctx, &probs);
        load_s = cli_now() - t0;
    } else if (path[0]) {
        cli_problems_add(&probs, "data.path: %s: no such directory", path);
    }
    char dev[1024] = "", kind[64] = ""; /* the device backend.kind resolves to, and its limits */
    cli_config_string(ctx, "backend.kind", kind, sizeof kind);
    splat_dist dist; /* several GPUs or processes: NCCL and the devices are checked too */
    if (cli_dist_from_env(t.dist_file, &dist)) {
        snprintf(dev, sizeof dev, "%s", cli_last_error());
        cli_problems_add(&probs, "%s", dev);
        memset(&dist, 0, sizeof dist);
        dist.world_size = 1;
    } else if (splat_set_dist(ctx, &dist) != SPLAT_OK) {
        snprintf(dev, sizeof dev, "%s", splat_errmsg(ctx));
        cli_problems_add(&probs, "%s", dev);
    } else {
        splat_status st = splat_backend_describe(ctx, dev, sizeof dev);
        if (st == SPLAT_ERROR) cli_problems_add(&probs, "backend.kind = \"%s\": %s", kind, dev);
        else if (st != SPLAT_OK) cli_add_problems(ctx, &probs);
    }
    /* refine.strategy = auto as training would resolve it, from the backend's abilities */
    if (splat_config_resolve(ctx) != SPLAT_OK) cli_add_problems(ctx, &probs);
    /* The verdict first, then the details. */
    if (probs.n) {
        printf("%d problem%s:\n", probs.n, probs.n == 1 ? "" : "s");
        for (int i = 0; i < probs.n; i++) printf("error: %s\n", probs.items[i]);
    } else {
        printf("OK: no problems found\n");
    }
    if (d.format[0]) {
        printf("\n# dataset %s\n", path);
        printf("  format: %s, alpha: %s, scene extent %.3f, centre (%.3f, %.3f, %.3f)\n", d.format,
               d.has_alpha ? "yes" : "no", d.extent, d.center[0], d.center[1], d.center[2]);
        summarize_split("train", &d.train);
        summarize_split("val", &d.val);
        summarize_split("test", &d.test);
        printf("  sparse points: %d; %s box [%.2f %.2f %.2f] - [%.2f %.2f %.2f]\n", d.num_points,
               d.num_points ? "their" : "random-init", d.init_min[0], d.init_min[1], d.init_min[2], d.init_max[0],
               d.init_max[1], d.init_max[2]);
        printf("  loaded in %.1f s\n", load_s);
    }
    printf("\n# backend\n  %s\n", dev);
    if (!probs.n) {
        char *dir = cli_run_dir(ctx), strategy[16] = "";
        cli_config_string(ctx, "refine.strategy", strategy, sizeof strategy);
        printf("  training would write %s (%d steps, backend %s, refine.strategy %s)%s\n", dir,
               config_int(ctx, "trainer.max_steps"), kind, strategy,
               t.print_config ? "" : "; --print-config shows every setting");
        free(dir);
        print_estimate(&t, &dist);
    }
    if (t.print_config) {
        printf("\n# resolved configuration\n");
        size_t n = 0;
        splat_config_text(ctx, NULL, 0, &n);
        char *text = cli_alloc(n + 1, 1);
        if (splat_config_text(ctx, text, n + 1, NULL) == SPLAT_OK) fputs(text, stdout);
        free(text);
    }
    int rc = probs.n ? 1 : 0;
    cli_problems_free(&probs);
    splat_close(ctx);
    return rc;
}
