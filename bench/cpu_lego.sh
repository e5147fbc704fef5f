#!/usr/bin/env bash
# CPU benchmark: lego and mic at 200x200 (../shared/data), 7000 steps, white background, all cores.
# Usage: bench/cpu_lego.sh [STEPS]   Results: runs/bench-cpu-{lego,mic}/result.toml
set -euo pipefail
cd "$(dirname "$0")/.."
steps=${1:-7000}
make -s splat
for scene in lego mic; do
  /usr/bin/time -v build/splat train --config configs/lego.toml \
    --set experiment.name=bench-cpu-$scene --set data.path=../shared/data/nerf_synthetic/$scene \
    --set trainer.max_steps=$steps --set backend.kind=cpu --set backend.profile=true --force \
    2> >(tee runs-bench-cpu-$scene.log >&2)
  grep -E '^(test_psnr|test_ssim|val_psnr|num_gaussians|steps|train_seconds|total_seconds|steps_per_second) ' \
    runs/bench-cpu-$scene/result.toml
done
