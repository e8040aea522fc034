package server

import (
	"strings"
	"testing"

	"github.com/vkllm/vkllm/tokenizer/chat"
)

// feed runs a reply through a callParser in pieces of size n (0: words)
// and rebuilds the content and calls from the deltas, as a client would.
func feed(t *testing.T, reply string, n int) (content string, calls []chat.ToolCall, argChunks int, truncated bool) {
	t.Helper()
	var pieces []string
	if n == 0 {
		pieces = strings.SplitAfter(reply, " ")
	} else {
		for i := 0; i < len(reply); i += n {
			pieces = append(pieces, reply[i:min(i+n, len(reply))])
		}
	}
	p := newCallParser()
	var b strings.Builder
	apply := func(c string, ds []toolCallDelta) {
		b.WriteString(c)
		for _, d := range ds {
			if d.Index == len(calls) {
				if d.ID == "" || d.Type != "function" || d.Function.Name == "" {
					t.Fatalf("%q: first delta of call %d lacks id, type or name: %+v", reply, d.Index, d)
				}
				calls = append(calls, chat.ToolCall{ID: d.ID, Type: d.Type, Function: chat.FunctionCall{Name: d.Function.Name}})
			} else if d.Index != len(calls)-1 || d.ID != "" || d.Function.Name != "" {
				t.Fatalf("%q: delta %+v after %d calls", reply, d, len(calls))
			}
			if d.Function.Arguments != "" {
				argChunks++
			}
			calls[d.Index].Function.Arguments += d.Function.Arguments
		}
	}
	for _, piece := range pieces {
		apply(p.add(piece))
	}
	c, ds, tr := p.finish()
	apply(c, ds)
	return b.String(), calls, argChunks, tr
}

func TestCallParser(t *testing.T) {
	cases := []struct {
		reply, content string
		calls          []string // name + " " + arguments
	}{
		{"It is sunny.", "It is sunny.", nil},
		{"  spaced  \n", "  spaced  \n", nil},
		{toolReply, "Let me look.", []string{`get_weather {"city":"Paris","unit":"c"}`}},
		{"<tool_call>\n{\"name\": \"a\", \"arguments\": {\"x\": [1, {\"y\": \"} ]\\\"\"}]}}\n</tool_call>\n<tool_call>\n{\"name\": \"b\", \"arguments\": {}}\n</tool_call>",
			"", []string{`a {"x":[1,{"y":"} ]\""}]}`, "b {}"}},
		// Other key orders and string arguments are read whole.
		{"<tool_call>{\"arguments\": {\"q\": 1}, \"name\": \"s\"}</tool_call> after", "after", []string{`s {"q":1}`}},
		{"<tool_call>{\"name\": \"s\", \"arguments\": \"{\\\"q\\\": 1}\"}</tool_call>", "", []string{`s {"q": 1}`}},
		// No call: the markup stays content, as chat.ParseToolCalls leaves it.
		{"x <tool_call>not json</tool_call> y", "x <tool_call>not json</tool_call> y", nil},
		{"a <tool_ca", "a <tool_ca", nil},
		// No closing tag.
		{"<tool_call>\n{\"name\": \"f\", \"arguments\": {\"k\": \"v\"}}", "", []string{`f {"k":"v"}`}},
	}
	for _, c := range cases {
		for _, n := range []int{0, 1, 3, 1000} {
			content, calls, _, truncated := feed(t, c.reply, n)
			var got []string
			for _, call := range calls {
				got = append(got, call.Function.Name+" "+call.Function.Arguments)
			}
			if content != c.content || strings.Join(got, "|") != strings.Join(c.calls, "|") || truncated {
				t.Errorf("%q in pieces of %d: content %q calls %q truncated %v; want %q %q", c.reply, n, content, got, truncated, c.content, c.calls)
			}
			// The same calls as the whole-reply parser.
			_, want := chat.ParseToolCalls(c.reply, chat.FormatQwen)
			if len(want) != len(calls) {
				t.Errorf("%q: %d calls, chat.ParseToolCalls finds %d", c.reply, len(calls), len(want))
			}
		}
	}
	// Arguments stream: more than one delta carries them.
	if _, _, chunks, _ := feed(t, toolReply, 0); chunks < 2 {
		t.Errorf("arguments came in %d chunks, want several", chunks)
	}
	// Cut in the arguments: the call is there, truncated.
	_, calls, _, truncated := feed(t, "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"k\": \"v", 2)
	if !truncated || len(calls) != 1 || calls[0].Function.Arguments != `{"k":"v` {
		t.Errorf("cut call: %+v truncated %v", calls, truncated)
	}
}

// FuzzCallParser: whatever the reply, the parser never panics, and how
// the text is cut into deltas changes nothing: byte by byte gives the
// content and calls of the whole reply at once.
func FuzzCallParser(f *testing.F) {
	f.Add(toolReply, uint8(3))
	f.Add("a <tool_call>{\"name\": \"x\", \"arguments\": {\"k\": [1, \"}\"]}}</tool_call> b <tool_c", uint8(1))
	f.Add("<tool_call>\n{\"name\": \"f\", \"arguments\": \"s\"}", uint8(2))
	f.Add(" \n<tool_call>{}</tool_call>\n ", uint8(5))
	f.Fuzz(func(t *testing.T, reply string, n uint8) {
		c1, calls1, _, tr1 := feed(t, reply, len(reply)+1)
		c2, calls2, _, tr2 := feed(t, reply, int(n%7)+1)
		if c1 != c2 || tr1 != tr2 || len(calls1) != len(calls2) {
			t.Fatalf("%q: whole %q %v %v; in pieces of %d %q %v %v", reply, c1, calls1, tr1, n%7+1, c2, calls2, tr2)
		}
		for i := range calls1 {
			a, b := calls1[i].Function, calls2[i].Function
			if a != b {
				t.Fatalf("%q: call %d %+v whole, %+v in pieces", reply, i, a, b)
			}
		}
	})
}
