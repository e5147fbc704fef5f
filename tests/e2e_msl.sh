#!/usr/bin/env bash
# Metal readiness of the Vulkan shaders (issue #28). On Apple GPUs the Vulkan backend runs through
# MoltenVK, which translates each SPIR-V shader to the Metal Shading Language (MSL) with SPIRV-Cross
# when the pipeline is created. This script does that translation here, with Debian's spirv-cross,
# for every shader variant the build embeds (BUILD/shaders/NAME.spv, written beside NAME.spv.h), and
# fails when a variant declares a SPIR-V capability outside the documented list, does not translate,
# or its MSL holds a construct Apple GPUs lack. It compiles
# and runs no Metal: there is no Metal compiler on Linux (docs/vulkan.md says what this covers).
# Without spirv-cross (scripts/setup.sh installs it) or without the Vulkan backend in the build it
# prints SKIPPED and exits 77. E2E_MSL_OUT=DIR keeps the translated .metal files there.
. "$(dirname "$0")/lib_e2e.sh"
SPVC=${SPIRV_CROSS:-spirv-cross}
SHADERS=${SPLAT_SHADERS:-$(dirname "$BIN")/shaders}
OUT=${E2E_MSL_OUT:-$TMP}

# The MSL version: the lowest MoltenVK passes to SPIRV-Cross. MoltenVK translates for the newest MSL
# the OS has (its MVKDevice.mm: 2.4 below macOS 13 / iOS 16, then 3.0, 3.1, ...), and its oldest
# deployment target is macOS 12 / iOS 15, so 2.4 is the floor. The same MoltenVK reports
# shaderBufferFloat32AtomicAdd only from MSL 3.0, so below 3.0 the backend uses the compare-and-swap
# variant backward_raster_cas: 2.4 is the version that path targets. The subgroup operations the
# shaders use (vote, ballot, shuffle, arithmetic) need MSL 2.1 on macOS in SPIRV-Cross, so 2.4 is
# not what limits them.
MSL=${E2E_MSL_VERSION:-20400}
# Variants with a native float atomic add (OpAtomicFAddEXT). The backend creates these pipelines
# only on a device with shaderBufferFloat32AtomicAdd (vk_ctx.c), which MoltenVK reports from MSL
# 3.0, where Metal has atomic<float>; they are translated for 3.0. Every other variant must do
# without float atomics, so a float atomic appearing anywhere else fails the check below.
FLOAT_ATOMIC_VARIANTS=" backward_raster "
MSL_FLOAT_ATOMICS=30000
# Variants in double precision (capability Float64): the backend makes these pipelines only on a
# device with shaderFloat64 (vk_ctx.c), which MoltenVK never reports (Metal has no double type);
# there the evaluation scores on the host instead. They are not translated (their MSL would hold
# doubles, which no Metal compiler takes); only their capabilities are checked, Float64 allowed.
FLOAT64_VARIANTS=" score "
# What MoltenVK passes besides the version for a compute pipeline (MVKPipeline.mm): a fixed
# subgroup size, its largest (32 on Apple GPUs) since our pipelines do not allow a varying one;
# the macOS platform (Apple-silicon Macs included: the platform is the OS, not the GPU); and, by
# default (MVK_CONFIG_USE_METAL_ARGUMENT_BUFFERS), descriptor sets as Metal argument buffers.
# Each variant is translated both ways: plain buffer bindings and argument buffers.
# Not translated for iOS (--msl-ios): splat is built for Linux and macOS only, and spirv-cross's
# iOS platform is the OS, with rules of its own (simd-group functions only when asked for), that
# no splat build meets.
COMMON=(--msl --msl-fixed-subgroup-size 32)
MODES=("buffers:" "argument buffers:--msl-argument-buffers")

command -v "$SPVC" >/dev/null || { echo "SKIPPED: no $SPVC (Debian package spirv-cross; scripts/setup.sh installs it)"; exit 77; }
headers=("$SHADERS"/*.spv.h)
[ -f "${headers[0]}" ] || { echo "SKIPPED: no shaders in $SHADERS (a build without the Vulkan backend)"; exit 77; }
mkdir -p "$OUT"

version_text() { echo "$(( $1 / 10000 )).$(( $1 / 100 % 100 ))"; }

# The SPIR-V capabilities a module declares (OpCapability operands, one per line): after the
# 5-word header each instruction's first word holds its word count (high 16 bits) and opcode (17).
spv_capabilities() {
  od -An -v -tu4 "$1" | awk '{ for (i = 1; i <= NF; i++) w[n++] = $i }
    END { for (i = 5; i < n; i += len) { len = int(w[i] / 65536); if (w[i] % 65536 == 17) print w[i + 1]; if (len < 1) break } }'
}
# The capabilities the shaders may declare, as docs/vulkan.md lists them: Shader (1) and the
# subgroup groups basic, vote, arithmetic, ballot and shuffle (61-65); AtomicFloat32AddEXT (6033)
# in the float-atomic variants only. Anything else (Int64 11, Float64 10, Int64Atomics 12,
# VulkanMemoryModel 5345, 16-bit types, quad or clustered subgroup operations, ...) fails, to be
# weighed against what MoltenVK offers before it is added here.
CAPS_ALLOWED=" 1 61 62 63 64 65 "

# check_msl NAME FILE FLOAT_ATOMICS_ALLOWED: greps the translated MSL for what Apple GPUs lack.
check_msl() {
  local name=$1 f=$2 float_ok=$3 hits
  # 64-bit atomics (atomic_long / atomic_ulong): Apple GPUs have none but 64-bit min/max on the
  # newest families, and the shaders promise 32-bit atomics only (DESIGN.md section 2).
  hits=$(grep -nE '\batomic_u?long\b' "$f") && { bad "$name: 64-bit atomics in the MSL"; head -3 <<<"$hits"; }
  # Float atomics (atomic_float): MSL 3.0 and newer only. The compare-and-swap and deterministic
  # variants exist so that a device without them runs the backward pass.
  if [ "$float_ok" = 0 ]; then
    hits=$(grep -nE '\batomic_float\b' "$f") && { bad "$name: float atomics (atomic_float, MSL 3.0+) in the MSL"; head -3 <<<"$hits"; }
  fi
  # Double precision: Metal has no double type at all. 64-bit integers (long, ulong) exist in MSL
  # but the shaders promise none (no shaderInt64 needed), so either one in the MSL is a regression.
  hits=$(grep -nE '\b(double|u?long)[234]?\b' "$f" | grep -vE 'atomic_u?long') &&
    { bad "$name: 64-bit types (double, long or ulong) in the MSL"; head -3 <<<"$hits"; }
  # GLSL names left in the MSL: spirv-cross writes the GLSL function (atomicAdd, subgroupAdd, ...)
  # when it has no MSL form for an instruction and still exits 0; Metal knows no such function.
  # Debian bookworm's spirv-cross (SDK 1.3.239) does this for the float atomic add of the native
  # variant (MSL float atomics came in SPIRV-Cross of SDK 1.3.243): there it is noted, not failed.
  hits=$(grep -nE '\b(atomic|subgroup)[A-Z][A-Za-z]*\(' "$f")
  if [ -n "$hits" ] && [ "$float_ok" = 1 ] && ! grep -vqE '\batomicAdd\(' <<<"$hits"; then
    old_spvc=1
  elif [ -n "$hits" ]; then
    bad "$name: GLSL functions left untranslated in the MSL"; head -3 <<<"$hits"
  fi
}

n=0; n64=0
for h in "${headers[@]}"; do
  name=$(basename "$h" .spv.h)
  spv=${h%.h}
  [ -f "$spv" ] || { bad "$name: no $spv beside $h (make all or make tests writes it)"; continue; }
  # The SPIR-V checked is the SPIR-V embedded: the .spv's words equal the header's array.
  if ! cmp -s <(grep -oE '0x[0-9a-fA-F]+' "$h" | tr 'A-F' 'a-f') <(od -An -v -tx4 "$spv" | tr -s ' ' '\n' | grep . | sed 's/^/0x/'); then
    bad "$name: $spv differs from the words in $h (rebuild: make)"; continue
  fi
  n=$((n + 1))
  version=$MSL; float_ok=0; allowed=$CAPS_ALLOWED
  [[ "$FLOAT_ATOMIC_VARIANTS" == *" $name "* ]] && { version=$MSL_FLOAT_ATOMICS; float_ok=1; allowed+="6033 "; }
  float64=0
  [[ "$FLOAT64_VARIANTS" == *" $name "* ]] && { float64=1; n64=$((n64 + 1)); allowed+="10 "; }
  failed_before=$fails; old_spvc=0
  for cap in $(spv_capabilities "$spv"); do
    [[ "$allowed" == *" $cap "* ]] || bad "$name: SPIR-V capability $cap, not among those checked for Metal (allowed:$allowed)"
  done
  if [ $float64 = 1 ]; then
    [ $fails -eq $failed_before ] &&
      ok "$name: not translated (double precision: made only where the device has shaderFloat64, never under MoltenVK); capabilities as listed"
    continue
  fi
  for mode in "${MODES[@]}"; do
    label=${mode%%:*}; flags=${mode#*:}
    metal="$OUT/$name${flags:+.argbuf}.metal"
    # shellcheck disable=SC2086 # flags is one option or none
    if ! msg=$("$SPVC" "${COMMON[@]}" --msl-version "$version" $flags "$spv" --output "$metal" 2>&1); then
      bad "$name (MSL $(version_text "$version"), $label): spirv-cross failed:"; echo "$msg" | head -5
      continue
    fi
    check_msl "$name (MSL $(version_text "$version"), $label)" "$metal" "$float_ok"
  done
  [ $fails -eq $failed_before ] || continue
  if [ $old_spvc = 1 ]; then
    ok "$name: translates to MSL $(version_text "$version") (buffers and argument buffers), no construct Apple GPUs lack; its float atomic add is left as GLSL's atomicAdd by this spirv-cross (too old to translate it), so that add is not checked"
  else
    ok "$name: translates to MSL $(version_text "$version") (buffers and argument buffers), no construct Apple GPUs lack"
  fi
done
[ $n -gt 0 ] || bad "no shader variant checked"
echo "$n shader variants checked with $SPVC ($n64 in double precision: capabilities only, not translated)"

# The checks themselves: planted shaders that break a rule each (a float atomic add in the
# compare-and-swap variant, a 64-bit atomic, a double) must fail both the capability check and
# the translation or MSL checks, naming the variant. Needs glslc, which any build with the Vulkan
# backend has; skipped in the planted run itself.
GLSLC=${GLSLC:-glslc}
if [ -z "${E2E_MSL_PLANTED:-}" ] && command -v "$GLSLC" >/dev/null; then
  p=$TMP/planted; mkdir -p "$p"
  pre='#version 450
layout(local_size_x = 64) in;
#define I gl_GlobalInvocationID.x'
  printf '%s\n' "$pre" '#extension GL_EXT_shader_atomic_float : require' \
    'layout(std430, binding = 0) buffer B { float v[]; };' 'void main() { atomicAdd(v[I & 3u], 1.0); }' >"$p/backward_raster_cas.comp"
  printf '%s\n' "$pre" '#extension GL_EXT_shader_atomic_int64 : require' \
    '#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require' \
    'layout(std430, binding = 0) buffer B { uint64_t v[]; };' 'void main() { atomicAdd(v[I & 3u], uint64_t(1)); }' >"$p/atomic64.comp"
  printf '%s\n' "$pre" 'layout(std430, binding = 0) buffer B { float v[]; };' \
    'void main() { double x = double(v[I]); v[I] = float(x * x + 1.0lf); }' >"$p/double.comp"
  for c in "$p"/*.comp; do
    if ! "$GLSLC" --target-env=vulkan1.1 -O -o "${c%.comp}.spv" "$c" ||
       ! "$GLSLC" --target-env=vulkan1.1 -O -mfmt=c -o "${c%.comp}.spv.h" "$c"; then
      bad "planted $(basename "$c"): glslc failed"
    fi
  done
  out=$(E2E_MSL_PLANTED=1 SPLAT_SHADERS="$p" E2E_MSL_OUT="$p/out" bash "$0" 2>&1)
  for name in backward_raster_cas atomic64 double; do
    if grep -q "^FAIL: $name: SPIR-V capability" <<<"$out" && grep -q "^FAIL: $name (MSL" <<<"$out"; then
      ok "planted $name: found in the SPIR-V and in its translation"
    else bad "planted $name: not found"; echo "$out" | tail -8; fi
  done
fi
finish
