#!/usr/bin/env bash
# bench/threads.sh — CPU backend speed on a busy machine: 200 demo steps (10k Gaussians at the
# start, 200x200 views) per OpenMP setting, first without and then with one extra busy process
# (`yes > /dev/null`) on the cores. Prints one line per run: setting, load, train seconds.
# Usage: bench/threads.sh [SETTING...]; a setting is comma-separated items, each "threads=N"
# (backend.threads; 0 = automatic) or an environment variable "VAR=VALUE".
set -u
cd "$(dirname "$0")/.."
BIN=${BIN:-build/splat}
OUT=${OUT:-/tmp/splat-threads}
STEPS=${STEPS:-200}
NP=$(nproc)
mkdir -p "$OUT"
[ -f "$OUT/scene/transforms_train.json" ] || "$BIN" synth --out "$OUT/scene" >/dev/null
settings=("$@")
[ ${#settings[@]} -gt 0 ] || settings=("threads=1" "threads=$NP" "threads=$NP,OMP_WAIT_POLICY=passive" "threads=0")
run() { # run SETTING LOADNAME
  local s=$1 envs=() set=() item items
  IFS=, read -ra items <<<"$s"
  for item in "${items[@]}"; do
    case $item in threads=*) set+=(--set "backend.$item") ;; *) envs+=("$item") ;; esac
  done
  rm -rf "$OUT/run"
  env "${envs[@]}" "$BIN" train "$OUT/scene" --config configs/demo.toml --set output.run_dir="$OUT/run" \
    --set trainer.max_steps="$STEPS" --set trainer.eval_every=0 --set output.save_renders=false "${set[@]}" \
    >/dev/null 2>&1 || { echo "$s $2 FAILED"; return; }
  printf '%-32s %-10s train %s s (load average %s)\n' "$s" "$2" \
    "$(sed -n 's/^train_seconds = //p' "$OUT/run/result.toml")" "$(cut -d' ' -f1 /proc/loadavg)"
}
for s in "${settings[@]}"; do run "$s" "no-extra"; done
yes >/dev/null & load=$!
trap 'kill $load 2>/dev/null' EXIT
for s in "${settings[@]}"; do run "$s" "+yes"; done
kill $load
