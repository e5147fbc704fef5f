/* zip.c — a stored zip writer and an in-memory zip reader (zip.h), enough for .sog archives.
 * Layout (PKWARE APPNOTE): per entry a local header (signature 0x04034b50, 30 bytes + name)
 * and its data; then the central directory, one record per entry (0x02014b50, 46 bytes + name,
 * extra field and comment); then the end record (0x06054b50, 22 bytes + comment) holding the
 * number of entries and the directory's size and offset. All numbers little-endian. */
#include "io/zip.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "core/core.h"
#include "io/model_check.h"

enum { LOCAL_HEADER = 30, CENTRAL_RECORD = 46, END_RECORD = 22 };
#define SIG_LOCAL 0x04034b50u
#define SIG_CENTRAL 0x02014b50u
#define SIG_END 0x06054b50u
#define DOS_DATE_1980 0x21 /* 1980-01-01: fixed, so the same model gives the same bytes */
/* Most bytes one deflated byte can give (deflate's longest match per 258 bytes, about 1:1032). */
#define INFLATE_RATIO 1100

static void put16(uint8_t *p, unsigned v) { p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8); }
static void put32(uint8_t *p, uint32_t v) {
    for (int k = 0; k < 4; k++) p[k] = (uint8_t)(v >> (8 * k));
}
static unsigned get16(const uint8_t *p) { return (unsigned)p[0] | (unsigned)p[1] << 8; }
static uint32_t get32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint32_t crc_of(const void *data, size_t n) {
    uLong c = crc32(0L, Z_NULL, 0);
    const Bytef *p = data;
    while (n > 0) { /* zlib takes 32-bit lengths */
        uInt m = (uInt)(n < (1u << 30) ? n : (1u << 30));
        c = crc32(c, p, m);
        p += m, n -= m;
    }
    return (uint32_t)c;
}

/* The fields local headers and central records share, from "version needed" to the name
 * length: version 2.0, flags 0x800 (UTF-8 names), stored, fixed time, crc, sizes. */
static void common_fields(uint8_t *p, uint32_t crc, uint32_t size, size_t name_len) {
    put16(p, 20);
    put16(p + 2, 0x800);
    put16(p + 4, 0);
    put16(p + 6, 0);
    put16(p + 8, DOS_DATE_1980);
    put32(p + 10, crc);
    put32(p + 14, size);
    put32(p + 18, size);
    put16(p + 22, (unsigned)name_len);
}

int sp_zip_write(const char *path, const sp_zip_item *items, int n) {
    uint64_t total = END_RECORD;
    for (int i = 0; i < n; i++) total += LOCAL_HEADER + CENTRAL_RECORD + 2 * strlen(items[i].name) + items[i].size;
    if (total >= 0xffffffffu || n > 0xffff)
        return sp_error("%s: %llu bytes in %d entries is more than a zip without zip64 holds", path,
                        (unsigned long long)total, n);
    uint32_t *offsets = sp_model_buffer(path, (size_t)n + 1, sizeof *offsets, "the zip directory");
    uint32_t *crcs = sp_model_buffer(path, (size_t)n + 1, sizeof *crcs, "the zip directory");
    if (!offsets || !crcs) {
        free(offsets), free(crcs);
        return -1;
    }
    sp_afile af;
    if (sp_afile_open(&af, path)) {
        free(offsets), free(crcs);
        return -1;
    }
    uint8_t h[CENTRAL_RECORD];
    uint32_t at = 0;
    for (int i = 0; i < n; i++) {
        size_t len = strlen(items[i].name);
        offsets[i] = at;
        crcs[i] = crc_of(items[i].data, items[i].size);
        put32(h, SIG_LOCAL);
        common_fields(h + 4, crcs[i], (uint32_t)items[i].size, len);
        put16(h + 28, 0); /* no extra field */
        fwrite(h, 1, LOCAL_HEADER, af.f);
        fwrite(items[i].name, 1, len, af.f);
        if (items[i].size) fwrite(items[i].data, 1, items[i].size, af.f);
        at += (uint32_t)(LOCAL_HEADER + len + items[i].size);
    }
    uint32_t dir_at = at;
    for (int i = 0; i < n; i++) {
        size_t len = strlen(items[i].name);
        memset(h, 0, sizeof h);
        put32(h, SIG_CENTRAL);
        put16(h + 4, 20); /* version made by: 2.0, MS-DOS attributes */
        common_fields(h + 6, crcs[i], (uint32_t)items[i].size, len);
        /* extra field, comment, disk, attributes: 0 */
        put32(h + 42, offsets[i]);
        fwrite(h, 1, CENTRAL_RECORD, af.f);
        fwrite(items[i].name, 1, len, af.f);
        at += (uint32_t)(CENTRAL_RECORD + len);
    }
    uint8_t e[END_RECORD] = {0};
    put32(e, SIG_END);
    put16(e + 8, (unsigned)n);
    put16(e + 10, (unsigned)n);
    put32(e + 12, at - dir_at);
    put32(e + 16, dir_at);
    fwrite(e, 1, END_RECORD, af.f);
    free(offsets), free(crcs);
    return sp_afile_commit(&af);
}

void sp_zip_close(sp_zip *z) {
    for (int i = 0; i < z->n; i++) free(z->entries[i].name);
    free(z->entries);
    z->entries = NULL;
    z->n = 0;
}

int sp_zip_open(sp_zip *z, const char *path, const void *data, size_t size) {
    memset(z, 0, sizeof *z);
    z->path = path, z->data = data, z->size = size;
    const uint8_t *d = data;
    /* the end record: the last signature whose comment runs exactly to the end of the file */
    size_t end = 0;
    int found = 0;
    if (size >= END_RECORD)
        for (size_t at = size - END_RECORD + 1; at-- > 0 && size - at <= END_RECORD + 0xffff;)
            if (get32(d + at) == SIG_END && at + END_RECORD + get16(d + at + 20) == size) {
                end = at, found = 1;
                break;
            }
    if (!found) return sp_error("%s: not a zip archive (no end of central directory record)", path);
    unsigned count = get16(d + end + 10);
    uint32_t dir_size = get32(d + end + 12), dir_at = get32(d + end + 16);
    if (get16(d + end + 4) != 0 || get16(d + end + 6) != 0 || get16(d + end + 8) != count)
        return sp_error("%s: zip archives split over several files are not read", path);
    if (dir_at == 0xffffffffu || dir_size == 0xffffffffu || count == 0xffff)
        return sp_error("%s: zip64 archives are not read", path);
    if ((uint64_t)dir_at + dir_size > end)
        return sp_error("%s: the zip's central directory (%u bytes at %u) is outside the file (truncated?)", path,
                        dir_size, dir_at);
    if ((uint64_t)count * CENTRAL_RECORD > dir_size)
        return sp_error("%s: the zip claims %u entries in a %u-byte directory", path, count, dir_size);
    z->entries = sp_model_buffer(path, count ? count : 1, sizeof *z->entries, "the zip directory");
    if (!z->entries) return -1;
    uint64_t at = dir_at, dir_end = (uint64_t)dir_at + dir_size;
    for (unsigned i = 0; i < count; i++) {
        const uint8_t *r = d + at;
        if (at + CENTRAL_RECORD > dir_end || get32(r) != SIG_CENTRAL) {
            sp_zip_close(z);
            return sp_error("%s: zip directory record %u is damaged", path, i);
        }
        unsigned flags = get16(r + 8), name_len = get16(r + 28);
        uint64_t rec = CENTRAL_RECORD + (uint64_t)name_len + get16(r + 30) + get16(r + 32);
        if (at + rec > dir_end) {
            sp_zip_close(z);
            return sp_error("%s: zip directory record %u runs past the directory", path, i);
        }
        sp_zip_entry *e = &z->entries[z->n++];
        e->name = sp_malloc(name_len + 1u);
        memcpy(e->name, r + CENTRAL_RECORD, name_len);
        e->name[name_len] = 0;
        e->method = (int)get16(r + 10);
        e->crc = get32(r + 16);
        e->csize = get32(r + 20);
        e->usize = get32(r + 24);
        uint64_t local = get32(r + 42);
        const char *why = NULL;
        if (flags & 1) why = "is encrypted";
        else if (e->method != 0 && e->method != 8) why = "uses a compression method other than stored or deflate";
        else if (e->csize == 0xffffffffu || e->usize == 0xffffffffu || local == 0xffffffffu) why = "needs zip64";
        else if (local + LOCAL_HEADER > size || get32(d + local) != SIG_LOCAL) why = "has no local header where the directory says";
        else {
            e->data_at = local + LOCAL_HEADER + get16(d + local + 26) + get16(d + local + 28);
            if (e->data_at + e->csize > size) why = "runs past the end of the file (truncated?)";
            else if (e->method == 0 && e->csize != e->usize) why = "is stored with two different sizes";
        }
        if (why) {
            int rc = sp_error("%s: zip entry '%s' %s", path, e->name, why);
            sp_zip_close(z);
            return rc;
        }
        at += rec;
    }
    return 0;
}

const sp_zip_entry *sp_zip_find(const sp_zip *z, const char *name) {
    for (int i = 0; i < z->n; i++)
        if (!strcmp(z->entries[i].name, name)) return &z->entries[i];
    return NULL;
}

int sp_zip_extract(const sp_zip *z, const sp_zip_entry *e, uint8_t **out, size_t *n) {
    *out = NULL;
    *n = 0;
    if (e->method == 8 && e->usize > (uint64_t)INFLATE_RATIO * e->csize + 64)
        return sp_error("%s: zip entry '%s' claims %llu bytes from %llu deflated ones (damaged file)", z->path, e->name,
                        (unsigned long long)e->usize, (unsigned long long)e->csize);
    uint8_t *buf = sp_model_buffer(z->path, (size_t)e->usize + 1, 1, "a zip entry");
    if (!buf) return -1;
    const uint8_t *src = z->data + e->data_at;
    int rc = 0;
    if (e->method == 0) {
        memcpy(buf, src, (size_t)e->usize);
    } else {
        z_stream s;
        memset(&s, 0, sizeof s);
        if (inflateInit2(&s, -MAX_WBITS) != Z_OK) rc = sp_error("%s: zlib cannot start decompressing", z->path);
        if (rc == 0) { /* sizes are below 4 GiB (no zip64): zlib's counters hold them */
            s.next_in = (Bytef *)src, s.avail_in = (uInt)e->csize;
            s.next_out = buf, s.avail_out = (uInt)e->usize + 1;
            int zr = inflate(&s, Z_FINISH);
            if (zr != Z_STREAM_END || s.total_out != e->usize)
                rc = sp_error("%s: zip entry '%s' does not inflate to its %llu bytes (damaged file)", z->path, e->name,
                              (unsigned long long)e->usize);
            inflateEnd(&s);
        }
    }
    if (rc == 0 && crc_of(buf, (size_t)e->usize) != e->crc)
        rc = sp_error("%s: zip entry '%s' fails its CRC check (damaged file)", z->path, e->name);
    if (rc) {
        free(buf);
        return -1;
    }
    buf[e->usize] = 0;
    *out = buf;
    *n = (size_t)e->usize;
    return 0;
}
