package benchcmd

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/vkllm/vkllm/tensor"
)

// Peer is the other engine's numbers from the same run: llama.cpp's
// llama-bench on the same file, threads and KV type. PPTPS and TGTPS are
// llama-bench's avg_ts over Reps repetitions, the stddevs its stddev_ts.
type Peer struct {
	Name     string  `json:"name"`
	PPTPS    float64 `json:"pp_tps"`
	TGTPS    float64 `json:"tg_tps"`
	PPStddev float64 `json:"pp_stddev_tps"`
	TGStddev float64 `json:"tg_stddev_tps"`
	Reps     int     `json:"reps"`
	// Version is what llama-bench --version names (llama.cpp's cmake
	// project version, e.g. "0.5.0-dev"); Commit and BuildNumber are its
	// JSON's build_commit and build_number (0 when built from a tree
	// without git history, as tools/build-llama-bench.sh builds it).
	Version     string `json:"version"`
	Commit      string `json:"commit"`
	BuildNumber int    `json:"build_number"`
	CPUInfo     string `json:"cpu_info,omitempty"`
	Backends    string `json:"backends,omitempty"`
	// Commands are the llama-bench command lines run, one per phase.
	Commands []string `json:"commands"`
}

var (
	// errNoLlamaBench: the llama-bench binary is not where the bench looks.
	errNoLlamaBench = errors.New("bench: llama-bench not found")
	// errPeerOutput: llama-bench's output is not the JSON the bench asked for.
	errPeerOutput = errors.New("bench: unexpected llama-bench output")
)

// llamaCppVersion is the llama-cpp-python sdist whose vendored llama.cpp
// tools/build-llama-bench.sh builds; it names the cache folder.
const llamaCppVersion = "0.3.36"

// llamaBenchPath is $VKLLM_LLAMA_BENCH, or else where
// tools/build-llama-bench.sh leaves the binary:
// ${XDG_CACHE_HOME:-$HOME/.cache}/vkllm/llama.cpp-<version>/llama-bench.
// It fails with errNoLlamaBench when no file is there.
func llamaBenchPath() (string, error) {
	path := os.Getenv("VKLLM_LLAMA_BENCH")
	if path == "" {
		cache := os.Getenv("XDG_CACHE_HOME")
		if cache == "" {
			home, err := os.UserHomeDir()
			if err != nil {
				return "", fmt.Errorf("%w: %v (set VKLLM_LLAMA_BENCH, or run tools/build-llama-bench.sh)", errNoLlamaBench, err)
			}
			cache = filepath.Join(home, ".cache")
		}
		path = filepath.Join(cache, "vkllm", "llama.cpp-"+llamaCppVersion, "llama-bench")
	}
	if st, err := os.Stat(path); err != nil || st.IsDir() {
		return "", fmt.Errorf("%w at %s: build it with tools/build-llama-bench.sh (or set VKLLM_LLAMA_BENCH to the binary)", errNoLlamaBench, path)
	}
	return path, nil
}

// llamaBenchArgs are the arguments of the two llama-bench runs that match
// the bench's prefill and decode. Prefill: pp tokens as one batch and one
// ubatch (-b and -ub pp), from an empty cache. Decode: tg tokens one at a
// time after a pp-token prompt (-d pp, which llama-bench fills untimed),
// as the bench decodes after its prefill. Both: the same threads, the same
// KV cache type for K and V, the weights mmapped (as models.Open maps
// them), reps repetitions after llama-bench's warmup, JSON out. Flash
// attention and the rest stay llama-bench's defaults.
func llamaBenchArgs(model string, pp, tg, threads, reps int, kv tensor.DType) (prefill, decode []string) {
	kvName := strings.ToLower(kv.String())
	common := []string{
		"-m", model,
		"-t", strconv.Itoa(threads),
		"-ctk", kvName, "-ctv", kvName,
		"-b", strconv.Itoa(pp), "-ub", strconv.Itoa(pp),
		"-lm", "mmap",
		"-r", strconv.Itoa(reps),
		"-o", "json",
	}
	prefill = append(append([]string{}, common...), "-p", strconv.Itoa(pp), "-n", "0")
	decode = append(append([]string{}, common...), "-p", "0", "-n", strconv.Itoa(tg), "-d", strconv.Itoa(pp))
	return prefill, decode
}

// llamaBenchTest is one test of llama-bench's -o json output (the fields
// the bench reads).
type llamaBenchTest struct {
	BuildCommit string  `json:"build_commit"`
	BuildNumber int     `json:"build_number"`
	CPUInfo     string  `json:"cpu_info"`
	Backends    string  `json:"backends"`
	NThreads    int     `json:"n_threads"`
	TypeK       string  `json:"type_k"`
	TypeV       string  `json:"type_v"`
	NPrompt     int     `json:"n_prompt"`
	NGen        int     `json:"n_gen"`
	NDepth      int     `json:"n_depth"`
	AvgTS       float64 `json:"avg_ts"`
	StddevTS    float64 `json:"stddev_ts"`
	SamplesNS   []int64 `json:"samples_ns"`
}

// parseLlamaBench reads llama-bench's -o json output (an array of tests)
// and returns the one test it must hold: nPrompt prompt tokens and nGen
// generated at depth nDepth, on threads threads with a kv cache, with a
// positive avg_ts. Anything else is errPeerOutput.
func parseLlamaBench(out []byte, nPrompt, nGen, nDepth, threads int, kv string) (llamaBenchTest, error) {
	var tests []llamaBenchTest
	if err := json.Unmarshal(out, &tests); err != nil {
		return llamaBenchTest{}, fmt.Errorf("%w: %v", errPeerOutput, err)
	}
	if len(tests) != 1 {
		return llamaBenchTest{}, fmt.Errorf("%w: %d tests, want 1", errPeerOutput, len(tests))
	}
	t := tests[0]
	switch {
	case t.NPrompt != nPrompt || t.NGen != nGen || t.NDepth != nDepth:
		return t, fmt.Errorf("%w: test pp%d tg%d at depth %d, want pp%d tg%d at depth %d",
			errPeerOutput, t.NPrompt, t.NGen, t.NDepth, nPrompt, nGen, nDepth)
	case t.NThreads != threads || t.TypeK != kv || t.TypeV != kv:
		return t, fmt.Errorf("%w: %d threads, KV %s/%s, want %d threads, KV %s", errPeerOutput, t.NThreads, t.TypeK, t.TypeV, threads, kv)
	case !(t.AvgTS > 0):
		return t, fmt.Errorf("%w: avg_ts %v", errPeerOutput, t.AvgTS)
	}
	return t, nil
}

// runPeer runs llama.cpp's llama-bench (see llamaBenchPath) twice, for
// prefill and for decode (see llamaBenchArgs), and returns its numbers.
func runPeer(name, path string, pp, tg, threads, reps int, kv tensor.DType) (*Peer, error) {
	if name != "llama.cpp" {
		return nil, fmt.Errorf("unknown peer %q (only llama.cpp)", name)
	}
	bin, err := llamaBenchPath()
	if err != nil {
		return nil, err
	}
	version, err := llamaBenchVersion(bin)
	if err != nil {
		return nil, err
	}
	kvName := strings.ToLower(kv.String())
	prefillArgs, decodeArgs := llamaBenchArgs(path, pp, tg, threads, reps, kv)
	p := &Peer{Name: name, Reps: reps, Version: version}
	run := func(args []string, nPrompt, nGen, nDepth int) (llamaBenchTest, error) {
		p.Commands = append(p.Commands, commandLine(bin, args))
		out, err := exec.Command(bin, args...).Output()
		if err != nil {
			var exit *exec.ExitError
			if errors.As(err, &exit) && len(exit.Stderr) > 0 {
				return llamaBenchTest{}, fmt.Errorf("peer llama.cpp: %s: %w: %s", commandLine(bin, args), err, lastLines(exit.Stderr, 10))
			}
			return llamaBenchTest{}, fmt.Errorf("peer llama.cpp: %s: %w", commandLine(bin, args), err)
		}
		return parseLlamaBench(out, nPrompt, nGen, nDepth, threads, kvName)
	}
	prefill, err := run(prefillArgs, pp, 0, 0)
	if err != nil {
		return nil, err
	}
	decode, err := run(decodeArgs, 0, tg, pp)
	if err != nil {
		return nil, err
	}
	p.PPTPS, p.PPStddev = prefill.AvgTS, prefill.StddevTS
	p.TGTPS, p.TGStddev = decode.AvgTS, decode.StddevTS
	p.Commit, p.BuildNumber = prefill.BuildCommit, prefill.BuildNumber
	p.CPUInfo, p.Backends = prefill.CPUInfo, prefill.Backends
	return p, nil
}

// llamaBenchVersion runs bin --version and returns the version its first
// line names ("version: 0.5.0-dev (build 0, commit 0c1e57098)").
func llamaBenchVersion(bin string) (string, error) {
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("peer llama.cpp: %s --version: %w: %s", bin, err, lastLines(out, 10))
	}
	for _, line := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "version: "); ok {
			v, _, _ = strings.Cut(v, " ")
			return v, nil
		}
	}
	return "", fmt.Errorf("%w: %s --version printed %q", errPeerOutput, bin, lastLines(out, 3))
}

// commandLine is bin and args as one shell-quoted line.
func commandLine(bin string, args []string) string {
	quoted := make([]string, 0, 1+len(args))
	for _, a := range append([]string{bin}, args...) {
		if a == "" || strings.ContainsAny(a, " \t\n'\"\\$`*?[]{}()<>|&;#~") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		quoted = append(quoted, a)
	}
	return strings.Join(quoted, " ")
}

// lastLines is the last n lines of b, trimmed.
func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
