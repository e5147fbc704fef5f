// grid.glsl — the size of an indirect dispatch written on the device: `groups` workgroups as
// (x, y, 1) at args[at..at+2], spread over y in rows of 32768 past the device's x limit `limit`
// (the host's vk_grid does the same; the shaders bound-check). Included after the shader declares
// its buffer `args`.
void write_grid(uint at, uint groups, uint limit) {
    bool spread = groups > limit;
    args[at] = spread ? 32768u : groups;
    args[at + 1u] = spread ? (groups + 32767u) / 32768u : 1u;
    args[at + 2u] = 1u;
}
