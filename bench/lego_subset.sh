#!/usr/bin/env bash
# The lego subset of the speed comparisons in bench/RESULTS.md, made from a full NeRF-synthetic scene
# folder without copying images: all train views, every 10th val view, every 8th test view
# (100 / 10 / 25 for lego), as symlinks next to filtered transforms files.
#   bash bench/lego_subset.sh FULL_SCENE_DIR OUT_DIR
set -euo pipefail
src=$(cd "$1" && pwd)
out=$2
mkdir -p "$out"
for d in train val test; do ln -sfn "$src/$d" "$out/$d"; done
python3 - "$src" "$out" <<'PY'
import json, sys
src, out = sys.argv[1], sys.argv[2]
for split, every in (("train", 1), ("val", 10), ("test", 8)):
    with open(f"{src}/transforms_{split}.json") as f:
        d = json.load(f)
    d["frames"] = d["frames"][::every]
    with open(f"{out}/transforms_{split}.json", "w") as f:
        json.dump(d, f, indent=1)
    print(f"{split}: {len(d['frames'])} views")
PY
