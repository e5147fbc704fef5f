/* zip.h — the small part of the zip format that .sog needs: an archive written whole with its
 * entries stored (no compression: the WebP images inside are compressed already), and an archive
 * in memory read through its central directory (entries stored or deflated, CRC-32 checked).
 * No zip64, no encryption, no archive comment on writing (PlayCanvas's loader looks for the end
 * record in the last 22 bytes). Entry times are fixed (1980-01-01), so equal inputs give equal
 * files. Errors name the archive's path. Written here rather than linked from libzip: about 200
 * lines on zlib (already linked, for CRC-32 and inflate), and no other library for PORTABLE=1
 * builds to carry. */
#ifndef SPLAT_ZIP_H
#define SPLAT_ZIP_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    const char *name;
    const void *data;
    size_t size;
} sp_zip_item;

/* Writes the n items, in order, as a stored zip at path (atomically). */
int sp_zip_write(const char *path, const sp_zip_item *items, int n);

typedef struct {
    char *name;
    int method;              /* 0 stored, 8 deflate */
    uint32_t crc;
    uint64_t csize, usize;   /* compressed and uncompressed sizes */
    uint64_t data_at;        /* offset of the entry's data in the archive */
} sp_zip_entry;

typedef struct {
    const char *path; /* for messages */
    const uint8_t *data;
    size_t size;
    sp_zip_entry *entries;
    int n;
} sp_zip;

/* Reads the central directory of the archive data[0..size) (kept, not copied); every entry's
 * data is checked to lie inside it. */
int sp_zip_open(sp_zip *z, const char *path, const void *data, size_t size);
void sp_zip_close(sp_zip *z);
/* The entry called name, or NULL. */
const sp_zip_entry *sp_zip_find(const sp_zip *z, const char *name);
/* The entry's contents in a fallibly allocated buffer (*n bytes, plus a NUL not counted),
 * inflated if need be and CRC-checked. */
int sp_zip_extract(const sp_zip *z, const sp_zip_entry *e, uint8_t **out, size_t *n);

#endif
