package engine

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/vkllm/vkllm/sampler"
	"github.com/vkllm/vkllm/tokenizer/chat"
	"go.uber.org/goleak"
)

// TestChat: a conversation is rendered with the model's template (qwen2-tiny
// has none: ChatML) and generates exactly what the rendered prompt does
// through Generate (that tokenizer adds no special tokens either way).
func TestChat(t *testing.T) {
	tiny(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	l := openLLM(t, Options{ContextLen: 256, MaxSeqs: 2})
	defer l.Close()
	req := ChatRequest{Messages: []chat.Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "hello world"}}}
	prompt, err := l.RenderChat(req)
	if err != nil {
		t.Fatal(err)
	}
	want := "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nhello world<|im_end|>\n<|im_start|>assistant\n"
	if prompt != want {
		t.Fatalf("rendered %q, want %q", prompt, want)
	}
	p := sampler.Params{MaxTokens: 8, IgnoreEOS: true}
	got, err := l.Chat(context.Background(), req, p)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := l.Generate(context.Background(), []string{prompt}, p)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Tokens, ref[0].Tokens) || got.Text != ref[0].Text || got.Usage.PromptTokens != ref[0].Usage.PromptTokens {
		t.Fatalf("Chat %+v, Generate %+v", got, ref[0])
	}
	if _, err := l.Chat(context.Background(), ChatRequest{}, p); !errors.Is(err, sampler.ErrEmptyPrompt) {
		t.Fatalf("empty conversation: %v", err)
	}
	checkNoCells(t, l)
}
