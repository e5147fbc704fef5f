#version 450
// rasterize.comp — stage `rasterize`: a 16x16 tile is VK_RASTER_PARTS workgroups of WG
// invocations, one invocation per pixel, placed in the tile in Morton order (tile_pixel); each
// pixel composites the tile's depth-ordered splats front to back (docs/math.md;
// sp_m_raster_pixel) with early stop at T < 1e-4. Writes rgb (background included), final T and
// n_contrib (1 + list position of the last blended splat).
// Each subgroup walks its tile's list on its own, SG_LANES positions at a time (masks.glsl): a
// lane whose position's warp mask has a bit of the subgroup's rectangles loads that splat into the
// subgroup's slice of shared memory, and the subgroup blends only those (a ballot of the loads),
// in list order; the next batch's loads are issued before the current batch is blended. No
// workgroup barrier in the walk: a subgroup whose pixels are all done leaves while the others go
// on. The alphas of 4 consecutive loaded splats are computed together, then blended in order
// (same decisions as one at a time).
// Training (arg 3 = 1) also leaves what the chunked backward_raster reads (chunks.glsl): at the
// start of every CHUNK-position span of its tile's list, a pixel still blending stores its state
// (T, colour in front) into the span's slot of `state`; each subgroup takes the maximum of the
// tile's largest contributor count and of its chunk count max(1, ceil(count / CHUNK)) with
// atomics (the work list's scan input; the host zeroes both, and the entry past the last tile
// that the scan turns into the item total, before this runs).
// Args: bg r, g, b, store the backward's state (0 or 1).
// Built with WEIGHTS (pipeline rasterize_w, for refine.prune_weight): each splat's blending weights
// alpha T are summed, in units of 2^-24, over the subgroup's pixels in shared memory per batch,
// then added to its 64-bit total in `wsum` (low word, carry into the high word: integer sums, the
// same in any order).
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_vote : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_KHR_shader_subgroup_ballot : require
#define WG 64 // VK_RASTER_WG
#include "common.glsl"
#include "chunks.glsl"
#include "masks.glsl"

#define PARTS (TILE_PX / uint(WG)) // VK_RASTER_PARTS: workgroups per tile

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
layout(std430, binding = 10) buffer B10 { uint work[]; }; // chunks.glsl's layout
layout(std430, binding = 11) readonly buffer B11 { uint wmask[]; }; // masks.glsl
#ifdef WEIGHTS
layout(std430, binding = 12) buffer B12 { uint wsum[]; }; // [splat][low, high]
#endif

#define ILP 4 // splats whose alphas are computed together

// The loaded splats, one slot per lane: subgroup s owns slots s * SG_LANES .. + SG_LANES - 1.
shared vec4 s_xyab[WG]; // mean x, y, conic a, b
shared vec4 s_cor[WG];  // conic c, opacity, colour r, g
shared float s_cb[WG];  // colour b
#ifdef WEIGHTS
shared uint s_w[WG];   // the batch's sums, per slot
shared uint s_wid[WG]; // the batch's splat ids

// Adds slot s's sum to its splat's total and clears the slot.
void flush_weight(uint s) {
    uint q = s_w[s];
    if (q != 0u) {
        uint id = s_wid[s];
        uint old = atomicAdd(wsum[2u * id], q);
        if (old + q < old) atomicAdd(wsum[2u * id + 1u], 1u);
        s_w[s] = 0u;
    }
}
#endif

void main() {
    uint wg = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    uint tiles = uint(TILES_X * TILES_Y);
    if (wg >= tiles * PARTS) return; // surplus of a dispatch spread over y (the whole workgroup)
    uint tile = wg / PARTS;
    uint t = (wg % PARTS) * uint(WG) + gl_LocalInvocationID.x; // place among the tile's TILE_PX
    int tx = int(tile) % TILES_X, ty = int(tile) / TILES_X;
    ivec2 lp = tile_pixel(t);
    int px = tx * 16 + lp.x, py = ty * 16 + lp.y;
    bool inside = px < CAM_W && py < CAM_H;
    float fx = float(px) + 0.5, fy = float(py) + 0.5;
    uint start = range[2 * tile], end = range[2 * tile + 1];
    bool store = pc.u[ARG(3)] != 0u;
    uint slot0 = chunk_first(start, tile);
    uint lanes = SG_LANES, lane = gl_SubgroupInvocationID, base = gl_SubgroupID * lanes;
    uint rects = SG_RECTS(t); // the 8x4 rectangles this subgroup's pixels sit in
    float T = 1.0;
    vec3 C = vec3(0.0);
    int last = 0;
    bool done = !inside;
#ifdef WEIGHTS
    s_w[base + lane] = 0u;
#endif
    // this lane's splat of the next batch, loaded ahead when its mask reaches the subgroup (mnext),
    // and the mask of its position in the batch after (mlater), read a batch ahead so that the
    // load's branch does not wait for it
    uint k = start + lane;
    bool mnext = k < end && (PAIR_MASK(k) & rects) != 0u;
    bool mlater = k + lanes < end && (PAIR_MASK(k + lanes) & rects) != 0u;
    vec4 n_xyab = vec4(0.0), n_cor = vec4(0.0);
    float n_cb = 0.0;
    uint n_id = 0u;
    if (mnext) {
        n_id = sorted_gid[k];
        n_xyab = vec4(mean2d[2 * n_id], mean2d[2 * n_id + 1], conic[3 * n_id], conic[3 * n_id + 1]);
        n_cor = vec4(conic[3 * n_id + 2], opac[n_id], color[3 * n_id], color[3 * n_id + 1]);
        n_cb = color[3 * n_id + 2];
    }
    for (uint b0 = start; b0 < end; b0 += lanes) { // positions b0 + slot, slot < lanes
        if (subgroupAll(done)) break;
        bool hit = mnext;
        if (hit) {
            s_xyab[base + lane] = n_xyab;
            s_cor[base + lane] = n_cor;
            s_cb[base + lane] = n_cb;
#ifdef WEIGHTS
            s_wid[base + lane] = n_id;
#endif
        }
        uvec4 bits4 = subgroupBallot(hit);
        subgroupBarrier(); // the slice is written
        k = b0 + lanes + lane;
        mnext = mlater;
        mlater = k + lanes < end && (PAIR_MASK(k + lanes) & rects) != 0u;
        if (mnext) {
            n_id = sorted_gid[k];
            n_xyab = vec4(mean2d[2 * n_id], mean2d[2 * n_id + 1], conic[3 * n_id], conic[3 * n_id + 1]);
            n_cor = vec4(conic[3 * n_id + 2], opac[n_id], color[3 * n_id], color[3 * n_id + 1]);
            n_cb = color[3 * n_id + 2];
        }
        if (store && !done && (b0 - start) % CHUNK == 0u)
            state[(slot0 + (b0 - start) / CHUNK) * TILE_PX + t] = vec4(T, C);
        // ILP loaded splats at a time: their alphas are independent, so they are computed together
        // (no stall on one exp at a time), then blended in order with the same skip and stop rules.
        for (uint wd = 0u; wd * 32u < lanes; wd++) {
            uint bits = bits4[wd];
            while (bits != 0u && !done) {
                int kk[ILP];
                [[unroll]] for (int u = 0; u < ILP; u++) {
                    kk[u] = findLSB(bits); // -1 once bits runs out
                    bits &= bits - 1u;
                }
                float a[ILP]; // 0: skipped
                [[unroll]] for (int u = 0; u < ILP; u++) {
                    uint s = base + wd * 32u + uint(max(kk[u], 0));
                    vec4 g = s_xyab[s], h = s_cor[s];
                    float dx = g.x - fx, dy = g.y - fy;
                    float power = splat_power(g.z, g.w, h.x, dx, dy);
                    float al = min(h.y * exp(power), 0.99);
                    a[u] = kk[u] >= 0 && power <= 0.0 && al >= 1.0 / 255.0 ? al : 0.0;
                }
                [[unroll]] for (int u = 0; u < ILP; u++) {
                    if (a[u] == 0.0) continue;
                    float Tn = T * (1.0 - a[u]);
                    if (Tn < 1e-4) {
                        done = true;
                        break;
                    }
                    uint s = base + wd * 32u + uint(kk[u]);
                    vec4 h = s_cor[s];
                    C += vec3(h.z, h.w, s_cb[s]) * (a[u] * T);
#ifdef WEIGHTS
                    atomicAdd(s_w[s], uint(a[u] * T * 16777216.0 + 0.5)); // SP_BLEND_WEIGHT_UNIT
#endif
                    T = Tn;
                    last = int(b0 - start + wd * 32u) + kk[u] + 1;
                }
            }
        }
        subgroupBarrier(); // every lane is past the slice before the next batch overwrites it
#ifdef WEIGHTS
        flush_weight(base + lane);
#endif
    }
    if (store) {
        int sgmax = subgroupMax(last);
        if (subgroupElect()) {
            uint mc = uint(sgmax);
            if (mc > 0u) atomicMax(work[WORK_MAXC(tiles) + tile], mc);
            atomicMax(work[tile], max(1u, (mc + CHUNK - 1u) / CHUNK));
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
