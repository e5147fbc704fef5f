#!/usr/bin/env bash
# Installs the Debian packages splat builds against, only when one is missing.
# Called by `make demo`, `make test` and .ci/run.
set -euo pipefail
# libvulkan-dev + glslc build the Vulkan backend; mesa-vulkan-drivers (lavapipe, software Vulkan)
# lets the tests run it without a GPU. pkg-config: the install test builds against splat.pc.
pkgs=(build-essential libpng-dev libjpeg62-turbo-dev libcjson-dev libcmocka-dev zlib1g-dev python3
      libvulkan-dev glslc mesa-vulkan-drivers pkg-config)
pkgs+=(libmicrohttpd-dev xxd)  # the viewer (splat view): its HTTP server, and xxd embeds web/view.html
pkgs+=(chromium chromium-driver python3-selenium python3-pil)  # tests/e2e_view.sh drives the viewer in a real browser
pkgs+=(libzstd-dev)  # .spz version 4 (zstd streams), read and written by src/io/spz.c
pkgs+=(spirv-cross)  # tests/e2e_msl.sh translates every shader variant to Metal's language (MoltenVK's path)
pkgs+=(libwebp-dev)  # .sog: lossless WebP images, read and written by src/io/sog.c
pkgs+=(clang libomp-dev)  # tests/e2e_clang.sh compiles every source with clang too (make fuzz's compiler)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "splat setup: installing ${missing[*]}"
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
