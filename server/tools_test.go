package server

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"github.com/vkllm/vkllm/engine"
	"github.com/vkllm/vkllm/internal/testmodel"
	"github.com/vkllm/vkllm/tokenizer"
	"github.com/vkllm/vkllm/tokenizer/chat"
)

const toolReply = "Let me look. <tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"unit\": \"c\"}}\n</tool_call>"

func newFakeServer(t *testing.T, reply string) (*testServer, *fakeGen) {
	tok, err := tokenizer.FromFile(tinyDir)
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeGen{tok: tok, reply: reply}
	ts := newTestServer(t, Config{Models: []Spec{{Name: "fake", Path: "-"}},
		Open: func(Spec) (*Model, error) { return &Model{Gen: f}, nil }})
	ts.waitLoaded()
	return ts, f
}

var weatherTool = openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
	Name: "get_weather", Description: openai.String("Weather in a city"),
	Parameters: shared.FunctionParameters{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}},
})

// TestToolCalls runs the real handlers over a generator that replies with
// a Hermes tool call: the server must hand the tools and tool_choice to
// the library as they came and answer the parsed call in OpenAI's shape,
// streaming or not. (The library describes the tools to the model and
// parses the call: engine's TestChatTools, and TestChatSameAsGo here.)
func TestToolCalls(t *testing.T) {
	ts, f := newFakeServer(t, toolReply)
	c := ts.client()
	ctx := context.Background()
	p := openai.ChatCompletionNewParams{Model: "fake", Messages: user("Weather in Paris?"),
		Tools: []openai.ChatCompletionToolUnionParam{weatherTool}}
	resp, err := c.Chat.Completions.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	ch := resp.Choices[0]
	if ch.FinishReason != "tool_calls" || len(ch.Message.ToolCalls) != 1 || ch.Message.Content != "Let me look." {
		t.Fatalf("%+v", ch)
	}
	call := ch.Message.ToolCalls[0]
	if call.Function.Name != "get_weather" || call.Function.Arguments != `{"city":"Paris","unit":"c"}` || !strings.HasPrefix(call.ID, "call_") || call.Type != "function" {
		t.Fatalf("call %+v", call)
	}
	if r := f.reqs[0]; len(r.Tools) != 1 || r.Tools[0].Function.Name != "get_weather" || r.ToolChoice != "" || len(r.Messages) != 1 {
		t.Fatalf("the library got %+v", r)
	}

	// Streaming: the call comes in pieces (its arguments span several
	// deltas of the generator) and adds up to the same call.
	acc, argChunks := streamChat(t, c, p)
	if len(acc.Choices) != 1 || acc.Choices[0].FinishReason != "tool_calls" || len(acc.Choices[0].Message.ToolCalls) != 1 ||
		acc.Choices[0].Message.ToolCalls[0].Function.Arguments != call.Function.Arguments ||
		acc.Choices[0].Message.ToolCalls[0].Function.Name != "get_weather" || acc.Choices[0].Message.Content != "Let me look." {
		t.Fatalf("streamed %+v", acc.Choices)
	}
	if argChunks < 2 {
		t.Errorf("the arguments came in %d chunk(s), want several", argChunks)
	}

	// required and none go to the library; none parses nothing.
	p.ToolChoice = openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("required")}
	if _, err := c.Chat.Completions.New(ctx, p); err != nil {
		t.Fatal(err)
	}
	if f.reqs[2].ToolChoice != engine.ToolRequired {
		t.Errorf("required: the library got tool choice %q", f.reqs[2].ToolChoice)
	}
	p.ToolChoice = openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("none")}
	resp, err = c.Chat.Completions.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Choices[0].FinishReason != "stop" || resp.Choices[0].Message.Content != toolReply || len(resp.Choices[0].Message.ToolCalls) != 0 {
		t.Errorf("none: %+v", resp.Choices[0])
	}
	if f.reqs[3].ToolChoice != engine.ToolNone {
		t.Errorf("none: the library got tool choice %q", f.reqs[3].ToolChoice)
	}
	// A named function: only that one is offered.
	p.ToolChoice = openai.ChatCompletionToolChoiceOptionUnionParam{OfFunctionToolChoice: &openai.ChatCompletionNamedToolChoiceParam{
		Function: openai.ChatCompletionNamedToolChoiceFunctionParam{Name: "get_weather"}}}
	resp, err = c.Chat.Completions.New(ctx, p)
	if err != nil || resp.Choices[0].FinishReason != "tool_calls" || f.reqs[4].ToolChoice != "get_weather" {
		t.Fatalf("named: %v %+v", err, resp)
	}
}

// TestNoToolCall: with tools offered, a plain reply stays content.
func TestNoToolCall(t *testing.T) {
	ts, _ := newFakeServer(t, "It is sunny.")
	c := ts.client()
	resp, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "fake",
		Messages: user("Weather?"), Tools: []openai.ChatCompletionToolUnionParam{weatherTool}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Choices[0].FinishReason != "stop" || resp.Choices[0].Message.Content != "It is sunny." || len(resp.Choices[0].Message.ToolCalls) != 0 {
		t.Fatalf("%+v", resp.Choices[0])
	}
}

var searchTool = openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
	Name: "search", Parameters: shared.FunctionParameters{"type": "object"},
})

// streamChat runs a streaming request through the client's accumulator
// and counts the chunks that carry argument text.
func streamChat(t *testing.T, c openai.Client, p openai.ChatCompletionNewParams) (acc openai.ChatCompletionAccumulator, argChunks int) {
	t.Helper()
	st := c.Chat.Completions.NewStreaming(context.Background(), p)
	defer st.Close()
	seen := map[[2]int64]bool{} // choice, call
	for st.Next() {
		ch := st.Current()
		if !acc.AddChunk(ch) {
			t.Fatalf("the accumulator refused chunk %+v", ch)
		}
		for _, choice := range ch.Choices {
			if strings.Contains(choice.Delta.Content, "<tool_call>") || strings.Contains(choice.Delta.Content, "</tool_call>") {
				t.Errorf("tool-call markup in content: %q", choice.Delta.Content)
			}
			for _, tc := range choice.Delta.ToolCalls {
				// The first delta of a call names it; the next ones carry arguments only.
				first := !seen[[2]int64{choice.Index, tc.Index}]
				seen[[2]int64{choice.Index, tc.Index}] = true
				if first != (tc.ID != "") || first != (tc.Function.Name != "") || first != (tc.Type == "function") {
					t.Errorf("call %d of choice %d: delta %+v (first: %v)", tc.Index, choice.Index, tc, first)
				}
				if tc.Function.Arguments != "" {
					argChunks++
				}
			}
		}
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	return acc, argChunks
}

// checkCall checks a forced call: finish_reason tool_calls, no content,
// one call of one of names, with a JSON object for arguments.
func checkCall(t *testing.T, what string, ch openai.ChatCompletionChoice, names ...string) openai.ChatCompletionMessageToolCallUnion {
	t.Helper()
	if ch.FinishReason != "tool_calls" || len(ch.Message.ToolCalls) != 1 || ch.Message.Content != "" {
		t.Fatalf("%s: finish %q, content %q, %d calls", what, ch.FinishReason, ch.Message.Content, len(ch.Message.ToolCalls))
	}
	call := ch.Message.ToolCalls[0]
	var args map[string]any
	if err := json.Unmarshal([]byte(call.Function.Arguments), &args); err != nil {
		t.Fatalf("%s: arguments %q are not a JSON object: %v", what, call.Function.Arguments, err)
	}
	if !slices.Contains(names, call.Function.Name) || call.Type != "function" || !strings.HasPrefix(call.ID, "call_") {
		t.Fatalf("%s: call %+v, want one of %v", what, call, names)
	}
	return call
}

// newToolServer serves the tiny model with 1024 positions as "tiny": the
// Hermes tool prompt the library adds (its ChatML template knows no
// tools) is longer than its 256.
func newToolServer(t *testing.T) *testServer {
	ts := newTestServer(t, Config{Models: []Spec{{Name: "tiny", Path: testmodel.LongContext(t, tinyDir, 1024)}}})
	ts.waitLoaded()
	return ts
}

// TestToolChoiceForced runs the tiny random model, which never writes a
// tool call of its own accord: with tool_choice "required" or a named
// function the grammar must make its reply one, streaming or not. (The
// other call formats: engine's TestChatTools.)
func TestToolChoiceForced(t *testing.T) {
	ts := newToolServer(t)
	c := ts.client()
	ctx := context.Background()
	format := chat.FormatQwen // the Hermes format the library describes the tools in
	maxLen := ts.gen().Tokenizer().MaxTokenBytes()
	named := openai.ChatCompletionToolChoiceOptionUnionParam{OfFunctionToolChoice: &openai.ChatCompletionNamedToolChoiceParam{
		Function: openai.ChatCompletionNamedToolChoiceFunctionParam{Name: "search"}}}
	required := openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("required")}
	long := 0 // streamed calls whose arguments must span several tokens
	for seed := range int64(4) {
		for _, choice := range []struct {
			name  string
			tc    openai.ChatCompletionToolChoiceOptionUnionParam
			names []string
		}{{"required", required, []string{"get_weather", "search"}}, {"named", named, []string{"search"}}} {
			p := openai.ChatCompletionNewParams{Model: "tiny", Messages: user("Weather in Paris?"),
				Tools: []openai.ChatCompletionToolUnionParam{weatherTool, searchTool}, ToolChoice: choice.tc,
				MaxTokens: openai.Int(80 + 10*seed), Seed: openai.Int(seed), N: openai.Int(2)}
			resp, err := c.Chat.Completions.New(ctx, p)
			if err != nil {
				t.Fatalf("%s seed %d: %v", choice.name, seed, err)
			}
			for i, ch := range resp.Choices {
				checkCall(t, fmt.Sprintf("%s seed %d choice %d", choice.name, seed, i), ch, choice.names...)
			}
			p.N = openai.Int(1)
			acc, argChunks := streamChat(t, c, p)
			if len(acc.Choices) != 1 {
				t.Fatalf("%s seed %d: streamed %d choices", choice.name, seed, len(acc.Choices))
			}
			call := checkCall(t, fmt.Sprintf("%s seed %d streamed", choice.name, seed), acc.Choices[0], choice.names...)
			t.Logf("%s seed %d: %s(%s) in %d argument chunks", choice.name, seed, call.Function.Name, call.Function.Arguments, argChunks)
			if format == chat.FormatQwen && len(call.Function.Arguments) > maxLen {
				long++
				if argChunks < 2 {
					t.Errorf("%s seed %d: arguments %q (longer than any token) came in %d chunk(s)", choice.name, seed, call.Function.Arguments, argChunks)
				}
			}
		}
	}
	if format == chat.FormatQwen && long == 0 {
		t.Errorf("no streamed call had arguments longer than a token: the chunk count was never checked")
	}

	// Logprobs: one per token, held-back text or not.
	acc, _ := streamChat(t, c, openai.ChatCompletionNewParams{Model: "tiny", Messages: user("Weather?"),
		Tools: []openai.ChatCompletionToolUnionParam{weatherTool}, ToolChoice: required, MaxTokens: openai.Int(90),
		Seed: openai.Int(5), Logprobs: openai.Bool(true), StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}})
	checkCall(t, "logprobs", acc.Choices[0], "get_weather")
	if n := len(acc.Choices[0].Logprobs.Content); n == 0 || int64(n) != acc.Usage.CompletionTokens {
		t.Errorf("%d logprobs for %d tokens", n, acc.Usage.CompletionTokens)
	}

	// "none" and "auto": no grammar, and the random model writes no call.
	for _, tc := range []string{"none", "auto"} {
		resp, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "tiny", Messages: user("Weather?"),
			Tools: []openai.ChatCompletionToolUnionParam{weatherTool}, MaxTokens: openai.Int(16), Seed: openai.Int(1),
			ToolChoice: openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String(tc)}})
		if err != nil {
			t.Fatal(err)
		}
		if ch := resp.Choices[0]; len(ch.Message.ToolCalls) != 0 || ch.FinishReason == "tool_calls" || strings.HasPrefix(ch.Message.Content, "<tool_call>") {
			t.Errorf("%s: %+v", tc, ch)
		}
	}

	// max_tokens too small for any call: cut, finish_reason "length".
	resp, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "tiny", Messages: user("Weather?"),
		Tools: []openai.ChatCompletionToolUnionParam{weatherTool}, ToolChoice: required, MaxTokens: openai.Int(4)})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Choices[0].FinishReason != "length" || len(resp.Choices[0].Message.ToolCalls) != 0 {
		t.Errorf("max_tokens 4: %+v", resp.Choices[0])
	}
	ts.settle()
}

// TestToolChoiceFailed: a forced call the reply lacks (the library's
// engine.ErrNoToolCall) is an error, not text.
func TestToolChoiceFailed(t *testing.T) {
	ts, f := newFakeServer(t, "It is sunny.")
	c := ts.client()
	p := openai.ChatCompletionNewParams{Model: "fake", Messages: user("Weather?"),
		Tools:      []openai.ChatCompletionToolUnionParam{weatherTool},
		ToolChoice: openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("required")}}
	_, err := c.Chat.Completions.New(context.Background(), p)
	if ae := checkAPIError(t, err, 500, ""); ae.Code != "tool_call_failed" {
		t.Errorf("code %q", ae.Code)
	}
	st := c.Chat.Completions.NewStreaming(context.Background(), p)
	for st.Next() {
		if ch := st.Current(); len(ch.Choices) > 0 && ch.Choices[0].FinishReason != "" {
			t.Errorf("a finish reason (%q) for a failed forced call", ch.Choices[0].FinishReason)
		}
	}
	if st.Err() == nil || !strings.Contains(st.Err().Error(), "tool call") {
		t.Errorf("stream error %v", st.Err())
	}
	st.Close()
	p.ToolChoice = openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("auto")}
	if _, err := c.Chat.Completions.New(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	if len(f.reqs) != 3 {
		t.Errorf("%d requests reached the library", len(f.reqs))
	}
}
