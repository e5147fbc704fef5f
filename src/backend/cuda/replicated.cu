/* replicated.cu — data-parallel training: one cuda backend (replica) per device of this process,
 * and the same over several processes (one communicator spans every device of every rank).
 * A batch gives each replica its views (call j of a batch goes to replica j % devices); each
 * replica sums its views' gradients (accumulate-only steps), the sums are added over every device
 * with ncclAllReduce, and every replica applies the same Adam update: the replicas stay equal
 * without ever copying parameters. The all-reduce runs in a few chunks on a stream of its own,
 * and Adam (elementwise) updates each chunk while the next one is summed. Before a refine the
 * densification statistics are reduced too (sums of gradient norms and counts, max of the screen
 * radius), so every replica makes the same decisions; the cuda refine writes Gaussians in an order
 * fixed by scans and stable sorts, not by atomics, so the replicas stay identical after it
 * (backend.check_replicas verifies this with a checksum). Loss: the mean over the replicas of this
 * process; render and get_gaussians read replica 0, and render_many (the evaluation) renders
 * camera j on replica j % devices. With several devices in a process, each replica's steps are
 * launched by a thread of its own, so that one replica's host waits (the pair count after project)
 * never hold back the others, and each thread then issues its own device's share of the
 * all-reduce and Adam: the calling thread queues a batch and returns without waiting. No host
 * synchronisation per step beyond what one replica does. */
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_internal.h"
#include "backend/cuda/nccl_lib.h"

extern "C" {
#include "backend/dist.h"
}

/* Seconds the other ranks wait for rank 0's id file. */
#define ID_TIMEOUT_S 300.0

/* The gradient all-reduce runs in up to backend.reduce_chunks pieces (default 1, at most
 * REDUCE_CHUNKS) of at least CHUNK_MIN floats on a stream of its own, and Adam updates each piece
 * on the replica's stream as soon as it has landed, while the next piece is summed. Boundaries are
 * multiples of CHUNK_ALIGN floats. */
#define REDUCE_CHUNKS 8
#define DEFAULT_CHUNKS 4
#define CHUNK_MIN (1 << 20)
#define CHUNK_ALIGN 1024

/* A replica's launcher thread: a queue of jobs (train_step calls, the end of a batch, evaluation
 * renders). */
#define QN 64
enum { JOB_STEP, JOB_FINISH, JOB_RENDER };
typedef struct {
    int kind;
    sp_step_args a;        /* JOB_STEP: accumulate this view; JOB_FINISH: the Adam step's arguments */
    int zero;              /* JOB_FINISH: the replica had no view this batch: zero gradients */
    const sp_camera *cam;  /* JOB_RENDER: render(cam, sh_degree, bg) into rgb */
    int sh_degree;
    float bg[3];
    float *rgb;
} rep_job;

typedef struct rep_backend rep_backend;

typedef struct {
    rep_backend *rb;
    int index; /* the replica */
    cu_backend *b;
    pthread_t th;
    int started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    rep_job q[QN];
    long head, tail; /* calls taken, calls queued */
    int quit, failed;
    char err[512];
} rep_worker;

static int finish_replica(rep_backend *rb, int i, const rep_job *j);

static int run_job(rep_worker *w, const rep_job *j) {
    cu_backend *b = w->b;
    if (j->kind == JOB_FINISH) return finish_replica(w->rb, w->index, j);
    if (j->kind == JOB_RENDER) return b->base.ops->render(&b->base, j->cam, j->sh_degree, j->bg, j->rgb);
    return b->base.ops->train_step(&b->base, &j->a);
}

static void *worker_main(void *p) {
    rep_worker *w = (rep_worker *)p;
    cudaSetDevice(w->b->base.cfg.device);
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (w->head == w->tail && !w->quit) pthread_cond_wait(&w->cv, &w->mu);
        if (w->head == w->tail) break; /* quit, queue empty */
        rep_job job = w->q[w->head % QN];
        /* after a failure the views are skipped, but never the all-reduce: the other devices
         * (and ranks) wait for this one's share of it */
        int skip = w->failed && job.kind != JOB_FINISH;
        pthread_mutex_unlock(&w->mu);
        int rc = skip ? 0 : run_job(w, &job);
        pthread_mutex_lock(&w->mu);
        if (rc && !w->failed) {
            w->failed = 1;
            snprintf(w->err, sizeof w->err, "%s", sp_last_error());
        }
        w->head++;
        pthread_cond_broadcast(&w->cv);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

static void worker_push(rep_worker *w, const rep_job *j) {
    pthread_mutex_lock(&w->mu);
    while (w->tail - w->head == QN) pthread_cond_wait(&w->cv, &w->mu);
    w->q[w->tail % QN] = *j;
    w->tail++;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

/* 1 if a job of the thread failed (drain reports it). */
static int worker_failed(rep_worker *w) {
    pthread_mutex_lock(&w->mu);
    int failed = w->failed;
    pthread_mutex_unlock(&w->mu);
    return failed;
}

/* Waits until the thread launched every queued call; -1 with its error if one failed. */
static int worker_drain(rep_worker *w) {
    if (!w->started) return 0;
    pthread_mutex_lock(&w->mu);
    while (w->head != w->tail) pthread_cond_wait(&w->cv, &w->mu);
    int failed = w->failed;
    w->failed = 0;
    pthread_mutex_unlock(&w->mu);
    if (failed) return sp_error("%s", w->err);
    return 0;
}

static void worker_stop(rep_worker *w) {
    if (!w->started) return;
    pthread_mutex_lock(&w->mu);
    w->quit = 1;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->th, NULL);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    w->started = 0;
}

struct rep_backend {
    sp_backend base;
    sp_backend_ops ops;                 /* k_rep_ops with render_many */
    sp_nccl nc;
    int n;                              /* replicas (devices) of this process */
    cu_backend *rep[SP_MAX_DEVICES];
    ncclComm_t comm[SP_MAX_DEVICES];
    int have_view[SP_MAX_DEVICES];      /* the replica holds gradients of this batch */
    int calls;                          /* train_step calls in the current batch */
    int rank, world;
    long refines;
    uint64_t *d_sum[SP_MAX_DEVICES];    /* checksum scratch: [0] own, [1..] gathered */
    cudaStream_t cs[SP_MAX_DEVICES];    /* the gradient all-reduce's stream */
    cudaEvent_t ev_grads[SP_MAX_DEVICES];                /* on the replica's stream: gradients ready */
    cudaEvent_t ev_chunk[SP_MAX_DEVICES][REDUCE_CHUNKS]; /* on cs: chunk k summed */
    rep_worker work[SP_MAX_DEVICES];    /* launcher threads (several devices) */
    /* the launcher threads meet before and after launching their share of a batch's all-reduce */
    pthread_mutex_t bar_mu;
    pthread_cond_t bar_cv;
    int bar_count, bar_ready;
    long bar_gen;
};

/* Waits until every launcher thread has come here (generation-counted, so it serves again).
 * A view's step may allocate or free device memory, and cudaFree waits for the devices; were a
 * collective already running on one device, waiting for a peer whose thread is inside such a
 * call, neither would go on. So no thread launches its share of a batch's all-reduce before every
 * thread has launched its views, and none goes on to the next view before every thread has
 * launched its share: the order the calling thread gave when it launched them all itself. */
static void launch_barrier(rep_backend *rb) {
    pthread_mutex_lock(&rb->bar_mu);
    long gen = rb->bar_gen;
    if (++rb->bar_count == rb->n) {
        rb->bar_count = 0;
        rb->bar_gen++;
        pthread_cond_broadcast(&rb->bar_cv);
    } else {
        while (gen == rb->bar_gen) pthread_cond_wait(&rb->bar_cv, &rb->bar_mu);
    }
    pthread_mutex_unlock(&rb->bar_mu);
}

/* Every launcher thread idle: the other operations run on the calling thread. */
static int drain(rep_backend *rb) {
    int rc = 0;
    for (int i = 0; i < rb->n; i++)
        if (worker_drain(&rb->work[i])) rc = -1;
    return rc;
}

static int use(rep_backend *rb, int i) {
    return cu_check(cudaSetDevice(rb->rep[i]->base.cfg.device), "select device");
}

static void rep_destroy(sp_backend *base) {
    rep_backend *rb = (rep_backend *)base;
    for (int i = 0; i < rb->n; i++) worker_stop(&rb->work[i]);
    for (int i = 0; i < rb->n; i++) {
        if (!rb->rep[i]) continue;
        use(rb, i);
        cudaStreamSynchronize(rb->rep[i]->st);
        if (rb->cs[i]) cudaStreamSynchronize(rb->cs[i]);
        if (rb->comm[i]) rb->nc.CommDestroy(rb->comm[i]);
        if (rb->d_sum[i]) cudaFree(rb->d_sum[i]);
        if (rb->ev_grads[i]) cudaEventDestroy(rb->ev_grads[i]);
        for (int k = 0; k < REDUCE_CHUNKS; k++)
            if (rb->ev_chunk[i][k]) cudaEventDestroy(rb->ev_chunk[i][k]);
        if (rb->cs[i]) cudaStreamDestroy(rb->cs[i]);
        rb->rep[i]->base.ops->destroy(&rb->rep[i]->base);
    }
    sp_nccl_close(&rb->nc);
    if (rb->bar_ready) {
        pthread_mutex_destroy(&rb->bar_mu);
        pthread_cond_destroy(&rb->bar_cv);
    }
    free(rb);
}

static int rep_upload_views(sp_backend *base, const sp_view *views, int n, sp_alpha_mode alpha) {
    rep_backend *rb = (rep_backend *)base;
    if (drain(rb)) return -1;
    for (int i = 0; i < rb->n; i++)
        if (use(rb, i) || rb->rep[i]->base.ops->upload_views(&rb->rep[i]->base, views, n, alpha)) return -1;
    return 0;
}

static int rep_set_gaussians(sp_backend *base, const sp_gaussians *g, const sp_gaussians *m, const sp_gaussians *v) {
    rep_backend *rb = (rep_backend *)base;
    if (drain(rb)) return -1;
    for (int i = 0; i < rb->n; i++)
        if (use(rb, i) || rb->rep[i]->base.ops->set_gaussians(&rb->rep[i]->base, g, m, v)) return -1;
    rb->calls = 0;
    memset(rb->have_view, 0, sizeof rb->have_view);
    return 0;
}

static int rep_get_gaussians(sp_backend *base, sp_gaussians *g, sp_gaussians *m, sp_gaussians *v) {
    rep_backend *rb = (rep_backend *)base;
    if (drain(rb)) return -1;
    if (use(rb, 0)) return -1;
    return rb->rep[0]->base.ops->get_gaussians(&rb->rep[0]->base, g, m, v);
}

static int rep_num_gaussians(sp_backend *base) { return ((rep_backend *)base)->rep[0]->n; }

/* Chunks of a gradient buffer of count floats (at most max). */
static int chunks_of(size_t count, int max) {
    size_t c = count / CHUNK_MIN;
    if (max < 1 || max > REDUCE_CHUNKS) max = DEFAULT_CHUNKS;
    return c < 1 ? 1 : c > (size_t)max ? max : (int)c;
}

/* Chunk k of a gradient buffer of count floats: floats *lo .. *hi-1. */

static void chunk_range(size_t count, int chunks, int k, size_t *lo, size_t *hi) {
    size_t step = (count + chunks - 1) / chunks;
    step = (step + CHUNK_ALIGN - 1) / CHUNK_ALIGN * CHUNK_ALIGN;
    *lo = (size_t)k * step < count ? (size_t)k * step : count;
    *hi = *lo + step < count ? *lo + step : count;
}

/* Replicas first .. first+num-1 (all of this process, or one launcher thread's own): the
 * gradients are summed over every device of every rank in place, chunk by chunk on the stream cs,
 * and Adam updates each chunk on the replica's stream once it has landed. Every replica has the
 * same count (the replicas are identical), so every rank issues the same collectives. */
static int reduce_and_adam(rep_backend *rb, int first, int num, const sp_step_args *a) {
    size_t count = (size_t)rb->rep[first]->n * cu_floats(rb->rep[first]->K);
    int chunks = chunks_of(count, rb->base.cfg.reduce_chunks);
    for (int i = first; i < first + num; i++) {
        if (use(rb, i) || cu_check(cudaEventRecord(rb->ev_grads[i], rb->rep[i]->st), "gradients ready") ||
            cu_check(cudaStreamWaitEvent(rb->cs[i], rb->ev_grads[i], 0), "gradients ready"))
            return -1;
        cu_prof_open(rb->rep[i], 0);
    }
    int rc = 0;
    for (int k = 0; k < chunks && rc == 0 && count; k++) {
        size_t lo, hi;
        chunk_range(count, chunks, k, &lo, &hi);
        if (hi <= lo) break;
        if (sp_nccl_check(&rb->nc, rb->nc.GroupStart(), "group start")) {
            rc = -1;
            break;
        }
        for (int i = first; i < first + num && rc == 0; i++) {
            float *g = (float *)rb->rep[i]->grads.p + lo;
            rc = sp_nccl_check(&rb->nc, rb->nc.AllReduce(g, g, hi - lo, ncclFloat32, ncclSum, rb->comm[i], rb->cs[i]),
                               "all-reduce of the gradients");
        }
        if (sp_nccl_check(&rb->nc, rb->nc.GroupEnd(), "all-reduce of the gradients")) rc = -1;
        for (int i = first; i < first + num && rc == 0; i++) {
            cu_backend *b = rb->rep[i];
            if (use(rb, i) || cu_check(cudaEventRecord(rb->ev_chunk[i][k], rb->cs[i]), "gradients summed") ||
                cu_check(cudaStreamWaitEvent(b->st, rb->ev_chunk[i][k], 0), "gradients summed") ||
                cuda_backend_adam_range(b, a, (int64_t)lo, (int64_t)hi))
                rc = -1;
        }
    }
    for (int i = first; i < first + num; i++) {
        rb->rep[i]->grads_pending = 0;
        cu_prof_close(rb->rep[i]);
    }
    return rc;
}

/* The end of a batch for replica i, on its launcher thread: its share of the all-reduce, then
 * Adam. Each thread issues its own device's collectives, so the calling thread never waits for
 * the views of a batch to be launched; the threads wait for each other instead (launch_barrier). */
static int finish_replica(rep_backend *rb, int i, const rep_job *j) {
    int rc = use(rb, i);
    if (rc == 0 && j->zero) cuda_backend_zero_grads(rb->rep[i]);
    launch_barrier(rb); /* every view of the batch launched */
    if (rc == 0) rc = reduce_and_adam(rb, i, 1, &j->a);
    launch_barrier(rb); /* every share launched (even after a failure: the others wait here) */
    return rc;
}

/* Sums the replicas' gradients over every device of every rank, in place, then Adam on each:
 * queued behind the views on every launcher thread, or (one device in this process) launched
 * here. */
static int finish_batch(rep_backend *rb, const sp_step_args *a) {
    int rc = 0;
    if (rb->work[0].started) {
        for (int i = 0; i < rb->n; i++) {
            rep_job job = {JOB_FINISH};
            job.a = *a;
            job.zero = !rb->have_view[i]; /* no view this batch (the run's last, short batch): adds nothing */
            worker_push(&rb->work[i], &job);
        }
    } else {
        for (int i = 0; i < rb->n && rc == 0; i++)
            if (!rb->have_view[i]) {
                if (use(rb, i)) rc = -1;
                else cuda_backend_zero_grads(rb->rep[i]);
            }
        if (rc == 0) rc = reduce_and_adam(rb, 0, rb->n, a);
    }
    rb->calls = 0;
    memset(rb->have_view, 0, sizeof rb->have_view);
    return rc;
}

static int rep_train_step(sp_backend *base, const sp_step_args *a) {
    rep_backend *rb = (rep_backend *)base;
    if (a->adam_sparse) /* which Gaussians were in view differs between the replicas' views */
        return sp_error("adam.sparse: sparse Adam trains on one device; set adam.sparse = false to train on several");
    int i = rb->calls % rb->n;
    rb->calls++;
    if (a->view >= 0) { /* view -1: a slot past the end of the run */
        rep_job job = {JOB_STEP};
        job.a = *a;
        job.a.accumulate = 1;
        if (rb->work[i].started) {
            if (worker_failed(&rb->work[i])) return drain(rb); /* reports the failure */
            worker_push(&rb->work[i], &job);
        } else if (use(rb, i) || rb->rep[i]->base.ops->train_step(&rb->rep[i]->base, &job.a)) {
            return -1;
        }
        rb->have_view[i] = 1;
    }
    return a->accumulate ? 0 : finish_batch(rb, a);
}

static int rep_take_loss(sp_backend *base, double *mean_loss, int *steps) {
    rep_backend *rb = (rep_backend *)base;
    if (drain(rb)) return -1;
    double sum = 0;
    int total = 0, bad = 0;
    for (int i = 0; i < rb->n; i++) {
        double m;
        int k;
        if (use(rb, i) || rb->rep[i]->base.ops->take_loss(&rb->rep[i]->base, &m, &k)) return -1;
        if (k && !isfinite(m)) bad = 1;
        else sum += m * k;
        total += k;
    }
    if (steps) *steps = total;
    if (mean_loss) *mean_loss = bad ? NAN : (total ? sum / total : 0.0);
    return 0;
}

/* Order-independent 64-bit checksum of the parameters: sum over elements of bits * odd weight
 * (integer adds commute, so the result does not depend on the thread order). */
__global__ void k_checksum(const uint32_t *p, int64_t count, unsigned long long *out) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= count) return;
    unsigned long long h = (unsigned long long)p[i] * (2ull * (unsigned long long)i + 1ull);
    h ^= h >> 29;
    atomicAdd(out, h);
}

static int check_replicas(rep_backend *rb) {
    int all = rb->n * rb->world;
    for (int i = 0; i < rb->n; i++) {
        cu_backend *b = rb->rep[i];
        if (use(rb, i)) return -1;
        if (!rb->d_sum[i] && cu_check(cudaMalloc((void **)&rb->d_sum[i], (size_t)(all + 1) * 8), "checksum")) return -1;
        int64_t count = (int64_t)b->n * cu_floats(b->K);
        cudaMemsetAsync(rb->d_sum[i], 0, 8, b->st);
        if (count)
            k_checksum<<<CU_GRID(count, 256), 256, 0, b->st>>>((const uint32_t *)b->params.p, count,
                                                               (unsigned long long *)rb->d_sum[i]);
    }
    if (sp_nccl_check(&rb->nc, rb->nc.GroupStart(), "group start")) return -1;
    for (int i = 0; i < rb->n; i++)
        if (sp_nccl_check(&rb->nc, rb->nc.AllGather(rb->d_sum[i], rb->d_sum[i] + 1, 1, ncclUint64, rb->comm[i],
                                                    rb->rep[i]->st),
                          "all-gather of the checksums")) {
            rb->nc.GroupEnd();
            return -1;
        }
    if (sp_nccl_check(&rb->nc, rb->nc.GroupEnd(), "all-gather of the checksums")) return -1;
    uint64_t *h = (uint64_t *)malloc((size_t)all * 8);
    if (use(rb, 0) || cu_check(cudaMemcpy(h, rb->d_sum[0] + 1, (size_t)all * 8, cudaMemcpyDeviceToHost), "checksum")) {
        free(h);
        return -1;
    }
    int rc = 0;
    for (int d = 1; d < all && !rc; d++)
        if (h[d] != h[0])
            rc = sp_error("backend.check_replicas: after refine %ld the parameters of device %d (rank %d) differ from "
                          "device 0's (checksum %016llx against %016llx): the replicas diverged",
                          rb->refines, d, d / rb->n, (unsigned long long)h[d], (unsigned long long)h[0]);
    free(h);
    return rc;
}

static int rep_refine(sp_backend *base, const sp_refine_args *a, sp_refine_result *r) {
    rep_backend *rb = (rep_backend *)base;
    if (drain(rb)) return -1;
    /* statistics: grad_accum and grad_count summed, max_radius the max, over every device */
    if (sp_nccl_check(&rb->nc, rb->nc.GroupStart(), "group start")) return -1;
    for (int i = 0; i < rb->n; i++) {
        cu_backend *b = rb->rep[i];
        float *st = (float *)b->stats.p;
        size_t n = (size_t)b->n;
        if (!n) continue;
        if (sp_nccl_check(&rb->nc, rb->nc.AllReduce(st, st, 2 * n, ncclFloat32, ncclSum, rb->comm[i], b->st),
                          "all-reduce of the densification statistics") ||
            sp_nccl_check(&rb->nc, rb->nc.AllReduce(st + 2 * n, st + 2 * n, n, ncclFloat32, ncclMax, rb->comm[i], b->st),
                          "all-reduce of the screen radii")) {
            rb->nc.GroupEnd();
            return -1;
        }
    }
    if (sp_nccl_check(&rb->nc, rb->nc.GroupEnd(), "all-reduce of the densification statistics")) return -1;
    sp_refine_result first = {0};
    for (int i = 0; i < rb->n; i++) {
        sp_refine_result ri;
        if (use(rb, i) || rb->rep[i]->base.ops->refine(&rb->rep[i]->base, a, &ri)) return -1;
        if (i == 0) first = ri;
        else if (ri.n_after != first.n_after)
            return sp_error("replicated refine: device %d kept %d Gaussians, device 0 %d: the replicas diverged",
                            rb->rep[i]->base.cfg.device, ri.n_after, first.n_after);
    }
    rb->refines++;
    if (r) *r = first;
    if (rb->base.cfg.check_replicas) return check_replicas(rb);
    return 0;
}

static int rep_render(sp_backend *base, const sp_camera *cam, int sh_degree, const float bg[3], float *rgb) {
    rep_backend *rb = (rep_backend *)base;
    if (drain(rb)) return -1;
    if (use(rb, 0)) return -1;
    return rb->rep[0]->base.ops->render(&rb->rep[0]->base, cam, sh_degree, bg, rgb);
}

/* Camera j on replica j % n, each launcher thread rendering its share in turn: the replicas are
 * identical, so every image is the one replica 0 would render. */
static int rep_render_many(sp_backend *base, const sp_camera *const *cams, int count, int sh_degree, const float bg[3],
                           float *const *rgb) {
    rep_backend *rb = (rep_backend *)base;
    if (drain(rb)) return -1;
    if (!rb->work[0].started) {
        for (int j = 0; j < count; j++)
            if (rep_render(base, cams[j], sh_degree, bg, rgb[j])) return -1;
        return 0;
    }
    for (int j = 0; j < count; j++) {
        rep_job job = {JOB_RENDER};
        job.cam = cams[j];
        job.sh_degree = sh_degree;
        memcpy(job.bg, bg, sizeof job.bg);
        job.rgb = rgb[j];
        worker_push(&rb->work[j % rb->n], &job);
    }
    return drain(rb);
}

static int rep_params_finite(sp_backend *base) {
    rep_backend *rb = (rep_backend *)base;
    if (drain(rb)) return 0;
    if (use(rb, 0)) return 0;
    return rb->rep[0]->base.ops->params_finite(&rb->rep[0]->base);
}

static int rep_get_profile(sp_backend *base, sp_profile *p) {
    rep_backend *rb = (rep_backend *)base;
    if (drain(rb)) return -1;
    if (use(rb, 0)) return -1;
    return rb->rep[0]->base.ops->get_profile(&rb->rep[0]->base, p);
}

static const sp_backend_ops k_rep_ops = {
    "cuda",          rep_destroy,     rep_upload_views, rep_set_gaussians, rep_get_gaussians, rep_num_gaussians,
    rep_train_step,  rep_take_loss,   rep_refine,       rep_render,        rep_params_finite, rep_get_profile,
    NULL,
};

/* The devices exist and are distinct; NCCL loads. */
static int check_devices(const sp_backend_config *cfg) {
    int count = sp_cuda_device_count();
    for (int i = 0; i < cfg->num_devices; i++)
        if (cfg->devices[i] < 0 || cfg->devices[i] >= count)
            return sp_error("backend.devices: device %d does not exist (%d CUDA device%s visible%s)", cfg->devices[i],
                            count, count == 1 ? "" : "s",
                            cfg->world > 1 ? "; with a count, process of local rank l uses devices l*N .. l*N+N-1" : "");
    return 0;
}

extern "C" int sp_replicated_describe(const sp_backend_config *cfg, char *out, size_t n) {
    sp_nccl nc;
    if (check_devices(cfg) || sp_nccl_open(&nc)) {
        snprintf(out, n, "%s", sp_last_error());
        return -1;
    }
    int v = nc.version;
    sp_nccl_close(&nc);
    int len = snprintf(out, n, "cuda x %d device%s (", cfg->num_devices, cfg->num_devices == 1 ? "" : "s");
    for (int i = 0; i < cfg->num_devices && len > 0 && (size_t)len < n; i++)
        len += snprintf(out + len, n - len, "%s%d", i ? ", " : "", cfg->devices[i]);
    if (len > 0 && (size_t)len < n)
        snprintf(out + len, n - len, ")%s, NCCL %d.%d.%d%s", cfg->world > 1 ? " per process" : "", v / 10000,
                 (v / 100) % 100, v % 100, cfg->world > 1 ? "; several processes" : "");
    return 0;
}

extern "C" sp_backend *sp_replicated_create(const sp_backend_config *cfg) {
    if (cfg->num_devices < 1 || cfg->num_devices > SP_MAX_DEVICES) {
        sp_error("backend.devices: %d devices (1 to %d)", cfg->num_devices, SP_MAX_DEVICES);
        return NULL;
    }
    if (check_devices(cfg)) return NULL;
    if (cfg->world > 1 && !cfg->dist_file) {
        sp_error("%d processes but no id file (the id_file of the process settings, through which rank 0 hands "
                 "the NCCL id to the others)", cfg->world);
        return NULL;
    }
    rep_backend *rb = SP_NEW(rep_backend, 1);
    rb->ops = k_rep_ops;
    rb->ops.render_many = rep_render_many;
    rb->base.ops = &rb->ops;
    rb->base.cfg = *cfg;
    rb->base.cfg.dist_file = NULL; /* not kept: the caller's string */
    rb->rank = cfg->world > 1 ? cfg->rank : 0;
    rb->world = cfg->world > 1 ? cfg->world : 1;
    if (sp_nccl_open(&rb->nc)) goto fail;
    for (int i = 0; i < cfg->num_devices; i++) {
        sp_backend_config one = *cfg;
        one.device = cfg->devices[i];
        one.num_devices = 1;
        one.world = 1;
        one.dist_file = NULL;
        sp_backend *b = sp_cuda_backend_create(&one);
        if (!b) goto fail;
        rb->rep[rb->n++] = (cu_backend *)b;
    }
    {
        ncclUniqueId id;
        if (rb->rank == 0) {
            if (sp_nccl_check(&rb->nc, rb->nc.GetUniqueId(&id), "unique id")) goto fail;
            if (rb->world > 1 && sp_dist_write_id(cfg->dist_file, &id, sizeof id)) goto fail;
        } else if (sp_dist_read_id(cfg->dist_file, &id, sizeof id, ID_TIMEOUT_S)) {
            goto fail;
        }
        int total = rb->n * rb->world;
        if (sp_nccl_check(&rb->nc, rb->nc.GroupStart(), "group start")) goto fail;
        for (int i = 0; i < rb->n; i++) {
            if (use(rb, i)) {
                rb->nc.GroupEnd();
                goto fail;
            }
            if (sp_nccl_check(&rb->nc, rb->nc.CommInitRank(&rb->comm[i], total, id, rb->rank * rb->n + i),
                              "communicator")) {
                rb->nc.GroupEnd();
                goto fail;
            }
        }
        if (sp_nccl_check(&rb->nc, rb->nc.GroupEnd(), "communicator (every rank must start with the same "
                                                      "world_size and backend.devices)"))
            goto fail;
        /* every rank has read the id once the communicators exist: the file has served */
        if (rb->rank == 0 && rb->world > 1) unlink(cfg->dist_file);
    }
    for (int i = 0; i < rb->n; i++) {
        if (use(rb, i) || cu_check(cudaStreamCreateWithFlags(&rb->cs[i], cudaStreamNonBlocking), "create stream") ||
            cu_check(cudaEventCreateWithFlags(&rb->ev_grads[i], cudaEventDisableTiming), "create event"))
            goto fail;
        for (int k = 0; k < REDUCE_CHUNKS; k++)
            if (cu_check(cudaEventCreateWithFlags(&rb->ev_chunk[i][k], cudaEventDisableTiming), "create event"))
                goto fail;
    }
    pthread_mutex_init(&rb->bar_mu, NULL);
    pthread_cond_init(&rb->bar_cv, NULL);
    rb->bar_ready = 1;
    if (rb->n > 1)
        for (int i = 0; i < rb->n; i++) {
            rep_worker *w = &rb->work[i];
            w->rb = rb;
            w->index = i;
            w->b = rb->rep[i];
            pthread_mutex_init(&w->mu, NULL);
            pthread_cond_init(&w->cv, NULL);
            if (pthread_create(&w->th, NULL, worker_main, w)) {
                pthread_mutex_destroy(&w->mu);
                pthread_cond_destroy(&w->cv);
                sp_error("cannot start the launcher thread of device %d", rb->rep[i]->base.cfg.device);
                goto fail;
            }
            w->started = 1;
        }
    return &rb->base;
fail:
    rep_destroy(&rb->base);
    return NULL;
}
