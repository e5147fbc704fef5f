// xfloat.glsl — extended-precision floating point from 32-bit integers, for the shaders that must
// reproduce the host's double-precision arithmetic without doubles (no shaderFloat64, none on Apple
// GPUs): MCMC's decisions (mcmc_rule.glsl). A value is (-1)^s * m * 2^(e - 63), m a 64-bit mantissa
// as uvec2(low, high) with its top bit set (m == 0: zero), e any int (no overflow or subnormal
// range). Operations:
//   - xf_add, xf_mul, xf_div return the exact result with every bit below the 64th folded into the
//     lowest one ("sticky"), so rounding it with xf_round to 53 bits (a double) or 24 (a float) gives
//     the IEEE round-to-nearest-even result exactly when the operands are doubles (53-bit
//     mantissas: their lowest 11 bits are zero, so an inexact difference is never on a midpoint);
//   - xf_exp is good to a few units of 2^-62 relative, xf_log to a few units of 2^-62 absolute
//     (Taylor and atanh series in 64-bit fixed point, ln 2 in two parts): rounded to 53 bits they
//     are the correctly rounded double except within that distance of a midpoint, where glibc's
//     exp and log (under 0.52 ulp) need not be either.
// Only 32-bit integer operations (umulExtended, uaddCarry, usubBorrow, findMSB): no capability
// beyond Shader.

struct xf {
    uvec2 m; // x: low word, y: high word
    int e;
    uint s; // sign: 0 positive, 1 negative
};

// ---- 64-bit unsigned helpers ----

uvec2 u64_shl(uvec2 a, uint k) { // 0 <= k < 64
    if (k == 0u) return a;
    if (k >= 32u) return uvec2(0u, a.x << (k - 32u));
    return uvec2(a.x << k, (a.y << k) | (a.x >> (32u - k)));
}

uvec2 u64_shr(uvec2 a, uint k) { // 0 <= k < 64
    if (k == 0u) return a;
    if (k >= 32u) return uvec2(a.y >> (k - 32u), 0u);
    return uvec2((a.x >> k) | (a.y << (32u - k)), a.y >> k);
}

// a >> k with every bit shifted out ORed into bit 0 (any k >= 0)
uvec2 u64_shr_jam(uvec2 a, uint k) {
    if (k == 0u) return a;
    if (k >= 64u) return uvec2(any(notEqual(a, uvec2(0u))) ? 1u : 0u, 0u);
    uvec2 r = u64_shr(a, k);
    if (any(notEqual(u64_shl(r, k), a))) r.x |= 1u;
    return r;
}

uvec2 u64_add(uvec2 a, uvec2 b, out uint carry) {
    uint c0, c1, c2;
    uint lo = uaddCarry(a.x, b.x, c0);
    uint hi = uaddCarry(a.y, b.y, c1);
    hi = uaddCarry(hi, c0, c2);
    carry = c1 | c2;
    return uvec2(lo, hi);
}

uvec2 u64_sub(uvec2 a, uvec2 b) { // a - b mod 2^64
    uint b0, b1;
    uint lo = usubBorrow(a.x, b.x, b0);
    uint hi = usubBorrow(a.y, b.y, b1);
    return uvec2(lo, hi - b0);
}

bool u64_ge(uvec2 a, uvec2 b) { return a.y > b.y || (a.y == b.y && a.x >= b.x); }

uint u64_clz(uvec2 a) {
    if (a.y != 0u) return uint(31 - findMSB(a.y));
    if (a.x != 0u) return uint(63 - findMSB(a.x));
    return 64u;
}

// ---- construction ----

const xf XF_ZERO = xf(uvec2(0u), 0, 0u);
const xf XF_ONE = xf(uvec2(0u, 0x80000000u), 0, 0u);

bool xf_is_zero(xf a) { return a.m.y == 0u && a.m.x == 0u; }

xf xf_norm(uvec2 m, int e, uint s) {
    uint z = u64_clz(m);
    if (z == 64u) return XF_ZERO;
    return xf(u64_shl(m, z), e - int(z), s);
}

xf xf_from_uint(uint v) { return xf_norm(uvec2(v, 0u), 63, 0u); }

// a uint64 (low, high) exactly
xf xf_from_u64(uvec2 v) { return xf_norm(v, 63, 0u); }

// An IEEE float exactly (finite; subnormals included).
xf xf_from_float(float f) {
    uint b = floatBitsToUint(f), ex = (b >> 23) & 0xffu, mant = b & 0x7fffffu;
    uint s = b >> 31;
    if (ex == 0u) return xf_norm(uvec2(0u, mant), -126 - 23 + 31, s); // subnormal: mant * 2^-149
    return xf(uvec2(0u, (mant | 0x800000u) << 8), int(ex) - 127, s);
}

// An IEEE double given as its two 32-bit words (low, high) exactly (finite; subnormals included).
xf xf_from_double(uvec2 w) {
    uint ex = (w.y >> 20) & 0x7ffu, s = w.y >> 31;
    uvec2 mant = uvec2(w.x, w.y & 0xfffffu);
    if (ex == 0u) return xf_norm(mant, -1022 - 52 + 63, s);
    mant.y |= 0x100000u;
    return xf(u64_shl(mant, 11u), int(ex) - 1023, s);
}

xf xf_neg(xf a) { a.s ^= 1u; return a; }

xf xf_ldexp(xf a, int k) { a.e += k; return a; }

// ---- arithmetic ----

// |a| >= |b|
bool xf_abs_ge(xf a, xf b) {
    if (xf_is_zero(b)) return true;
    if (xf_is_zero(a)) return false;
    return a.e > b.e || (a.e == b.e && u64_ge(a.m, b.m));
}

xf xf_add(xf a, xf b) {
    if (xf_is_zero(a)) return b;
    if (xf_is_zero(b)) return a;
    if (!xf_abs_ge(a, b)) { xf t = a; a = b; b = t; }
    uvec2 bm = u64_shr_jam(b.m, uint(a.e - b.e));
    if (a.s == b.s) {
        uint carry;
        uvec2 sum = u64_add(a.m, bm, carry);
        if (carry == 0u) return xf(sum, a.e, a.s);
        uvec2 r = u64_shr(sum, 1u);
        r.y |= 0x80000000u;
        r.x |= sum.x & 1u;
        return xf(r, a.e + 1, a.s);
    }
    return xf_norm(u64_sub(a.m, bm), a.e, a.s);
}

xf xf_sub(xf a, xf b) { return xf_add(a, xf_neg(b)); }

xf xf_mul(xf a, xf b) {
    if (xf_is_zero(a) || xf_is_zero(b)) return XF_ZERO;
    // 128-bit product of the mantissas, words p0 (low) .. p3
    uint h00, l00, h01, l01, h10, l10, h11, l11;
    umulExtended(a.m.x, b.m.x, h00, l00);
    umulExtended(a.m.x, b.m.y, h01, l01);
    umulExtended(a.m.y, b.m.x, h10, l10);
    umulExtended(a.m.y, b.m.y, h11, l11);
    uint c1, c2, c3, c4, c5, c6;
    uint p1 = uaddCarry(h00, l01, c1);
    p1 = uaddCarry(p1, l10, c2);
    uint p2 = uaddCarry(h01, h10, c3);
    p2 = uaddCarry(p2, l11, c4);
    p2 = uaddCarry(p2, c1 + c2, c5);
    uint p3 = h11 + c3 + c4 + c5;
    uvec2 hi = uvec2(p2, p3);
    bool lost = l00 != 0u || p1 != 0u;
    int e = a.e + b.e + 1;
    if ((p3 & 0x80000000u) == 0u) { // product in [2^126, 2^127): one more bit from below
        hi = uvec2((p2 << 1) | (p1 >> 31), (p3 << 1) | (p2 >> 31));
        lost = l00 != 0u || (p1 << 1) != 0u;
        e -= 1;
    }
    if (lost) hi.x |= 1u;
    return xf(hi, e, a.s ^ b.s);
}

// a / b to `bits` quotient bits (at most 64) by restoring division, the remainder folded into the
// lowest bit: rounding the result to 53 bits is exact with 56, to 24 bits with 27.
xf xf_div_n(xf a, xf b, int bits) {
    if (xf_is_zero(a)) return XF_ZERO;
    uvec2 r = a.m, d = b.m, q = uvec2(0u);
    int e = a.e - b.e;
    uint c = 0u; // bit 64 of the running remainder
    if (!u64_ge(r, d)) { // quotient below 1: start one bit further
        c = r.y >> 31;
        r = u64_shl(r, 1u);
        e -= 1;
    }
    for (int i = 0; i < bits; i++) {
        uint bit = (c != 0u || u64_ge(r, d)) ? 1u : 0u;
        if (bit != 0u) r = u64_sub(r, d);
        q = uvec2(q.x << 1 | bit, q.y << 1 | q.x >> 31);
        c = r.y >> 31;
        r = u64_shl(r, 1u);
    }
    q = u64_shl(q, uint(64 - bits));
    if (c != 0u || r.x != 0u || r.y != 0u) q.x |= 1u;
    return xf(q, e, a.s ^ b.s);
}

xf xf_div(xf a, xf b) { return xf_div_n(a, b, 64); }

// a / d for 0 < d < 2^16: the 96-bit quotient a.m * 2^32 / d in six 16-bit digits, its top 64
// significant bits kept and the rest (and the remainder) folded into the lowest one.
xf xf_div_small(xf a, uint d) {
    if (xf_is_zero(a)) return XF_ZERO;
    uint w2 = 0u, w1 = 0u, w0 = 0u, rem = 0u;
    for (int i = 0; i < 6; i++) {
        uint digit = i == 0 ? a.m.y >> 16 : i == 1 ? a.m.y & 0xffffu : i == 2 ? a.m.x >> 16 : i == 3 ? a.m.x & 0xffffu : 0u;
        uint cur = (rem << 16) | digit, q = cur / d;
        rem = cur - q * d;
        w2 = (w2 << 16) | (w1 >> 16);
        w1 = (w1 << 16) | (w0 >> 16);
        w0 = (w0 << 16) | q;
    }
    // a.m >= 2^63 and d < 2^16: the quotient is at least 2^79, its top bit in w2
    uint z = uint(31 - findMSB(w2));
    uvec2 m = uvec2(w1, w2);
    uint t0 = w0;
    if (z != 0u) {
        m = uvec2((w1 << z) | (w0 >> (32u - z)), (w2 << z) | (w1 >> (32u - z)));
        t0 = w0 << z;
    }
    if (t0 != 0u || rem != 0u) m.x |= 1u;
    return xf(m, a.e - int(z), a.s);
}

xf xf_mul_uint(xf a, uint k) { return xf_mul(a, xf_from_uint(k)); }

// ---- rounding ----

// a rounded to `bits` significant bits (24: float, 53: double), to nearest, ties to even.
xf xf_round(xf a, uint bits) {
    if (xf_is_zero(a)) return a;
    uint sh = 64u - bits;                       // 11 .. 40
    uvec2 unit = u64_shl(uvec2(1u, 0u), sh);    // 2^sh
    uvec2 mask = u64_sub(unit, uvec2(1u, 0u));
    uvec2 low = uvec2(a.m.x & mask.x, a.m.y & mask.y);
    uvec2 half_ = u64_shr(unit, 1u);
    uvec2 t = uvec2(a.m.x & ~mask.x, a.m.y & ~mask.y);
    bool odd = ((sh >= 32u ? t.y >> (sh - 32u) : t.x >> sh) & 1u) != 0u;
    bool up = (low.y > half_.y || (low.y == half_.y && low.x > half_.x)) || (all(equal(low, half_)) && odd);
    if (!up) return xf(t, a.e, a.s);
    uint carry;
    uvec2 r = u64_add(t, unit, carry);
    if (carry != 0u) return xf(uvec2(0u, 0x80000000u), a.e + 1, a.s);
    return xf(r, a.e, a.s);
}

xf xf_dbl(xf a) { return xf_round(a, 53u); }

// A value already rounded to 24 bits as a float (its exponent in the normal range; below it: 0,
// above: infinity).
float xf_to_float(xf a) {
    if (xf_is_zero(a) || a.e < -126) return a.s != 0u ? -0.0 : 0.0;
    if (a.e > 127) return uintBitsToFloat((a.s << 31) | 0x7f800000u);
    uint mant = (a.m.y >> 8) & 0x7fffffu;
    return uintBitsToFloat((a.s << 31) | (uint(a.e + 127) << 23) | mant);
}

// a < b, a <= b (exact)
bool xf_lt(xf a, xf b) {
    bool za = xf_is_zero(a), zb = xf_is_zero(b);
    if (za && zb) return false;
    if (za) return b.s == 0u;
    if (zb) return a.s != 0u;
    if (a.s != b.s) return a.s != 0u;
    bool mag_lt = a.e < b.e || (a.e == b.e && !u64_ge(a.m, b.m));
    bool mag_eq = a.e == b.e && all(equal(a.m, b.m));
    return a.s == 0u ? mag_lt : !(mag_lt || mag_eq);
}

// ---- exp and log ----

// ln 2 in two parts: L1 (the top 40 bits, so that k * L1 is exact for |k| < 2^24) and the next 64.
xf xf_ln2_hi() { return xf(uvec2(0xd1000000u, 0xb17217f7u), -1, 0u); }
xf xf_ln2_lo() { return xf(uvec2(0xe3b39803u, 0xcf79abc9u), -41, 0u); }

// The series of exp and log run in signed fixed point: 64-bit two's complement integers (uvec2)
// counting units of 2^-62 (values under 2 in magnitude), with no normalization or alignment per
// operation; each operation is good to 2^-62 absolute, which is what their results need (exp's
// series sums to about 1; a logarithm's absolute error is what its uses see).

uvec2 fx_neg(uvec2 a) {
    uint c;
    return u64_add(uvec2(~a.x, ~a.y), uvec2(1u, 0u), c);
}

uvec2 fx_add(uvec2 a, uvec2 b) {
    uint c;
    return u64_add(a, b, c);
}

// a * b (signed), truncated toward zero
uvec2 fx_mul(uvec2 a, uvec2 b) {
    bool na = (a.y >> 31) != 0u, nb = (b.y >> 31) != 0u;
    if (na) a = fx_neg(a);
    if (nb) b = fx_neg(b);
    uint h00, l00, h01, l01, h10, l10, h11, l11;
    umulExtended(a.x, b.x, h00, l00);
    umulExtended(a.x, b.y, h01, l01);
    umulExtended(a.y, b.x, h10, l10);
    umulExtended(a.y, b.y, h11, l11);
    uint c1, c2, c3, c4, c5;
    uint p1 = uaddCarry(h00, l01, c1);
    p1 = uaddCarry(p1, l10, c2);
    uint p2 = uaddCarry(h01, h10, c3);
    p2 = uaddCarry(p2, l11, c4);
    p2 = uaddCarry(p2, c1 + c2, c5);
    uint p3 = h11 + c3 + c4 + c5;
    uvec2 r = uvec2((p1 >> 30) | (p2 << 2), (p2 >> 30) | (p3 << 2)); // the product >> 62
    return na != nb ? fx_neg(r) : r;
}

// An xf under 2 in magnitude as fixed point (truncated toward zero).
uvec2 fx_from_xf(xf a) {
    if (xf_is_zero(a) || a.e < -62) return uvec2(0u); // under one unit
    uvec2 v = u64_shr(a.m, uint(1 - a.e)); // e <= 0: a shift of 1 .. 63
    return a.s != 0u ? fx_neg(v) : v;
}

xf xf_from_fx(uvec2 v) {
    uint s = v.y >> 31;
    return xf_norm(s != 0u ? fx_neg(v) : v, 1, s);
}

// 1 / j! (j = 0 .. 16) and 1 / (2 k + 1) (k = 0 .. 14) in fixed point
const uvec2 FX_INV_FACT[17] = uvec2[17](
    uvec2(0x00000000u, 0x40000000u) /* 1/0! */,
    uvec2(0x00000000u, 0x40000000u) /* 1/1! */,
    uvec2(0x00000000u, 0x20000000u) /* 1/2! */,
    uvec2(0xaaaaaaabu, 0x0aaaaaaau) /* 1/3! */,
    uvec2(0xaaaaaaabu, 0x02aaaaaau) /* 1/4! */,
    uvec2(0x88888889u, 0x00888888u) /* 1/5! */,
    uvec2(0x16c16c17u, 0x0016c16cu) /* 1/6! */,
    uvec2(0x03403403u, 0x00034034u) /* 1/7! */,
    uvec2(0x80680680u, 0x00006806u) /* 1/8! */,
    uvec2(0xf1d2ab64u, 0x00000b8eu) /* 1/9! */,
    uvec2(0xe4fb778au, 0x00000127u) /* 1/10! */,
    uvec2(0xe64567f5u, 0x0000001au) /* 1/11! */,
    uvec2(0x3ddb1dffu, 0x00000002u) /* 1/12! */,
    uvec2(0x2c248c27u, 0x00000000u) /* 1/13! */,
    uvec2(0x03272e95u, 0x00000000u) /* 1/14! */,
    uvec2(0x0035cfe8u, 0x00000000u) /* 1/15! */,
    uvec2(0x00035cfeu, 0x00000000u) /* 1/16! */
);
const uvec2 FX_INV_ODD[15] = uvec2[15](
    uvec2(0x00000000u, 0x40000000u) /* 1/1 */,
    uvec2(0x55555555u, 0x15555555u) /* 1/3 */,
    uvec2(0xcccccccdu, 0x0cccccccu) /* 1/5 */,
    uvec2(0x24924925u, 0x09249249u) /* 1/7 */,
    uvec2(0x1c71c71cu, 0x071c71c7u) /* 1/9 */,
    uvec2(0x1745d174u, 0x05d1745du) /* 1/11 */,
    uvec2(0xec4ec4ecu, 0x04ec4ec4u) /* 1/13 */,
    uvec2(0x44444444u, 0x04444444u) /* 1/15 */,
    uvec2(0xc3c3c3c4u, 0x03c3c3c3u) /* 1/17 */,
    uvec2(0x9435e50du, 0x035e50d7u) /* 1/19 */,
    uvec2(0x0c30c30cu, 0x030c30c3u) /* 1/21 */,
    uvec2(0x21642c86u, 0x02c8590bu) /* 1/23 */,
    uvec2(0xf5c28f5cu, 0x028f5c28u) /* 1/25 */,
    uvec2(0xb425ed09u, 0x025ed097u) /* 1/27 */,
    uvec2(0x234f72c2u, 0x0234f72cu) /* 1/29 */
);

// exp(x), |x| < 2^10: x = k ln 2 + r with |r| <= ~0.35 (exact to 2^-100 or so: k L1 is exact),
// exp(r) by its Taylor series to degree 16 (the first term left out is under 2^-66) in Horner form.
xf xf_exp(xf x) {
    // k from a float estimate (exactness not needed: |r| stays under 0.5 for any k it gives)
    float est = ldexp(float(x.m.y >> 8), x.e - 23);
    int k = int(floor((x.s != 0u ? -est : est) * 1.4426950408889634 + 0.5));
    xf kx = k >= 0 ? xf_from_uint(uint(k)) : xf_neg(xf_from_uint(uint(-k)));
    xf r = xf_sub(x, xf_mul(kx, xf_ln2_hi()));
    uvec2 rf = fx_from_xf(xf_sub(r, xf_mul(kx, xf_ln2_lo())));
    uvec2 p = FX_INV_FACT[16];
    for (int j = 15; j >= 0; j--) p = fx_add(FX_INV_FACT[j], fx_mul(rf, p));
    return xf_ldexp(xf_from_fx(p), k);
}

// log(x), x > 0: x = m 2^e with m in [sqrt(1/2), sqrt(2)), log m = 2 atanh(s), s = (m - 1) / (m + 1),
// |s| <= 0.1716, by its series to s^29 (the first term left out is under 2^-81 of the sum).
xf xf_log(xf x) {
    int e = x.e;
    xf m = xf(x.m, 0, 0u); // in [1, 2)
    if (u64_ge(m.m, uvec2(0xf9de6484u, 0xb504f333u))) { m.e = -1; e += 1; } // m >= sqrt(2): halve
    uvec2 s = fx_from_xf(xf_div(xf_sub(m, XF_ONE), xf_add(m, XF_ONE)));
    uvec2 s2 = fx_mul(s, s), t = FX_INV_ODD[14];
    for (int j = 13; j >= 0; j--) t = fx_add(FX_INV_ODD[j], fx_mul(s2, t));
    xf lm = xf_ldexp(xf_from_fx(fx_mul(s, t)), 1);
    if (e == 0) return lm;
    xf ex = e > 0 ? xf_from_uint(uint(e)) : xf_neg(xf_from_uint(uint(-e)));
    return xf_add(xf_add(xf_mul(ex, xf_ln2_hi()), lm), xf_mul(ex, xf_ln2_lo()));
}
