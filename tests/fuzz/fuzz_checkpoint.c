/* fuzz_checkpoint.c — the checkpoint reader: any file reads or fails naming it (no allocation
 * beyond what the file holds); what reads writes back and reads again the same. Each input is read
 * twice: as it is, and with its last four bytes replaced by the CRC-32 of the rest, so that a
 * mutated input passes the checksum that closes a version 2 or 3 file and reaches the checks of
 * the header, the stores and the curves behind it (as it is, nearly every mutation stops at the
 * checksum). The second read is not written back: the writer syncs its file to the disk, which at
 * every input would slow the fuzzer a hundredfold. */
#include "fuzz_util.h"

#include "train/checkpoint.h"

static void read_one(const uint8_t *data, size_t size, int write_back) {
    char *path = fz_write("checkpoint.bin", data, size);
    sp_checkpoint c;
    if (sp_checkpoint_read(path, &c) == 0) {
        if (c.step < 0 || c.step > SP_CHECKPOINT_MAX_STEP || c.g.n < 0) abort();
        if (!write_back) {
            sp_checkpoint_free(&c);
            free(path);
            return;
        }
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
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    read_one(data, size, 1);
    if (size >= 4) {
        uint8_t *fixed = malloc(size);
        if (!fixed) abort();
        memcpy(fixed, data, size);
        uint32_t crc = sp_checkpoint_crc32(0, fixed, size - 4);
        memcpy(fixed + size - 4, &crc, 4);
        read_one(fixed, size, 0);
        free(fixed);
    }
    return 0;
}
