#!/usr/bin/env bash
# Builds llama.cpp's llama-bench and llama-batched-bench with the Vulkan
# backend (GGML_VULKAN=ON), the peer that tools/gpu/check.sh runs beside
# vkllm on a GPU, from the same pinned source as tools/build-llama-bench.sh:
# the llama.cpp tree in the PyPI sdist of llama-cpp-python==$LCP_VERSION
# (vendor/llama.cpp). The binaries must run on another x86-64 machine: no
# native CPU flags (GGML_NATIVE=OFF), no OpenMP (ggml's own thread pool).
# ggml and llama are shared libraries beside the two programs (RPATH
# $ORIGIN), so that the shaders, which glslc compiles into libggml-vulkan,
# travel once; they need glibc, libstdc++ and the Vulkan loader
# (libvulkan.so.1) on the machine (BUILD_INFO records the newest symbol
# versions they use).
#
# Debian 12's Vulkan headers (1.3.239) are too old for this llama.cpp, and
# its glslc (shaderc 2023.2) lacks the GLSL extensions of ggml's fast
# shaders (cooperative matrices, integer dot products, bfloat16): ggml's
# cmake would leave those variants out and the peer would be slower on a
# GPU than llama.cpp is. So the build takes the headers and glslc from
# Debian 13's packages (libvulkan-dev, glslc, libshaderc1, and the glibc
# and libstdc++ that glslc needs), unpacked into DIR/toolchain; glslc runs
# there through Debian 13's own dynamic loader. Nothing is installed.
#
# Then it checks the programs on this machine's Vulkan driver (lavapipe
# here) with `llama-bench --list-devices`, and packs them and the libraries,
# stripped, into one tar.xz. It takes 20-40 minutes on 2 cores (most of it
# the shader variants).
#
# Usage: tools/build-llama-vulkan.sh [DIR]
#   DIR defaults to ${XDG_CACHE_HOME:-~/.cache}/vkllm/llama.cpp-vulkan-$LCP_VERSION.
#   It leaves DIR/bin (the programs and libraries), DIR/llama-vulkan.tar.xz
#   (the same, packed: unpack with tar -xJf, run bin/llama-bench) and
#   DIR/BUILD_INFO (the llama.cpp commit, the cmake flags, the device it was
#   checked on), and prints the packed file's path. If the packed file
#   already exists it prints the path and builds nothing.
#   JOBS (default 2) sets the build's parallelism; NICE (default 19) its
#   niceness.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/llama-sdist.sh"

dir=${1:-$lcp_cache/llama.cpp-vulkan-$LCP_VERSION}
jobs=${JOBS:-2}
niceness=${NICE:-19}
packed="$dir/llama-vulkan.tar.xz"

if [[ -f "$packed" ]]; then
	echo "$packed"
	exit 0
fi

missing=()
command -v glslc >/dev/null || missing+=(glslc)
command -v xz >/dev/null || missing+=(xz-utils)
[[ -f /usr/include/vulkan/vulkan.h ]] || missing+=(libvulkan-dev)
[[ -d /usr/include/spirv ]] || missing+=(spirv-headers)
lcp_install_missing "${missing[@]}"

mkdir -p "$dir"

# Debian 13's Vulkan headers and glslc (see above), apt-get download only.
# A build left by a run that failed later (DIR/work/build) is resumed:
# the toolchain and the source it was configured with are kept.
work="$dir/work"
resume=0
[[ -f "$work/build/build.ninja" && -x "$dir/toolchain/glslc" ]] && resume=1

tc="$dir/toolchain"
((resume)) || rm -rf "$tc"
mkdir -p "$tc/lists/partial" "$tc/cache/archives/partial" "$tc/debs" "$tc/root"
echo 'deb http://deb.debian.org/debian trixie main' >"$tc/sources.list"
apt_o=(-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists="$tc/lists"
	-oDir::Etc::SourceList="$tc/sources.list" -oDir::Etc::SourceParts=/nonexistent -oDir::Cache="$tc/cache"
	-oDir::State::status=/dev/null)
if ((!resume)); then
	apt-get "${apt_o[@]}" update -qq
	(cd "$tc/debs" && apt-get "${apt_o[@]}" download -qq libvulkan-dev glslc libshaderc1 libc6 libstdc++6 libgcc-s1)
	for f in "$tc"/debs/*.deb; do dpkg -x "$f" "$tc/root"; done
fi
printf '#!/bin/sh\nexec "%s" --library-path "%s" "%s" "$@"\n' \
	"$tc/root/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2" "$tc/root/usr/lib/x86_64-linux-gnu" "$tc/root/usr/bin/glslc" >"$tc/glslc"
chmod +x "$tc/glslc"
"$tc/glslc" --version >/dev/null || {
	echo "build-llama-vulkan: Debian 13's glslc does not run here" >&2
	exit 1
}

((resume)) || lcp_fetch "$work"
rm -rf "$work/stage"
top="$work/llama_cpp_python-$LCP_VERSION"
src="$top/vendor/llama.cpp"
[[ -d "$src/ggml/src/ggml-vulkan" ]] || {
	echo "build-llama-vulkan: $src has no ggml/src/ggml-vulkan" >&2
	exit 1
}

lcp_read_commit "$top" # sets commit and llama_flags

flags=(
	-G Ninja
	-DCMAKE_BUILD_TYPE=Release
	-DBUILD_SHARED_LIBS=ON
	-DCMAKE_BUILD_RPATH_USE_ORIGIN=ON
	-DGGML_VULKAN=ON
	-DGGML_NATIVE=OFF
	-DGGML_OPENMP=OFF
	"${llama_flags[@]}"
	-DVulkan_INCLUDE_DIR="$tc/root/usr/include"
	-DVulkan_GLSLC_EXECUTABLE="$tc/glslc"
)
nice -n "$niceness" cmake -S "$src" -B "$work/build" "${flags[@]}" | tee "$work/configure.log"
nice -n "$niceness" cmake --build "$work/build" --target llama-bench llama-batched-bench -j"$jobs"

stage="$work/stage/bin"
mkdir -p "$stage"
for f in "$work/build/bin/llama-bench" "$work/build/bin/llama-batched-bench" "$work/build/bin/"lib*.so*; do
	if [[ -L "$f" ]]; then
		cp -P "$f" "$stage/"
	else
		strip --strip-unneeded -o "$stage/$(basename "$f")" "$f"
	fi
done

# The check: the programs start from the staged folder (RPATH $ORIGIN),
# load the Vulkan loader and list this machine's Vulkan device. ggml
# leaves out CPU devices such as lavapipe unless GGML_VK_VISIBLE_DEVICES
# names them, so the check names device 0.
devices=$(GGML_VK_VISIBLE_DEVICES=${GGML_VK_VISIBLE_DEVICES:-0} "$stage/llama-bench" --list-devices 2>&1) || {
	echo "build-llama-vulkan: llama-bench --list-devices failed:" >&2
	echo "$devices" >&2
	exit 1
}
grep -q 'Vulkan0' <<<"$devices" || {
	echo "build-llama-vulkan: llama-bench lists no Vulkan device:" >&2
	echo "$devices" >&2
	exit 1
}
"$stage/llama-batched-bench" --help >/dev/null 2>&1 || {
	echo "build-llama-vulkan: llama-batched-bench does not start" >&2
	exit 1
}

{
	lcp_build_info
	echo "toolchain (Debian 13): $(cd "$tc/debs" && ls *.deb | tr '\n' ' ')"
	echo "glslc: $("$tc/glslc" --version | head -n1)"
	echo "glslc extensions: $(grep -E 'supported by glslc' "$work/configure.log" | sed 's/^-- //' | tr '\n' ';')"
	echo "cmake flags: ${flags[*]}"
	echo "needs: $(for f in "$stage"/*; do [[ -L $f ]] || objdump -p "$f" | awk '/NEEDED/ { print $2 }'; done | grep -v -e '^libggml' -e '^libllama' | sort -u | tr '\n' ' ')"
	echo "newest symbol versions: $(for f in "$stage"/*; do [[ -L $f ]] || objdump -T "$f"; done | grep -o -e 'GLIBC_[0-9.]*' -e 'GLIBCXX_[0-9.]*' -e 'CXXABI_[0-9.]*' | sort -uV | awk -F_ '{ v[$1] = $0 } END { for (k in v) printf "%s ", v[k] }')"
	echo "checked on: $(grep 'Vulkan0' <<<"$devices" | head -n1 | sed 's/^ *//')"
	echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -m)"
} >"$dir/BUILD_INFO"
cp "$dir/BUILD_INFO" "$stage/"
rm -rf "$dir/bin"
nice -n "$niceness" tar -C "$work/stage" -cf - bin | nice -n "$niceness" xz -9 -T1 >"$packed.part"
mv "$work/stage/bin" "$dir/bin"
mv "$packed.part" "$packed"
rm -rf "$work"
echo "$packed"
