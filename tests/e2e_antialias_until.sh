#!/usr/bin/env bash
# End to end: trainer.antialias_until (train with the antialias filter, finish as a standard
# model). Short CPU runs on lego at 100x100 (data.downscale=2 of the shared 200x200 scene): the
# run switches the filter off once, at the step the schedule says, and ends with a finite PSNR and
# a standard model (render.antialias = false in config.toml); with render.antialias = true the key
# changes nothing (no switch); Ctrl-C in the filtered phase warns that the saved model was trained
# with the filter, and the resumed run lands in the filtered phase and switches at its step.
. "$(dirname "$0")/lib_e2e.sh"
lego="$DATA/nerf_synthetic/lego"
[ -f "$lego/transforms_train.json" ] || { echo "no lego scene at $lego"; exit 1; }
common=(--config configs/lego.toml --set data.path="$lego" --set backend.kind=cpu --set data.downscale=2
  --set init.count=5000 --set trainer.sh_interval=100 --set refine.start=100 --set refine.stop=250
  --set data.eval_split=test --set output.save_renders=false)
switch="antialias filter off for the remaining steps (standard 3DGS model)"

"$BIN" train "${common[@]}" --set trainer.max_steps=300 --set trainer.antialias_until=0.5 \
  --set output.run_dir="$TMP/sw" >"$TMP/sw.log" 2>&1 && ok "train antialias_until=0.5" || { bad "train"; tail -5 "$TMP/sw.log"; }
[ "$(grep -c "$switch" "$TMP/sw/log.txt")" = 1 ] && grep -q "step 150: $switch" "$TMP/sw/log.txt" &&
  ok "one switch, at step 150 (0.5 of 300)" || { bad "no switch at step 150"; grep -i antialias "$TMP/sw/log.txt"; }
grep -q "^antialias_until = 0.5" "$TMP/sw/config.toml" && grep -q "^antialias = false" "$TMP/sw/config.toml" &&
  ok "config.toml: antialias_until = 0.5, antialias = false (a standard model)" || bad "config.toml"
psnr=$(sed -n 's/^test_psnr = //p' "$TMP/sw/result.toml")
echo "antialias_until=0.5, 300 steps: test PSNR $psnr dB"
python3 -c "import math, sys; v = float(sys.argv[1]); sys.exit(0 if math.isfinite(v) and v > 15 else 1)" "$psnr" &&
  ok "finite test PSNR ($psnr dB)" || bad "test PSNR '$psnr'"
# the final score is the standard renderer's: eval of the run (render.antialias = false) repeats it
"$BIN" eval --run "$TMP/sw" --split test >"$TMP/sw-eval.log" 2>&1 || bad "eval --run"
grep -q "PSNR $(printf '%.3f' "$psnr") dB" "$TMP/sw-eval.log" && ok "eval --run (standard renderer) gives the run's PSNR" ||
  { bad "eval --run differs from the run's PSNR $psnr"; tail -3 "$TMP/sw-eval.log"; }
"$BIN" export --run "$TMP/sw" --out "$TMP/sw.ply" >"$TMP/export.log" 2>&1 || bad "export"
grep -q "antialias" "$TMP/export.log" && bad "export of the switched run notes the filter" || ok "export: a standard model, no note"

# render.antialias = true: the filter stays on, no switch
"$BIN" train "${common[@]}" --set trainer.max_steps=300 --set trainer.antialias_until=0.5 --set render.antialias=true \
  --set output.run_dir="$TMP/on" >"$TMP/on.log" 2>&1 && ok "train render.antialias=true" || { bad "train on"; tail -5 "$TMP/on.log"; }
grep -q "$switch" "$TMP/on/log.txt" && bad "render.antialias=true logged a switch" || ok "render.antialias=true: no switch"
grep -q "changes nothing" "$TMP/on/log.txt" && ok "the log says the key changes nothing" || bad "no note on the key"

# Ctrl-C in the filtered phase (steps 1-50000 of 100000), then a resume that lands in it
"$BIN" train "${common[@]}" --set trainer.max_steps=100000 --set trainer.antialias_until=0.5 \
  --set output.run_dir="$TMP/int" >"$TMP/int.log" 2>&1 &
pid=$!
for i in $(seq 1 100); do grep -q "initialized" "$TMP/int/log.txt" 2>/dev/null && break; sleep 0.1; done
sleep 1.5
kill -INT $pid
wait $pid; rc=$?
[ $rc -eq 130 ] && ok "Ctrl-C exit status 130" || { bad "Ctrl-C exit status $rc"; tail -5 "$TMP/int.log"; }
grep -q "in the filtered phase of trainer.antialias_until" "$TMP/int/log.txt" &&
  ok "interrupt in the filtered phase warns" || { bad "no warning on interrupt"; tail -5 "$TMP/int.log"; }
step=$(sed -n 's/^steps = //p' "$TMP/int/result.toml")
# resumed to 2 * step + 40 steps: the filtered phase now ends at step + 20
"$BIN" train --resume "$TMP/int" --set trainer.max_steps=$((2 * step + 40)) >"$TMP/res.log" 2>&1 &&
  grep -q 'status = "complete"' "$TMP/int/result.toml" && ok "resumed run completed" || { bad resume; tail -5 "$TMP/res.log"; }
[ "$(grep -c "$switch" "$TMP/int/log.txt")" = 1 ] && grep -q "step $((step + 20)): $switch" "$TMP/int/log.txt" &&
  ok "the resumed run switched at step $((step + 20))" || { bad "resume: no switch at step $((step + 20))"; grep -i antialias "$TMP/int/log.txt"; }
finish
