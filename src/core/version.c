/* version.c — the version and the commit this binary was built from (the build rewrites only
 * this object when the commit changes). */
#include "core/core.h"

#ifndef SPLAT_COMMIT
#define SPLAT_COMMIT "unknown"
#endif

const char *sp_version(void) { return "0.1.0"; }
const char *sp_commit(void) { return SPLAT_COMMIT; }
