/* api_internal.h — the context behind include/splat.h, shared by the files of src/api/.
 *
 * Every entry point brackets its work with api_enter() / api_leave(): enter takes the context's
 * lock, makes the context's log sink and process placement the calling thread's current ones,
 * sets the library's floating-point mode and clears the thread's error; leave copies the error
 * (sp_error is thread-local) into the context, gives the thread back its sink, placement and
 * floating-point mode and releases the lock. */
#ifndef SPLAT_API_INTERNAL_H
#define SPLAT_API_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "backend/backend.h"
#include "backend/dist.h"
#include "core/core.h"
#include "scene/dataset.h"
#include "scene/gaussians.h"
#include "splat.h"
#include "train/chain.h"
#include "train/config.h"

#define SPLAT_ERRMSG_MAX 8192

struct splat_context {
    pthread_mutex_t lock;
    sp_config cfg;
    sp_log_sink sink;
    splat_log_fn log_fn;
    void *log_user;
    sp_log_sink *saved_sink; /* the caller thread's sink during a call */
    sp_dist dist;            /* splat_set_dist: this process among several */
    const sp_dist *saved_dist; /* the caller thread's placement during a call */
    sp_fp_mode saved_fp;     /* the caller thread's floating-point mode during a call */
    char err[SPLAT_ERRMSG_MAX]; /* message of the last call ("" after a success), of any thread */
    char *last_logged_error; /* the last error-level message of the current call */
    atomic_int cancel;       /* splat_cancel() */
    /* the model, and a backend holding it for rendering (created on first use) */
    int have_model;
    sp_gaussians g;
    sp_backend *b;
    int render_sh_limit; /* splat_set_render_sh_degree: max degree + 1, 0 = the model's */
    char *run_dir;
    /* the configured dataset's cameras (no pixels), loaded on first use */
    int have_cams;
    sp_dataset cams;
    /* splat_evaluate's result, kept for the pointers it hands out */
    int eval_n, eval_gaussians;
    double eval_seconds;
    char eval_split[8];
    char **eval_names;
    double *eval_psnr, *eval_ssim;
    /* splat_chain_load's chain, or NULL */
    sp_chain *chain;
};

/* -1 (nothing taken; the thread's message says why) for a call on a context from inside one of
 * its own callbacks on the same thread, which would otherwise wait for itself forever. */
int api_enter(splat_context *ctx);
/* Ends a call: status SPLAT_OK clears the context's message, any other keeps the thread's
 * sp_error message (or `fallback` if there is none). Returns status. */
splat_status api_leave(splat_context *ctx, splat_status status);
/* Sets the thread's error and returns status (for checks made at the API boundary). */
splat_status api_fail(splat_status status, const char *fmt, ...) SP_PRINTF(2, 3);
/* SPLAT_NOMEM for "out of memory" messages, else `otherwise`. */
splat_status api_status_for_error(splat_status otherwise);
/* Drops the backend (the model or the backend settings changed). */
void api_drop_backend(splat_context *ctx);
/* Drops the cached dataset cameras (the configuration changed). */
void api_drop_cameras(splat_context *ctx);
/* Replaces the model with g (taken over; g is emptied). */
void api_set_model(splat_context *ctx, sp_gaussians *g);
/* Every problem, one per line, as the thread's message; SPLAT_INVALID (SPLAT_OK without any).
 * Frees the list. */
splat_status api_problems_status(sp_problems *p);
/* The configuration changed: drops what was made from it (the backend, the cached cameras). */
splat_status api_config_changed(splat_context *ctx, splat_status st);
/* A string of at most n bytes with its NUL into buf; SPLAT_INVALID naming `what` otherwise. */
splat_status api_copy_out(const char *what, const char *text, char *buf, size_t n, size_t *needed);
/* The configured dataset (pixels only when asked); problems become the thread's error. */
int api_load_dataset(const sp_config *c, int pixels, sp_dataset *d);
/* The configured dataset's cameras, loaded once per configuration. */
splat_status api_cameras(splat_context *ctx, sp_dataset **d);
/* Frees the context's chain. */
void api_drop_chain(splat_context *ctx);

#endif
