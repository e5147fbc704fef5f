#!/usr/bin/env bash
# The step at millions of Gaussians: trains lego with refine.max_gaussians = N (3M by default) up to
# WARM steps (MCMC grows the model to N on the way), keeps that checkpoint, then resumes it for
# STEPS more steps with profiling on, once per binary of BINS, each from its own copy of the same
# checkpoint; prints each binary's per-stage ms/step, busy ms/step and busy share of the wall.
#   STAGE=/tmp/stage BINS="build-gpu/splat /tmp/other/splat" bench/many.sh
#   STAGE=../shared/data/nerf_synthetic N=120000 WARM=200 STEPS=30 KIND=cpu BINS=build/splat bench/many.sh
# Variables: STAGE (holds lego/), BINS (first one trains the checkpoint; default build-gpu/splat),
# N (default 3000000), WARM (default 8000), STEPS (default 1000), KIND (default cuda), EXTRA (more
# --set arguments for every command), WORK (runs, default /tmp/splat-many), RESULTS (logs; default
# $OUT or WORK/results), REUSE (1: resume from the checkpoint an earlier call left in WORK/warm,
# when it holds one, instead of training it again: a second call of a sitting, other binaries).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
STAGE=${STAGE:-/tmp/stage}
BINS=${BINS:-build-gpu/splat}
N=${N:-3000000}
WARM=${WARM:-8000}
STEPS=${STEPS:-1000}
KIND=${KIND:-cuda}
WORK=${WORK:-/tmp/splat-many}
RESULTS=${RESULTS:-${OUT:-$WORK/results}}
mkdir -p "$WORK" "$RESULTS"
read -ra bins <<<"$BINS"
base=$WORK/warm
if [ "${REUSE:-0}" = 1 ] && [ -f "$base/checkpoint.bin" ]; then
  echo "warm-up: reusing $base"
else
rm -rf "$base"
# shellcheck disable=SC2086
"${bins[0]}" train --config configs/lego.toml --set data.path="$STAGE/lego" --set backend.kind="$KIND" \
  --set refine.max_gaussians="$N" --set trainer.max_steps="$WARM" --set trainer.checkpoint_every="$WARM" \
  --set output.save_renders=false --set output.run_dir="$base" ${EXTRA:-} >"$RESULTS/warm.log" 2>&1 || {
  echo "many.sh: the warm-up run failed ($RESULTS/warm.log)" >&2
  tail -5 "$RESULTS/warm.log" >&2
  exit 1
}
echo "warm-up: $WARM steps to $N Gaussians with ${bins[0]} ($RESULTS/warm.log)"
fi
k=0
for bin in "${bins[@]}"; do
  k=$((k + 1))
  run=$WORK/resume-$k
  rm -rf "$run"
  cp -r "$base" "$run"
  log=$RESULTS/resume-$k.log
  # shellcheck disable=SC2086
  "$bin" train --resume "$run" --set trainer.max_steps=$((WARM + STEPS)) --set backend.profile=true \
    --set output.save_renders=false ${EXTRA:-} >"$log" 2>&1
  rc=$?
  echo "== $bin: exit $rc, steps $WARM-$((WARM + STEPS)) ($log)"
  # the profile table: stage rows, then the busy line
  awk '/^stage +total ms/ { on = 1; next }
       on && /^busy \(sum/ { printf "  %-20s %s\n", "busy", $6; on = 0; next }
       on && NF >= 3 { printf "  %-20s %s\n", $1, $3 }' "$log"
  grep -E '^busy [0-9.]+ ms of' "$log" | sed 's/^/  /'
done
