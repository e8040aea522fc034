#!/usr/bin/env bash
# Provides a Vulkan device with VK_KHR_cooperative_matrix on a machine
# without a GPU, and a glslc that compiles GL_KHR_cooperative_matrix, for
# kernels/vulkan's matrix-core kernels (matmul_coop.comp).
#
# Debian 12's lavapipe (Mesa 22.3) has no cooperative matrices and its
# glslc (shaderc 2023.2) does not know the GLSL extension; Debian 13's
# Mesa 25.0 lavapipe has none either (its vulkaninfo lists no
# VK_KHR_cooperative_matrix). Mesa 26.1 from trixie-backports has it
# (VK_KHR_cooperative_matrix rev 2 and VK_NV_cooperative_matrix2, compute
# stage). So this downloads, with apt-get download only, Debian 13's
# packages (trixie-backports' mesa-vulkan-drivers; glslc, the Vulkan
# loader, vulkaninfo, the validation layer (Debian 12's does not know the
# extension) and the libraries they need, glibc and LLVM among them) and unpacks them into DIR/root. Nothing is installed: programs run
# through Debian 13's own dynamic loader with its libraries
# (DIR/run PROGRAM ARGS...), as tools/build-llama-vulkan.sh runs glslc.
#
# Usage: tools/lavapipe-coopmat.sh [DIR]
#   DIR defaults to ${XDG_CACHE_HOME:-~/.cache}/vkllm/lavapipe-coopmat.
#   Idempotent: a DIR that is complete is checked and reused. It prints
#   the environment to use, for eval:
#     VKLLM_COOP_EXEC   the wrapper that runs a program with Debian 13's
#                       loader and libraries, the Vulkan loader pointed at
#                       the private lavapipe alone (VK_DRIVER_FILES):
#                       go test -exec "$VKLLM_COOP_EXEC" ./kernels/vulkan/
#     VKLLM_GLSLC       a glslc that knows GL_KHR_cooperative_matrix (what
#                       kernels/vulkan/shaders/gen.go runs when it is set)
#   and checks with vulkaninfo that the device has the extension; it
#   exits non-zero when the packages cannot be had or the check fails.
set -euo pipefail

dir=${1:-${XDG_CACHE_HOME:-$HOME/.cache}/vkllm/lavapipe-coopmat}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
lib="$dir/root/usr/lib/x86_64-linux-gnu"

# The packages: mesa from trixie-backports (the first with the
# extension), the rest from trixie. The list is mesa-vulkan-drivers',
# glslc's and vulkan-tools' dependency closure less what lavapipe never
# loads on its own (gfx drivers load only their libdrm).
mesa=mesa-vulkan-drivers/trixie-backports
pkgs=(gcc-14-base glslc libbsd0 libc6 libdisplay-info2 libdrm-amdgpu1 libdrm-common libdrm2 libedit2
	libelf1t64 libexpat1 libffi8 libgcc-s1 libllvm19 liblzma5 libmd0 libpng16-16t64 libshaderc1 libstdc++6
	libtinfo6 libvulkan1 libwayland-client0 libx11-6 libx11-data libx11-xcb1 libxau6 libxcb-dri3-0
	libxcb-present0 libxcb-randr0 libxcb-shm0 libxcb-sync1 libxcb-xfixes0 libxcb1 libxdmcp6 libxml2
	libxshmfence1 libz3-4 libzstd1 vulkan-tools vulkan-validationlayers zlib1g)

if [[ ! -f "$dir/COMPLETE" ]]; then
	rm -rf "$dir/root" "$dir/debs" "$dir/lists" "$dir/cache"
	mkdir -p "$dir/lists/partial" "$dir/cache/archives/partial" "$dir/debs" "$dir/root"
	printf 'deb http://deb.debian.org/debian trixie main\ndeb http://deb.debian.org/debian trixie-backports main\n' >"$dir/sources.list"
	apt_o=(-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists="$dir/lists"
		-oDir::Etc::SourceList="$dir/sources.list" -oDir::Etc::SourceParts=/nonexistent -oDir::Cache="$dir/cache"
		-oDir::State::status=/dev/null -oAPT::Sandbox::User=root)
	apt-get "${apt_o[@]}" update -qq
	(cd "$dir/debs" && apt-get "${apt_o[@]}" download -qq "$mesa" "${pkgs[@]}")
	for f in "$dir"/debs/*.deb; do dpkg -x "$f" "$dir/root"; done
	rm -rf "$dir/lists" "$dir/cache"
fi

printf '#!/bin/sh\nexport VK_DRIVER_FILES="%s" VK_ICD_FILENAMES="%s" VK_LAYER_PATH="%s"\nexec "%s/ld-linux-x86-64.so.2" --library-path "%s" "$@"\n' \
	"$dir/lvp_icd.json" "$dir/lvp_icd.json" "$dir/layers" "$lib" "$lib" >"$dir/run"
# Debian 13's validation layer (Debian 12's predates the extension).
mkdir -p "$dir/layers"
sed "s|\"library_path\": *\"[^\"]*\"|\"library_path\": \"$lib/libVkLayer_khronos_validation.so\"|" \
	"$dir/root/usr/share/vulkan/explicit_layer.d/VkLayer_khronos_validation.json" >"$dir/layers/VkLayer_khronos_validation.json"
chmod +x "$dir/run"
printf '#!/bin/sh\nexec "%s/run" "%s/root/usr/bin/glslc" "$@"\n' "$dir" "$dir" >"$dir/glslc"
chmod +x "$dir/glslc"
printf '{"file_format_version": "1.0.0", "ICD": {"library_path": "%s/libvulkan_lvp.so", "api_version": "1.4.0"}}\n' "$lib" >"$dir/lvp_icd.json"

# The check: the extension and its feature on the private lavapipe.
info=$("$dir/run" "$dir/root/usr/bin/vulkaninfo" 2>/dev/null) || {
	echo "lavapipe-coopmat: vulkaninfo failed on the private lavapipe" >&2
	exit 1
}
grep -q 'VK_KHR_cooperative_matrix ' <<<"$info" && grep -Eq 'cooperativeMatrix += true' <<<"$info" || {
	echo "lavapipe-coopmat: the private lavapipe ($(grep -m1 driverInfo <<<"$info" | sed 's/.*= //')) lacks VK_KHR_cooperative_matrix" >&2
	exit 1
}
"$dir/glslc" --version >/dev/null
touch "$dir/COMPLETE"
echo "# $(grep -m1 driverInfo <<<"$info" | sed 's/.*= //'): VK_KHR_cooperative_matrix; $("$dir/glslc" --version | head -n1)"
echo "export VKLLM_COOP_EXEC=$dir/run VKLLM_GLSLC=$dir/glslc"
