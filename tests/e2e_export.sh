#!/usr/bin/env bash
# End to end: a run with trainer.save_every leaves cameras.json and point_cloud/iteration_N
# snapshots that load; `splat export` writes .ply/.splat/.spz/.sog that `eval --ply` reads back with
# scores close to the original; `render --path` writes frames, and an .mp4 through ffmpeg when one
# is on PATH (a stand-in ffmpeg here); bad input gives clear errors.
. "$(dirname "$0")/lib_e2e.sh"

"$BIN" synth --out "$TMP/scene" --size 32 --views 12,3,3 --samples 2 >/dev/null || bad synth
cat >"$TMP/run.toml" <<TOML
[data]
path = "$TMP/scene"
[init]
count = 1500
[trainer]
max_steps = 50
save_every = 20
[backend]
kind = "cpu"
threads = 2
TOML
run="$TMP/run"
"$BIN" train --config "$TMP/run.toml" --set output.run_dir="$run" >"$TMP/train.log" 2>&1 && ok train || { bad train; tail -20 "$TMP/train.log"; }

# cameras.json: 18 cameras, the original 3DGS fields
python3 - "$run/cameras.json" <<'PY' && ok "cameras.json parses with 18 cameras" || bad "cameras.json"
import json, sys
cams = json.load(open(sys.argv[1]))
assert len(cams) == 18, len(cams)
for i, c in enumerate(cams):
    assert c["id"] == i and c["width"] == 32 and c["height"] == 32
    assert len(c["position"]) == 3 and len(c["rotation"]) == 3 and all(len(r) == 3 for r in c["rotation"])
    assert c["fx"] > 0 and c["fy"] > 0 and c["img_name"].startswith("r_")
PY
# snapshots at 20, 40 and the end (50); the final model stays at point_cloud.ply
for s in 20 40 50; do
  p="$run/point_cloud/iteration_$s/point_cloud.ply"
  [ -s "$p" ] && ok "snapshot iteration_$s" || bad "no snapshot iteration_$s"
done
[ -e "$run/point_cloud/iteration_30" ] && bad "unexpected snapshot iteration_30" || ok "no snapshot between save steps"
cmp -s "$run/point_cloud/iteration_50/point_cloud.ply" "$run/point_cloud.ply" && ok "last snapshot = final model" || bad "last snapshot differs"
"$BIN" eval --ply "$run/point_cloud/iteration_20/point_cloud.ply" --data "$TMP/scene" >"$TMP/snap.txt" 2>&1 \
  && ok "snapshot loads" || { bad "snapshot eval"; tail -3 "$TMP/snap.txt"; }

# export: every format, re-imported by eval
psnr() { sed -n 's/.*PSNR \([0-9.]*\) dB.*/\1/p' "$1" | tail -1; }
"$BIN" eval --ply "$run/point_cloud.ply" --data "$TMP/scene" >"$TMP/orig.txt" 2>&1 || bad "eval original"
for f in ply splat spz sog; do
  "$BIN" export --run "$run" --out "$TMP/m.$f" >"$TMP/exp_$f.txt" 2>&1 && ok "export $f" || { bad "export $f"; cat "$TMP/exp_$f.txt"; }
  grep -q "wrote $TMP/m.$f" "$TMP/exp_$f.txt" || bad "export $f message"
  "$BIN" eval --ply "$TMP/m.$f" --data "$TMP/scene" >"$TMP/ev_$f.txt" 2>&1 && ok "eval --ply m.$f" || { bad "eval m.$f"; tail -3 "$TMP/ev_$f.txt"; }
done
cmp -s "$TMP/m.ply" "$run/point_cloud.ply" && ok "ply export is the same file" || bad "ply export differs"
o=$(psnr "$TMP/orig.txt"); z=$(psnr "$TMP/ev_spz.txt")
python3 -c "import sys; sys.exit(0 if abs($o - $z) < 0.5 else 1)" && ok "spz scores within 0.5 dB ($o vs $z)" || bad "spz PSNR $z vs $o"
z=$(psnr "$TMP/ev_sog.txt")
python3 -c "import sys; sys.exit(0 if abs($o - $z) < 0.5 else 1)" && ok "sog scores within 0.5 dB ($o vs $z)" || bad "sog PSNR $z vs $o"
sp=$(stat -c %s "$TMP/m.spz"); pl=$(stat -c %s "$TMP/m.ply")
[ "$sp" -lt $((pl / 5)) ] && ok "spz is over 5x smaller ($sp vs $pl bytes)" || bad "spz size $sp vs ply $pl"
"$BIN" export --ply "$TMP/m.spz" --format splat --out "$TMP/conv.bin" >/dev/null 2>&1 && ok "spz -> splat with --format" || bad "spz -> splat"

# export errors
expect_fail "export missing input" "nothere.ply" "$BIN" export --ply "$TMP/nothere.ply" --out "$TMP/x.spz"
expect_fail "export unknown format" "--format must be ply, splat, spz, glb or sog" "$BIN" export --run "$run" --format gltf --out "$TMP/x.g"
expect_fail "export format from name" "cannot tell the format" "$BIN" export --run "$run" --out "$TMP/x.bin"
expect_fail "export both inputs" "give --ply FILE or --run DIR" "$BIN" export --run "$run" --ply "$TMP/m.ply" --out "$TMP/x.spz"
head -c 100 "$TMP/m.spz" >"$TMP/cut.spz"
expect_fail "truncated spz" "cut.spz" "$BIN" export --ply "$TMP/cut.spz" --out "$TMP/x.ply"
[ -e "$TMP/x.ply" ] && bad "failed export left a file" || ok "failed export leaves no file"
expect_fail "export --spz-version 5" "--spz-version must be 3 or 4, got '5'" "$BIN" export --ply "$TMP/m.ply" --spz-version 5 --out "$TMP/x.spz"
expect_fail "export --spz-axes up" "--spz-axes must be rdf or rub, got 'up'" "$BIN" export --ply "$TMP/m.ply" --spz-axes up --out "$TMP/x.spz"
expect_fail "export --spz-axes to .ply" "apply to .spz output only" "$BIN" export --ply "$TMP/m.ply" --spz-axes rub --out "$TMP/x.ply"
expect_fail "export to meta.json" "the unbundled meta.json form is read, not written" "$BIN" export --ply "$TMP/m.ply" --out "$TMP/meta.json"
expect_fail "export a directory" "(not a run folder)" "$BIN" export --ply "$TMP/scene" --out "$TMP/x.spz"
expect_fail "export /dev/zero" "/dev/zero: not a regular file" "$BIN" export --ply /dev/zero --out "$TMP/x.spz"
# --spz-axes rub then --in-spz-axes rub: the model comes back where it was (v3 and v4)
for v in 3 4; do
  "$BIN" export --ply "$TMP/m.ply" --spz-version $v --spz-axes rub --out "$TMP/rub$v.spz" >/dev/null &&
  "$BIN" export --ply "$TMP/rub$v.spz" --in-spz-axes rub --out "$TMP/rub$v.ply" >/dev/null || bad "rub v$v round trip"
  python3 - "$TMP/rub$v.ply" "$TMP/m.ply" <<'PY' && ok "rub v$v read back with --in-spz-axes rub is upright" || bad "rub v$v turned over"
import struct, sys
def ys(path):
    d = open(path, "rb").read(); e = d.index(b"end_header\n") + 11
    n = int([l for l in d[:e].decode().split("\n") if l.startswith("element vertex")][0].split()[2])
    k = len(d[e:]) // (4 * n)
    return [struct.unpack_from("<f", d, e + 4 * (k * i + 1))[0] for i in range(n)]
a, b = ys(sys.argv[1]), ys(sys.argv[2])
assert len(a) == len(b) and max(abs(x - y) for x, y in zip(a, b)) < 2.5e-4, max(abs(x - y) for x, y in zip(a, b))
PY
done

# render --path: frames without ffmpeg (PATH without it), then a stand-in ffmpeg
nopath="$TMP/nobin"; mkdir -p "$nopath"
for p in orbit spiral interp; do
  out=$(PATH="$nopath" "$BIN" render --ply "$run/point_cloud.ply" --data "$TMP/scene" --path $p --frames 5 --out "$TMP/$p" 2>&1) \
    && ok "render --path $p" || { bad "render --path $p"; echo "$out"; }
  n=$(ls "$TMP/$p"/frame_*.png 2>/dev/null | wc -l)
  [ "$n" -eq 5 ] && ok "$p: 5 frames" || bad "$p: $n frames"
  grep -q "ffmpeg is not on PATH" <<<"$out" && ok "$p: no ffmpeg is not an error" || bad "$p: ffmpeg message"
done
cmp -s "$TMP/orbit/frame_0000.png" "$TMP/orbit/frame_0001.png" && bad "orbit frames identical" || ok "orbit frames differ"
fake="$TMP/fakebin"; mkdir -p "$fake"
cat >"$fake/ffmpeg" <<'SH'
#!/bin/sh
echo "$@" >"$(dirname "$0")/args.txt"
for last; do :; done
echo video >"$last"
SH
chmod +x "$fake/ffmpeg"
PATH="$fake:$PATH" "$BIN" render --ply "$run/point_cloud.ply" --data "$TMP/scene" --path orbit --frames 3 --out "$TMP/vid" >"$TMP/vid.txt" 2>&1 \
  && ok "render with ffmpeg" || { bad "render with ffmpeg"; cat "$TMP/vid.txt"; }
[ -s "$TMP/vid/orbit.mp4" ] && ok "orbit.mp4 written" || bad "no orbit.mp4"
grep -q "frame_%04d.png" "$fake/args.txt" && grep -q -- "-framerate 30" "$fake/args.txt" && ok "ffmpeg arguments" || bad "ffmpeg args: $(cat "$fake/args.txt")"
ls "$TMP/vid" | grep -q tmp && bad "temporary video left" || ok "no temporary video left"
printf '#!/bin/sh\nexit 3\n' >"$fake/ffmpeg"
out=$(PATH="$fake:$PATH" "$BIN" render --ply "$run/point_cloud.ply" --data "$TMP/scene" --path orbit --frames 2 --out "$TMP/vid2" 2>&1) \
  && ok "failing ffmpeg is a warning" || bad "failing ffmpeg exit"
grep -q "ffmpeg failed (exit status 3)" <<<"$out" && ok "ffmpeg failure reported" || bad "ffmpeg failure text: $out"
[ -e "$TMP/vid2/orbit.mp4" ] && bad "mp4 after ffmpeg failed" || ok "no mp4 after ffmpeg failed"
expect_fail "render --path bogus" "unknown camera path 'bogus'" "$BIN" render --ply "$run/point_cloud.ply" --data "$TMP/scene" --path bogus --out "$TMP/b"
expect_fail "render --frames without --path" "--frames" "$BIN" render --ply "$run/point_cloud.ply" --data "$TMP/scene" --frames 3 --out "$TMP/b"
"$BIN" export --help | grep -q "usage: splat export" && ok "export --help" || bad "export --help"
"$BIN" render --help | grep -q -- "--path orbit|spiral|interp" && ok "render --help names --path" || bad "render --help"
finish
