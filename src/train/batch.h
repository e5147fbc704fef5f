/* batch.h — the batch schedule of data-parallel training: which slot of an Adam step each call
 * takes (one global view sequence, train/viewsched.h; every rank takes its own slots), how
 * schedules written in views seen map onto Adam steps, and the learning-rate rule for larger
 * batches. Pure functions, unit-tested (tests/test_batch.c). docs/scale.md explains the rules. */
#ifndef SPLAT_BATCH_H
#define SPLAT_BATCH_H

#include <stdint.h>

/* One Adam step sums the gradients of `global` views: world processes x local devices x the
 * per-device batch. The views of an Adam step are the global slots 0..global-1; slot g goes to
 * device g % (world * devices) (devices of rank r are r*devices .. r*devices+devices-1), so a
 * process with one device per rank and a process with all of them render the same views. */
typedef struct {
    int batch;   /* views per device per Adam step (trainer.batch) */
    int devices; /* devices of this process */
    int world, rank;
    int global;  /* batch * devices * world */
    int local;   /* slots of this process: batch * devices */
} sp_batch_plan;

void sp_batch_plan_init(sp_batch_plan *p, int batch, int devices, int world, int rank);
/* The global slot (0-based offset in the Adam step) of this process's j-th call (0..local-1);
 * calls go to the process's devices in turn (call j -> device j % devices). */
int sp_batch_slot(const sp_batch_plan *p, int j);

/* Adam steps taken once `views` views were seen in batches of `global` (the last may be short). */
int sp_batch_adam_steps(int views, int global);
/* 1 if a multiple of `every` lies in (prev, cur]: a views-seen event due within one batch. */
int sp_batch_crossed(int prev, int cur, int every);
/* Learning-rate factor for a batch of `global` views: "sqrt" = sqrt(global), "none" = 1. */
double sp_batch_lr_scale(const char *rule, int global);

#endif
