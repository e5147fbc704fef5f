/* fuzz_config.c — the config schema over TOML text: any file loads or gives problems naming it;
 * a config that loads writes a config.toml that loads back to the same config. */
#include "fuzz_util.h"

#include "train/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *path = fz_write("run.toml", data, size);
    sp_config c;
    sp_problems p = {0};
    int rc = sp_config_load(path, &c, &p);
    fz_check_named(&p, path);
    sp_config_validate_for_training(&c, &p);
    if (rc == 0) {
        char *text = sp_config_to_toml(&c);
        char *back = fz_write("back.toml", text, strlen(text));
        sp_config c2;
        sp_problems p2 = {0};
        if (sp_config_load(back, &c2, &p2) || !sp_config_equal(&c, &c2)) {
            fprintf(stderr, "config.toml does not load back: %s\n", p2.n ? p2.items[0] : "(different values)");
            abort();
        }
        sp_problems_free(&p2);
        free(back);
        free(text);
    }
    sp_problems_free(&p);
    free(path);
    return 0;
}
