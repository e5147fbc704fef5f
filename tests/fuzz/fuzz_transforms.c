/* fuzz_transforms.c — a nerfstudio / instant-ngp transforms.json beside two small images:
 * loads, or every problem names the scene's files. */
#include "fuzz_util.h"

#include "io/loader.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static int ready;
    if (!ready) {
        fz_png("ns/images/f0.png", 8, 6);
        fz_png("ns/images/f1.png", 8, 6);
        ready = 1;
    }
    free(fz_write("ns/transforms.json", data, size));
    char *dir = sp_path_join(fz_dir(), "ns");
    sp_load_opts o = {.downscale = 1, .threads = 1, .load_pixels = 1, .holdout_every = 2};
    sp_dataset ds;
    sp_problems p = {0};
    if (sp_load_transforms(dir, &o, &ds, &p) == 0) sp_dataset_free(&ds);
    fz_check_named(&p, dir);
    sp_problems_free(&p);
    free(dir);
    return 0;
}
