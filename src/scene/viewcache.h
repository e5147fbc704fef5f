/* viewcache.h — a bounded cache of decoded training images, for captures larger than memory.
 *
 * The dataset is loaded without pixels (cameras, paths and sizes only); the cache decodes a view
 * when the trainer needs it, keeps at most `budget` bytes of decoded pixels (least recently used
 * views go first), and its decoding threads work ahead along the training schedule, which is known
 * in advance (the view of every step is a pure function of the seed and the step). Bytes are
 * counted before a decode starts, so the decoded pixels held never exceed the budget, decodes in
 * flight included. A decode error is kept with the view and returned, naming the file, to the
 * step that needs it. */
#ifndef SPLAT_VIEWCACHE_H
#define SPLAT_VIEWCACHE_H

#include <stddef.h>
#include <stdint.h>

#include "scene/dataset.h"

typedef struct sp_viewcache sp_viewcache;

/* Decodes a view's pixels into a malloc'd buffer of width * height * channels bytes; on failure
 * returns -1 with sp_error set (naming the file). Called from several threads at once. */
typedef int (*sp_view_decode_fn)(const sp_view *v, uint8_t **pixels);
/* The view index the trainer uses at `step`, or -1 when that step needs nothing decoded (its view
 * is held elsewhere, e.g. on the device); called under the cache's lock only, from the thread that
 * creates the cache and calls acquire, in increasing step order within one call of the cache, so
 * it may keep state in `user`. For the step an acquire asks for it must give the view. */
typedef int (*sp_view_schedule_fn)(void *user, int step);

typedef struct {
    size_t budget;     /* bytes of decoded pixels held at most (>= the largest view) */
    int threads;       /* decoding threads working ahead (0: decode on demand only) */
    int lookahead;     /* steps ahead the threads decode at most (0: 32) */
    int first_step;    /* the first step acquired (steps go up by one from there) */
    int last_step;     /* no prefetch past it */
    sp_view_decode_fn decode;
    sp_view_schedule_fn schedule;
    void *user;
} sp_viewcache_opts;

typedef struct {
    size_t bytes, peak_bytes; /* decoded pixels held now / at most, decodes in flight included */
    long decoded;             /* decodes done (a view evicted and needed again is decoded again) */
    long ready;               /* acquires that found their view decoded */
    long waited;              /* acquires that had to wait for (or do) the decode */
    double wait_s;            /* time acquires spent waiting */
    long evicted;
} sp_viewcache_stats;

/* NULL with sp_error set when the budget is smaller than the largest view of the split (the
 * message names that view's file) or the threads cannot start. The split must outlive the cache. */
sp_viewcache *sp_viewcache_create(const sp_split *split, const sp_viewcache_opts *o);
/* The view and pixels of `step` (steps must not go down). The pixels stay valid until
 * sp_viewcache_release(view). Returns -1 with the decode error (naming the file) if it failed. */
int sp_viewcache_acquire(sp_viewcache *c, int step, int *view, const uint8_t **pixels);
void sp_viewcache_release(sp_viewcache *c, int view);
void sp_viewcache_get_stats(sp_viewcache *c, sp_viewcache_stats *s);
/* Stops the threads (waiting for decodes in flight) and frees every buffer. */
void sp_viewcache_destroy(sp_viewcache *c);

#endif
