/* fuzz_toml.c — the TOML reader: any bytes parse or give problems that all carry "file:line",
 * and the single-value reader (--set values) never crashes. */
#include "fuzz_util.h"

#include "io/toml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    sp_toml_doc d;
    sp_problems p = {0};
    int rc = sp_toml_parse_all((const char *)data, size, "fuzz.toml", &d, &p);
    if ((rc == 0) != (p.n == 0)) abort();
    for (int i = 0; i < p.n; i++)
        if (strncmp(p.items[i], "fuzz.toml:", 10)) {
            fprintf(stderr, "unlocated problem: %s\n", p.items[i]);
            abort();
        }
    for (int k = 0; k < d.n; k++) /* every kept entry can be looked up, grouped by table */
        if (!sp_toml_get(&d, d.tables[d.entries[k].table].name, d.entries[k].key) ||
            (k && d.entries[k].table < d.entries[k - 1].table))
            abort();
    sp_toml_free(&d);
    sp_problems_free(&p);
    char *text = sp_malloc(size + 1);
    memcpy(text, data, size);
    text[size] = 0;
    sp_toml_value v;
    if (sp_toml_parse_value(text, &v) == 0) sp_toml_value_free(&v);
    free(text);
    return 0;
}
