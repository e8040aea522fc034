package models

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/vkllm/vkllm/sampler"
)

// realDir is where `make real-model` puts SmolLM2-135M-Instruct.
func realDir() string {
	if d := os.Getenv("VKLLM_MODEL_DIR"); d != "" {
		return d
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "vkllm", "smollm2")
}

// realRecord is one side's 32 steps for one prompt.
type realRecord struct {
	Greedy []int32
	Top5   [][]sampler.Logprob
	Margin []float64
}

type realGolden struct {
	Prompts map[string]struct {
		Tokens   []int32
		HF       realRecord `json:"hf"`
		LlamaCpp realRecord `json:"llamacpp"`
	}
}

func loadRealGolden(t *testing.T) *realGolden {
	raw, err := os.ReadFile("../testdata/real/smollm2.golden.json")
	if err != nil {
		t.Fatal(err)
	}
	var g realGolden
	if err := json.Unmarshal(raw, &g); err != nil {
		t.Fatal(err)
	}
	if len(g.Prompts) != 2 {
		t.Fatalf("golden has %d prompts, want chat and count", len(g.Prompts))
	}
	return &g
}

// runReal checks a real model against one reference record, teacher-forced
// along the reference's tokens: vLLM's check_logprobs_close at every step,
// and, when exact, the same greedy token at every step.
func runReal(t *testing.T, m *Model, prompt []int32, ref realRecord, exact bool) {
	t.Helper()
	ctx := newCtx(t, m, ContextParams{ContextLen: 128, BatchSize: 64})
	logits, err := prefill(ctx, 0, prompt)
	if err != nil {
		t.Fatal(err)
	}
	for step, want := range ref.Greedy {
		if step > 0 {
			if logits, err = decodeToken(ctx, 0, ref.Greedy[step-1]); err != nil {
				t.Fatal(err)
			}
		}
		checkClose(t, logits, want, ref.Top5[step], 0, step)
		if got := argmax(logits); exact && got != want {
			t.Fatalf("step %d: greedy token %d, want %d", step, got, want)
		}
	}
}

// TestRealGGUF runs SmolLM2-135M Q4_1 against transformers (on the same
// weights, dequantised) and llama.cpp on the same file.
//
// transformers: 32 greedy tokens identical for both prompts.
// llama.cpp: identical for "count". For "chat" the first step is a near tie
// (transformers' float32 margin 0.08) that llama.cpp, which multiplies with
// activations quantised to Q8_1, resolves the other way (its margin 0.35);
// there the check is check_logprobs_close along llama.cpp's tokens.
//
// On the fast path (-vkllm.backend=cpu, whose Q4_1
// weights meet activations quantised to 8 bits per block, as TestParity
// says), "chat" is check_logprobs_close against transformers too: the
// fast path resolves that first-step tie as llama.cpp does (token 60, not
// 504), and neither quantised path is held to float32's choice there.
// "count" (every margin above 2.5) stays identical on both paths.
func TestRealGGUF(t *testing.T) {
	path := filepath.Join(realDir(), "SmolLM2-135M-Instruct.Q4_1.gguf")
	if _, err := os.Stat(path); err != nil {
		t.Skipf("real model not found at %s: run `make real-model`", path)
	}
	g := loadRealGolden(t)
	m := openTest(t, path)
	fast := fastTest()
	for name, p := range g.Prompts {
		t.Run(name+"/transformers", func(t *testing.T) { runReal(t, m, p.Tokens, p.HF, !fast || name == "count") })
		t.Run(name+"/llama.cpp", func(t *testing.T) { runReal(t, m, p.Tokens, p.LlamaCpp, name == "count") })
	}
}

// TestRealSafetensors: the dequantised float32 safetensors folder against
// transformers, greedy tokens identical.
func TestRealSafetensors(t *testing.T) {
	dir := filepath.Join(realDir(), "hf")
	if _, err := os.Stat(filepath.Join(dir, "config.json")); err != nil {
		t.Skipf("real safetensors folder not found at %s: run `make real-model-safetensors`", dir)
	}
	g := loadRealGolden(t)
	m := openTest(t, dir)
	for name, p := range g.Prompts {
		t.Run(name, func(t *testing.T) { runReal(t, m, p.Tokens, p.HF, true) })
	}
}
