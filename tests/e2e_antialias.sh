#!/usr/bin/env bash
# End to end: render.antialias (the opacity-compensated screen-space filter, docs/math.md). Two
# short CPU runs of the demo scene at 32x32 (data.downscale=2 of 64x64), without and with the
# filter, each scored at 64x64 by `splat eval --run --downscale 1`: the model trained with the
# filter loses clearly less at the other resolution. The run's config.toml records the setting,
# eval uses it (--antialias off scores lower), export notes it, and a bad --antialias value is an
# error. CPU runs with one thread are deterministic: the numbers repeat.
. "$(dirname "$0")/lib_e2e.sh"

"$BIN" synth --out "$TMP/scene" --size 64 --views 24,2,4 --samples 1 >/dev/null || bad synth
psnr() { sed -n 's/^test: .* PSNR \([0-9.]*\) dB.*/\1/p' "$1" | tail -1; }
declare -A at32 at64
for aa in false true; do
  run="$TMP/run-$aa"
  "$BIN" train "$TMP/scene" --set data.downscale=2 --set backend.kind=cpu --set backend.threads=1 \
    --set trainer.max_steps=600 --set init.count=2000 --set trainer.sh_interval=100 --set refine.start=100 \
    --set refine.stop=400 --set output.save_renders=false --set output.run_dir="$run" \
    --set render.antialias=$aa >"$TMP/train-$aa.log" 2>&1 && ok "train antialias=$aa" || { bad "train $aa"; tail -5 "$TMP/train-$aa.log"; }
  grep -q "^antialias = $aa" "$run/config.toml" && ok "config.toml records antialias = $aa" || bad "config.toml lacks antialias = $aa"
  "$BIN" eval --run "$run" >"$TMP/eval32-$aa.log" 2>&1 || bad "eval $aa at 32"
  "$BIN" eval --run "$run" --downscale 1 >"$TMP/eval64-$aa.log" 2>&1 || bad "eval $aa at 64"
  at32[$aa]=$(psnr "$TMP/eval32-$aa.log")
  at64[$aa]=$(psnr "$TMP/eval64-$aa.log")
  echo "antialias=$aa: test PSNR ${at32[$aa]} dB at 32x32 (trained), ${at64[$aa]} dB at 64x64"
done
python3 - "${at32[false]}" "${at64[false]}" "${at32[true]}" "${at64[true]}" <<'PY' &&
import sys
p32, p64, a32, a64 = map(float, sys.argv[1:])
assert a32 - a64 < (p32 - p64) - 1.0, (p32 - p64, a32 - a64)
PY
  ok "the filtered model loses at least 1 dB less at twice the resolution" || bad "cross-resolution loss not smaller with antialias"

# the same model rendered without the filter (what a standard viewer shows) scores lower
"$BIN" eval --run "$TMP/run-true" --antialias off >"$TMP/eval-off.log" 2>&1 || bad "eval --antialias off"
off=$(psnr "$TMP/eval-off.log")
python3 -c "import sys; assert float(sys.argv[1]) < float(sys.argv[2])" "$off" "${at32[true]}" &&
  ok "rendered without the filter: $off dB < ${at32[true]} dB" || bad "--antialias off did not change the score ($off)"
# eval --ply takes the setting from --antialias: on gives the run's own score
"$BIN" eval --ply "$TMP/run-true/point_cloud.ply" --data "$TMP/scene" --downscale 2 --antialias on >"$TMP/eval-ply.log" 2>&1 ||
  bad "eval --ply --antialias on"
[ "$(psnr "$TMP/eval-ply.log")" = "${at32[true]}" ] && ok "eval --ply --antialias on = eval --run" ||
  bad "eval --ply --antialias on: $(psnr "$TMP/eval-ply.log") vs ${at32[true]}"

"$BIN" export --run "$TMP/run-true" --out "$TMP/aa.ply" >"$TMP/export.log" 2>&1 || bad "export"
grep -q "trained with render.antialias = true: opacities baked" "$TMP/export.log" && ok "export bakes the filter" ||
  bad "export: no bake note"
# the baked model in a renderer without the filter (a standard viewer) scores above the unbaked one
"$BIN" eval --ply "$TMP/aa.ply" --data "$TMP/scene" --downscale 2 --antialias off >"$TMP/eval-baked.log" 2>&1 ||
  bad "eval of the baked export"
baked=$(psnr "$TMP/eval-baked.log")
echo "rendered without the filter: unbaked $off dB, baked $baked dB (with the filter ${at32[true]} dB)"
awk -v b="$baked" -v o="$off" 'BEGIN { exit !(b > o) }' && ok "baked export: $baked dB > unbaked $off dB" ||
  bad "the bake did not help ($baked vs $off dB)"
"$BIN" export --run "$TMP/run-true" --out "$TMP/aa-raw.ply" --no-bake >"$TMP/export3.log" 2>&1 || bad "export --no-bake"
cmp -s "$TMP/aa-raw.ply" "$TMP/run-true/point_cloud.ply" && grep -q "no-bake writes it as trained" "$TMP/export3.log" &&
  ok "export --no-bake: the model as trained, with a note" || bad "export --no-bake changed the model or has no note"
# a run whose config.toml this build cannot read: exported as stored, with a warning naming the file
cp -r "$TMP/run-true" "$TMP/run-odd" && printf '\n[unknown_section]\nkey = 1\n' >>"$TMP/run-odd/config.toml"
"$BIN" export --run "$TMP/run-odd" --out "$TMP/odd.ply" >"$TMP/export-odd.log" 2>&1 || bad "export of a run with an odd config"
grep -q "warning: $TMP/run-odd/config.toml" "$TMP/export-odd.log" && cmp -s "$TMP/odd.ply" "$TMP/run-odd/point_cloud.ply" &&
  ok "unreadable config.toml: a warning naming it, the model as stored" || { bad "odd config export"; cat "$TMP/export-odd.log"; }
# the run's dataset is gone: no cameras to bake with, so the model is written as trained, with a note
cp -r "$TMP/run-true" "$TMP/run-nodata" && sed -i "s#^path = .*#path = \"$TMP/no-such-scene\"#" "$TMP/run-nodata/config.toml"
before=$(cd "$TMP/run-nodata" && find . -type f -exec sha256sum {} + | sort)
"$BIN" export --run "$TMP/run-nodata" --out "$TMP/nodata.ply" >"$TMP/export-nodata.log" 2>&1 || bad "export without the dataset"
grep -q "could not be baked" "$TMP/export-nodata.log" && cmp -s "$TMP/nodata.ply" "$TMP/run-nodata/point_cloud.ply" &&
  ok "dataset gone: a note, the model as trained" || { bad "export without the dataset"; cat "$TMP/export-nodata.log"; }
[ "$before" = "$(cd "$TMP/run-nodata" && find . -type f -exec sha256sum {} + | sort)" ] &&
  ok "the run folder is unchanged" || bad "export changed the run folder"
"$BIN" export --run "$TMP/run-false" --out "$TMP/plain.ply" >"$TMP/export2.log" 2>&1 || bad "export plain"
grep -q "antialias" "$TMP/export2.log" && bad "export of a plain run mentions antialias" || ok "plain export: no note"
expect_fail "bad --antialias" "--antialias must be on or off, got 'yes'" "$BIN" eval --run "$TMP/run-true" --antialias yes
expect_fail "bad --downscale" "--downscale wants a whole number from 1 to 64, got '0'" "$BIN" eval --run "$TMP/run-true" --downscale 0
finish
