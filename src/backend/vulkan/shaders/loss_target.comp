#version 450
// loss_target.comp — the training image composited over this step's background
// (sp_view_composite): straight or premultiplied RGBA8 (RGB images carry alpha 255).
// Words: 0 width, 1 height, 2 view offset (words), 3 premultiplied, 4-6 background.
#include "common.glsl"

layout(std430, binding = 0) readonly buffer B0 { uint pix[]; };
layout(std430, binding = 1) writeonly buffer B1 { float target[]; };

void main() {
    uint p = gid();
    if (p >= pc.u[0] * pc.u[1]) return;
    uint w = pix[pc.u[2] + p];
    float a = float(w >> 24) * (1.0 / 255.0);
    for (int k = 0; k < 3; k++) {
        float col = float((w >> (8 * k)) & 255u) * (1.0 / 255.0);
        target[3 * p + k] = (pc.u[3] != 0u ? col : col * a) + pf(4 + k) * (1.0 - a);
    }
}
