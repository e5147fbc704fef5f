/* api_glue.c — what the subcommands built on the public API (include/splat.h) share: library
 * messages printed as the library's default sink prints them, a context's problems as a
 * problem list, string settings read plainly, and the library's words for settings and train
 * options turned into the command line's flags. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

/* The library names settings and train options; a command-line user learns the flags instead.
 * Each of its phrases (train/train.h, train/config.c) and the flag wording that replaces it. */
static const char *const flag_words[][2] = {
    {"train options: resume_dir = ", "splat train --resume "},
    {"train options: force", "--force"},
    {"resume it with a higher trainer.max_steps", "resume it with a higher --set trainer.max_steps=N"},
    {"(the dataset folder to train on)", "(give the dataset folder: splat train DIR, or --set data.path=DIR)"},
    {"lower the image size", "lower --size"}, /* splat synth's option that sets it */
};

char *cli_replace(const char *msg, const char *from, const char *to) {
    char *s = cli_strdup(msg);
    for (size_t done = 0; strstr(s + done, from);) {
        char *at = strstr(s + done, from);
        char *t = cli_strfmt("%.*s%s%s", (int)(at - s), s, to, at + strlen(from));
        done = (size_t)(at - s) + strlen(to);
        free(s);
        s = t;
    }
    return s;
}

char *cli_flag_words(const char *msg) {
    char *s = cli_strdup(msg);
    for (size_t k = 0; k < sizeof flag_words / sizeof *flag_words; k++) {
        char *t = cli_replace(s, flag_words[k][0], flag_words[k][1]);
        free(s);
        s = t;
    }
    return s;
}

/* true while progress.c has a live line on the terminal: a message clears it first. */
static int g_live_line;

void cli_set_live_line(int live) { g_live_line = live; }

void cli_log(void *user, splat_log_level level, const char *message) {
    (void)user;
    static const char *const names[] = {"debug", "info", "warning", "error"};
    if (g_live_line) fputs("\r\033[K", stderr);
    char *m = cli_flag_words(message);
    if (level >= SPLAT_LOG_WARN) fprintf(stderr, "splat: %s: %s\n", names[level], m);
    else fprintf(stderr, "%s\n", m);
    free(m);
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
    char *msg = cli_flag_words(splat_errmsg(ctx)), *line = msg;
    while (line) {
        char *nl = strchr(line, '\n');
        if (nl) *nl = 0;
        if (*line) cli_problems_add(probs, "%s", line);
        line = nl ? nl + 1 : NULL;
    }
    free(msg);
}

void cli_add_set_problems(splat_context *ctx, cli_problems *probs) {
    int before = probs->n;
    cli_add_problems(ctx, probs);
    cli_set_flag(probs, before);
}

void cli_set_flag(cli_problems *probs, int from) {
    for (int k = from; k < probs->n; k++) {
        char *m = cli_strfmt("--set %s", probs->items[k]);
        free(probs->items[k]);
        probs->items[k] = m;
    }
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
