/* fuzz_checkpoint.c — the checkpoint reader: any file reads or fails naming it (no allocation
 * beyond what the file holds); what reads writes back and reads again the same. */
#include "fuzz_util.h"

#include "train/checkpoint.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *path = fz_write("checkpoint.bin", data, size);
    sp_checkpoint c;
    if (sp_checkpoint_read(path, &c) == 0) {
        if (c.step < 0 || c.step > SP_CHECKPOINT_MAX_STEP || c.g.n < 0) abort();
        char *out = sp_path_join(fz_dir(), "again.bin");
        sp_checkpoint d;
        if (sp_checkpoint_write(out, &c) || sp_checkpoint_read(out, &d)) abort();
        if (d.step != c.step || d.g.n != c.g.n || d.g.sh_degree != c.g.sh_degree) abort();
        for (int k = 0; k < SP_CURVES; k++)
            if (d.curves[k].n != c.curves[k].n) abort();
        sp_checkpoint_free(&d);
        sp_checkpoint_free(&c);
        free(out);
    } else if (strncmp(sp_last_error(), path, strlen(path))) {
        fprintf(stderr, "error does not name the file: %s\n", sp_last_error());
        abort();
    }
    free(path);
    return 0;
}
