/* cpu_backend.h — the CPU backend's entry point: its kind row (backend.h, sp_backend_kind), which
 * src/backend/backend.c lists. The backend runs the reference stages of src/backend/ref/ on host
 * memory; nothing outside src/backend/cpu/ includes this folder's headers (the table declares the
 * row itself), so programs and tests reach the backend through the kind table. */
#ifndef SPLAT_CPU_BACKEND_H
#define SPLAT_CPU_BACKEND_H

#include "backend/backend.h"

extern const sp_backend_kind sp_kind_cpu;

#endif
