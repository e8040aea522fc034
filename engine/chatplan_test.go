package engine

import (
	"context"
	"errors"
	"testing"

	"github.com/vkllm/vkllm/errcode"
	"github.com/vkllm/vkllm/tokenizer/chat"
)

// TestDuplicateToolNames: the planner refuses a request whose tools
// repeat a name (offered or not: ToolNone too) with a *ToolNameError
// naming the second, at every chat entry point.
func TestDuplicateToolNames(t *testing.T) {
	tiny(t)
	l := openLLM(t, Options{ContextLen: 256, MaxSeqs: 2})
	defer l.Close()
	fn := func(name string) chat.Tool {
		return chat.Tool{Type: "function", Function: chat.ToolFunction{Name: name}}
	}
	for _, choice := range []string{"", ToolNone, ToolRequired, "g"} {
		req := ChatRequest{Messages: []chat.Message{{Role: "user", Content: "hi"}}, Tools: []chat.Tool{fn("g"), fn("f"), fn("h"), fn("f")}, ToolChoice: choice}
		check := func(what string, err error) {
			t.Helper()
			var te *ToolNameError
			if !errors.As(err, &te) || te.Index != 3 || te.Name != "f" || !errors.Is(err, ErrDuplicateTool) || errcode.Of(err) != errcode.BadParams {
				t.Errorf("%s, tool choice %q: err %v [%s], want a *ToolNameError for tools[3]", what, choice, err, errcode.Of(err))
			}
		}
		_, err := l.RenderChat(req)
		check("RenderChat", err)
		_, err = firstErr(l.StreamChat(context.Background(), req, greedy(2)))
		check("StreamChat", err)
	}
	checkNoCells(t, l)
}
