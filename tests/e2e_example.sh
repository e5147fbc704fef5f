#!/usr/bin/env bash
# examples/train_and_render.c, built against include/splat.h only: it makes the demo scene,
# trains 300 steps, scores the test views, renders a new view and exports .spz through the API.
. "$(dirname "$0")/lib_e2e.sh"

EX=$(dirname "$BIN")/examples/train_and_render
[ -x "$EX" ] || { bad "no $EX (make examples)"; finish; }
if out=$("$EX" "$TMP" 300 2>&1); then ok "example runs"; else bad "example failed"; echo "$out" | tail -10; fi
echo "$out" | tail -3
psnr=$(echo "$out" | sed -n 's/.*test PSNR \([0-9.]*\) dB.*/\1/p')
awk -v p="${psnr:-0}" 'BEGIN { exit !(p >= 18) }' && ok "test PSNR $psnr dB >= 18 after 300 steps" ||
  bad "test PSNR '${psnr}' below 18 dB"
head -c 2 "$TMP/view.ppm" | grep -q P6 && ok "view.ppm written" || bad "no view.ppm"
[ -s "$TMP/model.spz" ] && [ -s "$TMP/run/point_cloud.ply" ] && ok "model.spz and the run folder" ||
  bad "exports missing"
# the example's binary reaches the library through splat.h only: no internal sp_ symbols are
# referenced by its own object code
if command -v nm >/dev/null; then
  objdir=$(mktemp -d "$TMP/obj.XXXX")
  ${CC:-cc} -std=c11 -Iinclude -c examples/train_and_render.c -o "$objdir/ex.o" &&
    ! nm -u "$objdir/ex.o" | grep -q ' sp_' && ok "example calls splat_* only" || bad "example uses internals"
fi
finish
