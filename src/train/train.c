/* train.c — the training loop.
 *
 * A run has two phases. First, checks that write nothing: the run folder (a fresh run does not
 * replace an existing one without force), the checkpoint when resuming (against the config),
 * the dataset, the backend and the initial Gaussians. Then the commit: the old run's files go
 * (force), log.txt and config.toml are written, and for each step it picks a view and
 * background, runs one backend step, lets the refine strategy (strategy.h: adc, mcmc) act,
 * logs, evaluates and saves on schedule. At the end (or when cancelled) it writes
 * point_cloud.ply, checkpoint.bin, renders/, curves.png and result.toml. */
#include "train/train.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/backend.h"
#include "core/core.h"
#include "eval/eval.h"
#include "eval/plot.h"
#include "io/cameras_json.h"
#include "io/export.h"
#include "io/loader.h"
#include "io/ply.h"
#include "io/viewload.h"
#include "scene/init.h"
#include "backend/dist.h"
#include "train/batch.h"
#include "train/checkpoint.h"
#include "train/report.h"
#include "train/schedule.h"
#include "train/strategy.h"
#include "train/stream.h"
#include "train/viewsched.h"


char *sp_train_run_dir(const sp_config *cfg) {
    if (cfg->output.run_dir[0]) return sp_strdup(cfg->output.run_dir);
    return sp_strfmt("runs/%s", cfg->experiment.name);
}

const char *const sp_train_run_files[] = {
    "config.toml", "log.txt",     "result.toml",    "point_cloud.ply", "checkpoint.bin", "curves.png",
    "cameras.json", "eval_test.toml", "eval_val.toml", "eval_train.toml", "renders/", "point_cloud/", NULL};

/* dir/NAME for run file i (a folder's NAME without its trailing '/'), malloc'd. */
static char *run_file_path(const char *dir, int i) {
    char *clean = sp_strdup(sp_train_run_files[i]);
    size_t len = strlen(clean);
    if (clean[len - 1] == '/') clean[len - 1] = 0;
    char *p = sp_path_join(dir, clean);
    free(clean);
    return p;
}

/* "config.toml, log.txt, ..." of the run files present in dir (malloc'd; NULL if none). */
static char *existing_run_files(const char *dir) {
    char *list = NULL;
    for (int i = 0; sp_train_run_files[i]; i++) {
        const char *name = sp_train_run_files[i];
        char *p = run_file_path(dir, i);
        int there = name[strlen(name) - 1] == '/' ? sp_dir_exists(p) : sp_file_exists(p);
        free(p);
        if (there) {
            char *l = list ? sp_strfmt("%s, %s", list, name) : sp_strdup(name);
            free(list);
            list = l;
        }
    }
    return list;
}

/* 0 when force (sp_train_opts) could remove every file of the old run (and the temporaries);
 * else the error names the first that it could not, and nothing is removed. */
static int old_run_removable(const char *dir) {
    for (int i = 0; sp_train_run_files[i]; i++) {
        char *p = run_file_path(dir, i);
        int rc = sp_tree_removable(p);
        free(p);
        if (rc) return sp_error_prefix("cannot replace the run in %s (train options: force; it removes all of the "
                                       "old run or nothing)", dir);
    }
    return 0;
}

/* force: removes the old run's files (and temporaries of interrupted writes), nothing else;
 * all of them or, when one could not be removed, none. */
static int remove_old_run(const char *dir) {
    if (old_run_removable(dir)) return -1;
    for (int i = 0; sp_train_run_files[i]; i++) {
        char *p = run_file_path(dir, i);
        int rc = sp_remove_tree(p);
        free(p);
        if (rc) return -1;
    }
    return sp_remove_temporaries(dir);
}

static void background_for_step(const sp_config *cfg, int step, float bg[3]) {
    if (!strcmp(cfg->data.background, "black")) {
        bg[0] = bg[1] = bg[2] = 0.0f;
    } else if (!strcmp(cfg->data.background, "random")) {
        sp_rng r;
        sp_rng_seed(&r, (uint64_t)cfg->experiment.seed, 0xb6ull + (uint64_t)step);
        for (int k = 0; k < 3; k++) bg[k] = sp_rng_uniform(&r);
    } else {
        bg[0] = bg[1] = bg[2] = 1.0f;
    }
}

/* Evaluation background: the configured one; "random" evaluates on white. */
static void eval_background(const sp_config *cfg, float bg[3]) {
    float v = !strcmp(cfg->data.background, "black") ? 0.0f : 1.0f;
    bg[0] = bg[1] = bg[2] = v;
}

static float means_lr(const sp_config *cfg, int step, float extent) {
    double t = (double)step / (double)cfg->trainer.max_steps;
    if (t > 1) t = 1;
    double a = log(cfg->adam.means_lr), b = log(cfg->adam.means_lr_final);
    return (float)(exp(a + (b - a) * t) * extent);
}

typedef struct {
    const sp_config *cfg;
    char *dir;
    sp_dataset data;
    sp_backend *b;
    sp_train_stream *stream; /* data.cache_mb > 0: training images streamed from disk */
    sp_alpha_mode alpha;
    sp_series curves[SP_CURVES];
    /* Clocks (docs/runs.md): training time and wall time of every session of the run, this
     * session's wall time from `started`; NaN: unknown (resumed from an older checkpoint). */
    sp_series eval_seconds; /* training seconds at each PSNR curve point */
    int target_step;        /* first step at or above trainer.target_psnr; 0 = not yet */
    double train_seconds; /* includes previous sessions of a resumed run */
    double train_seconds0; /* train_seconds when this session began (a resume's checkpoint) */
    double total_seconds0; /* wall time of the earlier sessions (a resume's checkpoint) */
    double started;
    int step;       /* last completed step */
    int saved_step; /* step of the checkpoint in the run folder; -1: none */
    sp_eval_result test, val;
    int have_test, have_val;
    /* progress: this session's loop start, time spent saving and evaluating (not training), and
     * the smoothed recent speed */
    double loop_t0, paused_s;
    double prog_t, prog_sps;
    int prog_step0, prog_step, prog_skip;
    int in_loop; /* train_seconds does not yet include this session's loop */
    sp_dist dist; /* several processes: only rank 0 (writer) writes the run folder */
    int writer;
    int lock_fd;        /* the run folder's lock (sp_dir_lock), -1 while not held */
    int config_pending; /* a resumed run writes config.toml with its first save, not before */
    const sp_train_opts *o; /* the caller's options (its cancel callback) */
    /* in memory, on a GPU: the held-out views decoded on a thread while the run trains (held_out_wait) */
    pthread_t held_out;
    int held_out_started, held_out_rc;
    char held_out_err[2048];
    int session_step0;  /* the step this session started from */
    int save_failed;    /* a save failed: the error path does not try again */
    /* the loop: schedules, the refine strategy, which view each step trains on, the batch plan */
    sp_schedule sched;
    const sp_strategy *strat;
    sp_strategy_env env;
    sp_view_sched vsched;
    sp_batch_plan plan;
    double lr_scale; /* learning rates x this for the global batch (trainer.batch_lr) */
    int replicated;  /* several devices or processes: every slot of a batch is a call */
    /* loss read-backs: the latest finite mean, and the sum since the last curve point */
    double last_loss, loss_sum;
    int loss_n;
    sp_gaussians *saved_model; /* sp_train_opts.model: the last save's model goes there */
} run;

/* Steps between loss read-backs: often enough for a live progress line, rarely enough that a GPU
 * backend whose take_loss waits for the device does not stall often. */
#define LOSS_EVERY 10

static char *run_path(const run *r, const char *name) { return sp_path_join(r->dir, name); }

/* Training time so far: earlier sessions plus this session's loop, saves left out. */
static double train_seconds_now(const run *r) {
    return r->in_loop ? r->train_seconds + sp_now() - r->loop_t0 - r->paused_s : r->train_seconds;
}

/* Wall time so far, this session's and the run's (every session; NaN when the earlier ones are
 * unknown). */
static double session_seconds_now(const run *r) { return sp_now() - r->started; }
static double total_seconds_now(const run *r) { return r->total_seconds0 + session_seconds_now(r); }

/* Outputs that change together: each is written in full under a temporary name first, and only
 * when all are written are they renamed over the old ones, so a full disk or a file-size limit
 * leaves the previous set (one consistent step) in place. */
#define STAGE_MAX 4
typedef struct {
    char *final[STAGE_MAX], *staged[STAGE_MAX];
    int n;
} stage_set;

static char *stage_add(stage_set *st, char *final) { /* takes final (malloc'd) */
    st->final[st->n] = final;
    st->staged[st->n] = sp_strfmt("%s.tmp.%d", final, (int)getpid());
    return st->staged[st->n++];
}

static void stage_free(stage_set *st, int drop) {
    for (int i = 0; i < st->n; i++) {
        if (drop) unlink(st->staged[i]);
        free(st->final[i]);
        free(st->staged[i]);
    }
    st->n = 0;
}

static int stage_commit(stage_set *st) {
    int rc = 0;
    for (int i = 0; i < st->n && rc == 0; i++)
        if (rename(st->staged[i], st->final[i]) != 0)
            rc = sp_error("%s: rename failed: %s", st->final[i], strerror(errno));
    stage_free(st, rc != 0);
    return rc;
}

static int write_result_to(run *r, const char *status, const char *path);
static int held_out_wait(run *r);

/* A save of point_cloud.ply, checkpoint.bin and result.toml in flight: the model read back from
 * the backend and its files written under staged names, which save_end renames into place. A
 * save begun with `later` writes the model's .ply, snapshot and the checkpoint's stores on a
 * thread of its own, which touches neither the run nor the backend (the device may go on: the
 * final evaluation), and leaves result.toml and the checkpoint's curves and clocks to save_rest,
 * which writes them as they are then. */
typedef struct {
    run *r;
    stage_set st;
    sp_gaussians g, m, v;
    sp_checkpoint ck;
    sp_checkpoint_writer ckw; /* later: the checkpoint, its stores written */
    const char *ply, *ckpt, *result; /* staged paths (NULL: not written) */
    int snapshot, announce, later;
    pthread_t thread;
    int started, threaded, rc;
    double t0, begin_s, write_s, rest_s; /* the save's start, save_begin's time, the files' writing times */
    char err[1024];
} save_job;

/* The model's files and the checkpoint (later: its stores; save_rest writes the rest). */
static void *save_files(void *arg) {
    save_job *j = arg;
    double t = sp_now();
    int rc = 0;
    if (j->ply) rc = sp_ply_write(j->ply, &j->g);
    /* snapshots in the original 3DGS layout, every save_every steps and at the end (new files) */
    if (rc == 0 && j->snapshot) rc = sp_snapshot_write(j->r->dir, j->ck.step, &j->g);
    if (rc == 0)
        rc = j->later ? sp_checkpoint_write_stores(&j->ckw, j->ckpt, &j->ck) : sp_checkpoint_write(j->ckpt, &j->ck);
    if (rc) snprintf(j->err, sizeof j->err, "%s", sp_last_error());
    j->rc = rc;
    j->write_s = sp_now() - t;
    return NULL;
}

/* The checkpoint's curves and clocks as the run has them now. */
static void save_take_curves(run *r, save_job *j) {
    j->ck.total_seconds = total_seconds_now(r);
    j->ck.eval_seconds = r->eval_seconds;
    memcpy(j->ck.curves, r->curves, sizeof j->ck.curves);
}

/* Starts a save (status: "running" for a save during training), all of one step, or none of its
 * files (the previous save stays; save_end's error says so). later: the .ply, snapshot and the
 * checkpoint's stores are written on a thread, and save_rest (called before save_end) writes
 * result.toml and the rest of the checkpoint. Returns -1 when nothing was started (the error says
 * why; save_end is then not called). */
static int save_begin(run *r, const char *status, int announce, int later, save_job *j) {
    memset(j, 0, sizeof *j);
    j->r = r, j->announce = announce, j->later = later, j->t0 = sp_now();
    if (r->b->ops->get_gaussians(r->b, &j->g, &j->m, &j->v)) return -1;
    if (r->cfg->output.save_ply) j->ply = stage_add(&j->st, run_path(r, "point_cloud.ply"));
    int every = r->cfg->trainer.save_every;
    j->snapshot = every > 0 && (r->step % every == 0 || r->step == r->cfg->trainer.max_steps);
    j->ck = (sp_checkpoint){.step = r->step, .train_seconds = train_seconds_now(r), .g = j->g, .m = j->m, .v = j->v,
                            .dataset = (char *)r->cfg->data.path};
    save_take_curves(r, j);
    j->ckpt = stage_add(&j->st, run_path(r, "checkpoint.bin"));
    j->result = stage_add(&j->st, run_path(r, "result.toml"));
    int rc = later ? 0 : write_result_to(r, status, j->result);
    if (rc == 0 && r->config_pending) rc = sp_config_write(r->cfg, stage_add(&j->st, run_path(r, "config.toml")));
    if (rc) {
        j->rc = rc;
        snprintf(j->err, sizeof j->err, "%s", sp_last_error());
    } else if (later && pthread_create(&j->thread, NULL, save_files, j) == 0) {
        j->started = j->threaded = 1;
    } else {
        save_files(j);
    }
    j->begin_s = sp_now() - j->t0;
    return 0;
}

/* A `later` save's result.toml (status) and the rest of its checkpoint, with the run's curves and
 * clocks as they are now (after the model's files: the thread is waited for). */
static void save_rest(run *r, const char *status, save_job *j) {
    if (j->started) pthread_join(j->thread, NULL);
    j->started = 0;
    if (j->rc) return; /* nothing more to write (the error is j's) */
    double t = sp_now();
    save_take_curves(r, j);
    int rc = write_result_to(r, status, j->result);
    if (rc == 0) rc = sp_checkpoint_write_rest(&j->ckw, &j->ck);
    else sp_checkpoint_writer_abort(&j->ckw);
    if (rc) snprintf(j->err, sizeof j->err, "%s", sp_last_error());
    j->rc = rc;
    j->rest_s = sp_now() - t;
}

/* Finishes a save: waits for its files, renames them all into place (or drops them all), and
 * says so; -1 with the error when this save kept nothing. */
static int save_end(run *r, save_job *j) {
    if (j->started) pthread_join(j->thread, NULL);
    j->started = 0;
    double t_end = sp_now();
    sp_checkpoint_writer_abort(&j->ckw); /* a later save ended before its rest */
    int rc = j->rc;
    if (rc == 0) rc = stage_commit(&j->st);
    else {
        stage_free(&j->st, 1);
        sp_error("%s", j->err);
    }
    if (rc == 0) {
        r->saved_step = j->ck.step;
        r->config_pending = 0;
        if (r->saved_model) {
            sp_gaussians_free(r->saved_model);
            *r->saved_model = j->g;
            memset(&j->g, 0, sizeof j->g);
        }
        /* the time of this save's own work (a save written beside the evaluation: not the wait) */
        double secs = j->threaded ? j->begin_s + j->write_s + j->rest_s + (sp_now() - t_end) : sp_now() - j->t0;
        if (j->announce)
            SP_INFO("saved the model and a checkpoint at step %d (%.1f s)", j->ck.step, secs);
        else
            sp_log_to_file("saved the model and a checkpoint at step %d (%.1f s)", j->ck.step, secs);
    } else {
        char why[1024];
        snprintf(why, sizeof why, "%s", sp_last_error());
        r->save_failed = 1;
        if (r->saved_step >= 0)
            sp_error("%s; nothing of this save was kept: the model, checkpoint and result.toml of step %d are as "
                     "they were", why, r->saved_step);
        else
            sp_error("%s; nothing of this save was kept", why);
    }
    sp_gaussians_free(&j->g);
    sp_gaussians_free(&j->m);
    sp_gaussians_free(&j->v);
    return rc;
}

/* A save, all of it before returning (save_begin and save_end). */
static int save_state(run *r, const char *status, int announce) {
    if (!r->writer) return 0;
    save_job j;
    if (save_begin(r, status, announce, 0, &j)) return -1;
    return save_end(r, &j);
}

static int write_curves_png(run *r) {
    const sp_series *ps = &r->curves[SP_CURVE_PSNR];
    char note[160];
    if (ps->n == 1)
        snprintf(note, sizeof note, "one evaluation only: %.2f dB at step %.0f (trainer.eval_every gives a curve)",
                 ps->y[0], ps->x[0]);
    else
        snprintf(note, sizeof note, "no evaluation (no held-out views, or the run stopped early)");
    /* trainer.target_psnr: a level line in the PSNR panel, its legend saying when the run got there */
    double target = r->cfg->trainer.target_psnr, tx[2] = {0, 0}, ty[2] = {target, target};
    char tlabel[96];
    sp_plot_series tline = {.title = tlabel, .x = tx, .y = ty, .n = 2};
    int with_target = target > 0 && ps->n >= 2;
    if (with_target) {
        int ts = 0;
        double tsec = NAN;
        tx[0] = ps->x[0], tx[1] = ps->x[ps->n - 1];
        if (!sp_report_target(ps, &r->eval_seconds, target, &ts, &tsec))
            snprintf(tlabel, sizeof tlabel, "target %.2f dB: not reached", target);
        else if (isfinite(tsec))
            snprintf(tlabel, sizeof tlabel, "target %.2f dB: step %d, %.1f s of training", target, ts, tsec);
        else
            snprintf(tlabel, sizeof tlabel, "target %.2f dB: step %d", target, ts);
    }
    sp_plot_series panels[3] = {
        {.title = "loss (log scale)", .x = r->curves[SP_CURVE_LOSS].x, .y = r->curves[SP_CURVE_LOSS].y,
         .n = r->curves[SP_CURVE_LOSS].n, .log_y = 1},
        {.title = "eval PSNR (dB)", .x = ps->x, .y = ps->y, .n = ps->n, .note = note,
         .lines = with_target ? &tline : NULL, .num_lines = with_target},
        {.title = "Gaussians", .x = r->curves[SP_CURVE_GAUSSIANS].x, .y = r->curves[SP_CURVE_GAUSSIANS].y,
         .n = r->curves[SP_CURVE_GAUSSIANS].n, .x_label = "step"},
    };
    char *p = run_path(r, "curves.png");
    int rc = sp_plot_write_png(p, panels, 3, 800, 900);
    free(p);
    return rc;
}

static int write_result_to(run *r, const char *status, const char *p) {
    sp_profile prof;
    memset(&prof, 0, sizeof prof);
    r->b->ops->get_profile(r->b, &prof);
    sp_report rep = {
        .cfg = r->cfg,
        .status = status,
        .version = sp_version(),
        .commit = sp_commit(),
        .backend = r->b->ops->name,
        .steps = r->step,
        .num_gaussians = r->b->ops->num_gaussians(r->b),
        .train_seconds = train_seconds_now(r),
        .total_seconds = total_seconds_now(r),
        .session_seconds = session_seconds_now(r),
        .test = r->have_test ? &r->test : NULL,
        .val = r->have_val ? &r->val : NULL,
        .curves = r->curves,
        .eval_seconds = &r->eval_seconds,
        .profile = &prof,
        .profile_seconds = train_seconds_now(r) - r->train_seconds0, /* the profile is this session's */
        .peak_host_mib = sp_report_peak_host_mib(),
    };
    sp_log_to_file("peak host memory: %.1f MiB", rep.peak_host_mib);
    return sp_report_write(p, &rep);
}

/* result.toml alone (a run that ends without a model to save): never over an existing one, which
 * describes the model and checkpoint that are kept. */
static int write_result_if_none(run *r, const char *status) {
    char *p = run_path(r, "result.toml");
    int rc = 0;
    if (sp_file_exists(p)) sp_log_to_file("result.toml is kept: it describes the saved model of step %d", r->saved_step);
    else rc = write_result_to(r, status, p);
    free(p);
    return rc;
}

static int init_gaussians(run *r) {
    const sp_config *cfg = r->cfg;
    sp_gaussians g;
    int deg = cfg->trainer.sh_degree, rc;
    int use_points = sp_config_init_from_points(cfg, r->data.num_points);
    if (use_points) {
        if (r->data.num_points <= 0)
            return sp_error("init.method = \"points\" but the dataset %s has no sparse points", cfg->data.path);
        rc = sp_init_from_points(&g, r->data.points, r->data.point_colors, r->data.num_points, deg,
                                 (float)cfg->init.opacity, (float)cfg->init.scale);
        SP_INFO("initialized %d Gaussians from the dataset's sparse points", g.n);
    } else {
        float lo[3], hi[3];
        for (int k = 0; k < 3; k++) {
            lo[k] = r->data.init_min[k];
            hi[k] = r->data.init_max[k];
            if (cfg->init.radius > 0) { /* same centre, the given half-size */
                float mid = 0.5f * (lo[k] + hi[k]);
                lo[k] = mid - (float)cfg->init.radius;
                hi[k] = mid + (float)cfg->init.radius;
            }
        }
        /* captured scenes: where the training views look (init.h) */
        int nc = r->data.init_by_views ? r->data.train.n : 0;
        sp_camera *cams = SP_NEW(sp_camera, nc > 0 ? nc : 1);
        for (int i = 0; i < nc; i++) cams[i] = r->data.train.views[i].cam;
        rc = sp_init_random(&g, cfg->init.count, lo, hi, deg, (float)cfg->init.opacity, (float)cfg->init.scale,
                            (uint64_t)cfg->experiment.seed, cams, nc);
        free(cams);
        SP_INFO("initialized %d random Gaussians in [%.2f %.2f %.2f] - [%.2f %.2f %.2f]%s", g.n, lo[0], lo[1], lo[2],
                hi[0], hi[1], hi[2], nc ? ", weighted by the views that see them" : "");
    }
    if (rc) return -1;
    /* init.scale_factor is resolved (sp_config_resolve_strategy) before this: > 0 */
    if (cfg->init.scale == 0.0 && cfg->init.scale_factor > 0.0 && cfg->init.scale_factor != 1.0) {
        float dl = logf((float)cfg->init.scale_factor);
        for (size_t i = 0; i < (size_t)g.n * 3; i++) g.log_scales[i] += dl;
    }
    rc = r->b->ops->set_gaussians(r->b, &g, NULL, NULL);
    sp_gaussians_free(&g);
    return rc;
}

/* Reads dir/checkpoint.bin and checks it against the config; writes nothing. */
static int read_checkpoint_for(const run *r, const char *dir, sp_checkpoint *ck) {
    const sp_config *cfg = r->cfg;
    char *p = sp_path_join(dir, "checkpoint.bin");
    if (!sp_file_exists(p)) {
        sp_error("%s: no checkpoint.bin to resume from (the run saved none); train it again, replacing it (train "
                 "options: force), or into another output.run_dir", dir);
        free(p);
        return -1;
    }
    int rc = sp_checkpoint_read(p, ck);
    if (rc == 0 && ck->g.sh_degree != cfg->trainer.sh_degree)
        rc = sp_error("%s: the checkpoint has SH degree %d but the config asks for trainer.sh_degree = %d", p,
                      ck->g.sh_degree, cfg->trainer.sh_degree);
    else if (rc == 0 && ck->dataset && strcmp(ck->dataset, cfg->data.path) && sp_dir_exists(ck->dataset))
        rc = sp_error("%s: the checkpoint was trained on %s, but data.path is %s; resume it with data.path = \"%s\" "
                      "(a dataset that moved: the recorded folder no longer exists, and the new data.path is used)",
                      p, ck->dataset, cfg->data.path, ck->dataset);
    else if (rc == 0 && (ck->step < 0 || ck->step > cfg->trainer.max_steps))
        rc = sp_error("%s: the checkpoint is at step %d, outside [0, trainer.max_steps = %d]%s", p, ck->step,
                      cfg->trainer.max_steps, ck->step > 0 ? " (raise trainer.max_steps to continue it)" : "");
    free(p);
    if (rc) sp_checkpoint_free(ck);
    return rc;
}

/* Hands the checkpoint's parameters, step, curves and clocks to the run (ck is emptied). */
static int resume_from(run *r, sp_checkpoint *ck) {
    if (r->b->ops->set_gaussians(r->b, &ck->g, &ck->m, &ck->v)) return -1;
    r->step = ck->step;
    r->saved_step = ck->step;
    r->train_seconds = r->train_seconds0 = ck->train_seconds;
    r->total_seconds0 = ck->total_seconds;
    for (int k = 0; k < SP_CURVES; k++) {
        r->curves[k] = ck->curves[k];
        memset(&ck->curves[k], 0, sizeof ck->curves[k]);
    }
    r->eval_seconds = ck->eval_seconds;
    memset(&ck->eval_seconds, 0, sizeof ck->eval_seconds);
    if (isnan(r->total_seconds0))
        SP_INFO("the checkpoint (of an earlier splat, or of a run resumed from one) does not record the wall time "
                "of the earlier sessions%s: result.toml will say what is unknown",
                r->curves[SP_CURVE_PSNR].n ? " nor when its evaluations happened" : "");
    double s_unused;
    if (!sp_report_target(&r->curves[SP_CURVE_PSNR], NULL, r->cfg->trainer.target_psnr, &r->target_step, &s_unused))
        r->target_step = 0;
    SP_INFO("resuming %s at step %d with %d Gaussians", r->dir, ck->step, ck->g.n);
    return 0;
}

/* 1 if dir/result.toml records a complete run. */
static int run_complete(const char *dir) {
    char *p = sp_path_join(dir, "result.toml"), *text = NULL;
    int done = sp_file_exists(p) && sp_read_file(p, &text, NULL) == 0 && strstr(text, "status = \"complete\"");
    free(text);
    free(p);
    return done;
}

static sp_split *eval_split_for_curve(run *r) {
    const char *s = r->cfg->data.eval_split;
    if (!strcmp(s, "val") && r->data.val.n) return &r->data.val;
    if (r->data.test.n) return &r->data.test;
    if (r->data.val.n) return &r->data.val;
    return NULL;
}

static int cancelled(const sp_train_opts *o);
static int run_cancelled(void *user) { return cancelled(((run *)user)->o); }

/* Scores one split (nothing to do when it is empty), renders under renders/<name>/. Returns 1 when
 * a cancel stopped it (Ctrl-C: the run's save is not kept waiting for the rest of the views). */
static int eval_one(run *r, const sp_split *split, const char *name, int deg, const float bg[3], sp_eval_result *e) {
    if (!split->n) return 0;
    if (held_out_wait(r)) return -1;
    char *dir = NULL;
    if (r->cfg->output.save_renders) {
        char *sub = sp_strfmt("renders/%s", name);
        dir = run_path(r, sub);
        free(sub);
    }
    sp_eval_cancel cancel = {run_cancelled, r};
    int rc = sp_eval_views_cancel(r->b, split, r->alpha, deg, bg, dir, &cancel, e);
    free(dir);
    if (rc == 0)
        SP_INFO("%s: PSNR %.3f dB, SSIM %.4f over %d views (%.1f s)", name, e->mean_psnr, e->mean_ssim, e->n,
                e->seconds);
    return rc;
}

/* The final evaluation: 0, -1 on error, 1 when cancelled. */
static int final_eval(run *r) {
    const sp_config *cfg = r->cfg;
    float bg[3];
    eval_background(cfg, bg);
    sp_schedule sc;
    sp_schedule_make(cfg, &sc);
    int deg = sp_schedule_sh_degree(&sc, cfg, r->step);
    const char *which = cfg->data.eval_split;
    int want_test = strcmp(which, "val") != 0 || !r->data.val.n;
    int want_val = strcmp(which, "test") != 0 || !r->data.test.n;
    int rc = want_test ? eval_one(r, &r->data.test, "test", deg, bg, &r->test) : 0;
    if (rc == 0 && want_val) rc = eval_one(r, &r->data.val, "val", deg, bg, &r->val);
    if (rc) return rc;
    r->have_test = want_test && r->data.test.n;
    r->have_val = want_val && r->data.val.n;
    return 0;
}

/* Progress: elapsed is this session's wall time (saves included); speed is the recent speed,
 * smoothed over the last reports and leaving out the first interval (start-up) and intervals
 * with an evaluation or a save in them, so that the ETA settles early; the final report gives
 * the session's mean speed. */
static void report_progress(run *r, const sp_train_opts *o, double loss, int final) {
    if (!o->progress) return;
    const sp_config *cfg = r->cfg;
    double now = sp_now();
    int ds = r->step - r->prog_step;
    double dt = now - r->prog_t;
    if (!final && ds > 0 && dt > 0) {
        int warmup = r->prog_step == r->prog_step0;
        if (!warmup && !r->prog_skip) {
            double sps = ds / dt;
            r->prog_sps = r->prog_sps > 0 ? 0.8 * r->prog_sps + 0.2 * sps : sps;
        }
        r->prog_t = now;
        r->prog_step = r->step;
        r->prog_skip = 0;
    }
    sp_progress p = {0};
    p.step = r->step;
    p.max_steps = cfg->trainer.max_steps;
    p.loss = loss;
    p.num_gaussians = r->b->ops->num_gaussians(r->b);
    p.elapsed_s = now - r->loop_t0;
    double train_s = p.elapsed_s - r->paused_s;
    int done = r->step - r->prog_step0;
    p.steps_per_s = final || r->prog_sps <= 0 ? (train_s > 0 ? done / train_s : 0) : r->prog_sps;
    p.eta_s = !final && r->prog_sps > 0 ? (cfg->trainer.max_steps - r->step) / r->prog_sps : NAN;
    const sp_series *ps = &r->curves[SP_CURVE_PSNR];
    p.psnr = ps->n ? ps->y[ps->n - 1] : NAN;
    p.final = final;
    o->progress(&p, o->user);
    if (!final && o->want_model && o->take_model && o->want_model(o->user)) { /* a live viewer asked */
        sp_gaussians g = {0};
        if (r->b->ops->get_gaussians(r->b, &g, NULL, NULL) == 0) o->take_model(&g, r->step, o->user);
        sp_gaussians_free(&g);
    }
}

/* What a failed run leaves: "the checkpoint of step N in DIR is kept" or that there is none. */
static char *checkpoint_note(const run *r) {
    if (r->saved_step >= 0) return sp_strfmt("the checkpoint of step %d in %s is kept", r->saved_step, r->dir);
    if (r->step <= r->session_step0) return sp_strfmt("no step was trained; no checkpoint was saved in %s", r->dir);
    return sp_strfmt("no checkpoint was saved in %s (trainer.checkpoint_every sets how often one is)", r->dir);
}

/* A point of the PSNR/SSIM curves, with the training time; logs when the target is first reached. */
static void push_eval(run *r, double psnr, double ssim) {
    double secs = train_seconds_now(r);
    sp_series_push(&r->curves[SP_CURVE_PSNR], r->step, psnr);
    sp_series_push(&r->curves[SP_CURVE_SSIM], r->step, ssim);
    sp_series_push(&r->eval_seconds, r->step, secs);
    double target = r->cfg->trainer.target_psnr;
    if (target > 0 && !r->target_step && psnr >= target) {
        r->target_step = r->step;
        SP_INFO("reached the target PSNR %.2f dB at step %d after %.1f s of training (eval PSNR %.2f dB)", target,
                r->step, secs, psnr);
    }
}

static void free_run(run *r) {
    held_out_wait(r); /* before the views it decodes are freed */
    sp_train_stream_free(r->stream); /* before the backend it stages into */
    if (r->b) r->b->ops->destroy(r->b);
    sp_dataset_free(&r->data);
    for (int k = 0; k < SP_CURVES; k++) sp_series_free(&r->curves[k]);
    sp_series_free(&r->eval_seconds);
    sp_eval_result_free(&r->test);
    sp_eval_result_free(&r->val);
    sp_view_sched_free(&r->vsched);
    free(r->dir);
}

static int cancelled(const sp_train_opts *o) { return o->cancel && o->cancel(o->user); }

/* ---- before anything is written ---- */

/* The processes of the run, the run folder's lock, and what the folder holds: the checkpoint to
 * resume (checked against the config, into ck) or, for a fresh run, nothing (unless force).
 * Returns 0 to go on, 1 when a resumed run is already complete (nothing to do), -1 on error. */
static int open_run_folder(run *r, const sp_train_opts *o, sp_checkpoint *ck) {
    const sp_config *cfg = r->cfg;
    /* several processes: this one's place (the program's process settings, splat_set_dist) */
    if (sp_dist_current(&r->dist)) return -1;
    if (r->dist.world > 1 && cfg->data.cache_mb > 0)
        return sp_error("data.cache_mb = %d in a run of %d processes: streamed images go to one device; use "
                        "data.cache_mb = 0 (images in memory) to train on several GPUs", cfg->data.cache_mb,
                        r->dist.world);
    r->writer = r->dist.rank == 0;
    if (r->dist.world > 1)
        SP_INFO("process %d of %d (local rank %d)%s", r->dist.rank, r->dist.world, r->dist.local_rank,
                r->writer ? ": writes the run folder" : ": trains, writes nothing");
    /* the run folder: locked first (when it exists), so that two trainings never both write it */
    if (r->writer && sp_dir_exists(r->dir) && (r->lock_fd = sp_dir_lock(r->dir)) < 0) return -1;
    if (o->resume_dir) {
        if (!sp_dir_exists(r->dir)) return sp_error("%s: no such run folder to resume", r->dir);
        if (read_checkpoint_for(r, r->dir, ck)) return -1;
        if (ck->step == cfg->trainer.max_steps && run_complete(r->dir)) {
            SP_INFO("%s is already complete at step %d (trainer.max_steps); nothing to do. To train it longer, "
                    "resume it with a higher trainer.max_steps", r->dir, ck->step);
            return 1;
        }
    } else if (r->writer) {
        char *old = existing_run_files(r->dir);
        if (old && !o->force) {
            sp_error("%s already holds a run (%s). To replace it, allow overwriting (train options: force); to keep "
                     "it, choose another output.run_dir or experiment.name; to continue it, resume it (train "
                     "options: resume_dir = %s)", r->dir, old, r->dir);
            free(old);
            return -1;
        }
        if (old && o->force && old_run_removable(r->dir)) {
            free(old);
            return -1;
        }
        if (old) SP_INFO("the run in %s (%s) will be replaced (train options: force)", r->dir, old);
        free(old);
        if (sp_file_exists(r->dir)) return sp_error("%s: exists and is not a directory", r->dir);
    }
    return 0;
}

/* In memory (data.cache_mb = 0) the training views are decoded with the dataset, the held-out
 * views (val, test) later (held_out_start): the images' headers are read first, then the training
 * views' pixels (sp_split_load_pixels, as the loader decodes them). Streamed, no pixels now. */
static int load_dataset(run *r) {
    const sp_config *cfg = r->cfg;
    sp_load_opts lo = {.downscale = cfg->data.downscale, .threads = cfg->backend.threads,
                       .load_pixels = 0, .header_only = 1, /* pixels below, or decoded when used */
                       .images = cfg->data.images, .holdout_every = cfg->data.holdout_every,
                       .allow_outside_images = cfg->data.allow_outside_images};
    sp_problems probs = {0};
    double t0 = sp_now();
    int rc = sp_dataset_load(cfg->data.path, cfg->data.format, &lo, &r->data, &probs);
    for (int i = 0; i < probs.n; i++) SP_ERROR("%s", probs.items[i]);
    sp_problems_free(&probs);
    if (rc == 0 && cfg->data.cache_mb == 0 && sp_split_load_pixels(&r->data.train, cfg->backend.threads)) {
        SP_ERROR("%s", sp_last_error());
        rc = -1;
    }
    if (rc) return sp_error("cannot load the dataset %s", cfg->data.path);
    int later = cfg->data.cache_mb == 0 && r->data.val.n + r->data.test.n > 0;
    SP_INFO("loaded %s (%s): %d train, %d val, %d test views of %dx%d in %.1f s%s; scene extent %.3f",
            cfg->data.path, r->data.format, r->data.train.n, r->data.val.n, r->data.test.n,
            r->data.train.views[0].cam.width, r->data.train.views[0].cam.height, sp_now() - t0,
            later ? " (the held-out views' pixels follow)" : "", r->data.extent);
    return 0;
}

static void *decode_held_out(void *arg) {
    run *r = arg;
    int rc = sp_split_load_pixels(&r->data.val, r->cfg->backend.threads);
    if (rc == 0) rc = sp_split_load_pixels(&r->data.test, r->cfg->backend.threads);
    if (rc) snprintf(r->held_out_err, sizeof r->held_out_err, "%s", sp_last_error());
    r->held_out_rc = rc;
    return NULL;
}

/* In memory, the held-out views' pixels: on a thread while the run trains when a GPU trains it
 * (the host's cores are free then), else now, before training. */
static int held_out_start(run *r) {
    if (r->cfg->data.cache_mb != 0 || r->data.val.n + r->data.test.n == 0) return 0;
    if (strcmp(r->b->ops->name, "cpu") != 0 && pthread_create(&r->held_out, NULL, decode_held_out, r) == 0) {
        r->held_out_started = 1;
        return 0;
    }
    decode_held_out(r);
    return r->held_out_rc ? sp_error("%s", r->held_out_err) : 0;
}

/* Waits for the held-out views' pixels (an evaluation needs them); their error, naming the file. */
static int held_out_wait(run *r) {
    if (r->held_out_started) {
        pthread_join(r->held_out, NULL);
        r->held_out_started = 0;
        if (r->held_out_rc) return sp_error("%s", r->held_out_err);
    }
    return 0;
}

/* The backend is made while the dataset loads (a GPU's context and buffers take about as long as
 * reading the images): on a thread of its own, which logs into the run's log as the caller does
 * and hands back its error. Only a single device in a single process: replicas set up NCCL with
 * other processes and devices, and a device other than the first (the device a thread selects is
 * its own): those stay on the run's thread. */
typedef struct {
    const char *kind;
    sp_backend_config bc;
    sp_log_sink *sink;
    pthread_t thread;
    int started;
    sp_backend *b;
    char err[2048];
} backend_maker;

static void *make_backend(void *arg) {
    backend_maker *m = arg;
    sp_log_use(m->sink);
    m->b = sp_backend_create(m->kind, &m->bc);
    if (!m->b) snprintf(m->err, sizeof m->err, "%s", sp_last_error());
    sp_log_use(NULL);
    return NULL;
}

/* The backend's configuration; starts making it when it can be made beside the dataset's loading
 * (m->started says). */
static int start_backend(run *r, backend_maker *m) {
    const sp_config *cfg = r->cfg;
    memset(m, 0, sizeof *m);
    m->bc = (sp_backend_config){.threads = cfg->backend.threads, .deterministic = cfg->backend.deterministic,
                                .profile = cfg->backend.profile, .device = 0,
                                .cas_atomics = cfg->backend.cas_atomics, .split_update = cfg->backend.split_update,
                                .moments16 = sp_config_moments16(cfg), .reduce_chunks = cfg->backend.reduce_chunks,
                                .antialias = cfg->render.antialias};
    if (sp_dist_backend_config(&m->bc, cfg->backend.devices, cfg->backend.check_replicas, &r->dist)) return -1;
    m->kind = cfg->backend.kind;
    if (m->bc.num_devices > 1 || r->dist.world > 1 || m->bc.device != 0) return 0;
    m->sink = sp_log_use(NULL);
    sp_log_use(m->sink);
    m->started = pthread_create(&m->thread, NULL, make_backend, m) == 0;
    return 0;
}

/* The backend into r->b: the started one (its error when it failed), else made now on this thread. */
static int join_backend(run *r, backend_maker *m) {
    if (!m->started) return (r->b = sp_backend_create(m->kind, &m->bc)) ? 0 : -1;
    pthread_join(m->thread, NULL);
    m->started = 0;
    r->b = m->b;
    return r->b ? 0 : sp_error("%s", m->err);
}

/* After the backend (join_backend): the refine strategy (and the automatic budget) and the step
 * schedules. cfg: the run's own copy. */
static int open_backend(run *r, sp_config *cfg) {
    SP_INFO("backend: %s, Adam moments %s%s", r->b->ops->name, r->b->cfg.moments16 ? "16-bit" : "float",
            strcmp(cfg->adam.moments16, "auto") ? "" : " (adam.moments16 = auto)");
    r->replicated = r->b->cfg.num_devices > 1 || r->dist.world > 1;
    if (!(r->strat = sp_strategy_setup(cfg, r->b, &r->data, r->replicated))) return -1;

    sp_schedule *sched = &r->sched;
    sp_schedule_make(cfg, sched);
    if (r->strat->prepare)
        r->strat->prepare(&(sp_strategy_env){.cfg = cfg, .sched = sched, .b = r->b, .train = &r->data.train,
                                             .extent = r->data.extent});
    if (cfg->trainer.schedule_steps)
        SP_INFO("schedules scaled to %d steps: densify %d-%d, SH degree +1 every %d, opacity reset every %d",
                cfg->trainer.max_steps, sched->refine_start, sched->refine_stop, sched->sh_interval,
                sched->opacity_reset_every);
    else if (sched->refine_stop > cfg->trainer.max_steps && sched->refine_start < cfg->trainer.max_steps)
        sp_log_to_file("densification runs to the last step of this %d-step run (refine.%s = %d); "
                       "trainer.schedule_steps = 20000 would scale the default schedules (written for 20000 steps) to it",
                       cfg->trainer.max_steps, r->strat->stop_key, sched->refine_stop);
    return 0;
}

/* The training views on the backend (or their stream), and the model: the checkpoint's when
 * resuming (ck is emptied), else the initial Gaussians. */
static int load_model(run *r, const sp_train_opts *o, sp_checkpoint *ck) {
    const sp_config *cfg = r->cfg;
    if (!cfg->data.cache_mb && r->b->ops->upload_views(r->b, r->data.train.views, r->data.train.n, r->alpha))
        return -1;
    if (o->resume_dir ? resume_from(r, ck) : init_gaussians(r)) return -1;
    if (cfg->data.cache_mb > 0) {
        sp_stream_opts so = {.cache_mb = cfg->data.cache_mb, .device_cache_mb = cfg->data.device_cache_mb,
                             .decode_threads = cfg->data.decode_threads, .seed = (uint64_t)cfg->experiment.seed,
                             .first_step = r->step + 1, .last_step = cfg->trainer.max_steps};
        r->stream = sp_train_stream_create(&r->data.train, r->b, r->alpha, &so);
        if (!r->stream) return -1;
    }
    return 0;
}

/* ---- writing ---- */

/* The first writes of a run, once every check passed: the old run's files go (force), the
 * folder is made, the log so far (kept in memory until now) goes to log.txt, config.toml (a
 * resumed run's with its first save) and cameras.json (what viewers of the original 3DGS layout
 * read beside point_cloud/). */
static int commit_run(run *r, const sp_train_opts *o, FILE **logf, FILE *early, char **early_buf, size_t *early_n) {
    sp_log_set_file(NULL);
    if (early) fclose(early); /* *early_buf now holds what was logged so far */
    if (sp_mkdir_p(r->dir)) return -1;
    if (r->lock_fd < 0) { /* a fresh folder: locked now; another run may have started in it meanwhile */
        if ((r->lock_fd = sp_dir_lock(r->dir)) < 0) return -1;
        char *old = o->resume_dir || o->force ? NULL : existing_run_files(r->dir);
        if (old) {
            sp_error("%s: another training wrote a run here (%s) while this one was starting; nothing of this one "
                     "was written", r->dir, old);
            free(old);
            return -1;
        }
    }
    if (!o->resume_dir && o->force && remove_old_run(r->dir)) return -1;
    /* temporaries an interrupted save left (this run holds the folder's lock: none is another's) */
    if (sp_remove_temporaries(r->dir)) return -1;
    char *lp = run_path(r, "log.txt");
    *logf = fopen(lp, "a");
    free(lp);
    if (*logf && *early_n) fwrite(*early_buf, 1, *early_n, *logf);
    if (*logf) fflush(*logf);
    sp_log_set_file(*logf);
    int rc = 0;
    if (o->resume_dir) { /* the run's config.toml changes with the first save, with the model it describes */
        r->config_pending = 1;
    } else {
        char *cp = run_path(r, "config.toml");
        rc = sp_config_write(r->cfg, cp);
        free(cp);
    }
    if (rc == 0) {
        char *cj = run_path(r, "cameras.json");
        rc = sp_cameras_json_write(cj, &r->data);
        free(cj);
    }
    return rc;
}

/* ---- the loop ---- */

/* What every step of the loop shares: the view order, the batch plan and its learning-rate
 * factor, what the strategy sees; the clocks start. */
static void start_loop(run *r) {
    const sp_config *cfg = r->cfg;
    sp_view_sched_init(&r->vsched, (uint64_t)cfg->experiment.seed, r->data.train.n);
    r->env = (sp_strategy_env){.cfg = cfg, .sched = &r->sched, .b = r->b, .train = &r->data.train,
                               .extent = r->data.extent};
    r->last_loss = NAN;
    r->loop_t0 = r->prog_t = sp_now();
    r->prog_step0 = r->prog_step = r->step;
    r->session_step0 = r->step;
    r->in_loop = 1;
    /* Batches: one Adam step sums plan.global views (batch x devices x processes); r->step and every
     * schedule count views seen (docs/scale.md). A replicated backend gets every slot of this process,
     * with view -1 past max_steps, so all replicas join each all-reduce. */
    int ndev = r->b->cfg.num_devices > 1 ? r->b->cfg.num_devices : 1, max_steps = cfg->trainer.max_steps;
    sp_batch_plan *plan = &r->plan;
    sp_batch_plan_init(plan, cfg->trainer.batch, ndev, r->dist.world, r->dist.rank);
    r->lr_scale = sp_batch_lr_scale(cfg->trainer.batch_lr, plan->global);
    if (plan->global > 1)
        SP_INFO("batch of %d views per Adam step (%d per device, %d device%s, %d process%s): %d Adam steps, "
                "learning rates x %.3f", plan->global, plan->batch, ndev, ndev == 1 ? "" : "s", plan->world,
                plan->world == 1 ? "" : "es", sp_batch_adam_steps(max_steps, plan->global), r->lr_scale);
}

/* The arguments of the Adam step that ends at views-seen index `step`. */
static void step_args(run *r, int step, sp_step_args *a) {
    const sp_config *cfg = r->cfg;
    memset(a, 0, sizeof *a);
    a->ssim_weight = (float)cfg->loss.ssim_weight;
    a->adam_step = sp_batch_adam_steps(step, r->plan.global);
    a->beta1 = (float)cfg->adam.beta1;
    a->beta2 = (float)cfg->adam.beta2;
    a->eps = (float)cfg->adam.eps;
    a->adam_sparse = cfg->adam.sparse;
    a->lr = (sp_lrs){means_lr(cfg, step, r->data.extent), (float)cfg->adam.scales_lr, (float)cfg->adam.quats_lr,
                     (float)cfg->adam.opacity_lr, (float)cfg->adam.sh_dc_lr, (float)cfg->adam.sh_rest_lr};
    float *lrs[6] = {&a->lr.means, &a->lr.log_scales, &a->lr.quats, &a->lr.opacity, &a->lr.sh_dc, &a->lr.sh_rest};
    for (int k = 0; k < 6; k++) *lrs[k] = (float)(*lrs[k] * r->lr_scale);
    if (r->strat->step_args) r->strat->step_args(&r->env, step, a);
}

/* This process's views of views-seen indices prev+1 .. step, the last of them with the Adam step:
 * every slot when replicated (view -1 past max_steps), else the slots up to max_steps. */
static int train_views(run *r, int prev, int step, sp_step_args *a) {
    const sp_config *cfg = r->cfg;
    int calls = r->replicated ? r->plan.local : step - prev;
    for (int j = 0; j < calls; j++) {
        int s = prev + sp_batch_slot(&r->plan, j) + 1; /* views-seen index of this slot */
        int real = s <= cfg->trainer.max_steps;
        a->view = -1;
        if (real && r->stream) {
            if (sp_train_stream_step(r->stream, s, a)) return -1;
        } else if (real) {
            a->view = sp_view_sched_at(&r->vsched, s);
        }
        a->sh_degree = sp_schedule_sh_degree(&r->sched, cfg, real ? s : step);
        background_for_step(cfg, s, a->bg);
        a->collect_stats = real && r->strat->collects_stats(&r->env, s);
        a->accumulate = j < calls - 1;
        if (r->b->ops->train_step(r->b, a)) return -1;
        if (r->stream && real) sp_train_stream_ahead(r->stream, s + 1);
    }
    return 0;
}

/* Reads the loss back (log: also a curve point, after checking that the loss and the parameters
 * are finite). Returns -1 when the run diverged (logged). */
static int read_loss(run *r, int step, int log) {
    double mean;
    int n;
    /* at a logged step the parameters are checked first: a backend that leaves running steps to a
     * later take_loss has finished them all then, so the curve point counts every step */
    int finite = !log || r->b->ops->params_finite(r->b);
    r->b->ops->take_loss(r->b, &mean, &n);
    if (n > 0 && isfinite(mean)) r->last_loss = mean;
    r->loss_sum += mean * n;
    r->loss_n += n;
    if (!log) return 0;
    mean = r->loss_n ? r->loss_sum / r->loss_n : NAN;
    r->loss_sum = 0;
    r->loss_n = 0;
    if (!isfinite(mean) || !finite) {
        char *kept = checkpoint_note(r);
        SP_ERROR("training diverged at step %d: %s is not finite; %s", step,
                 isfinite(mean) ? "a parameter" : "the loss", kept);
        free(kept);
        return -1;
    }
    int ng = r->b->ops->num_gaussians(r->b);
    sp_series_push(&r->curves[SP_CURVE_LOSS], step, mean);
    sp_series_push(&r->curves[SP_CURVE_GAUSSIANS], step, ng);
    sp_log_to_file("step %d loss %.5f, %d Gaussians", step, mean, ng);
    return 0;
}

/* trainer.eval_every: a point of the PSNR curve (the time it takes is not training time). */
static int periodic_eval(run *r, int step) {
    sp_split *es = eval_split_for_curve(r);
    if (!es) return 0;
    float bg[3];
    eval_background(r->cfg, bg);
    sp_eval_result er;
    double t0 = sp_now();
    if (held_out_wait(r)) return -1; /* the views' pixels (decoded on a thread while it trains) */
    if (sp_eval_views(r->b, es, r->alpha, sp_schedule_sh_degree(&r->sched, r->cfg, step), bg, NULL, &er)) return -1;
    r->paused_s += sp_now() - t0;
    SP_INFO("step %d: eval PSNR %.3f dB, SSIM %.4f (%d Gaussians)", step, er.mean_psnr, er.mean_ssim,
            r->b->ops->num_gaussians(r->b));
    push_eval(r, er.mean_psnr, er.mean_ssim);
    sp_eval_result_free(&er);
    r->prog_skip = 1; /* not a training speed */
    return 0;
}

/* trainer.save_every, trainer.checkpoint_every (saving time is not training time). */
static int periodic_save(run *r) {
    double t0 = sp_now();
    if (save_state(r, "running", 1)) return -1;
    r->paused_s += sp_now() - t0;
    r->prog_skip = 1;
    return 0;
}

/* refine.reorder: after the Adam step of views prev+1 .. step, if a refine of the strategy ran in
 * it (adc's densify, mcmc's relocation and growth: both append or move Gaussians wherever their
 * sources lie), the backend puts the Gaussians in Morton order of their means. */
static int reorder_after_refine(run *r, int prev, int step) {
    if (!r->cfg->refine.reorder || !r->b->ops->reorder ||
        !sp_strategy_last_due(&r->sched, prev, step, sp_schedule_refine_due))
        return 0;
    double t0 = sp_now();
    if (r->b->ops->reorder(r->b)) return -1;
    sp_log_to_file("step %d reorder: %d Gaussians in Morton order (%.1f ms)", step, r->b->ops->num_gaussians(r->b),
                   1e3 * (sp_now() - t0));
    return 0;
}

/* Trains until max_steps or a cancel (*stopped). Returns 0, 1 when the run diverged, -1 on error. */
static int train_loop(run *r, const sp_train_opts *o, int *stopped) {
    const sp_config *cfg = r->cfg;
    int max_steps = cfg->trainer.max_steps;
    while (r->step < max_steps && !(*stopped = cancelled(o))) {
        int prev = r->step, step = prev + r->plan.global < max_steps ? prev + r->plan.global : max_steps;
        sp_step_args a;
        step_args(r, step, &a);
        if (train_views(r, prev, step, &a)) return -1;
        r->step = step;
        if (r->strat->refine(&r->env, prev, step) || reorder_after_refine(r, prev, step)) return -1;
        int log_now = sp_batch_crossed(prev, step, cfg->trainer.log_every) || step == max_steps;
        int loss_now = sp_batch_crossed(prev, step, LOSS_EVERY), last = step == max_steps;
        if ((log_now || loss_now) && read_loss(r, step, log_now)) return 1;
        if (r->writer && sp_batch_crossed(prev, step, cfg->trainer.eval_every) && !last && periodic_eval(r, step))
            return -1;
        int save_now = sp_batch_crossed(prev, step, cfg->trainer.save_every) ||
                       sp_batch_crossed(prev, step, cfg->trainer.checkpoint_every);
        if (save_now && !last && periodic_save(r)) return -1;
        if ((log_now || loss_now) && !last) report_progress(r, o, r->last_loss, 0);
    }
    return 0;
}

/* ---- the end ---- */

/* After the loop of a run that did not diverge: the model saved, the final evaluation (unless
 * interrupted), curves.png, the final save. Returns the status, or -1 on error. */
static int finish_run(run *r, int interrupted) {
    if (interrupted) SP_WARN("interrupted at step %d: saving the model and a checkpoint to %s", r->step, r->dir);
    if (interrupted && save_state(r, "interrupted", 1)) return -1;
    if (!interrupted) {
        /* The trained model is read back before the final evaluation (which can take a while, or
         * find the device failing) and its .ply and the checkpoint's stores written on a thread
         * while the evaluation runs; then result.toml and the rest of the checkpoint, with the
         * final scores and curves. Ctrl-C stops the evaluation: the save is kept as interrupted
         * (resuming the run evaluates it). */
        save_job j;
        int saving = r->writer;
        if (saving && save_begin(r, "running", 1, 1, &j)) return -1;
        int erc = final_eval(r);
        char why[2048];
        snprintf(why, sizeof why, "%s", erc < 0 ? sp_last_error() : "");
        if (erc == 0 && (r->have_test || r->have_val)) {
            sp_eval_result *e = r->have_test ? &r->test : &r->val;
            push_eval(r, e->mean_psnr, e->mean_ssim);
        }
        if (saving) {
            save_rest(r, erc == 0 ? "complete" : erc > 0 ? "interrupted" : "running", &j);
            if (save_end(r, &j)) return -1; /* the save's error first, as when it ran alone */
        }
        if (erc < 0) {
            sp_error("%s", why);
            return -1;
        }
        if (erc > 0) {
            SP_WARN("interrupted during the final evaluation at step %d: the model and a checkpoint are saved in %s",
                    r->step, r->dir);
            interrupted = 1;
        }
    }
    if (write_curves_png(r)) SP_WARN("%s", sp_last_error());
    if (r->cfg->backend.profile) {
        sp_profile prof;
        r->b->ops->get_profile(r->b, &prof);
        sp_report_print_profile(stderr, &prof, r->train_seconds - r->train_seconds0); /* this session's */
    }
    if (interrupted) SP_INFO("to continue it, resume it (train options: resume_dir = %s)", r->dir);
    return interrupted ? SP_TRAIN_INTERRUPTED : SP_TRAIN_OK;
}

/* Stopped by an error once training ran (a streamed image gone bad, the device, a full disk):
 * the model trained so far is saved first, as Ctrl-C saves it, when it is finite and newer than
 * the last save; the error says what is kept. */
static void fail_after_commit(run *r) {
    char why[2048];
    snprintf(why, sizeof why, "%s", sp_last_error());
    char *kept = NULL;
    if (r->writer && r->b && !r->save_failed && r->step > r->session_step0 && r->step > r->saved_step &&
        r->b->ops->params_finite(r->b)) {
        if (r->in_loop) {
            r->train_seconds = train_seconds_now(r);
            r->in_loop = 0;
        }
        if (save_state(r, "failed", 0) == 0)
            kept = sp_strfmt("the model and a checkpoint of step %d are saved in %s (resuming continues it: train "
                             "options: resume_dir = %s)", r->step, r->dir, r->dir);
        else
            SP_WARN("saving the model after the error failed too: %s", sp_last_error());
    }
    if (!kept) kept = checkpoint_note(r);
    SP_ERROR("%s; %s", why, kept);
    free(kept);
}

int sp_train(const sp_config *cfg_in, const sp_train_opts *o) {
    run R, *r = &R;
    memset(r, 0, sizeof R);
    /* The dataset path is stored absolute in config.toml: the run folder then works (eval,
     * resume) from any working directory. */
    sp_config *cfg = SP_NEW(sp_config, 1);
    *cfg = *cfg_in;
    {
        char *abs = sp_path_absolute(cfg->data.path);
        if (strlen(abs) < sizeof cfg->data.path) snprintf(cfg->data.path, sizeof cfg->data.path, "%s", abs);
        free(abs);
    }
    r->cfg = cfg;
    r->started = sp_now();
    r->saved_step = -1;
    r->lock_fd = -1;
    r->saved_model = o->model;
    r->o = o;
    if (o->model) memset(o->model, 0, sizeof *o->model);
    r->dir = o->resume_dir ? sp_strdup(o->resume_dir) : sp_train_run_dir(cfg);
    r->alpha = !strcmp(cfg->data.alpha, "premultiplied") ? SP_ALPHA_PREMULTIPLIED : SP_ALPHA_STRAIGHT;
    int status = SP_TRAIN_FAILED, committed = 0, stopped = 0, rc;
    FILE *logf = NULL;
    sp_checkpoint ck;
    memset(&ck, 0, sizeof ck);
    /* Until the commit, the log is kept in memory: a run that fails its checks writes nothing. */
    char *early_buf = NULL;
    size_t early_n = 0;
    FILE *early = open_memstream(&early_buf, &early_n);
    sp_log_set_file(early);

    SP_INFO("splat %s (%s): run folder %s", sp_version(), sp_commit(), r->dir);
    if ((rc = open_run_folder(r, o, &ck)) != 0) {
        if (rc < 0) goto fail;
        status = SP_TRAIN_OK; /* already complete */
        goto out;
    }
    double t_data = sp_now(), t_backend = 0, t_model = 0;
    backend_maker maker;
    if (start_backend(r, &maker)) goto fail;
    int beside = maker.started;
    if (load_dataset(r)) {
        char why[2048];
        snprintf(why, sizeof why, "%s", sp_last_error());
        if (maker.started) join_backend(r, &maker); /* a started one is freed with the run */
        sp_error("%s", why);
        goto fail;
    }
    t_backend = sp_now();
    if (join_backend(r, &maker)) goto fail;
    if (open_backend(r, cfg)) goto fail;
    t_model = sp_now();
    if (held_out_start(r)) {
        sp_error("%s; cannot load the dataset %s", sp_last_error(), cfg->data.path);
        goto fail;
    }
    if (load_model(r, o, &ck)) goto fail;
    SP_INFO("ready to train in %.2f s: dataset %.2f s, backend %.2f s%s, views and model %.2f s",
            sp_now() - r->started, t_backend - t_data, t_model - t_backend, beside ? " more (made beside it)" : "",
            sp_now() - t_model);
    sp_checkpoint_free(&ck);
    r->session_step0 = r->step;
    if (cancelled(o)) {
        SP_WARN("interrupted before training started; nothing was written to %s", r->dir);
        status = SP_TRAIN_INTERRUPTED;
        goto out;
    }
    committed = 1;
    if (r->writer) {
        rc = commit_run(r, o, &logf, early, &early_buf, &early_n);
    } else { /* other ranks: the log goes to stderr only */
        sp_log_set_file(NULL);
        fclose(early);
        rc = 0;
    }
    early = NULL;
    if (rc) goto fail;

    start_loop(r);
    /* refine.reorder: a new model starts in Morton order too (a resumed one keeps the order it was
     * saved in, so that it continues as the run would have); on the loop's clock, as the profile
     * counts it among the refines */
    if (!o->resume_dir && cfg->refine.reorder && r->b->ops->reorder && r->b->ops->reorder(r->b)) goto fail;
    rc = train_loop(r, o, &stopped);
    if (rc < 0) goto fail;
    r->train_seconds = train_seconds_now(r);
    r->in_loop = 0;
    report_progress(r, o, r->last_loss, 1);
    if (r->stream) sp_train_stream_log(r->stream);
    int diverged = rc > 0, interrupted = stopped && r->step < cfg->trainer.max_steps;
    if (!r->writer) { /* other ranks write nothing */
        status = diverged ? SP_TRAIN_FAILED : interrupted ? SP_TRAIN_INTERRUPTED : SP_TRAIN_OK;
    } else if (diverged) { /* the parameters are not finite: the last save (if any) stays as it is */
        write_result_if_none(r, "diverged");
        status = SP_TRAIN_FAILED;
    } else if ((status = finish_run(r, interrupted)) < 0) {
        goto fail;
    }
    goto out;

fail:
    if (!committed) {
        SP_ERROR("%s", sp_last_error());
        if (o->resume_dir || sp_dir_exists(r->dir)) SP_INFO("nothing was changed in %s", r->dir);
    } else {
        fail_after_commit(r);
    }
    status = SP_TRAIN_FAILED;
out:
    sp_checkpoint_free(&ck);
    sp_dir_unlock(r->lock_fd);
    free_run(r);
    sp_log_set_file(NULL);
    if (early) fclose(early);
    free(early_buf);
    if (logf) fclose(logf);
    free(cfg);
    return status;
}
