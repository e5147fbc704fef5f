/* toml.c — the strict TOML subset reader and the writer declared in toml.h. The reader is a
 * single pass over the text with one byte of lookahead. After a syntax error it reports the
 * problem, skips to the end of the statement (the whole array, when the error is inside one)
 * and goes on, so one pass reports every problem of a file. Duplicate keys and tables are found
 * through a hash set, so the pass stays linear in the size of the file. */
#include "io/toml.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"

#define MAX_DEPTH 32 /* nesting limit for arrays */

/* Hash set slot: an index into doc->tables (table < 0) or doc->entries (key of table `table`). */
typedef struct {
    uint64_t h;
    int table, idx; /* idx -1: empty */
} hslot;

typedef struct {
    const char *p, *end;
    const char *name; /* NULL: messages without location */
    int line;
    sp_toml_doc *doc;
    int table;              /* current table index; -1: keys are checked but dropped (bad header) */
    sp_problems *problems;  /* every problem, "name:LINE: message" (NULL: sp_error only) */
    int nerr;
    int open, err_open;     /* arrays open now / when the last error was reported */
    const char *resume;     /* where to go on after an error (NULL: after the statement) */
    int resume_line;
    char *guess;            /* an unquoted word that was meant as a string (for recovery) */
    hslot *hs;
    size_t hcap, hn;
    int tcap; /* capacity of doc->tables */
} parser;

static int perr(parser *ps, const char *fmt, ...) SP_PRINTF(2, 3);
static int perr(parser *ps, const char *fmt, ...) {
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    ps->nerr++;
    ps->err_open = ps->open;
    if (!ps->name) return sp_error("%s", msg);
    if (ps->problems) sp_problems_add(ps->problems, "%s:%d: %s", ps->name, ps->line, msg);
    return sp_error("%s:%d: %s", ps->name, ps->line, msg);
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
    /* A word that cannot start a number or boolean was meant as a string: say how to quote it,
     * and keep it (ps->guess) so that the caller can go on without false follow-on problems. */
    int c0 = (unsigned char)t[0], c1 = n > 1 ? (unsigned char)t[1] : 0;
    bool numeric = (c0 >= '0' && c0 <= '9') ||
                   ((c0 == '+' || c0 == '-' || c0 == '.') && ((c1 >= '0' && c1 <= '9') || c1 == 'i' || c1 == 'n'));
    bool boolean = (n == 4 && !memcmp(t, "true", 4)) || (n == 5 && !memcmp(t, "false", 5)) ||
                   (n == 3 && (!memcmp(t, "inf", 3) || !memcmp(t, "nan", 3)));
    if (!numeric && !boolean) {
        free(ps->guess);
        ps->guess = sp_malloc(n + 1);
        memcpy(ps->guess, t, n);
        ps->guess[n] = 0;
        int shown = n > 200 ? 200 : (int)n;
        if (memchr(t, '"', n) || memchr(t, '\\', n))
            return perr(ps, "invalid value '%.*s' (strings need quotes: '%.*s')", shown, t, shown, t);
        return perr(ps, "invalid value '%.*s' (strings need quotes: \"%.*s\")", shown, t, shown, t);
    }
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

static int parse_value(parser *ps, sp_toml_value *v, int depth);

/* Skips a quoted key or string on one line; false when it does not end on this line. */
static bool skip_quoted(const char **q, const char *end) {
    char quote = **q;
    for (const char *r = *q + 1; r < end && *r != '\n' && *r != '\r'; r++) {
        if (quote == '"' && *r == '\\' && r + 1 < end) {
            r++;
            continue;
        }
        if (*r == quote) {
            *q = r + 1;
            return true;
        }
    }
    return false;
}

/* Whether the text at ps->p starts a statement: `key =` (with header false) or a `[table]`
 * header alone on its line. Used to tell where an unterminated array ends. */
static bool looks_like_statement(const parser *ps, bool header) {
    const char *q = ps->p, *e = ps->end;
    bool is_header = q < e && *q == '[';
    if (is_header) {
        if (!header) return false;
        q++;
    }
    for (int part = 0;; part++) {
        while (q < e && (*q == ' ' || *q == '\t')) q++;
        if (q < e && (*q == '"' || *q == '\'')) {
            if (!skip_quoted(&q, e)) return false;
        } else {
            const char *k = q;
            while (q < e && is_bare((unsigned char)*q)) q++;
            if (q == k) return false;
        }
        while (q < e && (*q == ' ' || *q == '\t')) q++;
        if (!is_header) return q < e && *q == '=';
        if (q < e && *q == '.') {
            q++;
            continue;
        }
        if (q >= e || *q != ']') return false;
        q++;
        while (q < e && (*q == ' ' || *q == '\t')) q++;
        return q >= e || *q == '#' || *q == '\n' || *q == '\r';
    }
}

/* An array that runs into the next statement: report it at the line it opened on and go on
 * parsing at that statement. */
static int unterminated_array(parser *ps, int open_line) {
    ps->resume = ps->p;
    ps->resume_line = ps->line;
    ps->line = open_line;
    return perr(ps, "unterminated array (no closing ']')");
}

static int parse_array(parser *ps, sp_toml_value *v, int depth) {
    int open_line = ps->line, cap = 0;
    v->type = SP_TOML_ARRAY;
    ps->p++;
    ps->open++;
    for (;;) {
        int line = ps->line;
        skip_ws_nl_comments(ps);
        if (peek(ps) == ']') break;
        if (peek(ps) < 0) {
            ps->line = open_line;
            return perr(ps, "unterminated array (no closing ']')");
        }
        if (ps->line != line && looks_like_statement(ps, false)) return unterminated_array(ps, open_line);
        if (v->n == cap) {
            cap = cap ? 2 * cap : 4;
            v->items = sp_realloc(v->items, (size_t)cap * sizeof *v->items);
        }
        if (parse_value(ps, &v->items[v->n], depth + 1)) {
            sp_toml_value_free(&v->items[v->n]);
            return -1;
        }
        v->n++;
        line = ps->line;
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
        if (ps->line != line && looks_like_statement(ps, true)) return unterminated_array(ps, open_line);
        return perr(ps, "expected ',' or ']' in array");
    }
    ps->p++;
    ps->open--;
    return 0;
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
        return parse_array(ps, v, depth);
    }
    /* A bare token runs to a space, a comment, the end of the line or an array's ',' / ']'. */
    const char *t = ps->p;
    while (ps->p < ps->end && !strchr(" \t\r\n#,[]{}\"'=", *ps->p)) ps->p++;
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

/* Linear lookups, for sp_toml_get on a finished document. */
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

/* ---- hash set of table names and (table, key) pairs, used while parsing ---- */
static uint64_t hash_name(int table, const char *s) {
    uint64_t h = 1469598103934665603ull ^ (uint64_t)(uint32_t)table;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h ^ (h >> 29);
}
static const char *slot_name(const parser *ps, const hslot *sl) {
    return sl->table < 0 ? ps->doc->tables[sl->idx].name : ps->doc->entries[sl->idx].key;
}
/* Index of the table named s (table -1) or of key s in table `table`; -1 when absent. */
static int hs_find(const parser *ps, int table, const char *s) {
    if (!ps->hcap) return -1;
    uint64_t h = hash_name(table, s);
    for (size_t i = h & (ps->hcap - 1);; i = (i + 1) & (ps->hcap - 1)) {
        const hslot *sl = &ps->hs[i];
        if (sl->idx < 0) return -1;
        if (sl->h == h && sl->table == table && !strcmp(slot_name(ps, sl), s)) return sl->idx;
    }
}
static void hs_put(parser *ps, uint64_t h, int table, int idx) {
    for (size_t i = h & (ps->hcap - 1);; i = (i + 1) & (ps->hcap - 1))
        if (ps->hs[i].idx < 0) {
            ps->hs[i] = (hslot){h, table, idx};
            return;
        }
}
static void hs_add(parser *ps, int table, const char *s, int idx) {
    if (2 * (ps->hn + 1) > ps->hcap) {
        size_t ocap = ps->hcap, ncap = ocap ? 2 * ocap : 64;
        hslot *old = ps->hs;
        ps->hs = sp_malloc(ncap * sizeof *ps->hs);
        for (size_t i = 0; i < ncap; i++) ps->hs[i].idx = -1;
        ps->hcap = ncap;
        for (size_t i = 0; i < ocap; i++)
            if (old[i].idx >= 0) hs_put(ps, old[i].h, old[i].table, old[i].idx);
        free(old);
    }
    hs_put(ps, hash_name(table, s), table, idx);
    ps->hn++;
}

static const char *table_label(const parser *ps, int t) { return ps->doc->tables[t].name; }

static int parse_header(parser *ps) {
    ps->p++;
    ps->table = -1; /* until the header is known to be good, keys under it are dropped */
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
        if (peek(ps) < 0 || at_newline(ps) || peek(ps) == '#') {
            /* Reported, then taken as meant, so the keys below land where the user expects. */
            perr(ps, "expected ']' to close the table header [%s", name.s);
            break;
        }
        free(name.s);
        return perr(ps, "expected ']' to close the table header");
    }
    sp_toml_doc *d = ps->doc;
    int prev = hs_find(ps, -1, name.s);
    if (prev >= 0) {
        /* Reported; its keys still count (as if the table went on), so none is lost twice. */
        perr(ps, "duplicate table [%s] (first defined on line %d)", name.s, d->tables[prev].line);
        free(name.s);
        ps->table = prev;
        return expect_eol(ps, "table header");
    }
    /* A table may not reuse the name of a key: [a.b] clashes with b = ... in [a]. */
    char *dot = strrchr(name.s, '.');
    int parent = 0;
    if (dot) {
        *dot = 0;
        parent = hs_find(ps, -1, name.s);
        *dot = '.';
    }
    const char *leaf = dot ? dot + 1 : name.s;
    int clash = parent >= 0 ? hs_find(ps, parent, leaf) : -1;
    if (clash >= 0) {
        perr(ps, "table [%s] clashes with key '%s' on line %d", name.s, leaf, d->entries[clash].line);
        free(name.s);
        return -1;
    }
    if (d->ntables == ps->tcap) { /* doubling: growing by one is quadratic in copies */
        ps->tcap = 2 * d->ntables;
        d->tables = sp_realloc(d->tables, (size_t)ps->tcap * sizeof *d->tables);
    }
    d->tables[d->ntables] = (sp_toml_table){name.s, ps->line};
    hs_add(ps, -1, name.s, d->ntables);
    ps->table = d->ntables++;
    return expect_eol(ps, "table header");
}

static void add_entry(sp_toml_doc *d, sp_toml_entry e) {
    if (d->n == d->cap) {
        d->cap = d->cap ? 2 * d->cap : 16;
        d->entries = sp_realloc(d->entries, (size_t)d->cap * sizeof *d->entries);
    }
    d->entries[d->n++] = e;
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
    /* Keys that cannot be kept (a duplicate, a clash, under a bad header) are still parsed so
     * their own problems are reported and parsing goes on after them. */
    bool keep = ps->table >= 0;
    if (keep) {
        int prev = hs_find(ps, ps->table, key);
        const char *t = table_label(ps, ps->table);
        if (prev >= 0) {
            if (*t) perr(ps, "duplicate key '%s' in [%s] (first set on line %d)", key, t, d->entries[prev].line);
            else perr(ps, "duplicate key '%s' (first set on line %d)", key, d->entries[prev].line);
            keep = false;
        } else {
            char *full = *t ? sp_strfmt("%s.%s", t, key) : sp_strdup(key);
            int clash = hs_find(ps, -1, full);
            free(full);
            if (clash >= 0) {
                perr(ps, "key '%s' clashes with table [%s] on line %d", key, d->tables[clash].name,
                     d->tables[clash].line);
                keep = false;
            }
        }
    }
    if (at_newline(ps) || peek(ps) < 0 || peek(ps) == '#') {
        perr(ps, "missing value for key '%s'", key);
        free(key);
        return -1;
    }
    sp_toml_value v;
    free(ps->guess);
    ps->guess = NULL;
    if (parse_value(ps, &v, 0)) {
        sp_toml_value_free(&v);
        if (keep && ps->guess && ps->open == 0) {
            /* An unquoted word: kept as the string it was meant to be, marked invalid, so that a
             * consumer does not report the key as missing as well. */
            v.type = SP_TOML_STRING;
            v.line = line;
            v.s = ps->guess;
            ps->guess = NULL;
            add_entry(d, (sp_toml_entry){ps->table, key, line, v, true});
            hs_add(ps, ps->table, key, d->n - 1);
        } else {
            free(key);
        }
        return -1;
    }
    if (!keep) {
        sp_toml_value_free(&v);
        free(key);
        return expect_eol(ps, "value");
    }
    add_entry(d, (sp_toml_entry){ps->table, key, line, v, false});
    hs_add(ps, ps->table, key, d->n - 1);
    return expect_eol(ps, "value");
}

/* Scans the rest of the line (not its newline) for the brackets that close open arrays,
 * skipping strings and comments. */
static void skip_line_brackets(parser *ps, int *depth) {
    while (ps->p < ps->end && !at_newline(ps)) {
        char ch = *ps->p;
        if (ch == '#') {
            skip_comment(ps);
            return;
        }
        if (ch == '"' || ch == '\'') {
            const char *q = ps->p;
            if (skip_quoted(&q, ps->end)) ps->p = q;
            else ps->p++;
            continue;
        }
        if (*depth > 0 && ch == '[') ++*depth;
        if (*depth > 0 && ch == ']') --*depth;
        ps->p++;
    }
}

/* After an error: on to the next statement. The rest of the line is skipped, and when the
 * error was inside an array, the lines that continue it (up to its ']' or the next line that
 * starts a statement). */
static void recover(parser *ps) {
    if (ps->resume) {
        ps->p = ps->resume;
        ps->line = ps->resume_line;
        ps->resume = NULL;
        return;
    }
    int depth = ps->err_open;
    skip_line_brackets(ps, &depth);
    while (depth > 0 && ps->p < ps->end) {
        eat_newline(ps);
        skip_ws(ps);
        if (looks_like_statement(ps, true)) return;
        skip_line_brackets(ps, &depth);
    }
}

/* Stable counting sort of the entries by table: a table's keys are contiguous in file order,
 * also when a duplicate [table] header added more of them later. */
static void group_entries(sp_toml_doc *d) {
    int *start = SP_NEW(int, d->ntables + 1);
    for (int k = 0; k < d->n; k++) start[d->entries[k].table + 1]++;
    for (int t = 0; t < d->ntables; t++) start[t + 1] += start[t];
    sp_toml_entry *out = SP_NEW(sp_toml_entry, d->cap ? d->cap : 1);
    for (int k = 0; k < d->n; k++) out[start[d->entries[k].table]++] = d->entries[k];
    free(d->entries);
    d->entries = out;
    free(start);
}

int sp_toml_parse_all(const char *text, size_t len, const char *name, sp_toml_doc *doc, sp_problems *problems) {
    memset(doc, 0, sizeof *doc);
    doc->tables = SP_NEW(sp_toml_table, 1);
    doc->tables[0] = (sp_toml_table){sp_strdup(""), 0};
    doc->ntables = 1;
    parser ps = {0};
    ps.p = text;
    ps.end = text + len;
    ps.name = name ? name : "(text)";
    ps.line = 1;
    ps.doc = doc;
    ps.problems = problems;
    ps.tcap = 1;
    hs_add(&ps, -1, "", 0);
    if (len >= 3 && !memcmp(text, "\xEF\xBB\xBF", 3)) ps.p += 3;
    if (check_text(&ps) == 0) {
        ps.line = 1;
        while (ps.p < ps.end) {
            skip_ws(&ps);
            if (ps.p >= ps.end) break;
            int c = peek(&ps);
            if (c == '#') {
                skip_comment(&ps);
            } else if (at_newline(&ps)) {
                eat_newline(&ps);
            } else {
                ps.open = 0;
                if (c == '[' ? parse_header(&ps) : parse_keyval(&ps)) recover(&ps);
            }
        }
        group_entries(doc);
    }
    free(ps.hs);
    free(ps.guess);
    return ps.nerr ? -1 : 0;
}

int sp_toml_parse(const char *text, size_t len, const char *name, sp_toml_doc *doc) {
    sp_problems pr = {0};
    int rc = sp_toml_parse_all(text, len, name, doc, &pr);
    if (rc) {
        sp_error("%s", pr.n ? pr.items[0] : "invalid TOML");
        sp_toml_free(doc);
    }
    sp_problems_free(&pr);
    return rc;
}

int sp_toml_load_all(const char *path, sp_toml_doc *doc, sp_problems *problems) {
    char *text;
    size_t n;
    memset(doc, 0, sizeof *doc);
    if (sp_read_file(path, &text, &n)) {
        sp_problems_add(problems, "%s", sp_last_error());
        return -1;
    }
    int rc = sp_toml_parse_all(text, n, path, doc, problems);
    free(text);
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
    parser ps = {0};
    ps.p = text;
    ps.end = text + len;
    ps.line = 1;
    if (check_text(&ps)) return -1;
    skip_ws(&ps);
    if (ps.p >= ps.end) return perr(&ps, "missing value");
    int rc = parse_value(&ps, v, 0);
    free(ps.guess);
    if (rc) {
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
