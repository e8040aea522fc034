#!/usr/bin/env bash
# Installs what `make test` needs when it is missing: Go modules are fetched
# by the go command itself; system packages come from apt.
set -euo pipefail
need=()
# Vulkan: lavapipe (a CPU Vulkan driver), the loader, the shader compiler
# and validation layers for kernels/vulkan's tests. No libvulkan-dev: the
# Vulkan headers are vendored in kernels/vulkan/include.
# chromium: the browser that tests/browser drives to test the chat page.
for p in mesa-vulkan-drivers libvulkan1 glslc glslang-tools spirv-tools vulkan-validationlayers chromium; do
  dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}"
fi
go mod download
(cd tests/browser && go mod download)
(cd deploy && go mod download) # so that `make test` downloads nothing mid-run
# huggingface_hub: hub's interop test runs the real Python client against
# the stand-in Hub (both read each other's cache).
python3 -c 'import huggingface_hub' 2>/dev/null || python3 -m pip install -q 'huggingface_hub==2.4.0'
# gguf (llama.cpp's own GGUF reader): internal/synth's TestGGUFPy checks the
# bench files' tensor types and blocks with it.
python3 -c 'import gguf' 2>/dev/null || python3 -m pip install -q 'gguf==0.19.0'
