#!/usr/bin/env bash
# GPU end to end (make gpu-test): 300 steps on lego 200x200 on both backends (CUDA with each
# backward variant), test PSNR within 0.2 dB; deterministic mode twice gives identical .ply files.
. "$(dirname "$0")/../lib_e2e.sh"
lego="$DATA/nerf_synthetic/lego"
common=(--config configs/lego.toml --set data.path="$lego" --set trainer.max_steps=300
        --set output.save_renders=false --set data.eval_split=test)
"$BIN" train "${common[@]}" --set backend.kind=cpu --set output.run_dir="$TMP/cpu" >"$TMP/cpu.log" 2>&1 || { bad "cpu run"; tail "$TMP/cpu.log"; }
"$BIN" train "${common[@]}" --set backend.kind=cuda --set output.run_dir="$TMP/cuda" >"$TMP/cuda.log" 2>&1 || { bad "cuda run"; tail "$TMP/cuda.log"; }
pc=$(sed -n 's/^test_psnr = //p' "$TMP/cpu/result.toml"); pg=$(sed -n 's/^test_psnr = //p' "$TMP/cuda/result.toml")
echo "300 steps: cpu test PSNR $pc, cuda test PSNR $pg"
python3 -c "import sys; sys.exit(0 if abs(float('$pc') - float('$pg')) <= 0.2 else 1)" && ok "PSNR within 0.2 dB" || bad "PSNR differs: $pc vs $pg"
"$BIN" train "${common[@]}" --set backend.kind=cuda --set backend.backward=splat --set output.run_dir="$TMP/splat" >"$TMP/splat.log" 2>&1 || { bad "cuda per-splat run"; tail "$TMP/splat.log"; }
ps=$(sed -n 's/^test_psnr = //p' "$TMP/splat/result.toml")
echo "300 steps: cuda per-splat backward test PSNR $ps"
python3 -c "import sys; sys.exit(0 if abs(float('$pc') - float('$ps')) <= 0.2 else 1)" && ok "per-splat PSNR within 0.2 dB" || bad "per-splat PSNR differs: $pc vs $ps"
for v in pixel splat; do
  for r in d1 d2; do
    "$BIN" train "${common[@]}" --set backend.kind=cuda --set backend.deterministic=true --set backend.backward=$v \
      --set output.run_dir="$TMP/$v-$r" >"$TMP/$v-$r.log" 2>&1 || { bad "deterministic run $v $r"; tail "$TMP/$v-$r.log"; }
  done
  cmp -s "$TMP/$v-d1/point_cloud.ply" "$TMP/$v-d2/point_cloud.ply" && ok "deterministic ($v backward): identical ply" || bad "deterministic runs differ ($v backward)"
done
finish
