/* fuzz_colmap_text.c — a COLMAP text model. The input holds up to three files separated by
 * lines "===": cameras.txt, images.txt, points3D.txt (a file left out gets a valid default).
 * The model loads, or every problem names its file. */
#include "fuzz_util.h"

#include "io/loader.h"

static const char *defaults[3] = {
    "1 PINHOLE 8 6 7 7 4 3\n",
    "1 1 0 0 0 0 0 3 1 a.png\n1 1 -1\n2 1 0 0 0 1 0 3 1 b.png\n\n",
    "1 0 0 0 10 20 30 0.5 1 0\n",
};
static const char *names[3] = {"colmap_txt/sparse/0/cameras.txt", "colmap_txt/sparse/0/images.txt",
                               "colmap_txt/sparse/0/points3D.txt"};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static int ready;
    if (!ready) {
        fz_png("colmap_txt/images/a.png", 8, 6);
        fz_png("colmap_txt/images/b.png", 8, 6);
        ready = 1;
    }
    const char *p = (const char *)data, *end = p + size;
    int k = 0;
    while (k < 3) {
        const char *sep = NULL;
        for (const char *q = p; !sep && q + 5 <= end; q++)
            if (!memcmp(q, "\n===\n", 5)) sep = q;
        free(fz_write(names[k++], p, (size_t)((sep ? sep + 1 : end) - p)));
        if (!sep) break;
        p = sep + 5;
    }
    for (; k < 3; k++) fz_write_text(names[k], defaults[k]);
    char *dir = sp_path_join(fz_dir(), "colmap_txt");
    sp_load_opts o = {.downscale = 1, .threads = 1, .load_pixels = 1, .holdout_every = 2};
    sp_dataset ds;
    sp_problems pr = {0};
    if (sp_load_colmap(dir, &o, &ds, &pr) == 0) sp_dataset_free(&ds);
    fz_check_named(&pr, dir);
    sp_problems_free(&pr);
    free(dir);
    return 0;
}
