package server

import (
	"context"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
)

// TestCompletionEcho: echo puts the prompt (text, or the text of token
// ids) before each choice's text, streamed or not, as vLLM's.
func TestCompletionEcho(t *testing.T) {
	ts := newTestServer(t, Config{})
	ts.waitLoaded()
	c := ts.client()
	ctx := context.Background()
	const text = "Once upon a time"
	ids, err := ts.gen().Tokenize(text, false)
	if err != nil {
		t.Fatal(err)
	}
	ids64 := make([]int64, len(ids))
	for i, id := range ids {
		ids64[i] = int64(id)
	}
	for _, pr := range []struct {
		name   string
		prompt openai.CompletionNewParamsPromptUnion
	}{
		{"text", openai.CompletionNewParamsPromptUnion{OfString: openai.String(text)}},
		{"ids", openai.CompletionNewParamsPromptUnion{OfArrayOfTokens: ids64}},
	} {
		t.Run(pr.name, func(t *testing.T) {
			p := openai.CompletionNewParams{Model: "tiny", Prompt: pr.prompt, MaxTokens: openai.Int(5), Temperature: openai.Float(0), N: openai.Int(2)}
			plain, err := c.Completions.New(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			p.Echo = openai.Bool(true)
			echoed, err := c.Completions.New(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			streamed := make([]string, 2)
			s := c.Completions.NewStreaming(ctx, p)
			for s.Next() {
				for _, ch := range s.Current().Choices {
					streamed[ch.Index] += ch.Text
				}
			}
			if err := s.Err(); err != nil {
				t.Fatal(err)
			}
			for i := range 2 {
				want := text + plain.Choices[i].Text
				if echoed.Choices[i].Text != want || streamed[i] != want {
					t.Errorf("choice %d: echoed %q, streamed %q, want %q", i, echoed.Choices[i].Text, streamed[i], want)
				}
			}
			if !strings.HasPrefix(echoed.Choices[0].Text, text) || echoed.Usage.CompletionTokens != plain.Usage.CompletionTokens {
				t.Errorf("usage %+v, want %+v", echoed.Usage, plain.Usage)
			}
		})
	}
}
