#!/usr/bin/env bash
# Builds llama.cpp's llama-bench for the CPU alone, portable: the peer that
# tools/gpu/check.sh runs beside `vkllm bench --backend cpu` on the GPU
# machine's many cores (issue 41, "many cores"), which has no compiler. The
# source is the same pinned llama.cpp tree as tools/build-llama-bench.sh's
# (the PyPI sdist of llama-cpp-python==$LCP_VERSION, vendor/llama.cpp).
#
# A native build (tools/build-llama-bench.sh) uses this machine's
# instructions and may not start on another CPU. This one is llama.cpp's own
# portable build: GGML_NATIVE=OFF with GGML_BACKEND_DL and
# GGML_CPU_ALL_VARIANTS, so ggml's CPU backend is a set of libraries, one per
# x86-64 level (SSE4.2, AVX2, AVX-512, AVX-512 VNNI/BF16, AMX, ...), and
# llama-bench loads, at start, the best that the CPU it runs on supports -
# what llama.cpp's release binaries do. No OpenMP (ggml's own thread pool:
# the machine there need not have libgomp), no Vulkan or other GPU backend.
# The libraries sit beside the program (RPATH $ORIGIN).
#
# Then it checks that the staged program starts here and lists its CPU
# backend, and packs the folder, stripped, into one tar.xz.
#
# Usage: tools/build-llama-cpu-portable.sh [DIR]
#   DIR defaults to ${XDG_CACHE_HOME:-~/.cache}/vkllm/llama.cpp-cpu-$LCP_VERSION.
#   It leaves DIR/bin (the program and libraries), DIR/llama-cpu.tar.xz
#   (the same, packed: unpack with tar -xJf, run bin/llama-bench) and
#   DIR/BUILD_INFO, and prints the packed file's path. If the packed file
#   already exists it prints the path and builds nothing.
#   JOBS (default 2) sets the build's parallelism; NICE (default 19) its
#   niceness. It takes 15-30 minutes on 2 cores (ggml-cpu once per variant).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/llama-sdist.sh"

dir=${1:-$lcp_cache/llama.cpp-cpu-$LCP_VERSION}
jobs=${JOBS:-2}
niceness=${NICE:-19}
packed="$dir/llama-cpu.tar.xz"

if [[ -f "$packed" ]]; then
	echo "$packed"
	exit 0
fi

missing=()
command -v xz >/dev/null || missing+=(xz-utils)
lcp_install_missing "${missing[@]}"

mkdir -p "$dir"
work="$dir/work"
lcp_fetch "$work"
top="$work/llama_cpp_python-$LCP_VERSION"
src="$top/vendor/llama.cpp"
[[ -f "$src/tools/llama-bench/llama-bench.cpp" ]] || {
	echo "build-llama-cpu-portable: $src has no tools/llama-bench" >&2
	exit 1
}

lcp_read_commit "$top" # sets commit and llama_flags

flags=(
	-G Ninja
	-DCMAKE_BUILD_TYPE=Release
	-DBUILD_SHARED_LIBS=ON
	-DCMAKE_BUILD_RPATH_USE_ORIGIN=ON
	-DGGML_NATIVE=OFF
	-DGGML_BACKEND_DL=ON
	-DGGML_CPU_ALL_VARIANTS=ON
	-DGGML_OPENMP=OFF
	"${llama_flags[@]}"
)
nice -n "$niceness" cmake -S "$src" -B "$work/build" "${flags[@]}" | tee "$work/configure.log"
# llama-bench, and every ggml-cpu variant (loaded at run time, so no
# target depends on them).
nice -n "$niceness" cmake --build "$work/build" -j"$jobs" --target llama-bench \
	$(grep -o -E '^build ggml-cpu-[a-z0-9_]+: phony' "$work/build/build.ninja" | awk '{ sub(":", "", $2); print $2 }')

stage="$work/stage/bin"
mkdir -p "$stage"
for f in "$work/build/bin/llama-bench" "$work/build/bin/"lib*.so*; do
	if [[ -L "$f" ]]; then
		cp -P "$f" "$stage/"
	else
		strip --strip-unneeded -o "$stage/$(basename "$f")" "$f"
	fi
done

# The check: the program starts from the staged folder and finds a CPU
# backend variant this machine can run.
devices=$("$stage/llama-bench" --list-devices 2>&1) || {
	echo "build-llama-cpu-portable: llama-bench --list-devices failed:" >&2
	echo "$devices" >&2
	exit 1
}
variants=$(cd "$stage" && ls libggml-cpu-*.so 2>/dev/null | tr '\n' ' ')
[[ -n $variants ]] || {
	echo "build-llama-cpu-portable: no libggml-cpu-*.so variants were built" >&2
	exit 1
}

{
	lcp_build_info
	echo "cmake flags: ${flags[*]}"
	echo "cpu variants: $variants"
	echo "needs: $(for f in "$stage"/*; do [[ -L $f ]] || objdump -p "$f" | awk '/NEEDED/ { print $2 }'; done | grep -v -e '^libggml' -e '^libllama' | sort -u | tr '\n' ' ')"
	echo "newest symbol versions: $(for f in "$stage"/*; do [[ -L $f ]] || objdump -T "$f"; done | grep -o -e 'GLIBC_[0-9.]*' -e 'GLIBCXX_[0-9.]*' -e 'CXXABI_[0-9.]*' | sort -uV | awk -F_ '{ v[$1] = $0 } END { for (k in v) printf "%s ", v[k] }')"
	echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -m)"
} >"$dir/BUILD_INFO"
cp "$dir/BUILD_INFO" "$stage/"
rm -rf "$dir/bin"
nice -n "$niceness" tar -C "$work/stage" -cf - bin | nice -n "$niceness" xz -9 -T1 >"$packed.part"
mv "$work/stage/bin" "$dir/bin"
mv "$packed.part" "$packed"
rm -rf "$work"
echo "$packed"
