/* replay.c — a plain main() for the fuzz targets, built with the normal compiler: feeds every
 * file of tests/fuzz/corpus/ (every target's corpus: inputs meant for one parser are hostile
 * input for the others), or the files and folders named on the command line, once to
 * LLVMFuzzerTestOneInput, then prints a cmocka-style summary that tests/run.sh counts.
 * With REPLAY_VERBOSE=1 in the environment it prints the last error after each input. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/core.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Adds path (a file) or the files under it (a folder, recursively) to list. */
static void collect(const char *path, char ***list, int *n, int *cap) {
    struct stat st;
    if (stat(path, &st)) {
        fprintf(stderr, "replay: %s: no such file or folder\n", path);
        exit(2);
    }
    if (S_ISREG(st.st_mode)) {
        if (*n == *cap) {
            *cap = *cap ? 2 * *cap : 64;
            *list = sp_realloc(*list, (size_t)*cap * sizeof **list);
        }
        (*list)[(*n)++] = sp_strdup(path);
        return;
    }
    DIR *d = opendir(path);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.') {
            char *sub = sp_path_join(path, e->d_name);
            collect(sub, list, n, cap);
            free(sub);
        }
    closedir(d);
}

int main(int argc, char **argv) {
    char **list = NULL;
    int n = 0, cap = 0;
    if (argc < 2) collect("tests/fuzz/corpus", &list, &n, &cap);
    for (int i = 1; i < argc; i++) collect(argv[i], &list, &n, &cap);
    qsort(list, (size_t)n, sizeof *list, cmp_str);
    printf("[==========] Replaying %d input(s).\n", n);
    for (int i = 0; i < n; i++) {
        char *data;
        size_t size;
        if (sp_read_file(list[i], &data, &size)) {
            printf("[  FAILED  ] 1 test(s): %s\n", sp_last_error());
            return 1;
        }
        printf("[ RUN      ] %s\n", list[i]);
        fflush(stdout);
        sp_clear_error();
        LLVMFuzzerTestOneInput((const uint8_t *)data, size);
        if (getenv("REPLAY_VERBOSE")) printf("    -> %s\n", *sp_last_error() ? sp_last_error() : "ok");
        free(data);
        free(list[i]);
    }
    free(list);
    printf("[==========] %d input(s) replayed.\n[  PASSED  ] %d test(s).\n", n, n);
    return 0;
}
