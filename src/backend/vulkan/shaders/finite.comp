#version 450
// finite.comp — whether every parameter of the model is finite (params_finite, asked on log
// steps), decided on the device so that only one word comes back instead of the whole store.
// Element x runs over the five regions of the store one after another (means, log-scales,
// quaternions, opacity logits, SH: words 2k and 2k + 1 are region k's offset and length in
// floats); an exponent of all ones (Inf or NaN) sets flag[at] to 1. The bit test does not
// depend on how a driver treats isnan/isinf. Words: 0-9 regions, 10 total, 11 at.
#include "common.glsl"

layout(std430, binding = 0) readonly buffer B0 { uint P[]; };
layout(std430, binding = 1) buffer B1 { uint flag[]; };

void main() {
    uint x = gid();
    if (x >= pc.u[10]) return;
    for (int k = 0; k < 5; k++) {
        uint len = pc.u[2 * k + 1];
        if (x < len) {
            if ((P[pc.u[2 * k] + x] & 0x7f800000u) == 0x7f800000u) flag[pc.u[11]] = 1u;
            return;
        }
        x -= len;
    }
}
