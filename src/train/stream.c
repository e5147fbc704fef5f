/* stream.c — the trainer's side of streamed training images (stream.h): the cache along the
 * view schedule, and staging into the backend's slots, step s in slot s % SP_STAGE_SLOTS. */
#include "train/stream.h"

#include <stdlib.h>

#include "core/core.h"
#include "io/viewload.h"
#include "scene/viewcache.h"
#include "train/viewsched.h"

struct sp_train_stream {
    const sp_split *train;
    sp_backend *b;
    sp_alpha_mode alpha;
    sp_view_sched sched; /* used by the cache under its lock only */
    sp_viewcache *cache;
    int last_step;
    int staged[SP_STAGE_SLOTS]; /* step whose view each slot holds; 0: none */
};

static int schedule(void *user, int step) { return sp_view_sched_at(user, step); }

sp_train_stream *sp_train_stream_create(const sp_split *train, sp_backend *b, sp_alpha_mode alpha, int cache_mb,
                                        uint64_t seed, int first_step, int last_step) {
    if (!b->ops->stage_view) {
        sp_error("data.cache_mb = %d: the %s backend cannot stream training images; set data.cache_mb = 0", cache_mb,
                 b->ops->name);
        return NULL;
    }
    for (int i = 0; i < train->n; i++)
        if (sp_view_streamable(&train->views[i])) {
            sp_error_prefix("data.cache_mb = %d", cache_mb);
            return NULL;
        }
    sp_train_stream *s = sp_calloc(1, sizeof *s);
    s->train = train;
    s->b = b;
    s->alpha = alpha;
    s->last_step = last_step;
    sp_view_sched_init(&s->sched, seed, train->n);
    sp_viewcache_opts o = {.budget = (size_t)cache_mb << 20, .threads = SP_STREAM_THREADS, .lookahead = 32,
                           .first_step = first_step, .last_step = last_step, .decode = sp_view_load_pixels,
                           .schedule = schedule, .user = &s->sched};
    s->cache = sp_viewcache_create(train, &o);
    if (!s->cache) {
        sp_error_prefix("data.cache_mb = %d (raise it)", cache_mb);
        sp_train_stream_free(s);
        return NULL;
    }
    return s;
}

static int stage(sp_train_stream *s, int step) {
    int v;
    const uint8_t *px;
    if (sp_viewcache_acquire(s->cache, step, &v, &px)) return -1;
    sp_view staged = s->train->views[v];
    staged.pixels = (uint8_t *)px;
    int slot = step % SP_STAGE_SLOTS;
    int rc = s->b->ops->stage_view(s->b, slot, &staged, s->alpha);
    sp_viewcache_release(s->cache, v);
    s->staged[slot] = rc ? 0 : step;
    return rc;
}

int sp_train_stream_step(sp_train_stream *s, int step, sp_step_args *a) {
    int slot = step % SP_STAGE_SLOTS;
    if (s->staged[slot] != step && stage(s, step)) return -1;
    a->view = slot;
    a->staged = 1;
    return 0;
}

void sp_train_stream_ahead(sp_train_stream *s, int step) {
    if (step <= s->last_step && s->staged[step % SP_STAGE_SLOTS] != step) stage(s, step);
}

void sp_train_stream_log(sp_train_stream *s) {
    sp_viewcache_stats st;
    sp_viewcache_get_stats(s->cache, &st);
    SP_INFO("image cache: %ld decodes, %ld steps found their image decoded ahead, %ld waited (%.1f s); "
            "peak %s of decoded images",
            st.decoded, st.ready, st.waited, st.wait_s, sp_bytes_str((double)st.peak_bytes));
}

void sp_train_stream_free(sp_train_stream *s) {
    if (!s) return;
    sp_viewcache_destroy(s->cache);
    sp_view_sched_free(&s->sched);
    free(s);
}
