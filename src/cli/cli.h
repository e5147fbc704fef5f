/* cli.h — the `splat` subcommands. Each returns the process exit status. */
#ifndef SPLAT_CLI_H
#define SPLAT_CLI_H

#include "train/train.h"

int cmd_train(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_render(int argc, char **argv);
int cmd_synth(int argc, char **argv);
int cmd_bench(int argc, char **argv);

/* progress.c: the live progress line (terminal) or periodic plain lines (pipes, logs). */
void sp_cli_progress(const sp_progress *p, void *user);
/* Cancel callback for sp_train: 1 once Ctrl-C (SIGINT/SIGTERM) was received. */
int sp_cli_interrupted(void *user);

/* video.c: DIR/PATTERN (a printf pattern such as frame_%04d.png) to OUT (.mp4) through ffmpeg.
 * 1 written, 0 ffmpeg is not on PATH, -1 it failed (error set). */
int cli_encode_video(const char *dir, const char *pattern, int fps, const char *out);

/* Small argument helpers: "--name value" or "--name=value". */
int cli_flag(const char *arg, const char *name);
const char *cli_value(int argc, char **argv, int *i, const char *name); /* NULL if arg i is not --name */
int cli_help_requested(int argc, char **argv);

#endif
