# lib_e2e.sh — shared helpers for the end-to-end tests (sourced, not run).
set -u
BIN=${SPLAT_BIN:-build/splat}
DATA=${SPLAT_DATA:-../shared/data}
TMP=$(mktemp -d /tmp/splat-e2e-XXXXXX)
trap 'rm -rf "$TMP"' EXIT
fails=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
# expect_fail NAME PATTERN CMD...: CMD exits 1..125 (an error, not a crash) and prints PATTERN.
expect_fail() {
  local name=$1 pat=$2; shift 2
  local out rc
  out=$("$@" 2>&1); rc=$?
  if [ $rc -eq 0 ]; then bad "$name: exit 0, expected an error"; echo "$out" | tail -5; return; fi
  if [ $rc -ge 126 ]; then bad "$name: exit $rc (crash?)"; echo "$out" | tail -5; return; fi
  if ! grep -qF -- "$pat" <<<"$out"; then bad "$name: output lacks '$pat'"; echo "$out" | tail -8; return; fi
  ok "$name"
}
finish() { [ $fails -eq 0 ] && echo "all passed" || { echo "$fails failed"; exit 1; }; }
