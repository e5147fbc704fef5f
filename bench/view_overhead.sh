#!/usr/bin/env bash
# Viewer overhead: the same training run three ways, alternated ROUNDS times: without the viewer,
# with `--view` and no page open, and with `--view` and a client fetching frames of a test camera
# at up to 30 per second (what an open page at 30 fps costs the server). Prints each run's wall
# time, CPU time and the trainer's mean steps/s, then the medians.
# Usage: bench/view_overhead.sh CONFIG.toml [ROUNDS] [--set ...]   (any training config; on the
#   GPU host e.g. configs/lego.toml --set backend.kind=cuda)
set -euo pipefail
cd "$(dirname "$0")/.."
cfg=$1; rounds=${2:-3}; shift; [ $# -gt 0 ] && shift
BIN=${SPLAT_BIN:-build/splat}
out=$(mktemp -d /tmp/splat-viewbench-XXXXXX)
trap 'rm -rf "$out"' EXIT
client() { # URL: frames of test camera 0 at up to 30/s until the server goes away
  python3 - "$1" <<'PY'
import sys, time, urllib.request
url = sys.argv[1] + "api/render?split=test&i=0&q=95"
n = 0
while True:
    t = time.time()
    try:
        urllib.request.urlopen(url, timeout=30).read()
        n += 1
    except Exception:
        if n: break
    if n == 1:
        t0 = time.time()
    time.sleep(max(0.0, 1 / 30 - (time.time() - t)))
print("client: %d frames, %.1f frames/s" % (n, (n - 1) / max(1e-9, time.time() - t0)) if n > 1 else "client: no frames")
PY
}
for k in $(seq "$rounds"); do
  for mode in none view page; do
    extra=(); [ $mode != none ] && extra=(--view 0)
    log="$out/$mode.$k.log"
    start=$(date +%s.%N)
    if [ -x /usr/bin/time ]; then
      /usr/bin/time -f "%e %U %S" -o "$out/time" "$BIN" train --config "$cfg" "$@" --set output.run_dir="$out/run" \
        --force "${extra[@]}" >"$log" 2>"$log.err" &
    else # no GNU time (a GPU host's image): wall time only
      "$BIN" train --config "$cfg" "$@" --set output.run_dir="$out/run" --force "${extra[@]}" >"$log" 2>"$log.err" &
    fi
    pid=$!
    if [ $mode = page ]; then
      for _ in $(seq 100); do url=$(sed -n 's/^viewer: //p' "$log"); [ -n "$url" ] && break; sleep 0.1; done
      client "$url" &
    fi
    wait $pid
    sps=$(grep -o '[0-9.]* steps/s' "$log.err" | tail -1 | cut -d' ' -f1)
    train=$(awk '$1 == "train_seconds" { print $3 }' "$out/run/result.toml" 2>/dev/null)
    if [ -s "$out/time" ]; then
      read -r wall user sys <"$out/time"
      cpu="$(awk -v u="$user" -v s="$sys" 'BEGIN { print u + s }')s"
    else
      wall=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') cpu=-
    fi
    rm -f "$out/time"
    echo "$mode $k wall ${wall}s cpu $cpu train ${train}s $sps steps/s"
    echo "$mode $sps" >>"$out/all"
    wait
  done
done
for mode in none view page; do
  med=$(awk -v m=$mode '$1 == m {print $2}' "$out/all" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
  echo "median $mode: $med steps/s"
done
