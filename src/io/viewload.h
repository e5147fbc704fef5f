/* viewload.h — one view's pixels decoded from its file, for datasets loaded without pixels (the
 * streaming mode of data.cache_mb, scene/viewcache.h): byte for byte what the loader stores when
 * it decodes everything up front. */
#ifndef SPLAT_VIEWLOAD_H
#define SPLAT_VIEWLOAD_H

#include <stddef.h>
#include <stdint.h>

#include "scene/dataset.h"

/* Bytes of the view's decoded pixels: width * height * channels. */
size_t sp_view_bytes(const sp_view *v);
/* 0 if the view's pixels can be decoded later by sp_view_load_pixels; -1 with the reason (naming
 * the file) otherwise (a channel count or lens that cannot give the view's image). */
int sp_view_streamable(const sp_view *v);
/* Decodes v->path, downscales it by v->downscale, removes its lens distortion (v->undistorted: with
 * v->lens and v->crop, as the loader does) and converts it to v->channels; *pixels receives
 * sp_view_bytes(v) malloc'd bytes. Errors name the file, including a file whose size no longer
 * matches the camera (changed since the dataset was loaded). Thread safe. */
int sp_view_load_pixels(const sp_view *v, uint8_t **pixels);
/* Decodes the pixels of every view of s that has none (sp_view_load_pixels), on `threads` threads
 * (<= 0: all of them). On an error the first failing view's (by index) is reported and the
 * split's other views may hold pixels or not. */
int sp_split_load_pixels(sp_split *s, int threads);

#endif
