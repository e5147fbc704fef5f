/* viewcache.c — the bounded, prefetching cache of decoded training images (viewcache.h).
 *
 * One entry per view: empty, decoding, ready (pixels held) or failed (error kept). The window is
 * the views of steps cur .. cur + lookahead, where cur is the step last acquired. Decoding threads
 * take the earliest step of the window whose view is empty, make room for it and decode it without
 * the lock. Room is made by evicting ready, unpinned views that no step of the window before that
 * one needs: first views the window does not need at all, least recently used first. Bytes are
 * reserved before a decode starts, so `bytes` never exceeds the budget. */
#include "scene/viewcache.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"

enum { E_EMPTY, E_DECODING, E_READY, E_FAILED };

typedef struct {
    int state;
    int pins;
    long last_use;
    uint8_t *pixels;
    char *err;
} entry;

struct sp_viewcache {
    const sp_split *split;
    sp_viewcache_opts o;
    entry *e;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t *th;
    int nth, stop;
    int cur;   /* step of the window's first entry */
    int *win;  /* views of steps cur .. cur + win_n - 1 */
    int win_n;
    long tick;
    sp_viewcache_stats st;
};

static size_t view_bytes(const sp_view *v) { return (size_t)v->cam.width * v->cam.height * v->channels; }

static void set_window(sp_viewcache *c, int step) {
    c->cur = step;
    int n = c->o.last_step - step + 1;
    if (n > c->o.lookahead + 1) n = c->o.lookahead + 1;
    if (n < 1) n = 1; /* the step asked for is always in it */
    c->win_n = n;
    for (int k = 0; k < n; k++) {
        int v = c->o.schedule(c->o.user, step + k);
        /* -1: that step needs nothing decoded; the step asked for always does */
        c->win[k] = v >= 0 && v < c->split->n ? v : k == 0 ? 0 : -1;
    }
}

/* 1 if a step of the window at or before index upto uses view v (upto < 0: the whole window). */
static int in_window(const sp_viewcache *c, int v, int upto) {
    int n = upto < 0 || upto >= c->win_n ? c->win_n : upto + 1;
    for (int k = 0; k < n; k++)
        if (c->win[k] == v) return 1;
    return 0;
}

/* Evicts until `need` more bytes fit, sparing views of window steps 0..upto. -1 if it cannot. */
static int make_room(sp_viewcache *c, size_t need, int upto) {
    while (c->st.bytes + need > c->o.budget) {
        int best = -1, best_far = 0;
        for (int v = 0; v < c->split->n; v++) {
            entry *E = &c->e[v];
            if (E->state != E_READY || E->pins || in_window(c, v, upto)) continue;
            int far = !in_window(c, v, -1); /* not needed by the window at all: goes first */
            if (best < 0 || far > best_far || (far == best_far && E->last_use < c->e[best].last_use))
                best = v, best_far = far;
        }
        if (best < 0) return -1;
        entry *E = &c->e[best];
        free(E->pixels);
        E->pixels = NULL;
        E->state = E_EMPTY;
        c->st.bytes -= view_bytes(&c->split->views[best]);
        c->st.evicted++;
    }
    return 0;
}

/* Decodes view v with the lock released; the bytes were reserved by the caller. */
static void decode_unlocked(sp_viewcache *c, int v) {
    entry *E = &c->e[v];
    size_t bytes = view_bytes(&c->split->views[v]);
    E->state = E_DECODING;
    c->st.bytes += bytes;
    if (c->st.bytes > c->st.peak_bytes) c->st.peak_bytes = c->st.bytes;
    pthread_mutex_unlock(&c->mu);
    uint8_t *px = NULL;
    int rc = c->o.decode(&c->split->views[v], &px);
    char *err = rc ? sp_strdup(sp_last_error()) : NULL;
    pthread_mutex_lock(&c->mu);
    if (rc) {
        free(px);
        E->state = E_FAILED;
        E->err = err;
        c->st.bytes -= bytes;
    } else {
        E->state = E_READY;
        E->pixels = px;
        E->last_use = ++c->tick;
        c->st.decoded++;
    }
    pthread_cond_broadcast(&c->cv);
}

static void *worker(void *arg) {
    sp_viewcache *c = arg;
    pthread_mutex_lock(&c->mu);
    while (!c->stop) {
        int k = 0;
        while (k < c->win_n && (c->win[k] < 0 || c->e[c->win[k]].state != E_EMPTY)) k++;
        if (k == c->win_n || make_room(c, view_bytes(&c->split->views[c->win[k]]), k)) {
            pthread_cond_wait(&c->cv, &c->mu);
            continue;
        }
        decode_unlocked(c, c->win[k]);
    }
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

sp_viewcache *sp_viewcache_create(const sp_split *split, const sp_viewcache_opts *o) {
    size_t largest = 0;
    int which = 0;
    for (int i = 0; i < split->n; i++)
        if (view_bytes(&split->views[i]) > largest) largest = view_bytes(&split->views[i]), which = i;
    if (split->n < 1 || !o->decode || !o->schedule) {
        sp_error("view cache: no views, decoder or schedule");
        return NULL;
    }
    if (o->budget < largest) {
        sp_error("a cache of %.2f MiB is smaller than one training image (%.2f MiB decoded: %s)",
                 (double)o->budget / 1048576.0, (double)largest / 1048576.0,
                 split->views[which].path ? split->views[which].path : "?");
        return NULL;
    }
    sp_viewcache *c = sp_calloc(1, sizeof *c);
    c->split = split;
    c->o = *o;
    if (c->o.lookahead <= 0) c->o.lookahead = 32;
    if (c->o.threads < 0) c->o.threads = 0;
    c->e = sp_calloc((size_t)split->n, sizeof *c->e);
    c->win = sp_calloc((size_t)c->o.lookahead + 1, sizeof *c->win);
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    set_window(c, o->first_step);
    c->th = sp_calloc((size_t)(c->o.threads > 0 ? c->o.threads : 1), sizeof *c->th);
    for (int i = 0; i < c->o.threads; i++) {
        if (pthread_create(&c->th[i], NULL, worker, c)) {
            sp_viewcache_destroy(c);
            sp_error("view cache: cannot start decoding thread %d", i + 1);
            return NULL;
        }
        c->nth++;
    }
    return c;
}

int sp_viewcache_acquire(sp_viewcache *c, int step, int *view, const uint8_t **pixels) {
    double t0 = sp_now();
    pthread_mutex_lock(&c->mu);
    if (step != c->cur) {
        set_window(c, step);
        pthread_cond_broadcast(&c->cv);
    }
    int v = c->win[0], waited = 0;
    entry *E = &c->e[v];
    for (;;) {
        if (E->state == E_READY) break;
        waited = 1;
        if (E->state == E_FAILED) {
            char *err = sp_strdup(E->err);
            pthread_mutex_unlock(&c->mu);
            sp_error("%s", err);
            free(err);
            return -1;
        }
        if (E->state == E_EMPTY && make_room(c, view_bytes(&c->split->views[v]), 0) == 0)
            decode_unlocked(c, v); /* nobody has it: decode it here */
        else
            pthread_cond_wait(&c->cv, &c->mu);
    }
    E->pins++;
    E->last_use = ++c->tick;
    if (waited) {
        c->st.waited++;
        c->st.wait_s += sp_now() - t0;
    } else {
        c->st.ready++;
    }
    *view = v;
    *pixels = E->pixels;
    pthread_mutex_unlock(&c->mu);
    return 0;
}

void sp_viewcache_release(sp_viewcache *c, int view) {
    pthread_mutex_lock(&c->mu);
    if (view >= 0 && view < c->split->n && c->e[view].pins > 0) c->e[view].pins--;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

void sp_viewcache_get_stats(sp_viewcache *c, sp_viewcache_stats *s) {
    pthread_mutex_lock(&c->mu);
    *s = c->st;
    pthread_mutex_unlock(&c->mu);
}

void sp_viewcache_destroy(sp_viewcache *c) {
    if (!c) return;
    pthread_mutex_lock(&c->mu);
    c->stop = 1;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    for (int i = 0; i < c->nth; i++) pthread_join(c->th[i], NULL);
    for (int v = 0; v < c->split->n; v++) {
        free(c->e[v].pixels);
        free(c->e[v].err);
    }
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->cv);
    free(c->th);
    free(c->win);
    free(c->e);
    free(c);
}
