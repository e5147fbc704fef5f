/* stream.c — the trainer's side of streamed training images (stream.h): the host cache along the
 * view schedule, and the device's slots, which view each holds and which view leaves when a slot
 * is needed (the one used furthest in the future: the schedule is known, so this is the optimal
 * choice for the slots there are). */
#include "train/stream.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "io/viewload.h"
#include "scene/viewcache.h"
#include "train/viewsched.h"

struct sp_train_stream {
    const sp_split *train;
    sp_backend *b;
    sp_alpha_mode alpha;
    sp_view_sched sched; /* the host cache's (called under its lock, from this thread) */
    sp_view_sched order; /* each step's view and each view's next use */
    sp_viewcache *cache;
    int last_step;
    int num_slots;
    int *slot_view; /* [num_slots] the view each slot holds; -1: none */
    int *view_slot; /* [train->n] the slot holding each view; -1: not on the device */
    int acquiring;  /* the step being acquired: the schedule gives its view even when it is held */
    long steps, staged; /* steps trained, images staged to the device for them */
    int threads;
};

/* The host cache decodes ahead only what the device does not already hold. */
static int schedule(void *user, int step) {
    sp_train_stream *s = user;
    int v = sp_view_sched_at(&s->sched, step);
    return step == s->acquiring || s->view_slot[v] < 0 ? v : -1;
}

/* The slots the device gets: every view when the budget allows, never fewer than two. */
static int slots_wanted(const sp_split *train, sp_backend *b, const sp_stream_opts *o, size_t slot_bytes,
                        const char **why) {
    int n = train->n;
    double budget;
    if (o->device_cache_mb == 0 || !b->ops->stage_slots) {
        *why = o->device_cache_mb == 0 ? "data.device_cache_mb = 0" : "this backend keeps two";
        return SP_STAGE_SLOTS;
    }
    if (o->device_cache_mb > 0) {
        budget = (double)o->device_cache_mb * 1048576.0;
        *why = "data.device_cache_mb";
    } else {
        size_t free_b = 0, total_b = 0;
        if (!b->ops->device_memory || b->ops->device_memory(b, &free_b, &total_b)) {
            *why = "data.device_cache_mb = -1 (auto): the images are host memory on this backend";
            return SP_STAGE_SLOTS;
        }
        budget = (double)free_b / 3.0;
        *why = "data.device_cache_mb = -1 (auto: a third of the device's free memory, at most every view)";
    }
    double fit = budget / (double)slot_bytes;
    int count = fit >= n ? n : (int)fit;
    return count < SP_STAGE_SLOTS ? SP_STAGE_SLOTS : count;
}

sp_train_stream *sp_train_stream_create(const sp_split *train, sp_backend *b, sp_alpha_mode alpha,
                                        const sp_stream_opts *o) {
    if (!b->ops->stage_view) {
        sp_error("data.cache_mb = %d: the %s backend cannot stream training images; set data.cache_mb = 0",
                 o->cache_mb, b->ops->name);
        return NULL;
    }
    size_t max_px = 1;
    int max_ch = 3;
    for (int i = 0; i < train->n; i++) {
        const sp_view *v = &train->views[i];
        if (sp_view_streamable(v)) {
            sp_error_prefix("data.cache_mb = %d", o->cache_mb);
            return NULL;
        }
        size_t px = (size_t)v->cam.width * v->cam.height;
        if (px > max_px) max_px = px;
        if (v->channels > max_ch) max_ch = v->channels;
    }
    sp_train_stream *s = sp_calloc(1, sizeof *s);
    s->train = train;
    s->b = b;
    s->alpha = alpha;
    s->last_step = o->last_step;
    sp_view_sched_init(&s->sched, o->seed, train->n);
    sp_view_sched_init(&s->order, o->seed, train->n);
    s->view_slot = SP_NEW(int, train->n);
    for (int i = 0; i < train->n; i++) s->view_slot[i] = -1;

    /* the device's slots, fewer when it lacks the memory */
    size_t slot_bytes = max_px * (size_t)max_ch;
    const char *why = "";
    int count = slots_wanted(train, b, o, slot_bytes, &why);
    while (count > SP_STAGE_SLOTS && b->ops->stage_slots(b, count, max_px, max_ch)) {
        SP_WARN("%s; keeping %d training images on the device instead of %d", sp_last_error(), count / 2, count);
        count /= 2;
    }
    if (count <= SP_STAGE_SLOTS) {
        count = SP_STAGE_SLOTS;
        if (b->ops->stage_slots && b->ops->stage_slots(b, count, max_px, max_ch)) {
            sp_error_prefix("data.device_cache_mb = %d", o->device_cache_mb);
            sp_train_stream_free(s);
            return NULL;
        }
    }
    s->num_slots = count;
    s->slot_view = SP_NEW(int, count);
    for (int k = 0; k < count; k++) s->slot_view[k] = -1;

    int threads = o->decode_threads;
    if (threads <= 0) {
        threads = omp_get_num_procs() - 1;
        if (threads > 32) threads = 32;
        if (threads < 1) threads = 1;
    }
    s->threads = threads;
    sp_viewcache_opts co = {.budget = (size_t)o->cache_mb << 20, .threads = threads,
                            .lookahead = threads * 2 > 32 ? threads * 2 : 32, .first_step = o->first_step,
                            .last_step = o->last_step, .decode = sp_view_load_pixels, .schedule = schedule,
                            .user = s};
    s->cache = sp_viewcache_create(train, &co);
    if (!s->cache) {
        sp_error_prefix("data.cache_mb = %d (raise it)", o->cache_mb);
        sp_train_stream_free(s);
        return NULL;
    }
    SP_INFO("streaming the training images through a cache of %d MiB, %d decoding thread%s; the device keeps "
            "%d of the %d training images (%s, %s; %s)", o->cache_mb, threads, threads == 1 ? "" : "s",
            count < train->n ? count : train->n, train->n, sp_bytes_str((double)slot_bytes * count), b->ops->name,
            why);
    return s;
}

/* The slot that step's view is in, staging it there first unless it already is; -1 on error. */
static int place(sp_train_stream *s, int step) {
    int v = sp_view_sched_at(&s->order, step);
    if (s->view_slot[v] >= 0) return s->view_slot[v];
    /* a free slot, else the one whose view is needed again last (steps issued before this one
     * still read their slot's old image: stage_view orders the copy after them) */
    int slot = -1, far = -1;
    for (int k = 0; k < s->num_slots && slot < 0; k++)
        if (s->slot_view[k] < 0) slot = k;
    if (slot < 0)
        for (int k = 0; k < s->num_slots; k++) {
            int next = sp_view_sched_next(&s->order, s->slot_view[k], step);
            if (next > far) far = next, slot = k;
        }
    int got;
    const uint8_t *px;
    s->acquiring = step;
    int rc = sp_viewcache_acquire(s->cache, step, &got, &px);
    s->acquiring = 0;
    if (rc) return -1;
    sp_view staged = s->train->views[got];
    staged.pixels = (uint8_t *)px;
    if (s->slot_view[slot] >= 0) s->view_slot[s->slot_view[slot]] = -1;
    s->slot_view[slot] = -1;
    rc = s->b->ops->stage_view(s->b, slot, &staged, s->alpha);
    sp_viewcache_release(s->cache, got);
    if (rc) return -1;
    s->slot_view[slot] = got;
    s->view_slot[got] = slot;
    s->staged++;
    return slot;
}

int sp_train_stream_step(sp_train_stream *s, int step, sp_step_args *a) {
    int slot = place(s, step);
    if (slot < 0) return -1;
    s->steps++;
    a->view = slot;
    a->staged = 1;
    return 0;
}

void sp_train_stream_ahead(sp_train_stream *s, int step) {
    if (step <= s->last_step) place(s, step);
}

void sp_train_stream_log(sp_train_stream *s) {
    sp_viewcache_stats st;
    sp_viewcache_get_stats(s->cache, &st);
    SP_INFO("image cache: %ld decodes (%d thread%s), %ld steps found their image decoded ahead, %ld waited (%.1f s); "
            "peak %s of decoded images; %ld images staged to the device for %ld steps",
            st.decoded, s->threads, s->threads == 1 ? "" : "s", st.ready, st.waited, st.wait_s, sp_bytes_str((double)st.peak_bytes), s->staged,
            s->steps);
}

void sp_train_stream_free(sp_train_stream *s) {
    if (!s) return;
    sp_viewcache_destroy(s->cache);
    sp_view_sched_free(&s->sched);
    sp_view_sched_free(&s->order);
    free(s->slot_view);
    free(s->view_slot);
    free(s);
}
