/* cmd_bench.c — `splat bench CHAIN.toml`: trains the scenes of a chain one after another into
 * one folder, skipping scenes already complete and resuming interrupted ones, and keeps the
 * chain's summary.toml, summary.md and curves.png current after every scene. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "core/core.h"
#include "train/chain.h"

static void print_table(const sp_chain *c, const sp_chain_result *res) {
    printf("\n%-16s %-12s %10s %8s %10s %10s\n", "scene", "status", "PSNR (dB)", "SSIM", "Gaussians", "train s");
    for (int i = 0; i < c->n; i++) {
        const sp_chain_result *r = &res[i];
        if (!r->have) {
            printf("%-16s %-12s\n", c->scenes[i].name, "not run");
            continue;
        }
        printf("%-16s %-12s %10.2f %8.4f %10ld %10.1f%s\n", c->scenes[i].name, r->status, r->psnr, r->ssim,
               r->gaussians, r->train_seconds, !strcmp(r->split, "val") ? "  (val)" : "");
    }
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
    sp_chain c;
    sp_problems probs = {0};
    if (sp_chain_load(file, sets, nsets, out, &c, &probs)) {
        for (int i = 0; i < probs.n; i++) fprintf(stderr, "error: %s\n", probs.items[i]);
        fprintf(stderr, "splat bench: %d problem%s in the chain; nothing was trained\n", probs.n,
                probs.n == 1 ? "" : "s");
        sp_problems_free(&probs);
        sp_chain_free(&c);
        return 2;
    }
    sp_problems_free(&probs);

    sp_chain_result *res = SP_NEW(sp_chain_result, c.n);
    int failed = 0, stopped = 0;
    sp_install_interrupt_handler();
    for (int i = 0; i < c.n && !stopped; i++) {
        sp_chain_scene *s = &c.scenes[i];
        const char *dir = s->cfg.output.run_dir;
        /* an earlier run is reused only when it was trained with what the chain asks now */
        char *cp = sp_path_join(dir, "config.toml"), *diff = NULL;
        int changed = 0;
        if (sp_file_exists(cp)) {
            sp_config *prev = SP_NEW(sp_config, 1);
            sp_problems pp = {0};
            if (sp_config_load(cp, prev, &pp)) diff = sp_strfmt("%s is unreadable (%s)", cp, pp.n ? pp.items[0] : "?");
            else diff = sp_chain_config_diff(prev, &s->cfg);
            changed = diff != NULL;
            sp_problems_free(&pp);
            free(prev);
        }
        free(cp);
        if (changed && !retrain_changed) {
            fprintf(stderr, "error: scene %s: %s holds a run trained with other settings than the chain asks now: %s; "
                    "nothing in it was changed (rerun with --retrain-changed to retrain it, or give another --out)\n",
                    s->name, dir, diff);
            free(diff);
            if (sp_chain_read_result(dir, &res[i])) sp_chain_result_free(&res[i]);
            failed++;
            continue;
        }
        if (changed) {
            fprintf(stderr, "== %d/%d %s: settings changed (%s): retraining, the earlier run's files are replaced\n",
                    i + 1, c.n, s->name, diff);
            free(diff);
        } else if (sp_chain_read_result(dir, &res[i]) == 0 && !strcmp(res[i].status, "complete")) {
            fprintf(stderr, "== %d/%d %s: complete already (%.2f dB) with the same settings, reused\n", i + 1, c.n,
                    s->name, res[i].psnr);
            continue;
        }
        sp_chain_result_free(&res[i]);
        if (sp_interrupted()) {
            stopped = 1;
            break;
        }
        char *ck = sp_path_join(dir, "checkpoint.bin");
        int resume = !changed && sp_file_exists(ck);
        free(ck);
        fprintf(stderr, "== %d/%d %s: %s %s\n", i + 1, c.n, s->name,
                resume ? "resuming (same settings) the interrupted run on" : "training", s->cfg.data.path);
        sp_train_opts o = {.resume_dir = resume ? dir : NULL, .force = changed, .progress = sp_cli_progress,
                           .cancel = sp_cli_interrupted, .user = NULL};
        int rc = sp_train(&s->cfg, &o);
        if (rc == SP_TRAIN_INTERRUPTED) stopped = 1;
        else if (rc != SP_TRAIN_OK) failed++;
        if (sp_chain_read_result(dir, &res[i])) sp_chain_result_free(&res[i]);
        /* a stopped scene is left to resume; the summary lists what is complete */
        if (sp_chain_write_summary(&c, res)) fprintf(stderr, "error: %s\n", sp_last_error());
    }
    if (sp_chain_write_summary(&c, res)) {
        fprintf(stderr, "error: %s\n", sp_last_error());
        failed++;
    }
    print_table(&c, res);
    printf("\nsummary: %s/summary.md, %s/summary.toml, %s/curves.png\n", c.out, c.out, c.out);
    if (stopped) fprintf(stderr, "stopped: run `splat bench %s` again to continue\n", file);
    for (int i = 0; i < c.n; i++) sp_chain_result_free(&res[i]);
    free(res);
    sp_chain_free(&c);
    return stopped ? 130 : failed ? 1 : 0;
}
