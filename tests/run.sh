#!/usr/bin/env bash
# Runs every test binary in DIR whose name starts with PREFIX (default test_) and every
# end-to-end script, then prints one summary line. PREFIX gpu_test_ is the GPU set (make gpu-test):
# the CUDA-only tests, the parity harness (test_backend_ops) and the backends' end-to-end script.
# With a third argument LABEL (e.g. "sanitizer") the end-to-end scripts are left out and the
# summary line starts with LABEL. An end-to-end script that exits 77 could not run here (a tool or
# the network missing): it counts as skipped, neither passed nor failed.
dir=${1:-build/tests}
prefix=${2:-test_}
label=${3:-}
export SPLAT_BIN=${SPLAT_BIN:-$(cd "$dir/.." && pwd)/splat}
passed=0; failed=0; skipped=0; failed_names=(); skipped_names=()
bins=("$dir"/"$prefix"*)
[ "$prefix" = gpu_test_ ] && bins+=("$dir/test_backend_ops")
for t in "${bins[@]}"; do
  [ -x "$t" ] || continue
  [[ "$t" == *.d ]] && continue
  name=$(basename "$t")
  echo "== $name"
  out=$("$t" 2>&1); rc=$?
  # SPLAT_TEST_LOGS=DIR keeps each binary's whole output (the harness's PASS lines carry the errors)
  [ -n "${SPLAT_TEST_LOGS:-}" ] && mkdir -p "$SPLAT_TEST_LOGS" && printf '%s\n' "$out" >"$SPLAT_TEST_LOGS/$name.log"
  echo "$out" | grep -E '^\[ +(OK|FAILED|ERROR|SKIPPED) +\]|^\[==========\]' | grep -v ' OK ' || true
  p=$(echo "$out" | sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' | tail -1)
  f=$(echo "$out" | sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' | tail -1)
  p=${p:-0}; f=${f:-0}
  if [ $rc -ne 0 ] && [ "$f" -eq 0 ]; then f=1; echo "$out" | tail -20; fi
  [ "$f" -gt 0 ] && { failed_names+=("$name"); echo "$out" | grep -E 'FAIL|error|Error' | head -20; }
  passed=$((passed + p)); failed=$((failed + f))
done
# End-to-end scripts: tests/e2e_*.sh with the unit tests, the backends' one with the GPU set.
if [ -n "$label" ]; then scripts=(); elif [ "$prefix" = "test_" ]; then scripts=(tests/e2e_*.sh); else scripts=(tests/e2e_backends.sh); fi
for s in "${scripts[@]}"; do
  [ -f "$s" ] || continue
  name=$(basename "$s")
  echo "== $name"
  out=$(bash "$s" 2>&1); rc=$?
  # exit 77: the script cannot run here (e.g. no browser); counted apart, neither passed nor failed
  if [ $rc -eq 0 ]; then passed=$((passed + 1)); echo "$out" | tail -3
  elif [ $rc -eq 77 ]; then skipped=$((skipped + 1)); skipped_names+=("$name"); echo "$out" | grep -E '^SKIPPED' | tail -1
  else failed=$((failed + 1)); failed_names+=("$name"); echo "$out" | tail -30; echo "$out" | grep -E '^FAIL' ; fi
done
[ ${#skipped_names[@]} -gt 0 ] && echo "skipped: ${skipped_names[*]}"
[ ${#failed_names[@]} -gt 0 ] && echo "failed: ${failed_names[*]}"
echo "${label:+$label }tests: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
