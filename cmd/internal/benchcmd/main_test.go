package benchcmd

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vkllm/vkllm/internal/synth"
	_ "github.com/vkllm/vkllm/kernels/vulkan" // registers "vulkan"
	"github.com/vkllm/vkllm/tensor"
)

// qwen2-tiny's ops in one forward: 2 layers; the first layer's attention
// norm; per layer Q/K/V (one MatMuls) with three bias adds, RoPE and KV
// writes (one RoPEKVWrite), one attention, O and down, gate and up (one
// MatMuls), one SwiGLU, and two residual adds each with the norm after
// it (AddRMSNorm: the FFN's, then the next layer's or the final one);
// then the embedding and output rows, the lm_head.
func tinyOps(forwards int) map[string]int {
	const layers = 2
	return map[string]int{
		"RMSNorm": forwards, "AddRMSNorm": 2 * layers * forwards, "MatMuls×3": layers * forwards, "MatMuls×2": layers * forwards,
		"Add": 3 * layers * forwards, "RoPEKVWrite": layers * forwards,
		"Attention": layers * forwards, "SwiGLU": layers * forwards, "GetRows": 2 * forwards,
		"MatMul": (2*layers + 1) * forwards,
	}
}

// checkOps checks one phase's table: every op of the forwards is there
// with its count, the transfers (with GPU timestamps) and nothing else,
// each with a time and, for matmuls, a read rate; the shares add up to
// at most the whole (host clock) or to the whole, to within a rounded
// nanosecond a row of a span of spanNS (GPU).
func checkOps(t *testing.T, phase string, ops []OpStat, forwards int, gpu bool, spanNS float64) {
	t.Helper()
	calls := map[string]int{}
	var sum float64
	for _, s := range ops {
		name, _, _ := strings.Cut(s.Op, "[")
		calls[name] += s.Calls
		sum += s.Frac
		if s.Frac <= 0 || s.US <= 0 {
			t.Errorf("%s: %s: frac %v, %v µs", phase, s.Op, s.Frac, s.US)
		}
		if strings.HasPrefix(s.Op, "MatMul") != (s.GBs > 0) {
			t.Errorf("%s: %s: %v GB/s", phase, s.Op, s.GBs)
		}
	}
	want := tinyOps(forwards)
	if gpu {
		// a forward uploads its tokens, positions, cells and lists, and
		// reads its logits back
		if calls["SetI32"] == 0 || calls["GetF32"] != forwards {
			t.Errorf("%s: transfers %v", phase, calls)
		}
		want["SetI32"], want["GetF32"] = calls["SetI32"], calls["GetF32"]
		if tol := float64(len(ops)) / spanNS; math.Abs(sum-1) > tol {
			t.Errorf("%s: shares add up to %v, want 1 ± %v", phase, sum, tol)
		}
	} else if sum > 1 {
		t.Errorf("%s: shares add up to %v", phase, sum)
	}
	for op, n := range want {
		if calls[op] != n {
			t.Errorf("%s: %s: %d calls, want %d", phase, op, calls[op], n)
		}
	}
	if len(calls) != len(want) {
		t.Errorf("%s: ops %v, want those of %v", phase, calls, want)
	}
}

// TestOps runs the bench command on a tiny model with --ops and checks
// both phases' tables: with the host clock on the CPU backend, and with
// GPU timestamps on Vulkan, where a decode step's GPU time is also
// reported beside its wall time.
func TestOps(t *testing.T) {
	const tg = 4
	for _, c := range []struct{ backend, clock string }{{"cpu", "host"}, {"vulkan", "gpu"}} {
		t.Run(c.backend, func(t *testing.T) {
			var out, errs bytes.Buffer
			args := []string{"--model", "../../../testdata/models/qwen2-tiny-F16.gguf", "--backend", c.backend, "--pp", "8", "--tg", "4",
				"--threads", "2", "--no-bandwidth", "--ops", "--json"}
			if rc := Run(t.Context(), args, &out, &errs); rc != 0 {
				needVulkan(t, c.backend, errs.String())
				t.Fatalf("rc %d: %s", rc, errs.String())
			}
			var r Result
			if err := json.Unmarshal(out.Bytes(), &r); err != nil {
				t.Fatal(err)
			}
			if r.TGTPS <= 0 || r.OpsClock != c.clock {
				t.Fatalf("tg_tps %v, ops_clock %q, want %q", r.TGTPS, r.OpsClock, c.clock)
			}
			gpu := c.clock == "gpu"
			checkOps(t, "prefill", r.PrefillOps, 1, gpu, r.PrefillGPUS*1e9)
			checkOps(t, "decode", r.Ops, tg, gpu, r.DecodeGPUUS*1e3*tg)
			if gpu {
				if !(r.PrefillGPUS > 0 && r.DecodeGPUUS > 0 && r.DecodeGPUUS < r.DecodeWallUS) || r.DecodeSubmits != 1 {
					t.Errorf("prefill %v s, decode step %v µs of GPU time, %v µs of wall time, %v submits",
						r.PrefillGPUS, r.DecodeGPUUS, r.DecodeWallUS, r.DecodeSubmits)
				}
			} else if r.PrefillGPUS != 0 || r.DecodeGPUUS != 0 || r.DecodeWallUS != 0 {
				t.Errorf("GPU times on the host clock: %+v", r)
			}
			var text bytes.Buffer
			printSummary(&text, &r)
			for _, want := range []string{"prefill by op (8 tokens", "decode by op (4 steps", "MatMuls×3[64 64]"} {
				if !strings.Contains(text.String(), want) {
					t.Errorf("summary lacks %q:\n%s", want, text.String())
				}
			}
			if gpu != strings.Contains(text.String(), "decode step: GPU") {
				t.Errorf("summary:\n%s", text.String())
			}
		})
	}
}

// needVulkan skips a Vulkan case where there is no device and
// VKLLM_VULKAN_OPTIONAL=1 allows that (as the kernels/vulkan tests do).
func needVulkan(t *testing.T, backend, errs string) {
	t.Helper()
	if backend == "vulkan" && os.Getenv("VKLLM_VULKAN_OPTIONAL") == "1" &&
		(strings.Contains(errs, "vulkan: no") || strings.Contains(errs, "needs cgo")) {
		t.Skipf("no Vulkan device (VKLLM_VULKAN_OPTIONAL=1): %s", errs)
	}
}

// TestWindowProbe runs the decode phase with the probe passes between its
// steps: it reports a bandwidth, and the peak RSS left out the probe's
// 64 MiB buffer where Linux lets the mark be reset.
func TestWindowProbe(t *testing.T) {
	res, err := bench(source{name: "../../../testdata/models/qwen2-tiny-F16.gguf"}, "cpu", 8, 16, 2, tensor.F32, nil, false, true, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if res.WindowGBs <= 0 || res.TGTPS <= 0 {
		t.Fatalf("window %v GB/s, tg %v tok/s", res.WindowGBs, res.TGTPS)
	}
	before := res.PeakRSSMB
	if err := resetPeakRSS(); err != nil {
		t.Logf("the RSS high-water mark cannot be reset here (%v): the peak counts the probe's buffer", err)
	} else if after := peakRSSMB(); after >= before+64 {
		t.Errorf("peak RSS %v MiB after the decode, %v before the probe's buffer: the buffer counts", after, before)
	}
	p := newProbe(1, windowBytes)
	p.pass()
	p.release()
	p.release() // a second release does nothing
	if p.best <= 0 || p.passes != 1 {
		t.Errorf("one pass: best %v, %d passes", p.best, p.passes)
	}
}

// TestBatched runs the batched decode for two sizes: each reports its
// size, min(tg, 32) steps and a rate.
func TestBatched(t *testing.T) {
	res, err := bench(source{name: "../../../testdata/models/qwen2-tiny-F16.gguf"}, "cpu", 8, 4, 2, tensor.F32, []int{1, 3}, false, false, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Batch) != 2 {
		t.Fatalf("%d batch results, want 2", len(res.Batch))
	}
	for i, want := range []int{1, 3} {
		if b := res.Batch[i]; b.Batch != want || b.Steps != 4 || !(b.TPS > 0) {
			t.Errorf("batch result %d: %+v, want batch %d, 4 steps, a rate", i, b, want)
		}
	}
}

// TestSynthetic benches a tiny synthetic model from memory, and checks
// that --write-gguf writes the bytes synth.Build gives for the same seed.
func TestSynthetic(t *testing.T) {
	var out, errs bytes.Buffer
	args := []string{"--synthetic", "qwen2.5-0.5b-tiny:Q8_0", "--seed", "3", "--backend", "cpu", "--pp", "8", "--tg", "4", "--batch", "2",
		"--threads", "2", "--no-bandwidth", "--json"}
	if rc := Run(t.Context(), args, &out, &errs); rc != 0 {
		t.Fatalf("rc %d: %s", rc, errs.String())
	}
	var r Result
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	if r.Synthetic != "qwen2.5-0.5b-tiny:Q8_0" || r.Seed != 3 || r.BuildS <= 0 || r.ModelBytes <= 0 || r.PPTPS <= 0 || r.TGTPS <= 0 || len(r.Batch) != 1 {
		t.Fatalf("result %+v", r)
	}

	path := filepath.Join(t.TempDir(), "m.gguf")
	if rc := Run(t.Context(), []string{"--synthetic", "qwen2.5-0.5b-tiny:Q8_0", "--seed", "3", "--write-gguf", path}, io.Discard, &errs); rc != 0 {
		t.Fatalf("--write-gguf: rc %d: %s", rc, errs.String())
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s, dt, _ := synth.ParseSpec("qwen2.5-0.5b-tiny:Q8_0")
	m, err := synth.Build(s, dt, 3, 0)
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := m.WriteGGUF(&want); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("--write-gguf wrote %d bytes that differ from synth's %d", len(got), want.Len())
	}
	if r.ModelBytes != m.Bytes() {
		t.Errorf("model_bytes %d, want the tensors' %d", r.ModelBytes, m.Bytes())
	}
}

// TestSyntheticFlags: the flag combinations that cannot work are refused
// with exit code 2 before anything runs.
func TestSyntheticFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--synthetic", "qwen2.5-0.5b-tiny:Q8_0", "--model", "../../../testdata/models/qwen2-tiny-F16.gguf"},
		{},
		{"--synthetic", "gpt-5:Q8_0"},
		{"--synthetic", "qwen2.5-0.5b:Q8_K"},
		{"--synthetic", "qwen2.5-0.5b-tiny:Q8_0", "--peer", "llama.cpp"},
		{"--model", "../../../testdata/models/qwen2-tiny-F16.gguf", "--write-gguf", "x.gguf"},
	} {
		var errs bytes.Buffer
		if rc := Run(t.Context(), args, io.Discard, &errs); rc != 2 {
			t.Errorf("%q: rc %d, want 2 (%s)", args, rc, errs.String())
		}
	}
}

// TestPeerFailureKeepsResult: when the peer cannot run, our numbers are
// still printed, with the peer's error, and the exit code is 1.
func TestPeerFailureKeepsResult(t *testing.T) {
	t.Setenv("VKLLM_LLAMA_BENCH", filepath.Join(t.TempDir(), "no-llama-bench"))
	var out, errs bytes.Buffer
	args := []string{"--model", "../../../testdata/models/qwen2-tiny-F16.gguf", "--backend", "cpu", "--pp", "8", "--tg", "2",
		"--threads", "1", "--no-bandwidth", "--json", "--peer", "llama.cpp"}
	if rc := Run(t.Context(), args, &out, &errs); rc != 1 {
		t.Fatalf("rc %d, want 1: %s", rc, errs.String())
	}
	var r Result
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("%v: %q", err, out.String())
	}
	if r.TGTPS <= 0 || r.Peer != nil || !strings.Contains(r.PeerError, "llama-bench not found") {
		t.Fatalf("tg %v, peer %+v, peer_error %q", r.TGTPS, r.Peer, r.PeerError)
	}
}
