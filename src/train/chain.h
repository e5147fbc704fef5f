/* chain.h — a benchmark chain: several scenes trained one after another into one folder with
 * shared settings, and the summary of their results (summary.toml, summary.md and a plot
 * comparing their curves). The file format is in docs/bench.md:
 *
 *   [chain]
 *   out = "runs/nerf-short"                    # default: runs/<chain file name>
 *   config = "configs/lego.toml"               # base configuration of every scene (optional)
 *   set = ["trainer.max_steps=300"]            # overrides for every scene (optional)
 *
 *   [scene.lego]                               # one table per scene, trained in file order
 *   path = "../shared/data/nerf_synthetic/lego"
 *   set = ["data.downscale=2"]                 # this scene's overrides (optional)
 */
#ifndef SPLAT_CHAIN_H
#define SPLAT_CHAIN_H

#include "core/core.h"
#include "train/checkpoint.h"
#include "train/config.h"

typedef struct {
    char name[64];
    sp_config cfg; /* resolved; output.run_dir = <out>/<name>, experiment.name = <name> */
} sp_chain_scene;

typedef struct {
    char *path; /* the chain file */
    char *out;  /* the chain's folder */
    sp_chain_scene *scenes;
    int n;
} sp_chain;

/* Reads a chain file and resolves every scene's configuration; `sets` (n_sets "key=value")
 * apply to every scene last, and out_override (may be NULL) replaces [chain] out. Every problem
 * is collected, naming the file and line. Returns 0, or -1 when there is any problem. */
int sp_chain_load(const char *path, const char *const *sets, int n_sets, const char *out_override, sp_chain *c,
                  sp_problems *problems);
void sp_chain_free(sp_chain *c);

/* One scene's outcome, read back from its result.toml. */
typedef struct {
    int have;           /* a result.toml was read */
    char status[32];    /* complete | interrupted | diverged */
    char split[8];      /* "test", or "val" when the scene has no test views */
    double psnr, ssim, train_seconds;
    long gaussians, steps;
    sp_series psnr_curve, loss_curve;
} sp_chain_result;

/* Reads run_dir/result.toml; -1 (with an error) when it is missing or unreadable. */
int sp_chain_read_result(const char *run_dir, sp_chain_result *r);
void sp_chain_result_free(sp_chain_result *r);

/* Writes <out>/summary.toml, summary.md and curves.png (PSNR and loss of every scene) from the
 * results so far (res[i] for scene i; scenes without a result are listed as not run). */
int sp_chain_write_summary(const sp_chain *c, const sp_chain_result *res);

/* What differs between a run's resolved configuration (its config.toml) and the one the chain now
 * asks for, ignoring keys that do not change results (output.*, experiment.name, logging,
 * backend.threads/profile, backend.kind when the chain says auto; data.path compared resolved):
 * "trainer.max_steps = 60 (the run has 30), ..." malloc'd, or NULL when nothing differs. */
char *sp_chain_config_diff(const sp_config *run, const sp_config *want);

#endif
