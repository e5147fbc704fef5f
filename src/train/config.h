/* config.h — every setting of a training run, with defaults, read from a TOML file and from
 * `--set section.key=value`, validated against one table-driven schema (config.c), written
 * back fully resolved as the run's config.toml. docs/config.md documents every key; a test
 * keeps it in step with the schema. */
#ifndef SPLAT_CONFIG_H
#define SPLAT_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "core/core.h"

#define SP_CONFIG_PATH_MAX 1024
#define SP_CONFIG_NAME_MAX 256
#define SP_CONFIG_WORD_MAX 16 /* one of a fixed set of words ("auto", "blender", ...) */

typedef struct {
    struct {
        char name[SP_CONFIG_NAME_MAX];
        int seed;
    } experiment;
    struct {
        char path[SP_CONFIG_PATH_MAX];
        char format[SP_CONFIG_WORD_MAX];     /* auto | blender | colmap | transforms */
        char background[SP_CONFIG_WORD_MAX]; /* white | black | random */
        char alpha[SP_CONFIG_WORD_MAX];      /* straight | premultiplied */
        int downscale;
        char eval_split[SP_CONFIG_WORD_MAX]; /* test | val | both */
        char images[SP_CONFIG_PATH_MAX];     /* COLMAP image folder; "" = automatic */
        int holdout_every;
        int cache_mb; /* > 0: stream training images through a cache of this many MiB */
        int device_cache_mb; /* streamed: images kept on the device, MiB; -1 = auto */
        int decode_threads;  /* streamed: decoding threads; 0 = auto */
        bool allow_outside_images; /* image paths may be absolute or climb out of the dataset folder */
    } data;
    struct {
        char method[SP_CONFIG_WORD_MAX]; /* auto | random | points */
        int count;
        double radius, opacity, scale;
        double scale_factor; /* times the neighbour distances; 0 = by refine.strategy */
    } init;
    struct {
        char run_dir[SP_CONFIG_PATH_MAX]; /* "" = runs/<experiment.name> */
        bool save_renders, save_ply;
    } output;
    struct {
        int max_steps, eval_every, save_every, log_every, sh_degree, sh_interval, checkpoint_every;
        int batch;
        char batch_lr[SP_CONFIG_WORD_MAX]; /* sqrt | none */
        double target_psnr; /* 0 = off */
        int schedule_steps; /* 0 = step schedules as written; N = written for N steps, scaled to max_steps */
    } trainer;
    struct {
        double ssim_weight;
    } loss;
    struct {
        int start, stop, every;
        double grad_threshold, percent_dense;
        int split_count;
        double split_shrink, prune_opacity, prune_world_scale;
        char opacity_mode[SP_CONFIG_WORD_MAX]; /* decay | reset | none */
        double opacity_decay;
        int opacity_reset_every;
        double opacity_reset_value;
        int capacity;
        char strategy[SP_CONFIG_WORD_MAX]; /* auto | adc | mcmc (auto: sp_config_resolve_strategy) */
        int max_gaussians;                 /* mcmc: the budget */
        int mcmc_stop;                     /* mcmc: last refine step bound (refine.stop is adc's) */
        double mcmc_grow, mcmc_noise_lr, mcmc_opacity_reg, mcmc_scale_reg;
        double prune_weight;    /* fraction removed at each prune by blend weight (train/prune.h) */
        int prune_weight_every; /* 0: once, at stop */
        bool reorder;           /* Morton order at a new run's start and after each refine (backend.h) */
    } refine;
    struct {
        double means_lr, means_lr_final, scales_lr, quats_lr, opacity_lr, sh_dc_lr, sh_rest_lr;
        double beta1, beta2, eps;
        bool sparse;  /* out-of-view Gaussians keep their zero-gradient values (adam.c) */
        char moments16[SP_CONFIG_WORD_MAX]; /* auto | true | false: the moments 16 bits each
                                               (backend/moments16_rule.h); sp_config_moments16 */
    } adam;
    struct {
        bool antialias; /* opacity-compensated screen-space filter (part of what a model means) */
    } render;
    struct {
        char kind[SP_CONFIG_WORD_MAX]; /* auto | cpu | cuda */
        int threads, reduce_chunks;
        bool profile, deterministic, cas_atomics, split_update, check_replicas;
        char devices[64]; /* "N" or "0,1,..." (backend/dist.h) */
    } backend;
} sp_config;

/* The schema: one row per key. Ranges apply to int and float keys; `choices` ("a|b|c") to
 * string keys that take one of a fixed set of words. */
typedef enum { SP_CFG_STRING, SP_CFG_INT, SP_CFG_FLOAT, SP_CFG_BOOL } sp_config_type;
enum { SP_CFG_NOLIMIT = 0, SP_CFG_INCL = 1, SP_CFG_EXCL = 2 }; /* lo_kind / hi_kind */

typedef struct {
    const char *section, *key;
    sp_config_type type;
    size_t offset, size; /* of the field in sp_config */
    int lo_kind; /* SP_CFG_NOLIMIT, SP_CFG_INCL (>=) or SP_CFG_EXCL (>) */
    double lo;
    int hi_kind; /* SP_CFG_NOLIMIT, SP_CFG_INCL (<=) or SP_CFG_EXCL (<) */
    double hi;
    const char *choices; /* NULL: any string */
    double def_num;      /* default of int, float and bool keys */
    const char *def_str; /* default of string keys */
    const char *doc;     /* one line */
    int experimental;    /* kept for measurements and debugging, not for use: docs/config.md lists these
                            keys apart, config.toml marks them */
} sp_config_field;

extern const sp_config_field sp_config_schema[];
extern const int sp_config_schema_len;
/* The schema row of "section.key", or NULL. */
const sp_config_field *sp_config_find(const char *section, const char *key);

void sp_config_defaults(sp_config *c);
/* sp_config_defaults, then the file applied over it. Collects every problem (syntax error,
 * unknown section or key, a removed key, wrong type, out-of-range value, word not allowed) as
 * "path:LINE: message" into problems; returns -1 if there was any (valid keys are still applied). */
int sp_config_load(const char *path, sp_config *c, sp_problems *problems);
/* Applies the file over c's current values (layering); same problems as sp_config_load. */
int sp_config_apply_file(const char *path, sp_config *c, sp_problems *problems);
/* The same for TOML text; problems name `name` ("name:LINE: ...") as they would a file. */
int sp_config_apply_text(const char *text, const char *name, sp_config *c, sp_problems *problems);
/* Applies "section.key=value" (the CLI's --set). value is a TOML value; for string keys an
 * unquoted value is taken literally (data.path=/x/y). Problems read "section.key: message" (the
 * CLI prints them as "--set section.key: message"). Returns -1 on any problem (c unchanged then). */
int sp_config_set(sp_config *c, const char *assignment, sp_problems *problems);
/* Checks that need the whole config: data.path is set, init.count fits refine.capacity. */
int sp_config_validate_for_training(const sp_config *c, sp_problems *problems);
/* Settings that follow the backend, once it is known: refine.strategy = auto becomes mcmc when
 * mcmc_runs (the backend has MCMC densification: one device of cpu, cuda or vulkan), else adc; init.opacity
 * = 0 becomes the strategy's (0.5 mcmc, 0.1 adc). Returns -1 (with the error set) when the chosen
 * mcmc cannot start: init.method = "random" larger than refine.max_gaussians (init.method = "auto"
 * is checked once the dataset is known: sp_config_check_mcmc_init). */
int sp_config_resolve_strategy(sp_config *c, int mcmc_runs);
/* Whether training initializes from the dataset's sparse points (init.method points, or auto with
 * num_points > 0) rather than at random. */
int sp_config_init_from_points(const sp_config *c, int num_points);
/* adam.moments16 for the backend's configuration: 1 true, 0 false, -1 auto (the backend picks:
 * sp_backend_create). */
int sp_config_moments16(const sp_config *c);
/* mcmc (resolved) with a set budget: -1 (with the error set) when the initialization training
 * will make from a dataset of num_points sparse points is a random one larger than the budget. */
int sp_config_check_mcmc_init(const sp_config *c, int num_points);

/* Fully resolved TOML (every key, defaults included, each with its one-line doc as comment).
 * Loading it back gives an equal config. */
int sp_config_write(const sp_config *c, const char *path); /* atomic */
void sp_config_print(const sp_config *c, FILE *f);
char *sp_config_to_toml(const sp_config *c); /* malloc'd text */
bool sp_config_equal(const sp_config *a, const sp_config *b);

/* The markdown reference of every key (one table per section), as it appears in docs/config.md
 * between the "generated" markers. malloc'd. */
char *sp_config_docs_markdown(void);

#endif
