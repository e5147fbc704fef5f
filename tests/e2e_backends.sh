#!/usr/bin/env bash
# End to end for every GPU backend compiled in whose device is present (the kinds come from
# `test_backend_ops --list`): a short training run on the 200x200 NeRF-synthetic lego with the CPU
# backend and with each GPU backend at the same steps must land within a stated test PSNR of each
# other (0.2 dB for cuda, 0.3 dB for any other kind), in every variant a kind has;
# deterministic mode twice must give byte-identical .ply files; where a kind has a compare-and-swap
# fallback for float atomics, forcing it (backend.cas_atomics) lands within 0.2 dB of native atomics. Without a GPU backend with a device
# it says so and passes (the parity harness reports the same kinds as skipped).
. "$(dirname "$0")/lib_e2e.sh"
HARNESS=${SPLAT_HARNESS:-$(dirname "$BIN")/tests/test_backend_ops}
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

# The same steps for every backend. A software device (Mesa's lavapipe, in CI) runs ~3x slower than
# the CPU backend, so with one present the runs are shorter and start from fewer Gaussians.
software=0
for k in "${kinds[@]}"; do
  "$BIN" check "$lego" --set backend.kind="$k" 2>/dev/null | grep -q 'software)' && { software=1; echo "$k: software device"; }
done
if [ $software = 1 ]; then STEPS=${E2E_STEPS:-120}; INIT=${E2E_INIT:-3000}; DSTEPS=${E2E_DET_STEPS:-50}
else STEPS=${E2E_STEPS:-300}; INIT=${E2E_INIT:-30000}; DSTEPS=${E2E_DET_STEPS:-$STEPS}; fi

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
  pg=$(run "$k" --set backend.kind="$k")
  echo "lego $STEPS steps: $k test PSNR $pg dB"
  within "$pc" "$pg" "$tol" && ok "$k within $tol dB of cpu" || bad "$k PSNR $pg vs cpu $pc (tol $tol dB)"
  if [[ ",${variants[$i]}," == *,cas_atomics,* ]]; then
    pa=$(run "$k-cas" --set backend.kind="$k" --set backend.cas_atomics=true)
    pn=$(sed -n 's/^test_psnr = //p' "$TMP/$k/result.toml")
    echo "lego $STEPS steps: $k with compare-and-swap atomics test PSNR $pa dB"
    within "$pn" "$pa" 0.2 && ok "$k compare-and-swap atomics within 0.2 dB of native" \
      || bad "$k compare-and-swap atomics PSNR $pa vs native $pn (tol 0.2 dB)"
  fi
  if [[ ",${variants[$i]}," == *,deterministic,* ]]; then
    # DSTEPS steps with refines inside them (every 20 steps from step 20)
    for r in 1 2; do run "$k-det$r" --set backend.kind="$k" --set backend.deterministic=true \
      --set trainer.max_steps="$DSTEPS" --set refine.start=20 --set refine.every=20 >/dev/null; done
    cmp -s "$TMP/$k-det1/point_cloud.ply" "$TMP/$k-det2/point_cloud.ply" \
      && ok "$k deterministic: identical .ply twice" || bad "$k deterministic runs differ"
  fi
done
finish
