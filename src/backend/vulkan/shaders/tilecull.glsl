// tilecull.glsl — the tile test of backend/tile_cull.h in GLSL (emit_pairs, and the 8x4 rectangles
// of warp_masks): every operation `precise` (no fused multiply-add), so the device decides as the
// host does. tau is computed in float here (no 64-bit floats on every device): it can differ from
// the host's by the error of log (a few units in the last place), which only matters for a tile
// whose nearest pixel centre lies that close to the ellipse's level.
struct Ell { float mx, my, A, B, C, tau, bx, by; };

Ell tile_ellipse(float mx, float my, float A, float B, float C, float sigma) {
    Ell e;
    e.mx = mx; e.my = my; e.A = A; e.B = B; e.C = C;
    precise float l = 2.0 * log(255.0 * sigma);
    precise float t = l * 1.001 + 1e-3;
    e.tau = t;
    e.bx = A > 0.0 ? B / A : 0.0;
    e.by = C > 0.0 ? B / C : 0.0;
    return e;
}

float tile_q(Ell e, float dx, float dy) {
    precise float r = ((e.A * dx) * dx + (2.0 * e.B) * (dx * dy)) + (e.C * dy) * dy;
    return r;
}

// Whether the Gaussian reaches a pixel centre of the w x h pixel rectangle whose top-left pixel is
// (px, py) (sp_rect_hit): the minimum of q over the square of pixel centres is <= tau.
bool rect_hit(Ell e, int px, int py, int w, int h) {
    precise float x0 = float(px) + 0.5, y0 = float(py) + 0.5;
    precise float xa = x0 - e.mx, xb = (x0 + float(w - 1)) - e.mx;
    precise float ya = y0 - e.my, yb = (y0 + float(h - 1)) - e.my;
    if (xa <= 0.0 && xb >= 0.0 && ya <= 0.0 && yb >= 0.0) return true;
    if (!(e.A > 0.0 && e.C > 0.0)) return true;
    precise float q = tile_q(e, clamp(-(e.bx * ya), xa, xb), ya);
    precise float t = tile_q(e, clamp(-(e.bx * yb), xa, xb), yb);
    q = t < q ? t : q;
    t = tile_q(e, xa, clamp(-(e.by * xa), ya, yb));
    q = t < q ? t : q;
    t = tile_q(e, xb, clamp(-(e.by * xb), ya, yb));
    q = t < q ? t : q;
    return q <= e.tau;
}

// Whether it reaches a pixel centre of 16x16 tile (tx, ty) (sp_tile_hit).
bool tile_hit(Ell e, int tx, int ty) { return rect_hit(e, tx * 16, ty * 16, 16, 16); }
