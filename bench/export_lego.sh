#!/usr/bin/env bash
# Export benchmark: a trained lego run exported to .ply, .splat and .spz; file sizes, and the PSNR of
# the re-imported models' test renders against the original model's renders and the ground truth.
# Usage: bench/export_lego.sh RUN_DIR [DATA_DIR]   (RUN_DIR from e.g.
#   build/splat train --config configs/lego.toml --set trainer.max_steps=3000 --set backend.kind=cpu)
set -euo pipefail
cd "$(dirname "$0")/.."
run=$1
data=${2:-../shared/data/nerf_synthetic/lego}
make -s CUDA=0 splat lib
cc -O3 -fopenmp -D_GNU_SOURCE -Isrc -o build/export_roundtrip bench/export_roundtrip.c build/libsplat.a \
  -lpng -ljpeg -lcjson -lz -lm
out=$(mktemp -d /tmp/splat-export-XXXXXX)
for f in ply splat spz; do build/splat export --run "$run" --out "$out/lego.$f"; done
ls -l "$out"
build/export_roundtrip "$data" "$run/point_cloud.ply" "$out/lego.ply" "$out/lego.splat" "$out/lego.spz"
rm -rf "$out"
