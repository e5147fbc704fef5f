#!/usr/bin/env bash
# Full-resolution NeRF-synthetic benchmark on a GPU machine (800x800, 30k steps, default settings,
# white background, profiling on; KIND picks the backend, default cuda). Times the whole `splat train`
# command.
#   STAGE=/tmp/stage BIN=build-gpu/splat SCENES="lego mic" [KIND=vulkan] bench/full_res.sh
# Expects $STAGE/<scene>/transforms_{train,val,test}.json and the images beside them.
# Writes <scene>-<kind>.log and <scene>-<kind>-result.toml into $RESULTS (default $OUT or /tmp/bench-out).
set -uo pipefail
cd "$(dirname "$0")/.."
STAGE=${STAGE:-/tmp/stage}
BIN=${BIN:-build-gpu/splat}
RESULTS=${RESULTS:-${OUT:-/tmp/bench-out}}
mkdir -p "$RESULTS"
for scene in ${SCENES:-lego mic}; do
  run=/tmp/runs/full-$scene-${KIND:-cuda}
  rm -rf "$run"
  start=$(date +%s.%N)
  "$BIN" train --config configs/lego.toml --set experiment.name=full-$scene --set data.path="$STAGE/$scene" \
    --set backend.kind=${KIND:-cuda} --set backend.profile=true --set output.run_dir="$run" ${EXTRA:-} \
    >"$RESULTS/$scene-${KIND:-cuda}.log" 2>&1
  rc=$?
  end=$(date +%s.%N)
  wall=$(python3 -c "print(f'{$end - $start:.1f}')")
  echo "== $scene: exit $rc, whole command $wall s"
  grep -vE '^step |^\s*[0-9]+% step' "$RESULTS/$scene-${KIND:-cuda}.log" | tail -25
  cp "$run/result.toml" "$RESULTS/$scene-${KIND:-cuda}-result.toml" 2>/dev/null
  grep -E '^(test_psnr|test_ssim|val_psnr|val_ssim|num_gaussians|train_seconds|total_seconds|peak_memory_bytes) ' \
    "$run/result.toml"
done
