#version 450
// backward_raster.comp — stage `backward_raster`: per (tile, chunk) item of the work list
// (chunks.glsl; chunk_items.comp) one invocation per pixel of the tile, placed in Morton order
// (tile_pixel), walking the chunk's CHUNK list positions back to front (docs/math.md;
// sp_m_raster_pixel_back). A pixel that blends past the chunk's end starts from the state
// rasterize stored there (T, and the colour behind = final colour minus the colour in front); the
// others from final T and T * bg. So a dense tile's list is walked by several items side by side
// instead of one running alone at the end of the pass.
// Per splat a subgroup reduces its lanes' 9 gradient values (mean2d 2, conic 3, opacity, colour 3)
// with a reduce-scatter (reduce9.glsl: about 12 shuffles at 32 lanes instead of 9 full sums),
// skipping the splat when no lane blended it, positions past the subgroup's largest n_contrib
// altogether, and every splat whose warp mask (masks.glsl) has none of the subgroup's rectangles.
// Fast mode: an item is VK_RASTER_PARTS workgroups of WG invocations. Each subgroup walks the
// chunk on its own, SG_LANES positions at a time from its own largest n_contrib down: a lane whose
// position's mask reaches the subgroup loads that splat into the subgroup's slice of shared memory,
// the next batch's loads are issued before the current batch is walked, and no workgroup barrier
// is involved. The lanes holding the totals add them to the Gaussian's gradient with one float
// atomic each (native, or a compare-and-swap loop when built with CAS_ATOMICS).
// Deterministic mode (built with DETERMINISTIC, a pipeline of its own, so that the fast one
// carries neither its code nor its 16 KiB of shared memory): one workgroup of 256 per item, the
// chunk staged in shared memory 256 splats at a time; the subgroup totals go to shared memory and,
// per sub-batch, are summed in subgroup order into the pair's own slot (slots[pair][9], summed per
// Gaussian in a fixed order by grad_gather.comp); no atomics.
// Each item writes only its own positions; the deterministic slots of positions nobody blended
// stay as the host's fill left them (zero).
// Args: bg r, g, b, deterministic (the host's flag; the variant decides).
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_KHR_shader_subgroup_vote : require
#extension GL_KHR_shader_subgroup_shuffle : require
#extension GL_KHR_shader_subgroup_ballot : require
#if !defined(CAS_ATOMICS) && !defined(DETERMINISTIC)
#extension GL_EXT_shader_atomic_float : require
#endif
#ifdef DETERMINISTIC
#define WG 256
#else
#define WG 64 // VK_RASTER_WG
#endif
#include "common.glsl"
#include "reduce9.glsl"
#include "chunks.glsl"
#include "masks.glsl"

#define PARTS (TILE_PX / uint(WG)) // workgroups per item: VK_RASTER_PARTS, 1 in deterministic mode

layout(std430, binding = 0) readonly buffer B0 { uint range[]; };
layout(std430, binding = 1) readonly buffer B1 { uint sorted_gid[]; };
layout(std430, binding = 2) readonly buffer B2 { float mean2d[]; };
layout(std430, binding = 3) readonly buffer B3 { float conic[]; };
layout(std430, binding = 4) readonly buffer B4 { float opac[]; };
layout(std430, binding = 5) readonly buffer B5 { float color[]; };
layout(std430, binding = 6) readonly buffer B6 { float final_T[]; };
layout(std430, binding = 7) readonly buffer B7 { int n_contrib[]; };
layout(std430, binding = 8) readonly buffer B8 { float dl_drgb[]; };
layout(std430, binding = 9) readonly buffer B9 { uint sorted_val[]; };
#ifdef CAS_ATOMICS
layout(std430, binding = 10) buffer B10 { uint out_u[]; };
#else
layout(std430, binding = 10) buffer B10 { float out_f[]; };
#endif
layout(std430, binding = 11) readonly buffer B11 { vec4 state[]; };
layout(std430, binding = 12) readonly buffer B12 { uint work[]; };
layout(std430, binding = 13) readonly buffer B13 { float rgb[]; };
layout(std430, binding = 14) readonly buffer B14 { uint wmask[]; }; // masks.glsl

// The staged splats: in fast mode one slot per lane (subgroup s owns slots s * SG_LANES ..
// + SG_LANES - 1), in deterministic mode one per list position of the batch.
shared vec4 s_xyab[WG]; // mean x, y, conic a, b
shared vec4 s_cor[WG];  // conic c, opacity, colour r, g
shared float s_cb[WG];  // colour b
#ifndef DETERMINISTIC
shared uint s_id[WG]; // the splats' ids
#else
shared uint s_mask[WG]; // the positions' warp masks
#define PART 4096 /* floats of subgroup totals: sub-batches of PART / (9 subgroups) splats */
shared float s_part[PART];
#endif

#ifndef DETERMINISTIC
void add_grad(uint o, float v) {
    if (v == 0.0) return;
#ifdef CAS_ATOMICS
    uint old = out_u[o], assumed;
    do {
        assumed = old;
        old = atomicCompSwap(out_u[o], assumed, floatBitsToUint(uintBitsToFloat(assumed) + v));
    } while (old != assumed);
#else
    atomicAdd(out_f[o], v);
#endif
}
#else
void put_slot(uint o, float v) {
#ifdef CAS_ATOMICS
    out_u[o] = floatBitsToUint(v);
#else
    out_f[o] = v;
#endif
}
#endif

// This pixel's share of the splat in slot s's gradient (zero where it does not blend it), stepping
// T and B (colour behind) past it. Returns whether it blended. The skip rules are rasterize's.
bool splat_grad(uint s, bool cand, float fx, float fy, vec3 G, inout float T, inout vec3 B, inout float d[9]) {
    [[unroll]] for (int c = 0; c < 9; c++) d[c] = 0.0;
    if (!cand) return false;
    vec4 g = s_xyab[s], h = s_cor[s];
    float dx = g.x - fx, dy = g.y - fy;
    float power = splat_power(g.z, g.w, h.x, dx, dy);
    if (power > 0.0) return false;
    float e = exp(power);
    float al = min(h.y * e, 0.99);
    if (al < 1.0 / 255.0) return false;
    vec3 col = vec3(h.z, h.w, s_cb[s]);
    float inv = 1.0 / (1.0 - al);
    float Tj = T * inv;
    float w = al * Tj;
    d[6] = w * G.x; d[7] = w * G.y; d[8] = w * G.z;
    float dal = G.x * (col.x * Tj - B.x * inv) + G.y * (col.y * Tj - B.y * inv) + G.z * (col.z * Tj - B.z * inv);
    B += col * w;
    T = Tj;
    d[5] = dal * e; // straight through the 0.99 clamp (3DGS convention)
    float dpow = dal * h.y * e;
    d[2] = dpow * -0.5 * dx * dx;
    d[3] = dpow * -(dx * dy);
    d[4] = dpow * -0.5 * dy * dy;
    d[0] = dpow * -(g.z * dx + g.w * dy);
    d[1] = dpow * -(g.w * dx + h.x * dy);
    return true;
}

#ifdef DETERMINISTIC
// Splat `id` into slot s.
void stage_splat(uint s, uint id) {
    s_xyab[s] = vec4(mean2d[2 * id], mean2d[2 * id + 1], conic[3 * id], conic[3 * id + 1]);
    s_cor[s] = vec4(conic[3 * id + 2], opac[id], color[3 * id], color[3 * id + 1]);
    s_cb[s] = color[3 * id + 2];
}
#endif

void main() {
    uint wg = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    uint tiles = uint(TILES_X * TILES_Y);
    uint item = wg / PARTS;
    if (item >= work[tiles]) return; // surplus of a dispatch spread over y (the whole workgroup)
    uint tile = work[WORK_ITEMS(tiles) + 2u * item], chunk = work[WORK_ITEMS(tiles) + 2u * item + 1u];
    uint t = (wg % PARTS) * uint(WG) + gl_LocalInvocationID.x; // place among the tile's TILE_PX
    int tx = int(tile) % TILES_X, ty = int(tile) / TILES_X;
    ivec2 lp = tile_pixel(t);
    int px = tx * 16 + lp.x, py = ty * 16 + lp.y;
    bool inside = px < CAM_W && py < CAM_H;
    float fx = float(px) + 0.5, fy = float(py) + 0.5;
    uint start = range[2 * tile];
    vec3 bg = vec3(pf(ARG(0)), pf(ARG(1)), pf(ARG(2)));
    uint p = inside ? uint(py * CAM_W + px) : 0u;
    int nc = inside ? n_contrib[p] : 0;
    vec3 G = inside ? vec3(dl_drgb[3 * p], dl_drgb[3 * p + 1], dl_drgb[3 * p + 2]) : vec3(0.0);
    // this item's list positions: [c_lo, c_hi)
    int c_lo = int(chunk * CHUNK), c_hi = min(int(work[WORK_MAXC(tiles) + tile]), c_lo + int(CHUNK));
    float T = 1.0;
    vec3 B = vec3(0.0);
    if (nc > c_hi) { // blends past the chunk: the state at its end
        vec4 st = state[(chunk_first(start, tile) + uint(c_hi) / CHUNK) * TILE_PX + t];
        T = st.x;
        B = vec3(rgb[3 * p], rgb[3 * p + 1], rgb[3 * p + 2]) - st.yzw;
    } else if (inside) {
        T = final_T[p];
        B = T * bg;
    }
    int sgmax = subgroupMax(nc); // list positions from here on: no lane of this subgroup blends
    uint lanes = SG_LANES, lane = gl_SubgroupInvocationID;
    uint rects = SG_RECTS(t); // the 8x4 rectangles this subgroup's pixels sit in
    r9_owner own = r9_owner_of(lane, lanes);
    float d[9];
#ifndef DETERMINISTIC
    uint base = gl_SubgroupID * lanes;
    int top = min(c_hi, sgmax); // batches [top - lanes, top) down to c_lo; slot l: position top - lanes + l
    // this lane's splat of the next batch, loaded ahead when its mask reaches the subgroup (mnext),
    // and the mask of its position in the batch after (mlater), read a batch ahead so that the
    // load's branch does not wait for it
    int k = top - int(lanes) + int(lane);
    bool mnext = k >= c_lo && (PAIR_MASK(start + uint(k)) & rects) != 0u;
    bool mlater = k - int(lanes) >= c_lo && (PAIR_MASK(start + uint(k - int(lanes))) & rects) != 0u;
    uint n_id = mnext ? sorted_gid[start + uint(k)] : 0u;
    vec4 n_xyab = vec4(0.0), n_cor = vec4(0.0);
    float n_cb = 0.0;
    if (mnext) {
        n_xyab = vec4(mean2d[2 * n_id], mean2d[2 * n_id + 1], conic[3 * n_id], conic[3 * n_id + 1]);
        n_cor = vec4(conic[3 * n_id + 2], opac[n_id], color[3 * n_id], color[3 * n_id + 1]);
        n_cb = color[3 * n_id + 2];
    }
    for (; top > c_lo; top -= int(lanes)) {
        int lo = top - int(lanes); // positions below c_lo are not loaded
        bool hit = mnext;
        if (hit) {
            s_id[base + lane] = n_id;
            s_xyab[base + lane] = n_xyab;
            s_cor[base + lane] = n_cor;
            s_cb[base + lane] = n_cb;
        }
        uvec4 bits4 = subgroupBallot(hit);
        subgroupBarrier(); // the slice is written
        k = lo - int(lanes) + int(lane);
        mnext = mlater;
        mlater = k - int(lanes) >= c_lo && (PAIR_MASK(start + uint(k - int(lanes))) & rects) != 0u;
        if (mnext) {
            n_id = sorted_gid[start + uint(k)];
            n_xyab = vec4(mean2d[2 * n_id], mean2d[2 * n_id + 1], conic[3 * n_id], conic[3 * n_id + 1]);
            n_cor = vec4(conic[3 * n_id + 2], opac[n_id], color[3 * n_id], color[3 * n_id + 1]);
            n_cb = color[3 * n_id + 2];
        }
        for (int wd = int((lanes - 1u) / 32u); wd >= 0; wd--) { // back to front: the highest slot first
            uint bits = bits4[wd];
            while (bits != 0u) {
                int sl = findMSB(bits);
                bits ^= 1u << sl;
                int slot = wd * 32 + sl;
                uint s = base + uint(slot);
                bool blended = splat_grad(s, lo + slot < nc, fx, fy, G, T, B, d);
                if (!subgroupAny(blended)) continue;
                reduce9(d, lane, lanes);
                if (own.emit) {
                    uint o = s_id[s] * 9u + uint(own.base);
                    [[unroll]] for (int i = 0; i < 9; i++)
                        if (i < own.n) add_grad(o + uint(i), d[i]);
                }
            }
        }
        subgroupBarrier(); // every lane is past the slice before the next batch overwrites it
    }
#else
    uint sg = gl_SubgroupID, nsg = gl_NumSubgroups;
    // sub-batches of at most WG / 9 splats, so that one invocation per (splat, component) sums
    // the subgroups' totals, and the totals fit in s_part
    int sub = min(WG / 9, int(PART / (9u * nsg)));
    for (int b1 = c_hi; b1 > c_lo; b1 -= WG) { // batch of list positions [b0, b1)
        int b0 = max(b1 - WG, c_lo);
        barrier();
        uint k = uint(b0) + t;
        if (int(t) < b1 - b0) {
            stage_splat(t, sorted_gid[start + k]);
            s_mask[t] = PAIR_MASK(start + k);
        }
        barrier();
        for (int jb = b1 - 1; jb >= b0; jb -= sub) { // sub-batch jb, jb - 1, .., jb - cnt + 1
            int cnt = min(sub, jb - b0 + 1);
            for (int q = 0; q < cnt; q++) {
                int j = jb - q, lj = j - b0;
                bool hit = false;
                if (j < sgmax && (s_mask[lj] & rects) != 0u)
                    hit = subgroupAny(splat_grad(uint(lj), j < nc, fx, fy, G, T, B, d));
                if (hit) reduce9(d, gl_SubgroupInvocationID, lanes);
                if (own.emit) {
                    uint at = uint(q * 9 + own.base) * nsg + sg;
                    [[unroll]] for (int i = 0; i < 9; i++)
                        if (i < own.n) s_part[at + uint(i) * nsg] = hit ? d[i] : 0.0;
                }
            }
            barrier();
            if (t < uint(cnt * 9)) { // splat jb - t / 9, component t % 9: subgroups in order
                uint q = t / 9u, c = t % 9u, at = (q * 9u + c) * nsg;
                float s = s_part[at];
                for (uint i = 1; i < nsg; i++) s += s_part[at + i];
                put_slot(sorted_val[start + uint(jb) - q] * 9u + c, s);
            }
            barrier();
        }
    }
#endif
}
