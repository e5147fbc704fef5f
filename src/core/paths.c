/* paths.c — path comparison for the data-safety checks (paths.h): lexical normalization,
 * symlink resolution through the longest existing prefix, containment, UTF-8 validation. */
#include "core/paths.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/core.h"

/* Collapses the components of an absolute path in place ("/a/./b/../c/" -> "/a/c"). */
static void collapse(char *p) {
    char *out = p; /* write position; p[0] == '/' */
    const char *r = p;
    size_t w = 0;
    while (*r) {
        while (*r == '/') r++;
        if (!*r) break;
        const char *s = r;
        while (*r && *r != '/') r++;
        size_t n = (size_t)(r - s);
        if (n == 1 && s[0] == '.') continue;
        if (n == 2 && s[0] == '.' && s[1] == '.') {
            while (w > 0 && out[w - 1] != '/') w--;
            if (w > 0) w--; /* the '/' before the removed component */
            continue;
        }
        out[w++] = '/';
        memmove(out + w, s, n);
        w += n;
    }
    if (w == 0) out[w++] = '/';
    out[w] = 0;
}

char *sp_path_normalize(const char *path) {
    char *abs;
    if (path[0] == '/') {
        abs = sp_strdup(path);
    } else {
        char cwd[PATH_MAX];
        if (!getcwd(cwd, sizeof cwd)) return NULL;
        abs = sp_strfmt("%s/%s", cwd, path);
    }
    collapse(abs);
    return abs;
}

char *sp_path_resolve(const char *path) {
    char *norm = sp_path_normalize(path);
    if (!norm) return NULL;
    size_t len = strlen(norm);
    /* the longest existing prefix, ending at a component boundary */
    for (size_t cut = len; cut > 0; cut--) {
        if (cut < len && norm[cut] != '/') continue;
        char save = norm[cut];
        norm[cut] = 0;
        char real[PATH_MAX];
        char *ok = realpath(norm, real);
        norm[cut] = save;
        if (ok) {
            char *r = sp_strfmt("%s%s", real, norm + cut);
            collapse(r);
            free(norm);
            return r;
        }
    }
    return norm;
}

bool sp_path_within(const char *path, const char *parent) {
    char *a = sp_path_resolve(path), *b = sp_path_resolve(parent);
    bool in = false;
    if (a && b) {
        size_t n = strlen(b);
        if (n == 1) in = true; /* "/" */
        else in = !strncmp(a, b, n) && (a[n] == 0 || a[n] == '/');
    }
    free(a);
    free(b);
    return in;
}

bool sp_path_escapes(const char *rel) {
    if (rel[0] == '/') return true;
    int depth = 0;
    const char *r = rel;
    while (*r) {
        while (*r == '/') r++;
        if (!*r) break;
        const char *s = r;
        while (*r && *r != '/') r++;
        size_t n = (size_t)(r - s);
        if (n == 1 && s[0] == '.') continue;
        if (n == 2 && s[0] == '.' && s[1] == '.') {
            if (--depth < 0) return true;
        } else {
            depth++;
        }
    }
    return false;
}

bool sp_utf8_valid(const char *s) {
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        unsigned c = *p;
        int n;
        unsigned cp;
        if (c < 0x80) { p++; continue; }
        if (c >= 0xC2 && c <= 0xDF) n = 1, cp = c & 0x1F;
        else if (c >= 0xE0 && c <= 0xEF) n = 2, cp = c & 0x0F;
        else if (c >= 0xF0 && c <= 0xF4) n = 3, cp = c & 0x07;
        else return false;
        for (int i = 1; i <= n; i++) {
            if ((p[i] & 0xC0) != 0x80) return false;
            cp = (cp << 6) | (p[i] & 0x3F);
        }
        if ((n == 2 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) || (n == 3 && (cp < 0x10000 || cp > 0x10FFFF)))
            return false;
        p += n + 1;
    }
    return true;
}
