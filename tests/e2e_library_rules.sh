#!/usr/bin/env bash
# The library (src/ outside src/cli/) never ends the process, installs no signal handler and
# sets no process-wide OpenMP thread count, nothing outside src/backend/cpu/ includes from it
# but the CPU backend's own tests, and the CLI includes only splat.h of the library
# (tests/check_library_rules.py); the checker itself finds planted calls and includes, and ignores
# comments, strings, src/cli/ (for the calls) and the CPU backend's own files.
. "$(dirname "$0")/lib_e2e.sh"
check=tests/check_library_rules.py

if out=$(python3 "$check" .); then ok "no exit, signal handler, omp_set_num_threads or include of backend/cpu/ outside it"
else bad "library rules:"; echo "$out"; fi

mkdir -p "$TMP/src/io" "$TMP/src/cli" "$TMP/src/backend/cpu" "$TMP/src/backend/ref" "$TMP/src/backend/vulkan" "$TMP/tests"
printf '/* exit(1) */\nstatic const char *s = "signal(x)";\nint jpeg_error_exit(void);\n' >"$TMP/src/io/clean.c"
printf '#include <stdlib.h>\nvoid g(void) { exit(1); }\n' >"$TMP/src/cli/main.c"
printf '#include "backend/cpu/autothreads.h"\n' >"$TMP/src/backend/cpu/cpu_backend.c"
printf '#include "backend/ref/stages.h"\n/* #include "backend/cpu/stages.h" */\n// #include "../cpu/x.h"\n' >"$TMP/src/backend/ref/clean.c"
printf '#include "backend/cpu/autothreads.h"\n' >"$TMP/tests/test_autothreads.c"
python3 "$check" "$TMP" >/dev/null && ok "comments, strings, longer names, src/cli/ and src/backend/cpu/'s own includes pass" ||
  bad "false positive"
printf 'void h(int n) {\n  omp_set_num_threads(n);\n  sigaction (2, 0, 0);\n}\n' >"$TMP/src/io/bad.c"
printf '#include <stdio.h>\n#include "backend/cpu/autothreads.h"\n' >"$TMP/src/io/inc.c"
printf '#include "../cpu/cpu_backend.h"\n' >"$TMP/src/backend/vulkan/rel.c"
printf '\n\n  #  include <backend/cpu/stages.h>\n' >"$TMP/tests/test_loss.c"
out=$(python3 "$check" "$TMP")
[ $? -eq 1 ] && grep -q "src/io/bad.c:2: omp_set_num_threads(" <<<"$out" && grep -q "bad.c:3: sigaction(" <<<"$out" &&
  ok "planted calls found with file and line" || { bad "planted calls not found"; echo "$out"; }
grep -q "src/io/inc.c:2: #include backend/cpu/autothreads.h" <<<"$out" &&
  grep -q "src/backend/vulkan/rel.c:1: #include ../cpu/cpu_backend.h" <<<"$out" &&
  grep -q "tests/test_loss.c:3: #include backend/cpu/stages.h" <<<"$out" && [ "$(grep -c '#include' <<<"$out")" -eq 3 ] &&
  ok "planted includes of backend/cpu/ found with file and line" || { bad "planted includes not found"; echo "$out"; }

# The CLI goes through include/splat.h only: "splat.h", its own "cli/..." headers and system
# headers pass (also in comments); any other quoted include of src/cli is found with file and line.
r="$TMP/cli-rule"
mkdir -p "$r/src/cli"
printf '#include <stdio.h>\n#include "splat.h"\n#include "cli/cli.h"\n// #include "core/core.h"\n/* #include "io/image.h" */\n' \
  >"$r/src/cli/fine.c"
python3 "$check" "$r" >/dev/null && ok "the CLI may include splat.h, cli/ headers and system headers" ||
  bad "false positive on the CLI's includes"
printf '#include "cli/cli.h"\n#include "core/core.h"\n' >"$r/src/cli/cmd_x.c"
printf '#ifndef X_H\n#  include "train/train.h"\n#endif\n' >"$r/src/cli/x.h"
out=$(python3 "$check" "$r")
[ $? -eq 1 ] && grep -q 'src/cli/cmd_x.c:2: #include "core/core.h"' <<<"$out" &&
  grep -q 'src/cli/x.h:2: #include "train/train.h"' <<<"$out" && ! grep -q fine.c <<<"$out" &&
  ok "planted internal includes in src/cli found with file and line" || { bad "planted CLI includes not found"; echo "$out"; }
finish
