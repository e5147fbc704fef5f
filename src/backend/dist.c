/* dist.c — the device list, the process's rank from the environment and the NCCL id file
 * exchange (dist.h). */
#include "backend/dist.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/core.h"

#define ID_MAGIC "splat-nccl-id 1\n"

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

int sp_parse_devices(const char *text, int local_rank, int *ids) {
    int n = 0;
    if (!text || !*text) return sp_error("backend.devices is empty (a count such as \"2\" or ids such as \"0,1\")");
    if (!strchr(text, ',')) {
        int count;
        if (parse_uint(text, &count) || count < 1 || count > SP_MAX_DEVICES)
            return sp_error("backend.devices = \"%s\": expected a count of 1 to %d or a list of device ids such as "
                            "\"0,1\"", text, SP_MAX_DEVICES);
        for (int i = 0; i < count; i++) ids[i] = local_rank * count + i;
        return count;
    }
    char buf[256];
    snprintf(buf, sizeof buf, "%s", text);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        while (*tok == ' ') tok++;
        size_t len = strlen(tok);
        while (len && tok[len - 1] == ' ') tok[--len] = 0;
        int id;
        if (parse_uint(tok, &id))
            return sp_error("backend.devices = \"%s\": \"%s\" is not a device id (ids are 0, 1, ...)", text, tok);
        if (n == SP_MAX_DEVICES) return sp_error("backend.devices = \"%s\": more than %d devices", text, SP_MAX_DEVICES);
        for (int k = 0; k < n; k++)
            if (ids[k] == id) return sp_error("backend.devices = \"%s\": device %d is listed twice", text, id);
        ids[n++] = id;
    }
    if (n == 0) return sp_error("backend.devices = \"%s\": no device id", text);
    return n;
}

/* One integer variable: -1 with an error when set but not a non-negative integer; *set = 0 when unset. */
static int env_int(const char *name, int *out, int *set) {
    const char *v = getenv(name);
    *set = v != NULL;
    if (!v) return 0;
    if (parse_uint(v, out)) return sp_error("%s = \"%s\": expected a non-negative integer", name, v);
    return 0;
}

int sp_dist_from_env(sp_dist *d) {
    memset(d, 0, sizeof *d);
    d->world = 1;
    const char *rk = "SPLAT_RANK", *ws = "SPLAT_WORLD_SIZE", *lr = "SPLAT_LOCAL_RANK";
    if (!getenv("SPLAT_RANK") && getenv("OMPI_COMM_WORLD_RANK")) {
        rk = "OMPI_COMM_WORLD_RANK", ws = "OMPI_COMM_WORLD_SIZE", lr = "OMPI_COMM_WORLD_LOCAL_RANK";
        d->from_mpi = 1;
    }
    int have_rank, have_world, have_local;
    if (env_int(rk, &d->rank, &have_rank) || env_int(ws, &d->world, &have_world) ||
        env_int(lr, &d->local_rank, &have_local))
        return -1;
    if (!have_world) d->world = 1;
    if (have_rank && !have_world) return sp_error("%s is set but %s is not: set both (and SPLAT_DIST_FILE)", rk, ws);
    if (have_world && !have_rank) return sp_error("%s is set but %s is not: every process needs its rank", ws, rk);
    if (d->world < 1) return sp_error("%s = %d: the world size must be at least 1", ws, d->world);
    if (d->rank >= d->world)
        return sp_error("%s = %d is outside [0, %s = %d)", rk, d->rank, ws, d->world);
    if (!have_local) d->local_rank = d->from_mpi ? 0 : d->rank; /* SPLAT_*: one machine unless told */
    const char *f = getenv("SPLAT_DIST_FILE");
    if (d->world > 1) {
        if (!f || !*f)
            return sp_error("%s = %d but no id file: give --dist-file PATH (or SPLAT_DIST_FILE), a path every "
                            "process can read (a shared folder across machines)", ws, d->world);
        if (strlen(f) >= sizeof d->file) return sp_error("SPLAT_DIST_FILE: the path is too long");
        snprintf(d->file, sizeof d->file, "%s", f);
    }
    return 0;
}

int sp_dist_backend_config(sp_backend_config *bc, const char *devices, int check_replicas, const sp_dist *d) {
    int n = sp_parse_devices(devices, d->local_rank, bc->devices);
    if (n < 0) return -1;
    bc->num_devices = n;
    bc->device = bc->devices[0];
    bc->check_replicas = check_replicas;
    bc->rank = d->rank;
    bc->world = d->world;
    bc->dist_file = d->file[0] ? d->file : NULL;
    return 0;
}

int sp_dist_write_id(const char *path, const void *id, size_t n) {
    size_t hl = strlen(ID_MAGIC);
    unsigned char *buf = sp_malloc(hl + n);
    memcpy(buf, ID_MAGIC, hl);
    memcpy(buf + hl, id, n);
    int rc = sp_write_file_atomic(path, buf, hl + n);
    free(buf);
    if (rc) return sp_error_prefix("NCCL id file");
    return 0;
}

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) && errno == EINTR) {
    }
}

int sp_dist_read_id(const char *path, void *id, size_t n, double timeout_s) {
    size_t hl = strlen(ID_MAGIC);
    double t0 = sp_now();
    for (;;) {
        FILE *f = fopen(path, "rb");
        if (f) {
            unsigned char buf[4096];
            size_t got = fread(buf, 1, sizeof buf, f);
            fclose(f);
            /* the file appears by rename, complete: anything else is not an id file */
            if (got != hl + n || memcmp(buf, ID_MAGIC, hl))
                return sp_error("%s: not an NCCL id file written by splat (%zu bytes); remove it, or give each run "
                                "its own --dist-file", path, got);
            memcpy(id, buf + hl, n);
            return 0;
        }
        if (sp_now() - t0 >= timeout_s)
            return sp_error("%s: no NCCL id after waiting %.0f s for rank 0 to write it (is rank 0 running, with the "
                            "same --dist-file on a folder this process sees?)", path, timeout_s);
        sleep_ms(20);
    }
}
