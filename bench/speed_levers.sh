#!/usr/bin/env bash
# Speed levers of issue 10 on a GPU machine: full-resolution NeRF-synthetic scenes trained with
# configs/lego.toml and one switch set per variant (shorter runs with scaled schedules, budgets,
# the antialias filter, adc's levers), one table row per run. Same binary, same machine, one run at a time.
#   STAGE=/tmp/stage BIN=build-gpu/splat [SCENES="lego mic"] [VARIANTS="base s20k aa"] [KIND=cuda] \
#     bench/speed_levers.sh
# Expects $STAGE/<scene>/transforms_{train,val,test}.json and the images beside them. Writes each
# run's log and result.toml into $RESULTS (default $OUT or /tmp/bench-out); EXTRA adds --set
# arguments to every run; REPEATS=N runs each variant N times (seeds 0 .. N-1) with a mean row, SEEDS="1 2"
# runs the seeds named instead. Variants (name: switches):
#   base      defaults (30k steps, full resolution throughout; mcmc with its 280k budget on cuda)
#   adc       refine.strategy=adc (the densification by gradient that was the default before session 12)
#   s20k      trainer.max_steps=20000, trainer.schedule_steps=30000
#   s15k      trainer.max_steps=15000, trainer.schedule_steps=30000
#   s20kabs   trainer.max_steps=20000 alone (schedules in absolute steps: densify until 15000)
#   mcmc150k  refine.strategy=mcmc, refine.max_gaussians=150000 (budget; docs/math.md "MCMC")
#   mcmc300k  refine.strategy=mcmc, refine.max_gaussians=300000
#   mcmc500k  refine.strategy=mcmc, refine.max_gaussians=500000
#   mcmc300k25 mcmc300k with refine.mcmc_stop=25000 (the 3DGS-MCMC paper's schedule, now the default)
#   (the mcmc variants before session 12 ran with the then defaults: refine.stop=12500 bounded them,
#   adam.opacity_lr=0.025, refine.mcmc_opacity_reg=0.01, init.opacity=0.1)
#   mcmc150kreg0 mcmc150k without the scale regularizer (refine.mcmc_scale_reg=0): what it buys
#   aa        render.antialias=true (opacity-compensated filter: a model means the same at any resolution)
#   aa25      aa + trainer.max_steps=25000, trainer.schedule_steps=30000
#   mcmc300kaa25 mcmc300k + aa25;  mcmc500kaa25: mcmc500k + aa25
#   adc's levers (each adds refine.strategy=adc; the switches mean nothing to mcmc):
#   quality levers (one switch each, for a shorter default run to keep): bgrand data.background=random
#   (evaluated on white), grad12 refine.grad_threshold=0.00012, stop20k refine.stop=20000, decay03
#   refine.opacity_decay=0.03, ssim3 loss.ssim_weight=0.3, shrest2 adam.sh_rest_lr=0.00025, s25k
#   trainer.max_steps=25000 with schedules scaled from 30000
#   pruning by blend weight (train/prune.h): pw30 / pw50 / pw70 refine.prune_weight=0.3 / 0.5 / 0.7 at
#   refine.stop; pw30e5k 0.3 every 5000 steps and at stop; pw20e3k 0.2 every 3000; pw50g12 pw50 +
#   grad12; pw30e5kg12 pw30e5k + grad12; pw40e5kg12 0.4 every 5000 + grad12; pw20e3kg12 pw20e3k +
#   grad12; pw50e5kg10 0.5 every 5000 with refine.grad_threshold=0.0001
#   (the aau* variants of bench/RESULTS.md, 2026-12-01 session 6, needed trainer.antialias_until, measured
#   at be08de8 and removed after: it did not keep the filter's gain; the prog* variants of progressive
#   resolution, trainer.coarse_scale and trainer.coarse_until, were removed in issue 31 after costing
#   quality in every run there)
#   set:KEY=VALUE,KEY=VALUE,...  any switches, named in the table by themselves
# Compare aa with base (the filter alone).
# A lego run takes about 80 s on an H200: split VARIANTS over several commands where one command
# may run at most 10 minutes.
set -uo pipefail
cd "$(dirname "$0")/.."
STAGE=${STAGE:-/tmp/stage}
BIN=${BIN:-build-gpu/splat}
KIND=${KIND:-cuda}
RESULTS=${RESULTS:-${OUT:-/tmp/bench-out}}
mkdir -p "$RESULTS"

switches() {
  case "$1" in
    base) echo "" ;;
    adc) echo "--set refine.strategy=adc" ;;
    s20k) echo "--set trainer.max_steps=20000 --set trainer.schedule_steps=30000" ;;
    s15k) echo "--set trainer.max_steps=15000 --set trainer.schedule_steps=30000" ;;
    s20kabs) echo "--set trainer.max_steps=20000" ;;
    mcmc150k) echo "--set refine.strategy=mcmc --set refine.max_gaussians=150000" ;;
    mcmc300k) echo "--set refine.strategy=mcmc --set refine.max_gaussians=300000" ;;
    mcmc500k) echo "--set refine.strategy=mcmc --set refine.max_gaussians=500000" ;;
    mcmc300k25) echo "--set refine.strategy=mcmc --set refine.max_gaussians=300000 --set refine.mcmc_stop=25000" ;;
    mcmc150kreg0) echo "--set refine.strategy=mcmc --set refine.max_gaussians=150000 --set refine.mcmc_scale_reg=0" ;;
    aa) echo "--set render.antialias=true" ;;
    aa25) echo "--set render.antialias=true --set trainer.max_steps=25000 --set trainer.schedule_steps=30000" ;;
    mcmc300kaa25) echo "--set refine.strategy=mcmc --set refine.max_gaussians=300000 $(switches aa25)" ;;
    mcmc500kaa25) echo "--set refine.strategy=mcmc --set refine.max_gaussians=500000 $(switches aa25)" ;;
    bgrand) echo "--set data.background=random" ;;
    grad12) echo "--set refine.strategy=adc --set refine.grad_threshold=0.00012" ;;
    stop20k) echo "--set refine.strategy=adc --set refine.stop=20000" ;;
    decay03) echo "--set refine.strategy=adc --set refine.opacity_decay=0.03" ;;
    ssim3) echo "--set loss.ssim_weight=0.3" ;;
    shrest2) echo "--set adam.sh_rest_lr=0.00025" ;;
    s25k) echo "--set trainer.max_steps=25000 --set trainer.schedule_steps=30000" ;;
    pw30) echo "--set refine.strategy=adc --set refine.prune_weight=0.3" ;;
    pw50) echo "--set refine.strategy=adc --set refine.prune_weight=0.5" ;;
    pw70) echo "--set refine.strategy=adc --set refine.prune_weight=0.7" ;;
    pw30e5k) echo "--set refine.strategy=adc --set refine.prune_weight=0.3 --set refine.prune_weight_every=5000" ;;
    pw20e3k) echo "--set refine.strategy=adc --set refine.prune_weight=0.2 --set refine.prune_weight_every=3000" ;;
    pw50g12) echo "--set refine.strategy=adc --set refine.prune_weight=0.5 $(switches grad12)" ;;
    pw30e5kg12) echo "--set refine.strategy=adc $(switches pw30e5k) $(switches grad12)" ;;
    pw40e5kg12) echo "--set refine.strategy=adc --set refine.prune_weight=0.4 --set refine.prune_weight_every=5000 $(switches grad12)" ;;
    pw20e3kg12) echo "--set refine.strategy=adc $(switches pw20e3k) $(switches grad12)" ;;
    pw50e5kg10) echo "--set refine.strategy=adc --set refine.prune_weight=0.5 --set refine.prune_weight_every=5000 --set refine.grad_threshold=0.0001" ;;
    set:*) echo "$1" | cut -c5- | tr ',' '\n' | sed 's/^/--set /' | tr '\n' ' ' ;;
    *) echo "unknown variant $1" >&2; return 1 ;;
  esac
}

# value of a top-level key of result.toml ("-" when absent)
field() { awk -v k="$1" '$1 == k && $2 == "=" { print $3; exit }' "$2" 2>/dev/null | grep . || echo -; }

# REPEATS=N runs every variant N times with experiment.seed = 0 .. N-1 (float atomics make even one
# seed vary: mic moved 0.26 dB between two identical runs) and adds a mean row per variant.
REPEATS=${REPEATS:-1}
SEEDS=${SEEDS:-$(seq 0 $((REPEATS - 1)))}
nseeds=$(echo $SEEDS | wc -w)
printf '| scene | variant | seed | test PSNR | Gaussians | steps | train s | whole command s |\n'
printf '|---|---|---|---|---|---|---|---|\n'
for scene in ${SCENES:-lego}; do
  for v in ${VARIANTS:-base s20k s15k}; do
    sw=$(switches "$v") || exit 2
    psnrs=""
    for seed in $SEEDS; do
      tag=$(echo "$v" | tr -c "A-Za-z0-9\n" "_")$([ "$SEEDS" != 0 ] && echo "-s$seed")
      run=/tmp/runs/levers-$scene-$tag-$KIND
      rm -rf "$run"
      start=$(date +%s.%N)
      # shellcheck disable=SC2086
      "$BIN" train --config configs/lego.toml --set experiment.name=levers-$scene-$tag \
        --set data.path="$STAGE/$scene" --set backend.kind="$KIND" --set output.run_dir="$run" \
        --set output.save_renders=false --set experiment.seed=$seed $sw ${EXTRA:-} \
        >"$RESULTS/levers-$scene-$tag.log" 2>&1
      rc=$?
      end=$(date +%s.%N)
      wall=$(python3 -c "print(f'{$end - $start:.1f}')")
      r="$run/result.toml"
      cp "$r" "$RESULTS/levers-$scene-$tag-result.toml" 2>/dev/null
      if [ $rc -ne 0 ]; then
        printf '| %s | %s | %d | exit %d (see %s) | | | | %s |\n' "$scene" "$v" "$seed" $rc \
          "$RESULTS/levers-$scene-$tag.log" "$wall"
        continue
      fi
      psnrs="$psnrs $(field test_psnr "$r")"
      printf '| %s | %s | %d | %s | %s | %s | %s | %s |\n' "$scene" "$v" "$seed" "$(field test_psnr "$r")" \
        "$(field num_gaussians "$r")" "$(field steps "$r")" "$(field train_seconds "$r")" "$wall"
    done
    if [ "$nseeds" -gt 1 ] && [ -n "$psnrs" ]; then
      python3 -c "import sys; x = [float(a) for a in sys.argv[3:]]; m = sum(x) / len(x); \
print(f'| {sys.argv[1]} | {sys.argv[2]} | mean of {len(x)} | {m:.3f} (spread {max(x) - min(x):.3f}) | | | | |')" \
        "$scene" "$v" $psnrs
    fi
  done
done
