/* args.c — tiny helpers for "--name value" / "--name=value" arguments and the strict parser every
 * numeric flag goes through. */
#include <limits.h>
#include <stdio.h>
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

/* The one parser for numeric flags: the whole string a base-10 integer in [lo, hi], no sign
 * tricks or trailing characters ("2x", "", " 3"), no overflow. Prints the flag and the range. */
int cli_int(const char *cmd, const char *flag, const char *v, long long lo, long long hi, long long *out) {
    const char *p = v;
    int neg = 0, digits = 0, over = 0;
    unsigned long long acc = 0;
    if (*p == '-' || *p == '+') neg = *p++ == '-';
    for (; *p >= '0' && *p <= '9'; p++, digits++) {
        unsigned d = (unsigned)(*p - '0');
        if (acc > (ULLONG_MAX - d) / 10) over = 1;
        else acc = acc * 10 + d;
    }
    long long val = 0;
    int ok = digits && !*p && !over && acc <= (unsigned long long)LLONG_MAX;
    if (ok) val = neg ? -(long long)acc : (long long)acc;
    if (!ok || val < lo || val > hi) {
        fprintf(stderr, "splat %s: %s wants a whole number from %lld to %lld, got '%s'\n", cmd, flag, lo, hi, v);
        return -1;
    }
    *out = val;
    return 0;
}
