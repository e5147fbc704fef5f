#!/usr/bin/env bash
# Data-parallel benchmark on a 2-GPU machine (docs/scale.md):
#  (a) full-resolution lego (800x800, 30k views seen, profiling on): 1 GPU, then 2 GPUs in one process;
#      whole-command time, test PSNR, Gaussians, and the speed-up;
#  (b) deterministic mode, 3000 views seen: 2 GPUs in one process twice, once more with the
#      all-reduce in one piece (backend.reduce_chunks=1), then 2 processes x 1 GPU (started with
#      SPLAT_RANK / SPLAT_WORLD_SIZE / SPLAT_DIST_FILE, no mpirun), and `cmp` of the four
#      point_cloud.ply files. AB=1 adds a full 2-GPU run with reduce_chunks=1 (the overlap's gain).
#   STAGE=/tmp/stage BIN=build-gpu/splat bench/multi_gpu.sh     (STAGE holds lego/, full resolution)
# NCCL is loaded at run time (libnccl.so.2); when the loader cannot find it, the lib folder of pip's
# nvidia-nccl package is put on LD_LIBRARY_PATH. NCCL_NVLS_ENABLE is left as the machine sets it
# (keep it 0 where NVLink multicast must stay off). Every number goes to stdout as "key: value" lines
# for bench/RESULTS.md; logs go to $RESULTS (default $OUT or /tmp/bench-out).
set -uo pipefail
cd "$(dirname "$0")/.."
STAGE=${STAGE:-/tmp/stage}
BIN=${BIN:-build-gpu/splat}
RESULTS=${RESULTS:-${OUT:-/tmp/bench-out}}
RUNS=${RUNS:-/tmp/runs}
FULL_STEPS=${FULL_STEPS:-30000}
DET_STEPS=${DET_STEPS:-3000}
mkdir -p "$RESULTS" "$RUNS"

# NCCL: the system's, else pip's nvidia-nccl
if ! ldconfig -p 2>/dev/null | grep -q 'libnccl.so.2' && [ -z "${NCCL_LIB:-}" ]; then
  NCCL_LIB=$(python3 -c "import nvidia.nccl,os;print(os.path.join(os.path.dirname(nvidia.nccl.__file__),'lib'))" 2>/dev/null)
  if [ -z "$NCCL_LIB" ] || [ ! -e "$NCCL_LIB/libnccl.so.2" ]; then
    NCCL_LIB=$(python3 -c "import site;print('\n'.join(site.getsitepackages()))" 2>/dev/null |
      while read -r d; do [ -e "$d/nvidia/nccl/lib/libnccl.so.2" ] && echo "$d/nvidia/nccl/lib" && break; done)
  fi
fi
if [ -n "${NCCL_LIB:-}" ]; then export LD_LIBRARY_PATH="$NCCL_LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; fi
echo "nccl_lib: ${NCCL_LIB:-system}"
echo "nccl_nvls_enable: ${NCCL_NVLS_ENABLE:-unset}"
nvidia-smi -L 2>/dev/null | sed 's/^/gpu: /'

# run NAME DEVICES STEPS EXTRA...: one process; prints the whole-command time and the result
run() {
  local name=$1 devices=$2 steps=$3
  shift 3
  local dir=$RUNS/$name
  rm -rf "$dir"
  local t0 t1
  t0=$(date +%s.%N)
  "$BIN" train --config configs/lego.toml --set experiment.name=$name --set data.path="$STAGE/lego" \
    --set backend.kind=cuda --set backend.devices=$devices --set trainer.max_steps=$steps \
    --set output.run_dir="$dir" "$@" >"$RESULTS/$name.log" 2>&1
  local rc=$?
  t1=$(date +%s.%N)
  report "$name" "$rc" "$t0" "$t1" "$dir"
}

report() {
  local name=$1 rc=$2 t0=$3 t1=$4 dir=$5
  echo "$name.exit: $rc"
  echo "$name.whole_command_s: $(python3 -c "print(f'{$t1 - $t0:.1f}')")"
  if [ -f "$dir/result.toml" ]; then
    grep -E '^(test_psnr|test_ssim|num_gaussians|train_seconds|total_seconds|peak_memory_bytes) ' "$dir/result.toml" |
      sed "s/^\([a-z_]*\) = /$name.\1: /"
    cp "$dir/result.toml" "$RESULTS/$name-result.toml"
  else
    tail -5 "$RESULTS/$name.log" | sed "s/^/$name.log: /"
  fi
}

# (a) speed: 1 GPU against 2
run full-1gpu 1 "$FULL_STEPS" --set backend.profile=true
run full-2gpu 2 "$FULL_STEPS" --set backend.profile=true
python3 - "$RESULTS" <<'PY'
import sys, re, os
def get(name, key):
    try:
        t = open(os.path.join(sys.argv[1], name + "-result.toml")).read()
        return float(re.search(r'^%s = ([0-9.eE+-]+)' % key, t, re.M).group(1))
    except Exception:
        return None
a, b = get("full-1gpu", "total_seconds"), get("full-2gpu", "total_seconds")
pa, pb = get("full-1gpu", "test_psnr"), get("full-2gpu", "test_psnr")
if a and b: print(f"speedup_total_seconds_2gpu_vs_1gpu: {a / b:.2f}")
if pa is not None and pb is not None: print(f"psnr_delta_2gpu_minus_1gpu_db: {pb - pa:+.3f}")
PY

# AB=1: 2 GPUs again with the all-reduce in one piece (backend.reduce_chunks=1: no overlap with Adam)
if [ "${AB:-0}" = 1 ]; then
  run full-2gpu-chunks1 2 "$FULL_STEPS" --set backend.profile=true --set backend.reduce_chunks=1
fi

# (b) deterministic: 2 GPUs twice, once more with the all-reduce in one piece, 2 processes x 1 GPU,
# cmp of the .ply files
run det-2gpu-a 2 "$DET_STEPS" --set backend.deterministic=true --set backend.check_replicas=true
run det-2gpu-b 2 "$DET_STEPS" --set backend.deterministic=true --set backend.check_replicas=true
run det-2gpu-chunks1 2 "$DET_STEPS" --set backend.deterministic=true --set backend.check_replicas=true \
  --set backend.reduce_chunks=1
dir=$RUNS/det-2proc
rm -rf "$dir"
idf=$RUNS/det-2proc.id
rm -f "$idf"
t0=$(date +%s.%N)
for rank in 1 0; do
  SPLAT_RANK=$rank SPLAT_WORLD_SIZE=2 SPLAT_LOCAL_RANK=$rank SPLAT_DIST_FILE="$idf" \
    "$BIN" train --config configs/lego.toml --set experiment.name=det-2proc --set data.path="$STAGE/lego" \
    --set backend.kind=cuda --set backend.devices=1 --set trainer.max_steps="$DET_STEPS" \
    --set backend.deterministic=true --set backend.check_replicas=true --set output.run_dir="$dir" \
    >"$RESULTS/det-2proc-rank$rank.log" 2>&1 &
  eval "pid$rank=\$!"
done
wait "$pid0"; rc0=$?
wait "$pid1"; rc1=$?
t1=$(date +%s.%N)
echo "det-2proc.rank1_exit: $rc1"
cp "$RESULTS/det-2proc-rank0.log" "$RESULTS/det-2proc.log"
report det-2proc "$rc0" "$t0" "$t1" "$dir"
a=$RUNS/det-2gpu-a/point_cloud.ply b=$RUNS/det-2gpu-b/point_cloud.ply c=$RUNS/det-2proc/point_cloud.ply
cmp "$a" "$b" >/dev/null 2>&1 && echo "cmp_2gpu_runs: identical" || echo "cmp_2gpu_runs: DIFFER ($(cmp "$a" "$b" 2>&1 | head -1))"
cmp "$a" "$c" >/dev/null 2>&1 && echo "cmp_2gpu_vs_2proc: identical" || echo "cmp_2gpu_vs_2proc: DIFFER ($(cmp "$a" "$c" 2>&1 | head -1))"
d=$RUNS/det-2gpu-chunks1/point_cloud.ply
cmp "$a" "$d" >/dev/null 2>&1 && echo "cmp_chunks4_vs_chunks1: identical" || echo "cmp_chunks4_vs_chunks1: DIFFER ($(cmp "$a" "$d" 2>&1 | head -1))"
sha256sum "$a" "$b" "$c" "$d" 2>/dev/null | sed 's/^/sha256: /'
