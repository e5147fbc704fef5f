#!/usr/bin/env bash
# End to end: `splat bench` over the shared lego and mic with short runs writes every scene's run
# folder, summary.toml / summary.md (with the mean) and curves.png; a second run skips both; a
# chain with mistakes names them with their lines and trains nothing; Ctrl-C during the second
# scene leaves the first byte-identical.
. "$(dirname "$0")/lib_e2e.sh"
nerf="$DATA/nerf_synthetic"
[ -f "$nerf/lego/transforms_train.json" ] && [ -f "$nerf/mic/transforms_train.json" ] || {
  echo "no lego/mic under $nerf"; exit 1; }
cat >"$TMP/chain.toml" <<TOML
[chain]
out = "$TMP/out"
set = ["backend.kind=cpu", "trainer.max_steps=60", "trainer.eval_every=30", "init.count=2000",
       "refine.start=20", "refine.every=20", "data.eval_split=test", "output.save_renders=false"]

[scene.lego]
path = "$nerf/lego"

[scene.mic]
path = "$nerf/mic"
set = ["trainer.log_every=20"]
TOML
"$BIN" bench "$TMP/chain.toml" >"$TMP/b1.log" 2>&1 && ok "bench runs" || { bad "bench rc"; tail -20 "$TMP/b1.log"; }
for s in lego mic; do
  grep -q 'status = "complete"' "$TMP/out/$s/result.toml" 2>/dev/null && ok "$s complete" || bad "$s not complete"
done
for f in summary.toml summary.md curves.png; do [ -s "$TMP/out/$f" ] && ok "has $f" || bad "lacks $f"; done
python3 - "$TMP/out" <<'PY' && ok "summary agrees with the scenes' results" || bad "summary check"
import sys, re, os
out = sys.argv[1]
def metric(path, key):
    m = re.search(r'^%s = (\S+)' % key, open(path).read(), re.M)
    return float(m.group(1))
summ = open(os.path.join(out, 'summary.toml')).read()
vals = []
for s in ('lego', 'mic'):
    p = metric(os.path.join(out, s, 'result.toml'), 'test_psnr')
    block = summ.split('[scene.%s]' % s)[1]
    got = float(re.search(r'^psnr = (\S+)', block, re.M).group(1))
    assert abs(got - p) < 1e-9, (s, got, p)
    assert 8 < p < 40, p
    vals.append(p)
mean = float(re.search(r'^\[mean\]\npsnr = (\S+)', summ, re.M).group(1))
assert abs(mean - sum(vals) / 2) < 0.001, (mean, vals)
md = open(os.path.join(out, 'summary.md')).read()
assert '| lego | complete |' in md and '| mic | complete |' in md and '**mean**' in md, md
PY
# Again: nothing to do.
sum1=$(cd "$TMP/out" && find lego mic -type f | sort | xargs md5sum)
"$BIN" bench "$TMP/chain.toml" >"$TMP/b2.log" 2>&1 && ok "second run" || bad "second run rc"
[ "$(grep -c 'complete already' "$TMP/b2.log")" = 2 ] && ok "second run skips both" || { bad "no skip"; cat "$TMP/b2.log"; }
sum2=$(cd "$TMP/out" && find lego mic -type f | sort | xargs md5sum)
[ "$sum1" = "$sum2" ] && ok "skipped scenes untouched" || bad "skipped scenes changed"

# Mistakes: each named with its line, nothing trained.
cat >"$TMP/bad.toml" <<TOML
[chain]
out = "$TMP/badout"
set = ["trainer.max_stepz=5"]
[scene.lego]
path = "$TMP/nowhere"
colour = "red"
[scenes.mic]
TOML
expect_fail "bad chain" "bad.toml:3: chain.set trainer.max_stepz: unknown key (did you mean trainer.max_steps?)" "$BIN" bench "$TMP/bad.toml"
out=$("$BIN" bench "$TMP/bad.toml" 2>&1)
for pat in "bad.toml:5:" "bad.toml:6:" "bad.toml:7:"; do
  grep -qF "$pat" <<<"$out" && ok "bad chain names $pat" || { bad "bad chain lacks $pat"; echo "$out"; }
done
[ ! -e "$TMP/badout" ] && ok "bad chain wrote nothing" || bad "bad chain wrote $TMP/badout"

# Ctrl-C in the second scene: the first stays byte-identical, the summary lists it.
sed -e 's/"trainer.max_steps=60", //' "$TMP/chain.toml" >"$TMP/int.toml"
sed -i 's|^\[scene.mic\]|[scene.mic]\n# long|; s|set = \["trainer.log_every=20"\]|set = ["trainer.max_steps=100000"]|' "$TMP/int.toml"
sed -i 's|^\[scene.lego\]|[scene.lego]\nset = ["trainer.max_steps=60"]|' "$TMP/int.toml"
"$BIN" bench "$TMP/int.toml" --out "$TMP/int" >"$TMP/int.log" 2>&1 &
pid=$!
for i in $(seq 1 600); do grep -q "initialized" "$TMP/int/mic/log.txt" 2>/dev/null && break; sleep 0.2; done
suml=$(cd "$TMP/int" && find lego -type f | sort | xargs md5sum)
sleep 1
kill -INT $pid
wait $pid; rc=$?
[ $rc -eq 130 ] && ok "Ctrl-C exit status 130" || { bad "Ctrl-C exit status $rc"; tail -5 "$TMP/int.log"; }
suml2=$(cd "$TMP/int" && find lego -type f | sort | xargs md5sum)
[ "$suml" = "$suml2" ] && ok "finished scene intact after Ctrl-C" || bad "finished scene changed"
grep -q '| lego | complete |' "$TMP/int/summary.md" && ok "summary keeps the finished scene" || bad "summary after Ctrl-C"
grep -q 'status = "interrupted"' "$TMP/int/mic/result.toml" && ok "interrupted scene saved" || bad "mic not saved"
finish
