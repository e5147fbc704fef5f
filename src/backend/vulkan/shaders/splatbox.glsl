// splatbox.glsl — half-extents (in pixels, one pixel of margin) of the box outside which a splat's
// power is below pmin for certain, as sp_m_splat_box in backend/cpu/stage_math.h. Pixels outside
// it would skip the splat anyway; whole subgroups outside it skip the splat's arithmetic.
vec2 splat_half_box(float a, float b, float c, float pmin) {
    float det = a * c - b * b, tau = -2.0 * pmin;
    if (!(det > 0.0 && a > 0.0 && tau >= 0.0 && tau < 1e6)) return vec2(1e30);
    return vec2(sqrt(tau * c / det) + 2.0, sqrt(tau * a / det) + 2.0);
}

// A splat's Gaussian in base 2, as the raster shaders keep it in shared memory: the conic pre-scaled
// to q = (-a / 2, -b, -c / 2) log2(e), so that exp2(splat_power2(q, dx, dy)) is exp(power) with
// power = -(a dx² + c dy²) / 2 - b dx dy, one multiply less per pixel and splat. rasterize and
// backward_raster evaluate it the same way, so they make the same decisions.
const float SPLAT_LOG2E = 1.4426950408889634, SPLAT_LN2 = 0.6931471805599453;
vec3 splat_q(float a, float b, float c) { return vec3(-0.5 * a, -b, -0.5 * c) * SPLAT_LOG2E; }
float splat_power2(vec3 q, float dx, float dy) { return (q.x * dx) * dx + (q.z * dy) * dy + (q.y * dx) * dy; }
