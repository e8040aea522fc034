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
source "$(dirname "${BASH_SOURCE[0]}")/lib/llama-sdist.sh"

dir=${1:-$lcp_cache/llama.cpp-$LCP_VERSION}
jobs=${JOBS:-2}
bin="$dir/llama-bench"

if [[ -x "$bin" ]]; then
	echo "$bin"
	exit 0
fi

lcp_install_missing

work="$dir/work"
lcp_fetch "$work"
top="$work/llama_cpp_python-$LCP_VERSION"
src="$top/vendor/llama.cpp"
[[ -f "$src/tools/llama-bench/llama-bench.cpp" ]] || {
	echo "build-llama-bench: $src has no tools/llama-bench" >&2
	exit 1
}

lcp_read_commit "$top" # sets commit and llama_flags

flags=(
	-G Ninja
	-DCMAKE_BUILD_TYPE=Release
	-DBUILD_SHARED_LIBS=OFF
	-DGGML_NATIVE=ON
	-DGGML_OPENMP=ON
	"${llama_flags[@]}"
)
cmake -S "$src" -B "$work/build" "${flags[@]}"
cmake --build "$work/build" --target llama-bench -j"$jobs"

cp "$work/build/bin/llama-bench" "$bin.part"
{
	lcp_build_info
	echo "cmake flags: ${flags[*]}"
	echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -m)"
} >"$dir/BUILD_INFO"
mv "$bin.part" "$bin"
rm -rf "$work"
echo "$bin"
