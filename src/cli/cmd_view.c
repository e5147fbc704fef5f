/* cmd_view.c — `splat view RUN_DIR | MODEL`: serves a trained model to a browser (view.c) until
 * Ctrl-C. The run's config.toml gives the dataset (its cameras and ground-truth images), the
 * backend and render.antialias, so the page shows what `splat render` writes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "cli/view.h"

/* Warns when the viewer is reachable from other machines. */
void view_warn_host(const char *host) {
    if (strcmp(host, "127.0.0.1"))
        fprintf(stderr, "splat: warning: serving on %s: anyone who can reach this address sees the model and can make "
                        "this machine render (there is no authentication)\n", host);
}

int cmd_view(int argc, char **argv) {
    if (cli_help_requested(argc, argv)) {
        printf("usage: splat view RUN_DIR | MODEL [--data DIR] [--port N] [--host ADDR] [--backend KIND]\n"
               "\n"
               "Serves the model to a web browser at http://127.0.0.1:N/ (default %d; 0 picks a free port)\n"
               "until Ctrl-C: orbit and fly controls, the training and test cameras (from the run's\n"
               "config.toml data.path, or --data DIR) drawn and selectable, a test view beside its\n"
               "ground truth, SH degree and background switches, the frame rate. Frames are rendered here\n"
               "with the run's backend (the picture is `splat render`'s) and sent as JPEG. MODEL may be\n"
               ".ply, .splat, .spz, .sog or checkpoint.bin. --host ADDR serves on another address (a warning\n"
               "is printed: there is no authentication). `splat train --view` shows a run live.\n"
               "docs/view.md has more.\n", VIEW_DEFAULT_PORT);
        return 0;
    }
#ifndef SPLAT_HAVE_VIEW
    fprintf(stderr, "splat view: this build has no viewer (built with VIEW=0; install libmicrohttpd-dev and rebuild)\n");
    return 1;
#endif
    const char *model = NULL, *data = NULL, *host = "127.0.0.1", *backend = NULL;
    int port = VIEW_DEFAULT_PORT;
    for (int i = 1; i < argc; i++) {
        const char *v;
        if ((v = cli_value(argc, argv, &i, "--data"))) data = v;
        else if ((v = cli_value(argc, argv, &i, "--host"))) host = v;
        else if ((v = cli_value(argc, argv, &i, "--backend"))) backend = v;
        else if ((v = cli_value(argc, argv, &i, "--port"))) {
            port = *v ? view_parse_port(v) : -1;
            if (port < 0) {
                fprintf(stderr, "splat view: --port must be 0..65535, got '%s'\n", v);
                return 2;
            }
        } else if (argv[i][0] != '-' && !model) model = argv[i];
        else {
            fprintf(stderr, "splat: unknown option '%s' (see --help)\n", argv[i]);
            return 2;
        }
    }
    if (!model) {
        fprintf(stderr, "splat view: give a run folder or a model file (see --help)\n");
        return 2;
    }
    splat_context *ctx = cli_open_context();
    if (!ctx) return 2;
    cli_problems probs = {0};
    if (cli_dir_exists(model)) {
        char *cp = cli_path_join(model, "config.toml");
        if (cli_file_exists(cp) && splat_config_load_file(ctx, cp) != SPLAT_OK) cli_add_problems(ctx, &probs);
        free(cp);
    }
    if (data && splat_config_set_string(ctx, "data.path", data) != SPLAT_OK) cli_add_problems(ctx, &probs);
    if (backend && splat_config_set_string(ctx, "backend.kind", backend) != SPLAT_OK) cli_add_problems(ctx, &probs);
    /* The dataset is not checked here: one that does not load (moved, or a wrong --data) leaves
     * the page without cameras and ground truth, and the model is served all the same. */
    if (!probs.n && splat_load_model(ctx, model) != SPLAT_OK) cli_add_problems(ctx, &probs);
    if (probs.n) {
        for (int i = 0; i < probs.n; i++) fprintf(stderr, "error: %s\n", probs.items[i]);
        cli_problems_free(&probs);
        splat_close(ctx);
        return 1;
    }
    cli_problems_free(&probs);
    view_warn_host(host);
    view_server *v = view_start(ctx, host, port, 0);
    if (!v) {
        splat_close(ctx);
        return 1;
    }
    sp_install_interrupt_handler();
    fprintf(stderr, "serving until Ctrl-C\n");
    while (!sp_interrupted()) {
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    view_stop(v);
    splat_close(ctx);
    return 0;
}
