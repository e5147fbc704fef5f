/* toml.h — a small strict TOML reader and writer for the subset splat uses (run configs,
 * config.toml, result.toml).
 *
 * Reader: comments, [table] and [a.b] headers, `key = value` with bare or quoted keys, basic
 * strings with escapes (\" \\ \b \t \n \f \r \uXXXX \UXXXXXXXX), literal strings, decimal
 * integers (sign, _ separators), floats (1.5, 1e-4, inf, nan), booleans, and arrays of these
 * (spanning lines, trailing comma allowed). Everything else (dotted keys, inline tables, arrays
 * of tables, multi-line strings, dates) is rejected with a message. Duplicate keys and tables
 * are errors. Errors name the file and line: "run.toml:7: expected '=' after key 'max_steps'".
 * Parsing goes on after an error, so every problem of a file is reported in one pass; the time
 * taken is linear in the size of the text (duplicates are found with a hash set). Every key
 * keeps its line so later validation can point at it.
 *
 * Writer: appends TOML text to a growable buffer, then saves it atomically. Floats are printed
 * in the shortest form that reads back to the same double, always with a '.' or an exponent. */
#ifndef SPLAT_TOML_H
#define SPLAT_TOML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/core.h"

typedef enum { SP_TOML_STRING, SP_TOML_INT, SP_TOML_FLOAT, SP_TOML_BOOL, SP_TOML_ARRAY } sp_toml_type;

typedef struct sp_toml_value {
    sp_toml_type type;
    int line;                    /* line the value starts on */
    char *s;                     /* SP_TOML_STRING (UTF-8, NUL-terminated, no embedded NUL) */
    int64_t i;                   /* SP_TOML_INT */
    double f;                    /* SP_TOML_FLOAT */
    bool b;                      /* SP_TOML_BOOL */
    struct sp_toml_value *items; /* SP_TOML_ARRAY */
    int n;
} sp_toml_value;

typedef struct {
    char *name; /* "" for the root table, "a.b" for [a.b] */
    int line;   /* line of the header; 0 for the root table */
} sp_toml_table;

typedef struct {
    int table; /* index into sp_toml_doc.tables */
    char *key;
    int line;  /* line of the key */
    sp_toml_value value;
    /* true: the value had a syntax error (already reported) and holds the unquoted word as a
     * string, e.g. path = ../x; consumers skip it but need not report the key as missing. */
    bool invalid;
} sp_toml_entry;

/* A parsed document. tables[0] is the root table; tables and entries are in file order, and
 * the entries of one table are contiguous. */
typedef struct {
    sp_toml_table *tables;
    int ntables;
    sp_toml_entry *entries;
    int n, cap;
} sp_toml_doc;

/* Parses len bytes of text; `name` (a path) prefixes error messages as "name:LINE: ...".
 * On error returns -1 with sp_error set (the first problem) and doc empty. */
int sp_toml_parse(const char *text, size_t len, const char *name, sp_toml_doc *doc);
int sp_toml_load(const char *path, sp_toml_doc *doc);
/* Like sp_toml_parse, but adds every problem of the text to `problems` and keeps in doc every
 * entry that parsed (free it with sp_toml_free in all cases). Returns -1 if there was any. */
int sp_toml_parse_all(const char *text, size_t len, const char *name, sp_toml_doc *doc, sp_problems *problems);
int sp_toml_load_all(const char *path, sp_toml_doc *doc, sp_problems *problems);
void sp_toml_free(sp_toml_doc *doc);
/* The value of table.key, or NULL. table "" is the root table. */
const sp_toml_value *sp_toml_get(const sp_toml_doc *doc, const char *table, const char *key);
/* Parses text that is exactly one TOML value (surrounding spaces allowed), e.g. a --set value.
 * Errors carry no location: "invalid value 'abc' (strings need quotes)". */
int sp_toml_parse_value(const char *text, sp_toml_value *v);
void sp_toml_value_free(sp_toml_value *v);
/* "a string", "an integer", "a float", "a boolean", "an array". */
const char *sp_toml_type_name(sp_toml_type t);

/* Writer. */
typedef struct {
    char *buf;
    size_t len, cap;
} sp_toml_writer;

void sp_tomlw_init(sp_toml_writer *w);
void sp_tomlw_free(sp_toml_writer *w);
void sp_tomlw_comment(sp_toml_writer *w, const char *text); /* "# text" (one line per \n) */
void sp_tomlw_table(sp_toml_writer *w, const char *name);   /* "[name]", blank line before */
void sp_tomlw_string(sp_toml_writer *w, const char *key, const char *s);
void sp_tomlw_int(sp_toml_writer *w, const char *key, int64_t v);
void sp_tomlw_float(sp_toml_writer *w, const char *key, double v);
void sp_tomlw_bool(sp_toml_writer *w, const char *key, bool v);
void sp_tomlw_float_array(sp_toml_writer *w, const char *key, const double *v, int n);
void sp_tomlw_float_array_f(sp_toml_writer *w, const char *key, const float *v, int n);
void sp_tomlw_int_array(sp_toml_writer *w, const char *key, const int64_t *v, int n);
void sp_tomlw_string_array(sp_toml_writer *w, const char *key, const char *const *v, int n);
/* Shortest text that reads back as exactly v, always a TOML float ("1.0", "1e-15", "inf"). */
void sp_toml_format_float(double v, char out[32]);
/* The buffer's text (NUL-terminated; "" when nothing was written). */
const char *sp_tomlw_text(const sp_toml_writer *w);
/* Writes the buffer to path atomically. */
int sp_tomlw_save(const sp_toml_writer *w, const char *path);

#endif
