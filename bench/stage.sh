#!/usr/bin/env bash
# Gets the full-resolution scenes and a GPU build ready for the device machine, whose calls carry at
# most 64 MiB of the working tree each: the scenes travel in several folders that consecutive calls
# copy into one place there.
#
#   LEGO_GIT=... MIC_GIT=... FOX_GIT=... BEER_GIT=... bench/stage.sh extract
#       the scenes of ../shared/data/README.md ("Full-resolution originals") from git directories of
#       those repositories into data/<scene> (ignored): lego and mic with train and test (VAL=1 adds
#       val), no depth or normal maps; fox and beer whole. A variable left unset skips its scene.
#   bench/stage.sh split [LIMIT_MiB]
#       hard links every file under data/ into stage-<scene>-1/, stage-<scene>-2/, ... (ignored),
#       each at most LIMIT_MiB (default 45) and holding one scene's files, the largest placed first;
#       prints each folder's size and the command that copies it into /tmp/stage on the device
#       machine. A sitting can then stage only the scenes it runs (lego: 3 folders, mic: 2, fox and
#       beer: 1 each).
#   bench/stage.sh bin [BUILD]
#       copies BUILD/splat (default build-gpu, made with `make BUILD=build-gpu PORTABLE=1 splat`, or
#       with VIEW=1 for the viewer) and the shared libraries it needs there (cJSON, cmocka, the Vulkan
#       loader; libmicrohttpd, and GnuTLS's chain under stagebin/tls/) into stagebin/, the binary
#       xz-compressed (3 MiB instead of 11), with BUILD/tests/test_backend_ops (the parity harness)
#       when it was built. More binaries for an A/B go in as NAME.xz (`xz -c other/splat >
#       stagebin/splat_old.xz`).
#   bench/stage.sh unpack [DIR]
#       on the device machine: decompresses every DIR/*.xz (default /tmp/bin) beside itself, with
#       Python's lzma (the machine may lack xz).
#
# On the device machine, call by call, back to back (it stays warm 30 s): carry ["stage-lego-1"]
# with `rm -rf /tmp/stage && mkdir -p /tmp/stage && cp -r stage-lego-1/. /tmp/stage/`, the next
# folders with `cp -r stage-lego-K/. /tmp/stage/`, and once carry ["stagebin"] (with the last
# folder when the two stay under 64 MiB with the tracked files) with `mkdir -p /tmp/bin && cp -r
# stagebin/. /tmp/bin/ && bash bench/stage.sh unpack && export LD_LIBRARY_PATH=/tmp/bin`; then
# STAGE=/tmp/stage BIN=/tmp/bin/splat for bench/full_res.sh, bench/speed_levers.sh and
# bench/captured.sh. Several trainings at once on one H200 take as long as one after another
# (bench/RESULTS.md, session 10): stage once, then run serially.
set -euo pipefail
cd "$(dirname "$0")/.."

# scene <git dir> <commit> <path in the repository> <folder under data/> [tar options...]
scene() {
  local git=$1 commit=$2 path=$3 into=data/$4 strip
  shift 4
  strip=$(echo "$path" | tr -cd / | wc -c)
  rm -rf "$into" && mkdir -p "$into"
  git --git-dir="$git" archive "$commit" "$path" | tar -x --strip-components=$((strip + 1)) -C "$into" "$@"
  echo "data/${into#data/}: $(du -sh "$into" | cut -f1)"
}

case "${1:-}" in
  extract)
    noval=(--exclude='val/*' --exclude='transforms_val.json')
    [ "${VAL:-0}" = 1 ] && noval=()
    syn=(--exclude='*_depth_*' --exclude='*_normal_*' --exclude='*.DS_Store' "${noval[@]}")
    if [ -n "${LEGO_GIT:-}" ]; then
      scene "$LEGO_GIT" HEAD data/nerf_synthetic/lego lego "${syn[@]}"
      rm -f data/lego/train/000.png # a stray copy, not in transforms_train.json
    fi
    [ -n "${MIC_GIT:-}" ] && scene "$MIC_GIT" cc9ace6 data/mic mic "${syn[@]}" --exclude=points3d.ply
    if [ -n "${FOX_GIT:-}" ]; then
      scene "$FOX_GIT" 60dbb8e data/nerf/fox fox
      git --git-dir="$FOX_GIT" show HEAD:data/nerf/fox/transforms.json >data/fox/transforms.json
    fi
    if [ -n "${BEER_GIT:-}" ]; then
      rm -rf data/beer && mkdir -p data/beer
      git --git-dir="$BEER_GIT" archive HEAD images sparse | tar -x -C data/beer
      echo "data/beer: $(du -sh data/beer | cut -f1)"
    fi
    ;;
  split)
    limit=$((${2:-45} * 1024 * 1024))
    rm -rf stage[0-9]* stage-*
    for scene in $(cd data && find . -mindepth 1 -maxdepth 1 -type d -printf '%P\n' | sort); do
      # first fit, largest first, within the scene: "size path" lines in, "folder path" lines out
      (cd data && find "$scene" -type f -printf '%s %p\n') | sort -rn | awk -v lim="$limit" '
        { for (k = 1; k <= n && used[k] + $1 > lim; k++) {}
          if (k > n) n = k
          used[k] += $1; print k, $2 }' |
        while read -r k path; do
          mkdir -p "stage-$scene-$k/$(dirname "$path")"
          ln "data/$path" "stage-$scene-$k/$path"
        done
    done
    for d in stage-*; do
      echo "$d $(du -sh "$d" | cut -f1): carry [\"$d\"]: mkdir -p /tmp/stage && cp -r $d/. /tmp/stage/"
    done
    ;;
  bin)
    build=${2:-build-gpu}
    rm -rf stagebin && mkdir -p stagebin
    xz -T0 -6 -c "$build/splat" >stagebin/splat.xz
    [ -f "$build/tests/test_backend_ops" ] && xz -T0 -6 -c "$build/tests/test_backend_ops" >stagebin/test_backend_ops.xz
    for lib in libcjson.so.1 libcmocka.so.0 libvulkan.so.1; do
      if [ -f "$build/$lib" ]; then cp "$build/$lib" stagebin/; else cp -L "/usr/lib/x86_64-linux-gnu/$lib" stagebin/; fi
    done
    # a build with the viewer (PORTABLE=1 VIEW=1): libmicrohttpd beside the binary, and GnuTLS and
    # what it needs in stagebin/tls/, for a host that lacks them (LD_LIBRARY_PATH=stagebin/tls there)
    if ldd "$build/splat" | grep -q libmicrohttpd; then
      cp -L /usr/lib/x86_64-linux-gnu/libmicrohttpd.so.12 stagebin/
      mkdir -p stagebin/tls
      ldd /usr/lib/x86_64-linux-gnu/libmicrohttpd.so.12 | awk '$3 ~ /^\// && $1 !~ /^lib(c|m|pthread|dl)\.so/ { print $3 }' |
        xargs -r -I{} cp -L {} stagebin/tls/
    fi
    git rev-parse --short HEAD >stagebin/commit
    echo "stagebin: $(du -sh stagebin | cut -f1) (commit $(cat stagebin/commit))"
    ;;
  unpack)
    python3 - "${2:-/tmp/bin}" <<'PY'
import glob, lzma, os, sys
for f in glob.glob(os.path.join(sys.argv[1], '*.xz')):
    with lzma.open(f) as src, open(f[:-3], 'wb') as dst:
        dst.write(src.read())
    os.chmod(f[:-3], 0o755)
PY
    ;;
  *)
    sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
