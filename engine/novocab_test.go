package engine

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/vkllm/vkllm/internal/synth"
	"github.com/vkllm/vkllm/sampler"
	"github.com/vkllm/vkllm/tensor"
	"github.com/vkllm/vkllm/tokenizer/chat"
)

// writeNoVocab writes a tiny random model whose GGUF has llama.cpp's
// "no_vocab" tokenizer, as vkllm bench --synthetic --write-gguf does.
func writeNoVocab(t *testing.T) string {
	t.Helper()
	s, err := synth.Lookup("qwen2.5-0.5b-tiny")
	if err != nil {
		t.Fatal(err)
	}
	m, err := synth.Build(s, tensor.F32, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "novocab.gguf")
	if err := m.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestOpenNoVocab: a model without a tokenizer opens, runs token ids,
// and refuses every call that needs text with ErrNoTokenizer.
func TestOpenNoVocab(t *testing.T) {
	l, err := Open(context.Background(), writeNoVocab(t), Options{Backend: "cpu", ContextLen: 256, MaxSeqs: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if l.Tokenizer() != nil {
		t.Fatal("Tokenizer() is not nil")
	}
	ctx := context.Background()
	p := sampler.Params{MaxTokens: 5, IgnoreEOS: true}
	n := 0
	for d, err := range l.StreamTokens(ctx, []int32{3, 4, 5, 6}, p) {
		if err != nil {
			t.Fatal(err)
		}
		n += len(d.NewTokens)
	}
	if n != 5 {
		t.Fatalf("StreamTokens gave %d tokens, want 5", n)
	}
	if _, err := l.EmbedTokens(ctx, [][]int32{{3, 4}}, EmbedOptions{}); err != nil {
		t.Fatalf("EmbedTokens: %v", err)
	}
	text := map[string]error{}
	_, text["Generate"] = l.Generate(ctx, []string{"hi"}, p)
	_, text["Tokenize"] = l.Tokenize("hi", true)
	_, text["Detokenize"] = l.Detokenize([]int32{3})
	_, text["Embed"] = l.Embed(ctx, []string{"hi"}, EmbedOptions{})
	_, text["Chat"] = l.Chat(ctx, ChatRequest{Messages: []chat.Message{{Role: "user", Content: "hi"}}}, p)
	for d, err := range l.Stream(ctx, "hi", p) {
		_ = d
		text["Stream"] = err
	}
	for name, err := range text {
		if !errors.Is(err, ErrNoTokenizer) {
			t.Errorf("%s: %v, want ErrNoTokenizer", name, err)
		}
	}
}
