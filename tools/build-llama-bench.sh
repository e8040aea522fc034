#!/usr/bin/env bash
# Builds llama.cpp's llama-bench, the peer that `go run ./cmd/vkllm bench
# --peer llama.cpp` runs, from a pinned source: the llama.cpp tree that the
# PyPI sdist of llama-cpp-python==$LCP_VERSION carries in vendor/llama.cpp
# (ggml-org/llama.cpp at the commit its CHANGELOG names for that release).
# Release build, native CPU flags (GGML_NATIVE), OpenMP on, no curl or
# OpenSSL, static libraries, only the llama-bench target. It takes 10-20
# minutes on 2 cores.
#
# Usage: tools/build-llama-bench.sh [DIR]
#   DIR defaults to ${XDG_CACHE_HOME:-~/.cache}/vkllm/llama.cpp-$LCP_VERSION.
#   It leaves DIR/llama-bench and DIR/BUILD_INFO (the llama.cpp commit and
#   the cmake flags) and prints the binary's path. If DIR/llama-bench already
#   exists it prints the path and builds nothing. The bench finds the binary
#   there by default, or at $VKLLM_LLAMA_BENCH.
#   JOBS (default 2) sets the build's parallelism.
set -euo pipefail

LCP_VERSION=0.3.36
dir=${1:-${XDG_CACHE_HOME:-$HOME/.cache}/vkllm/llama.cpp-$LCP_VERSION}
jobs=${JOBS:-2}
bin="$dir/llama-bench"

if [[ -x "$bin" ]]; then
	echo "$bin"
	exit 0
fi

missing=()
command -v cmake >/dev/null || missing+=(cmake)
command -v ninja >/dev/null || missing+=(ninja-build)
command -v g++ >/dev/null || missing+=(g++)
if ((${#missing[@]})); then
	if [[ $(id -u) -ne 0 ]]; then
		echo "build-llama-bench: missing ${missing[*]}; install them (apt-get install ${missing[*]})" >&2
		exit 1
	fi
	apt-get update
	apt-get install -y --no-install-recommends "${missing[@]}"
fi

mkdir -p "$dir"
work="$dir/work"
rm -rf "$work"
mkdir -p "$work"

python3 -m pip download --quiet --no-deps --no-binary :all: -d "$work" "llama-cpp-python==$LCP_VERSION"
tar -xzf "$work/llama_cpp_python-$LCP_VERSION.tar.gz" -C "$work"
top="$work/llama_cpp_python-$LCP_VERSION"
src="$top/vendor/llama.cpp"
[[ -f "$src/tools/llama-bench/llama-bench.cpp" ]] || {
	echo "build-llama-bench: $src has no tools/llama-bench" >&2
	exit 1
}

# The sdist has no .git, so llama.cpp's cmake cannot find its commit (or, if
# DIR lies inside some other git checkout, would find that one's). The
# release's CHANGELOG entry names the llama.cpp commit it vendors; pass it in
# so that llama-bench reports it as build_commit. The build number stays 0
# (unknown without the history).
commit=$(awk -v v="## [$LCP_VERSION]" '
	$0 == v { in_release = 1; next }
	in_release && /^## / { exit }
	in_release && match($0, /llama\.cpp@[0-9a-f]+/) { print substr($0, RSTART + 10, RLENGTH - 10); exit }
' "$top/CHANGELOG.md")
if [[ -z "$commit" ]]; then
	echo "build-llama-bench: no llama.cpp commit in the $LCP_VERSION entry of $top/CHANGELOG.md" >&2
	exit 1
fi

flags=(
	-G Ninja
	-DCMAKE_BUILD_TYPE=Release
	-DBUILD_SHARED_LIBS=OFF
	-DGGML_NATIVE=ON
	-DGGML_OPENMP=ON
	-DLLAMA_CURL=OFF
	-DLLAMA_OPENSSL=OFF
	-DLLAMA_BUILD_TESTS=OFF
	-DLLAMA_BUILD_EXAMPLES=OFF
	-DLLAMA_BUILD_SERVER=OFF
	-DLLAMA_BUILD_COMMIT="$commit"
	-DLLAMA_BUILD_NUMBER=0
)
cmake -S "$src" -B "$work/build" "${flags[@]}"
cmake --build "$work/build" --target llama-bench -j"$jobs"

cp "$work/build/bin/llama-bench" "$bin.part"
{
	echo "llama-cpp-python sdist: $LCP_VERSION (PyPI), vendor/llama.cpp"
	echo "llama.cpp commit: $commit"
	echo "compiler: $(g++ --version | head -n1)"
	echo "cmake flags: ${flags[*]}"
	echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -m)"
} >"$dir/BUILD_INFO"
mv "$bin.part" "$bin"
rm -rf "$work"
echo "$bin"
