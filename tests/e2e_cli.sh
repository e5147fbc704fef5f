#!/usr/bin/env bash
# End to end: every subcommand's --help, `check` naming three mistakes with their lines, and bad
# inputs (corrupt PNG, missing image, bad JSON, bad TOML, empty scene) giving clear errors.
. "$(dirname "$0")/lib_e2e.sh"

"$BIN" version | grep -q "^splat " && ok version || bad version
for c in train check eval render synth; do
  "$BIN" $c --help | grep -q "usage: splat $c" && ok "$c --help" || bad "$c --help"
done
expect_fail "unknown command" "unknown command" "$BIN" frobnicate

# A small valid scene to break in different ways.
"$BIN" synth --out "$TMP/scene" --size 24 --views 4,2,2 --samples 1 >/dev/null || bad "synth"
good="$TMP/good.toml"
cat >"$good" <<TOML
[data]
path = "$TMP/scene"
[trainer]
max_steps = 5
[init]
count = 200
[output]
run_dir = "$TMP/run"
[backend]
kind = "cpu"
TOML
"$BIN" check --config "$good" >/dev/null && ok "check on a good config" || bad "check on a good config"

# Three mistakes, three lines.
cat >"$TMP/three.toml" <<TOML
[data]
path = "$TMP/scene"
background = "purple"
[trainer]
max_stepz = 10
sh_degree = 7
TOML
out=$("$BIN" check --config "$TMP/three.toml" 2>&1); rc=$?
[ $rc -ne 0 ] && ok "check exits non-zero" || bad "check exit status"
for pat in "three.toml:3:" "three.toml:5:" "three.toml:6:"; do
  grep -qF "$pat" <<<"$out" && ok "check names $pat" || { bad "check lacks $pat"; echo "$out" | tail -5; }
done

# Bad TOML syntax.
printf '[data\npath = 1\n' >"$TMP/syntax.toml"
expect_fail "bad TOML" "syntax.toml:1" "$BIN" train --config "$TMP/syntax.toml"

# Bad JSON.
cp -r "$TMP/scene" "$TMP/badjson"
printf '{\n "camera_angle_x": 0.6,\n "frames": [ oops ]\n}\n' >"$TMP/badjson/transforms_train.json"
expect_fail "bad JSON" "transforms_train.json:3" "$BIN" train --config "$good" --set data.path="$TMP/badjson"

# Corrupt PNG.
cp -r "$TMP/scene" "$TMP/corrupt"
echo "not a png at all" >"$TMP/corrupt/train/r_1.png"
expect_fail "corrupt PNG" "r_1.png" "$BIN" train --config "$good" --set data.path="$TMP/corrupt"

# Missing image.
cp -r "$TMP/scene" "$TMP/missing"
rm "$TMP/missing/train/r_2.png"
expect_fail "missing image" "r_2" "$BIN" train --config "$good" --set data.path="$TMP/missing"

# Empty scene.
mkdir -p "$TMP/empty"
printf '{"camera_angle_x": 0.6, "frames": []}\n' >"$TMP/empty/transforms_train.json"
expect_fail "empty scene" "no frames" "$BIN" train --config "$good" --set data.path="$TMP/empty"

# Missing dataset folder and missing config file.
expect_fail "missing dataset" "$TMP/nowhere" "$BIN" train --config "$good" --set data.path="$TMP/nowhere"
expect_fail "missing config" "nope.toml" "$BIN" train --config "$TMP/nope.toml"
expect_fail "bad --set" "--set trainer.max_steps: must be an integer" "$BIN" train --config "$good" --set trainer.max_steps=abc

# eval/render on a bad ply
echo "ply" >"$TMP/bad.ply"
expect_fail "eval bad ply" "bad.ply" "$BIN" eval --ply "$TMP/bad.ply" --data "$TMP/scene"
finish
