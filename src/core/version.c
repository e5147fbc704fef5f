/* version.c — the version and the commit this binary was built from (the build rewrites only
 * this object when the commit changes). The version is the public header's SPLAT_VERSION_STRING:
 * one place says it. */
#include "core/core.h"
#include "splat.h"

#ifndef SPLAT_COMMIT
#define SPLAT_COMMIT "unknown"
#endif

const char *sp_version(void) { return SPLAT_VERSION_STRING; }
const char *sp_commit(void) { return SPLAT_COMMIT; }
