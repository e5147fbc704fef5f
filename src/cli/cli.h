/* cli.h — the `splat` subcommands (each returns the process exit status) and what they share.
 * The commands use the library through include/splat.h only: src/cli includes no other header of
 * splat's (tests/check_library_rules.py checks it). */
#ifndef SPLAT_CLI_H
#define SPLAT_CLI_H

#include <stdbool.h>
#include <stddef.h>

#include "splat.h"

int cmd_train(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_render(int argc, char **argv);
int cmd_synth(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_view(int argc, char **argv);
/* cmd_view.c: a warning on stderr when host is not 127.0.0.1 (the viewer has no authentication). */
void view_warn_host(const char *host);

/* estimate.c: how long a run takes. The Gaussian count expected at `step`, from `n` at step `from`
 * (mcmc: the plan's growth to its budget; adc: adc_slope more per step until densification
 * stops), and the seconds of steps from+1 .. max_steps when a step costs fixed_s +
 * per_gaussian_s x count. */
double cli_est_count(const splat_plan *p, int from, double n, double adc_slope, int step);
/* The last step whose refine still adds Gaussians (from when none does). */
int cli_est_growth_end(const splat_plan *p, int from, double n, double adc_slope);
double cli_est_seconds(const splat_plan *p, int from, double n, double adc_slope, double fixed_s,
                       double per_gaussian_s);
/* The part of a step at count n that does not grow with the count (0..1): the CPU backend's costs
 * per pixel and per Gaussian; half on a GPU. */
double cli_est_fixed_share(const splat_plan *p, double n);
/* A step's cost on the CPU backend before any was measured (the dev machine's, scaled by threads). */
void cli_est_cpu_costs(const splat_plan *p, double *fixed_s, double *per_gaussian_s);
/* The whole run's seconds from those costs (the CPU backend; NaN on a GPU, whose speed is unknown
 * until it runs). */
double cli_est_run_seconds(const splat_plan *p);
/* The line that tells a CPU user of a long run what a shorter one is (NULL when it does not apply:
 * another backend, or a run shorter than the default 30000 steps). */
const char *cli_est_short_recipe(const splat_plan *p);
/* "1h05m", "3m20s", "45s" ("-" when not finite). */
void cli_fmt_duration(double s, char *buf, size_t n);

/* progress.c: the live progress line (terminal) or periodic plain lines (pipes, logs). user is a
 * cli_clock (or NULL: the trainer's ETA at constant speed, "done in"/"stopped after" only). */
typedef struct {
    splat_plan plan;      /* have_plan: the ETA follows the plan's Gaussian growth */
    int have_plan;
    int resumed;          /* the final line says the time is this session's */
    int announce;         /* print the estimate line once (and the short CPU recipe when it applies) */
    /* internal state */
    int started, announced, first_step, ref_step, last_step;
    double ref_n, adc_slope;
} cli_clock;
void sp_cli_progress(const splat_progress *p, void *user);
/* Cancel callback for splat_train: 1 once Ctrl-C (SIGINT/SIGTERM) was received. */
int sp_cli_interrupted(void *user);

/* video.c: DIR/PATTERN (a printf pattern such as frame_%04d.png) to OUT (.mp4) through ffmpeg.
 * 1 written, 0 ffmpeg is not on PATH, -1 it failed (error set). */
int cli_encode_video(const char *dir, const char *pattern, int fps, const char *out);

/* Small argument helpers: "--name value" or "--name=value". */
int cli_flag(const char *arg, const char *name);
const char *cli_value(int argc, char **argv, int *i, const char *name); /* NULL if arg i is not --name */
int cli_help_requested(int argc, char **argv);
/* Every numeric flag: v, whole, a base-10 integer in [lo, hi] (overflow checked) into *out; else
 * prints "splat CMD: FLAG wants a whole number from LO to HI, got 'V'" and returns -1. */
int cli_int(const char *cmd, const char *flag, const char *v, long long lo, long long hi, long long *out);

/* outguard.c: outputs that would overwrite inputs are refused (the message names the file).
 * render/synth: OUT must not be or lie inside (or contain) any of the NULL-terminated inputs
 * (dataset folder, run folder, model file), and a non-empty OUT must hold only what the command
 * itself writes (kind "render": frame_*.png, *.mp4, train|val|test/ *.png; "synth":
 * transforms_{train,val,test}.json and train|val|test/ *.png). export: OUT must not be the input
 * model, a run folder's own file or lie inside a dataset folder. 0 ok, -1 refused (printed). */
int cli_guard_out_dir(const char *cmd, const char *kind, const char *out, const char *const *inputs);
int cli_guard_out_file(const char *cmd, const char *out, const char *input_model);
/* synth: the marker that makes a folder synth's own output (after a complete write). */
int cli_synth_mark(const char *out);

/* util.c: memory that cannot fail (out of memory prints a message and exits with status 2:
 * cli_out_of_memory, which main.c also gives the library), strings, files, paths, a clock. */
void cli_out_of_memory(void *user, size_t bytes);
void *cli_alloc(size_t count, size_t size); /* zeroed */
char *cli_strdup(const char *s);
char *cli_strfmt(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#define CLI_NEW(T, count) ((T *)cli_alloc((size_t)(count), sizeof(T)))
/* The last error of a helper that returned -1 ("PATH: cannot ..."); cli_error sets it, returns -1. */
int cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
const char *cli_last_error(void);
/* Every problem a command finds (check, configuration), printed together. */
typedef struct {
    char **items;
    int n, cap;
} cli_problems;
void cli_problems_add(cli_problems *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cli_problems_free(cli_problems *p);
double cli_now(void); /* monotonic seconds */
int cli_file_exists(const char *path);
int cli_dir_exists(const char *path);
char *cli_path_join(const char *a, const char *b); /* "a/b" (b absolute: b) */
int cli_mkdir_p(const char *path);                /* with its parents; -1 with cli_error */
int cli_write_file_atomic(const char *path, const void *data, size_t n); /* temporary, then rename */

/* dist_env.c: this process among several, from the environment (SPLAT_RANK, SPLAT_WORLD_SIZE,
 * SPLAT_LOCAL_RANK, SPLAT_DIST_FILE, or Open MPI's OMPI_COMM_WORLD_RANK / _SIZE / _LOCAL_RANK
 * when SPLAT_RANK is unset) and --dist-file (dist_file, may be NULL; it wins over
 * SPLAT_DIST_FILE), for splat_set_dist. None set: rank 0 of 1. A missing, non-numeric or
 * inconsistent value is an error naming the variable (cli_error); -1 then. d->id_file points into
 * the environment or at dist_file. */
int cli_dist_from_env(const char *dist_file, splat_dist *d);

/* api_glue.c: for the subcommands built on the public API. cli_open_context opens a context whose
 * messages cli_log prints as the library's default sink does (NULL, after a message, when out of
 * memory); cli_set_live_line(1) while progress.c keeps a live line on the terminal. */
splat_context *cli_open_context(void);
void cli_log(void *user, splat_log_level level, const char *message);
void cli_set_live_line(int live);
/* The context's message, one problem per line, into probs / printed as "error: ..." lines (the
 * library's words for settings and train options given as flags: cli_flag_words). */
void cli_add_problems(splat_context *ctx, cli_problems *probs);
/* After a --set value failed: its problems ("trainer.max_steps: ...") read "--set trainer.max_steps:
 * ..." (cli_set_flag: the problems from index `from` on). */
void cli_add_set_problems(splat_context *ctx, cli_problems *probs);
void cli_set_flag(cli_problems *probs, int from);
/* A library message with the command line's flags where it names train options (malloc'd). */
char *cli_flag_words(const char *msg);
/* msg with every `from` replaced by `to` (malloc'd). */
char *cli_replace(const char *msg, const char *from, const char *to);
void cli_print_error(splat_context *ctx);
/* A string setting read into buf ("" when it cannot be read). */
void cli_config_string(splat_context *ctx, const char *key, char *buf, size_t n);
/* The run folder training with ctx's configuration writes: output.run_dir, else runs/<experiment.name>
 * (malloc'd). */
char *cli_run_dir(splat_context *ctx);

/* interrupt.c: SIGINT/SIGTERM set a flag (the train command's cancel callback reads it). */
void sp_install_interrupt_handler(void);
bool sp_interrupted(void);
void sp_set_interrupted(bool v);

#endif
