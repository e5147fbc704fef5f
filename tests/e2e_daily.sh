#!/usr/bin/env bash
# End to end: the daily loop. `splat train DIR` and `splat check DIR` without a config file, the
# check verdict first and its estimate of the run (with the shorter CPU recipe for the 30k-step
# default), the short-run advice on the terminal, the progress line's labels, one "saved" line at
# the end, result.toml numbers as a person writes them, time to quality (trainer.target_psnr),
# render splits in their own folders, `version --help`, and the COLMAP downscale hint.
. "$(dirname "$0")/lib_e2e.sh"
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")
DATA=$(cd "$DATA" 2>/dev/null && pwd || echo "$DATA")

"$BIN" synth --out "$TMP/scene" --size 32 --views 12,3,3 --samples 1 >/dev/null || bad synth
small=(--set trainer.max_steps=40 --set init.count=500 --set refine.start=10 --set refine.every=10
       --set trainer.eval_every=10 --set trainer.sh_interval=10 --set backend.kind=cpu)

# check DIR: the verdict is the first line; the config only with --print-config.
out=$("$BIN" check "$TMP/scene" 2>&1); rc=$?
[ $rc -eq 0 ] && [ "$(head -1 <<<"$out")" = "OK: no problems found" ] && ok "check DIR: verdict first" || { bad "check DIR"; echo "$out"; }
grep -q "^\[trainer\]" <<<"$out" && bad "check prints the config unasked" || ok "check: config not printed"
"$BIN" check "$TMP/scene" --print-config | grep -q "^max_steps = 20000" && ok "check --print-config" || bad "--print-config"
out=$("$BIN" check "$TMP/scene" --set trainer.max_steps=0 --set backend.threads=100000 2>&1); rc=$?
[ $rc -eq 1 ] && [ "$(head -1 <<<"$out")" = "2 problems:" ] && ok "check: problem count first" || { bad "check count"; echo "$out"; }
grep -q "backend.threads: must be between 0 and 1024" <<<"$out" && ok "threads capped" || bad "threads cap message"
# check states how long the run would take; the 20k-step default on the CPU is hours, and a CPU user
# is told the shorter recipe (the first progress lines of train state the estimate too)
out=$("$BIN" check "$TMP/scene" --set backend.kind=cpu 2>&1)
grep -q "^# estimate" <<<"$out" && grep -qE "^  about ([0-9]+h[0-9]+m|[0-9]+m[0-9]+s) of training: 20000 steps on the cpu" <<<"$out" &&
  ok "check: an estimate of the run" || { bad "check estimate"; echo "$out" | tail -6; }
grep -q "trainer.schedule_steps=20000" <<<"$out" && ok "check: the shorter CPU recipe" || bad "check: no CPU recipe"
out=$("$BIN" check "$TMP/scene" --set backend.kind=cpu --set trainer.max_steps=300 2>&1)
grep -q "trainer.schedule_steps=20000" <<<"$out" && bad "the recipe offered to a short run" || ok "no recipe for a short run"

# train DIR with no config: the run is named after the folder.
(cd "$TMP" && "$BIN" train "$TMP/scene" "${small[@]}" --set trainer.target_psnr=5 >"$TMP/t.log" 2>&1) \
  && ok "train DIR" || { bad "train DIR"; tail -20 "$TMP/t.log"; }
run="$TMP/runs/scene"
[ -s "$run/point_cloud.ply" ] && ok "run folder runs/scene" || bad "no runs/scene"
grep -q "^path = \".*scene\"" "$run/config.toml" && ok "data.path from DIR" || bad "data.path"
grep -q "done in" "$TMP/t.log" && ok "final line says done in" || bad "no 'done in'"
grep -q "elapsed .*, ETA" "$TMP/t.log" && ok "progress labels elapsed and ETA" || { bad "progress labels"; cat "$TMP/t.log"; }
[ "$(grep -c "saved the model and a checkpoint" "$TMP/t.log")" = 1 ] && ok "one 'saved' line" || bad "saved lines"
grep -q "^note: densification runs to the last step of this 40-step run" "$TMP/t.log" &&
  ok "short-run advice on the terminal" || bad "no short-run advice on the terminal"
grep -q "reached the target PSNR 5.00 dB at step" "$TMP/t.log" && ok "time to quality logged" || bad "target message"
python3 - "$run/result.toml" <<'PY' && ok "result.toml numbers" || bad "result.toml numbers"
import sys, re
t = open(sys.argv[1]).read()
for key in ('loss_step', 'psnr_step', 'gaussians_step', 'ssim_step', 'gaussians'):
    arr = re.search(r'^%s = \[([^\]]*)\]' % key, t, re.M).group(1)
    assert all(re.fullmatch(r'-?\d+', v.strip()) for v in arr.split(',')), (key, arr)
def decimals(key):
    v = re.search(r'^%s = (\S+)$' % key, t, re.M).group(1)
    return len(v.split('.')[1]) if '.' in v else 0
assert decimals('test_psnr') <= 3 and decimals('test_ssim') <= 4 and decimals('train_seconds') <= 2
assert re.search(r'^steps = 40$', t, re.M)
secs = re.search(r'^psnr_seconds = \[([^\]]*)\]', t, re.M).group(1).split(',')
steps = re.search(r'^psnr_step = \[([^\]]*)\]', t, re.M).group(1).split(',')
assert len(secs) == len(steps) == 4, (secs, steps)
assert [float(s) for s in secs] == sorted(float(s) for s in secs)
assert re.search(r'^target_step = 10$', t, re.M), 'target_step'
PY
# --config still works, and a positional DIR overrides its data.path.
printf '[data]\npath = "%s/nowhere"\n[output]\nrun_dir = "%s/cfgrun"\n' "$TMP" "$TMP" >"$TMP/c.toml"
"$BIN" train "$TMP/scene" --config "$TMP/c.toml" "${small[@]}" --set trainer.max_steps=10 >/dev/null 2>&1 \
  && [ -s "$TMP/cfgrun/result.toml" ] && ok "DIR overrides the config's data.path" || bad "DIR with --config"
expect_fail "train without a dataset" "give a dataset folder" "$BIN" train

# render: each split in its own folder.
"$BIN" render --ply "$run/point_cloud.ply" --data "$TMP/scene" --split train --out "$TMP/r" >/dev/null &&
"$BIN" render --ply "$run/point_cloud.ply" --data "$TMP/scene" --split val --out "$TMP/r" >/dev/null || bad "render"
[ "$(ls "$TMP/r/train" | wc -l)" = 12 ] && [ "$(ls "$TMP/r/val" | wc -l)" = 3 ] && ok "render splits apart" || bad "render split folders"

"$BIN" version --help | grep -q "usage: splat version" && ok "version --help" || bad "version --help"

# COLMAP scene without images_2: the hint names the setting that exists.
if [ -d "$DATA/beer/sparse" ]; then
  expect_fail "beer downscale 2" "data.downscale=4 (images_4/)" "$BIN" check "$DATA/beer" --set data.downscale=2
fi
finish
