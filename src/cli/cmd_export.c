/* cmd_export.c — `splat export`: a model (.ply, .compressed.ply, .splat, .spz, .sog or a SOG
 * meta.json, or a run's point_cloud.ply) written as .ply, .splat, .spz (version and axes as
 * options), .glb or .sog (docs/formats.md describes the formats), through the public API. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "cli/cli.h"

/* --format: one of the names splat_export takes, in lower case; NULL for another. */
static const char *format_name(const char *name) {
    static const char *const names[] = {"ply", "splat", "spz", "glb", "sog"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (!strcasecmp(name, names[i])) return names[i];
    return NULL;
}

int cmd_export(int argc, char **argv) {
    if (cli_help_requested(argc, argv)) {
        printf("usage: splat export (--ply FILE | --run DIR) [--format ply|splat|spz|glb|sog] [--spz-version 3|4]\n"
               "                    [--spz-axes rdf|rub] [--in-spz-axes rdf|rub] [--no-bake] --out FILE\n"
               "\n"
               "Writes a model in a format other tools open. The input is a .ply (also PlayCanvas's\n"
               ".compressed.ply), .splat, .spz or .sog file, or the meta.json of an unbundled SOG folder\n"
               "(--ply), or a run folder's point_cloud.ply (--run). The format defaults to OUT's extension.\n"
               "  ply    the standard 3DGS layout, lossless\n"
               "  splat  32 bytes per Gaussian for web viewers; keeps only the base colour (no SH)\n"
               "  spz    Niantic's compressed format (about 10x smaller than .ply): version 4 (zstd) unless\n"
               "         --spz-version 3 (gzip); in the .ply's axes (rdf: y down, z forward), as current\n"
               "         tools (splat-transform, Spark, SuperSplat) write and read it, unless --spz-axes rub\n"
               "         (the spz spec's y up, z back, what splat wrote before). The file does not say which:\n"
               "         --in-spz-axes rub reads an input .spz written that way (docs/formats.md)\n"
               "  glb    glTF 2.0 binary with the KHR_gaussian_splatting extension (float attributes, y up)\n"
               "  sog    PlayCanvas's SOG (about 10x smaller than .ply): a zip of lossless WebP images with\n"
               "         16-bit positions, 8-bit rotations and k-means codebooks for scales, colours and SH;\n"
               "         the .ply's axes, as splat-transform, SuperSplat and PlayCanvas read it\n"
               "A run trained with render.antialias = true is baked for viewers without the filter: each\n"
               "opacity times the filter's mean factor over the run's training cameras (docs/math.md,\n"
               "\"Antialiasing\"); --no-bake writes the model as trained.\n"
               "OUT may not be the input model, one of a run folder's own files (config.toml, point_cloud.ply,\n"
               "...) or lie inside a dataset folder; a new name beside a run's files is fine.\n");
        return 0;
    }
    const char *ply = NULL, *run = NULL, *format = NULL, *out = NULL, *spz_version = NULL, *spz_axes = NULL;
    const char *in_axes = NULL;
    int bake = 1;
    for (int i = 1; i < argc; i++) {
        const char *v;
        if (!strcmp(argv[i], "--no-bake")) bake = 0;
        else if ((v = cli_value(argc, argv, &i, "--ply"))) ply = v;
        else if ((v = cli_value(argc, argv, &i, "--run"))) run = v;
        else if ((v = cli_value(argc, argv, &i, "--format"))) format = v;
        else if ((v = cli_value(argc, argv, &i, "--out"))) out = v;
        else if ((v = cli_value(argc, argv, &i, "--spz-version"))) spz_version = v;
        else if ((v = cli_value(argc, argv, &i, "--spz-axes"))) spz_axes = v;
        else if ((v = cli_value(argc, argv, &i, "--in-spz-axes"))) in_axes = v;
        else {
            fprintf(stderr, "splat: unknown option '%s' (see --help)\n", argv[i]);
            return 2;
        }
    }
    if (!!ply == !!run || !out) {
        fprintf(stderr, "splat export: give --ply FILE or --run DIR, and --out FILE\n");
        return 2;
    }
    const char *f = format ? format_name(format) : splat_model_format(out);
    if (!f) {
        if (format) fprintf(stderr, "splat export: --format must be ply, splat, spz, glb or sog, got '%s'\n", format);
        else fprintf(stderr, "splat export: cannot tell the format from '%s': give --format ply|splat|spz|glb|sog\n", out);
        return 2;
    }
    if (spz_version && strcmp(spz_version, "3") && strcmp(spz_version, "4")) {
        fprintf(stderr, "splat export: --spz-version must be 3 or 4, got '%s'\n", spz_version);
        return 2;
    }
    const char *axes_opts[2] = {spz_axes, in_axes}, *axes_names[2] = {"--spz-axes", "--in-spz-axes"};
    for (int k = 0; k < 2; k++)
        if (axes_opts[k] && strcasecmp(axes_opts[k], "rdf") && strcasecmp(axes_opts[k], "rub")) {
            fprintf(stderr, "splat export: %s must be rdf or rub, got '%s'\n", axes_names[k], axes_opts[k]);
            return 2;
        }
    if ((spz_version || spz_axes) && strcmp(f, "spz")) {
        fprintf(stderr, "splat export: --spz-version and --spz-axes apply to .spz output only\n");
        return 2;
    }
    char spec[64], in_spec[64];
    snprintf(spec, sizeof spec, "%s%s%s%s%s", f, spz_version ? ":v" : "",
             spz_version ? spz_version : "", spz_axes ? ":" : "", spz_axes ? spz_axes : "");
    snprintf(in_spec, sizeof in_spec, "spz%s%s", in_axes ? ":" : "", in_axes ? in_axes : "");
    char *in = ply ? cli_strdup(ply) : cli_path_join(run, "point_cloud.ply");
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
        char *cp = cli_path_join(run, "config.toml");
        if (splat_config_load_file(ctx, cp) != SPLAT_OK)
            fprintf(stderr, "warning: %s (%s): the run's settings are unknown, so the model is written as stored "
                    "(a run trained with render.antialias = true would not be baked for standard viewers)\n", cp,
                    splat_errmsg(ctx));
        else if (splat_config_get_bool(ctx, "render.antialias", &antialias) != SPLAT_OK)
            antialias = 0;
        free(cp);
    }
    splat_status st = splat_load_model_as(ctx, in, in_spec);
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
    if (st == SPLAT_OK) st = splat_export(ctx, out, spec);
    if (st == SPLAT_OK) {
        splat_model_info(ctx, &n, &degree);
        struct stat sb;
        long long bytes = stat(out, &sb) == 0 ? (long long)sb.st_size : -1;
        printf("wrote %s: %d Gaussians, SH degree %d, %s, %lld bytes\n", out, n, !strcmp(f, "splat") ? 0 : degree,
               f, bytes);
    } else {
        cli_print_error(ctx);
    }
    splat_close(ctx);
    free(in);
    return st == SPLAT_OK ? 0 : 1;
}
