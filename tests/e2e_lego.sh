#!/usr/bin/env bash
# End to end on real data: a short CPU training run on NeRF-synthetic lego (200x200, white
# background) must reach a stated test PSNR. The 7000-step numbers are in bench/RESULTS.md.
. "$(dirname "$0")/lib_e2e.sh"
lego="$DATA/nerf_synthetic/lego"
[ -f "$lego/transforms_train.json" ] || { echo "no lego scene at $lego"; exit 1; }
MIN_PSNR=${MIN_PSNR:-26.0}
"$BIN" train --config configs/lego.toml --set data.path="$lego" --set backend.kind=cpu \
  --set trainer.max_steps=1500 --set trainer.sh_interval=500 --set init.count=30000 \
  --set refine.start=300 --set data.eval_split=test --set output.save_renders=false \
  --set output.run_dir="$TMP/lego" >"$TMP/lego.log" 2>&1 || { bad "lego run"; tail -20 "$TMP/lego.log"; }
psnr=$(sed -n 's/^test_psnr = //p' "$TMP/lego/result.toml")
secs=$(sed -n 's/^train_seconds = //p' "$TMP/lego/result.toml")
printf 'lego 1500 steps (CPU): test PSNR %.2f dB in %.1f s\n' "$psnr" "$secs"
python3 -c "import sys; sys.exit(0 if float('$psnr') >= $MIN_PSNR else 1)" && ok "lego test PSNR >= $MIN_PSNR" || bad "lego PSNR $psnr < $MIN_PSNR"
finish
