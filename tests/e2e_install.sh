#!/usr/bin/env bash
# make install PREFIX=...: the library (static and shared), include/splat.h and splat.pc; the
# example builds against the installed copy with pkg-config and runs, statically and shared.
. "$(dirname "$0")/lib_e2e.sh"

build=$(dirname "$BIN")
command -v pkg-config >/dev/null || { bad "pkg-config is not installed (scripts/setup.sh installs it)"; finish; }
prefix="$TMP/prefix"
# the CUDA setting of the build being tested (make test passes it), so nothing is rebuilt
cuda=${SPLAT_CUDA:-$([ -d "$build/obj/src/backend/cuda" ] && echo 1 || echo 0)}
if make --no-print-directory -s BUILD="$build" CUDA="$cuda" install PREFIX="$prefix" >"$TMP/install.log" 2>&1; then
  ok "make install"; else bad "make install"; tail -20 "$TMP/install.log"; finish; fi
for f in lib/libsplat.a lib/libsplat.so include/splat.h lib/pkgconfig/splat.pc; do
  [ -e "$prefix/$f" ] && ok "installed $f" || bad "missing $f"
done
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
[ "$(pkg-config --modversion splat)" = "$("$BIN" version | awk '{print $2}')" ] && ok "splat.pc version" ||
  bad "splat.pc version $(pkg-config --modversion splat)"
cp examples/train_and_render.c "$TMP/"   # away from the source tree: only the installed header
cd "$TMP"
# static: pkg-config --static adds the libraries libsplat.a needs; -l:libsplat.a picks the archive
if ${CC:-cc} -std=c11 train_and_render.c $(pkg-config --cflags splat) -o ex_static \
     $(pkg-config --static --libs splat | sed 's/-lsplat\b/-l:libsplat.a/') 2>"$TMP/cc1.log"; then
  ok "static build with pkg-config"; else bad "static build"; cat "$TMP/cc1.log"; fi
./ex_static "$TMP/s" 40 >"$TMP/s.log" 2>&1 && grep -q "test PSNR" "$TMP/s.log" && ok "static example runs" ||
  { bad "static example"; tail -5 "$TMP/s.log"; }
# shared: plain pkg-config, found at run time through LD_LIBRARY_PATH
if ${CC:-cc} -std=c11 train_and_render.c $(pkg-config --cflags --libs splat) -o ex_shared 2>"$TMP/cc2.log"; then
  ok "shared build with pkg-config"; else bad "shared build"; cat "$TMP/cc2.log"; fi
LD_LIBRARY_PATH="$prefix/lib" ldd ./ex_shared | grep -q "$prefix/lib/libsplat.so" && ok "linked to libsplat.so" ||
  bad "not linked to the installed libsplat.so"
LD_LIBRARY_PATH="$prefix/lib" ./ex_shared "$TMP/d" 40 >"$TMP/d.log" 2>&1 && grep -q "test PSNR" "$TMP/d.log" &&
  ok "shared example runs" || { bad "shared example"; tail -5 "$TMP/d.log"; }
cmp -s "$TMP/s/run/point_cloud.ply" "$TMP/d/run/point_cloud.ply" && ok "static and shared give the same model" ||
  bad "static and shared models differ"
finish
