#!/usr/bin/env bash
# Prepares what tools/gpu/check.sh needs on a GPU machine that has no Go,
# no network and no Vulkan loader, and prints the one command that runs it
# there. Everything goes into two folders that git ignores and that travel
# beside the working tree (the device tool's `carry`, 64 MiB in all):
#
#   .gpu/bin/vkllm.xz        the bench command (cgo on, for kernels/vulkan)
#   .gpu/bin/vulkan.test.xz  kernels/vulkan's tests (go test -c)
#   .gpu/bin/models.test.xz  models' tests (go test -c)
#   .gpu/bin/engine.test.xz  engine's tests, for BenchmarkServe
#   .gpu/llama-vulkan.tar.xz  llama.cpp's llama-bench and llama-batched-bench
#                          with GGML_VULKAN=ON (tools/build-llama-vulkan.sh)
#   .gpu/llama-cpu.tar.xz  llama.cpp's llama-bench for the CPU, portable (one
#                          library per x86-64 level, chosen at start;
#                          tools/build-llama-cpu-portable.sh)
#   .gpu/vkinfo/*.deb      vulkaninfo and the libraries it needs, unpacked
#                          into a private folder there
#   .gl/*.deb              the Vulkan loader, the GL dispatch libraries that
#                          NVIDIA's Vulkan driver loads, and the validation
#                          layer (Debian 12, amd64), unpacked into / there
#
# The Go binaries are built here, so the machine there needs only glibc.
# Usage: tools/gpu/prepare.sh   (from anywhere in the checkout; run as root
# for apt-get; it takes 20-40 minutes the first time, for llama.cpp)
set -euo pipefail
cd "$(dirname "$0")/../.."

gpu=.gpu
bin=$gpu/bin
mkdir -p "$bin" "$gpu/vkinfo" .gl

# The Go binaries check.sh runs (its go_bins), each NAME built from its
# package and packed as $bin/NAME.xz.
go_bins=(vkllm vulkan.test models.test engine.test)
declare -A pkg=([vkllm]=./cmd/vkllm [vulkan.test]=./kernels/vulkan [models.test]=./models [engine.test]=./engine)
echo "prepare: Go binaries" >&2
export CGO_ENABLED=1
for b in "${go_bins[@]}"; do
	case $b in
	*.test) go test -c -trimpath -ldflags='-s -w' -o "$bin/$b" "${pkg[$b]}" ;;
	*) go build -trimpath -ldflags='-s -w' -o "$bin/$b" "${pkg[$b]}" ;;
	esac
	xz -6 -T0 -f "$bin/$b"
done

echo "prepare: llama.cpp Vulkan peer (tools/build-llama-vulkan.sh)" >&2
packed=$(tools/build-llama-vulkan.sh | tail -n1)
cp "$packed" "$gpu/llama-vulkan.tar.xz"

echo "prepare: llama.cpp portable CPU peer (tools/build-llama-cpu-portable.sh)" >&2
packed=$(tools/build-llama-cpu-portable.sh | tail -n1)
cp "$packed" "$gpu/llama-cpu.tar.xz"

echo "prepare: Debian packages" >&2
o=(-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/vkllm-apt-amd64)
mkdir -p /tmp/vkllm-apt-amd64/partial
apt-get "${o[@]}" update -qq
rm -f .gl/*.deb "$gpu"/vkinfo/*.deb
(cd .gl && apt-get "${o[@]}" download -qq \
	libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2 vulkan-validationlayers)
(cd "$gpu/vkinfo" && apt-get "${o[@]}" download -qq \
	vulkan-tools libwayland-client0 libx11-6 libx11-data libxcb1 libxau6 libxdmcp6 libbsd0 libmd0 libffi8)

# The size that travels: the working tree (tracked and untracked files git
# does not ignore) and the two folders.
tree=$( (git ls-files -z; git ls-files -z --others --exclude-standard) | du -cb --files0-from=- 2>/dev/null | tail -n1 | cut -f1)
carried=$(du -cb .gl "$gpu" | tail -n1 | cut -f1)
total=$((tree + carried))
# The CPU peer is the part that can go: without it check.sh's cpu step
# runs vkllm alone.
if ((total > 64 << 20)) && [[ -f $gpu/llama-cpu.tar.xz ]]; then
	echo "prepare: over 64 MiB with the CPU peer; leaving .gpu/llama-cpu.tar.xz out (the cpu step runs without llama.cpp)" >&2
	rm -f "$gpu/llama-cpu.tar.xz"
	carried=$(du -cb .gl "$gpu" | tail -n1 | cut -f1)
	total=$((tree + carried))
fi
printf 'prepare: working tree %.1f MiB + .gl and .gpu %.1f MiB = %.1f MiB of 64\n' \
	"$(awk "BEGIN { print $tree / 1048576 }")" "$(awk "BEGIN { print $carried / 1048576 }")" "$(awk "BEGIN { print $total / 1048576 }")" >&2
if ((total > 64 << 20)); then
	echo "prepare: over the 64 MiB the device tool carries" >&2
	exit 1
fi

cat <<MSG
Ready. On the GPU machine, two calls of the device tool, carry [".gl", ".gpu"]:
  1. SWEEP=only CPU=0 BUDGET_S=280 bash tools/gpu/check.sh          (timeout_s 300:
     the probe, the tests, the sweep; its tuning stays on the machine)
  2. at once: SWEEP=0 TESTS=0 PROBE=0 CPU=1 BUDGET_S=N bash tools/gpu/check.sh
     (N about 60 s under the device time left, timeout_s N + 20)
(benchmarks/gpu/README.md, "Spending a lease", says why and what to commit.)
check.sh writes results.json, results.md, tests.log, ops.txt, probe.txt, tuning.json,
check.log and logs.tar.gz to \$OUT. Here, on lavapipe: OUT=/tmp/out bash tools/gpu/check.sh --small
MSG
