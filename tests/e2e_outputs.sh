#!/usr/bin/env bash
# End to end (issue #26, "No lost data, round two"): outputs of render, synth and export that would
# overwrite inputs are refused (naming the file, inputs byte-identical afterwards), numeric flags
# parsed strictly, run folders over the dataset or their parent refused, dataset image paths that
# leave the dataset folder refused unless data.allow_outside_images = true; a damaged checkpoint's
# message keeps the run and never advises --force.
. "$(dirname "$0")/lib_e2e.sh"

sums() { (cd "$1" && find . -type f -print0 | sort -z | xargs -0 sha256sum); }

"$BIN" synth --out "$TMP/scene" --size 16 --views 2,1,1 --samples 1 >/dev/null || bad "synth"
cat >"$TMP/c.toml" <<TOML
[data]
path = "$TMP/scene"
[trainer]
max_steps = 3
[init]
count = 100
[output]
run_dir = "$TMP/run"
[backend]
kind = "cpu"
TOML
"$BIN" train --config "$TMP/c.toml" >/dev/null 2>&1 || bad "train"
ply="$TMP/run/point_cloud.ply"
before_scene=$(sums "$TMP/scene"); before_run=$(sums "$TMP/run")

# 1. outputs over inputs
expect_fail "render into the dataset" "would write over the input $TMP/scene" \
  "$BIN" render --ply "$ply" --data "$TMP/scene" --out "$TMP/scene"
expect_fail "render into the dataset (trailing ./)" "would write over the input" \
  "$BIN" render --ply "$ply" --data "$TMP/scene/" --out "$TMP/./scene/test/"
expect_fail "render into the run (holds the model)" "would write over the input $ply" \
  "$BIN" render --ply "$ply" --data "$TMP/scene" --out "$TMP/run"
ln -s "$TMP/scene" "$TMP/scenelink"
expect_fail "render through a symlink" "would write over the input" \
  "$BIN" render --ply "$ply" --data "$TMP/scene" --out "$TMP/scenelink/test"
mkdir -p "$TMP/notes" && echo keep >"$TMP/notes/todo.txt"
expect_fail "render into a foreign folder" "$TMP/notes/todo.txt is not what render writes" \
  "$BIN" render --ply "$ply" --data "$TMP/scene" --out "$TMP/notes"
"$BIN" render --ply "$ply" --data "$TMP/scene" --out "$TMP/renders" >/dev/null 2>&1 &&
  "$BIN" render --ply "$ply" --data "$TMP/scene" --out "$TMP/renders/" >/dev/null 2>&1 &&
  ok "render may replace its own output" || bad "render over its own output"
expect_fail "synth over a run folder" "run/point_cloud.ply is not what synth writes" \
  "$BIN" synth --out "$TMP/run" --size 16 --views 2,1,1
cp -r "$TMP/scene" "$TMP/download" && rm "$TMP/download/.splat-synth"
expect_fail "synth over a downloaded dataset" "$TMP/download" \
  "$BIN" synth --out "$TMP/download" --size 16 --views 2,1,1
expect_fail "synth inside a dataset" "lies inside a dataset folder ($TMP/scene)" \
  "$BIN" synth --out "$TMP/scene/sub" --size 16 --views 2,1,1
expect_fail "synth into a foreign folder" "todo.txt is not what synth writes" \
  "$BIN" synth --out "$TMP/notes" --size 16 --views 2,1,1
"$BIN" synth --out "$TMP/scene2" --size 16 --views 2,1,1 --samples 1 >/dev/null &&
  "$BIN" synth --out "$TMP/scene2" --size 16 --views 2,1,1 --samples 1 >/dev/null &&
  ok "synth may replace its own output" || bad "synth over its own output"
expect_fail "export over its input" "is the input model" \
  "$BIN" export --ply "$ply" --out "$TMP/run//point_cloud.ply"
ln -s "$TMP/run" "$TMP/runlink"
expect_fail "export over the input through a symlink" "is the input model" \
  "$BIN" export --ply "$TMP/runlink/point_cloud.ply" --out "$ply"
expect_fail "export over a run file" "over the run's own files" \
  "$BIN" export --run "$TMP/run" --out "$TMP/run/./config.toml" --format ply
expect_fail "export into a dataset" "would write inside a dataset folder ($TMP/scene)" \
  "$BIN" export --run "$TMP/run" --out "$TMP/scene/model.splat"
"$BIN" export --run "$TMP/run" --out "$TMP/run/model.splat" >/dev/null && ok "export beside a run's files" ||
  bad "export beside a run's files"
rm -f "$TMP/run/model.splat"

# run folders over their parent or the dataset (config validation, naming the key)
expect_fail "run_dir = dataset" "output.run_dir = \"$TMP/scene\": the run folder" \
  "$BIN" train --config "$TMP/c.toml" --set output.run_dir="$TMP/scene"
expect_fail "run_dir = parent of the dataset" "the dataset $TMP/scene lies inside the run folder" \
  "$BIN" train --config "$TMP/c.toml" --set output.run_dir="$TMP/run/.." --force
expect_fail "run_dir ending in .." "ends in \".\" or \"..\"" \
  "$BIN" train --config "$TMP/c.toml" --set output.run_dir="$TMP/run/x/.."
expect_fail "experiment.name = .." "experiment.name = \"..\"" \
  "$BIN" train "$TMP/scene" --set experiment.name=..
expect_fail "experiment.name = ." "experiment.name = \".\"" \
  "$BIN" train "$TMP/scene" --set experiment.name=.

# 2. numbers parsed strictly
expect_fail "--frames 0" "--frames wants a whole number from 1 to 100000, got '0'" \
  "$BIN" render --ply "$ply" --data "$TMP/scene" --out "$TMP/o" --path orbit --frames 0
expect_fail "--frames abc" "got 'abc'" "$BIN" render --ply "$ply" --data "$TMP/scene" --out "$TMP/o" --path orbit --frames abc
expect_fail "--frames 2x" "got '2x'" "$BIN" render --ply "$ply" --data "$TMP/scene" --out "$TMP/o" --path orbit --frames 2x
expect_fail "--downscale 16x" "--downscale wants a whole number from 1 to 64, got '16x'" \
  "$BIN" eval --run "$TMP/run" --downscale 16x
expect_fail "--size overflow" "--size wants a whole number from 8 to 8192, got '99999999999999999999'" \
  "$BIN" synth --out "$TMP/o" --size 99999999999999999999
expect_fail "--samples empty" "--samples wants a whole number from 1 to 4096, got ''" "$BIN" synth --out "$TMP/o" --samples=
expect_fail "--views 3,x,1" "--views (val count) wants a whole number" "$BIN" synth --out "$TMP/o" --views 3,x,1
expect_fail "--views 3,1" "--views wants N or TRAIN,VAL,TEST" "$BIN" synth --out "$TMP/o" --views 3,1
expect_fail "--seed -1" "--seed wants a whole number from 0" "$BIN" synth --out "$TMP/o" --seed -1
[ -e "$TMP/o" ] && bad "a refused command created its --out" || ok "refused commands created nothing"

# 3. image paths that leave the dataset folder
cp -r "$TMP/scene" "$TMP/esc"
python3 - "$TMP/esc/transforms_train.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); d["frames"][1]["file_path"] = "../scene/train/r_0"
json.dump(d, open(sys.argv[1], "w"), indent=1)
PY
expect_fail "image path with .." "transforms_train.json: frame 1: file_path \"../scene/train/r_0\" climbs out of the dataset folder" \
  "$BIN" train --config "$TMP/c.toml" --set data.path="$TMP/esc" --set output.run_dir="$TMP/run_esc"
[ -e "$TMP/run_esc" ] && bad "refused run left a folder" || ok "refused run wrote nothing"
"$BIN" check "$TMP/esc" --set data.allow_outside_images=true | grep -q "^OK" && ok "data.allow_outside_images" ||
  bad "data.allow_outside_images"

# 5. a damaged checkpoint: the message keeps the run and does not advise --force over it
cp -r "$TMP/run" "$TMP/dmg" && head -c 100 "$TMP/run/checkpoint.bin" >"$TMP/dmg/checkpoint.bin"
before_dmg=$(sums "$TMP/dmg")
out=$("$BIN" train --resume "$TMP/dmg" 2>&1); rc=$?
[ $rc -ne 0 ] && grep -qF "checkpoint.bin is damaged and cannot be resumed; the run folder is unchanged and its point_cloud.ply" <<<"$out" &&
  grep -qF -- "--force would delete every file of the run" <<<"$out" && ! grep -qiE "use --force|with --force" <<<"$out" &&
  ok "damaged checkpoint message" || { bad "damaged checkpoint message (rc $rc)"; echo "$out" | tail -4; }
expect_fail "fresh run over a damaged checkpoint" "$TMP/dmg/checkpoint.bin is damaged and cannot be resumed" \
  "$BIN" train --config "$TMP/c.toml" --set output.run_dir="$TMP/dmg"
[ "$(sums "$TMP/dmg")" = "$before_dmg" ] && ok "damaged run byte-identical" || bad "damaged run changed"

[ "$(sums "$TMP/scene")" = "$before_scene" ] && ok "dataset byte-identical" || bad "dataset changed"
[ "$(sums "$TMP/run")" = "$before_run" ] && ok "run folder byte-identical" || bad "run folder changed"
finish
