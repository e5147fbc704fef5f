#!/usr/bin/env bash
# End to end: the viewer. `splat view` on a small CPU-trained model answers bad requests (unknown
# path, "..", huge header and URL, malformed request, 300 connections) with HTTP errors and keeps
# serving; in headless Chromium the page's test views match `splat render` at PSNR >= 35 dB, the
# background switch and an orbit drag change the picture; `splat train --view` shows the step
# number rising. Without a browser (or without the viewer in the build) it prints SKIPPED and
# exits 77. tests/e2e_view.py does the HTTP and browser work.
. "$(dirname "$0")/lib_e2e.sh"
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
if "$BIN" view "$TMP" 2>&1 | grep -q "has no viewer"; then
  echo "SKIPPED: this splat was built without the viewer (VIEW=0)"; exit 77
fi

"$BIN" synth --out "$TMP/scene" --size 64 --views 12,2,2 --samples 2 >/dev/null || bad synth
cat >"$TMP/c.toml" <<TOML
[data]
path = "$TMP/scene"
[trainer]
max_steps = 300
[init]
count = 2000
[output]
run_dir = "$TMP/run"
[backend]
kind = "cpu"
TOML
"$BIN" train --config "$TMP/c.toml" >"$TMP/train.log" 2>&1 || { bad "train"; tail -5 "$TMP/train.log"; }
"$BIN" render --ply "$TMP/run/point_cloud.ply" --data "$TMP/scene" --out "$TMP/renders" >/dev/null || bad render

# Bad command lines: clear errors, no crash.
expect_fail "view without a model" "give a run folder" "$BIN" view
expect_fail "view of a missing model" "nowhere.ply" "$BIN" view "$TMP/nowhere.ply"
expect_fail "view with a bad port" "--port must be" "$BIN" view "$TMP/run" --port 99999
expect_fail "view with a bad host" "--host must be" "$BIN" view "$TMP/run" --port 0 --host nohost
expect_fail "train with a bad --view port" "--view takes a port" "$BIN" train --config "$TMP/c.toml" --view=x

# start_server LOG CMD...: runs CMD in the background, waits for its "viewer: URL" line.
start_server() {
  local log=$1; shift
  "$@" >"$log" 2>"$log.err" &
  SERVER=$!
  URL=""
  for _ in $(seq 100); do
    URL=$(sed -n 's/^viewer: //p' "$log")
    [ -n "$URL" ] && return 0
    kill -0 $SERVER 2>/dev/null || break
    sleep 0.1
  done
  bad "no viewer address from: $*"; cat "$log.err" | tail -5
  return 1
}

if start_server "$TMP/view.log" "$BIN" view "$TMP/run" --port 0; then
  "$PY" tests/e2e_view.py bad "$URL" || fails=$((fails + 1))
  kill -0 $SERVER 2>/dev/null && ok "the server survived the bad requests" || bad "the server died"
  "$PY" tests/e2e_view.py page "$URL" "$TMP/renders/test"; rc=$?
  [ $rc -eq 77 ] && { kill $SERVER; wait $SERVER 2>/dev/null; echo "SKIPPED: no headless browser here"; exit 77; }
  [ $rc -eq 0 ] || fails=$((fails + 1))
  kill -INT $SERVER; wait $SERVER; rc=$?
  [ $rc -eq 0 ] && ok "Ctrl-C stops the viewer (exit 0)" || bad "viewer exit status $rc after Ctrl-C"
fi
grep -q "warning" "$TMP/view.log.err" && bad "a warning on 127.0.0.1" || ok "no warning on 127.0.0.1"

# Live: a longer CPU run with --view; the page must see the step number rise.
if start_server "$TMP/live.log" "$BIN" train --config "$TMP/c.toml" --set output.run_dir="$TMP/live" \
     --set trainer.max_steps=100000 --view 0; then
  "$PY" tests/e2e_view.py live "$URL" || fails=$((fails + 1))
  kill -INT $SERVER; wait $SERVER; rc=$?
  [ $rc -eq 130 ] && ok "Ctrl-C stops the live run cleanly (130)" || bad "live run exit status $rc"
  [ -f "$TMP/live/checkpoint.bin" ] && ok "the live run kept its checkpoint" || bad "no checkpoint after the live run"
fi
finish
