// chunk_const.glsl — the chunked backward_raster's list positions per chunk (chunks.glsl), written
// so that both GLSL and C read this file: chunks.glsl includes it, and so does vk_backend.h, which
// sizes the chunk states and work list (vk_chunk_slots).
#ifndef SPLAT_VK_CHUNK_CONST
#define SPLAT_VK_CHUNK_CONST

#define VK_BWD_CHUNK 128u

#endif
