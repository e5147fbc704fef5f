/* cmd_bench.c — `splat bench CHAIN.toml`: trains the scenes of a chain one after another into
 * one folder, skipping scenes already complete and resuming interrupted ones, and keeps the
 * chain's summary.toml, summary.md and curves.png current after every scene. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"

static void print_table(splat_context *ctx, int n, const splat_run_result *res, const int *have) {
    printf("\n%-16s %-12s %10s %8s %10s %10s\n", "scene", "status", "PSNR (dB)", "SSIM", "Gaussians", "train s");
    for (int i = 0; i < n; i++) {
        const char *name = "";
        splat_chain_scene(ctx, i, &name, NULL);
        const splat_run_result *r = &res[i];
        if (!have[i]) {
            printf("%-16s %-12s\n", name, "not run");
            continue;
        }
        printf("%-16s %-12s %10.2f %8.4f %10ld %10.1f%s\n", name, r->status, r->psnr, r->ssim, r->gaussians,
               r->train_seconds, !strcmp(r->split, "val") ? "  (val)" : "");
    }
}

/* A scene's progress: the live line, no plan (each scene is another run). */
static void scene_progress(void *user, const splat_progress *p) {
    (void)user;
    sp_cli_progress(p, NULL);
    cli_set_live_line(!p->final && isatty(STDERR_FILENO));
}

int cmd_bench(int argc, char **argv) {
    if (cli_help_requested(argc, argv)) {
        printf("usage: splat bench CHAIN.toml [--set section.key=value ...] [--out DIR] [--retrain-changed]\n"
               "\n"
               "Trains every scene of a chain file, one after another, into one folder (OUT/<scene>/ per\n"
               "scene), then writes OUT/summary.toml, OUT/summary.md (PSNR, SSIM, Gaussians and time per\n"
               "scene, and the mean) and OUT/curves.png (the scenes' PSNR and loss curves). Run it again\n"
               "to continue: complete scenes are skipped, an interrupted one resumes. Ctrl-C stops the\n"
               "current scene cleanly and leaves every finished scene as it is. docs/bench.md describes\n"
               "the chain file.\n"
               "  --set KEY=VALUE     override a key for every scene (after the chain's own settings)\n"
               "  --out DIR           the chain's folder (default: [chain] out, or runs/<chain name>)\n"
               "  --retrain-changed   retrain a scene whose folder holds a run (complete or interrupted)\n"
               "                      trained with other settings; without it such a scene is refused\n"
               "A scene's earlier run is reused (skipped when complete, resumed when interrupted) only when\n"
               "its config.toml matches what the chain now asks, ignoring keys that do not change results\n"
               "(output.*, experiment.name, *log_every, backend.threads/profile, backend.kind when auto);\n"
               "otherwise every differing key is named.\n");
        return 0;
    }
    const char *file = NULL, *out = NULL;
    const char *sets[256];
    int nsets = 0, retrain_changed = 0;
    for (int i = 1; i < argc; i++) {
        const char *v;
        if ((v = cli_value(argc, argv, &i, "--set"))) {
            if (nsets == 256) {
                fprintf(stderr, "splat bench: too many --set options\n");
                return 2;
            }
            sets[nsets++] = v;
        } else if (cli_flag(argv[i], "--retrain-changed")) {
            retrain_changed = 1;
        } else if ((v = cli_value(argc, argv, &i, "--out"))) {
            out = v;
        } else if (argv[i][0] != '-' && !file) {
            file = argv[i];
        } else {
            fprintf(stderr, "splat: unknown option '%s' (see --help)\n", argv[i]);
            return 2;
        }
    }
    if (!file) {
        fprintf(stderr, "splat bench: give a chain file: splat bench CHAIN.toml (see docs/bench.md)\n");
        return 2;
    }
    splat_context *ctx = cli_open_context();
    if (!ctx) return 2;
    if (splat_chain_load(ctx, file, sets, nsets, out) != SPLAT_OK) {
        cli_problems probs = {0};
        cli_add_problems(ctx, &probs);
        for (int i = 0; i < probs.n; i++) fprintf(stderr, "error: %s\n", probs.items[i]);
        fprintf(stderr, "splat bench: %d problem%s in the chain; nothing was trained\n", probs.n,
                probs.n == 1 ? "" : "s");
        cli_problems_free(&probs);
        splat_close(ctx);
        return 2;
    }
    int n = 0;
    const char *chain_out = "";
    splat_chain_info(ctx, &n, &chain_out);
    splat_run_result *res = CLI_NEW(splat_run_result, n);
    int *have = CLI_NEW(int, n); /* res[i] was read: the summary lists the scene */
    int failed = 0, stopped = 0;
    sp_install_interrupt_handler();
    for (int i = 0; i < n && !stopped; i++) {
        const char *name = "", *dir = "";
        splat_chain_scene(ctx, i, &name, &dir);
        splat_chain_use_scene(ctx, i);
        /* an earlier run is reused only when it was trained with what the chain asks now */
        char *cp = cli_path_join(dir, "config.toml"), *diff = NULL;
        int changed = 0;
        if (cli_file_exists(cp)) {
            size_t need = 0;
            splat_status st = splat_config_diff(ctx, cp, NULL, 0, &need);
            if (st == SPLAT_ERROR) {
                cli_problems pp = {0};
                cli_add_problems(ctx, &pp);
                diff = cli_strfmt("%s is unreadable (%s)", cp, pp.n ? pp.items[0] : "?");
                cli_problems_free(&pp);
            } else if (need > 1) {
                diff = cli_alloc(need, 1);
                if (splat_config_diff(ctx, cp, diff, need, NULL) != SPLAT_OK) diff[0] = 0;
            }
            changed = diff != NULL;
        }
        free(cp);
        if (changed && !retrain_changed) {
            fprintf(stderr, "error: scene %s: %s holds a run trained with other settings than the chain asks now: %s; "
                    "nothing in it was changed (rerun with --retrain-changed to retrain it, or give another --out)\n",
                    name, dir, diff);
            free(diff);
            have[i] = splat_read_result(ctx, dir, &res[i]) == SPLAT_OK;
            failed++;
            continue;
        }
        if (changed) {
            fprintf(stderr, "== %d/%d %s: settings changed (%s): retraining, the earlier run's files are replaced\n",
                    i + 1, n, name, diff);
            free(diff);
        } else if (splat_read_result(ctx, dir, &res[i]) == SPLAT_OK && !strcmp(res[i].status, "complete")) {
            have[i] = 1;
            fprintf(stderr, "== %d/%d %s: complete already (%.2f dB) with the same settings, reused\n", i + 1, n,
                    name, res[i].psnr);
            continue;
        }
        if (sp_interrupted()) {
            stopped = 1;
            break;
        }
        char *ck = cli_path_join(dir, "checkpoint.bin"), data[4096];
        int resume = !changed && cli_file_exists(ck);
        free(ck);
        cli_config_string(ctx, "data.path", data, sizeof data);
        fprintf(stderr, "== %d/%d %s: %s %s\n", i + 1, n, name,
                resume ? "resuming (same settings) the interrupted run on" : "training", data);
        splat_train_opts o = {.resume_dir = resume ? dir : NULL, .force = changed, .progress = scene_progress,
                              .cancel = sp_cli_interrupted, .user = NULL};
        splat_status st = splat_train(ctx, &o);
        cli_set_live_line(0);
        if (st == SPLAT_CANCELLED) stopped = 1;
        else if (st != SPLAT_OK) failed++;
        have[i] = splat_read_result(ctx, dir, &res[i]) == SPLAT_OK;
        /* a stopped scene is left to resume; the summary lists what is complete */
        if (splat_chain_write_summary(ctx, have) != SPLAT_OK) fprintf(stderr, "error: %s\n", splat_errmsg(ctx));
    }
    if (splat_chain_write_summary(ctx, have) != SPLAT_OK) {
        fprintf(stderr, "error: %s\n", splat_errmsg(ctx));
        failed++;
    }
    print_table(ctx, n, res, have);
    printf("\nsummary: %s/summary.md, %s/summary.toml, %s/curves.png\n", chain_out, chain_out, chain_out);
    if (stopped) fprintf(stderr, "stopped: run `splat bench %s` again to continue\n", file);
    free(res);
    free(have);
    splat_close(ctx);
    return stopped ? 130 : failed ? 1 : 0;
}
