#!/usr/bin/env bash
# The library (src/ outside src/cli/) never ends the process, installs no signal handler and
# sets no process-wide OpenMP thread count (tests/check_library_rules.py); the checker itself
# finds a planted call and ignores comments, strings and src/cli/.
. "$(dirname "$0")/lib_e2e.sh"
check=tests/check_library_rules.py

if out=$(python3 "$check" .); then ok "no exit, signal handler or omp_set_num_threads in the library"
else bad "library rules:"; echo "$out"; fi

mkdir -p "$TMP/src/io" "$TMP/src/cli"
printf '/* exit(1) */\nstatic const char *s = "signal(x)";\nint jpeg_error_exit(void);\n' >"$TMP/src/io/clean.c"
printf '#include <stdlib.h>\nvoid g(void) { exit(1); }\n' >"$TMP/src/cli/main.c"
python3 "$check" "$TMP" >/dev/null && ok "comments, strings, longer names and src/cli/ pass" || bad "false positive"
printf 'void h(int n) {\n  omp_set_num_threads(n);\n  sigaction (2, 0, 0);\n}\n' >"$TMP/src/io/bad.c"
out=$(python3 "$check" "$TMP")
[ $? -eq 1 ] && grep -q "src/io/bad.c:2: omp_set_num_threads(" <<<"$out" && grep -q "bad.c:3: sigaction(" <<<"$out" &&
  ok "planted calls found with file and line" || { bad "planted calls not found"; echo "$out"; }
finish
