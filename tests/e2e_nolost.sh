#!/usr/bin/env bash
# End to end: a user's run folder survives what used to lose it. Two trainings into one folder
# (the second is refused while the first runs, --force and --resume too); --force that cannot
# remove every old file removes none; a save that fails (a file-size limit) keeps the previous
# model, checkpoint and result.toml byte-identical and leaves no temporaries, and the next start
# removes temporaries an interrupted save left; an error once training ran (a streamed image gone
# bad) saves the model and a checkpoint first; a resumed run that diverges leaves the good
# result.toml and config.toml as they were; a checkpoint resumes only on the dataset it records; a limit on threads is a warning, not the end of the
# process. Parts that need another user (permissions, process limits) run as `nobody` when the
# script runs as root, as CI does.
. "$(dirname "$0")/lib_e2e.sh"
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")
chmod 755 "$TMP"

"$BIN" synth --out "$TMP/scene" --size 32 --views 12,3,3 --samples 2 >/dev/null || bad synth
cat >"$TMP/run.toml" <<TOML
[data]
path = "$TMP/scene"
[init]
count = 2000
[trainer]
max_steps = 100
sh_interval = 50
[refine]
strategy = "adc"
start = 30
stop = 90
every = 30
[output]
save_renders = false
[backend]
kind = "cpu"
threads = 2
TOML
train() { "$BIN" train --config "$TMP/run.toml" "$@"; }
# the files that describe a saved run (log.txt grows with every command and is left out)
run_sum() { (cd "$1" && sha256sum config.toml result.toml point_cloud.ply checkpoint.bin); }
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }
root=0; [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null && root=1
# nobody may not reach the checkout (a private home folder): it runs a copy of the binary in $TMP
NBIN=$TMP/splat-copy
cp "$BIN" "$NBIN" && chmod 755 "$NBIN"

# 1. Two trainings into one folder.
"$BIN" train --config "$TMP/run.toml" --set output.run_dir="$TMP/busy" --set trainer.max_steps=1000000 >"$TMP/busy.log" 2>&1 &
pid=$!
for i in $(seq 1 200); do grep -q "initialized" "$TMP/busy/log.txt" 2>/dev/null && break; sleep 0.05; done
sleep 0.5
expect_fail "a second training into a folder being trained is refused" "another training is writing this run folder" \
  train --set output.run_dir="$TMP/busy"
expect_fail "--force into a folder being trained is refused" "another training is writing this run folder" \
  train --set output.run_dir="$TMP/busy" --force
expect_fail "--resume of a folder being trained is refused" "another training is writing this run folder" \
  "$BIN" train --resume "$TMP/busy"
kill -INT $pid
wait $pid; rc=$?
[ $rc -eq 130 ] && grep -q 'status = "interrupted"' "$TMP/busy/result.toml" && [ -s "$TMP/busy/checkpoint.bin" ] &&
  ok "the first training was not disturbed: stopped by Ctrl-C, saved" || { bad "first training rc=$rc"; tail -3 "$TMP/busy.log"; }
"$BIN" train --resume "$TMP/busy" --set trainer.max_steps=$(($(sed -n 's/^steps = //p' "$TMP/busy/result.toml") + 10)) \
  >"$TMP/busy2.log" 2>&1 && ok "after it ended, the folder resumes (the lock went with the process)" ||
  { bad "resume after the lock"; tail -3 "$TMP/busy2.log"; }

# 2. --force that cannot remove every old file removes none.
train --set output.run_dir="$TMP/f" --set output.save_renders=true >"$TMP/f.log" 2>&1 || bad "run to replace"
mkdir -p "$TMP/f/renders/keep" && echo precious >"$TMP/f/renders/keep/note.txt"
before=$(cd "$TMP/f" && find . | sort && find . -type f -print0 | sort -z | xargs -0 sha256sum)
if [ $root -eq 1 ]; then
  chown -R nobody "$TMP/f" && chown root "$TMP/f/renders/keep" && chmod 755 "$TMP/f/renders/keep"
  expect_fail "--force that cannot remove a file removes nothing" "cannot replace the run in $TMP/f (--force" \
    as_nobody "$NBIN" train --config "$TMP/run.toml" --set output.run_dir="$TMP/f" --force
else
  chmod 555 "$TMP/f/renders/keep"
  expect_fail "--force that cannot remove a file removes nothing" "cannot replace the run in $TMP/f (--force" \
    train --set output.run_dir="$TMP/f" --force
  chmod 755 "$TMP/f/renders/keep"
fi
after=$(cd "$TMP/f" && find . | sort && find . -type f -print0 | sort -z | xargs -0 sha256sum)
[ "$before" = "$after" ] && ok "every file of the old run is still there, byte-identical" || bad "--force removed part of the run"

# 3. A save that fails: a file-size limit smaller than the model.
train --set output.run_dir="$TMP/fs" >"$TMP/fs.log" 2>&1 || bad "run for the failed save"
sum=$(run_sum "$TMP/fs")
(ulimit -f 64; exec "$BIN" train --resume "$TMP/fs" --set trainer.max_steps=200 --set trainer.checkpoint_every=50) \
  >"$TMP/fs2.log" 2>&1; rc=$?
[ $rc -eq 1 ] && grep -q "point_cloud.ply.*write failed.*nothing of this save was kept: the model, checkpoint and result.toml of step 100 are as they were" "$TMP/fs2.log" &&
  ok "a save over the file-size limit fails with a message, exit 1, and says what was kept" || { bad "failed save rc=$rc"; tail -3 "$TMP/fs2.log"; }
[ "$sum" = "$(run_sum "$TMP/fs")" ] && ok "model, checkpoint, result.toml and config.toml of step 100 byte-identical" ||
  bad "the failed save changed the run"
[ -z "$(find "$TMP/fs" -name '*.tmp.*')" ] && ok "no temporary left behind" || bad "temporaries left: $(find "$TMP/fs" -name '*.tmp.*')"
printf 'half' >"$TMP/fs/checkpoint.bin.tmp.99999"; printf 'half' >"$TMP/fs/point_cloud.ply.tmp.12.tmp.12"
"$BIN" train --resume "$TMP/fs" --set trainer.max_steps=120 >"$TMP/fs3.log" 2>&1 && grep -q "^steps = 120$" "$TMP/fs/result.toml" &&
  [ -z "$(find "$TMP/fs" -name '*.tmp.*')" ] && ok "the next start removes temporaries of an interrupted save, and resumes" ||
  { bad "temporaries on the next start"; ls "$TMP/fs"; tail -3 "$TMP/fs3.log"; }
# the end-of-run save, whose files are written while the final evaluation runs, fails alike
sum=$(run_sum "$TMP/fs")
(ulimit -f 64; exec "$BIN" train --resume "$TMP/fs" --set trainer.max_steps=140) >"$TMP/fs4.log" 2>&1; rc=$?
[ $rc -eq 1 ] && grep -q "point_cloud.ply.*write failed.*nothing of this save was kept: the model, checkpoint and result.toml of step 120 are as they were" "$TMP/fs4.log" &&
  ok "the final save over the file-size limit fails with a message, exit 1, and says what was kept" ||
  { bad "failed final save rc=$rc"; tail -3 "$TMP/fs4.log"; }
[ "$sum" = "$(run_sum "$TMP/fs")" ] && [ -z "$(find "$TMP/fs" -name '*.tmp.*')" ] &&
  ok "the failed final save changed nothing and left no temporary" || bad "the failed final save changed the run"

# 4. A streamed image that goes bad once training ran: the model and a checkpoint are saved first.
cp -r "$TMP/scene" "$TMP/bad"
sed "s|$TMP/scene|$TMP/bad|" "$TMP/run.toml" >"$TMP/bad.toml"
saved=0
for img in "$TMP"/bad/train/*.png; do
  cp "$img" "$TMP/img.keep"
  head -c 120 "$TMP/img.keep" >"$img" # the header (size) reads; the pixels do not
  "$BIN" train --config "$TMP/bad.toml" --set output.run_dir="$TMP/sb" --set data.cache_mb=1 --set trainer.max_steps=400 \
    --force >"$TMP/sb.log" 2>&1; rc=$?
  cp "$TMP/img.keep" "$img"
  if grep -q "no step was trained" "$TMP/sb.log"; then continue; fi # this image was the first one used
  [ $rc -eq 1 ] && grep -q "$(basename "$img")" "$TMP/sb.log" &&
    grep -q "the model and a checkpoint of step [0-9]* are saved in $TMP/sb" "$TMP/sb.log" &&
    grep -q 'status = "failed"' "$TMP/sb/result.toml" && [ -s "$TMP/sb/point_cloud.ply" ] && saved=1
  break
done
[ $saved -eq 1 ] && ok "a streamed image gone bad: the file is named, the model and a checkpoint saved first" ||
  { bad "streamed image gone bad"; tail -3 "$TMP/sb.log"; }
step=$(sed -n 's/^steps = //p' "$TMP/sb/result.toml" 2>/dev/null)
"$BIN" train --resume "$TMP/sb" >"$TMP/sb2.log" 2>&1 && grep -q "resuming $TMP/sb at step $step" "$TMP/sb/log.txt" &&
  ok "the saved run resumes from step $step" || { bad "resume after the bad image"; tail -3 "$TMP/sb2.log"; }

# 5. A resumed run that diverges: the good run's files stay as they were.
train --set output.run_dir="$TMP/dv" >"$TMP/dv.log" 2>&1 || bad "run to diverge"
sum=$(run_sum "$TMP/dv")
"$BIN" train --resume "$TMP/dv" --set trainer.max_steps=200 --set adam.opacity_lr=3e38 \
  --set trainer.log_every=10 >"$TMP/dv2.log" 2>&1; rc=$?
[ $rc -eq 1 ] && grep -q "diverged at step" "$TMP/dv2.log" && grep -q "the checkpoint of step 100 in $TMP/dv is kept" "$TMP/dv2.log" &&
  [ "$sum" = "$(run_sum "$TMP/dv")" ] && ok "divergence after a resume: result.toml, config.toml, model and checkpoint unchanged" ||
  { bad "divergence after a resume rc=$rc"; tail -3 "$TMP/dv2.log"; }

# 7. The checkpoint records its dataset: resuming it on another one is refused, unless the recorded one moved away.
cp -r "$TMP/scene" "$TMP/scene2"
sum=$(run_sum "$TMP/dv")
expect_fail "resume on another dataset is refused" "the checkpoint was trained on $TMP/scene, but data.path is $TMP/scene2" \
  "$BIN" train --resume "$TMP/dv" --set data.path="$TMP/scene2" --set trainer.max_steps=110
[ "$sum" = "$(run_sum "$TMP/dv")" ] && ok "the refused resume changed nothing" || bad "the refused resume changed the run"
mv "$TMP/scene" "$TMP/scene_moved"
"$BIN" train --resume "$TMP/dv" --set data.path="$TMP/scene2" --set trainer.max_steps=110 >"$TMP/mv.log" 2>&1 &&
  ok "a dataset that moved: the new data.path resumes it" || { bad "resume after a move"; tail -3 "$TMP/mv.log"; }
mv "$TMP/scene_moved" "$TMP/scene"

# 6. Fewer threads than asked for can start: a warning and a smaller team, not the end of the process.
if [ $root -eq 1 ] && command -v prlimit >/dev/null; then
  mkdir -p "$TMP/thr" && chown nobody "$TMP/thr"
  OMP_NUM_THREADS=8 as_nobody prlimit --nproc=3 "$NBIN" train --config "$TMP/run.toml" --set output.run_dir="$TMP/thr/run" \
    --set backend.threads=0 --set trainer.max_steps=30 >"$TMP/thr.log" 2>&1; rc=$?
  [ $rc -eq 0 ] && grep -q "threads asked for could be started" "$TMP/thr.log" && grep -q 'status = "complete"' "$TMP/thr/run/result.toml" &&
    ok "a process limit of 3: the run warns, uses fewer threads and completes" || { bad "thread limit rc=$rc"; tail -3 "$TMP/thr.log"; }
else
  echo "skipped: the thread-limit check needs root (to run as nobody under a process limit)"
fi
finish
