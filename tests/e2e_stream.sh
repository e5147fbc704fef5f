#!/usr/bin/env bash
# End to end: `splat synth --views N` writes a train-and-test capture; `splat train` with
# data.cache_mb streams it (log and result.toml say so, with the peak host memory) and a resumed
# streamed run continues; bad data.cache_mb values and a bad --views are clear errors that
# write nothing.
. "$(dirname "$0")/lib_e2e.sh"

"$BIN" synth --out "$TMP/cap" --size 24 --views 30 --samples 1 >"$TMP/synth.log" 2>&1 || bad synth
n=$(ls "$TMP/cap/train" | wc -l); t=$(ls "$TMP/cap/test" | wc -l)
[ "$n" = 30 ] && [ "$t" = 8 ] && [ ! -e "$TMP/cap/transforms_val.json" ] && ok "synth --views 30: 30 train, 8 test, no val" ||
  bad "synth --views 30 wrote $n train, $t test views"
expect_fail "synth --views 3,4" "--views wants N or TRAIN,VAL,TEST" "$BIN" synth --out "$TMP/x" --views 3,4

S=(--set backend.kind=cpu --set backend.threads=1 --set init.count=200 --set output.save_renders=false)
run="$TMP/run"
"$BIN" train "$TMP/cap" --set output.run_dir="$run" --set data.cache_mb=1 --set trainer.max_steps=20 \
  --set trainer.checkpoint_every=10 "${S[@]}" >"$TMP/train.log" 2>&1 && ok "streamed train" ||
  { bad "streamed train"; tail -20 "$TMP/train.log"; }
grep -q "streaming the training images through a cache of 1 MiB" "$run/log.txt" && grep -q "image cache: " "$run/log.txt" &&
  grep -q "peak host memory: " "$run/log.txt" && ok "log.txt reports the cache and the peak host memory" || bad "log.txt"
grep -Eq '^peak_host_mib = [0-9.]+$' "$run/result.toml" && grep -q '^cache_mb = 1$' "$run/config.toml" &&
  ok "result.toml peak_host_mib, config.toml cache_mb" || bad "result.toml / config.toml"
"$BIN" train --resume "$run" --set trainer.max_steps=30 >"$TMP/resume.log" 2>&1 && grep -q "^steps = 30$" "$run/result.toml" &&
  ok "streamed run resumes" || { bad "resume"; tail -10 "$TMP/resume.log"; }

expect_fail "data.cache_mb = -1" "data.cache_mb" "$BIN" train "$TMP/cap" --set output.run_dir="$TMP/neg" --set data.cache_mb=-1
[ ! -e "$TMP/neg" ] && ok "negative cache_mb wrote nothing" || bad "negative cache_mb wrote $TMP/neg"
# a 1 MiB cache is smaller than one 600x600 RGBA image (1.4 MiB): refused before anything is written
"$BIN" synth --out "$TMP/big" --size 600 --views 1,0,0 --samples 1 >/dev/null 2>&1 || bad "synth 600"
expect_fail "cache smaller than one image" "data.cache_mb = 1" \
  "$BIN" train "$TMP/big" --set output.run_dir="$TMP/small" --set data.cache_mb=1 "${S[@]}"
[ ! -e "$TMP/small" ] && ok "too small a cache wrote nothing" || bad "too small a cache wrote $TMP/small"
finish
