#!/usr/bin/env bash
# A GPU sitting for refine.reorder (the Gaussians in Morton order after each refine) and sparse Adam at
# 3M Gaussians on lego. One binary does every variant (both are run-time switches): BIN_DIR holds
# splat and test_backend_ops built from the same commit (bench/stage.sh bin). Lego must be staged in
# /tmp/stage first (stage-lego-1..3). Prints: the CUDA parity harness's result (reorder is checked
# there bit for bit against the host), the steady 3M step (bench/many.sh: steps 8000-8500 of one
# warm-up, plain / reorder / sparse / reorder + sparse / plain again; a resumed run keeps its saved
# order, so reorder's runs sort at the refine of step 8100 and the first 100 steps are unsorted),
# then whole 20k-step runs at a
# 3M budget, profiled (the way the 3M bar is measured), with and without reorder (WHOLE="rosp ro splat"
# picks the wrappers: rosp = reorder + sparse, sp = sparse, bf = adam.moments16 (the moments in 16 bits
# bfloat16 pairs), bfsp = bf + sparse, f32 = float moments (splat alone: cuda's default, 16-bit); MANY_BINS the binaries of `many`, REUSE=1 its warm-up of an
# earlier call).
# `beer` instead (beer staged in /tmp/stage from stage-beer-1): the quality of sparse Adam's rule (a
# Gaussian in view takes the whole update) against the dense default on the capture where the old
# rule lost 0.6 dB, seeds 0 and 1 (bench/captured.sh); BEER="splat: bf:--set~adam.moments16=true" picks
# other variants (NAME:EXTRA, a ~ for each space in EXTRA); SCENES="beer fox" (fox staged from
# stage-fox-1), SEEDS, BEER_TIMEOUT (s a variant, default 280) as for bench/captured.sh.
# `synth`: no staged data: a synthetic object scene made there, trained with and without (WHOLE).
# `steady`: no staged data: each WHOLE variant (default "splat f32") twice, alternating, on a synthetic
#   scene from SYN_N (default 3M) random Gaussians with no refine for SYN_STEPS (1500): the update's
#   and the step's ms at a steady count in about 10 s a run.
# `defaults`: lego with its default recipe, each WHOLE variant (time and PSNR).
# `vk`: vulkan's reorder on the GPU: its parity, then a synthetic scene with reorder on and off, twice
#   (carry .gl; first `for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig` and export
#   VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json).
#   BIN_DIR=/tmp/bin12 bash bench/sit-reorder.sh [parity|many|whole|all|beer|synth|steady|defaults|vk]
set -u
cd "$(dirname "$0")/.." || exit 1
B=${BIN_DIR:-/tmp/bin12}
R=${OUT:-/tmp/sit-reorder}
mkdir -p "$R"
export LD_LIBRARY_PATH=$B
what=${1:-all}
# timed LOG CMD...: runs CMD into LOG and appends its wall time (the device image may lack /usr/bin/time)
timed() {
  local log=$1 t0
  shift
  t0=$(date +%s.%N)
  "$@" >"$log" 2>&1
  echo "$(date +%s.%N) $t0" | awk '{printf "%.2f s wall\n", $1 - $2}' >>"$log"
}
wrap() { printf '#!/bin/sh\nexec %s/splat "$@" %s\n' "$B" "$2" >"$B/$1"; chmod +x "$B/$1"; }
wrap ro "--set refine.reorder=true"
wrap nro "--set refine.reorder=false" # the order as made (reorder is the default since 0b8489e)
wrap sp "--set adam.sparse=true"
wrap rosp "--set refine.reorder=true --set adam.sparse=true"
wrap bf "--set adam.moments16=true"
wrap f32 "--set adam.moments16=false" # float moments (cuda defaults to 16-bit ones)
wrap bfsp "--set adam.moments16=true --set adam.sparse=true"
if [ "$what" = parity ] || [ "$what" = all ]; then
  timeout 200 "$B/test_backend_ops" --backend cuda >"$R/parity.txt" 2>&1
  echo "parity rc $?"; grep -E "FAIL" "$R/parity.txt" | head; grep -E "reorder" "$R/parity.txt" | head -8; tail -1 "$R/parity.txt"
fi
if [ "$what" = many ] || [ "$what" = all ]; then
  STAGE=/tmp/stage BINS="${MANY_BINS:-$B/splat $B/ro $B/sp $B/rosp $B/splat}" STEPS=500 RESULTS=$R/many timeout 300 \
    bash bench/many.sh 2>&1 | grep -E "==|^  (rasterize|backward_raster|project_back|refine)|busy" | tee "$R/many.txt"
fi
if [ "$what" = whole ] || [ "$what" = all ]; then
  for bin in ${WHOLE:-ro splat}; do
    rm -rf /tmp/whole-$bin
    timed "$R/whole-$bin.log" "$B/$bin" train --config configs/lego.toml --set data.path=/tmp/stage/lego \
      --set refine.max_gaussians=3000000 --set backend.profile=true --set output.save_renders=false \
      --set output.run_dir=/tmp/whole-$bin
    echo "== whole 3M run, $bin: $(grep -E '^test: PSNR' "$R/whole-$bin.log" | head -1)"
    grep -E "^busy [0-9.]+ ms of|^busy \(sum|s wall|^(project|rasterize|backward_raster|project_back|refine|sort) " "$R/whole-$bin.log"
    grep -c "reorder:" /tmp/whole-$bin/log.txt | sed 's/^/  reorders: /'
  done | tee "$R/whole.txt"
fi
if [ "$what" = defaults ]; then # lego with the default recipe (280k), each WHOLE variant: time and quality
  for bin in ${WHOLE:-rosp splat}; do
    rm -rf /tmp/def-$bin
    timed "$R/def-$bin.log" "$B/$bin" train --config configs/lego.toml --set data.path=/tmp/stage/lego \
      --set backend.profile=true --set output.save_renders=false --set output.run_dir=/tmp/def-$bin
    echo "== lego defaults, $bin: $(grep -E '^test: PSNR' "$R/def-$bin.log" | head -1)"
    grep -E "^busy [0-9.]+ ms of|s wall" "$R/def-$bin.log"
  done | tee "$R/defaults.txt"
fi
if [ "$what" = vk ]; then # vulkan's reorder on the GPU (the caller installs the loader and sets VK_DRIVER_FILES)
  timeout 120 "$B/test_backend_ops" --backend vulkan --filter '*reorder*' >"$R/parity-vk.txt" 2>&1
  echo "vulkan reorder parity rc $?: $(tail -1 "$R/parity-vk.txt")"
  WHOLE=${WHOLE:-splat nro splat nro} SYN_STEPS=${SYN_STEPS:-3000} SYN_EXTRA="--set backend.kind=vulkan ${SYN_EXTRA:-}"
fi
if [ "$what" = synth ] || [ "$what" = vk ]; then # no staged scene: a synthetic one made there (SYN_SIZE, SYN_N, SYN_STEPS)
  rm -rf /tmp/syn && "$B/splat" synth --out /tmp/syn --size "${SYN_SIZE:-400}" --views 100,0,25 >"$R/synth.log" 2>&1
  for bin in ${WHOLE:-rosp splat}; do
    rm -rf /tmp/syn-$bin
    "$B/$bin" train /tmp/syn --set refine.max_gaussians="${SYN_N:-1000000}" --set trainer.max_steps="${SYN_STEPS:-4000}" \
      --set backend.profile=true --set output.save_renders=false --set output.run_dir=/tmp/syn-$bin \
      ${SYN_EXTRA:-} >"$R/syn-$bin.log" 2>&1
    echo "== synthetic scene, $bin (rc $?): $(grep -E '^test: PSNR' "$R/syn-$bin.log" | head -1)"
    grep -E "^busy [0-9.]+ ms of|^busy \(sum|^(project|rasterize|backward_raster|project_back|refine|sort) " "$R/syn-$bin.log"
    grep "reorder:" /tmp/syn-$bin/log.txt | tail -2
  done | tee "$R/synth.txt"
fi
if [ "$what" = steady ]; then # no staged scene: the update at a steady 3M (init.count = the budget, no refine)
  rm -rf /tmp/syn3 && "$B/splat" synth --out /tmp/syn3 --size 200 --views 20,0,5 >"$R/steady-synth.log" 2>&1
  for rep in 1 2; do
    for bin in ${WHOLE:-splat f32}; do
      rm -rf /tmp/steady-$bin
      "$B/$bin" train /tmp/syn3 --set init.count="${SYN_N:-3000000}" --set refine.max_gaussians="${SYN_N:-3000000}" \
        --set refine.start=100000 --set trainer.max_steps="${SYN_STEPS:-1500}" --set backend.profile=true \
        --set output.save_renders=false --set output.save_ply=false --set output.run_dir=/tmp/steady-$bin \
        >"$R/steady-$bin-$rep.log" 2>&1
      echo "== steady ${SYN_N:-3000000}, $bin (rc $?): $(grep -E '^(project_back\+adam|busy \(sum)' "$R/steady-$bin-$rep.log" |
        awk '{print $1, $(NF-1)}' | tr '\n' ' ')$(grep -E '^test: PSNR' "$R/steady-$bin-$rep.log" | cut -c1-22)"
    done
  done | tee "$R/steady.txt"
fi
if [ "$what" = beer ]; then
  for run in ${BEER:-"splat:" "sp:--set adam.sparse=true"}; do
    bin=${run%%:*}; extra=${run#*:}; extra=${extra//\~/ }
    STAGE=/tmp/stage BIN=$B/splat SCENES="${SCENES:-beer}" SEEDS="${SEEDS:-0 1}" EXTRA="--set output.save_renders=false $extra" \
      RESULTS=$R/beer-$bin timeout "${BEER_TIMEOUT:-280}" bash bench/captured.sh 2>&1 | grep -E "^\| (beer|fox)" | sed "s#^#$bin #"
  done | tee "$R/beer.txt"
fi
