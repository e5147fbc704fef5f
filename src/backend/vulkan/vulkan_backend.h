/* vulkan_backend.h — the Vulkan backend's entry point: its kind row (backend.h, sp_backend_kind),
 * defined in vk_backend.c and listed by src/backend/backend.c when the build has Vulkan
 * (SPLAT_HAVE_VULKAN). Everything else of the backend is reached through the row and its ops. */
#ifndef SPLAT_VULKAN_BACKEND_H
#define SPLAT_VULKAN_BACKEND_H

#include "backend/backend.h"

extern const sp_backend_kind sp_kind_vulkan;

#endif
