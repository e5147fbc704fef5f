/* fuzz_util.h — helpers shared by the fuzz targets: one scratch folder per process (removed at
 * exit) for parsers that take paths, small valid files to put beside the fuzzed one, and the
 * check that a problem names the file it is about. Test code only. */
#ifndef SPLAT_FUZZ_UTIL_H
#define SPLAT_FUZZ_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "core/core.h"
#include "io/image.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char fz_root[64];

static inline void fz_cleanup(void) {
    if (!fz_root[0]) return;
    char *cmd = sp_strfmt("rm -rf '%s'", fz_root);
    if (system(cmd)) fprintf(stderr, "could not remove %s\n", fz_root);
    free(cmd);
}

/* The scratch folder (created on first use; quiet logging from then on). In /dev/shm where there is
 * one with room (256 MiB free): the writers sync their files to the disk, which on a disk costs
 * milliseconds an input. */
static inline const char *fz_dir(void) {
    if (!fz_root[0]) {
        struct statvfs st;
        int shm = access("/dev/shm", W_OK) == 0 && statvfs("/dev/shm", &st) == 0 &&
                  (unsigned long long)st.f_bavail * st.f_frsize >= (256ull << 20);
        snprintf(fz_root, sizeof fz_root, "%s/splat-fuzz-XXXXXX", shm ? "/dev/shm" : "/tmp");
        if (!mkdtemp(fz_root)) abort();
        atexit(fz_cleanup);
        sp_log_set_level(SP_LOG_ERROR);
    }
    return fz_root;
}

/* Writes data to DIR/rel (folders created); returns the malloc'd path. */
static inline char *fz_write(const char *rel, const void *data, size_t n) {
    char *path = sp_path_join(fz_dir(), rel);
    char *parent = sp_path_dir(path);
    sp_mkdir_p(parent);
    free(parent);
    FILE *f = fopen(path, "wb");
    if (!f || (n && fwrite(data, 1, n, f) != n)) abort();
    fclose(f);
    return path;
}

static inline void fz_write_text(const char *rel, const char *text) { free(fz_write(rel, text, strlen(text))); }

/* A small valid RGB PNG at DIR/rel. */
static inline void fz_png(const char *rel, int w, int h) {
    sp_image im = {w, h, 3, sp_calloc((size_t)w * h * 3, 1)};
    for (int i = 0; i < w * h * 3; i++) im.pixels[i] = (uint8_t)(i * 37);
    char *path = sp_path_join(fz_dir(), rel);
    char *parent = sp_path_dir(path);
    sp_mkdir_p(parent);
    if (sp_image_save_png(path, &im)) abort();
    free(parent);
    free(path);
    sp_image_free(&im);
}

/* Every problem must name the file (or folder) it is about. */
static inline void fz_check_named(const sp_problems *p, const char *name) {
    for (int i = 0; i < p->n; i++)
        if (!strstr(p->items[i], name)) {
            fprintf(stderr, "problem does not name %s: %s\n", name, p->items[i]);
            abort();
        }
}

/* A failed read's error (the thread's last) must name the file. */
static inline void fz_check_error_names(const char *path) {
    if (!strstr(sp_last_error(), path)) {
        fprintf(stderr, "error does not name the file: %s\n", sp_last_error());
        abort();
    }
}

#endif
