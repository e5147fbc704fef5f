/* dist.c — the device list, the process's place among several (as the program gives it) and the
 * NCCL id file exchange (dist.h). */
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

int sp_dist_check(const sp_dist *d) {
    if (d->world < 1) return sp_error("several processes: world_size = %d; it must be at least 1", d->world);
    if (d->rank < 0 || d->rank >= d->world)
        return sp_error("several processes: rank = %d is outside [0, world_size = %d)", d->rank, d->world);
    if (d->local_rank < 0) return sp_error("several processes: local_rank = %d is negative", d->local_rank);
    if (d->world > 1 && !d->file[0])
        return sp_error("several processes: world_size = %d but no id_file, the file through which rank 0 hands "
                        "the NCCL id to the others (a path every process can read: a shared folder across "
                        "machines)", d->world);
    return 0;
}

/* The calling thread's current placement (NULL: this process alone). */
static _Thread_local const sp_dist *t_dist;

const sp_dist *sp_dist_use(const sp_dist *d) {
    const sp_dist *old = t_dist;
    t_dist = d;
    return old;
}

int sp_dist_current(sp_dist *d) {
    if (t_dist) {
        *d = *t_dist;
    } else {
        memset(d, 0, sizeof *d);
        d->world = 1;
    }
    return sp_dist_check(d);
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
                                "its own id file", path, got);
            memcpy(id, buf + hl, n);
            return 0;
        }
        if (sp_now() - t0 >= timeout_s)
            return sp_error("%s: no NCCL id after waiting %.0f s for rank 0 to write it (is rank 0 running, with the "
                            "same id file on a folder this process sees?)", path, timeout_s);
        sleep_ms(20);
    }
}
