/* main.c — `splat`: dispatches to the subcommands. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static void usage(FILE *f) {
    fprintf(f,
            "splat %s — a 3D Gaussian Splatting trainer\n"
            "\n"
            "usage: splat <command> [options]\n"
            "\n"
            "commands:\n"
            "  train   DATASET_DIR [--config FILE] [--set section.key=value ...] | --resume RUN_DIR\n"
            "  check   DATASET_DIR [--config FILE] [--set ...] [--print-config]   validate, train nothing\n"
            "  eval    --run DIR | --ply FILE --data DIR [--split val|test]\n"
            "  render  --ply FILE --data DIR [--split test] --out DIR\n"
            "  export  --ply FILE | --run DIR [--format ply|splat|spz|glb|sog] --out FILE\n"
            "  synth   --out DIR [--size N] [--views TRAIN,VAL,TEST] [--seed N]\n"
            "  view    RUN_DIR | MODEL [--data DIR] [--port N]   look at a model in a web browser\n"
            "  bench   CHAIN.toml [--set section.key=value ...] [--out DIR]   train several scenes\n"
            "  version\n"
            "\n"
            "`splat <command> --help` describes each command. Config reference: docs/config.md.\n",
            splat_version());
}

int main(int argc, char **argv) {
    /* Out of memory in one of the library's small fixed-size allocations: nothing more can be
     * done (cli_out_of_memory prints it and exits). Files are written atomically, so a run folder
     * keeps its last complete files. */
    splat_set_oom_handler(cli_out_of_memory, NULL);
    /* A file-size limit (ulimit -f) makes a write fail with EFBIG, which the atomic writers report
     * and recover from, instead of killing the process halfway through a save. */
    signal(SIGXFSZ, SIG_IGN);
    /* Test hook (tests/e2e_runfolder.sh): fallible allocations above this many bytes fail as if
     * memory ran out, so the out-of-memory paths can be tested without exhausting the machine. */
    const char *limit = getenv("SPLAT_TEST_ALLOC_LIMIT");
    if (limit && *limit) splat_set_alloc_limit((size_t)strtoull(limit, NULL, 10));
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "train")) return cmd_train(argc - 1, argv + 1);
    if (!strcmp(cmd, "check")) return cmd_check(argc - 1, argv + 1);
    if (!strcmp(cmd, "eval")) return cmd_eval(argc - 1, argv + 1);
    if (!strcmp(cmd, "export")) return cmd_export(argc - 1, argv + 1);
    if (!strcmp(cmd, "render")) return cmd_render(argc - 1, argv + 1);
    if (!strcmp(cmd, "synth")) return cmd_synth(argc - 1, argv + 1);
    if (!strcmp(cmd, "bench")) return cmd_bench(argc - 1, argv + 1);
    if (!strcmp(cmd, "view")) return cmd_view(argc - 1, argv + 1);
    if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) {
        if (cli_help_requested(argc - 1, argv + 1)) {
            printf("usage: splat version\n\nPrints the version and the commit splat was built from.\n");
            return 0;
        }
        printf("splat %s (commit %s)\n", splat_version(), splat_commit());
        return 0;
    }
    if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
        usage(stdout);
        return 0;
    }
    fprintf(stderr, "splat: unknown command '%s'\n\n", cmd);
    usage(stderr);
    return 2;
}
