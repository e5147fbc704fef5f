// common.glsl — what every compute shader of the Vulkan backend shares: the push-constant words
// (camera in words 0-19, stage arguments from word 20) and the workgroup size (256 invocations;
// a shader that defines WG before including this file sets its own, and the host dispatches it
// with that size).
// Push constants are 32 raw words; floats are read with uintBitsToFloat so that every shader
// and the host (vk_internal.h) agree on one layout.
#extension GL_GOOGLE_include_directive : require

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
