/* loader.c — one entry point for every dataset format: detection and dispatch. */
#include "io/loader.h"

#include <stdlib.h>
#include <string.h>

#include "core/paths.h"

static bool has(const char *dir, const char *name) {
    char *p = sp_path_join(dir, name);
    bool ok = sp_file_exists(p) || sp_dir_exists(p);
    free(p);
    return ok;
}

const char *sp_dataset_detect(const char *path) {
    if (!sp_dir_exists(path)) {
        sp_error("%s: no such directory", path);
        return NULL;
    }
    if (has(path, "transforms_train.json")) return "blender";
    if (has(path, "sparse/0/cameras.bin") || has(path, "sparse/0/cameras.txt") || has(path, "sparse/cameras.bin") ||
        has(path, "sparse/cameras.txt") || has(path, "cameras.bin") || has(path, "cameras.txt"))
        return "colmap";
    if (has(path, "transforms.json")) return "transforms";
    sp_error("%s: cannot tell the dataset format: expected transforms_train.json (blender), sparse/0/cameras.bin "
             "(colmap) or transforms.json",
             path);
    return NULL;
}

int sp_dataset_load(const char *path, const char *format, const sp_load_opts *opts, sp_dataset *out,
                    sp_problems *problems) {
    memset(out, 0, sizeof *out);
    if (!format || !strcmp(format, "auto")) {
        format = sp_dataset_detect(path);
        if (!format) {
            sp_problems_add(problems, "%s", sp_last_error());
            return -1;
        }
    }
    int before = problems->n, rc;
    if (!strcmp(format, "blender")) rc = sp_load_blender(path, opts, out, problems);
    else if (!strcmp(format, "colmap")) rc = sp_load_colmap(path, opts, out, problems);
    else if (!strcmp(format, "transforms")) rc = sp_load_transforms(path, opts, out, problems);
    else {
        sp_problems_add(problems, "unknown dataset format \"%s\" (expected auto, blender, colmap or transforms)", format);
        return -1;
    }
    if (rc == 0 && problems->n > before) rc = -1;
    if (rc == 0 && out->train.n == 0) {
        sp_problems_add(problems, "%s: the dataset has no training views", path);
        rc = -1;
    }
    return rc;
}

int sp_check_image_name(const char *where, const char *key, const char *name, const sp_load_opts *opts,
                        sp_problems *problems) {
    if (!sp_utf8_valid(name)) {
        sp_problems_add(problems, "%s: %s is not valid UTF-8: splat's TOML and JSON outputs need UTF-8 names; "
                                  "rename the image", where, key);
        return -1;
    }
    if (!opts->allow_outside_images && sp_path_escapes(name)) {
        sp_problems_add(problems, "%s: %s \"%s\" %s the dataset folder; set data.allow_outside_images = true "
                                  "to allow it", where, key, name,
                        name[0] == '/' ? "is absolute, outside" : "climbs out of");
        return -1;
    }
    return 0;
}
