#version 450
// grad_gather.comp — the fixed-order half of the deterministic `backward_raster`: each Gaussian
// sums its pairs' slots in emission order (its tiles row-major), like the CPU reference.
// Args: n.
#include "common.glsl"

layout(std430, binding = 0) readonly buffer B0 { uint offsets[]; };
layout(std430, binding = 1) readonly buffer B1 { float slots[]; };
layout(std430, binding = 2) writeonly buffer B2 { float pgrad[]; };

void main() {
    uint i = gid();
    if (i >= pc.u[ARG(0)]) return;
    uint a = offsets[i], b = offsets[i + 1];
    for (uint c = 0; c < 9u; c++) {
        float s = 0.0;
        if (a < b) {
            s = slots[9 * a + c];
            for (uint k = a + 1; k < b; k++) s += slots[9 * k + c];
        }
        pgrad[9 * i + c] = s;
    }
}
