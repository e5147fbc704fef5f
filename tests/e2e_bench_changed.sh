#!/usr/bin/env bash
# End to end (issue #26): `splat bench` rerun with changed settings names what differs and refuses
# the scene (its folder byte-identical), retrains it with --retrain-changed, and reuses a run whose
# settings match (also when only result-neutral keys such as trainer.log_every changed).
. "$(dirname "$0")/lib_e2e.sh"
"$BIN" synth --out "$TMP/scene" --size 16 --views 2,1,1 --samples 1 >/dev/null || bad "synth"
cat >"$TMP/chain.toml" <<TOML
[chain]
out = "$TMP/out"
set = ["backend.kind=cpu", "trainer.max_steps=4", "init.count=100", "output.save_renders=false"]
[scene.a]
path = "$TMP/scene"
TOML
"$BIN" bench "$TMP/chain.toml" >/dev/null 2>&1 && ok "bench runs" || bad "bench rc"
sums() { (cd "$1" && find . -type f -print0 | sort -z | xargs -0 sha256sum); }
before=$(sums "$TMP/out/a")
out=$("$BIN" bench "$TMP/chain.toml" --set trainer.log_every=1 2>&1)
grep -qF "a: complete already" <<<"$out" && grep -qF "with the same settings, reused" <<<"$out" &&
  ok "result-neutral change reuses the run" || { bad "reuse"; echo "$out" | tail -5; }
expect_fail "changed settings refused" "scene a: $TMP/out/a holds a run trained with other settings than the chain asks now: trainer.max_steps = 5 (the run has 4)" \
  "$BIN" bench "$TMP/chain.toml" --set trainer.max_steps=5
expect_fail "two changed keys named" "init.count = 50 (the run has 100)" \
  "$BIN" bench "$TMP/chain.toml" --set trainer.max_steps=5 --set init.count=50
[ "$(sums "$TMP/out/a")" = "$before" ] && ok "refused scene byte-identical" || bad "refused scene changed"
# an interrupted run (no result.toml) with other settings is refused too, not resumed
cp -r "$TMP/out/a" "$TMP/keep"
rm "$TMP/out/a/result.toml"
expect_fail "interrupted run with changed settings refused" "trainer.max_steps = 6 (the run has 4)" \
  "$BIN" bench "$TMP/chain.toml" --set trainer.max_steps=6
out=$("$BIN" bench "$TMP/chain.toml" --set trainer.max_steps=5 --retrain-changed 2>&1); rc=$?
[ $rc -eq 0 ] && grep -qF "settings changed (trainer.max_steps = 5 (the run has 4)): retraining" <<<"$out" &&
  grep -q "^max_steps = 5" "$TMP/out/a/config.toml" && ok "--retrain-changed retrains" ||
  { bad "--retrain-changed"; echo "$out" | tail -5; }
finish
