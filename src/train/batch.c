/* batch.c — the batch schedule (batch.h): slots of an Adam step over ranks and devices, the
 * views-seen events and the learning-rate factor. */
#include "train/batch.h"

#include <math.h>
#include <string.h>

#include "core/core.h"

void sp_batch_plan_init(sp_batch_plan *p, int batch, int devices, int world, int rank) {
    p->batch = batch < 1 ? 1 : batch;
    p->devices = devices < 1 ? 1 : devices;
    p->world = world < 1 ? 1 : world;
    p->rank = rank < 0 || rank >= p->world ? 0 : rank;
    p->local = p->batch * p->devices;
    p->global = p->local * p->world;
}

int sp_batch_slot(const sp_batch_plan *p, int j) {
    int all = p->devices * p->world;      /* devices over every rank */
    int dev = p->rank * p->devices + j % p->devices; /* this call's global device */
    return dev + all * (j / p->devices);
}

int sp_batch_adam_steps(int views, int global) {
    if (views <= 0) return 0;
    return (int)(((int64_t)views + global - 1) / global);
}

int sp_batch_crossed(int prev, int cur, int every) {
    if (every <= 0 || cur <= prev) return 0;
    return cur / every > prev / every;
}

double sp_batch_lr_scale(const char *rule, int global) {
    if (rule && !strcmp(rule, "sqrt")) return sqrt((double)(global < 1 ? 1 : global));
    return 1.0;
}
