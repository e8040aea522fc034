#!/usr/bin/env bash
# The GPU check: one command on a machine with a GPU and its driver but no
# Vulkan loader, no Go and no network, from a checkout carrying .gl and .gpu
# (tools/gpu/prepare.sh builds them and prints the command). It
#
#   1. unpacks the Vulkan loader (.gl/*.deb into /, when none is installed)
#      and the prebuilt binaries and llama.cpp peer (into $WORK);
#   2. writes the device's facts to device.txt (in $OUT/logs.tar.gz:
#      vulkaninfo, nvidia-smi, the peer's device list);
#   2b. probes the kernels (vkllm bench --probe) into $OUT/probe.txt;
#   3. runs the prebuilt kernels/vulkan and models test binaries (the
#      kerneltest conformance suite, parity with the goldens, batch and
#      placement invariance, OOM, with the validation layer where it is
#      installed) into $OUT/tests.log;
#   3b. tunes the kernels (vkllm bench --sweep: every candidate of each
#      tuned kernel timed with GPU timestamps on the 0.5B and 8B matrices)
#      into sweep.txt (the table, in $OUT/logs.tar.gz) and $OUT/tuning.json (the chosen
#      tuning, to commit as kernels/vulkan/tuning/VENDOR-NAME.json), which
#      every later step uses (VKLLM_VULKAN_TUNING); SWEEP=0 skips it (and
#      uses .gpu/tuning.json or the one an earlier call left on the
#      machine), SWEEP=only runs setup, facts, the probe, the tests and the
#      sweep (a call of its own: a full sweep takes minutes);
#   4. round after round, benches each model with vkllm (prefill pp,
#      decode tg, batched decode 1, 4 and 16) followed by llama.cpp's
#      llama-bench (the same pp and tg) and llama-batched-bench (the same
#      batches): ours and the peer alternate; each model's GGUF (for the
#      peer) is written before its first round, so a model no round
#      reaches costs nothing; the op profile (5) runs before the first
#      round, serving (5) and the cells (6) after it;
#      where the device has cooperative matrices, the specs of exact_specs
#      are benched again with the exact kernels
#      (VKLLM_VULKAN_DISABLE=coopmat: the cooperative-matrix mode off), vkllm
#      alone;
#   5. times prefill and decode op by op with GPU timestamps (vkllm bench
#      --ops) on the Q4_0 models into $OUT/ops.txt, and serves 16 requests
#      at once and one by one
#      on the 0.5B Q4_0 model (the engine's BenchmarkServe, F16 cache) into
#      serve.txt (in $OUT/logs.tar.gz);
#   6. runs the models' BenchmarkDecodeCells (decode with 64 cells in use
#      in a context of 512 cells and of 32768, cpu and vulkan, three
#      times) on the same model into cells.txt (in $OUT/logs.tar.gz);
#   6b. with SWEEP=only after the sweep (CPU_S, default 200 s, is kept
#      for it), or CPU=1: the CPU backend on every
#      core of the machine (vkllm bench --backend cpu) against llama.cpp's
#      portable CPU build (.gpu/llama-cpu.tar.xz,
#      tools/build-llama-cpu-portable.sh), on cpu_specs, into
#      $WORK/cpu-runs (issue 41's many-core figures);
#   7. writes $OUT/results.json and $OUT/results.md (tools/gpu/summarize.py)
#      and keeps the whole log in $OUT/check.log.
#
# Each step is timed (results.json "steps"), and the run keeps to a budget
# (BUDGET_S, default 540 s): a bench round starts only while the time left
# exceeds 1.5 times the last round of the same model (and 60 s for a first
# one); what was skipped is listed as skipped, not left out.
#
# --small runs the same steps on this machine's Vulkan device (lavapipe
# here) with the models at a tiny scale (SHAPE-tiny), pp 64, tg 16, one
# round and one llama-bench repetition (budget 1200 s); the full run is
# pp 512, tg 128, two rounds, three repetitions.
#
# PEER=0 leaves llama.cpp out of the bench rounds (a second run, when the
# first has the peer's figures).
#
# CPU=0 leaves the CPU step out of a SWEEP=only run; CPU=1 adds it to a
# full run (last, in the time left).
#
# PROBE=0 leaves out the probe (vkllm bench --probe, PROBE_S seconds,
# default 60), which runs first after the facts; TESTS=0 the test
# binaries, which follow it (both also in a SWEEP=only call).
#
# A SWEEP=only call leaves its tuning in $KEEP (default /tmp/vkllm-keep) on
# the machine; a SWEEP=0 call on the same (warm) machine uses it when
# .gpu/tuning.json is missing.
#
# Usage: [OUT=DIR] [BUDGET_S=N] [ROUNDS=N] [PEER=0] [SWEEP=0|only] [CPU=0|1] [CPU_S=N] [PROBE=0] [PROBE_S=N] [TESTS=0] [KEEP=DIR] bash tools/gpu/check.sh [--small]
# Exit status: 0 when every step ran and passed, 1 otherwise (the results
# are written either way).
set -uo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
small=0
[[ ${1:-} == --small ]] && small=1
out=${OUT:-$root/out}
work=${WORK:-/tmp/vkllm-gpu}
gpu=$root/.gpu
bin=$work/bin   # the Go binaries and the peer, unpacked
mkdir -p "$out"
rm -rf "$work"
aux=$work/aux   # the smaller outputs, bundled into $out/logs.tar.gz
mkdir -p "$work/runs" "$bin" "$aux"
exec > >(tee "$out/check.log") 2>&1

# Go binaries tools/gpu/prepare.sh builds (as NAME.xz in .gpu/bin).
go_bins=(vkllm vulkan.test models.test engine.test)
# Peer programs in .gpu/llama-vulkan.tar.xz (tools/build-llama-vulkan.sh).
peer_bins=(llama-bench llama-batched-bench)
# The CPU peer in .gpu/llama-cpu.tar.xz (tools/build-llama-cpu-portable.sh),
# unpacked into $WORK/cpu.
cpubin=$work/cpu/bin

if ((small)); then
	specs=(qwen2.5-0.5b-tiny:F16 qwen2.5-0.5b-tiny:Q8_0 qwen2.5-0.5b-tiny:Q4_0 qwen2.5-0.5b-tiny:Q4_K llama-3.1-8b-tiny:Q8_0 llama-3.1-8b-tiny:Q4_0 llama-3.1-8b-tiny:Q4_K)
	cpu_specs=(qwen2.5-0.5b-tiny:Q4_0 qwen2.5-0.5b-tiny:F16)
	ops_specs=(qwen2.5-0.5b-tiny:Q4_0 llama-3.1-8b-tiny:Q4_0)
	serve_spec=qwen2.5-0.5b-tiny:Q4_0
	exact_specs=(qwen2.5-0.5b-tiny:Q4_0)
	# lavapipe compiles llama.cpp's pipelines at each start (about 30 s
	# each here): one repetition, one round
	pp=64 tg=16 reps=1 def_rounds=1 def_budget=1200
	# the sweep end to end on two types, four candidates a kernel
	sweep_flags=(--sweep-models qwen2.5-0.5b-tiny,llama-3.1-8b-tiny --sweep-dtypes Q4_0,F16 --sweep-reps 2 --sweep-candidates 4)
	t_sweep=240
else
	# In the order they are benched: the goals' types (F16, Q8_0, Q4_0,
	# Q4_K) on both shapes, the 8B F16 (16 GB to write) last.
	specs=(qwen2.5-0.5b:F16 qwen2.5-0.5b:Q8_0 qwen2.5-0.5b:Q4_0 qwen2.5-0.5b:Q4_K llama-3.1-8b:Q8_0 llama-3.1-8b:Q4_0 llama-3.1-8b:Q4_K llama-3.1-8b:F16)
	cpu_specs=(qwen2.5-0.5b:Q4_0 qwen2.5-0.5b:Q4_K_M qwen2.5-0.5b:F16 llama-3.2-1b:Q4_0)
	ops_specs=(qwen2.5-0.5b:Q4_0 llama-3.1-8b:Q4_0)
	serve_spec=qwen2.5-0.5b:Q4_0
	# benched again with VKLLM_VULKAN_DISABLE=coopmat (the exact kernels)
	exact_specs=(qwen2.5-0.5b:F16 qwen2.5-0.5b:Q4_0 llama-3.1-8b:Q4_0)
	pp=512 tg=128 reps=3 def_rounds=2 def_budget=540
	sweep_flags=(--sweep-reps 10)
	t_sweep=300
fi
batches=1,4,16
# Each test binary's limit: about 200 s for both on lavapipe (the sweep
# candidates take 140 s of it); a hang on a GPU
# must not eat the run.
t_tests=$((small ? 400 : 150)) t_kill=$((small ? 410 : 160))
rounds=${ROUNDS:-$def_rounds}
peer=${PEER:-1}
do_sweep=${SWEEP:-1}
do_cpu=${CPU:-$([[ $do_sweep == only ]] && echo 1 || echo 0)}
cpu_s=${CPU_S:-$((small ? 120 : 200))}
do_probe=${PROBE:-1}
do_tests=${TESTS:-1}
# What a call leaves on the machine for the next one (a warm machine keeps
# /tmp between calls; a fresh one starts bare): the sweep's tuning.
keep=${KEEP:-/tmp/vkllm-keep}
mkdir -p "$keep"
budget=${BUDGET_S:-$def_budget}
threads=$(nproc)
start=$(date +%s)
failed=0

left() { echo $((budget - ($(date +%s) - start))); }

# step NAME CMD...: runs CMD, records NAME, its seconds and its status.
step() {
	local name=$1 t0 rc
	shift
	echo "=== $name ($(left) s left)"
	t0=$(date +%s.%N)
	"$@"
	rc=$?
	printf '%s\t%.1f\t%s\n' "$name" "$(echo "$(date +%s.%N) - $t0" | awk '{ print $1 - $3 }')" "$rc" >>"$work/steps.tsv"
	((rc == 0)) || failed=1
	echo "=== $name: exit $rc"
	bundle
	return "$rc"
}

# bundle refreshes $out/logs.tar.gz: the smaller outputs ($aux), the raw
# test logs, the sweep's and each run's output and the steps so far. The
# device tool brings back at most 8 files from $out (check.log, tests.log,
# ops.txt, probe.txt, tuning.json, results.json, results.md and this), and
# only what is there when a call is cut: hence after every step.
bundle() {
	(cd "$work" && tar -czf "$out/logs.tar.gz.tmp" --ignore-failed-read aux steps.tsv tests-*.log sweep.err sweep.json ops.err runs cpu-runs 2>/dev/null)
	mv -f "$out/logs.tar.gz.tmp" "$out/logs.tar.gz"
}
skip() {
	printf '%s\t0\tskipped: %s\n' "$1" "$2" >>"$work/steps.tsv"
	failed=1
	echo "=== $1: skipped ($2)"
}

# unxz SRC DST: xz -d, or Python's lzma where xz is missing.
unxz() {
	if command -v xz >/dev/null; then
		xz -dc "$1" >"$2"
	else
		python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' "$1" "$2"
	fi
}

setup() {
	if ! ldconfig -p | grep -q 'libvulkan\.so\.1 '; then
		echo "no Vulkan loader: unpacking .gl/*.deb into /"
		for f in "$root"/.gl/*.deb; do dpkg -x "$f" / || return 1; done
		ldconfig
	fi
	local icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
	if ((!small)) && [[ -z ${VK_DRIVER_FILES:-} && -f $icd ]]; then
		export VK_DRIVER_FILES=$icd VK_ICD_FILENAMES=$icd
		[[ -d /usr/local/nvidia/lib64 ]] && export LD_LIBRARY_PATH=/usr/local/nvidia/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
	fi
	# ggml leaves out CPU devices (lavapipe) unless they are named.
	((small)) && export GGML_VK_VISIBLE_DEVICES=${GGML_VK_VISIBLE_DEVICES:-0}
	echo "VK_DRIVER_FILES=${VK_DRIVER_FILES:-} LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-} GGML_VK_VISIBLE_DEVICES=${GGML_VK_VISIBLE_DEVICES:-}"
	local b
	for b in "${go_bins[@]}"; do
		unxz "$gpu/bin/$b.xz" "$bin/$b" && chmod +x "$bin/$b" || return 1
	done
	python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$gpu/llama-vulkan.tar.xz" "$work" || return 1
	for b in "${peer_bins[@]}"; do
		[[ -x $bin/$b ]] || { echo "no $b in .gpu/llama-vulkan.tar.xz"; return 1; }
	done
	export VKLLM_LLAMA_BENCH=$bin/llama-bench
	if ((do_cpu)); then
		if [[ -f $gpu/llama-cpu.tar.xz ]]; then
			mkdir -p "$work/cpu"
			python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$gpu/llama-cpu.tar.xz" "$work/cpu" || return 1
		else
			echo "no .gpu/llama-cpu.tar.xz: the CPU step runs without its peer"
		fi
	fi
}

facts() {
	{
		echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) $(uname -srm), $(nproc) cores"
		if command -v nvidia-smi >/dev/null; then
			nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
		fi
		local vk=$work/vkinfo
		mkdir -p "$vk"
		for f in "$gpu"/vkinfo/*.deb; do dpkg -x "$f" "$vk"; done
		local vulkaninfo=(env LD_LIBRARY_PATH="$vk/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$vk/usr/bin/vulkaninfo")
		command -v vulkaninfo >/dev/null && vulkaninfo=(vulkaninfo)
		"${vulkaninfo[@]}" --summary 2>&1 | sed -n '/^Devices:/,$p'
		"${vulkaninfo[@]}" >"$work/vulkaninfo.txt" 2>&1
		echo "## from the full vulkaninfo"
		grep -E -m 40 '^\s*(subgroupSize|minSubgroupSize|maxSubgroupSize|subgroupSupportedOperations|shaderFloat16|shaderInt8|storageBuffer16BitAccess|integerDotProduct8BitUnsignedAccelerated|maxComputeSharedMemorySize|cooperativeMatrix\b|maxStorageBufferRange|maxMemoryAllocationSize)\s*=' "$work/vulkaninfo.txt"
		grep -o -E 'VK_(KHR|NV)_cooperative_matrix[0-9]*|VK_KHR_shader_integer_dot_product|VK_EXT_memory_budget|VK_KHR_shader_float16_int8' "$work/vulkaninfo.txt" | sort -u
		sed -n '/memoryHeaps/,/memoryTypes/p' "$work/vulkaninfo.txt" | grep -E 'size|flags' | head -n 8
		echo "## llama-bench --list-devices"
		"$bin/llama-bench" --list-devices 2>&1
	} >"$aux/device.txt" 2>&1
	cat "$aux/device.txt"
	grep -q 'Vulkan0' "$aux/device.txt"
}

tests() {
	local rc=0
	# No VKLLM_VULKAN_OPTIONAL: without a device the tests fail, not skip.
	# -test.timeout ends a hung test with every goroutine's stack, before
	# timeout(1) would end it silently.
	(cd kernels/vulkan && timeout -k 10 $t_kill "$bin/vulkan.test" -test.v -test.timeout ${t_tests}s) >"$work/tests-vulkan.log" 2>&1 || rc=1
	(cd models && timeout -k 10 $t_kill "$bin/models.test" -test.v -test.run '^TestVulkan' -test.timeout ${t_tests}s) >"$work/tests-models.log" 2>&1 || rc=1
	{
		for f in "$work"/tests-vulkan.log "$work"/tests-models.log; do
			echo "## $(basename "$f")"
			grep -E '^(--- |ok|PASS|FAIL|panic)|^\s+--- (FAIL|SKIP)' "$f"
			echo "## failures and skips, in full"
			grep -E -A12 -e '--- (FAIL|SKIP)' "$f" | head -n 200
		done
	} >"$out/tests.log"
	grep -E '^(--- |ok|PASS|FAIL)' "$out/tests.log"
	return $rc
}

# gguf SPEC: the GGUF file the peer runs for SPEC.
gguf() { echo "$work/${1/:/-}.gguf"; }

# write_model SPEC: SPEC's synthetic weights as GGUF, for the peer.
write_model() {
	timeout -k 10 $(($(left) - 15)) "$bin/vkllm" bench --synthetic "$1" --write-gguf "$(gguf "$1")"
}

# bench_round SPEC ROUND: vkllm, then llama-bench, then llama-batched-bench.
bench_round() {
	local s=$1 r=$2 base
	base=$work/runs/${s/:/-}.r$r
	# No command may outlast the run's budget: what ran is kept.
	local with_peer=()
	((peer)) && with_peer=(--peer llama.cpp --peer-model "$(gguf "$s")" --peer-reps "$reps")
	timeout -k 10 $(($(left) - 15)) "$bin/vkllm" bench --synthetic "$s" --backend vulkan --pp "$pp" --tg "$tg" --batch "$batches" --kv f16 \
		--threads "$threads" --no-bandwidth --json "${with_peer[@]}" \
		>"$base.vkllm.json" 2>"$base.vkllm.err"
	local rc=$?
	tr '\r' '\n' <"$base.vkllm.err" | grep -v -e '^batched decode: batch [0-9]*, step' -e '^decode [0-9]*/' -e '^$'
	((rc == 0)) || return 1
	# The exact kernels too (no cooperative matrices), vkllm alone, where
	# the device has the mode and the spec is one of exact_specs.
	if ((has_coop)) && [[ " ${exact_specs[*]} " == *" $s "* ]]; then
		VKLLM_VULKAN_DISABLE=coopmat timeout -k 10 $(($(left) - 15)) "$bin/vkllm" bench --synthetic "$s" --backend vulkan --pp "$pp" --tg "$tg" \
			--batch "$batches" --kv f16 --threads "$threads" --no-bandwidth --json >"$base.vkllm-exact.json" 2>"$base.vkllm-exact.err" ||
			tail -n 5 "$base.vkllm-exact.err"
	fi
	((peer)) || return 0
	local steps=$((tg < 32 ? tg : 32))
	timeout -k 10 $(($(left) - 15)) "$bin/llama-batched-bench" -m "$(gguf "$s")" -c $((16 * (32 + steps) + 64)) -b 2048 -ub 512 -npp 32 -ntg "$steps" \
		-npl "$batches" -ctk f16 -ctv f16 -ngl 99 -t "$threads" --output-format jsonl 2>"$base.batched.err" |
		grep '^{' >"$base.batched.jsonl"
	rc=$?
	((rc == 0)) || tail -n 20 "$base.batched.err"
	return $rc
}

# serve: the engine's BenchmarkServe (16 requests of 128 prompt and 128
# output tokens, at once and one by one, and the bare Context's ceiling) on
# the GGUF of serve_spec, which has no tokenizer: it runs token ids.
serve() {
	# from engine/, as go test runs it (its tests read ../testdata)
	(cd engine && VKLLM_BENCH_MODEL=$(gguf "$serve_spec") VKLLM_BENCH_BACKEND=vulkan VKLLM_BENCH_KV=f16 \
		timeout -k 10 $(($(left) - 15)) "$bin/engine.test" -test.run '^$' -test.bench '^BenchmarkServe$' -test.benchtime 1x) \
		>"$aux/serve.txt" 2>&1
	local rc=$?
	cat "$aux/serve.txt"
	return $rc
}

# cells: the models' BenchmarkDecodeCells on the GGUF of serve_spec.
cells() {
	(cd models && VKLLM_BENCH_MODEL=$(gguf "$serve_spec") timeout -k 10 $(($(left) - 15)) "$bin/models.test" \
		-test.run '^$' -test.bench '^BenchmarkDecodeCells$' -test.count 3) >"$aux/cells.txt" 2>&1
	local rc=$?
	cat "$aux/cells.txt"
	return $rc
}

# sweep: vkllm bench --sweep; on success the chosen tuning applies to
# every later step.
sweep() {
	# The sweep checks its budget before every family and candidate (what
	# it cut is listed) and rewrites tuning.json after each weight type: a
	# cut keeps what finished. Its progress streams into the log.
	local limit=$(($(left) - 15 < t_sweep ? $(left) - 15 : t_sweep))
	timeout -k 10 $limit "$bin/vkllm" bench --sweep --json --sweep-out "$out/tuning.json" --sweep-budget $((limit - 10))s \
		"${sweep_flags[@]}" >"$work/sweep.json" 2> >(tee "$work/sweep.err" >&2)
	local rc=$?
	python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))
for row in r["rows"]:
    mark = "chosen" if row.get("chosen") else ("WRONG: " + row["wrong"] if row.get("wrong") else "")
    if row.get("slow") or row.get("cut"):
        mark = "SLOW: " + row["slow"] if row.get("slow") else "CUT: " + row["cut"]
    print("%-22s %-30s %10.1f us/token %8.1f GB/s  %s" % (row["key"], " ".join("%s=%d" % kv for kv in sorted(row["knobs"].items())), row["score_ns"] / 1e3, row["weight_gbs"], mark))
for c in r.get("cut") or []:
    print("cut: " + c)' \
		"$work/sweep.json" >"$aux/sweep.txt" 2>&1 || rc=1
	# what finished applies, also when the sweep was cut
	if [[ -s $out/tuning.json ]]; then
		export VKLLM_VULKAN_TUNING=$out/tuning.json
		cp "$out/tuning.json" "$keep/tuning.json"
	fi
	return $rc
}

# cpu_bench: the CPU backend on all $threads cores against llama.cpp's
# portable CPU build, one run each of cpu_specs (prefill pp, decode tg,
# the bandwidth probe), each while time is left.
cpu_bench() {
	local s base rc=0 peer_flags
	mkdir -p "$work/cpu-runs"
	for s in "${cpu_specs[@]}"; do
		if (($(left) < 75)); then
			echo "cpu: $s skipped, $(left) s left"
			echo "$s" >>"$work/cpu-runs/skipped"
			rc=1
			continue
		fi
		[[ -f $(gguf "$s") ]] || write_model "$s" || return 1
		peer_flags=()
		[[ -x $cpubin/llama-bench ]] && peer_flags=(--peer llama.cpp --peer-model "$(gguf "$s")" --peer-reps "$reps")
		base=$work/cpu-runs/${s/:/-}
		VKLLM_LLAMA_BENCH=$cpubin/llama-bench timeout -k 10 $(($(left) - 15)) "$bin/vkllm" bench --synthetic "$s" --backend cpu \
			--pp "$pp" --tg "$tg" --kv f16 --threads "$threads" --json "${peer_flags[@]}" >"$base.json" 2>"$base.err" || {
			tail -n 20 "$base.err"
			rc=1
		}
		rm -f "$(gguf "$s")"
	done
	return $rc
}

# probe: vkllm bench --probe into $OUT/probe.txt (the table; the JSON in
# the bundle), within PROBE_S seconds (default 60).
probe() {
	local limit=${PROBE_S:-60}
	timeout -k 10 $((limit + 15)) "$bin/vkllm" bench --probe --probe-budget ${limit}s --json \
		>"$aux/probe.json" 2> >(tee "$out/probe.txt" >&2)
}

ops() {
	local s
	for s in "${ops_specs[@]}"; do
		echo "## $s: vkllm bench --ops (pp $pp, tg $tg)"
		timeout -k 10 $(($(left) - 15)) "$bin/vkllm" bench --synthetic "$s" --backend vulkan --pp "$pp" --tg "$tg" --kv f16 --threads "$threads" --no-bandwidth --ops || return 1
	done >"$out/ops.txt" 2>"$work/ops.err"
	cat "$out/ops.txt"
}

echo "vkllm GPU check: small=$small specs=${specs[*]} pp=$pp tg=$tg batches=$batches rounds=$rounds budget=${budget}s"
if ! step setup setup; then
	echo "setup failed: nothing else can run"
	exit 1
fi
step facts facts
# whether the device lists cooperative matrices (the exact-kernel reruns
# change nothing where it does not)
has_coop=0
grep -q 'VK_KHR_cooperative_matrix' "$aux/device.txt" 2>/dev/null && has_coop=1
# The probe (vkllm bench --probe: what the kernels reach against a plain
# streaming read, and which construct costs what) and the tests come
# first: they are short and say what the rest of the lease is worth.
if [[ $do_probe == 1 ]]; then
	step probe probe
else
	skip probe "PROBE=0"
fi
if [[ $do_tests == 1 ]]; then
	step tests tests
else
	skip tests "TESTS=0"
fi
if [[ $do_sweep == only ]]; then
	# the whole budget, less CPU_S for the CPU step
	t_sweep=$(($(left) - 30 - (do_cpu ? cpu_s : 0)))
	step sweep sweep
	((do_cpu)) && step cpu cpu_bench
	python3 tools/gpu/summarize.py --small="$small" --work "$work" --aux "$aux" --out "$out" --pp "$pp" --tg "$tg" --specs "${specs[*]}" || failed=1
	echo "total $(($(date +%s) - start)) s; results in $out"
	exit $failed
fi
if [[ $do_sweep != 0 ]]; then
	step sweep sweep
else
	# a sweep's tuning from an earlier call: .gpu/tuning.json (copied there
	# by hand), else the one a SWEEP=only call left on this machine
	tuning=
	for f in "$gpu/tuning.json" "$keep/tuning.json"; do
		[[ -f $f ]] && { tuning=$f; break; }
	done
	if [[ -n $tuning ]]; then
		export VKLLM_VULKAN_TUNING=$tuning
		skip sweep "SWEEP=0; the tuning of $tuning"
		cp "$tuning" "$out/tuning.json"
	else
		skip sweep "SWEEP=0, no earlier tuning"
	fi
fi
# The op profile first (about 20 s on an H100; synthetic weights, no
# GGUF): it is what the bench rounds, budgeted last, cannot replace. Each
# model's GGUF is written just before its first round (a model no round
# reaches costs nothing), and serving and the cells benchmark, which need
# serve_spec's GGUF, follow the first round.
# The CPU step, last, keeps CPU_S of the budget: what runs before it sees
# a budget that much smaller.
reserve=$((do_cpu ? cpu_s : 0))
budget=$((budget - reserve))
if (($(left) > 60)); then
	step ops ops
else
	skip ops "$(left) s left"
fi
declare -A last
for r in $(seq 1 "$rounds"); do
	for s in "${specs[@]}"; do
		need=$((${last[$s]:-40} * 3 / 2))
		if (($(left) < need)); then
			skip "bench $s round $r" "$(left) s left, the round needs about $need"
			continue
		fi
		if [[ ! -f $(gguf "$s") ]] && ! step "write $s" write_model "$s"; then
			skip "bench $s round $r" "its GGUF was not written"
			continue
		fi
		t0=$(date +%s)
		step "bench $s round $r" bench_round "$s" "$r"
		last[$s]=$(($(date +%s) - t0 + 1))
	done
	if ((r == 1)); then
		for st in cells serve; do
			if (($(left) > 60)) && { [[ -f $(gguf "$serve_spec") ]] || step "write $serve_spec" write_model "$serve_spec"; }; then
				step "$st" "$st"
			else
				skip "$st" "$(left) s left"
			fi
		done
	fi
done
rm -f "$work"/*.gguf
budget=$((budget + reserve))
if ((do_cpu)); then
	step cpu cpu_bench
fi

python3 tools/gpu/summarize.py --small="$small" --work "$work" --aux "$aux" --out "$out" --pp "$pp" --tg "$tg" --specs "${specs[*]}" || failed=1
echo "total $(($(date +%s) - start)) s; results in $out"
exit $failed
