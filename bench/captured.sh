#!/usr/bin/env bash
# Captured scenes (COLMAP / transforms.json folders such as beer and fox) at full resolution on a GPU
# machine: `splat train <scene>` with the defaults (every 8th image held out), renders off, one run
# per seed, a table row per run and a mean row per scene. EXTRA adds --set arguments to every run.
#   STAGE=/tmp/stage BIN=build-gpu/splat SCENES="beer fox" SEEDS="0 1" [EXTRA="--set ..."] [KIND=cuda] \
#     bench/captured.sh
# Expects $STAGE/<scene>/ (images/ plus sparse/ or transforms.json). Writes each run's log,
# result.toml and per-view scores (`splat eval --run`) into $RESULTS (default $OUT or
# /tmp/bench-out). Held-out views are few (9 for beer and fox): compare means over seeds, not
# single runs.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
STAGE=${STAGE:-/tmp/stage}
BIN=${BIN:-build-gpu/splat}
KIND=${KIND:-cuda}
RESULTS=${RESULTS:-${OUT:-/tmp/bench-out}}
mkdir -p "$RESULTS"
field() { awk -v k="$1" '$1 == k && $2 == "=" { print $3; exit }' "$2" 2>/dev/null | grep . || echo -; }
printf '| scene | seed | held-out PSNR | Gaussians | train s | whole command s |\n|---|---|---|---|---|---|\n'
for scene in ${SCENES:-beer fox}; do
  psnrs=""
  for seed in ${SEEDS:-0}; do
    run=/tmp/runs/captured-$scene-$seed-$KIND
    rm -rf "$run"
    start=$(date +%s.%N)
    # shellcheck disable=SC2086
    "$BIN" train "$STAGE/$scene" --set backend.kind="$KIND" --set output.save_renders=false \
      --set experiment.seed="$seed" --set output.run_dir="$run" ${EXTRA:-} >"$RESULTS/captured-$scene-$seed.log" 2>&1
    rc=$?
    end=$(date +%s.%N)
    wall=$(python3 -c "print(f'{$end - $start:.1f}')")
    r="$run/result.toml"
    cp "$r" "$RESULTS/captured-$scene-$seed-result.toml" 2>/dev/null
    if [ $rc -ne 0 ]; then
      printf '| %s | %s | exit %d (see %s) | | | %s |\n' "$scene" "$seed" $rc "$RESULTS/captured-$scene-$seed.log" "$wall"
      continue
    fi
    # per-view scores: a captured scene's mean over 9 views can hang on one view with a floater
    "$BIN" eval --run "$run" --backend "$KIND" >"$RESULTS/captured-$scene-$seed-views.txt" 2>&1
    psnrs="$psnrs $(field test_psnr "$r")"
    printf '| %s | %s | %s | %s | %s | %s |\n' "$scene" "$seed" "$(field test_psnr "$r")" \
      "$(field num_gaussians "$r")" "$(field train_seconds "$r")" "$wall"
  done
  if [ -n "$psnrs" ]; then
    python3 -c "import sys; x = [float(a) for a in sys.argv[2:]]; \
print(f'| {sys.argv[1]} | mean of {len(x)} | {sum(x) / len(x):.3f} (spread {max(x) - min(x):.3f}) | | | |')" "$scene" $psnrs
  fi
done
