/* cmd_train.c — `splat train` and `splat check`: configuration from a file plus --set
 * overrides, then training, or a report of every problem found without training. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "cli/cli.h"
#include "core/core.h"
#include "io/loader.h"

typedef struct {
    const char *config;
    const char *resume;
    const char *sets[256];
    int nsets;
} train_args;

static int parse_args(int argc, char **argv, train_args *t, int allow_resume) {
    memset(t, 0, sizeof *t);
    for (int i = 1; i < argc; i++) {
        const char *v;
        if ((v = cli_value(argc, argv, &i, "--config"))) t->config = v;
        else if ((v = cli_value(argc, argv, &i, "--set"))) {
            if (t->nsets == 256) {
                fprintf(stderr, "splat: too many --set options\n");
                return -1;
            }
            t->sets[t->nsets++] = v;
        } else if (allow_resume && (v = cli_value(argc, argv, &i, "--resume"))) t->resume = v;
        else {
            fprintf(stderr, "splat: unknown option '%s' (see --help)\n", argv[i]);
            return -1;
        }
    }
    return 0;
}

/* Config from --config (or RUN_DIR/config.toml when resuming) and --set; prints problems. */
static int load_config(const train_args *t, sp_config *cfg, sp_problems *probs) {
    sp_config_defaults(cfg);
    char *path = t->resume && !t->config ? sp_path_join(t->resume, "config.toml") : sp_strdup(t->config);
    sp_config_load(path, cfg, probs);
    free(path);
    for (int i = 0; i < t->nsets; i++) sp_config_set(cfg, t->sets[i], probs);
    if (t->resume) snprintf(cfg->output.run_dir, sizeof cfg->output.run_dir, "%s", t->resume);
    sp_config_validate_for_training(cfg, probs);
    return probs->n ? -1 : 0;
}

static void print_problems(const sp_problems *p) {
    for (int i = 0; i < p->n; i++) fprintf(stderr, "error: %s\n", p->items[i]);
}

int cmd_train(int argc, char **argv) {
    if (cli_help_requested(argc, argv)) {
        printf("usage: splat train --config FILE [--set section.key=value ...] [--resume RUN_DIR]\n"
               "\n"
               "Trains on the dataset named by [data] path and writes a run folder (default runs/<name>):\n"
               "config.toml, log.txt, point_cloud.ply, checkpoint.bin, renders/, curves.png, result.toml.\n"
               "  --config FILE       TOML configuration (docs/config.md lists every key)\n"
               "  --set KEY=VALUE     override one key, e.g. --set trainer.max_steps=7000 (repeatable)\n"
               "  --resume RUN_DIR    continue an interrupted run from RUN_DIR/checkpoint.bin, with\n"
               "                      RUN_DIR/config.toml (plus --set overrides)\n"
               "Ctrl-C stops cleanly: the model and a checkpoint are saved; a second Ctrl-C exits at once.\n");
        return 0;
    }
    train_args t;
    if (parse_args(argc, argv, &t, 1)) return 2;
    if (!t.config && !t.resume) {
        fprintf(stderr, "splat train: --config FILE is required (or --resume RUN_DIR)\n");
        return 2;
    }
    sp_config *cfg = SP_NEW(sp_config, 1);
    sp_problems probs = {0};
    if (load_config(&t, cfg, &probs)) {
        print_problems(&probs);
        fprintf(stderr, "splat train: %d problem%s in the configuration; nothing was trained\n", probs.n,
                probs.n == 1 ? "" : "s");
        sp_problems_free(&probs);
        free(cfg);
        return 2;
    }
    sp_problems_free(&probs);
    sp_train_opts o = {.resume_dir = t.resume, .progress = sp_cli_progress, .user = NULL};
    int rc = sp_train(cfg, &o);
    free(cfg);
    return rc;
}

static void summarize_split(const char *name, const sp_split *s) {
    if (!s->n) {
        printf("  %-5s: none\n", name);
        return;
    }
    const sp_camera *c = &s->views[0].cam;
    printf("  %-5s: %d views, %dx%d, %d channels, fx %.2f fy %.2f cx %.2f cy %.2f\n", name, s->n, c->width, c->height,
           s->views[0].channels, c->fx, c->fy, c->cx, c->cy);
}

int cmd_check(int argc, char **argv) {
    if (cli_help_requested(argc, argv)) {
        printf("usage: splat check --config FILE [--set section.key=value ...]\n"
               "\n"
               "Validates the configuration and the dataset without training: prints the resolved\n"
               "configuration and a dataset summary, and lists every problem found (exit status 1 if any).\n");
        return 0;
    }
    train_args t;
    if (parse_args(argc, argv, &t, 0)) return 2;
    if (!t.config) {
        fprintf(stderr, "splat check: --config FILE is required\n");
        return 2;
    }
    sp_config *cfg = SP_NEW(sp_config, 1);
    sp_problems probs = {0};
    load_config(&t, cfg, &probs);
    printf("# resolved configuration\n");
    sp_config_print(cfg, stdout);
    if (cfg->data.path[0] && sp_dir_exists(cfg->data.path)) {
        sp_load_opts lo = {.downscale = cfg->data.downscale, .threads = cfg->backend.threads, .load_pixels = 1,
                           .images = cfg->data.images, .holdout_every = cfg->data.holdout_every};
        sp_dataset d;
        double t0 = sp_now();
        sp_dataset_load(cfg->data.path, cfg->data.format, &lo, &d, &probs);
        printf("\n# dataset %s\n", cfg->data.path);
        if (d.format) {
            printf("  format: %s, alpha: %s, scene extent %.3f, centre (%.3f, %.3f, %.3f)\n", d.format,
                   d.has_alpha ? "yes" : "no", d.extent, d.center[0], d.center[1], d.center[2]);
            summarize_split("train", &d.train);
            summarize_split("val", &d.val);
            summarize_split("test", &d.test);
            printf("  sparse points: %d; %s box [%.2f %.2f %.2f] - [%.2f %.2f %.2f]\n", d.num_points,
                   d.num_points ? "their" : "random-init", d.init_min[0], d.init_min[1], d.init_min[2], d.init_max[0],
                   d.init_max[1], d.init_max[2]);
            printf("  loaded in %.1f s\n", sp_now() - t0);
        }
        sp_dataset_free(&d);
    } else if (cfg->data.path[0]) {
        sp_problems_add(&probs, "data.path: %s: no such directory", cfg->data.path);
    }
    char dev[512]; /* the device backend.kind resolves to, and its limits */
    sp_backend_config bc = {.threads = cfg->backend.threads};
    printf("\n# backend\n  %s%s\n", sp_backend_describe(cfg->backend.kind, &bc, dev, sizeof dev) ? "unavailable: " : "", dev);
    int rc = 0;
    if (probs.n) {
        printf("\n# %d problem%s\n", probs.n, probs.n == 1 ? "" : "s");
        for (int i = 0; i < probs.n; i++) printf("error: %s\n", probs.items[i]);
        rc = 1;
    } else {
        printf("\n# no problems found\n");
    }
    sp_problems_free(&probs);
    free(cfg);
    return rc;
}
