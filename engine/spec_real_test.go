package engine

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/vkllm/vkllm/kernels"
	"github.com/vkllm/vkllm/sampler"
)

// realModel is the demo model (SmolLM2-135M-Instruct Q4_1) that `make
// real-model` fetches; tests on it skip when it is absent.
func realModel(t *testing.T) string {
	dir := os.Getenv("VKLLM_MODEL_DIR")
	if dir == "" {
		home, _ := os.UserHomeDir()
		dir = filepath.Join(home, ".cache", "vkllm", "smollm2")
	}
	path := filepath.Join(dir, "SmolLM2-135M-Instruct.Q4_1.gguf")
	if _, err := os.Stat(path); err != nil {
		t.Skipf("real model not found at %s: run `make real-model`", path)
	}
	return path
}

// TestSpecRealGreedyEqual: on the demo model, 10 prompts × 128 greedy
// tokens with prompt lookup are the tokens without, one for one (the
// prompts run together, in one continuous batch).
func TestSpecRealGreedyEqual(t *testing.T) {
	if testing.Short() {
		t.Skip("real model, 10 × 128 tokens twice: not in -short")
	}
	path := realModel(t)
	prompts := []string{
		"Rewrite the following text exactly: The quick brown fox jumps over the lazy dog. The quick brown fox jumps over the lazy dog.",
		"List the numbers from one to thirty, separated by commas:",
		"def fibonacci(n):\n    if n < 2:\n        return n\n    return",
		"The capital of France is Paris. The capital of Germany is Berlin. The capital of Italy is",
		"Once upon a time, in a small village by the sea, there lived",
		"Copy this list: apples, pears, plums, cherries, apples, pears, plums, cherries,",
		"Q: What is the boiling point of water?\nA:",
		"<|im_start|>user\nRepeat after me: I like green tea in the morning.<|im_end|>\n<|im_start|>assistant\n",
		"SELECT name, age FROM users WHERE age > 30; SELECT name, age FROM",
		"Translate to French: Good morning, how are you today?",
	}
	p := sampler.Params{MaxTokens: 128, IgnoreEOS: true}
	run := func(opts Options) ([]Result, Stats) {
		opts.Backend, opts.MaxSeqs, opts.ContextLen = kernels.CPU, len(prompts), 4096
		l, err := Open(context.Background(), path, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		res, err := l.Generate(context.Background(), prompts, p)
		if err != nil {
			t.Fatal(err)
		}
		return res, l.Stats()
	}
	want, _ := run(Options{})
	got, st := run(Options{Draft: "ngram"})
	for i := range prompts {
		if len(want[i].Tokens) != 128 {
			t.Fatalf("prompt %d: %d tokens without drafts, want 128", i, len(want[i].Tokens))
		}
		if !slices.Equal(got[i].Tokens, want[i].Tokens) {
			t.Fatalf("prompt %d: tokens\n%v with prompt lookup,\n%v without", i, got[i].Tokens, want[i].Tokens)
		}
	}
	t.Logf("%d of %d drafts kept", st.DraftAccepted, st.DraftTokens)
	if st.DraftAccepted == 0 || st.DraftAccepted == st.DraftTokens {
		t.Fatalf("%d of %d drafts kept: the test needs both kept and rejected drafts", st.DraftAccepted, st.DraftTokens)
	}
}
