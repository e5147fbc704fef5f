#!/usr/bin/env bash
# Trains a list of (scene, seed, variant) runs one after another on the device machine and prints a
# table row per run: the quickest way to A/B config switches on the full-resolution scenes.
#
#   STAGE=/tmp/stage BIN=/tmp/bin/splat OUT=... bench/batch_runs.sh LIST
#
# LIST has one run per line: `scene seed label [--set key=value ...]` (# starts a comment).
# lego and mic train with configs/lego.toml scoring the test split; any other scene (fox, beer)
# trains with the defaults on $STAGE/<scene> and also prints `splat eval --run`'s per-view scores.
# Every run adds backend.kind=cuda, output.save_renders=false, experiment.seed and a run folder
# under /tmp/runs (a later `--set data.eval_split=both` in a line also scores val). Rows: | scene |
# label | seed | rc | test PSNR | val PSNR | Gaussians | training s | whole s | sets |, appended to
# $OUT/rows.txt too; a run with trainer.target_psnr adds its target_step and target_seconds. bench/stage.sh gets the scenes and the binary there.
STAGE=${STAGE:-/tmp/stage}
BIN=${BIN:-/tmp/bin/splat}
OUT=${OUT:-/tmp/bench-out}
mkdir -p "$OUT" /tmp/runs
field() { awk -v k="$1" '$1 == k && $2 == "=" { print $3; exit }' "$2" 2>/dev/null | grep . || echo -; }
while read -r scene seed label rest; do
  case "$scene" in "" | \#*) continue ;; esac
  run=/tmp/runs/$scene-$label-$seed
  rm -rf "$run"
  case $scene in
    lego | mic) args=(--config configs/lego.toml --set data.path="$STAGE/$scene" --set data.eval_split=test) ;;
    *) args=("$STAGE/$scene") ;;
  esac
  t0=$(date +%s.%N)
  # shellcheck disable=SC2086 # $rest holds the variant's --set words
  "$BIN" train "${args[@]}" --set backend.kind=cuda --set output.save_renders=false --set experiment.seed="$seed" \
    --set output.run_dir="$run" $rest >"/tmp/runs/log-$scene-$label-$seed.txt" 2>&1
  rc=$?
  wall=$(python3 -c "print(round($(date +%s.%N) - $t0, 1))")
  r=$run/result.toml
  echo "| $scene | $label | $seed | rc=$rc | $(field test_psnr "$r") | $(field val_psnr "$r") | $(field num_gaussians "$r") | $(field train_seconds "$r") | $wall | $rest" |
    tee -a "$OUT/rows.txt"
  [ "$(field target_psnr "$r")" != - ] &&
    echo "   target $(field target_psnr "$r") dB: step $(field target_step "$r"), $(field target_seconds "$r") s" | tee -a "$OUT/rows.txt"
  case $scene in
    lego | mic) ;;
    *) echo "   views: $("$BIN" eval --run "$run" 2>/dev/null | tr -s ' \n' ' ' | tail -c 400)" | tee -a "$OUT/rows.txt" ;;
  esac
  [ $rc -ne 0 ] && tail -3 "/tmp/runs/log-$scene-$label-$seed.txt"
done <"${1:?usage: bench/batch_runs.sh LIST}"
exit 0
