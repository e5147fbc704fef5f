/* cmd_export.c — `splat export`: a model (.ply, .splat or .spz, or a run's point_cloud.ply) written
 * as .ply, .splat or .spz (io/export.h describes the formats), through the public API. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "core/core.h"
#include "io/export.h"
#include "splat.h"

int cmd_export(int argc, char **argv) {
    if (cli_help_requested(argc, argv)) {
        printf("usage: splat export (--ply FILE | --run DIR) [--format ply|splat|spz] [--no-bake] --out FILE\n"
               "\n"
               "Writes a model in a format other tools open. The input is a .ply, .splat or .spz file\n"
               "(--ply) or a run folder's point_cloud.ply (--run). The format defaults to OUT's extension.\n"
               "  ply    the standard 3DGS layout, lossless\n"
               "  splat  32 bytes per Gaussian for web viewers; keeps only the base colour (no SH)\n"
               "  spz    Niantic's compressed format (version 3, about 10x smaller than .ply); stored in\n"
               "         its RUB axes (y up, z back): splat converts from and back to the .ply axes\n"
               "A run trained with render.antialias = true is baked for viewers without the filter: each\n"
               "opacity times the filter's mean factor over the run's training cameras (docs/math.md,\n"
               "\"Antialiasing\"); --no-bake writes the model as trained.\n"
               "OUT may not be the input model, one of a run folder's own files (config.toml, point_cloud.ply,\n"
               "...) or lie inside a dataset folder; a new name beside a run's files is fine.\n");
        return 0;
    }
    const char *ply = NULL, *run = NULL, *format = NULL, *out = NULL;
    int bake = 1;
    for (int i = 1; i < argc; i++) {
        const char *v;
        if (!strcmp(argv[i], "--no-bake")) bake = 0;
        else if ((v = cli_value(argc, argv, &i, "--ply"))) ply = v;
        else if ((v = cli_value(argc, argv, &i, "--run"))) run = v;
        else if ((v = cli_value(argc, argv, &i, "--format"))) format = v;
        else if ((v = cli_value(argc, argv, &i, "--out"))) out = v;
        else {
            fprintf(stderr, "splat: unknown option '%s' (see --help)\n", argv[i]);
            return 2;
        }
    }
    if (!!ply == !!run || !out) {
        fprintf(stderr, "splat export: give --ply FILE or --run DIR, and --out FILE\n");
        return 2;
    }
    sp_model_format f = format ? sp_model_format_from_name(format) : sp_model_format_from_path(out);
    if (f == SP_MODEL_UNKNOWN) {
        if (format) fprintf(stderr, "splat export: --format must be ply, splat or spz, got '%s'\n", format);
        else fprintf(stderr, "splat export: cannot tell the format from '%s': give --format ply|splat|spz\n", out);
        return 2;
    }
    char *in = ply ? sp_strdup(ply) : sp_path_join(run, "point_cloud.ply");
    if (cli_guard_out_file("export", out, in)) {
        free(in);
        return 2;
    }
    splat_context *ctx = cli_open_context();
    if (!ctx) {
        free(in);
        return 2;
    }
    int n = 0, degree = 0, antialias = 0;
    if (run) { /* a run trained with the antialias filter: the formats have no field for it */
        char *cp = sp_path_join(run, "config.toml"), v[16] = "";
        if (splat_config_load_file(ctx, cp) != SPLAT_OK)
            fprintf(stderr, "warning: %s (%s): the run's settings are unknown, so the model is written as stored "
                    "(a run trained with render.antialias = true would not be baked for standard viewers)\n", cp,
                    splat_errmsg(ctx));
        else
            antialias = splat_config_get(ctx, "render.antialias", v, sizeof v) == SPLAT_OK && !strcmp(v, "true");
        free(cp);
    }
    splat_status st = splat_load_model(ctx, in);
    if (st == SPLAT_OK && antialias) {
        double mean = 0.0;
        if (!bake)
            printf("note: %s was trained with render.antialias = true and --no-bake writes it as trained: viewers of "
                   "standard 3DGS files render it without the opacity compensation (small Gaussians too bright), "
                   "docs/math.md \"Antialiasing\"\n", run);
        else if (splat_bake_antialias(ctx, &mean) == SPLAT_OK)
            printf("note: %s was trained with render.antialias = true: opacities baked for viewers without the "
                   "filter (times its mean factor over the training cameras, %.3f on average); splat's own "
                   "renderer with the filter stays closer to the training views (docs/math.md \"Antialiasing\")\n",
                   run, mean);
        else
            printf("note: %s was trained with render.antialias = true and could not be baked (%s): written as "
                   "trained, so viewers of standard 3DGS files render small Gaussians too bright\n", run,
                   splat_errmsg(ctx));
    }
    if (st == SPLAT_OK) st = splat_export(ctx, out, sp_model_format_name(f));
    if (st == SPLAT_OK) {
        splat_model_info(ctx, &n, &degree);
        struct stat sb;
        long long bytes = stat(out, &sb) == 0 ? (long long)sb.st_size : -1;
        printf("wrote %s: %d Gaussians, SH degree %d, %s, %lld bytes\n", out, n, f == SP_MODEL_SPLAT ? 0 : degree,
               sp_model_format_name(f), bytes);
    } else {
        cli_print_error(ctx);
    }
    splat_close(ctx);
    free(in);
    return st == SPLAT_OK ? 0 : 1;
}
