/* testutil.h — shared helpers for the cmocka test binaries: temp dirs, data paths, random arrays.
 * Include after <cmocka.h>'s prerequisites; every test file does:
 *   #include "testutil.h"   (it includes cmocka and its prerequisites) */
#ifndef SPLAT_TESTUTIL_H
#define SPLAT_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/core.h"
#include "scene/camera.h"
#include "train/config.h"

/* Directory of the shared test scenes: $SPLAT_DATA, else ../shared/data, else ../../shared/data. */
static inline const char *tu_data_dir(void) {
    const char *e = getenv("SPLAT_DATA");
    if (e && *e) return e;
    static const char *cands[] = {"../shared/data", "../../shared/data", "shared/data"};
    for (size_t i = 0; i < sizeof cands / sizeof *cands; i++)
        if (sp_dir_exists(cands[i])) return cands[i];
    return "../shared/data";
}

/* A fresh temporary directory (malloc'd path). */
static inline char *tu_tmpdir(void) {
    char tmpl[] = "/tmp/splat-test-XXXXXX";
    char *d = mkdtemp(tmpl);
    return d ? sp_strdup(d) : NULL;
}

static inline void tu_write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* Asserts that `hay` contains `needle`, printing both when it does not. */
#define tu_assert_contains(hay, needle)                                                        \
    do {                                                                                       \
        const char *h_ = (hay), *n_ = (needle);                                                \
        if (!h_ || !strstr(h_, n_)) fail_msg("expected \"%s\" in \"%s\"", n_, h_ ? h_ : "(null)"); \
    } while (0)

/* All problems of a list, one per line (malloc'd), for assertions. */
static inline char *tu_joined(const sp_problems *p) {
    size_t n = 1;
    for (int i = 0; i < p->n; i++) n += strlen(p->items[i]) + 1;
    char *s = (char *)sp_calloc(n, 1);
    for (int i = 0; i < p->n; i++) strcat(strcat(s, p->items[i]), "\n");
    return s;
}

/* Applies "key=value" settings to c (failing the test on a rejected one) and frees each string. */
static inline void tu_config_sets(sp_config *c, char **sets, size_t n) {
    sp_problems p = {0};
    for (size_t i = 0; i < n; i++) {
        if (sp_config_set(c, sets[i], &p)) fail_msg("%s: %s", sets[i], p.n ? p.items[0] : "?");
        free(sets[i]);
    }
    sp_problems_free(&p);
}

/* Removes a temporary directory tree and frees its path. */
static inline void tu_rm_rf(char *dir) {
    char *cmd = sp_strfmt("rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
    free(cmd);
    free(dir);
}

static inline void tu_fill_uniform(sp_rng *r, float *x, size_t n, float lo, float hi) {
    for (size_t i = 0; i < n; i++) x[i] = lo + (hi - lo) * sp_rng_uniform(r);
}

/* A w x h pinhole camera with focal length f looking down +z from z = -dist (identity rotation,
 * principal point at the image centre). */
static inline sp_camera tu_camera_z(int w, int h, float f, float dist) {
    sp_camera c;
    memset(&c, 0, sizeof c);
    c.width = w, c.height = h;
    c.fx = c.fy = f;
    c.cx = 0.5f * w, c.cy = 0.5f * h;
    c.R[0] = c.R[4] = c.R[8] = 1.0f;
    c.t[2] = dist;
    return c;
}

#endif
