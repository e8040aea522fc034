package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/vkllm/vkllm/sampler"
	"github.com/vkllm/vkllm/tokenizer/chat"
)

func toolList(names ...string) []chat.Tool {
	var out []chat.Tool
	for _, n := range names {
		out = append(out, chat.Tool{Type: "function", Function: chat.ToolFunction{Name: n,
			Parameters: json.RawMessage(`{"type": "object"}`)}})
	}
	return out
}

// checkCall checks a forced reply: no content, one call of one of names
// with a JSON object for arguments, finish reason tool_calls.
func checkCall(t *testing.T, what string, res Result, names ...string) {
	t.Helper()
	if res.FinishReason != "tool_calls" || res.Text != "" || len(res.ToolCalls) != 1 {
		t.Fatalf("%s: finish %q, text %q, calls %+v", what, res.FinishReason, res.Text, res.ToolCalls)
	}
	c := res.ToolCalls[0]
	var args map[string]any
	if err := json.Unmarshal([]byte(c.Function.Arguments), &args); err != nil {
		t.Fatalf("%s: arguments %q: %v", what, c.Function.Arguments, err)
	}
	if !slices.Contains(names, c.Function.Name) || c.Type != "function" || !strings.HasPrefix(c.ID, "call_") {
		t.Fatalf("%s: call %+v, want one of %v", what, c, names)
	}
}

// TestChatTools: the tiny random model never calls a tool of its own
// accord ("auto" gives text); with ToolChoice "required" or a named
// function the grammar makes its reply one parsed call, for Chat,
// StreamChat and a Session, in every format.
func TestChatTools(t *testing.T) {
	l := openToolLLM(t, 2)
	defer l.Close()
	ctx := context.Background()
	msgs := []chat.Message{{Role: "user", Content: "Weather in Paris?"}}
	tools := toolList("get_weather", "search")
	for _, f := range []chat.Format{chat.FormatNone, chat.FormatQwen, chat.FormatLlama3, chat.FormatMistral} {
		l.toolFormat = f // as if the template wrote calls in f
		for seed := range uint64(3) {
			p := sampler.Params{Temperature: 1, Seed: &seed, MaxTokens: 60 + 10*int(seed)}
			res, err := l.Chat(ctx, ChatRequest{Messages: msgs, Tools: tools, ToolChoice: ToolRequired}, p)
			if err != nil {
				t.Fatal(err)
			}
			checkCall(t, f.String()+" required", res, "get_weather", "search")
			res, err = l.Chat(ctx, ChatRequest{Messages: msgs, Tools: tools, ToolChoice: "search"}, p)
			if err != nil {
				t.Fatal(err)
			}
			checkCall(t, f.String()+" named", res, "search")

			// Streaming: the call is announced by name before the reply
			// ends, its arguments follow, and the pieces add up to Chat's.
			var got Result
			announced, argPieces := false, 0
			for d, err := range l.StreamChat(ctx, ChatRequest{Messages: msgs, Tools: tools, ToolChoice: "search"}, p) {
				if err != nil {
					t.Fatal(err)
				}
				for _, c := range d.ToolCalls {
					if c.Function.Name != "" && !d.Finished {
						announced = true
					}
					if c.Function.Arguments != "" {
						argPieces++
					}
				}
				got.add(d)
			}
			checkCall(t, f.String()+" streamed", got, "search")
			if got.ToolCalls[0].Function != res.ToolCalls[0].Function {
				t.Errorf("%v: streamed %+v, Chat %+v", f, got.ToolCalls[0], res.ToolCalls[0])
			}
			if !announced || len(got.ToolCalls[0].Function.Arguments) > l.vocab().MaxLen() && argPieces < 2 {
				t.Errorf("%v seed %d: announced early %v, arguments %q in %d pieces", f, seed, announced, got.ToolCalls[0].Function.Arguments, argPieces)
			}
		}
		// auto: no grammar, and the random model writes no call.
		seed := uint64(1)
		res, err := l.Chat(ctx, ChatRequest{Messages: msgs, Tools: tools}, sampler.Params{MaxTokens: 16, Seed: &seed, Temperature: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.ToolCalls) != 0 || res.FinishReason == "tool_calls" || res.Text == "" {
			t.Errorf("%v auto: %+v", f, res)
		}
	}
	l.toolFormat = chat.FormatNone

	// A session keeps the call in the conversation.
	s := l.NewSession()
	seed := uint64(2)
	for _, err := range s.SendChat(ctx, ChatRequest{Messages: msgs, Tools: tools, ToolChoice: ToolRequired}, sampler.Params{Temperature: 1, Seed: &seed, MaxTokens: 60}) {
		if err != nil {
			t.Fatal(err)
		}
	}
	conv := s.Messages()
	if len(conv) != 2 || conv[1].Role != "assistant" || len(conv[1].ToolCalls) != 1 || conv[1].Content != "" {
		t.Errorf("session conversation %+v", conv)
	}
	s.Close()
	checkNoCells(t, l)
}

func TestChatToolChoiceErrors(t *testing.T) {
	l := openLLM(t, Options{ContextLen: 256, MaxSeqs: 2})
	defer l.Close()
	msgs := []chat.Message{{Role: "user", Content: "hi"}}
	for _, c := range []struct {
		name string
		req  ChatRequest
		p    sampler.Params
	}{
		{"unknown function", ChatRequest{Messages: msgs, Tools: toolList("a"), ToolChoice: "b"}, sampler.Params{}},
		{"required without tools", ChatRequest{Messages: msgs, ToolChoice: ToolRequired}, sampler.Params{}},
		{"a constraint of the caller's", ChatRequest{Messages: msgs, Tools: toolList("a"), ToolChoice: ToolRequired},
			sampler.Params{Constraint: &window{}}},
		{"a bad tool name", ChatRequest{Messages: msgs, Tools: toolList(`a"b`), ToolChoice: ToolRequired}, sampler.Params{}},
	} {
		if _, err := l.Chat(context.Background(), c.req, c.p); !errors.Is(err, ErrToolChoice) {
			t.Errorf("%s: error %v, want ErrToolChoice", c.name, err)
		}
	}
	checkNoCells(t, l)
}

// TestChatToolsChoices: with several choices each is constrained and
// parsed on its own, and choice i is the reply one request seeded Seed+i
// gets.
func TestChatToolsChoices(t *testing.T) {
	l := openToolLLM(t, 4)
	defer l.Close()
	ctx := context.Background()
	req := ChatRequest{Messages: []chat.Message{{Role: "user", Content: "Weather in Paris?"}},
		Tools: toolList("get_weather", "search"), ToolChoice: ToolRequired}
	seed := uint64(7)
	p := sampler.Params{Temperature: 1, Seed: &seed, MaxTokens: 80}
	got := make([]Result, 3)
	for d, err := range l.StreamChat(ctx, req, p, WithChoices(3)) {
		if err != nil {
			t.Fatal(err)
		}
		got[d.Index].add(d)
	}
	for i := range got {
		checkCall(t, fmt.Sprintf("choice %d", i), got[i], "get_weather", "search")
		s := seed + uint64(i)
		q := p
		q.Seed = &s
		alone, err := l.Chat(ctx, req, q)
		if err != nil {
			t.Fatal(err)
		}
		if got[i].ToolCalls[0].Function != alone.ToolCalls[0].Function || got[i].Text != alone.Text {
			t.Errorf("choice %d: %+v, alone with seed+%d: %+v", i, got[i].ToolCalls, i, alone.ToolCalls)
		}
	}
}
