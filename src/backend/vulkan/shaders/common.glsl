// common.glsl — what every compute shader of the Vulkan backend shares: the push-constant words
// (camera in words 0-19, stage arguments from word 20) and the workgroup size (256 invocations;
// a shader that defines WG before including this file sets its own, and the host dispatches it
// with that size).
// Push constants are 32 raw words; floats are read with uintBitsToFloat so that every shader
// and the host (vk_internal.h) agree on one layout.
#extension GL_GOOGLE_include_directive : require
// [[unroll]] on loops of a fixed count: unrolled in the SPIR-V itself, so that small arrays indexed
// by the loop counter become registers on every driver (no indexed local memory).
#extension GL_EXT_control_flow_attributes : require

#ifndef WG
#define WG 256
#endif
layout(local_size_x = WG) in;

layout(push_constant) uniform PC { uint u[32]; } pc;

float pf(int k) { return uintBitsToFloat(pc.u[k]); }
int pi(int k) { return int(pc.u[k]); }

// camera: R row-major (0-8), t (9-11), fx fy cx cy (12-15), width height tiles_x tiles_y (16-19)
#define CAM_W pi(16)
#define CAM_H pi(17)
#define TILES_X pi(18)
#define TILES_Y pi(19)
#define ARG(k) (20 + (k))

uint gid() { return gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * WG; }

// a / b rounded as IEEE division is (drivers may divide through an approximate reciprocal):
// one correction step from the exact residual a - q * b of the first quotient q. The residual is
// found with Dekker's split product rather than fma(), which some drivers do not fuse.
float fdiv(float a, float b) {
    precise float q = a / b;
    precise float cq = 4097.0 * q, qh = cq - (cq - q), ql = q - qh;
    precise float cb = 4097.0 * b, bh = cb - (cb - b), bl = b - bh;
    precise float p = q * b;
    precise float e = ((qh * bh - p) + qh * bl + ql * bh) + ql * bl; // q * b == p + e exactly
    precise float r = (a - p) - e;
    precise float res = q + r / b;
    return res;
}

// The exponent of a splat's Gaussian at offset (dx, dy) from its mean, conic (a, b, c): rasterize
// and backward_raster must get the same float for the same pixel, or a splat near the 1/255 alpha
// cut is blended by one and skipped by the other (the backward's T then goes wrong for the whole
// pixel). `precise`: no fused multiply-adds, which a driver may form differently in two shaders.
float splat_power(float a, float b, float c, float dx, float dy) {
    precise float p = -0.5 * (a * dx * dx + c * dy * dy) - b * dx * dy;
    return p;
}

// Where invocation t of a 16x16 tile's workgroup sits in the tile: Morton (Z) order, x from the
// even bits of t, y from the odd ones. Any power-of-two run of consecutive invocations (a
// subgroup of 4, 8, .., 128 lanes) then covers a compact rectangle (8x4 at 32 lanes, 8x8 at 64)
// instead of a strip of rows, so fewer splats reach a subgroup at all: the warp masks
// (masks.glsl) are per 8x4 rectangle, each a run of 32 places. Which pixel an invocation gets
// changes nothing else: per-pixel buffers are indexed by the pixel.
ivec2 tile_pixel(uint t) {
    uint x = (t & 1u) | ((t >> 1) & 2u) | ((t >> 2) & 4u) | ((t >> 3) & 8u);
    uint y = ((t >> 1) & 1u) | ((t >> 2) & 2u) | ((t >> 3) & 4u) | ((t >> 4) & 8u);
    return ivec2(x, y);
}
