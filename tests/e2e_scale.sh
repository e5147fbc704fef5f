#!/usr/bin/env bash
# End to end for batches and several devices/processes, without GPUs: a batch-2 run completes with
# views-seen schedules (steps and Adam steps logged), is deterministic, and `check` and `train`
# refuse bad multi-device settings and bad SPLAT_* variables with clear errors, writing nothing.
. "$(dirname "$0")/lib_e2e.sh"

"$BIN" synth --out "$TMP/scene" --size 24 --views 8,2,2 --samples 1 >/dev/null || bad synth
cfg="$TMP/run.toml"
cat >"$cfg" <<TOML
[data]
path = "$TMP/scene"
[init]
count = 500
[trainer]
max_steps = 61
batch = 2
log_every = 20
[refine]
strategy = "adc"
start = 10
stop = 50
every = 10
[backend]
kind = "cpu"
threads = 2
TOML
for r in a b; do
  "$BIN" train --config "$cfg" --set output.run_dir="$TMP/$r" >"$TMP/$r.log" 2>&1 && ok "batch 2 train ($r)" ||
    { bad "batch 2 train ($r)"; tail -10 "$TMP/$r.log"; }
done
grep -q "batch of 2 views per Adam step" "$TMP/a.log" && ok "batch logged" || bad "batch not logged"
grep -q "31 Adam steps" "$TMP/a.log" && ok "61 views in batches of 2: 31 Adam steps" || bad "Adam step count"
grep -q '^steps = 61' "$TMP/a/result.toml" && ok "result counts views seen" || bad "result steps"
n=$(grep -c "refine:" "$TMP/a/log.txt")
[ "$n" -eq 3 ] && ok "refines at views 20, 30, 40, batch or not" || bad "refine count $n"
cmp -s "$TMP/a/point_cloud.ply" "$TMP/b/point_cloud.ply" && ok "batch 2 is deterministic" || bad "batch 2 differs"

# Several devices need the cuda backend and NCCL; nothing is written when refused.
expect_fail "devices on cpu" "need backend.kind = \"cuda\"" \
  "$BIN" train --config "$cfg" --set backend.devices=2 --set output.run_dir="$TMP/c"
[ ! -e "$TMP/c" ] && ok "refused run wrote nothing" || bad "refused run wrote $TMP/c"
expect_fail "check: devices on cpu" "backend.devices" "$BIN" check --config "$cfg" --set backend.devices=2
expect_fail "check: bad devices" "listed twice" "$BIN" check --config "$cfg" --set backend.devices=1,1
expect_fail "vulkan batch" "the vulkan backend trains one view per Adam step" \
  "$BIN" train --config "$cfg" --set backend.kind=vulkan --set output.run_dir="$TMP/v"
# Bad process variables: the variable is named, nothing written.
expect_fail "rank without world" "SPLAT_RANK is set but SPLAT_WORLD_SIZE is not" \
  env SPLAT_RANK=0 "$BIN" train --config "$cfg" --set output.run_dir="$TMP/d"
expect_fail "garbage rank" "SPLAT_RANK = \"x\"" \
  env SPLAT_RANK=x SPLAT_WORLD_SIZE=2 "$BIN" train --config "$cfg" --set output.run_dir="$TMP/d"
expect_fail "rank out of range" "SPLAT_RANK = 2 is outside" \
  env SPLAT_RANK=2 SPLAT_WORLD_SIZE=2 SPLAT_DIST_FILE="$TMP/id" "$BIN" train --config "$cfg" --set output.run_dir="$TMP/d"
expect_fail "no id file" "--dist-file" \
  env SPLAT_RANK=0 SPLAT_WORLD_SIZE=2 "$BIN" train --config "$cfg" --set output.run_dir="$TMP/d"
expect_fail "two processes on cpu" "need backend.kind = \"cuda\"" \
  env SPLAT_RANK=0 SPLAT_WORLD_SIZE=2 "$BIN" train --config "$cfg" --dist-file "$TMP/id" --set output.run_dir="$TMP/d"
expect_fail "mpirun variables" "OMPI_COMM_WORLD_RANK = 3 is outside" \
  env OMPI_COMM_WORLD_RANK=3 OMPI_COMM_WORLD_SIZE=2 "$BIN" check --config "$cfg"
[ ! -e "$TMP/d" ] && ok "refused processes wrote nothing" || bad "refused processes wrote $TMP/d"
finish
