/* stream.h — training on images streamed from disk (data.cache_mb > 0): a bounded view cache
 * (scene/viewcache.h) decodes along the training schedule with its own threads, and each step's
 * view is staged into one of the backend's SP_STAGE_SLOTS image slots (stage_view) instead of every
 * view being uploaded. Host memory for images: the cache budget plus the slots; device memory:
 * the slots. */
#ifndef SPLAT_STREAM_H
#define SPLAT_STREAM_H

#include <stdint.h>

#include "backend/backend.h"
#include "scene/dataset.h"

/* Decoding threads of the cache. */
#define SP_STREAM_THREADS 2

typedef struct sp_train_stream sp_train_stream;

/* Checks that every training view can be streamed and that cache_mb MiB hold at least one image
 * (errors name data.cache_mb and the file), and starts the decoding threads at first_step. */
sp_train_stream *sp_train_stream_create(const sp_split *train, sp_backend *b, sp_alpha_mode alpha, int cache_mb,
                                        uint64_t seed, int first_step, int last_step);
/* Fills a->view and a->staged for `step`, staging its view now unless it already is. Errors (a
 * decode error names the file) return -1. */
int sp_train_stream_step(sp_train_stream *s, int step, sp_step_args *a);
/* Stages the view of `step` ahead (call after issuing the step before it; GPU backends copy it
 * while that step runs). Nothing to do past the last step. A failure here is not reported: the
 * step itself stages again and reports it (so the steps before it still run and save). */
void sp_train_stream_ahead(sp_train_stream *s, int step);
/* One log line: decodes, hits, waits, peak cache bytes. */
void sp_train_stream_log(sp_train_stream *s);
void sp_train_stream_free(sp_train_stream *s);

#endif
