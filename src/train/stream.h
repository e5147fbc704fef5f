/* stream.h — training on images streamed from disk (data.cache_mb > 0): a bounded host cache
 * (scene/viewcache.h) decodes along the training schedule with its own threads, and each step's
 * view goes to one of the backend's staging slots (stage_view) instead of every view being
 * uploaded. With more slots than two (data.device_cache_mb) the device keeps that many training
 * images: a step whose view is there needs nothing from the host, and when a slot must be freed
 * the view whose next use is furthest away goes (the schedule is known in advance). Host memory
 * for images: the cache budget plus two pinned staging copies; device memory: the slots. */
#ifndef SPLAT_STREAM_H
#define SPLAT_STREAM_H

#include <stdint.h>

#include "backend/backend.h"
#include "scene/dataset.h"

typedef struct {
    int cache_mb;        /* host cache of decoded images, MiB (> 0) */
    int device_cache_mb; /* images kept on the device, MiB: -1 = auto (a third of the device's free
                            memory, at most every view; none for a backend without device memory),
                            0 = the two staging slots only */
    int decode_threads;  /* decoding threads: 0 = auto (one per core but one, at least 1, at most 32) */
    uint64_t seed;       /* of the view schedule (train/viewsched.h) */
    int first_step, last_step;
} sp_stream_opts;

typedef struct sp_train_stream sp_train_stream;

/* Checks that every training view can be streamed and that cache_mb MiB hold at least one image
 * (errors name data.cache_mb and the file), reserves the device's slots (errors name
 * data.device_cache_mb) and starts the decoding threads at first_step. Logs what it chose. */
sp_train_stream *sp_train_stream_create(const sp_split *train, sp_backend *b, sp_alpha_mode alpha,
                                        const sp_stream_opts *o);
/* Fills a->view and a->staged for `step`, staging its view now unless the device holds it. Errors
 * (a decode error names the file) return -1. Steps must not go down. */
int sp_train_stream_step(sp_train_stream *s, int step, sp_step_args *a);
/* Stages the view of `step` ahead (call after issuing the step before it; GPU backends copy it
 * while that step runs). Nothing to do past the last step or when the device holds it. A failure
 * here is not reported: the step itself stages again and reports it (so the steps before it
 * still run and save). */
void sp_train_stream_ahead(sp_train_stream *s, int step);
/* One log line: device hits, decodes, waits, peak cache bytes. */
void sp_train_stream_log(sp_train_stream *s);
void sp_train_stream_free(sp_train_stream *s);

#endif
