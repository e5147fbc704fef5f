/* splat.h — the public C API of splat, a 3D Gaussian Splatting trainer.
 *
 * Everything goes through a context (splat_context), an opaque handle that holds a training
 * configuration, at most one model (a set of Gaussians), a log callback and the message of the
 * last failed call. A program may open any number of contexts and use them from different
 * threads at the same time: contexts share no state. Calls on one context are serialized (a
 * second thread calling into a context that is busy waits), except splat_cancel(), which never
 * waits and may be called from any thread (or a signal handler) to stop a training run.
 *
 * Every call that can fail returns a splat_status; on anything but SPLAT_OK,
 * splat_errmsg(ctx) says what went wrong, naming the file (and line, for text files) it is
 * about. The library never calls exit(), installs no signal handler, takes no setting from the
 * environment, changes no process-wide setting (OpenMP thread count, locale, working directory;
 * the floating-point mode of its CPU work is the calling thread's again when a call returns) and
 * prints nothing: messages go to the context's log callback, or nowhere when none is set.
 *
 * A minimal program (examples/train_and_render.c is a complete one):
 *
 *     splat_context *ctx;
 *     if (splat_open(&ctx) != SPLAT_OK) return 1;           // out of memory
 *     if (splat_config_set(ctx, "data.path=scenes/lego") ||
 *         splat_config_set(ctx, "trainer.max_steps=3000") ||
 *         splat_train(ctx, NULL) ||                          // writes runs/<name>, keeps the model
 *         splat_export(ctx, "lego.spz", NULL))
 *         fprintf(stderr, "%s\n", splat_errmsg(ctx));
 *     splat_close(ctx);
 *
 * Build with `pkg-config --cflags --libs splat` after `make install PREFIX=...`.
 * Conventions (docs/api.md has more): cameras in OpenCV axes (x right, y down, z forward),
 * pixels row-major with the top row first, colours linear in [0, 1] as the training images store
 * them. Strings are UTF-8 paths or text; the library copies what it keeps. Callbacks (log,
 * progress, cancel) run inside a call on the context: a call into the same context from one of
 * them fails with SPLAT_INVALID (it does not wait). */
#ifndef SPLAT_PUBLIC_H
#define SPLAT_PUBLIC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Versions. SPLAT_API_VERSION counts changes of this header: 1 was the first; 2 added what the
 * declarations below mark "(API 2)" (process settings, typed configuration, several processes,
 * checks before training, dataset images, PNG renders, synth options, benchmark chains), with
 * every earlier declaration unchanged, so a program built against API 1 runs with this library.
 * The library's version follows it (0.1 had API 1, 0.2 has API 2); splat_version() and
 * splat_version_number() say which library a program runs with, which with a shared library may
 * differ from the header it was compiled against. */
#define SPLAT_API_VERSION 2
#define SPLAT_VERSION_MAJOR 0
#define SPLAT_VERSION_MINOR 2
#define SPLAT_VERSION_PATCH 0
#define SPLAT_VERSION_STRING "0.2.0"
/* MAJOR * 10000 + MINOR * 100 + PATCH: 200 for 0.2.0 */
#define SPLAT_VERSION_NUMBER (SPLAT_VERSION_MAJOR * 10000 + SPLAT_VERSION_MINOR * 100 + SPLAT_VERSION_PATCH)

/* ---- status and context ---- */

typedef enum {
    SPLAT_OK = 0,
    SPLAT_ERROR = 1,     /* the call failed (a file, a dataset, the backend): see splat_errmsg */
    SPLAT_INVALID = 2,   /* bad arguments or configuration; nothing was done */
    SPLAT_NO_MODEL = 3,  /* the call needs a model: load or train one first */
    SPLAT_CANCELLED = 4, /* splat_cancel() or the cancel callback stopped the call */
    SPLAT_NOMEM = 5      /* out of memory (the message says for what, and what to lower) */
} splat_status;

typedef struct splat_context splat_context;

/* Opens a context with the default configuration (docs/config.md) and no model. *ctx is NULL
 * when the memory for it is not there (SPLAT_NOMEM). */
splat_status splat_open(splat_context **ctx);
/* Frees the context and everything it holds. NULL is a no-op. Must not be called while another
 * thread is inside a call on the same context. */
void splat_close(splat_context *ctx);
/* The message of the calling thread's last call on ctx ("" after a success): threads sharing a
 * context each read their own. Valid until this thread's next call on ctx. Never NULL (a NULL ctx
 * gives a fixed message). */
const char *splat_errmsg(const splat_context *ctx);
/* "splat_status" as a word: "ok", "error", "invalid", "no model", "cancelled", "out of memory". */
const char *splat_status_name(splat_status s);
/* The running library's version (SPLAT_VERSION_STRING when it was built, "0.2.0") and the commit
 * it was built from. */
const char *splat_version(void);
const char *splat_commit(void);
/* The running library's SPLAT_VERSION_NUMBER (200 for 0.2.0): a program compiled against a newer
 * header checks it before using calls the library it runs with may lack. (API 2) */
int splat_version_number(void);

/* ---- the program's settings ----
 * Two settings concern the whole process, not a context: they are the program's, to be set once
 * before other threads call into the library. The library changes no process-wide state itself;
 * in particular the floating-point mode its CPU work runs in (denormals flushed to zero on x86)
 * is set for the duration of each call only: the calling thread has its own mode back when the
 * call returns (the OpenMP worker threads of the CPU backend keep theirs). */

/* Called with the size asked for when one of the library's small bookkeeping allocations (names,
 * paths, messages: sizes that do not grow with the data) fails. The library cannot go on then,
 * so the handler must not return: it ends the process (the splat CLI prints a message and exits
 * with status 2); if it returns, the library calls abort(). Allocations whose size comes from the
 * data (models, images, datasets, backend buffers) never come here: the call fails with
 * SPLAT_NOMEM and a message saying what to lower. fn NULL: the default, a message on stderr and
 * abort(). (API 2) */
typedef void (*splat_oom_fn)(void *user, size_t bytes);
void splat_set_oom_handler(splat_oom_fn fn, void *user);
/* For testing a program's out-of-memory paths: every allocation whose size comes from the data
 * and exceeds `bytes` fails as if memory ran out (the call returns SPLAT_NOMEM); 0, the default,
 * means no limit. (API 2) */
void splat_set_alloc_limit(size_t bytes);

/* ---- logging ---- */

typedef enum { SPLAT_LOG_DEBUG = 0, SPLAT_LOG_INFO = 1, SPLAT_LOG_WARN = 2, SPLAT_LOG_ERROR = 3 } splat_log_level;
/* One message, formatted, without a trailing newline; called on the thread that made the call. */
typedef void (*splat_log_fn)(void *user, splat_log_level level, const char *message);
/* Messages at min_level and above go to fn(user, ...). fn NULL: messages are dropped (the
 * default). A training run also writes its own log.txt into the run folder. */
splat_status splat_set_log(splat_context *ctx, splat_log_fn fn, void *user, splat_log_level min_level);

/* ---- configuration ----
 * The training configuration: the keys of docs/config.md, sections [experiment], [data], [init],
 * [output], [trainer], [loss], [refine], [adam], [backend]. Changes are layered over what is
 * there. A call that finds a problem (syntax, unknown key, wrong type, out-of-range value) fails
 * with SPLAT_INVALID and every problem in the message, one per line ("FILE:LINE: ..."); the
 * valid keys of a file or string are still applied, a failed splat_config_set changes nothing. */

/* Back to the defaults. */
splat_status splat_config_reset(splat_context *ctx);
/* Applies a TOML file. */
splat_status splat_config_load_file(splat_context *ctx, const char *path);
/* Applies TOML text; name stands for the file in messages (NULL: "<string>"). */
splat_status splat_config_load_string(splat_context *ctx, const char *toml, const char *name);
/* Applies one "section.key=value" (as `splat train --set`): a TOML value, strings unquoted or
 * quoted, e.g. "trainer.max_steps=7000", "data.path=/data/lego". */
splat_status splat_config_set(splat_context *ctx, const char *assignment);
/* The value of "section.key" as TOML text (strings quoted) into buf (size n, NUL-terminated);
 * SPLAT_INVALID for an unknown key or a buffer too small. */
splat_status splat_config_get(splat_context *ctx, const char *key, char *buf, size_t n);
/* Checks what training needs of the whole configuration (data.path is set, init.count fits
 * refine.capacity); SPLAT_INVALID with every problem otherwise. splat_train checks the same. */
splat_status splat_config_check(splat_context *ctx);
/* Writes the whole resolved configuration (every key, with its meaning) as TOML, atomically. */
splat_status splat_config_save(splat_context *ctx, const char *path);
/* The text splat_config_save writes, into buf (size n, NUL-terminated). *needed (may be NULL)
 * receives its size with the NUL; a smaller n gives SPLAT_INVALID, so a call with buf NULL and
 * n 0 asks for the size. (API 2) */
splat_status splat_config_text(splat_context *ctx, char *buf, size_t n, size_t *needed);

/* Typed access to one "section.key" (docs/config.md gives each key's type): SPLAT_INVALID for an
 * unknown key or one of another type (an integer key may be read as a double). (API 2) */
splat_status splat_config_get_int(splat_context *ctx, const char *key, int *value);
splat_status splat_config_get_double(splat_context *ctx, const char *key, double *value);
splat_status splat_config_get_bool(splat_context *ctx, const char *key, int *value);
/* A string key's value, unquoted, into buf (size n, NUL-terminated; SPLAT_INVALID if it does
 * not fit). */
splat_status splat_config_get_string(splat_context *ctx, const char *key, char *buf, size_t n);
/* Sets a string key to value exactly as given, without TOML quoting (key "data.path", value
 * /my scans/lego); checked as splat_config_set checks it. (API 2) */
splat_status splat_config_set_string(splat_context *ctx, const char *key, const char *value);

/* Replaces the settings that training resolves once the backend is known by what it resolves
 * them to, as splat_train will (no backend is started): refine.strategy "auto" becomes "mcmc"
 * when backend.kind has MCMC densification and trains on one device (backend.devices, and no
 * other process: splat_set_dist), else "adc"; init.opacity and init.scale_factor 0 become the
 * strategy's. SPLAT_INVALID when the resolved mcmc cannot start (init.method "random" larger
 * than refine.max_gaussians; "auto" initializes at random only from a dataset without sparse
 * points, which splat_train_plan and splat_train check); the strategy is resolved all the
 * same. (API 2) */
splat_status splat_config_resolve(splat_context *ctx);
/* What differs between the configuration of a run (its config.toml at path) and the context's,
 * in the keys that change what training computes (output.*, experiment.name, logging, threads
 * and the like are left out, and so is backend.kind when the context says "auto"; data.path is
 * compared resolved): "trainer.max_steps = 60 (the run has 30), ..." into buf, "" when nothing
 * differs. *needed as for splat_config_text. SPLAT_ERROR with the file's problems when it does
 * not load. (API 2) */
splat_status splat_config_diff(splat_context *ctx, const char *path, char *buf, size_t n, size_t *needed);

/* ---- training ---- */

typedef struct {
    int step, max_steps;
    double loss;          /* mean training loss of the last few steps (NaN before the first) */
    int num_gaussians;
    double steps_per_s;   /* recent smoothed speed; the session's mean in the final report */
    double elapsed_s;     /* wall time of this session's loop, saves included */
    double eta_s;         /* the remaining steps at the recent speed, NaN until it is known; it does not
                             foresee the slower steps of a growing Gaussian count (splat_train_plan
                             says how the count grows; the splat CLI's ETA uses it) */
    double psnr;          /* latest evaluation PSNR in dB (NaN before the first) */
    int final;            /* 1 on the last call of a run */
} splat_progress;

typedef void (*splat_progress_fn)(void *user, const splat_progress *p);
/* Polled between steps: non-zero stops the run cleanly (model and checkpoint are saved). */
typedef int (*splat_cancel_fn)(void *user);

typedef struct {
    /* NULL: a fresh run into output.run_dir (default runs/<experiment.name>). A run folder:
     * continues that run from its checkpoint.bin with the context's configuration, which is not
     * read from the folder: load the run's config.toml into the context first
     * (splat_config_load_file), then set what changes, e.g. trainer.max_steps to train longer (as
     * `splat train --resume` does). The checkpoint must match it (SH degree, dataset, a step
     * within trainer.max_steps); the first save writes it as the run's config.toml. */
    const char *resume_dir;
    /* A fresh run into a folder that already holds a run fails unless force is non-zero; then
     * the old run's files are replaced (only those). */
    int force;
    splat_progress_fn progress; /* NULL: none; called on the training thread */
    splat_cancel_fn cancel;     /* NULL: only splat_cancel() stops the run */
    void *user;                 /* passed to progress, cancel and want_model */
    /* Live view (a viewer showing the model while it trains; docs/view.md). When live_model is a
     * context and want_model(user) returns non-zero (polled with each progress report, every few
     * steps), the trainer copies its current model into live_model between two steps, replacing
     * live_model's model as splat_load_model would. Nothing is copied unless asked, and a
     * live_model busy in another call is skipped that time: training never waits for it. */
    splat_context *live_model;
    int (*want_model)(void *user);
} splat_train_opts;

/* Trains with the context's configuration (opts NULL: a fresh run, no callbacks) and writes the
 * run folder (config.toml, log.txt, point_cloud.ply, checkpoint.bin, result.toml, ...; see
 * docs/runs.md). When it returns SPLAT_OK or SPLAT_CANCELLED the trained model is the context's model.
 * Everything that can be checked (dataset, run folder, backend) is checked before anything is
 * written: a run that fails that early leaves an existing run folder unchanged. A run folder that
 * another training (in this process or another) is writing is refused at once. Saves write the
 * model, checkpoint and result.toml of one step together or not at all; an error once training
 * ran saves the model and a checkpoint first. On resume (opts->resume_dir) the context's
 * configuration is used as it is and stays as it was: a context without a data.path fails with
 * SPLAT_INVALID and a message saying to load the run's config.toml. */
splat_status splat_train(splat_context *ctx, const splat_train_opts *opts);
/* Asks the training run in progress on ctx to stop at the next step (never waits; callable from
 * any thread). A cancel that arrives while no run is in progress stops the next one before its
 * first step. The request is consumed when splat_train returns. */
void splat_cancel(splat_context *ctx);
/* The run folder the last splat_train used, or "" (valid until the next call on ctx). */
const char *splat_run_dir(splat_context *ctx);

/* What a training run with the context's configuration will do, as far as it is known before it
 * starts: what an estimate of its duration needs (`splat check` and the progress line of `splat
 * train` make theirs from it and the speed they measure). */
typedef struct {
    int max_steps;          /* trainer.max_steps */
    char backend[16];       /* the backend training picks: "cpu", "cuda" or "vulkan" (backend.kind resolved) */
    int threads;            /* cpu: backend.threads, or the cores an automatic count starts from; else 0 */
    char strategy[8];       /* refine.strategy as training resolves it: "mcmc" or "adc" */
    int initial_gaussians;  /* the count training starts from: the dataset's sparse points, or init.count */
    /* mcmc: the budget the count grows to (refine.max_gaussians; 0 = auto is resolved from the
     * dataset here, without the cap of half a GPU's free memory that training applies); adc:
     * refine.capacity, a ceiling the gradients rarely reach */
    int max_gaussians;
    double grow;            /* mcmc: the fraction added at each refine step (refine.mcmc_grow); adc: 0 */
    /* refine steps: after refine_start, every refine_every steps, before refine_stop (mcmc:
     * refine.mcmc_stop), as trainer.schedule_steps scales them */
    int refine_start, refine_stop, refine_every;
    int train_views;
    double view_pixels;     /* mean pixels of a training view, after data.downscale */
} splat_plan;

/* Fills *plan from the configuration and the configured dataset (its cameras and image sizes; no
 * image is decoded). SPLAT_INVALID: a configuration problem (as splat_config_check); SPLAT_ERROR:
 * the dataset does not load, or backend.kind is not in this build. */
splat_status splat_train_plan(splat_context *ctx, splat_plan *plan);

/* ---- several processes ----
 * A training spread over several processes (each with one or more GPUs, on one machine or
 * several; docs/scale.md) runs one context per process, configured alike, and each process says
 * where it stands. The library takes none of this from the environment: the splat CLI takes the
 * values from SPLAT_RANK, SPLAT_WORLD_SIZE, SPLAT_LOCAL_RANK and SPLAT_DIST_FILE (or Open MPI's
 * OMPI_COMM_WORLD_*) and --dist-file, and passes them in. (API 2) */
typedef struct {
    int rank;            /* this process, 0 .. world_size - 1; rank 0 writes the run folder */
    int world_size;      /* the number of processes; 1: this process alone (the default) */
    int local_rank;      /* its place among the processes of its machine: backend.devices = "N"
                            gives it devices local_rank * N .. local_rank * N + N - 1 */
    const char *id_file; /* world_size > 1: the file through which rank 0 hands the NCCL id to the
                            others, a path every process can read (a shared folder across
                            machines); copied */
} splat_dist;
/* Sets ctx's place among several processes, for splat_train, splat_train_plan,
 * splat_backend_describe and splat_config_resolve; NULL: alone again. SPLAT_INVALID, and nothing changes, for a rank
 * outside [0, world_size), a world_size under 1, a negative local_rank or world_size > 1 without
 * an id file. (API 2) */
splat_status splat_set_dist(splat_context *ctx, const splat_dist *dist);

/* ---- checks before training (what `splat check` reports) ---- */

typedef struct {
    int views;                   /* the split's view count */
    int width, height, channels; /* its first view's image (0 when it has none) */
    float fx, fy, cx, cy;        /* and intrinsics, at the loaded (downscaled) size */
} splat_split_info;

typedef struct {
    char format[16];             /* "blender", "colmap" or "transforms"; "" when it did not load */
    int has_alpha;               /* the images have an alpha channel */
    float extent, center[3];     /* the scene's extent and centre (from the training cameras) */
    int num_points;              /* sparse points for initialization (0: random, in the box) */
    float init_min[3], init_max[3];
    splat_split_info train, val, test;
} splat_dataset_info;

/* Loads the configured dataset as training does, decoding and checking every image, and
 * describes it. SPLAT_ERROR with every problem, one per line, when it is not usable for
 * training (SPLAT_INVALID without a data.path); *info is filled as far as it loaded either way.
 * (API 2) */
splat_status splat_dataset_check(splat_context *ctx, splat_dataset_info *info);
/* One line naming the device the configured backend.kind resolves to and the limits that matter
 * ("cpu (8 threads)", a Vulkan GPU's name and limits), into buf (size n). With several devices or
 * processes (backend.devices, splat_set_dist) the replicated CUDA backend is described. Fails
 * with the reason in the message: SPLAT_INVALID for backend.devices or the process settings,
 * SPLAT_ERROR when that backend cannot run here (the reason is in buf as well). (API 2) */
splat_status splat_backend_describe(splat_context *ctx, char *buf, size_t n);

/* ---- the model ---- */

/* Loads a model, replacing the context's: a .ply (3DGS layout, or PlayCanvas's compressed one),
 * .splat, .spz or .sog file, the meta.json of an unbundled SOG, a run's checkpoint.bin, or a run
 * folder (its point_cloud.ply, else its checkpoint.bin). */
splat_status splat_load_model(splat_context *ctx, const char *path);
/* splat_load_model with reader options: format "spz:rub" reads a .spz written in the spz
 * specification's RUB axes (splat's own older files, Niantic's library converting to RUB) instead of
 * the .ply axes current tools use; NULL or "spz" is the default. */
splat_status splat_load_model_as(splat_context *ctx, const char *path, const char *format);
/* Gaussian count and SH degree of the context's model (SPLAT_NO_MODEL without one). */
splat_status splat_model_info(splat_context *ctx, int *num_gaussians, int *sh_degree);
/* For a model trained with render.antialias = true, to be shown by renderers without the filter
 * (standard 3DGS viewers): every Gaussian's opacity times the mean of the filter's factor
 * sqrt(det S / det(S + 0.3 I)) over the training cameras of the configured dataset that see its
 * centre (docs/math.md, "Antialiasing"). The context's model changes; render it with
 * render.antialias = false afterwards. mean_factor (may be NULL) receives the mean factor applied. */
splat_status splat_bake_antialias(splat_context *ctx, double *mean_factor);
/* Writes the model as "ply" (lossless), "splat" (web viewers, base colour only), "glb" (glTF with
 * KHR_gaussian_splatting), "sog" (PlayCanvas's SOG, k-means compressed) or "spz"
 * (compressed; options after colons: "spz:v3" gzip instead of version 4's zstd, "spz:rub" the
 * spec's RUB axes instead of the .ply axes current tools use); format NULL: from path's
 * extension. Written atomically. */
splat_status splat_export(splat_context *ctx, const char *path, const char *format);
/* The format splat_export writes to path when given none: "ply", "splat", "spz", "glb" or "sog"
 * from its extension (any case; a name ending in meta.json is SOG's unbundled form), NULL for
 * any other. (API 2) */
const char *splat_model_format(const char *path);

/* ---- file and image helpers (the library's own, for programs built on it) ---- */

/* path absolute, with "." and ".." collapsed and the longest existing prefix resolved (symlinks),
 * so two names of one file compare equal even before it exists; malloc'd (free it), NULL when
 * the working directory cannot be read. (API 2) */
char *splat_path_resolve(const char *path);
/* 1 when path is parent or lies inside it (both resolved as splat_path_resolve does), else 0.
 * (API 2) */
int splat_path_within(const char *path, const char *parent);
/* rgb (w x h x 3, 8 bits) as a baseline JPEG at quality 1..100 (no chroma subsampling from 90
 * up) into *out (malloc'd, *n bytes; free it); 0, or -1 when encoding fails. (API 2) */
int splat_encode_jpeg(const uint8_t *rgb, int w, int h, int quality, unsigned char **out, unsigned long *n);

/* ---- rendering ---- */

/* A pinhole camera. Pose: world -> camera, x_cam = R x_world + t, in OpenCV axes (x right,
 * y down, z forward); R row-major. Intrinsics in pixels for an image of width x height. */
typedef struct {
    int width, height;
    float fx, fy, cx, cy;
    float R[9];
    float t[3];
} splat_camera;

/* A camera at eye looking at target, with up the world direction that appears up in the image,
 * horizontal field of view fov_x (radians), principal point at the image centre. */
splat_status splat_camera_look_at(splat_camera *cam, int width, int height, float fov_x, const float eye[3],
                                  const float target[3], const float up[3]);
/* The camera of view `index` of a split ("train", "val" or "test") of the configured dataset
 * (data.path, data.downscale), as training and evaluation see it. The dataset's cameras are read
 * once per configuration (any configuration call reads them again on next use). */
splat_status splat_dataset_camera(splat_context *ctx, const char *split, int index, splat_camera *cam);
/* How many views the split has. */
splat_status splat_dataset_views(splat_context *ctx, const char *split, int *count);
/* The name the dataset gives view `index` of a split ("./test/r_0", "IMG_0042.jpg") into buf
 * (size n, NUL-terminated; SPLAT_INVALID if it does not fit). */
splat_status splat_dataset_view_name(splat_context *ctx, const char *split, int index, char *buf, size_t n);
/* frames cameras (>= 1) along a path derived from the dataset's training cameras, into cams:
 * "orbit" (a circle around the point they look at), "spiral" (around the mean or first pose) or
 * "interp" (a smooth path through up to 8 training poses); docs/formats.md describes them. */
splat_status splat_camera_path(splat_context *ctx, const char *kind, int frames, splat_camera *cams);

typedef enum {
    SPLAT_RGBA8 = 0,   /* 4 bytes per pixel, 0..255, on the scale of the training images (round(255 v)) */
    SPLAT_RGBA_F32 = 1 /* 4 floats per pixel, the same values v in [0, 1] before quantization */
} splat_pixel_format;

/* Renders the model from cam into pixels (cam->height rows of `stride` bytes; stride 0: tightly
 * packed, width * 4 (RGBA8) or width * 16 (float) bytes). background: RGB in [0, 1] composited
 * behind the model (alpha is then 1); NULL: a transparent background, the colour straight
 * (not premultiplied) and alpha the model's coverage (this renders twice). Uses the backend of
 * the configuration (backend.kind) and its render.antialias: render a model with the value it was
 * trained with (a run's config.toml records it; docs/math.md, "Antialiasing"). */
splat_status splat_render(splat_context *ctx, const splat_camera *cam, const float *background,
                          splat_pixel_format format, void *pixels, size_t stride);

/* splat_render into a PNG file (written atomically): RGB on background, or RGBA with background
 * NULL. (API 2) */
splat_status splat_render_png(splat_context *ctx, const splat_camera *cam, const float *background,
                              const char *path);

/* The image of view `index` of a split of the configured dataset as training and evaluation see
 * it (decoded, downscaled and undistorted to the size of splat_dataset_camera's camera), into
 * pixels laid out as splat_render writes them. background: RGB in [0, 1] under the image's
 * transparent parts (data.alpha says how its alpha is read), alpha then 1; NULL: the colour and
 * alpha as the file stores them (alpha 1 for an image without one). (API 2) */
splat_status splat_dataset_image(splat_context *ctx, const char *split, int index, const float *background,
                                 splat_pixel_format format, void *pixels, size_t stride);

/* Renders of ctx (splat_render) use SH degrees up to max_degree only, lower ones showing the
 * view-independent colours a viewer may want to compare with; -1 (the default): the model's. */
splat_status splat_set_render_sh_degree(splat_context *ctx, int max_degree);

/* ---- evaluation ---- */

typedef struct {
    int num_views;
    double psnr, ssim;            /* means over the views */
    double seconds;
    const double *view_psnr;      /* [num_views], owned by the context, valid until the next call */
    const double *view_ssim;
    const char *const *view_names;
} splat_eval_result;

/* Renders every view of a split ("test", "val" or "train") of the configured dataset with the
 * model and scores it against the images (8-bit quantized renders, PSNR in dB and SSIM), on the
 * configured background (data.background; "random" evaluates on white). */
splat_status splat_evaluate(splat_context *ctx, const char *split, splat_eval_result *out);
/* Writes the last evaluation as TOML (split, Gaussian count, mean and per-view PSNR and SSIM: the
 * layout of a run folder's eval_<split>.toml), atomically. SPLAT_INVALID before any evaluation. */
splat_status splat_eval_save(splat_context *ctx, const char *path);

/* ---- the demo scene ---- */

/* Ray-traces splat's procedural demo scene into dir in the NeRF-synthetic layout
 * (transforms_{train,val,test}.json and RGBA PNGs), size x size pixels (8..8192), with the given
 * number of views per split (at least one train view); equal arguments give byte-identical files. */
splat_status splat_synth(splat_context *ctx, const char *dir, int size, int num_train, int num_val, int num_test,
                         uint64_t seed);

/* Every option of the procedural scenes (API 2). */
typedef struct {
    const char *scene;    /* "objects": the demo scene above; "capture": a large outdoor capture
                             (seven object groups on detailed ground under a skyline, seen through
                             a lens with radial-tangential distortion) written as transforms.json
                             and images/NNNNN.jpg, whose loader holds out every 8th view */
    int width, height;    /* 8..8192 pixels */
    int num_train, num_val, num_test; /* views per split, up to 100000 (at least one train view);
                             capture: num_train only, the others 0 */
    int samples;          /* jittered rays per pixel, 1..1024 (antialiasing, soft alpha edges) */
    uint64_t seed;
} splat_synth_opts;
/* The options of a scene by default: "objects" 128x128, 100 / 25 / 25 views, 4 samples; "capture"
 * 1000 views of 1600x1200, 1 sample; seed 0. SPLAT_INVALID for another scene name. (API 2) */
splat_status splat_synth_defaults(splat_synth_opts *opts, const char *scene);
/* Writes the scene of opts into dir (created with its parents if missing; every file atomically);
 * equal options give byte-identical files. (API 2) */
splat_status splat_synth_scene(splat_context *ctx, const char *dir, const splat_synth_opts *opts);

/* ---- run folders and benchmark chains ---- */

/* The names a training run writes into its folder (config.toml, log.txt, ...; folders end in
 * '/'), NULL-terminated: a folder holding any of them holds a run, and splat_train_opts.force
 * replaces exactly these. (API 2) */
const char *const *splat_run_files(void);

/* What a run folder's result.toml says (API 2). */
typedef struct {
    char status[32];      /* "complete", "interrupted" or "diverged" */
    char split[8];        /* the split psnr and ssim were scored on: "test", or "val" for a dataset
                             without test views; "" when neither was */
    double psnr, ssim;    /* NaN when not scored */
    double train_seconds;
    long gaussians, steps;
} splat_run_result;
/* Reads run_dir/result.toml. SPLAT_ERROR when there is none (no save finished there) or it does
 * not parse. (API 2) */
splat_status splat_read_result(splat_context *ctx, const char *run_dir, splat_run_result *result);

/* A benchmark chain (docs/bench.md): several scenes trained one after another into one folder,
 * OUT/<scene>, with shared settings, and a summary of their results. The context holds at most
 * one chain, apart from its configuration. (API 2) */

/* Reads a chain file into the context (replacing any chain it held) and resolves every scene's
 * configuration: sets (num_sets "section.key=value") apply to every scene last, and out (NULL:
 * the file's [chain] out, or runs/<file name>) is the chain's folder. SPLAT_INVALID with every
 * problem, one per line, naming the file and line. */
splat_status splat_chain_load(splat_context *ctx, const char *file, const char *const *sets, int num_sets,
                              const char *out);
/* The chain's scene count and folder (valid until the chain is replaced or the context closed). */
splat_status splat_chain_info(splat_context *ctx, int *num_scenes, const char **out);
/* Scene index's name and run folder (either pointer may be NULL; valid as for splat_chain_info). */
splat_status splat_chain_scene(splat_context *ctx, int index, const char **name, const char **run_dir);
/* Makes scene index's configuration the context's: splat_train then trains that scene. */
splat_status splat_chain_use_scene(splat_context *ctx, int index);
/* Writes OUT/summary.toml, OUT/summary.md and OUT/curves.png from the result.toml of the scenes
 * whose include[i] is non-zero (include NULL: every scene); the others, and those without a
 * result, are listed as not run. */
splat_status splat_chain_write_summary(splat_context *ctx, const int *include);

#ifdef __cplusplus
}
#endif

#endif
