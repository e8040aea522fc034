package server

import (
	"context"
	"encoding/json"
	"iter"
	"slices"
	"sync"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"github.com/vkllm/vkllm/engine"
	"github.com/vkllm/vkllm/internal/testmodel"
	"github.com/vkllm/vkllm/sampler"
	"github.com/vkllm/vkllm/tokenizer/chat"
)

// recordingLLM is an engine.LLM that records, for each chat request the
// server hands it, the prompt tokens the LLM runs for it and the
// sampling parameters.
type recordingLLM struct {
	*engine.LLM
	mu     sync.Mutex
	tokens [][]int32
	params []sampler.Params
	errs   []error
}

func (r *recordingLLM) StreamChat(ctx context.Context, req engine.ChatRequest, p sampler.Params, opts ...engine.StreamOption) iter.Seq2[engine.Delta, error] {
	ids, err := r.TokenizeChat(req, true)
	r.mu.Lock()
	r.tokens, r.params, r.errs = append(r.tokens, ids), append(r.params, p), append(r.errs, err)
	r.mu.Unlock()
	return r.LLM.StreamChat(ctx, req, p, opts...)
}

// TestChatSameAsGo runs one conversation with tools through HTTP and
// through the Go API (LLM.TokenizeChat and LLM.Chat) on the tiny model,
// whose ChatML template knows no tools: the prompt tokens the LLM runs
// are the same (the tool prompt included), and so is the forced call
// the grammar makes of the seeded draw.
func TestChatSameAsGo(t *testing.T) {
	opts := tinyOptions()
	opts.CacheBytes = -1 // each run computes its reply
	l, err := engine.Open(context.Background(), testmodel.LongContext(t, tinyDir, 1024), opts)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recordingLLM{LLM: l}
	ts := newTestServer(t, Config{Models: []Spec{{Name: "tiny", Path: "-"}}, Open: func(Spec) (*Model, error) { return &Model{Gen: rec}, nil }})
	ts.waitLoaded()
	c := ts.client()
	// Keys in order: openai-go sends the parameters as a sorted map.
	const params = `{"properties":{"city":{"maxLength":12,"type":"string"}},"required":["city"],"type":"object"}`
	var ps shared.FunctionParameters
	if err := json.Unmarshal([]byte(params), &ps); err != nil {
		t.Fatal(err)
	}
	for _, choice := range []string{"auto", "required"} {
		resp, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "tiny",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("Be brief."), openai.UserMessage("Weather in Paris?")},
			Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
				Name: "get_weather", Description: openai.String("Weather in a city"), Parameters: ps})},
			ToolChoice: openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String(choice)},
			MaxTokens:  openai.Int(120), Seed: openai.Int(3), Temperature: openai.Float(1)})
		if err != nil {
			t.Fatal(err)
		}
		rec.mu.Lock()
		httpTokens, p, recErr := rec.tokens[len(rec.tokens)-1], rec.params[len(rec.params)-1], rec.errs[len(rec.errs)-1]
		rec.mu.Unlock()
		if recErr != nil {
			t.Fatal(recErr)
		}

		goReq := engine.ChatRequest{
			Messages:   []chat.Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Weather in Paris?"}},
			Tools:      []chat.Tool{{Type: "function", Function: chat.ToolFunction{Name: "get_weather", Description: "Weather in a city", Parameters: json.RawMessage(params)}}},
			ToolChoice: choice,
		}
		goTokens, err := l.TokenizeChat(goReq, true)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(goTokens, httpTokens) {
			goText, _ := l.Detokenize(goTokens)
			httpText, _ := l.Detokenize(httpTokens)
			t.Fatalf("%s: the Go caller's prompt (%d tokens) differs from the HTTP client's (%d):\nGo:\n%s\nHTTP:\n%s", choice, len(goTokens), len(httpTokens), goText, httpText)
		}
		res, err := l.Chat(context.Background(), goReq, p)
		if err != nil {
			t.Fatal(err)
		}
		got := resp.Choices[0]
		if res.Usage.PromptTokens != int(resp.Usage.PromptTokens) || res.FinishReason != string(got.FinishReason) ||
			res.Text != got.Message.Content || len(res.ToolCalls) != len(got.Message.ToolCalls) {
			t.Fatalf("%s: Go %+v, HTTP %+v", choice, res, got)
		}
		for i, call := range res.ToolCalls {
			h := got.Message.ToolCalls[i]
			if call.Function.Name != h.Function.Name || call.Function.Arguments != h.Function.Arguments {
				t.Errorf("%s: call %d: Go %+v, HTTP %+v", choice, i, call.Function, h.Function)
			}
		}
		if choice == "required" && (len(res.ToolCalls) != 1 || res.FinishReason != "tool_calls") {
			t.Errorf("required: %+v", res)
		}
		t.Logf("%s: %d prompt tokens; %s %q %+v", choice, len(goTokens), res.FinishReason, res.Text, res.ToolCalls)
	}
	ts.settle()
}
