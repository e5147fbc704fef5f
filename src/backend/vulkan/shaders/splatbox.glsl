// splatbox.glsl — half-extents (in pixels, one pixel of margin) of the box outside which a splat's
// power is below pmin for certain, as sp_m_splat_box in backend/ref/stage_math.h. Pixels outside
// it would skip the splat anyway; whole subgroups outside it skip the splat's arithmetic.
vec2 splat_half_box(float a, float b, float c, float pmin) {
    float det = a * c - b * b, tau = -2.0 * pmin;
    if (!(det > 0.0 && a > 0.0 && tau >= 0.0 && tau < 1e6)) return vec2(1e30);
    return vec2(sqrt(tau * c / det) + 2.0, sqrt(tau * a / det) + 2.0);
}
