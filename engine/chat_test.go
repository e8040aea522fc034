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

// TestStreamVariants: StreamChat and StreamTokens give what Chat and
// Generate give for the same prompt, and Stats counts them.
func TestStreamVariants(t *testing.T) {
	tiny(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	l := openLLM(t, Options{ContextLen: 256, MaxSeqs: 2, CacheBytes: -1}) // the repeats run: no inference cache
	defer l.Close()
	req := ChatRequest{Messages: []chat.Message{{Role: "user", Content: "hello world"}}}
	p := sampler.Params{MaxTokens: 6, IgnoreEOS: true}
	want, err := l.Chat(context.Background(), req, p)
	if err != nil {
		t.Fatal(err)
	}
	collect := func(seq func(func(Delta, error) bool)) Result {
		var r Result
		for d, err := range seq {
			if err != nil {
				t.Fatal(err)
			}
			r.add(d)
		}
		return r
	}
	got := collect(l.StreamChat(context.Background(), req, p))
	if !slices.Equal(got.Tokens, want.Tokens) || got.Text != want.Text || got.FinishReason != "length" {
		t.Fatalf("StreamChat %+v, Chat %+v", got, want)
	}
	prompt, _ := l.RenderChat(req)
	ids, _ := l.Tokenizer().Encode(prompt, false)
	got = collect(l.StreamTokens(context.Background(), ids, p))
	if !slices.Equal(got.Tokens, want.Tokens) || got.Usage.PromptTokens != len(ids) {
		t.Fatalf("StreamTokens %+v, Chat %+v", got, want)
	}
	for _, err := range l.StreamChat(context.Background(), ChatRequest{}, p) {
		if !errors.Is(err, sampler.ErrEmptyPrompt) {
			t.Fatalf("empty conversation: %v", err)
		}
	}
	if _, err := l.cellsUsed(); err != nil { // waits for the loop to publish its stats
		t.Fatal(err)
	}
	st := l.Stats()
	checkNoCells(t, l)
	// the same prompt three times: the 2nd and 3rd reuse its whole blocks
	// but the one with the last token (the cached prefix is what is in use)
	reuse := uint64((len(ids) - 1) / BlockSize * BlockSize)
	if st.GenerationTokens != 18 || st.PromptTokens != uint64(3*len(ids)) || st.Finished["length"] != 3 ||
		st.Running != 0 || st.Waiting != 0 || st.KVCells != 256 || st.KVUsed != int(reuse) ||
		st.PrefixQueries != st.PromptTokens || st.PrefixHits != 2*reuse || reuse == 0 {
		t.Fatalf("stats %+v", st)
	}
}
