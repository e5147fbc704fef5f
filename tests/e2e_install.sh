#!/usr/bin/env bash
# make install PREFIX=...: the library (static and shared), include/splat.h and splat.pc; the
# example builds against the installed copy with pkg-config and runs, statically and shared, as
# the README's two lines build it (two different binaries). `make install` installs the build as it
# was made (its CUDA and VULKAN settings, recorded in BUILD/settings.mk: nothing is rebuilt), and
# splat.pc lists the libraries of that build; a CPU-only build (CUDA=0 VULKAN=0) installs too.
. "$(dirname "$0")/lib_e2e.sh"

build=$(dirname "$BIN")
command -v pkg-config >/dev/null || { bad "pkg-config is not installed (scripts/setup.sh installs it)"; finish; }
prefix="$TMP/prefix"
# no CUDA= or VULKAN= here: install takes the build's own settings
if make --no-print-directory BUILD="$build" install PREFIX="$prefix" >"$TMP/install.log" 2>&1; then
  ok "make install"; else bad "make install"; tail -20 "$TMP/install.log"; finish; fi
grep -qE -- ' -c -o .*\.o ' "$TMP/install.log" && bad "make install recompiled the build: $(grep -cE -- ' -c -o ' "$TMP/install.log") objects" ||
  ok "make install installs the build as it is (nothing recompiled)"
for f in lib/libsplat.a lib/libsplat.so include/splat.h lib/pkgconfig/splat.pc; do
  [ -e "$prefix/$f" ] && ok "installed $f" || bad "missing $f"
done
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
[ "$(pkg-config --modversion splat)" = "$("$BIN" version | awk '{print $2}')" ] && ok "splat.pc version" ||
  bad "splat.pc version $(pkg-config --modversion splat)"
# splat.pc against the build's settings: the CUDA runtime and libvulkan exactly when built in
pc_libs() { pkg-config --static --libs splat; }
check_pc() { # LABEL CUDA VULKAN
  local libs; libs=$(pc_libs)
  if [ "$2" = 1 ]; then grep -q -- -lcudart_static <<<"$libs" && ok "$1: splat.pc has the CUDA runtime" ||
    bad "$1: splat.pc lacks the CUDA runtime: $libs"
  else grep -q cuda <<<"$libs" && bad "$1: splat.pc names CUDA in a build without it: $libs" ||
    ok "$1: splat.pc without CUDA"; fi
  if [ "$3" = 1 ]; then grep -q -- -lvulkan <<<"$libs" && ok "$1: splat.pc has libvulkan" ||
    bad "$1: splat.pc lacks libvulkan: $libs"
  else grep -q vulkan <<<"$libs" && bad "$1: splat.pc names Vulkan in a build without it: $libs" ||
    ok "$1: splat.pc without Vulkan"; fi
  grep -q ORIGIN <<<"$libs" && bad "$1: splat.pc carries a build's run-time path: $libs" || true
}
setting() { sed -n "s/^$1 := //p" "$build/settings.mk" 2>/dev/null; }
check_pc "this build" "$(setting CUDA)" "$(setting VULKAN)"

cp examples/train_and_render.c "$TMP/"   # away from the source tree: only the installed header
src=$PWD
cd "$TMP"
# the README's two lines: static (pkg-config --static adds what libsplat.a needs; -l:libsplat.a
# picks the archive) and shared, each its own binary
if ${CC:-cc} -std=c11 train_and_render.c $(pkg-config --cflags splat) \
     $(pkg-config --static --libs splat | sed 's/-lsplat/-l:libsplat.a/') -o train_and_render_static 2>"$TMP/cc1.log"; then
  ok "static build with pkg-config"; else bad "static build"; cat "$TMP/cc1.log"; fi
./train_and_render_static "$TMP/s" 40 >"$TMP/s.log" 2>&1 && grep -q "test PSNR" "$TMP/s.log" && ok "static example runs" ||
  { bad "static example"; tail -5 "$TMP/s.log"; }
if ${CC:-cc} -std=c11 train_and_render.c $(pkg-config --cflags --libs splat) -o train_and_render 2>"$TMP/cc2.log"; then
  ok "shared build with pkg-config"; else bad "shared build"; cat "$TMP/cc2.log"; fi
[ -x train_and_render_static ] && [ -x train_and_render ] && ok "the static and the shared line write two binaries" ||
  bad "one of the two binaries is missing"
LD_LIBRARY_PATH="$prefix/lib" ldd ./train_and_render | grep -q "$prefix/lib/libsplat.so" && ok "linked to libsplat.so" ||
  bad "not linked to the installed libsplat.so"
ldd ./train_and_render_static | grep -q libsplat && bad "the static binary needs libsplat.so" ||
  ok "the static binary does not need libsplat.so"
LD_LIBRARY_PATH="$prefix/lib" ./train_and_render "$TMP/d" 40 >"$TMP/d.log" 2>&1 && grep -q "test PSNR" "$TMP/d.log" &&
  ok "shared example runs" || { bad "shared example"; tail -5 "$TMP/d.log"; }
cmp -s "$TMP/s/run/point_cloud.ply" "$TMP/d/run/point_cloud.ply" && ok "static and shared give the same model" ||
  bad "static and shared models differ"

# A CPU-only build (unless the build above is one): its own build folder, optimized lightly to
# keep this short; installed, its splat.pc names no GPU library and the example links with it.
if [ "$(setting CUDA)" = 0 ] && [ "$(setting VULKAN)" = 0 ]; then
  ok "the build above is CPU-only"
else
  cpu="$TMP/build-cpu" cpuprefix="$TMP/prefix-cpu"
  if make --no-print-directory -C "$src" BUILD="$cpu" CUDA=0 VULKAN=0 OPT=-O1 install PREFIX="$cpuprefix" \
       >"$TMP/install-cpu.log" 2>&1; then ok "make CUDA=0 VULKAN=0 install"
  else bad "make CUDA=0 VULKAN=0 install"; tail -20 "$TMP/install-cpu.log"; finish; fi
  export PKG_CONFIG_PATH="$cpuprefix/lib/pkgconfig"
  check_pc "CPU-only build" 0 0
  if ${CC:-cc} -std=c11 train_and_render.c $(pkg-config --cflags splat) \
       $(pkg-config --static --libs splat | sed 's/-lsplat/-l:libsplat.a/') -o ex_cpu 2>"$TMP/cc3.log"; then
    ok "CPU-only static build with pkg-config"; else bad "CPU-only static build"; cat "$TMP/cc3.log"; fi
  ./ex_cpu "$TMP/c" 20 >"$TMP/c.log" 2>&1 && grep -q "test PSNR" "$TMP/c.log" && ok "CPU-only example runs" ||
    { bad "CPU-only example"; tail -5 "$TMP/c.log"; }
fi
finish
