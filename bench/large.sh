#!/usr/bin/env bash
# A capture at scale, anyone can run it: `splat synth --scene capture` writes a large outdoor scene
# (VIEWS views of SIZE, distorted JPEGs, every 8th held out), then splat trains it twice on the
# same backend: images in memory, and streamed from disk (data.cache_mb = CACHE_MB, the device
# cache at its default; MODES="... stream-part" adds a streamed run whose device cache holds only
# DEVICE_MB MiB, default 2048, of the images). Prints a row per run: whole-command seconds, training seconds, held-out
# PSNR, Gaussians, peak host memory (the process's high-water mark) and peak device memory.
#   bench/large.sh                     # 1000 views of 1600x1200, 30k steps, cuda
#   VIEWS=200 SIZE=800x600 STEPS=3000 KIND=cpu bench/large.sh
# Variables: BIN (default build/splat), WORK (where the scene and runs go, default /tmp/splat-large),
# VIEWS, SIZE, STEPS, KIND, CACHE_MB (default 1024), MODES (default "memory stream"), EXTRA (more
# --set arguments for every run), RESULTS (logs and result.toml copies; default $OUT or WORK/results).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
BIN=${BIN:-build/splat}
WORK=${WORK:-/tmp/splat-large}
VIEWS=${VIEWS:-1000}
SIZE=${SIZE:-1600x1200}
STEPS=${STEPS:-30000}
KIND=${KIND:-cuda}
CACHE_MB=${CACHE_MB:-1024}
RESULTS=${RESULTS:-${OUT:-$WORK/results}}
mkdir -p "$WORK" "$RESULTS"
scene=$WORK/capture-$VIEWS-$SIZE
if [ ! -f "$scene/transforms.json" ]; then
  "$BIN" synth --scene capture --out "$scene" --views "$VIEWS" --size "$SIZE" || exit 1
fi
echo "scene: $scene ($(du -sh "$scene" | cut -f1) of JPEGs)"
field() { awk -v k="$1" '$1 == k && $2 == "=" { print $3; exit }' "$2" 2>/dev/null | grep . || echo -; }
printf '| mode | whole s | train s | held-out PSNR | Gaussians | peak host MiB | peak device MiB |\n|---|---|---|---|---|---|---|\n'
for mode in ${MODES:-memory stream}; do
  run=$WORK/run-$mode
  rm -rf "$run"
  cache=0 devset=()
  [ "$mode" != memory ] && cache=$CACHE_MB
  [ "$mode" = stream-part ] && devset=(--set data.device_cache_mb="${DEVICE_MB:-2048}")
  start=$(date +%s.%N)
  # shellcheck disable=SC2086
  "$BIN" train "$scene" --set backend.kind="$KIND" --set backend.profile=true --set trainer.max_steps="$STEPS" \
    --set data.cache_mb="$cache" "${devset[@]}" --set output.save_renders=false --set output.run_dir="$run" ${EXTRA:-} \
    >"$RESULTS/large-$mode.log" 2>&1
  rc=$?
  end=$(date +%s.%N)
  res=$run/result.toml
  cp "$res" "$RESULTS/large-$mode-result.toml" 2>/dev/null
  dev=$(field peak_memory_bytes "$res")
  [ "$dev" != - ] && dev=$(awk -v b="$dev" 'BEGIN { printf "%.0f", b / 1048576 }')
  printf '| %s%s | %s | %s | %s | %s | %s | %s |\n' "$mode" "$([ $rc -ne 0 ] && echo " (exit $rc)")" \
    "$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')" "$(field train_seconds "$res")" "$(field test_psnr "$res")" \
    "$(field num_gaussians "$res")" "$(field peak_host_mib "$res")" "$dev"
  grep -E "max_gaussians auto|streaming the training|image cache" "$RESULTS/large-$mode.log" | sed 's/^/    /'
done
