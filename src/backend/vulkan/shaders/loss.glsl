// loss.glsl — what the two `loss` passes share (loss_ssim.comp, loss_grad.comp): the tiling, the
// push-constant words, the inputs (render and target) and a fixed-order workgroup sum.
//
// Each workgroup covers one 32x32 output tile of one colour channel (workgroup g: tile g / 3,
// channel g % 3, so the three channels of a tile run side by side and share their loads in the
// cache) from a 42x42 input region: the tile and its 5-pixel border, zero outside the image (the
// window's zero padding). The separable 11-tap window runs in shared memory: the horizontal pass
// gives each invocation SEG = 4 neighbouring outputs of one row of the region (their windows share
// the 14 values it reads), the vertical pass ROWS = 4 neighbouring outputs of one column of the
// tile. Every window sum runs over k = 0..10 in order, as in the reference (backend/ref/loss.c).
// Rows in shared memory are padded by one float so that a subgroup's accesses fall in distinct
// banks. Before including this file a shader defines LOSS_SHARED, the floats of its shared array.
//
// Words: 0 width, 1 height, 2 dL/dS (-lambda / N), 3 L1 gradient (1 - lambda) / N, 4 C1, 5 C2,
// 6 tiles across, 7 target source (0: the float target buffer; 1: the view's RGBA8 words,
// composited here), 8-18 window, 19 view offset (words), 20 premultiplied, 21-23 background,
// 24 ring slot, 25 partial sums (tiles * 3).
#include "common.glsl"

#define LT 32           // output tile edge
#define LR 5            // window radius
#define LE (LT + 2 * LR) // 42: input region edge
#define LEP (LE + 1)     // padded row of an input region
#define LTP (LT + 1)     // padded row of horizontal sums
#define LSEG 4           // horizontal outputs per invocation
#define LHALF (LSEG + 2 * LR)          // 14: inputs of a horizontal segment
#define LNSEG (LE * (LT / LSEG))       // 336 horizontal segments per region
#define LROWS (LT * LT / WG)           // 4: vertical outputs per invocation
#define LLOADS ((LE * LE + WG - 1) / WG) // 7: region values per invocation

layout(std430, binding = 0) readonly buffer LB0 { float rgb[]; };
layout(std430, binding = 1) readonly buffer LB1 { float target[]; };
layout(std430, binding = 2) readonly buffer LB2 { uint pix[]; };

shared float sm[LOSS_SHARED];

float win(int k) { return pf(8 + k); }

// Where workgroup g works: its tile's origin and its channel; false for a surplus workgroup (the
// dispatch is spread over y beyond the device's x limit).
bool loss_tile(out int x0, out int y0, out int c) {
    uint g = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    x0 = 0, y0 = 0, c = 0;
    if (g >= pc.u[25]) return false;
    uint tile = g / 3u, tx = pc.u[6];
    c = int(g % 3u);
    x0 = int(tile % tx) * LT, y0 = int(tile / tx) * LT;
    return true;
}

// Channel c of the target at pixel q (in the image): the float target, or the view's pixel
// composited over the background as sp_view_composite does (straight or premultiplied alpha;
// RGB images carry alpha 255).
float target_at(uint q, int c) {
    if (pc.u[7] == 0u) return target[3u * q + uint(c)];
    uint wd = pix[pc.u[19] + q];
    precise float a = float(wd >> 24) * (1.0 / 255.0);
    precise float col = float((wd >> (8 * c)) & 255u) * (1.0 / 255.0);
    precise float t = (pc.u[20] != 0u ? col : col * a) + pf(21 + c) * (1.0 - a);
    return t;
}

// Region value i of this invocation (i < LLOADS): its place in the region (-1: past the region)
// and its pixel, or -1 outside the image.
int region_place(int i) {
    int t = int(gl_LocalInvocationIndex) + i * WG;
    return t < LE * LE ? t : -1;
}
int region_pixel(int place, int x0, int y0) {
    if (place < 0) return -1;
    int gx = x0 - LR + place % LE, gy = y0 - LR + place / LE;
    return gx >= 0 && gx < pi(0) && gy >= 0 && gy < pi(1) ? gy * pi(0) + gx : -1;
}

// The workgroup's sum of v in a fixed order (independent of the subgroup size): 16 runs of 16
// invocations, then the runs; valid in invocation 0. Uses sm[0, 2 WG + 2 WG / 16): the caller
// has passed a barrier after its last use of those floats.
vec2 wg_sum(vec2 v) {
    uint t = gl_LocalInvocationIndex;
    sm[t] = v.x;
    sm[WG + t] = v.y;
    barrier();
    if (t < WG / 16) {
        float a = 0.0, b = 0.0;
        [[unroll]] for (uint i = 0u; i < 16u; i++) {
            a += sm[16u * t + i];
            b += sm[WG + 16u * t + i];
        }
        sm[2 * WG + t] = a;
        sm[2 * WG + WG / 16 + t] = b;
    }
    barrier();
    vec2 s = vec2(0.0);
    if (t == 0u)
        for (uint i = 0u; i < WG / 16; i++) s += vec2(sm[2 * WG + i], sm[2 * WG + WG / 16 + i]);
    return s;
}
