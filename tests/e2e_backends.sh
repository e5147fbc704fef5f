#!/usr/bin/env bash
# End to end for every GPU backend compiled in whose device is present (the kinds come from
# `test_backend_ops --list`): a short training run on the 200x200 NeRF-synthetic lego with the CPU
# backend and with each GPU backend at the same steps must land within a stated test PSNR of each
# other (0.2 dB for cuda, 0.3 dB for any other kind), every backward variant a kind has included;
# deterministic mode twice must give byte-identical .ply files. Without a GPU backend with a device
# it says so and passes (the parity harness reports the same kinds as skipped).
. "$(dirname "$0")/lib_e2e.sh"
HARNESS=${SPLAT_HARNESS:-$(dirname "$BIN")/tests/test_backend_ops}
STEPS=${E2E_STEPS:-300}   # the same for every backend; E2E_INIT sets the initial Gaussian count
INIT=${E2E_INIT:-30000}
lego="$DATA/nerf_synthetic/lego"
[ -x "$HARNESS" ] || { echo "no parity harness at $HARNESS (make tests builds it)"; exit 1; }
[ -f "$lego/transforms_train.json" ] || { echo "no lego scene at $lego"; exit 1; }
tolerance() { case $1 in cuda) echo 0.2 ;; *) echo 0.3 ;; esac; }

kinds=(); variants=()
while read -r kind device type vars; do
  [ "$type" = gpu ] || continue
  if [ "$device" = device ]; then kinds+=("$kind"); variants+=("${vars:-}")
  else echo "$kind: no device: skipped"; fi
done < <("$HARNESS" --list)
[ ${#kinds[@]} -gt 0 ] || { echo "no GPU backend with a device: skipped"; finish; exit 0; }

common=(--config configs/lego.toml --set data.path="$lego" --set trainer.max_steps="$STEPS"
        --set init.count="$INIT" --set refine.start=100 --set output.save_renders=false --set data.eval_split=test)
# run NAME ARGS...: trains into $TMP/NAME; prints its test PSNR (empty on failure).
run() {
  local name=$1; shift
  if "$BIN" train "${common[@]}" --set output.run_dir="$TMP/$name" "$@" >"$TMP/$name.log" 2>&1; then
    sed -n 's/^test_psnr = //p' "$TMP/$name/result.toml"
  else
    bad "$name run"; tail -5 "$TMP/$name.log" >&2
  fi
}
within() { python3 -c "import sys; sys.exit(0 if abs(float('$1') - float('$2')) <= float('$3') else 1)" 2>/dev/null; }

t0=$(date +%s)
pc=$(run cpu --set backend.kind=cpu)
echo "lego $STEPS steps, $INIT initial Gaussians: cpu test PSNR $pc dB ($(( $(date +%s) - t0 )) s)"
for i in "${!kinds[@]}"; do
  k=${kinds[$i]}; tol=$(tolerance "$k")
  backwards=(pixel); [[ ",${variants[$i]}," == *,backward_splat,* ]] && backwards+=(splat)
  for bw in "${backwards[@]}"; do
    pg=$(run "$k-$bw" --set backend.kind="$k" --set backend.backward="$bw")
    echo "lego $STEPS steps: $k ($bw backward) test PSNR $pg dB"
    within "$pc" "$pg" "$tol" && ok "$k ($bw backward) within $tol dB of cpu" || bad "$k ($bw backward) PSNR $pg vs cpu $pc (tol $tol dB)"
  done
  if [[ ",${variants[$i]}," == *,deterministic,* ]]; then
    for bw in "${backwards[@]}"; do
      for r in 1 2; do run "$k-$bw-det$r" --set backend.kind="$k" --set backend.backward="$bw" --set backend.deterministic=true >/dev/null; done
      cmp -s "$TMP/$k-$bw-det1/point_cloud.ply" "$TMP/$k-$bw-det2/point_cloud.ply" \
        && ok "$k deterministic ($bw backward): identical .ply twice" || bad "$k deterministic runs differ ($bw backward)"
    done
  fi
done
finish
