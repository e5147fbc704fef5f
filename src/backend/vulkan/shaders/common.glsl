// common.glsl — what every compute shader of the Vulkan backend shares: the push-constant words
// (camera in words 0-19, stage arguments from word 20) and the workgroup size.
// Push constants are 32 raw words; floats are read with uintBitsToFloat so that every shader
// and the host (vk_internal.h) agree on one layout.
#extension GL_GOOGLE_include_directive : require

#define WG 256
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
