#!/usr/bin/env bash
# `make demo`: makes a small procedural scene, trains on it on the CPU, prints the final PSNR.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-build/splat}
rm -rf demo/run
if [ ! -f demo/scene/transforms_train.json ]; then
  "$BIN" synth --out demo/scene
fi
"$BIN" train --config configs/demo.toml
psnr=$(sed -n 's/^test_psnr = //p' demo/run/result.toml)
ssim=$(sed -n 's/^test_ssim = //p' demo/run/result.toml)
echo
printf 'demo finished: test PSNR %.2f dB, SSIM %.4f (run folder: demo/run)\n' "$psnr" "$ssim"
