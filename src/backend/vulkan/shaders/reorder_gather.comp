#version 450
// reorder_gather.comp — one store (parameters or an Adam moment, the packed layout of vk_layout)
// put in the reorder's order (vk_reorder.c): Gaussian i of dst takes Gaussian order[i] of src,
// every field. Element x runs over the five regions one after another ([n][3] means, [n][3]
// log-scales, [n][4] quaternions, [n] opacity, [n][3K] SH), so consecutive invocations write
// consecutive words. Words, not floats: NaN payloads move as they are. The order is the values
// of the sort's pairs, in the set its plan names (pargs word VK_PA_SORT_FINAL).
// Args: n, 3K, the five region offsets (floats).
#include "common.glsl"
#include "sort_const.glsl"

layout(std430, binding = 0) readonly buffer B0 { uint src[]; };
layout(std430, binding = 1) writeonly buffer B1 { uint dst[]; };
layout(std430, binding = 2) readonly buffer B2 { uint val0[]; };
layout(std430, binding = 3) readonly buffer B3 { uint val1[]; };
layout(std430, binding = 4) readonly buffer B4 { uint args[]; };

void main() {
    uint x = gid(), n = pc.u[ARG(0)], k3 = pc.u[ARG(1)];
    if (x >= n * (11u + k3)) return;
    const uint width[5] = uint[5](3u, 3u, 4u, 1u, 0u);
    uint r = 0u, w = 3u;
    for (; r < 4u; r++) {
        w = width[r];
        if (x < n * w) break;
        x -= n * w;
    }
    if (r == 4u) w = k3;
    uint i = x / w, sub = x - i * w, region = pc.u[ARG(2) + int(r)];
    uint o = args[VK_PA_SORT_FINAL] == 0u ? val0[i] : val1[i];
    dst[region + x] = src[region + o * w + sub];
}
