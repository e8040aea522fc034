package server

import (
	"context"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

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
		Open: func(Spec) (*Model, error) { return &Model{Gen: f, ToolFormat: chat.FormatNone}, nil }})
	ts.waitLoaded()
	return ts, f
}

var weatherTool = openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
	Name: "get_weather", Description: openai.String("Weather in a city"),
	Parameters: shared.FunctionParameters{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}},
})

// TestToolCalls runs the real handlers over a generator that replies with
// a Hermes tool call: the server must describe the tools to the model (the
// tiny model's ChatML template knows none), parse the call and answer in
// OpenAI's shape, streaming or not.
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
	sys := f.reqs[0].Messages[0]
	if sys.Role != "system" || !strings.Contains(sys.Content, "<tools>") || !strings.Contains(sys.Content, `"get_weather"`) || strings.Contains(sys.Content, mustCallTool) {
		t.Fatalf("tools not described to the model: %+v", f.reqs[0].Messages)
	}

	// Streaming: the accumulated chunks give the same call.
	st := c.Chat.Completions.NewStreaming(ctx, p)
	var acc openai.ChatCompletionAccumulator
	for st.Next() {
		acc.AddChunk(st.Current())
	}
	if st.Err() != nil {
		t.Fatal(st.Err())
	}
	st.Close()
	if len(acc.Choices) != 1 || acc.Choices[0].FinishReason != "tool_calls" || len(acc.Choices[0].Message.ToolCalls) != 1 ||
		acc.Choices[0].Message.ToolCalls[0].Function.Arguments != call.Function.Arguments {
		t.Fatalf("streamed %+v", acc.Choices)
	}

	// required adds the instruction; none offers no tools and parses nothing.
	p.ToolChoice = openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("required")}
	if _, err := c.Chat.Completions.New(ctx, p); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(f.reqs[2].Messages[0].Content, mustCallTool) {
		t.Errorf("required: no instruction in %q", f.reqs[2].Messages[0].Content)
	}
	p.ToolChoice = openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("none")}
	resp, err = c.Chat.Completions.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Choices[0].FinishReason != "stop" || resp.Choices[0].Message.Content != toolReply || len(resp.Choices[0].Message.ToolCalls) != 0 {
		t.Errorf("none: %+v", resp.Choices[0])
	}
	if len(f.reqs[3].Messages) != 1 || len(f.reqs[3].Tools) != 0 {
		t.Errorf("none: the model was offered tools: %+v", f.reqs[3])
	}
	// A named function: only that one is offered.
	p.ToolChoice = openai.ChatCompletionToolChoiceOptionUnionParam{OfFunctionToolChoice: &openai.ChatCompletionNamedToolChoiceParam{
		Function: openai.ChatCompletionNamedToolChoiceFunctionParam{Name: "get_weather"}}}
	resp, err = c.Chat.Completions.New(ctx, p)
	if err != nil || resp.Choices[0].FinishReason != "tool_calls" {
		t.Fatalf("named: %v %+v", err, resp)
	}
	p.ToolChoice = openai.ChatCompletionToolChoiceOptionUnionParam{OfFunctionToolChoice: &openai.ChatCompletionNamedToolChoiceParam{
		Function: openai.ChatCompletionNamedToolChoiceFunctionParam{Name: "other"}}}
	_, err = c.Chat.Completions.New(ctx, p)
	checkAPIError(t, err, 400, "tool_choice")
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
