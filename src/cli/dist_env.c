/* dist_env.c — where this process stands among several, read from the environment for
 * splat_set_dist: the library reads no environment variable, the program does (docs/scale.md
 * lists the variables). Every bad value is an error naming the variable. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

/* A non-negative decimal integer filling the whole text. */
static int parse_uint(const char *s, int *out) {
    if (!s || !*s) return -1;
    long v = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9') return -1;
        v = v * 10 + (*p - '0');
        if (v > INT_MAX) return -1;
    }
    *out = (int)v;
    return 0;
}

/* One integer variable: -1 with an error when set but not a non-negative integer; *set = 0 when unset. */
static int env_int(const char *name, int *out, int *set) {
    const char *v = getenv(name);
    *set = v != NULL;
    if (!v) return 0;
    if (parse_uint(v, out)) return cli_error("%s = \"%s\": expected a non-negative integer", name, v);
    return 0;
}

int cli_dist_from_env(const char *dist_file, splat_dist *d) {
    memset(d, 0, sizeof *d);
    d->world_size = 1;
    const char *rk = "SPLAT_RANK", *ws = "SPLAT_WORLD_SIZE", *lr = "SPLAT_LOCAL_RANK";
    int mpi = 0;
    if (!getenv("SPLAT_RANK") && getenv("OMPI_COMM_WORLD_RANK")) {
        rk = "OMPI_COMM_WORLD_RANK", ws = "OMPI_COMM_WORLD_SIZE", lr = "OMPI_COMM_WORLD_LOCAL_RANK";
        mpi = 1;
    }
    int have_rank, have_world, have_local;
    if (env_int(rk, &d->rank, &have_rank) || env_int(ws, &d->world_size, &have_world) ||
        env_int(lr, &d->local_rank, &have_local))
        return -1;
    if (!have_world) d->world_size = 1;
    if (have_rank && !have_world) return cli_error("%s is set but %s is not: set both (and SPLAT_DIST_FILE)", rk, ws);
    if (have_world && !have_rank) return cli_error("%s is set but %s is not: every process needs its rank", ws, rk);
    if (d->world_size < 1) return cli_error("%s = %d: the world size must be at least 1", ws, d->world_size);
    if (d->rank >= d->world_size) return cli_error("%s = %d is outside [0, %s = %d)", rk, d->rank, ws, d->world_size);
    if (!have_local) d->local_rank = mpi ? 0 : d->rank; /* SPLAT_*: one machine unless told */
    const char *f = dist_file ? dist_file : getenv("SPLAT_DIST_FILE");
    if (d->world_size > 1) {
        if (!f || !*f)
            return cli_error("%s = %d but no id file: give --dist-file PATH (or SPLAT_DIST_FILE), a path every "
                             "process can read (a shared folder across machines)", ws, d->world_size);
        d->id_file = f;
    }
    return 0;
}
