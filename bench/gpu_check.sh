#!/usr/bin/env bash
# On the GPU machine: the GPU test suite, then short CUDA runs on the small scenes with profiling.
# Expects a PORTABLE=1 build in build-gpu and the small scenes under $SPLAT_DATA.
set -uo pipefail
cd "$(dirname "$0")/.."
export SPLAT_BIN=${SPLAT_BIN:-$PWD/build-gpu/splat}
export SPLAT_DATA=${SPLAT_DATA:-$PWD/data/small}
RESULTS=${RESULTS:-${OUT:-/tmp/bench-out}}
mkdir -p "$RESULTS"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv,noheader
bash tests/run.sh build-gpu/tests gpu_test_ 2>&1 | tee "$RESULTS/gpu-test.log" | tail -40
for scene in ${SCENES:-lego}; do
  "$SPLAT_BIN" train --config configs/lego.toml --set data.path="$SPLAT_DATA/nerf_synthetic/$scene" \
    --set backend.kind=cuda --set backend.profile=true --set trainer.max_steps=${STEPS:-7000} \
    --set output.run_dir=/tmp/runs/small-$scene --force ${EXTRA:-} >"$RESULTS/small-$scene.log" 2>&1
  echo "== small $scene: exit $?"
  grep -vE '^step |% step' "$RESULTS/small-$scene.log" | tail -22
done
