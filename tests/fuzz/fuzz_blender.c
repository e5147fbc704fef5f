/* fuzz_blender.c — a NeRF-synthetic transforms_train.json beside two small images: loads, or
 * every problem names the scene's files. */
#include "fuzz_util.h"

#include "io/loader.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static int ready;
    if (!ready) {
        fz_png("blender/r_0.png", 4, 4);
        fz_png("blender/r_1.png", 4, 4);
        ready = 1;
    }
    free(fz_write("blender/transforms_train.json", data, size));
    char *dir = sp_path_join(fz_dir(), "blender");
    sp_load_opts o = {.downscale = 1, .threads = 1, .load_pixels = 1};
    sp_dataset ds;
    sp_problems p = {0};
    if (sp_load_blender(dir, &o, &ds, &p) == 0) sp_dataset_free(&ds);
    fz_check_named(&p, dir);
    sp_problems_free(&p);
    free(dir);
    return 0;
}
