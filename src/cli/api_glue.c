/* api_glue.c — what the subcommands built on the public API (include/splat.h) share: library
 * messages printed as the library's default sink prints them, a context's problems as a
 * problem list, string settings read plainly. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

/* true while progress.c has a live line on the terminal: a message clears it first. */
static int g_live_line;

void cli_set_live_line(int live) { g_live_line = live; }

void cli_log(void *user, splat_log_level level, const char *message) {
    (void)user;
    static const char *const names[] = {"debug", "info", "warning", "error"};
    if (g_live_line) fputs("\r\033[K", stderr);
    if (level >= SPLAT_LOG_WARN) fprintf(stderr, "splat: %s: %s\n", names[level], message);
    else fprintf(stderr, "%s\n", message);
}

splat_context *cli_open_context(void) {
    splat_context *ctx;
    if (splat_open(&ctx) != SPLAT_OK) {
        fprintf(stderr, "splat: out of memory\n");
        return NULL;
    }
    splat_set_log(ctx, cli_log, NULL, SPLAT_LOG_INFO);
    return ctx;
}

void cli_add_problems(splat_context *ctx, cli_problems *probs) {
    char *msg = cli_strdup(splat_errmsg(ctx)), *line = msg;
    while (line) {
        char *nl = strchr(line, '\n');
        if (nl) *nl = 0;
        if (*line) cli_problems_add(probs, "%s", line);
        line = nl ? nl + 1 : NULL;
    }
    free(msg);
}

void cli_print_error(splat_context *ctx) {
    cli_problems p = {0};
    cli_add_problems(ctx, &p);
    for (int i = 0; i < p.n; i++) fprintf(stderr, "error: %s\n", p.items[i]);
    cli_problems_free(&p);
}

void cli_config_string(splat_context *ctx, const char *key, char *buf, size_t n) {
    if (splat_config_get_string(ctx, key, buf, n) != SPLAT_OK && n) buf[0] = 0;
}

char *cli_run_dir(splat_context *ctx) {
    char dir[4096], name[1024];
    cli_config_string(ctx, "output.run_dir", dir, sizeof dir);
    if (dir[0]) return cli_strdup(dir);
    cli_config_string(ctx, "experiment.name", name, sizeof name);
    return cli_strfmt("runs/%s", name);
}
