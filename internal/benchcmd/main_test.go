package benchcmd

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vkllm/vkllm/internal/synth"
	"github.com/vkllm/vkllm/tensor"
)

// TestOps runs the bench command on a tiny model with --ops and checks
// the breakdown: every op the decoder runs a step is there with its count
// (per layer, times tg), the shares add up to at most the whole, and the
// matmuls carry a read rate.
func TestOps(t *testing.T) {
	var out, errs bytes.Buffer
	args := []string{"--model", "../../testdata/models/qwen2-tiny-F16.gguf", "--pp", "8", "--tg", "4", "--threads", "2", "--no-bandwidth", "--ops", "--json"}
	if rc := Run(args, &out, &errs); rc != 0 {
		t.Fatalf("rc %d: %s", rc, errs.String())
	}
	var r Result
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	if r.TGTPS <= 0 || len(r.Ops) == 0 {
		t.Fatalf("tg_tps %v, %d ops", r.TGTPS, len(r.Ops))
	}
	calls := map[string]int{}
	var sum float64
	for _, s := range r.Ops {
		name, _, _ := strings.Cut(s.Op, "[")
		calls[name] += s.Calls
		sum += s.Frac
		if s.Frac <= 0 || s.US <= 0 {
			t.Errorf("%s: frac %v, %v µs", s.Op, s.Frac, s.US)
		}
		if strings.HasPrefix(s.Op, "MatMul") != (s.GBs > 0) {
			t.Errorf("%s: %v GB/s", s.Op, s.GBs)
		}
	}
	if sum > 1 {
		t.Errorf("shares add up to %v", sum)
	}
	// qwen2-tiny: 2 layers; per layer two norms, Q/K/V (one MatMuls) with
	// three bias adds and two residual adds, two RoPEs, two KV writes, one
	// attention, O and down, gate and up (one MatMuls), one SwiGLU; then the
	// final norm, the embedding and output rows, the lm_head.
	const layers, tg = 2, 4
	want := map[string]int{
		"RMSNorm": (2*layers + 1) * tg, "MatMuls×3": layers * tg, "MatMuls×2": layers * tg,
		"Add": 5 * layers * tg, "RoPE": 2 * layers * tg, "KVWrite": 2 * layers * tg,
		"Attention": layers * tg, "SwiGLU": layers * tg, "GetRows": 2 * tg,
		"MatMul": (2*layers + 1) * tg,
	}
	for op, n := range want {
		if calls[op] != n {
			t.Errorf("%s: %d calls, want %d", op, calls[op], n)
		}
	}
	if len(calls) != len(want) {
		t.Errorf("ops %v, want those of %v", calls, want)
	}
}

// TestWindowProbe runs the decode phase with the probe passes between its
// steps: it reports a bandwidth, and the peak RSS left out the probe's
// 64 MiB buffer where Linux lets the mark be reset.
func TestWindowProbe(t *testing.T) {
	res, err := bench(source{name: "../../testdata/models/qwen2-tiny-F16.gguf"}, "cpu", 8, 16, 2, tensor.F32, nil, false, true, io.Discard)
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
	res, err := bench(source{name: "../../testdata/models/qwen2-tiny-F16.gguf"}, "cpu", 8, 4, 2, tensor.F32, []int{1, 3}, false, false, io.Discard)
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
	if rc := Run(args, &out, &errs); rc != 0 {
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
	if rc := Run([]string{"--synthetic", "qwen2.5-0.5b-tiny:Q8_0", "--seed", "3", "--write-gguf", path}, io.Discard, &errs); rc != 0 {
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
		{"--synthetic", "qwen2.5-0.5b-tiny:Q8_0", "--model", "../../testdata/models/qwen2-tiny-F16.gguf"},
		{},
		{"--synthetic", "gpt-5:Q8_0"},
		{"--synthetic", "qwen2.5-0.5b:Q3_K"},
		{"--synthetic", "qwen2.5-0.5b-tiny:Q8_0", "--peer", "llama.cpp"},
		{"--model", "../../testdata/models/qwen2-tiny-F16.gguf", "--write-gguf", "x.gguf"},
	} {
		var errs bytes.Buffer
		if rc := Run(args, io.Discard, &errs); rc != 2 {
			t.Errorf("%q: rc %d, want 2 (%s)", args, rc, errs.String())
		}
	}
}

// TestPeerFailureKeepsResult: when the peer cannot run, our numbers are
// still printed, with the peer's error, and the exit code is 1.
func TestPeerFailureKeepsResult(t *testing.T) {
	t.Setenv("VKLLM_LLAMA_BENCH", filepath.Join(t.TempDir(), "no-llama-bench"))
	var out, errs bytes.Buffer
	args := []string{"--model", "../../testdata/models/qwen2-tiny-F16.gguf", "--backend", "cpu", "--pp", "8", "--tg", "2",
		"--threads", "1", "--no-bandwidth", "--json", "--peer", "llama.cpp"}
	if rc := Run(args, &out, &errs); rc != 1 {
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
