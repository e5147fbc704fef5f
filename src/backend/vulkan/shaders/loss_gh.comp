#version 450
// loss_gh.comp — `loss`, step 3: horizontal window sums of the G maps (the window's transpose is
// itself). Words: 0 width, 1 height, 8-18 window.
#include "common.glsl"

layout(std430, binding = 0) readonly buffer B0 { float Gm[]; };
layout(std430, binding = 1) writeonly buffer B1 { float GH[]; };

void main() {
    uint p = gid();
    int w = pi(0), h = pi(1);
    if (p >= uint(w * h)) return;
    int x = int(p) % w, y = int(p) / w;
    float s[9] = float[9](0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
    for (int k = 0; k < 11; k++) {
        int xx = x + k - 5;
        if (xx < 0 || xx >= w) continue;
        uint q = uint(y * w + xx);
        float g = pf(8 + k);
        for (int m = 0; m < 9; m++) s[m] += g * Gm[9 * q + m];
    }
    for (int m = 0; m < 9; m++) GH[9 * p + m] = s[m];
}
