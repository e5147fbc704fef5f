#!/usr/bin/env bash
# End to end: no failed command changes a run folder. Every failing `train` (bad --set, bad
# data.path, conflicting or corrupt resume, a second run into the same folder, an interrupt
# before training starts, out of memory) must leave every file byte-identical (checksums of the
# whole tree before and after). Also: --force replaces a run without leaving stale files, the run
# folder works from any working directory, failures say whether a checkpoint was kept, Ctrl-C
# during the final evaluation keeps the save (resuming evaluates it), and the
# clocks of result.toml count every session after a resume (an old checkpoint: said unknown).
. "$(dirname "$0")/lib_e2e.sh"
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")
LEGO=$(cd "$DATA/nerf_synthetic/lego" 2>/dev/null && pwd)

"$BIN" synth --out "$TMP/scene" --size 32 --views 12,3,3 --samples 2 >/dev/null || bad synth
# data.path relative to the working directory the run starts in ($TMP)
cat >"$TMP/run.toml" <<TOML
[data]
path = "scene"
[init]
count = 2000
[output]
run_dir = "a"
[trainer]
max_steps = 100
sh_interval = 50
checkpoint_every = 50
[refine]
strategy = "adc"
start = 30
stop = 90
every = 30
[backend]
kind = "cpu"
threads = 2
TOML
(cd "$TMP" && "$BIN" train --config run.toml >"$TMP/a.log" 2>&1) && ok "first run" || { bad "first run"; tail -20 "$TMP/a.log"; }
A=$TMP/a

# tree_sum DIR: one line per file (path, size, checksum) and per directory.
tree_sum() { (cd "$1" && find . -type d | sort && find . -type f -print0 | sort -z | xargs -0 sha256sum); }
# unchanged NAME DIR CMD...: CMD fails (1..125, not a crash) and DIR is byte-identical afterwards.
unchanged() {
  local name=$1 dir=$2; shift 2
  local before after out rc
  before=$(tree_sum "$dir")
  out=$("$@" 2>&1); rc=$?
  after=$(tree_sum "$dir")
  LAST_OUT=$out
  if [ $rc -eq 0 ] || [ $rc -ge 126 ]; then bad "$name: exit $rc, expected an error"; echo "$out" | tail -5; return 1; fi
  if [ "$before" != "$after" ]; then bad "$name: the run folder changed"; diff <(echo "$before") <(echo "$after") | head; return 1; fi
  ok "$name: exit $rc, run folder unchanged"
}
says() { grep -qF -- "$2" <<<"$LAST_OUT" && ok "$1" || { bad "$1: output lacks '$2'"; echo "$LAST_OUT" | tail -5; }; }

cd "$TMP" || exit 1
unchanged "train again into the same folder" "$A" "$BIN" train --config run.toml
says "refusal names the folder and the ways out" "a already holds a run"
says "refusal offers --force" "--force"
says "refusal offers --resume" "splat train --resume a"
# the library names settings and train options; the command line put its flags in their place
grep -qE "train options|--force|--resume" <<<"$LAST_OUT" && ! grep -q "train options" <<<"$LAST_OUT" &&
  ok "the CLI says flags, not train options" || bad "the refusal speaks of train options on the command line"
unchanged "--force with a bad data.path" "$A" "$BIN" train --config run.toml --force --set data.path="$TMP/nope"
says "bad data.path is named" "$TMP/nope"
unchanged "--force with a bad --set" "$A" "$BIN" train --config run.toml --force --set trainer.max_step=5
unchanged "--force with an out-of-range --set" "$A" "$BIN" train --config run.toml --force --set trainer.max_steps=-1
unchanged "resume with a conflicting sh_degree" "$A" "$BIN" train --resume a --set trainer.sh_degree=1
says "SH mismatch names both degrees" "SH degree 3 but the config asks for trainer.sh_degree = 1"
unchanged "resume beyond max_steps" "$A" "$BIN" train --resume a --set trainer.max_steps=60
says "step check names the step and max_steps" "at step 100, outside [0, trainer.max_steps = 60]"
unchanged "resume with a bad data.path" "$A" "$BIN" train --resume a --set trainer.max_steps=200 --set data.path="$TMP/nope"
unchanged "resume with an unknown key" "$A" "$BIN" train --resume a --set trainer.bogus=1
unchanged "resume and --force together" "$A" "$BIN" train --resume a --force
unchanged "resume of a folder that is not there" "$A" "$BIN" train --resume "$TMP/none"
# an absurd capacity: the out-of-memory test hook makes the backend's allocation fail at once
unchanged "resume out of memory" "$A" env SPLAT_TEST_ALLOC_LIMIT=100000 "$BIN" train --resume a --set trainer.max_steps=200
says "out of memory names what and how much" "out of memory:"

# a corrupt checkpoint (a copy of the run with its checkpoint truncated)
cp -r "$A" "$TMP/b"
head -c 300 "$A/checkpoint.bin" >"$TMP/b/checkpoint.bin"
unchanged "resume from a truncated checkpoint" "$TMP/b" "$BIN" train --resume b --set trainer.max_steps=200
says "corrupt checkpoint is named" "b/checkpoint.bin"
# a run folder that never saved a checkpoint
mkdir -p "$TMP/c" && cp "$A/config.toml" "$A/log.txt" "$TMP/c/"
unchanged "resume without a checkpoint" "$TMP/c" "$BIN" train --resume c
says "missing checkpoint is explained" "no checkpoint.bin to resume from"
says "missing checkpoint offers --force" "replacing it (--force)"

# Ctrl-C while the dataset loads (lego: ~300 images): nothing is written, exit status 130.
if [ -n "$LEGO" ]; then
  before=$(tree_sum "$A")
  # (--force: the old run goes only once every check passed, so the slow load comes first)
  (cd "$TMP" && exec "$BIN" train --config run.toml --force --set data.path="$LEGO") >"$TMP/int.log" 2>&1 &
  pid=$!
  for i in $(seq 1 200); do grep -q "run folder" "$TMP/int.log" 2>/dev/null && break; sleep 0.01; done
  kill -INT $pid
  wait $pid; rc=$?
  [ $rc -eq 130 ] && [ "$before" = "$(tree_sum "$A")" ] && grep -q "nothing was written" "$TMP/int.log" &&
    ok "interrupt before training: exit 130, run folder unchanged" ||
    { bad "interrupt before training: rc=$rc"; tail -5 "$TMP/int.log"; }
fi

# Ctrl-C during the final evaluation (400 test views): the evaluation stops, the model and a
# checkpoint of the last step are kept as "interrupted", exit 130; resuming evaluates it.
"$BIN" synth --out "$TMP/evs" --size 128 --views 4,0,400 --samples 1 >/dev/null || bad "synth for the evaluation"
"$BIN" train "$TMP/evs" --set output.run_dir="$TMP/ev" --set trainer.max_steps=20 --set init.count=2000 \
  --set backend.kind=cpu >"$TMP/ev.log" 2>&1 &
pid=$!
for i in $(seq 1 1000); do grep -q "done in" "$TMP/ev.log" 2>/dev/null && break; sleep 0.01; done
kill -INT $pid
wait $pid; rc=$?
[ $rc -eq 130 ] && grep -q 'status = "interrupted"' "$TMP/ev/result.toml" && ! grep -q "test_psnr" "$TMP/ev/result.toml" &&
  [ -s "$TMP/ev/checkpoint.bin" ] && [ -s "$TMP/ev/point_cloud.ply" ] && grep -q "during the final evaluation" "$TMP/ev.log" &&
  ok "interrupt during the final evaluation: exit 130, model and checkpoint kept" ||
  { bad "interrupt during the final evaluation: rc=$rc"; tail -5 "$TMP/ev.log"; }
"$BIN" train --resume "$TMP/ev" >"$TMP/ev2.log" 2>&1 && grep -q 'status = "complete"' "$TMP/ev/result.toml" &&
  grep -q "^test_psnr" "$TMP/ev/result.toml" && grep -q "^steps = 20$" "$TMP/ev/result.toml" &&
  ok "resuming it evaluates it" || { bad "resume after an interrupted evaluation"; tail -5 "$TMP/ev2.log"; }

# A test image cut after its header (splat check finds it; train reads only headers first): the
# cpu backend, which decodes the held-out views before training, fails before writing anything,
# naming the file; a GPU backend decodes them while it trains, and its final evaluation fails
# naming the file with the trained model and a checkpoint kept (status "running").
"$BIN" synth --out "$TMP/cut" --size 32 --views 12,0,3 --samples 2 >/dev/null || bad "synth for the cut image"
gpus=() # the GPU kinds with a device (`check` decodes every image: asked before the cut)
for k in vulkan cuda; do "$BIN" check "$TMP/cut" --set backend.kind=$k >/dev/null 2>&1 && gpus+=("$k"); done
python3 -c "import sys; p=sys.argv[1]; d=open(p,'rb').read(); open(p,'wb').write(d[:64])" "$TMP/cut/test/r_1.png"
"$BIN" train "$TMP/cut" --set output.run_dir="$TMP/cut-cpu" --set trainer.max_steps=20 --set init.count=2000 \
  --set backend.kind=cpu >"$TMP/cut-cpu.log" 2>&1; rc=$?
[ $rc -eq 1 ] && [ ! -e "$TMP/cut-cpu" ] && grep -q "test/r_1.png.*cannot load the dataset" "$TMP/cut-cpu.log" &&
  ok "cpu: a held-out image cut short fails before training, named" ||
  { bad "cpu: a held-out image cut short: rc=$rc"; tail -3 "$TMP/cut-cpu.log"; }
for k in "${gpus[@]}"; do
  "$BIN" train "$TMP/cut" --set output.run_dir="$TMP/cut-$k" --set trainer.max_steps=20 --set init.count=2000 \
    --set backend.kind=$k >"$TMP/cut-$k.log" 2>&1; rc=$?
  [ $rc -eq 1 ] && grep -q "test/r_1.png.*checkpoint of step 20 .* is kept" "$TMP/cut-$k.log" &&
    grep -q 'status = "running"' "$TMP/cut-$k/result.toml" && [ -s "$TMP/cut-$k/point_cloud.ply" ] &&
    ok "$k: a held-out image cut short fails the final evaluation, named, the model kept" ||
    { bad "$k: a held-out image cut short: rc=$rc"; tail -3 "$TMP/cut-$k.log"; }
done

# The run folder works from any working directory: config.toml stores the dataset absolute.
grep -q "^path = \"$TMP/scene\"" "$A/config.toml" && ok "config.toml has the absolute data.path" || bad "data.path not absolute"
(cd / && "$BIN" eval --run "$A" >"$TMP/eval.log" 2>&1) && grep -q "PSNR" "$TMP/eval.log" && ok "eval --run from /" ||
  { bad "eval --run from /"; tail -5 "$TMP/eval.log"; }
(cd / && "$BIN" train --resume "$A" --set trainer.max_steps=120 >"$TMP/res.log" 2>&1) &&
  grep -q "^steps = 120$" "$A/result.toml" && ok "resume from /" || { bad "resume from /"; tail -5 "$TMP/res.log"; }
# resuming a complete run changes nothing and says so
unchanged_ok() { local b; b=$(tree_sum "$A"); "$BIN" train --resume a >"$TMP/done.log" 2>&1; local rc=$?
  [ $rc -eq 0 ] && [ "$b" = "$(tree_sum "$A")" ] && grep -q "already complete" "$TMP/done.log" &&
  grep -qF -- "--set trainer.max_steps=N" "$TMP/done.log"; }
unchanged_ok && ok "resume of a complete run: nothing to do, unchanged" || { bad "resume of a complete run"; tail -3 "$TMP/done.log"; }

# --force replaces the run: no stale renders, a fresh log, the new model.
"$BIN" train --config run.toml --force --set output.save_renders=false --set trainer.max_steps=60 >"$TMP/f.log" 2>&1 &&
  ok "--force run" || { bad "--force run"; tail -5 "$TMP/f.log"; }
[ ! -e "$A/renders" ] && ok "--force removed the old renders" || bad "stale renders stay beside the new model"
[ ! -e "$A/eval_test.toml" ] && ok "--force removed the old eval_test.toml" || bad "stale eval_test.toml"
grep -q "^steps = 60$" "$A/result.toml" && [ -s "$A/checkpoint.bin" ] && ok "--force wrote the new run" || bad "--force result"
[ "$(grep -c 'run folder' "$A/log.txt")" -eq 1 ] && ok "--force started a fresh log.txt" || bad "old log.txt kept"

# Out of memory while training (the test limit makes the Gaussian store's growth fail): a clear
# message, a non-zero exit, and the last checkpoint kept and resumable.
SPLAT_TEST_ALLOC_LIMIT=600000 "$BIN" train --config run.toml --set output.run_dir=oom --set trainer.checkpoint_every=20 \
  --set refine.start=30 --set refine.every=30 --set refine.stop=200 --set trainer.max_steps=200 >"$TMP/oom.log" 2>&1
rc=$?
[ $rc -eq 1 ] && grep -q "out of memory: .* for the Gaussian parameters (.* Gaussians, SH degree 3); lower refine.capacity" "$TMP/oom.log" &&
  grep -q "the model and a checkpoint of step [0-9]* are saved in oom" "$TMP/oom.log" && [ -s oom/checkpoint.bin ] &&
  grep -q 'status = "failed"' oom/result.toml &&
  ok "out of memory while training: message, exit 1, the model and a checkpoint saved first" || { bad "out of memory while training: rc=$rc"; tail -3 "$TMP/oom.log"; }
"$BIN" train --resume oom --set refine.capacity=3000 >"$TMP/oom2.log" 2>&1 && grep -q "^steps = 200$" oom/result.toml &&
  ok "the run resumes from the kept checkpoint" || { bad "resume after out of memory"; tail -3 "$TMP/oom2.log"; }

# Opacity reset mode: no reset in the last opacity_reset_every steps, so the saved model ends
# close to its best (a reset at the last step used to save a washed-out model).
"$BIN" train --config run.toml --set output.run_dir=reset --set refine.opacity_mode=reset \
  --set refine.opacity_reset_every=50 --set refine.stop=1000 --set trainer.max_steps=200 --set trainer.eval_every=25 \
  --set refine.every=25 --set init.count=1000 --set trainer.checkpoint_every=0 >"$TMP/reset.log" 2>&1 || bad "reset-mode run"
last=$(sed -n 's/.*step \([0-9]*\): opacity reset.*/\1/p' reset/log.txt | tail -1)
[ -n "$last" ] && [ "$last" -le 150 ] && ok "last opacity reset at step $last of 200" || bad "opacity reset at step '$last'"
python3 - reset/result.toml <<'PY' && ok "reset mode ends close to its best" || bad "reset mode: final PSNR far below the best"
import sys, tomllib
r = tomllib.load(open(sys.argv[1], 'rb'))
final, best = r['metrics']['test_psnr'], max(r['curves']['psnr'][:-1])
print(f"reset mode: final test PSNR {final:.2f} dB, best during the run {best:.2f} dB")
sys.exit(0 if final >= best - 0.5 else 1)
PY

# Clocks after a resume (docs/runs.md): train_seconds, total_seconds and psnr_seconds count every
# session of the run, session_seconds this one; a checkpoint of an earlier splat (version 2, which
# did not record them) resumes, and result.toml names what it cannot know instead of writing nan.
"$BIN" train --config run.toml --set output.run_dir=clk --set trainer.max_steps=60 --set trainer.eval_every=20 \
  >"$TMP/clk1.log" 2>&1 && cp clk/result.toml "$TMP/clk1.toml" &&
  "$BIN" train --resume clk --set trainer.max_steps=120 >"$TMP/clk2.log" 2>&1 || bad "clock runs"
python3 - "$TMP/clk1.toml" clk/result.toml <<'PY' && ok "after a resume the clocks count every session" || bad "clocks after a resume"
import sys, tomllib
one, two = (tomllib.load(open(p, 'rb')) for p in sys.argv[1:3])
m1, m2, c2 = one['metrics'], two['metrics'], two['curves']
print({k: m2[k] for k in ('train_seconds', 'total_seconds', 'session_seconds')}, c2['psnr_step'], c2['psnr_seconds'])
assert 'unknown' not in m2 and m1['session_seconds'] == m1['total_seconds']
assert m2['total_seconds'] >= m1['total_seconds'] + m2['session_seconds'] - 0.02, 'total counts both sessions'
assert m2['total_seconds'] >= m2['train_seconds'] >= m1['train_seconds']
assert len(c2['psnr_seconds']) == len(c2['psnr_step']) == 6, 'one time per evaluation, both sessions'
assert c2['psnr_seconds'][:3] == one['curves']['psnr_seconds'], 'earlier evaluations keep their times'
assert c2['psnr_seconds'] == sorted(c2['psnr_seconds']) and c2['psnr_seconds'][-1] <= m2['train_seconds']
PY
# the same run folder, its checkpoint turned into version 2 (no clocks after the curves)
python3 - clk/checkpoint.bin 6 <<'PY' || bad "making a version 2 checkpoint"
import sys, struct, zlib
path, points = sys.argv[1], int(sys.argv[2])
d = open(path, 'rb').read()
body = bytearray(d[:len(d) - 4 - (8 + 4 + 16 * points)])
body[8:12] = struct.pack('<I', 2)
open(path, 'wb').write(bytes(body) + struct.pack('<I', zlib.crc32(bytes(body))))
PY
"$BIN" train --resume clk --set trainer.max_steps=140 >"$TMP/clk3.log" 2>&1 || { bad "resume a version 2 checkpoint"; tail -3 "$TMP/clk3.log"; }
grep -q "does not record the wall time" clk/log.txt && ok "resuming an old checkpoint says the clocks are unknown" ||
  bad "no word on the unknown clocks"
python3 - clk/result.toml <<'PY' && ok "result.toml names the unknown clocks, no nan" || bad "unknown clocks in result.toml"
import sys, tomllib
text = open(sys.argv[1]).read()
r = tomllib.loads(text)
m, c = r['metrics'], r['curves']
assert 'nan' not in text, 'a nan in result.toml'
assert m['unknown'] == ['total_seconds', 'psnr_seconds'] and 'earlier splat' in m['unknown_why']
assert 'total_seconds' not in m and 'psnr_seconds' not in c and m['steps'] == 140
assert m['session_seconds'] > 0 and m['train_seconds'] > 0 and len(c['psnr_step']) == 7
PY

# Failures once training runs: the message says whether a checkpoint was kept.
"$BIN" train --config run.toml --set output.run_dir=d1 --set adam.opacity_lr=1e30 --set adam.scales_lr=1e30 \
  --set trainer.log_every=10 --set trainer.checkpoint_every=0 >"$TMP/d1.log" 2>&1
grep -q "diverged at step .*no checkpoint was saved" "$TMP/d1.log" && ! grep -q "is kept" "$TMP/d1.log" &&
  grep -q 'status = "diverged"' d1/result.toml && ok "diverged without a checkpoint says so" || { bad "diverge message (none)"; tail -3 "$TMP/d1.log"; }
"$BIN" train --config run.toml --set output.run_dir=d2 --set trainer.max_steps=300 --set trainer.checkpoint_every=20 \
  --set adam.opacity_lr=1e30 --set adam.scales_lr=1e30 --set adam.means_lr=1e-12 --set trainer.log_every=10 \
  --set refine.start=40 >"$TMP/d2.log" 2>&1
if grep -q "diverged at step" "$TMP/d2.log"; then
  grep -q "the checkpoint of step [0-9]* in d2 is kept" "$TMP/d2.log" && [ -s d2/checkpoint.bin ] &&
    ok "diverged after a checkpoint names it" || { bad "diverge message (kept)"; tail -3 "$TMP/d2.log"; }
fi
finish
