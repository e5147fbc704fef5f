/* outguard.c — refuses outputs of render, synth and export that would overwrite inputs: a
 * dataset folder, a run folder's own files, the input model, or a non-empty folder that is not
 * the command's own previous output (cli.h says what each command counts as its own). Paths are
 * compared after resolution (splat_path_resolve: symlinks, "./", "..", trailing slashes). */
#include <dirent.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

/* The marker `splat synth` leaves in its folder: a Blender dataset and a synth scene have the
 * same layout, so only the marker tells splat's own output from a dataset someone downloaded. */
#define SYNTH_MARKER ".splat-synth"

static int has(const char *dir, const char *name) {
    char *p = cli_path_join(dir, name);
    int ok = cli_file_exists(p) || cli_dir_exists(p);
    free(p);
    return ok;
}

/* dir looks like a dataset (any format splat reads) or a run folder. */
static const char *folder_kind(const char *dir) {
    if (has(dir, "transforms_train.json") || has(dir, "transforms.json") || has(dir, "sparse") ||
        has(dir, "cameras.bin") || has(dir, "cameras.txt"))
        return "a dataset folder";
    if (has(dir, "config.toml") && (has(dir, "checkpoint.bin") || has(dir, "result.toml") || has(dir, "point_cloud.ply")))
        return "a run folder";
    return NULL;
}

static int is_split(const char *name) { return !strcmp(name, "train") || !strcmp(name, "val") || !strcmp(name, "test"); }
/* synth's folders: the object scene's splits, the capture scene's images/ */
static int is_synth_dir(const char *name) { return is_split(name) || !strcmp(name, "images"); }

/* The first entry of dir (recursing one level into train|val|test, and images for synth) that kind
 * does not write;
 * malloc'd path, NULL when every entry is the command's own. */
static char *foreign_entry(const char *dir, const char *kind, int depth) {
    DIR *d = opendir(dir);
    if (!d) return NULL;
    char *bad = NULL;
    int synth = !strcmp(kind, "synth");
    struct dirent *e;
    while (!bad && (e = readdir(d))) {
        const char *n = e->d_name;
        if (!strcmp(n, ".") || !strcmp(n, "..")) continue;
        char *p = cli_path_join(dir, n);
        int own;
        if (cli_dir_exists(p)) {
            own = depth == 0 && (synth ? is_synth_dir(n) : is_split(n));
            if (own) bad = foreign_entry(p, kind, 1);
        } else if (depth == 1) {
            own = fnmatch("*.png", n, 0) == 0 || (synth && fnmatch("[0-9]*.jpg", n, 0) == 0);
        } else if (synth) {
            own = !strcmp(n, SYNTH_MARKER) || !strcmp(n, "transforms_train.json") ||
                  !strcmp(n, "transforms_val.json") || !strcmp(n, "transforms_test.json") ||
                  !strcmp(n, "transforms.json");
        } else {
            own = fnmatch("frame_[0-9]*.png", n, 0) == 0 || fnmatch("*.mp4", n, 0) == 0;
        }
        if (!own && !bad) bad = cli_strdup(p);
        free(p);
    }
    closedir(d);
    return bad;
}

/* The nearest folder strictly above path (resolved) that is a dataset or a run folder. */
static char *enclosing_input(const char *path, const char **what) {
    char *r = splat_path_resolve(path);
    if (!r) return NULL;
    for (char *slash = strrchr(r, '/'); slash && slash != r;) {
        *slash = 0;
        if ((*what = folder_kind(r))) return r;
        slash = strrchr(r, '/');
    }
    free(r);
    return NULL;
}

int cli_guard_out_dir(const char *cmd, const char *kind, const char *out, const char *const *inputs) {
    if (!*out) {
        fprintf(stderr, "splat %s: --out is empty\n", cmd);
        return -1;
    }
    for (int i = 0; inputs && inputs[i]; i++) {
        if (splat_path_within(out, inputs[i]) || splat_path_within(inputs[i], out)) {
            fprintf(stderr, "splat %s: --out %s would write over the input %s; choose a folder outside it\n", cmd, out,
                    inputs[i]);
            return -1;
        }
    }
    const char *what = NULL;
    char *up = enclosing_input(out, &what);
    if (up) {
        fprintf(stderr, "splat %s: --out %s lies inside %s (%s); choose a folder outside it\n", cmd, out, what, up);
        free(up);
        return -1;
    }
    if (!cli_dir_exists(out)) {
        if (cli_file_exists(out)) {
            fprintf(stderr, "splat %s: --out %s is a file, not a folder; nothing was written\n", cmd, out);
            return -1;
        }
        return 0;
    }
    int synth = !strcmp(kind, "synth");
    char *bad = foreign_entry(out, kind, 0);
    if (!bad && synth) { /* non-empty and without the marker: someone else's dataset */
        char *m = cli_path_join(out, SYNTH_MARKER);
        char *any = NULL;
        if (!cli_file_exists(m)) {
            DIR *d = opendir(out);
            struct dirent *e;
            while (d && !any && (e = readdir(d)))
                if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) any = cli_path_join(out, e->d_name);
            if (d) closedir(d);
        }
        free(m);
        bad = any;
    }
    if (bad) {
        fprintf(stderr,
                "splat %s: --out %s is not empty and not %s's own output (%s is not what %s writes); choose an "
                "empty or new folder\n",
                cmd, out, cmd, bad, cmd);
        free(bad);
        return -1;
    }
    return 0;
}

int cli_synth_mark(const char *out) {
    char *m = cli_path_join(out, SYNTH_MARKER);
    static const char text[] = "written by splat synth: `splat synth --out` may replace this folder\n";
    int rc = cli_write_file_atomic(m, text, sizeof text - 1);
    free(m);
    return rc;
}

int cli_guard_out_file(const char *cmd, const char *out, const char *input_model) {
    char *a = splat_path_resolve(out), *b = input_model ? splat_path_resolve(input_model) : NULL;
    int same = a && b && !strcmp(a, b);
    free(a);
    free(b);
    if (same || (!*out)) {
        fprintf(stderr, "splat %s: --out %s is the input model %s; choose another file\n", cmd, out,
                input_model ? input_model : "");
        return -1;
    }
    if (cli_dir_exists(out)) {
        fprintf(stderr, "splat %s: --out %s is a folder; give a file name\n", cmd, out);
        return -1;
    }
    const char *what = NULL;
    char *up = enclosing_input(out, &what);
    if (up && !strcmp(what, "a run folder")) { /* a new file beside a run's is fine; the run's own are not */
        const char *base = strrchr(out, '/');
        base = base ? base + 1 : out;
        int own = 0;
        char *r = splat_path_resolve(out);
        char *parent = r ? cli_strdup(r) : NULL;
        if (parent && strrchr(parent, '/')) *strrchr(parent, '/') = 0;
        int direct = parent && !strcmp(parent, up);
        const char *const *files = splat_run_files();
        for (int i = 0; files[i]; i++) {
            size_t n = strlen(files[i]);
            if (!strncmp(base, files[i], n - (files[i][n - 1] == '/')) && base[n - (files[i][n - 1] == '/')] == 0)
                own = 1;
        }
        free(r);
        free(parent);
        if (direct && !own) {
            free(up);
            return 0;
        }
    }
    if (up) {
        fprintf(stderr, "splat %s: --out %s would write inside %s (%s)%s; choose a file outside it\n", cmd, out, what,
                up, !strcmp(what, "a run folder") ? " over the run's own files" : "");
        free(up);
        return -1;
    }
    return 0;
}
