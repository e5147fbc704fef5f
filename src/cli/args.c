/* args.c — tiny helpers for "--name value" / "--name=value" arguments. */
#include <string.h>

#include "cli/cli.h"

int cli_flag(const char *arg, const char *name) { return !strcmp(arg, name); }

const char *cli_value(int argc, char **argv, int *i, const char *name) {
    size_t n = strlen(name);
    const char *a = argv[*i];
    if (strncmp(a, name, n) != 0) return NULL;
    if (a[n] == '=') return a + n + 1;
    if (a[n] != 0) return NULL;
    if (*i + 1 >= argc) return "";
    return argv[++*i];
}

int cli_help_requested(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) return 1;
    return 0;
}
