#!/usr/bin/env bash
# End to end, MCMC densification (refine.strategy = "mcmc") on the CPU: lego at 200x200 trains to
# a stated test PSNR, the Gaussian count grows to the budget and never passes it, dead Gaussians
# are relocated; several devices are refused with a config error naming the key, and the run
# folder stays untouched (refine.strategy = auto picks adc there). The vulkan backend runs MCMC too:
# e2e_backends.sh trains it at the defaults against the CPU. The 3000-step numbers are in
# bench/RESULTS.md.
. "$(dirname "$0")/lib_e2e.sh"
lego="$DATA/nerf_synthetic/lego"
[ -f "$lego/transforms_train.json" ] || { echo "no lego scene at $lego"; exit 1; }
MIN_PSNR=${MIN_PSNR:-25.0}
BUDGET=40000

expect_fail "several devices refuse mcmc" 'runs on one device' \
  "$BIN" train "$lego" --set refine.strategy=mcmc --set backend.devices=0,1 --set output.run_dir="$TMP/two"
[ -e "$TMP/two" ] && bad "a refused run wrote $TMP/two" || ok "a refused run writes nothing"

"$BIN" train --config configs/lego.toml --set data.path="$lego" --set backend.kind=cpu \
  --set trainer.max_steps=1000 --set trainer.sh_interval=300 --set init.count=30000 \
  --set refine.start=300 --set refine.strategy=mcmc --set refine.max_gaussians=$BUDGET \
  --set data.eval_split=test --set output.save_renders=false \
  --set output.run_dir="$TMP/mcmc" >"$TMP/mcmc.log" 2>&1 || { bad "mcmc run"; tail -20 "$TMP/mcmc.log"; }
r="$TMP/mcmc/result.toml"
psnr=$(sed -n 's/^test_psnr = //p' "$r")
secs=$(sed -n 's/^train_seconds = //p' "$r")
ng=$(sed -n 's/^num_gaussians = //p' "$r")
printf 'lego 1000 steps, mcmc (CPU): test PSNR %.2f dB, %s Gaussians in %.1f s\n' "$psnr" "$ng" "$secs"
python3 -c "import sys; sys.exit(0 if float('$psnr') >= $MIN_PSNR else 1)" && ok "mcmc test PSNR >= $MIN_PSNR" || bad "mcmc PSNR $psnr < $MIN_PSNR"
[ "$ng" = "$BUDGET" ] && ok "the count reached the budget $BUDGET" || bad "$ng Gaussians at the end, budget $BUDGET"
# every refine line: count never above the budget, and some dead Gaussians were relocated
awk -v b=$BUDGET '/refine \(mcmc\)/ { n++; if ($NF + 0 > b || $(NF-2) + 0 > b) over++; for (i = 1; i <= NF; i++) if ($i == "relocated,") rel += $(i-1) }
  END { exit !(n >= 7 && !over && rel > 0) }' <(grep -h 'refine (mcmc)' "$TMP/mcmc/log.txt" | sed 's/ Gaussians$//') \
  && ok "refine lines: under the budget, dead Gaussians relocated" || { bad "refine lines"; grep -h 'refine (mcmc)' "$TMP/mcmc/log.txt" | tail -5; }
finish
