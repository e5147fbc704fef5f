#!/usr/bin/env bash
# Every C file of the library, the CLI, the tests, the fuzz targets and the example compiles with
# clang as well as with gcc (the build's compiler): `make fuzz` builds with clang, and a user may
# set CC=clang. Checked with clang -fsyntax-only, the build's warnings made errors; the sources
# see the same macros as the build (SPLAT_HAVE_*), so the code of every backend is checked.
. "$(dirname "$0")/lib_e2e.sh"
command -v clang >/dev/null || { echo "SKIPPED: no clang (Debian package clang; scripts/setup.sh installs it)"; exit 77; }
B=$(dirname "$BIN")
flags=(-fsyntax-only -std=c11 -Wall -Wextra -Wshadow -Wno-unused-parameter -Wno-sign-compare -Werror
       -fno-math-errno -fopenmp -D_GNU_SOURCE -DSPLAT_HAVE_CUDA=1 -DSPLAT_HAVE_VULKAN=1 -DSPLAT_HAVE_VIEW=1
       -Iinclude -Isrc -Itests -Itests/fuzz -I"$B/shaders" -I"$B/gen")
files=($(find src -name '*.c' | sort) tests/*.c tests/fuzz/*.c examples/*.c)
# shaders.c embeds the build's SPIR-V headers and view.c the viewer's page: without them (a build
# without the Vulkan backend or the viewer) those two are left out
[ -f "$B/shaders/project.spv.h" ] || files=("${files[@]/src\/backend\/vulkan\/shaders.c/}")
[ -f "$B/gen/cli/view_html.h" ] || files=("${files[@]/src\/cli\/view.c/}")
n=0; failed=0
for f in "${files[@]}"; do
  [ -n "$f" ] || continue
  n=$((n + 1))
  if ! out=$(clang "${flags[@]}" "$f" 2>&1); then
    failed=$((failed + 1)); bad "clang: $f"; echo "$out" | head -12
  fi
done
[ $failed -eq 0 ] && ok "clang compiles all $n C files (-Werror)"

# these flags do reject what gcc accepts and clang does not: the _Generic over a comparison of
# double lanes that once broke stage_math.h under clang (gcc: long lanes; clang: long long)
mkdir -p "$TMP/src"
printf '%s\n' 'typedef double v4d __attribute__((vector_size(32)));' 'typedef long v4l __attribute__((vector_size(32)));' \
  'int f(v4d a) { return _Generic(a < a, v4l: 1); }' \
  >"$TMP/src/planted.c"
gcc -fsyntax-only -std=c11 "$TMP/src/planted.c" >/dev/null 2>&1 || bad "gcc rejects the planted file (the test's premise)"
clang "${flags[@]}" "$TMP/src/planted.c" >/dev/null 2>&1 && bad "the planted gcc-only code passed clang" ||
  ok "the planted gcc-only code fails under clang"
finish
