package server

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// TestChoicesEqualSeparate: the n choices of one request (chat and
// completions, streamed or not, two prompts for completions) are, index
// for index, the answers of n one-choice requests seeded seed, seed+1, …,
// and their usage counts the prompt once.
func TestChoicesEqualSeparate(t *testing.T) {
	ts := newTestServer(t, Config{})
	ts.waitLoaded()
	c := ts.client()
	ctx := context.Background()
	const seed = 5
	ignoreEOS := option.WithJSONSet("ignore_eos", true)
	chatParams := func(n, seed int) openai.ChatCompletionNewParams {
		return openai.ChatCompletionNewParams{Model: "tiny", Messages: user("Tell me a story"), MaxTokens: openai.Int(8),
			N: openai.Int(int64(n)), Seed: openai.Int(int64(seed)), Temperature: openai.Float(1)}
	}
	prompts := []string{"Once upon a time", "The cat"}
	cmplParams := func(n, seed int, prompts ...string) openai.CompletionNewParams {
		return openai.CompletionNewParams{Model: "tiny", Prompt: openai.CompletionNewParamsPromptUnion{OfArrayOfStrings: prompts},
			MaxTokens: openai.Int(8), N: openai.Int(int64(n)), Seed: openai.Int(int64(seed)), Temperature: openai.Float(1)}
	}
	for _, n := range []int{2, 4} {
		t.Run(fmt.Sprint("n=", n), func(t *testing.T) {
			// The separate one-choice answers.
			chatWant := make([]string, n)
			cmplWant := make([]string, len(prompts)*n)
			var promptTokens int64
			for i := range n {
				r, err := c.Chat.Completions.New(ctx, chatParams(1, seed+i), ignoreEOS)
				if err != nil {
					t.Fatal(err)
				}
				chatWant[i] = r.Choices[0].Message.Content
				promptTokens = r.Usage.PromptTokens
				for k, p := range prompts {
					r, err := c.Completions.New(ctx, cmplParams(1, seed+i, p), ignoreEOS)
					if err != nil {
						t.Fatal(err)
					}
					cmplWant[k*n+i] = r.Choices[0].Text
				}
			}
			if chatWant[0] == chatWant[1] {
				t.Fatalf("seeds %d and %d give the same answer %q", seed, seed+1, chatWant[0])
			}

			r, err := c.Chat.Completions.New(ctx, chatParams(n, seed), ignoreEOS)
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Choices) != n || r.Usage.PromptTokens != promptTokens || r.Usage.CompletionTokens != int64(8*n) {
				t.Fatalf("chat: %d choices, usage %+v", len(r.Choices), r.Usage)
			}
			for i, ch := range r.Choices {
				if ch.Index != int64(i) || ch.Message.Content != chatWant[i] {
					t.Errorf("chat choice %d (index %d): %q, separate request: %q", i, ch.Index, ch.Message.Content, chatWant[i])
				}
			}

			st := c.Chat.Completions.NewStreaming(ctx, chatParams(n, seed), ignoreEOS)
			streamed := make([]strings.Builder, n)
			for st.Next() {
				for _, ch := range st.Current().Choices {
					streamed[ch.Index].WriteString(ch.Delta.Content)
				}
			}
			if err := st.Err(); err != nil {
				t.Fatal(err)
			}
			st.Close()
			for i := range streamed {
				if streamed[i].String() != chatWant[i] {
					t.Errorf("streamed chat choice %d: %q, separate request: %q", i, streamed[i].String(), chatWant[i])
				}
			}

			cr, err := c.Completions.New(ctx, cmplParams(n, seed, prompts...), ignoreEOS)
			if err != nil {
				t.Fatal(err)
			}
			if len(cr.Choices) != len(cmplWant) || cr.Usage.CompletionTokens != int64(8*len(cmplWant)) {
				t.Fatalf("completions: %d choices, usage %+v", len(cr.Choices), cr.Usage)
			}
			for i, ch := range cr.Choices {
				if ch.Index != int64(i) || ch.Text != cmplWant[i] {
					t.Errorf("completion choice %d (index %d): %q, separate request: %q", i, ch.Index, ch.Text, cmplWant[i])
				}
			}
			ts.settle()
		})
	}
}

// TestChoicesOnePrompt: a request of n choices queues its prompt once
// (one engine request), for chat and for each prompt of completions.
func TestChoicesOnePrompt(t *testing.T) {
	ts := newTestServer(t, Config{})
	ts.waitLoaded()
	c := ts.client()
	ctx := context.Background()
	before := ts.gen().Stats().PromptTokens
	r, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "tiny", Messages: user("Hi there"),
		MaxTokens: openai.Int(3), N: openai.Int(4)})
	if err != nil {
		t.Fatal(err)
	}
	ts.settle()
	if got := ts.gen().Stats().PromptTokens - before; got != uint64(r.Usage.PromptTokens) {
		t.Errorf("chat n=4: %d prompt tokens queued, the prompt has %d", got, r.Usage.PromptTokens)
	}
	before = ts.gen().Stats().PromptTokens
	cr, err := c.Completions.New(ctx, openai.CompletionNewParams{Model: "tiny",
		Prompt:    openai.CompletionNewParamsPromptUnion{OfArrayOfStrings: []string{"a b c", "d e f g"}},
		MaxTokens: openai.Int(3), N: openai.Int(3)})
	if err != nil {
		t.Fatal(err)
	}
	ts.settle()
	if got := ts.gen().Stats().PromptTokens - before; got != uint64(cr.Usage.PromptTokens) {
		t.Errorf("completions 2 prompts × n=3: %d prompt tokens queued, the prompts have %d", got, cr.Usage.PromptTokens)
	}
}

// TestChoicesOverMaxSeqs: n above the sequences that run at once (the
// engine's MaxSeqs, 4 here) is a 400 on "n", for chat and completions.
func TestChoicesOverMaxSeqs(t *testing.T) {
	ts := newTestServer(t, Config{})
	ts.waitLoaded()
	c := ts.client()
	ctx := context.Background()
	_, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "tiny", Messages: user("Hi"),
		MaxTokens: openai.Int(3), N: openai.Int(5)})
	checkAPIError(t, err, 400, "n")
	_, err = c.Completions.New(ctx, openai.CompletionNewParams{Model: "tiny",
		Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("Hi")}, MaxTokens: openai.Int(3), N: openai.Int(5)})
	checkAPIError(t, err, 400, "n")
	ts.settle()
}

// TestChoicesBadIndex: a Generator's delta of a choice the request does
// not have is an internal error, not a panic.
func TestChoicesBadIndex(t *testing.T) {
	ts, f := newFakeServer(t, "It is sunny.")
	f.shift = 2
	c := ts.client()
	for _, n := range []int{1, 2} {
		_, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "fake",
			Messages: user("Weather?"), N: openai.Int(int64(n))})
		if ae := checkAPIError(t, err, 500, ""); !strings.Contains(ae.Message, "unknown choice") {
			t.Errorf("n=%d: %s", n, ae.Message)
		}
	}
}

// TestStreamN: streamed choices carry their index, each ends with a
// finish_reason, and the usage chunk (completions too) sums them.
func TestStreamN(t *testing.T) {
	ts := newTestServer(t, Config{})
	ts.waitLoaded()
	c := ts.client()
	st := c.Completions.NewStreaming(context.Background(), openai.CompletionNewParams{
		Model: "tiny", Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("Hi")},
		MaxTokens: openai.Int(5), N: openai.Int(3), Seed: openai.Int(1),
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	}, option.WithJSONSet("ignore_eos", true))
	finished := map[int64]string{}
	var usage int64
	for st.Next() {
		ch := st.Current()
		if len(ch.Choices) == 0 {
			usage = ch.Usage.CompletionTokens
			continue
		}
		for _, x := range ch.Choices {
			if x.Index < 0 || x.Index > 2 {
				t.Fatalf("index %d", x.Index)
			}
			if x.FinishReason != "" {
				finished[x.Index] = string(x.FinishReason)
			}
		}
	}
	if st.Err() != nil {
		t.Fatal(st.Err())
	}
	st.Close()
	if len(finished) != 3 || finished[0] != "length" || usage != 15 {
		t.Fatalf("finished %v, usage %d", finished, usage)
	}
	ts.settle()
}
