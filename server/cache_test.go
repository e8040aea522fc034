package server

import (
	"context"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"
)

// TestInferenceCacheHit: a repeated greedy chat request, streamed and
// not, and a repeated json_object one, are answered with the same bytes
// and no forward pass; the hit reports its whole prompt cached and
// /metrics counts it.
func TestInferenceCacheHit(t *testing.T) {
	ts := newTestServer(t, Config{})
	ts.waitLoaded()
	c := ts.client()
	ctx := context.Background()
	params := openai.ChatCompletionNewParams{Model: "tiny", Messages: user("Tell me about the sea"),
		MaxTokens: openai.Int(12), Temperature: openai.Float(0)}

	first, err := c.Chat.Completions.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	before := ts.gen().Stats()
	again, err := c.Chat.Completions.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	after := ts.gen().Stats()
	if after.ComputedTokens != before.ComputedTokens {
		t.Errorf("the hit ran the model: computed tokens %d → %d", before.ComputedTokens, after.ComputedTokens)
	}
	if a, b := first.Choices[0].Message.Content, again.Choices[0].Message.Content; a != b || a == "" {
		t.Errorf("hit %q, first %q", b, a)
	}
	if u := again.Usage; u.PromptTokensDetails.CachedTokens != u.PromptTokens || u.CompletionTokens != first.Usage.CompletionTokens {
		t.Errorf("hit's usage %+v, first's %+v", u, first.Usage)
	}

	// Streamed: the hit's chunks are the first run's.
	chunks := func() []string {
		s := c.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: "tiny", Messages: user("A streamed story"),
			MaxTokens: openai.Int(10), Temperature: openai.Float(0)})
		var out []string
		for s.Next() {
			for _, ch := range s.Current().Choices {
				out = append(out, ch.Delta.Content+"|"+ch.FinishReason)
			}
		}
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	one := chunks()
	before = ts.gen().Stats()
	two := chunks()
	if ts.gen().Stats().ComputedTokens != before.ComputedTokens {
		t.Error("the streamed hit ran the model")
	}
	if strings.Join(one, "\x00") != strings.Join(two, "\x00") || len(one) < 3 {
		t.Errorf("streamed hit's chunks differ:\n %q\n %q", one, two)
	}

	// A constrained request hits under the same response_format only.
	jsonObj := params
	jsonObj.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONObject: &shared.ResponseFormatJSONObjectParam{}}
	if _, err := c.Chat.Completions.New(ctx, jsonObj); err != nil {
		t.Fatal(err)
	}
	before = ts.gen().Stats()
	if _, err := c.Chat.Completions.New(ctx, jsonObj); err != nil {
		t.Fatal(err)
	}
	if ts.gen().Stats().ComputedTokens != before.ComputedTokens {
		t.Error("the json_object hit ran the model")
	}

	// Sampled without a seed: never cached.
	sampled := params
	sampled.Temperature = openai.Float(1)
	for range 2 {
		before = ts.gen().Stats()
		if _, err := c.Chat.Completions.New(ctx, sampled); err != nil {
			t.Fatal(err)
		}
		if ts.gen().Stats().ComputedTokens == before.ComputedTokens {
			t.Error("a sampled request without a seed was answered from the cache")
		}
	}

	_, _, body := ts.do("GET", "/metrics", "", "")
	for _, want := range []string{`vkllm:inference_cache_hits_total{model_name="tiny"} 3`, `vkllm:inference_cache_bytes{model_name="tiny"} `} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	ts.settle()
}
