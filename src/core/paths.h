/* paths.h — path comparison for the data-safety checks: lexical normalization, resolution of
 * symlinks through the longest existing prefix, and "is A the same as or inside B". */
#ifndef SPLAT_CORE_PATHS_H
#define SPLAT_CORE_PATHS_H

#include <stdbool.h>

/* Absolute, lexically normalized path (relative paths joined to the working directory; "//", "."
 * and ".." components collapsed; no trailing '/'). malloc'd; NULL when the working directory
 * cannot be read. */
char *sp_path_normalize(const char *path);
/* As sp_path_normalize, but the longest existing prefix goes through realpath (symlinks
 * resolved), so two names of one file compare equal even when the file does not exist yet. */
char *sp_path_resolve(const char *path);
/* true when path is parent itself or lies inside it (both resolved with sp_path_resolve). */
bool sp_path_within(const char *path, const char *parent);
/* true when the lexically normalized rel (relative to nothing) climbs above its start, or is
 * absolute: "../x", "a/../../x", "/abs". */
bool sp_path_escapes(const char *rel);
/* true when s is valid UTF-8 (no overlong forms, no surrogates). */
bool sp_utf8_valid(const char *s);

#endif
