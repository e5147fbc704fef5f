/* toml.c — the strict TOML subset reader and the writer declared in toml.h. The reader is a
 * single pass over the text with one byte of lookahead; it stops at the first syntax error. */
#include "io/toml.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"

#define MAX_DEPTH 32 /* nesting limit for arrays */

typedef struct {
    const char *p, *end;
    const char *name; /* NULL: messages without location */
    int line;
    sp_toml_doc *doc;
    int table; /* current table index */
} parser;

static int perr(parser *ps, const char *fmt, ...) SP_PRINTF(2, 3);
static int perr(parser *ps, const char *fmt, ...) {
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (ps->name) return sp_error("%s:%d: %s", ps->name, ps->line, msg);
    return sp_error("%s", msg);
}

/* ---- small growable string ---- */
typedef struct {
    char *s;
    size_t len, cap;
} sbuf;

static void sb_putn(sbuf *b, const char *s, size_t n) {
    if (b->len + n + 1 > b->cap) {
        b->cap = (b->len + n + 1) * 2 + 16;
        b->s = sp_realloc(b->s, b->cap);
    }
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = 0;
}
static void sb_putc(sbuf *b, char c) { sb_putn(b, &c, 1); }
static char *sb_take(sbuf *b) {
    if (!b->s) return sp_strdup("");
    return b->s;
}

/* ---- lexical helpers ---- */
static int peek(parser *ps) { return ps->p < ps->end ? (unsigned char)*ps->p : -1; }
static int peek_at(parser *ps, int k) { return ps->p + k < ps->end ? (unsigned char)ps->p[k] : -1; }
static void skip_ws(parser *ps) {
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t')) ps->p++;
}
static bool at_newline(parser *ps) {
    return peek(ps) == '\n' || (peek(ps) == '\r' && peek_at(ps, 1) == '\n');
}
static void eat_newline(parser *ps) {
    ps->p += (*ps->p == '\r') ? 2 : 1;
    ps->line++;
}
static void skip_comment(parser *ps) {
    if (peek(ps) != '#') return;
    while (ps->p < ps->end && !at_newline(ps)) ps->p++;
}
static bool is_bare(int c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
}
/* Length of the rest of the line, at most 24 bytes (for quoting it in messages). */
static int rest_len(parser *ps) {
    int n = 0;
    while (n < 24 && ps->p + n < ps->end && ps->p[n] != '\n' && ps->p[n] != '\r') n++;
    return n;
}
/* End of a line: spaces, an optional comment, then a newline or the end. */
static int expect_eol(parser *ps, const char *after) {
    skip_ws(ps);
    skip_comment(ps);
    if (ps->p >= ps->end) return 0;
    if (at_newline(ps)) {
        eat_newline(ps);
        return 0;
    }
    return perr(ps, "unexpected text after %s: '%.*s'", after, rest_len(ps), ps->p);
}

/* Checks UTF-8, NUL bytes and lone CRs over the whole text before parsing. */
static int check_text(parser *ps) {
    const unsigned char *s = (const unsigned char *)ps->p, *e = (const unsigned char *)ps->end;
    int line = 1;
    while (s < e) {
        unsigned c = *s;
        if (c == '\n') line++;
        if (c == '\r' && (e - s < 2 || s[1] != '\n')) {
            ps->line = line;
            return perr(ps, "carriage return without a newline");
        }
        if (c == 0) {
            ps->line = line;
            return perr(ps, "NUL byte in text");
        }
        if (c < 0x80) {
            s++;
            continue;
        }
        int n = (c >= 0xC2 && c <= 0xDF) ? 1 : (c >= 0xE0 && c <= 0xEF) ? 2 : (c >= 0xF0 && c <= 0xF4) ? 3 : -1;
        bool ok = n > 0 && e - s > n;
        for (int k = 1; ok && k <= n; k++) ok = (s[k] & 0xC0) == 0x80;
        if (ok && c == 0xE0) ok = s[1] >= 0xA0;
        if (ok && c == 0xED) ok = s[1] < 0xA0; /* surrogates */
        if (ok && c == 0xF0) ok = s[1] >= 0x90;
        if (ok && c == 0xF4) ok = s[1] < 0x90;
        if (!ok) {
            ps->line = line;
            return perr(ps, "invalid UTF-8");
        }
        s += n + 1;
    }
    return 0;
}

static void utf8_put(sbuf *b, uint32_t cp) {
    char u[4];
    if (cp < 0x80) {
        u[0] = (char)cp;
        sb_putn(b, u, 1);
    } else if (cp < 0x800) {
        u[0] = (char)(0xC0 | (cp >> 6)), u[1] = (char)(0x80 | (cp & 0x3F));
        sb_putn(b, u, 2);
    } else if (cp < 0x10000) {
        u[0] = (char)(0xE0 | (cp >> 12)), u[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        u[2] = (char)(0x80 | (cp & 0x3F));
        sb_putn(b, u, 3);
    } else {
        u[0] = (char)(0xF0 | (cp >> 18)), u[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        u[2] = (char)(0x80 | ((cp >> 6) & 0x3F)), u[3] = (char)(0x80 | (cp & 0x3F));
        sb_putn(b, u, 4);
    }
}

/* ---- strings ---- */
static int parse_basic_string(parser *ps, char **out) {
    sbuf b = {0};
    if (peek_at(ps, 1) == '"' && peek_at(ps, 2) == '"') return perr(ps, "multi-line strings are not supported");
    ps->p++; /* opening quote */
    for (;;) {
        int c = peek(ps);
        if (c < 0 || c == '\n' || c == '\r') {
            free(b.s);
            return perr(ps, "unterminated string");
        }
        if (c == '"') {
            ps->p++;
            break;
        }
        if ((c < 0x20 && c != '\t') || c == 0x7F) {
            free(b.s);
            return perr(ps, "control character in string (use an escape such as \\n or \\u0001)");
        }
        if (c != '\\') {
            sb_putc(&b, (char)c);
            ps->p++;
            continue;
        }
        int e = peek_at(ps, 1);
        ps->p += 2;
        switch (e) {
        case '"': sb_putc(&b, '"'); break;
        case '\\': sb_putc(&b, '\\'); break;
        case 'b': sb_putc(&b, '\b'); break;
        case 't': sb_putc(&b, '\t'); break;
        case 'n': sb_putc(&b, '\n'); break;
        case 'f': sb_putc(&b, '\f'); break;
        case 'r': sb_putc(&b, '\r'); break;
        case 'u':
        case 'U': {
            int nd = e == 'u' ? 4 : 8;
            uint32_t cp = 0;
            for (int k = 0; k < nd; k++) {
                int h = peek(ps), d = (h >= '0' && h <= '9') ? h - '0' : (h >= 'a' && h <= 'f') ? h - 'a' + 10
                                                                : (h >= 'A' && h <= 'F') ? h - 'A' + 10 : -1;
                if (d < 0) {
                    free(b.s);
                    return perr(ps, "\\%c escape needs %d hex digits", e, nd);
                }
                cp = cp * 16 + (uint32_t)d;
                ps->p++;
            }
            if (cp == 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
                free(b.s);
                return perr(ps, "\\%c escape is not an allowed Unicode scalar value", e);
            }
            utf8_put(&b, cp);
            break;
        }
        default:
            free(b.s);
            if (e < 0 || e == '\n' || e == '\r') return perr(ps, "unterminated string");
            if (e >= 0x20 && e < 0x7F) return perr(ps, "invalid escape '\\%c' in string", e);
            return perr(ps, "invalid escape in string");
        }
    }
    *out = sb_take(&b);
    return 0;
}

static int parse_literal_string(parser *ps, char **out) {
    if (peek_at(ps, 1) == '\'' && peek_at(ps, 2) == '\'') return perr(ps, "multi-line strings are not supported");
    const char *start = ++ps->p;
    for (;;) {
        int c = peek(ps);
        if (c < 0 || c == '\n' || c == '\r') return perr(ps, "unterminated string");
        if (c == '\'') break;
        if ((c < 0x20 && c != '\t') || c == 0x7F) return perr(ps, "control character in string");
        ps->p++;
    }
    size_t n = (size_t)(ps->p - start);
    *out = sp_malloc(n + 1);
    memcpy(*out, start, n);
    (*out)[n] = 0;
    ps->p++;
    return 0;
}

/* ---- scalars: numbers, booleans ---- */
static bool digits_ok(const char *s, size_t n, bool leading_zero_ok) {
    if (n == 0 || s[0] == '_' || s[n - 1] == '_') return false;
    for (size_t k = 0; k < n; k++) {
        if (s[k] == '_') {
            if (s[k + 1] == '_') return false;
        } else if (s[k] < '0' || s[k] > '9') {
            return false;
        }
    }
    return leading_zero_ok || s[0] != '0' || n == 1;
}

/* Classifies token t (length n) as a TOML integer, float or boolean. */
static int parse_scalar(parser *ps, const char *t, size_t n, sp_toml_value *v) {
    char tok[128];
    if (n >= sizeof tok) return perr(ps, "value too long: '%.40s...'", t);
    memcpy(tok, t, n);
    tok[n] = 0;
    if (!strcmp(tok, "true") || !strcmp(tok, "false")) {
        v->type = SP_TOML_BOOL;
        v->b = tok[0] == 't';
        return 0;
    }
    const char *u = tok + (tok[0] == '+' || tok[0] == '-');
    if (!strcmp(u, "inf") || !strcmp(u, "nan")) {
        v->type = SP_TOML_FLOAT;
        v->f = u[0] == 'i' ? (tok[0] == '-' ? -INFINITY : INFINITY) : NAN;
        return 0;
    }
    /* Split u into integer part, optional fraction, optional exponent. */
    size_t ni = strcspn(u, ".eE");
    const char *frac = NULL, *exp = NULL;
    size_t nf = 0, ne = 0;
    const char *q = u + ni;
    if (*q == '.') {
        frac = q + 1;
        nf = strcspn(frac, "eE");
        q = frac + nf;
    }
    if (*q == 'e' || *q == 'E') {
        exp = q + 1;
        if (*exp == '+' || *exp == '-') exp++;
        ne = strlen(exp);
    }
    bool ok = digits_ok(u, ni, false) && (!frac || digits_ok(frac, nf, true)) && (!exp || digits_ok(exp, ne, true));
    if (!ok) {
        if (digits_ok(u, ni, true) && !frac && !exp && ni > 1 && u[0] == '0')
            return perr(ps, "leading zeros are not allowed in '%s'", tok);
        bool word = (tok[0] >= 'A' && tok[0] <= 'Z') || (tok[0] >= 'a' && tok[0] <= 'z') || tok[0] == '/';
        if (word) return perr(ps, "invalid value '%s' (strings need quotes: \"%s\")", tok, tok);
        return perr(ps, "invalid value '%s'", tok);
    }
    char clean[128];
    size_t m = 0;
    for (size_t k = 0; k < n; k++)
        if (tok[k] != '_') clean[m++] = tok[k];
    clean[m] = 0;
    errno = 0;
    if (frac || exp) {
        v->type = SP_TOML_FLOAT;
        v->f = strtod(clean, NULL);
        if (errno == ERANGE && isinf(v->f)) return perr(ps, "float out of range: '%s'", tok);
    } else {
        v->type = SP_TOML_INT;
        long long x = strtoll(clean, NULL, 10);
        if (errno == ERANGE) return perr(ps, "integer out of range: '%s'", tok);
        v->i = x;
    }
    return 0;
}

/* ---- values ---- */
static void skip_ws_nl_comments(parser *ps) {
    for (;;) {
        skip_ws(ps);
        skip_comment(ps);
        if (ps->p < ps->end && at_newline(ps)) eat_newline(ps);
        else return;
    }
}

static int parse_value(parser *ps, sp_toml_value *v, int depth) {
    memset(v, 0, sizeof *v);
    v->line = ps->line;
    int c = peek(ps);
    if (c == '"') {
        v->type = SP_TOML_STRING;
        return parse_basic_string(ps, &v->s);
    }
    if (c == '\'') {
        v->type = SP_TOML_STRING;
        return parse_literal_string(ps, &v->s);
    }
    if (c == '{') return perr(ps, "inline tables are not supported");
    if (c == '[') {
        if (depth >= MAX_DEPTH) return perr(ps, "arrays nested too deeply");
        int open_line = ps->line, cap = 0;
        v->type = SP_TOML_ARRAY;
        ps->p++;
        for (;;) {
            skip_ws_nl_comments(ps);
            if (peek(ps) == ']') break;
            if (peek(ps) < 0) {
                ps->line = open_line;
                return perr(ps, "unterminated array (no closing ']')");
            }
            if (v->n == cap) {
                cap = cap ? 2 * cap : 4;
                v->items = sp_realloc(v->items, (size_t)cap * sizeof *v->items);
            }
            if (parse_value(ps, &v->items[v->n], depth + 1)) {
                sp_toml_value_free(&v->items[v->n]);
                return -1;
            }
            v->n++;
            skip_ws_nl_comments(ps);
            if (peek(ps) == ',') {
                ps->p++;
                continue;
            }
            if (peek(ps) == ']') break;
            if (peek(ps) < 0) {
                ps->line = open_line;
                return perr(ps, "unterminated array (no closing ']')");
            }
            return perr(ps, "expected ',' or ']' in array");
        }
        ps->p++;
        return 0;
    }
    const char *t = ps->p;
    while (ps->p < ps->end && (is_bare(*ps->p) || *ps->p == '+' || *ps->p == '.' || *ps->p == ':' || *ps->p == '/'))
        ps->p++;
    if (ps->p == t) {
        if (c < 0 || c == '\n' || c == '\r' || c == '#') return perr(ps, "missing value");
        return perr(ps, "invalid value starting with '%c'", c);
    }
    return parse_scalar(ps, t, (size_t)(ps->p - t), v);
}

void sp_toml_value_free(sp_toml_value *v) {
    if (!v) return;
    free(v->s);
    for (int k = 0; k < v->n; k++) sp_toml_value_free(&v->items[k]);
    free(v->items);
    memset(v, 0, sizeof *v);
}

/* ---- keys and tables ---- */
static int parse_key_part(parser *ps, char **out) {
    int c = peek(ps);
    if (c == '"') return parse_basic_string(ps, out);
    if (c == '\'') return parse_literal_string(ps, out);
    const char *s = ps->p;
    while (ps->p < ps->end && is_bare(*ps->p)) ps->p++;
    if (ps->p == s) return -1; /* caller reports */
    size_t n = (size_t)(ps->p - s);
    *out = sp_malloc(n + 1);
    memcpy(*out, s, n);
    (*out)[n] = 0;
    return 0;
}

static int find_table(const sp_toml_doc *d, const char *name) {
    for (int k = 0; k < d->ntables; k++)
        if (!strcmp(d->tables[k].name, name)) return k;
    return -1;
}
static const sp_toml_entry *find_entry(const sp_toml_doc *d, int table, const char *key) {
    for (int k = 0; k < d->n; k++)
        if (d->entries[k].table == table && !strcmp(d->entries[k].key, key)) return &d->entries[k];
    return NULL;
}

static int parse_header(parser *ps) {
    ps->p++;
    if (peek(ps) == '[') return perr(ps, "arrays of tables ([[...]]) are not supported");
    sbuf name = {0};
    for (;;) {
        skip_ws(ps);
        char *part = NULL;
        int c = peek(ps);
        if (parse_key_part(ps, &part)) {
            free(name.s);
            if (c == '"' || c == '\'') return -1;
            return perr(ps, "expected a table name after '['");
        }
        if (strchr(part, '.') || !*part) {
            free(name.s);
            free(part);
            return perr(ps, "table name parts must be non-empty and contain no '.'");
        }
        if (name.len) sb_putc(&name, '.');
        sb_putn(&name, part, strlen(part));
        free(part);
        skip_ws(ps);
        if (peek(ps) == '.') {
            ps->p++;
            continue;
        }
        if (peek(ps) == ']') {
            ps->p++;
            break;
        }
        free(name.s);
        return perr(ps, "expected ']' to close the table header");
    }
    sp_toml_doc *d = ps->doc;
    int prev = find_table(d, name.s);
    if (prev >= 0) {
        perr(ps, "duplicate table [%s] (first defined on line %d)", name.s, d->tables[prev].line);
        free(name.s);
        return -1;
    }
    /* A table may not reuse the name of a key: [a.b] clashes with b = ... in [a]. */
    char *dot = strrchr(name.s, '.');
    int parent = 0;
    if (dot) {
        *dot = 0;
        parent = find_table(d, name.s);
        *dot = '.';
    }
    const char *leaf = dot ? dot + 1 : name.s;
    const sp_toml_entry *clash = parent >= 0 ? find_entry(d, parent, leaf) : NULL;
    if (clash) {
        perr(ps, "table [%s] clashes with key '%s' on line %d", name.s, leaf, clash->line);
        free(name.s);
        return -1;
    }
    d->tables = sp_realloc(d->tables, (size_t)(d->ntables + 1) * sizeof *d->tables);
    d->tables[d->ntables] = (sp_toml_table){name.s, ps->line};
    ps->table = d->ntables++;
    return expect_eol(ps, "table header");
}

static int parse_keyval(parser *ps) {
    sp_toml_doc *d = ps->doc;
    char *key = NULL;
    int line = ps->line, c = peek(ps);
    if (parse_key_part(ps, &key)) {
        if (c == '"' || c == '\'') return -1;
        if (peek(ps) == '=') return perr(ps, "missing key before '='");
        return perr(ps, "expected a key, found '%c'", peek(ps));
    }
    skip_ws(ps);
    if (peek(ps) == '.') {
        perr(ps, "dotted keys like '%s.x' are not supported; use a [table] header", key);
        free(key);
        return -1;
    }
    if (peek(ps) != '=') {
        perr(ps, "expected '=' after key '%s'", key);
        free(key);
        return -1;
    }
    ps->p++;
    skip_ws(ps);
    const sp_toml_entry *prev = find_entry(d, ps->table, key);
    if (prev) {
        const char *t = d->tables[ps->table].name;
        if (*t) perr(ps, "duplicate key '%s' in [%s] (first set on line %d)", key, t, prev->line);
        else perr(ps, "duplicate key '%s' (first set on line %d)", key, prev->line);
        free(key);
        return -1;
    }
    const char *tname = d->tables[ps->table].name;
    char *full = *tname ? sp_strfmt("%s.%s", tname, key) : sp_strdup(key);
    int clash = find_table(d, full);
    free(full);
    if (clash >= 0) {
        perr(ps, "key '%s' clashes with table [%s] on line %d", key, d->tables[clash].name, d->tables[clash].line);
        free(key);
        return -1;
    }
    sp_toml_value v;
    if (at_newline(ps) || peek(ps) < 0 || peek(ps) == '#') {
        perr(ps, "missing value for key '%s'", key);
        free(key);
        return -1;
    }
    if (parse_value(ps, &v, 0)) {
        sp_toml_value_free(&v);
        free(key);
        return -1;
    }
    if (d->n == d->cap) {
        d->cap = d->cap ? 2 * d->cap : 16;
        d->entries = sp_realloc(d->entries, (size_t)d->cap * sizeof *d->entries);
    }
    d->entries[d->n++] = (sp_toml_entry){ps->table, key, line, v};
    return expect_eol(ps, "value");
}

int sp_toml_parse(const char *text, size_t len, const char *name, sp_toml_doc *doc) {
    memset(doc, 0, sizeof *doc);
    doc->tables = SP_NEW(sp_toml_table, 1);
    doc->tables[0] = (sp_toml_table){sp_strdup(""), 0};
    doc->ntables = 1;
    parser ps = {text, text + len, name ? name : "(text)", 1, doc, 0};
    if (len >= 3 && !memcmp(text, "\xEF\xBB\xBF", 3)) ps.p += 3;
    int rc = check_text(&ps);
    ps.line = 1;
    while (rc == 0) {
        skip_ws(&ps);
        if (ps.p >= ps.end) break;
        int c = peek(&ps);
        if (c == '#') skip_comment(&ps);
        else if (at_newline(&ps)) eat_newline(&ps);
        else if (c == '[') rc = parse_header(&ps);
        else rc = parse_keyval(&ps);
    }
    if (rc) sp_toml_free(doc);
    return rc;
}

int sp_toml_load(const char *path, sp_toml_doc *doc) {
    char *text;
    size_t n;
    memset(doc, 0, sizeof *doc);
    if (sp_read_file(path, &text, &n)) return -1;
    int rc = sp_toml_parse(text, n, path, doc);
    free(text);
    return rc;
}

void sp_toml_free(sp_toml_doc *doc) {
    for (int k = 0; k < doc->ntables; k++) free(doc->tables[k].name);
    for (int k = 0; k < doc->n; k++) {
        free(doc->entries[k].key);
        sp_toml_value_free(&doc->entries[k].value);
    }
    free(doc->tables);
    free(doc->entries);
    memset(doc, 0, sizeof *doc);
}

const sp_toml_value *sp_toml_get(const sp_toml_doc *doc, const char *table, const char *key) {
    int t = find_table(doc, table);
    const sp_toml_entry *e = t >= 0 ? find_entry(doc, t, key) : NULL;
    return e ? &e->value : NULL;
}

int sp_toml_parse_value(const char *text, sp_toml_value *v) {
    memset(v, 0, sizeof *v);
    size_t len = strlen(text);
    parser ps = {text, text + len, NULL, 1, NULL, 0};
    if (check_text(&ps)) return -1;
    skip_ws(&ps);
    if (ps.p >= ps.end) return perr(&ps, "missing value");
    if (parse_value(&ps, v, 0)) {
        sp_toml_value_free(v);
        return -1;
    }
    skip_ws(&ps);
    if (ps.p < ps.end) {
        sp_toml_value_free(v);
        return perr(&ps, "unexpected text after value: '%.*s'", rest_len(&ps), ps.p);
    }
    return 0;
}

const char *sp_toml_type_name(sp_toml_type t) {
    switch (t) {
    case SP_TOML_STRING: return "a string";
    case SP_TOML_INT: return "an integer";
    case SP_TOML_FLOAT: return "a float";
    case SP_TOML_BOOL: return "a boolean";
    case SP_TOML_ARRAY: return "an array";
    }
    return "?";
}

/* ---- writer ---- */
static void w_put(sp_toml_writer *w, const char *s, size_t n) {
    if (w->len + n + 1 > w->cap) {
        w->cap = (w->len + n + 1) * 2 + 256;
        w->buf = sp_realloc(w->buf, w->cap);
    }
    memcpy(w->buf + w->len, s, n);
    w->len += n;
    w->buf[w->len] = 0;
}
static void w_puts(sp_toml_writer *w, const char *s) { w_put(w, s, strlen(s)); }

void sp_tomlw_init(sp_toml_writer *w) { memset(w, 0, sizeof *w); }
void sp_tomlw_free(sp_toml_writer *w) {
    free(w->buf);
    memset(w, 0, sizeof *w);
}
const char *sp_tomlw_text(const sp_toml_writer *w) { return w->buf ? w->buf : ""; }

static void w_quoted(sp_toml_writer *w, const char *s) {
    w_puts(w, "\"");
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        char esc[8];
        switch (*p) {
        case '"': w_puts(w, "\\\""); break;
        case '\\': w_puts(w, "\\\\"); break;
        case '\n': w_puts(w, "\\n"); break;
        case '\t': w_puts(w, "\\t"); break;
        case '\r': w_puts(w, "\\r"); break;
        default:
            if (*p < 0x20 || *p == 0x7F) {
                snprintf(esc, sizeof esc, "\\u%04X", *p);
                w_puts(w, esc);
            } else {
                w_put(w, (const char *)p, 1);
            }
        }
    }
    w_puts(w, "\"");
}

static void w_key(sp_toml_writer *w, const char *key) {
    bool bare = *key != 0;
    for (const char *p = key; *p; p++) bare = bare && is_bare((unsigned char)*p);
    if (bare) w_puts(w, key);
    else w_quoted(w, key);
    w_puts(w, " = ");
}

void sp_tomlw_comment(sp_toml_writer *w, const char *text) {
    const char *s = text;
    for (;;) {
        size_t n = strcspn(s, "\n");
        w_puts(w, n ? "# " : "#");
        w_put(w, s, n);
        w_puts(w, "\n");
        if (!s[n]) break;
        s += n + 1;
    }
}

void sp_tomlw_table(sp_toml_writer *w, const char *name) {
    if (w->len) w_puts(w, "\n");
    w_puts(w, "[");
    bool bare = *name != 0;
    for (const char *p = name; *p; p++) bare = bare && (is_bare((unsigned char)*p) || *p == '.');
    if (bare) w_puts(w, name);
    else w_quoted(w, name);
    w_puts(w, "]\n");
}

void sp_tomlw_string(sp_toml_writer *w, const char *key, const char *s) {
    w_key(w, key);
    w_quoted(w, s ? s : "");
    w_puts(w, "\n");
}

void sp_tomlw_int(sp_toml_writer *w, const char *key, int64_t v) {
    char t[32];
    snprintf(t, sizeof t, "%lld\n", (long long)v);
    w_key(w, key);
    w_puts(w, t);
}

/* Shortest decimal text with at most maxprec significant digits that reads back as v (as a
 * double, or as a float when single); plain notation for moderate magnitudes, "1e-15" style
 * otherwise; always with a '.' or an exponent so it stays a TOML float. */
static void fmt_shortest(double v, int maxprec, bool single, char out[32]) {
    if (isnan(v)) {
        strcpy(out, "nan");
        return;
    }
    if (isinf(v)) {
        strcpy(out, v < 0 ? "-inf" : "inf");
        return;
    }
    char g[48], fixed[48]; /* %g with <= 17 digits needs at most 24 bytes */
    int prec = 1;
    for (; prec < maxprec && prec < 17; prec++) {
        snprintf(g, sizeof g, "%.*g", prec, v);
        if (single ? strtof(g, NULL) == (float)v : strtod(g, NULL) == v) break;
    }
    snprintf(g, sizeof g, "%.*g", prec, v);
    int e = v == 0 ? 0 : (int)floor(log10(fabs(v)));
    if (e >= -5 && e < 16) {
        int decimals = prec - 1 - e;
        snprintf(fixed, sizeof fixed, "%.*f", decimals < 1 ? 1 : decimals, v);
        if (strlen(fixed) < 29 && (single ? strtof(fixed, NULL) == (float)v : strtod(fixed, NULL) == v))
            memcpy(g, fixed, strlen(fixed) + 1);
    }
    if (!strpbrk(g, ".e")) strcat(g, ".0");
    memcpy(out, g, strlen(g) + 1);
}

void sp_toml_format_float(double v, char out[32]) { fmt_shortest(v, 17, false, out); }

void sp_tomlw_float(sp_toml_writer *w, const char *key, double v) {
    char t[32];
    sp_toml_format_float(v, t);
    w_key(w, key);
    w_puts(w, t);
    w_puts(w, "\n");
}

void sp_tomlw_bool(sp_toml_writer *w, const char *key, bool v) {
    w_key(w, key);
    w_puts(w, v ? "true\n" : "false\n");
}

/* Arrays: eight items per line once they grow past one line. */
static void w_item_sep(sp_toml_writer *w, int k, int n) {
    if (k == 0) w_puts(w, n > 8 ? "[\n  " : "[");
    else w_puts(w, k % 8 == 0 ? ",\n  " : ", ");
}
static void w_array_end(sp_toml_writer *w, int n) { w_puts(w, n == 0 ? "[]\n" : n > 8 ? ",\n]\n" : "]\n"); }

void sp_tomlw_float_array(sp_toml_writer *w, const char *key, const double *v, int n) {
    char t[32];
    w_key(w, key);
    for (int k = 0; k < n; k++) {
        w_item_sep(w, k, n);
        sp_toml_format_float(v[k], t);
        w_puts(w, t);
    }
    w_array_end(w, n);
}

void sp_tomlw_float_array_f(sp_toml_writer *w, const char *key, const float *v, int n) {
    char t[32];
    w_key(w, key);
    for (int k = 0; k < n; k++) {
        w_item_sep(w, k, n);
        /* Shortest text for the float itself, so 0.1f prints as 0.1, not 0.100000001. */
        fmt_shortest((double)v[k], 9, true, t);
        w_puts(w, t);
    }
    w_array_end(w, n);
}

void sp_tomlw_int_array(sp_toml_writer *w, const char *key, const int64_t *v, int n) {
    char t[32];
    w_key(w, key);
    for (int k = 0; k < n; k++) {
        w_item_sep(w, k, n);
        snprintf(t, sizeof t, "%lld", (long long)v[k]);
        w_puts(w, t);
    }
    w_array_end(w, n);
}

void sp_tomlw_string_array(sp_toml_writer *w, const char *key, const char *const *v, int n) {
    w_key(w, key);
    for (int k = 0; k < n; k++) {
        w_item_sep(w, k, n);
        w_quoted(w, v[k] ? v[k] : "");
    }
    w_array_end(w, n);
}

int sp_tomlw_save(const sp_toml_writer *w, const char *path) {
    return sp_write_file_atomic(path, sp_tomlw_text(w), w->len);
}
