// reduce9.glsl — subgroup sum of 9 floats per lane as a butterfly reduce-scatter, for any
// power-of-two subgroup size (needs GL_KHR_shader_subgroup_shuffle). At the xor steps S/2, S/4,
// S/8, S/16 a lane keeps the first or the second part of the values it is responsible for
// (9 -> 5 -> 3 -> 2 -> 1 slots, the second part zero-padded) and adds its partner's copy of that
// part; the remaining xor steps (S >= 32) sum the single slot in full. At 32 lanes that is 12
// shuffles instead of 9 full sums of 5. Afterwards lane l holds, in v[0 .. n - 1], the subgroup
// totals of values base .. base + n - 1 (r9_owner_of: n is 0 for lanes holding padding only; of
// the lanes holding the same totals, only one has emit set). Slots beyond n hold garbage.
// The loops over slots are unrolled in the SPIR-V ([[unroll]], common.glsl), so that v stays in
// registers (no indexed local memory).

struct r9_owner {
    int base, n;
    bool emit;
};

void r9_step(inout float v[9], uint lane, uint o, int c, int cin) {
    bool hi = (lane & o) != 0u;
    [[unroll]] for (int j = 0; j < c; j++) {
        float second = 0.0;
        if (j + c < cin) second = v[j + c];
        float send = hi ? v[j] : second;
        float keep = hi ? second : v[j];
        v[j] = keep + subgroupShuffleXor(send, o);
    }
}

// size: the subgroup's lanes holding invocations, lanes 0 .. size - 1 (a power of two: the
// subgroup size, or SG_LANES of masks.glsl); call with all of them active.
void reduce9(inout float v[9], uint lane, uint size) {
    uint o = size >> 1;
    if (o > 0u) r9_step(v, lane, o, 5, 9);
    o >>= 1;
    if (o > 0u) r9_step(v, lane, o, 3, 5);
    o >>= 1;
    if (o > 0u) r9_step(v, lane, o, 2, 3);
    o >>= 1;
    if (o > 0u) r9_step(v, lane, o, 1, 2);
    o >>= 1;
    for (; o > 0u; o >>= 1) v[0] += subgroupShuffleXor(v[0], o);
}

// Which totals lane holds after reduce9: the same slot bookkeeping without the values.
r9_owner r9_owner_of(uint lane, uint size) {
    r9_owner r;
    r.base = 0;
    r.n = 9;
    uint o = size >> 1;
    for (int s = 0; s < 4 && o > 0u; s++, o >>= 1) {
        int c = s == 0 ? 5 : 4 - s; // slots kept at step s: 5, 3, 2, 1
        if ((lane & o) != 0u) {
            r.base += c;
            r.n = max(r.n - c, 0);
        } else {
            r.n = min(r.n, c);
        }
    }
    uint dup = o > 0u ? 2u * o - 1u : 0u; // lanes differing in these bits hold the same totals
    r.emit = r.n > 0 && (lane & dup) == 0u;
    return r;
}
