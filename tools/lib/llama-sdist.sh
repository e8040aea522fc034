# The pinned llama.cpp source that tools/build-llama-bench.sh and
# tools/build-llama-vulkan.sh build: the llama.cpp tree that the PyPI sdist
# of llama-cpp-python==$LCP_VERSION carries in vendor/llama.cpp
# (ggml-org/llama.cpp at the commit its CHANGELOG names for that release).
#
# Sourced by those scripts after `set -euo pipefail`, with $0 the script
# (its name, without .sh, prefixes the errors). It runs nothing itself; it
# sets LCP_VERSION and lcp_cache (the folder that holds each build's cache
# folder) and defines the lcp_* functions below. A function that fails
# prints why on stderr and exits the script with status 1.

LCP_VERSION=0.3.36
lcp_cache=${XDG_CACHE_HOME:-$HOME/.cache}/vkllm
lcp_prog=$(basename "$0" .sh)

# lcp_install_missing [PKG...] makes sure cmake, ninja and g++ are here,
# together with the Debian packages PKG... that the caller found missing:
# as root it installs what is missing with apt-get; otherwise it fails,
# naming the packages.
lcp_install_missing() {
	local missing=()
	command -v cmake >/dev/null || missing+=(cmake)
	command -v ninja >/dev/null || missing+=(ninja-build)
	command -v g++ >/dev/null || missing+=(g++)
	missing+=("$@")
	((${#missing[@]})) || return 0
	if [[ $(id -u) -ne 0 ]]; then
		echo "$lcp_prog: missing ${missing[*]}; install them (apt-get install ${missing[*]})" >&2
		exit 1
	fi
	apt-get update
	apt-get install -y --no-install-recommends "${missing[@]}"
}

# lcp_fetch WORK empties the folder WORK, downloads the sdist into it and
# unpacks it there: the llama.cpp tree is then
# WORK/llama_cpp_python-$LCP_VERSION/vendor/llama.cpp.
lcp_fetch() {
	local work=$1
	rm -rf "$work"
	mkdir -p "$work"
	python3 -m pip download --quiet --no-deps --no-binary :all: -d "$work" "llama-cpp-python==$LCP_VERSION"
	tar -xzf "$work/llama_cpp_python-$LCP_VERSION.tar.gz" -C "$work"
}

# lcp_read_commit TOP sets commit to the llama.cpp commit that the unpacked
# sdist TOP vendors, and llama_flags to the cmake flags of llama.cpp's own
# options that every build here takes: no curl, OpenSSL, tests, examples or
# server; that commit and build number 0.
#
# The sdist has no .git, so llama.cpp's cmake cannot find its commit (or, if
# the build folder lies inside some other git checkout, would find that
# one's). The release's CHANGELOG entry names the llama.cpp commit it
# vendors; passed in, llama-bench reports it as build_commit. The build
# number stays 0 (unknown without the history).
lcp_read_commit() {
	local top=$1
	commit=$(awk -v v="## [$LCP_VERSION]" '
		$0 == v { in_release = 1; next }
		in_release && /^## / { exit }
		in_release && match($0, /llama\.cpp@[0-9a-f]+/) { print substr($0, RSTART + 10, RLENGTH - 10); exit }
	' "$top/CHANGELOG.md")
	if [[ -z "$commit" ]]; then
		echo "$lcp_prog: no llama.cpp commit in the $LCP_VERSION entry of $top/CHANGELOG.md" >&2
		exit 1
	fi
	llama_flags=(
		-DLLAMA_CURL=OFF
		-DLLAMA_OPENSSL=OFF
		-DLLAMA_BUILD_TESTS=OFF
		-DLLAMA_BUILD_EXAMPLES=OFF
		-DLLAMA_BUILD_SERVER=OFF
		-DLLAMA_BUILD_COMMIT="$commit"
		-DLLAMA_BUILD_NUMBER=0
	)
}

# lcp_build_info prints the first lines of a build's BUILD_INFO: the source,
# the llama.cpp commit (lcp_read_commit's) and the compiler.
lcp_build_info() {
	echo "llama-cpp-python sdist: $LCP_VERSION (PyPI), vendor/llama.cpp"
	echo "llama.cpp commit: $commit"
	echo "compiler: $(g++ --version | head -n1)"
}
