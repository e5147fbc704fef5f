#version 450
// rasterize.comp — stage `rasterize`: one workgroup per 16x16 tile, one invocation per pixel;
// the tile's depth-ordered splats are loaded WG at a time into shared memory and composited front
// to back (docs/math.md; sp_m_raster_pixel), with early stop at T < 1e-4. Writes rgb (background
// included), final T and n_contrib (1 + list position of the last blended splat). Invocations
// sit in the tile in Morton order (tile_pixel): a subgroup skips a group of 4 splats its
// rectangle misses. The alphas of 4 consecutive splats are computed together, then blended in
// order (same decisions as one at a time).
// Training (arg 3 = 1) also leaves what the chunked backward_raster reads (chunks.glsl): at the
// start of every CHUNK-position span of its tile's list, a pixel still blending stores its state
// (T, colour in front) into the span's slot of `state`; the workgroup writes the tile's largest
// contributor count and its chunk count (the work list's scan input; tile 0 also zeroes the
// entry past the last tile, which the scan turns into the item total).
// Args: bg r, g, b, store the backward's state (0 or 1).
// Built with WEIGHTS (pipeline rasterize_w, for refine.prune_weight): each splat's blending weights
// alpha T are summed, in units of 2^-24, over the workgroup's pixels in shared memory per batch,
// then added to its 64-bit total in `wsum` (low word, carry into the high word: integer sums, the
// same in any order).
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_vote : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "common.glsl"
#include "splatbox.glsl"
#include "chunks.glsl"

layout(std430, binding = 0) readonly buffer B0 { uint range[]; };
layout(std430, binding = 1) readonly buffer B1 { uint sorted_gid[]; };
layout(std430, binding = 2) readonly buffer B2 { float mean2d[]; };
layout(std430, binding = 3) readonly buffer B3 { float conic[]; };
layout(std430, binding = 4) readonly buffer B4 { float opac[]; };
layout(std430, binding = 5) readonly buffer B5 { float color[]; };
layout(std430, binding = 6) writeonly buffer B6 { float rgb[]; };
layout(std430, binding = 7) writeonly buffer B7 { float final_T[]; };
layout(std430, binding = 8) writeonly buffer B8 { int n_contrib[]; };
layout(std430, binding = 9) writeonly buffer B9 { vec4 state[]; };
layout(std430, binding = 10) writeonly buffer B10 { uint work[]; }; // chunks.glsl's layout
#ifdef WEIGHTS
layout(std430, binding = 11) buffer B11 { uint wsum[]; }; // [splat][low, high]
#endif

#define ILP 4u // splats whose alphas are computed together

shared vec4 s_xyab[WG];  // x, y, a, b
shared vec4 s_cop[WG];   // c, opacity, pmin, -
shared vec3 s_col[WG];
shared vec2 s_box[WG]; // splat_half_box
shared uint s_done;
shared int s_maxc;
#ifdef WEIGHTS
shared uint s_w[WG];   // the batch's sums, per slot
shared uint s_wid[WG]; // the batch's splat ids

// Adds slot t's sum to its splat's total and clears the slot.
void flush_weight(uint t) {
    uint q = s_w[t];
    if (q != 0u) {
        uint id = s_wid[t];
        uint old = atomicAdd(wsum[2u * id], q);
        if (old + q < old) atomicAdd(wsum[2u * id + 1u], 1u);
        s_w[t] = 0u;
    }
}
#endif

void main() {
    uint tile = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x, t = gl_LocalInvocationID.x;
    int tx = int(tile) % TILES_X, ty = int(tile) / TILES_X;
    ivec2 lp = tile_pixel(t); // a subgroup covers a compact rectangle of the tile
    int px = tx * 16 + lp.x, py = ty * 16 + lp.y;
    bool inside = px < CAM_W && py < CAM_H;
    float fx = float(px) + 0.5, fy = float(py) + 0.5;
    uint start = range[2 * tile], end = range[2 * tile + 1];
    float T = 1.0;
    vec3 C = vec3(0.0);
    int last = 0;
    bool done = !inside, store = pc.u[ARG(3)] != 0u;
    uint slot0 = chunk_first(start, tile);
    if (t == 0u) {
        s_done = 0;
        s_maxc = 0;
    }
#ifdef WEIGHTS
    s_w[t] = 0u;
#endif
    barrier();
    if (done) atomicAdd(s_done, 1u);
    for (uint b0 = start; b0 < end; b0 += WG) {
        barrier();
#ifdef WEIGHTS
        flush_weight(t); // the previous batch: every invocation is past it
#endif
        if (s_done == WG) break;
        if (store && !done && (b0 - start) % CHUNK == 0u) state[(slot0 + (b0 - start) / CHUNK) * WG + t] = vec4(T, C);
        uint k = b0 + t;
        if (k < end) {
            uint id = sorted_gid[k];
            float op = opac[id];
            s_xyab[t] = vec4(mean2d[2 * id], mean2d[2 * id + 1], conic[3 * id], conic[3 * id + 1]);
            float pmin = op > 0.0 ? -log(255.0 * op) - 1e-3 : -1e30;
            s_cop[t] = vec4(conic[3 * id + 2], op, pmin, 0.0);
            s_box[t] = splat_half_box(conic[3 * id], conic[3 * id + 1], conic[3 * id + 2], pmin);
            s_col[t] = vec3(color[3 * id], color[3 * id + 1], color[3 * id + 2]);
#ifdef WEIGHTS
            s_wid[t] = id;
#endif
        }
        barrier();
        uint cnt = min(uint(WG), end - b0);
        // ILP splats at a time: their alphas are independent, so they are computed together (no
        // stall on one exp at a time), then blended in order with the same skip and stop rules.
        // A subgroup skips the group when none of its lanes is inside any of the splats' boxes.
        for (uint j = 0; j < cnt && !done; j += ILP) { // j + u < WG: WG is a multiple of ILP
            bool near = false;
            [[unroll]] for (uint u = 0; u < ILP; u++) {
                vec2 hb = s_box[j + u];
                vec4 g = s_xyab[j + u];
                near = near || (j + u < cnt && abs(g.x - fx) <= hb.x && abs(g.y - fy) <= hb.y);
            }
            if (!subgroupAny(near)) continue;
            float a[ILP]; // 0: skipped
            [[unroll]] for (uint u = 0; u < ILP; u++) {
                vec4 g = s_xyab[j + u], h = s_cop[j + u];
                float dx = g.x - fx, dy = g.y - fy;
                float power = -0.5 * (g.z * dx * dx + h.x * dy * dy) - g.w * dx * dy;
                float al = min(h.y * exp(power), 0.99);
                a[u] = j + u < cnt && power >= h.z && power <= 0.0 && al >= 1.0 / 255.0 ? al : 0.0;
            }
            [[unroll]] for (uint u = 0; u < ILP; u++) {
                if (a[u] == 0.0) continue;
                float Tn = T * (1.0 - a[u]);
                if (Tn < 1e-4) {
                    done = true;
                    atomicAdd(s_done, 1u);
                    break;
                }
                C += s_col[j + u] * (a[u] * T);
#ifdef WEIGHTS
                atomicAdd(s_w[j + u], uint(a[u] * T * 16777216.0 + 0.5)); // SP_BLEND_WEIGHT_UNIT
#endif
                T = Tn;
                last = int(b0 - start + j + u) + 1;
            }
        }
    }
#ifdef WEIGHTS
    barrier();
    flush_weight(t); // the last batch
#endif
    if (store) {
        int sgmax = subgroupMax(last);
        if (subgroupElect()) atomicMax(s_maxc, sgmax);
        barrier();
        if (t == 0u) {
            uint tiles = uint(TILES_X * TILES_Y), mc = uint(s_maxc);
            work[WORK_MAXC(tiles) + tile] = mc;
            work[tile] = max(1u, (mc + CHUNK - 1u) / CHUNK);
            if (tile == 0u) work[tiles] = 0u;
        }
    }
    if (!inside) return;
    uint p = uint(py * CAM_W + px);
    rgb[3 * p] = C.x + T * pf(ARG(0));
    rgb[3 * p + 1] = C.y + T * pf(ARG(1));
    rgb[3 * p + 2] = C.z + T * pf(ARG(2));
    final_T[p] = T;
    n_contrib[p] = last;
}
