package engine

import (
	"context"
	"errors"
	"testing"

	"github.com/vkllm/vkllm/internal/testmodel"

	"github.com/vkllm/vkllm/sampler"
	"github.com/vkllm/vkllm/tokenizer/chat"
)

// TestOpenNoVocab: a model without a tokenizer opens, runs token ids,
// and refuses every call that needs text with ErrNoTokenizer.
func TestOpenNoVocab(t *testing.T) {
	l, err := Open(context.Background(), testmodel.NoVocab(t), Options{Backend: "cpu", ContextLen: 256, MaxSeqs: 2})
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
