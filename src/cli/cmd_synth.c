/* cmd_synth.c — `splat synth`: writes the procedural demo scene in NeRF-synthetic layout. */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "core/core.h"
#include "scene/synth.h"

int cmd_synth(int argc, char **argv) {
    if (cli_help_requested(argc, argv)) {
        printf("usage: splat synth --out DIR [--size N] [--views TRAIN[,VAL,TEST]] [--samples N] [--seed N]\n"
               "\n"
               "Ray-traces a procedural scene of textured objects into DIR in NeRF-synthetic layout\n"
               "(transforms_{train,val,test}.json, RGBA PNGs). Defaults: 128x128, 100,25,25 views, 4 samples.\n"
               "--views N alone writes N training views and 8 test views (no val split): a large capture\n"
               "for streaming tests, e.g. --views 2000 --size 400 --samples 1 (about a minute on 2 cores).\n"
               "Ranges: --size 8..8192, --samples 1..4096, view counts up to 100000 (train at least 1).\n"
               "DIR must be new, empty, or an earlier synth output (it holds a .splat-synth marker and only\n"
               "transforms_*.json and train|val|test/*.png); a dataset or any other non-empty folder is refused.\n");
        return 0;
    }
    sp_synth_opts o;
    sp_synth_defaults(&o);
    const char *out = NULL;
    long long n;
    for (int i = 1; i < argc; i++) {
        const char *v;
        if ((v = cli_value(argc, argv, &i, "--out"))) out = v;
        else if ((v = cli_value(argc, argv, &i, "--size"))) {
            if (cli_int("synth", "--size", v, 8, 8192, &n)) return 2;
            o.width = o.height = (int)n;
        } else if ((v = cli_value(argc, argv, &i, "--samples"))) {
            if (cli_int("synth", "--samples", v, 1, 4096, &n)) return 2;
            o.samples = (int)n;
        } else if ((v = cli_value(argc, argv, &i, "--seed"))) {
            if (cli_int("synth", "--seed", v, 0, LLONG_MAX, &n)) return 2;
            o.seed = (uint64_t)n;
        } else if ((v = cli_value(argc, argv, &i, "--views"))) {
            /* N, or TRAIN,VAL,TEST: each count through the strict parser */
            char part[3][32] = {"", "", ""};
            int k = 0;
            const char *c = v;
            for (; k < 3; k++) {
                const char *e = strchr(c, ',');
                size_t len = e ? (size_t)(e - c) : strlen(c);
                if (len >= sizeof part[k]) len = sizeof part[k] - 1;
                memcpy(part[k], c, len);
                part[k][len] = 0;
                if (!e) break;
                c = e + 1;
            }
            if (k != 0 && k != 2) {
                fprintf(stderr, "splat synth: --views wants N or TRAIN,VAL,TEST counts, got '%s'\n", v);
                return 2;
            }
            long long t, va = 0, te = 8;
            if (cli_int("synth", "--views (train count)", part[0], 1, 100000, &t) ||
                (k == 2 && (cli_int("synth", "--views (val count)", part[1], 0, 100000, &va) ||
                            cli_int("synth", "--views (test count)", part[2], 0, 100000, &te))))
                return 2;
            o.num_train = (int)t, o.num_val = (int)va, o.num_test = (int)te;
        } else {
            fprintf(stderr, "splat synth: unknown option '%s' (see --help)\n", argv[i]);
            return 2;
        }
    }
    if (!out) {
        fprintf(stderr, "splat synth: --out DIR is required\n");
        return 2;
    }
    if (cli_guard_out_dir("synth", "synth", out, NULL)) return 2;
    double t0 = sp_now();
    if (sp_synth_write(out, &o) || cli_synth_mark(out)) {
        fprintf(stderr, "error: %s\n", sp_last_error());
        return 1;
    }
    printf("wrote %d train, %d val, %d test views of %dx%d to %s in %.1f s\n", o.num_train, o.num_val, o.num_test,
           o.width, o.height, out, sp_now() - t0);
    return 0;
}
