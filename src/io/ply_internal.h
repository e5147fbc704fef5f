/* ply_internal.h — a .ply header as ply.c parses it (elements, typed properties, format), shared
 * with the reader of PlayCanvas's compressed layout (cply.c). Internal to src/io. */
#ifndef SPLAT_PLY_INTERNAL_H
#define SPLAT_PLY_INTERNAL_H

#include <stdio.h>
#include <sys/types.h>

#include "scene/gaussians.h"

typedef enum { T_NONE, T_I8, T_U8, T_I16, T_U16, T_I32, T_U32, T_F32, T_F64 } ply_type;

typedef struct {
    char name[64];
    ply_type type;
    int is_list;
    int line; /* header line, for messages */
} ply_prop;

typedef struct {
    char name[64];
    long long count;
    ply_prop *props;
    int nprops;
    int line;
} ply_elem;

typedef enum { F_ASCII, F_BLE, F_BBE } ply_format;

typedef struct {
    const char *path;
    FILE *f;
    ply_format format;
    ply_elem *elems;
    int nelems;
    int line; /* current line (header, then ascii body) */
} ply_file;

/* Bytes of one value of type t (0 for T_NONE). */
int sp_ply_type_size(ply_type t);
/* Index of the property called name in e, or -1. */
int sp_ply_find_prop(const ply_elem *e, const char *name);

/* 1 when the header is PlayCanvas's compressed layout: a `chunk` element and a `vertex` element
 * with a `packed_position` property. */
int sp_cply_detect(const ply_file *pf);
/* Reads the body after that header (pf->f is just past end_header) into g, which is initialized
 * here; file_size bounds what the header may claim. On error g is left empty. */
int sp_cply_read_body(ply_file *pf, off_t file_size, sp_gaussians *g);

#endif
