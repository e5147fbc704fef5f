#!/usr/bin/env bash
# A/B of two splat binaries on one scene, for kernel changes meant to give the same results faster:
# a deterministic run of each (backend.deterministic, STEPS steps) whose point_cloud.ply files are
# compared byte for byte, then a timed run of each (the default, non-deterministic kernels) with
# the profile rows side by side.
#   A=old/splat B=new/splat SCENE=/tmp/stage/lego [KIND=cuda] [STEPS=1000] [TIMED_STEPS=30000] \
#     [EXTRA="--set ..."] bench/ab_binaries.sh
# Uses configs/lego.toml (white background); writes logs into $RESULTS (default $OUT or /tmp/bench-out).
set -uo pipefail
cd "$(dirname "$0")/.."
: "${A:?A=first binary}" "${B:?B=second binary}" "${SCENE:?SCENE=dataset folder}"
KIND=${KIND:-cuda}
RESULTS=${RESULTS:-${OUT:-/tmp/bench-out}}
mkdir -p "$RESULTS"
run() { # binary tag deterministic steps
  "$1" train --config configs/lego.toml --set data.path="$SCENE" --set backend.kind="$KIND" \
    --set backend.profile=true --set backend.deterministic="$3" --set trainer.max_steps="$4" \
    --set output.save_renders=false --set output.run_dir="/tmp/runs/ab-$2" --force ${EXTRA:-} \
    >"$RESULTS/ab-$2.log" 2>&1
}
for side in A B; do
  bin=${!side}
  run "$bin" "$side-det" true "${STEPS:-1000}" || echo "$side: deterministic run failed (see $RESULTS/ab-$side-det.log)"
done
if cmp -s /tmp/runs/ab-A-det/point_cloud.ply /tmp/runs/ab-B-det/point_cloud.ply; then
  echo "deterministic ${STEPS:-1000}-step runs: identical point_cloud.ply"
else
  echo "deterministic ${STEPS:-1000}-step runs: point_cloud.ply DIFFERS"
fi
for side in A B; do
  s=$(date +%s.%N)
  run "${!side}" "$side" false "${TIMED_STEPS:-30000}" || echo "$side: timed run failed (see $RESULTS/ab-$side.log)"
  e=$(date +%s.%N)
  echo "$side: whole command $(python3 -c "print(f'{$e - $s:.1f}')") s, $(grep -E '^test:' "$RESULTS/ab-$side.log")"
done
# stage rows: name, A ms/step, B ms/step
join -j1 <(awk '$2 ~ /^[0-9.]+$/ && NF == 4 { print $1, $3 }' "$RESULTS/ab-A.log" | sort) \
  <(awk '$2 ~ /^[0-9.]+$/ && NF == 4 { print $1, $3 }' "$RESULTS/ab-B.log" | sort) |
  awk 'BEGIN { printf "%-18s %10s %10s\n", "stage", "A ms/step", "B ms/step" } { printf "%-18s %10s %10s\n", $1, $2, $3 }'
