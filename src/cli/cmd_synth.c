/* cmd_synth.c — `splat synth`: writes a procedural scene: the demo objects in NeRF-synthetic layout,
 * or the large capture (--scene capture) as a transforms.json capture of distorted JPEGs. */
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
        printf("usage: splat synth --out DIR [--scene objects|capture] [--size N|WxH] [--views TRAIN[,VAL,TEST]]\n"
               "                   [--samples N] [--seed N]\n"
               "\n"
               "Ray-traces a procedural scene into DIR.\n"
               "  objects  (default) textured objects in NeRF-synthetic layout (transforms_{train,val,test}.json,\n"
               "           RGBA PNGs). Defaults: 128x128, 100,25,25 views, 4 samples. --views N alone writes N\n"
               "           training views and 8 test views (no val split): a large capture for streaming\n"
               "           tests, e.g. --views 2000 --size 400 --samples 1 (about a minute on 2 cores).\n"
               "  capture  a large outdoor capture: seven object groups on detailed ground under a skyline, seen\n"
               "           from 2.5 to 12 units away through a lens with radial-tangential distortion; written\n"
               "           as transforms.json + images/*.jpg (the loader holds out every 8th view). Defaults:\n"
               "           1000 views of 1600x1200, 1 sample: what bench/large.sh trains (a good model needs\n"
               "           millions of Gaussians). --views takes one count.\n"
               "Ranges: --size 8..8192 (a side, or WxH), --samples 1..4096, view counts up to 100000.\n"
               "DIR must be new, empty, or an earlier synth output (it holds a .splat-synth marker and only\n"
               "what synth writes); a dataset or any other non-empty folder is refused.\n");
        return 0;
    }
    sp_synth_opts o;
    sp_synth_defaults(&o);
    const char *out = NULL;
    long long n;
    int size_w = 0, size_h = 0, train = 0, val = -1, test = -1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--scene") && i + 1 < argc) {
            if (!strcmp(argv[i + 1], "capture")) sp_synth_capture_defaults(&o);
            else if (strcmp(argv[i + 1], "objects")) {
                fprintf(stderr, "splat synth: --scene must be objects or capture, got '%s'\n", argv[i + 1]);
                return 2;
            }
        }
    }
    for (int i = 1; i < argc; i++) {
        const char *v;
        if ((v = cli_value(argc, argv, &i, "--out"))) out = v;
        else if ((v = cli_value(argc, argv, &i, "--scene"))) {
            /* read above: the scene sets the defaults the other options change */
        } else if ((v = cli_value(argc, argv, &i, "--size"))) {
            const char *x = strchr(v, 'x');
            char w[32] = "";
            snprintf(w, sizeof w, "%.*s", x ? (int)(x - v) : (int)strlen(v), v);
            if (cli_int("synth", x ? "--size (width)" : "--size", w, 8, 8192, &n)) return 2;
            size_w = size_h = (int)n;
            if (x && cli_int("synth", "--size (height)", x + 1, 8, 8192, &n)) return 2;
            if (x) size_h = (int)n;
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
            train = (int)t;
            if (k == 2) val = (int)va, test = (int)te;
            else val = -2; /* one count: the scene decides what is held out */
        } else {
            fprintf(stderr, "splat synth: unknown option '%s' (see --help)\n", argv[i]);
            return 2;
        }
    }
    if (!out) {
        fprintf(stderr, "splat synth: --out DIR is required\n");
        return 2;
    }
    if (size_w) o.width = size_w, o.height = size_h;
    if (o.scene == SP_SYNTH_CAPTURE) {
        if (val >= 0 && (val || test)) {
            fprintf(stderr, "splat synth: --scene capture takes one view count (--views N): the loader holds out "
                            "every 8th view\n");
            return 2;
        }
        if (train) o.num_train = train;
    } else if (train) {
        o.num_train = train;
        o.num_val = val >= 0 ? val : 0;
        o.num_test = val >= 0 ? test : 8;
    }
    if (cli_guard_out_dir("synth", "synth", out, NULL)) return 2;
    double t0 = sp_now();
    if (sp_synth_write(out, &o) || cli_synth_mark(out)) {
        char *e = cli_replace(sp_last_error(), "lower the image size", "lower --size"); /* the option that sets it */
        fprintf(stderr, "error: %s\n", e);
        free(e);
        return 1;
    }
    if (o.scene == SP_SYNTH_CAPTURE)
        printf("wrote a capture of %d views of %dx%d (every 8th held out when trained) to %s in %.1f s\n",
               o.num_train, o.width, o.height, out, sp_now() - t0);
    else
        printf("wrote %d train, %d val, %d test views of %dx%d to %s in %.1f s\n", o.num_train, o.num_val,
               o.num_test, o.width, o.height, out, sp_now() - t0);
    return 0;
}
