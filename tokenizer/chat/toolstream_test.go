package chat

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// feedParser runs a reply through a ToolParser in pieces of size n (0:
// words) and rebuilds the content and calls from the deltas, as a client
// would.
func feedParser(t *testing.T, f Format, reply string, n int) (content string, calls []ToolCall, argChunks int, truncated bool) {
	t.Helper()
	var pieces []string
	if n == 0 {
		pieces = strings.SplitAfter(reply, " ")
	} else {
		for i := 0; i < len(reply); i += n {
			pieces = append(pieces, reply[i:min(i+n, len(reply))])
		}
	}
	ids := 0
	p := NewToolParser(f, func() string { ids++; return fmt.Sprintf("call_%d", ids) })
	var b strings.Builder
	apply := func(c string, ds []ToolCallDelta) {
		b.WriteString(c)
		for _, d := range ds {
			if d.Index == len(calls) {
				if d.ID == "" || d.Type != "function" || d.Function.Name == "" {
					t.Fatalf("%q: first delta of call %d lacks id, type or name: %+v", reply, d.Index, d)
				}
				calls = append(calls, ToolCall{ID: d.ID, Type: d.Type, Function: FunctionCall{Name: d.Function.Name}})
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
		apply(p.Add(piece))
	}
	c, ds, tr := p.Finish()
	apply(c, ds)
	for i, call := range p.Calls() {
		if i >= len(calls) || call != calls[i] {
			t.Fatalf("%q: Calls()[%d] = %+v, the deltas add up to %+v", reply, i, call, calls)
		}
	}
	return b.String(), calls, argChunks, tr
}

const hermesReply = "Let me look. <tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"unit\": \"c\"}}\n</tool_call>"

func TestToolParser(t *testing.T) {
	cases := []struct {
		format         Format
		reply, content string
		calls          []string // name + " " + arguments
		// same: ParseToolCalls gives the same content and calls.
		same bool
	}{
		{FormatQwen, "It is sunny.", "It is sunny.", nil, true},
		{FormatQwen, "  spaced  \n", "  spaced  \n", nil, true},
		{FormatQwen, hermesReply, "Let me look.", []string{`get_weather {"city":"Paris","unit":"c"}`}, true},
		{FormatQwen, "<tool_call>\n{\"name\": \"a\", \"arguments\": {\"x\": [1, {\"y\": \"} ]\\\"\"}]}}\n</tool_call>\n<tool_call>\n{\"name\": \"b\", \"arguments\": {}}\n</tool_call>",
			"", []string{`a {"x":[1,{"y":"} ]\""}]}`, "b {}"}, true},
		// Other key orders and string arguments are read whole.
		{FormatQwen, "<tool_call>{\"arguments\": {\"q\": 1}, \"name\": \"s\"}</tool_call> after", "after", []string{`s {"q":1}`}, true},
		{FormatQwen, "<tool_call>{\"name\": \"s\", \"arguments\": \"{\\\"q\\\": 1}\"}</tool_call>", "", []string{`s {"q": 1}`}, true},
		// No call: the markup stays content, as ParseToolCalls leaves it.
		{FormatQwen, "x <tool_call>not json</tool_call> y", "x <tool_call>not json</tool_call> y", nil, true},
		{FormatQwen, "a <tool_ca", "a <tool_ca", nil, true},
		// No closing tag.
		{FormatQwen, "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"k\": \"v\"}}", "", []string{`f {"k":"v"}`}, true},

		{FormatLlama3, "It is sunny.", "It is sunny.", nil, true},
		{FormatLlama3, "  {not a call", "  {not a call", nil, true},
		{FormatLlama3, `{"name": "get_weather", "parameters": {"city": "Paris", "unit": "c"}}`, "",
			[]string{`get_weather {"city":"Paris","unit":"c"}`}, true},
		{FormatLlama3, "\n {\"name\": \"a\", \"parameters\": {\"x\": [1, \"};\"]}}; {\"name\": \"b\", \"parameters\": {}}<|eom_id|>", "",
			[]string{`a {"x":[1,"};"]}`, "b {}"}, true},
		{FormatLlama3, "Let me check. <|python_tag|>{\"name\": \"f\", \"parameters\": {\"q\": \"a b\"}} {\"name\": \"g\", \"parameters\": {}}<|eot_id|>",
			"Let me check.", []string{`f {"q":"a b"}`, "g {}"}, true},
		// Other key orders, "arguments" and string arguments are read whole.
		{FormatLlama3, `{"parameters": {"q": 1}, "name": "s"}`, "", []string{`s {"q":1}`}, true},
		{FormatLlama3, `{"name": "s", "arguments": {"q": 1}}`, "", []string{`s {"q":1}`}, true},
		{FormatLlama3, `<|python_tag|>{"name": "s", "parameters": "{\"q\": 1}"}`, "", []string{`s {"q": 1}`}, true},
		// No call after the tag: all content.
		{FormatLlama3, "a <|python_tag|> print(1)", "a <|python_tag|> print(1)", nil, true},
		{FormatLlama3, "a <|python_ta", "a <|python_ta", nil, true},

		{FormatMistral, "It is sunny.", "It is sunny.", nil, true},
		{FormatMistral, `[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris", "unit": "c"}, "id": "abc123def"}]</s>`, "",
			[]string{`get_weather {"city":"Paris","unit":"c"}`}, true},
		{FormatMistral, "Sure. [TOOL_CALLS] [ {\"name\": \"a\", \"arguments\": {\"x\": \"],\"}} ,\n{\"arguments\": {}, \"name\": \"b\"}]", "Sure.",
			[]string{`a {"x":"],"}`, "b {}"}, true},
		{FormatMistral, "x [TOOL_CALLS] nothing", "x [TOOL_CALLS] nothing", nil, true},
		{FormatMistral, "x [TOOL_CALLS]", "x [TOOL_CALLS]", nil, true},
		{FormatMistral, "x [TOOL_CALLS][{\"name\": 1}]", "x [TOOL_CALLS][{\"name\": 1}]", nil, true},
		// Text after the calls stays content (ParseToolCalls takes it all as content).
		{FormatMistral, `[TOOL_CALLS][{"name": "f", "arguments": {}}] and more`, "and more", []string{"f {}"}, false},
	}
	for _, c := range cases {
		for _, n := range []int{0, 1, 2, 3, 7, 1000} {
			content, calls, _, truncated := feedParser(t, c.format, c.reply, n)
			var got []string
			for _, call := range calls {
				got = append(got, call.Function.Name+" "+call.Function.Arguments)
			}
			if content != c.content || strings.Join(got, "|") != strings.Join(c.calls, "|") || truncated {
				t.Errorf("%v %q in pieces of %d: content %q calls %q truncated %v; want %q %q",
					c.format, c.reply, n, content, got, truncated, c.content, c.calls)
			}
		}
		if !c.same {
			continue
		}
		wantContent, want := ParseToolCalls(c.reply, c.format)
		var wantCalls []string
		for _, call := range want {
			wantCalls = append(wantCalls, call.Function.Name+" "+call.Function.Arguments)
		}
		if wantContent != c.content || strings.Join(wantCalls, "|") != strings.Join(c.calls, "|") {
			t.Errorf("%v %q: ParseToolCalls gives %q %q, the stream %q %q", c.format, c.reply, wantContent, wantCalls, c.content, c.calls)
		}
	}
}

// TestToolParserIncremental: in every format a call is announced by name
// before its arguments are complete, and its arguments come in several
// pieces when the text does; a call cut in its arguments is truncated.
func TestToolParserIncremental(t *testing.T) {
	replies := map[Format]string{
		FormatQwen:    hermesReply,
		FormatLlama3:  `<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris", "unit": "c"}}`,
		FormatMistral: `[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris", "unit": "c"}}]`,
	}
	for f, reply := range replies {
		i := strings.Index(reply, `"Paris"`)
		p := NewToolParser(f, nil)
		_, ds := p.Add(reply[:i+3])
		if len(ds) != 2 || ds[0].Function.Name != "get_weather" || !strings.HasPrefix(ds[0].ID, "call_") || ds[1].Function.Arguments != `{"city":"Pa` {
			t.Errorf("%v: after %q: deltas %+v, want the name then the arguments so far", f, reply[:i+3], ds)
		}
		if _, _, chunks, _ := feedParser(t, f, reply, 0); chunks < 2 {
			t.Errorf("%v: arguments came in %d chunks, want several", f, chunks)
		}
		_, calls, _, truncated := feedParser(t, f, reply[:i+3], 2)
		if !truncated || len(calls) != 1 || calls[0].Function.Arguments != `{"city":"Pa` {
			t.Errorf("%v: cut call: %+v truncated %v", f, calls, truncated)
		}
	}
}

// fuzzParser: whatever the reply, the parser never panics, and how the
// text is cut into deltas changes nothing: in pieces gives the content
// and calls of the whole reply at once.
func fuzzParser(t *testing.T, f Format, reply string, n uint8) {
	c1, calls1, _, tr1 := feedParser(t, f, reply, len(reply)+1)
	c2, calls2, _, tr2 := feedParser(t, f, reply, int(n%7)+1)
	if c1 != c2 || tr1 != tr2 || len(calls1) != len(calls2) {
		t.Fatalf("%q: whole %q %v %v; in pieces of %d %q %v %v", reply, c1, calls1, tr1, n%7+1, c2, calls2, tr2)
	}
	for i := range calls1 {
		if a, b := calls1[i].Function, calls2[i].Function; a != b {
			t.Fatalf("%q: call %d %+v whole, %+v in pieces", reply, i, a, b)
		}
	}
}

func FuzzToolParserHermes(f *testing.F) {
	f.Add(hermesReply, uint8(3))
	f.Add("a <tool_call>{\"name\": \"x\", \"arguments\": {\"k\": [1, \"}\"]}}</tool_call> b <tool_c", uint8(1))
	f.Add("<tool_call>\n{\"name\": \"f\", \"arguments\": \"s\"}", uint8(2))
	f.Add(" \n<tool_call>{}</tool_call>\n ", uint8(5))
	f.Fuzz(func(t *testing.T, reply string, n uint8) { fuzzParser(t, FormatQwen, reply, n) })
}

func FuzzToolParserLlama3(f *testing.F) {
	f.Add(`{"name": "f", "parameters": {"a": [1, "}"]}}; {"name": "g", "parameters": {}}<|eom_id|>`, uint8(3))
	f.Add("x <|python_tag|>{\"parameters\": {}, \"name\": \"f\"} <|eot_i", uint8(1))
	f.Add(" { \"name\": \"f\", \"parameters\": \"s\"} tail", uint8(2))
	f.Fuzz(func(t *testing.T, reply string, n uint8) { fuzzParser(t, FormatLlama3, reply, n) })
}

func FuzzToolParserMistral(f *testing.F) {
	f.Add(`[TOOL_CALLS][{"name": "f", "arguments": {"a": [1, "]"]}, "id": "x"}, {"name": "g", "arguments": {}}]</s>`, uint8(3))
	f.Add("x [TOOL_CALLS] [{\"arguments\": {}, \"name\": \"f\"}] </", uint8(1))
	f.Add("[TOOL_CALLS][{\"name\": \"f\", \"arguments\": {\"k\": \"v", uint8(2))
	f.Fuzz(func(t *testing.T, reply string, n uint8) { fuzzParser(t, FormatMistral, reply, n) })
}

// FuzzToolParserCalls writes well-formed calls with fuzzed names and
// arguments in each format: the stream parser, fed in pieces, finds the
// calls ParseToolCalls finds.
func FuzzToolParserCalls(f *testing.F) {
	f.Add("get_weather", "city", "Paris \"x\" }]", 1.5, "Let me look.", uint8(3))
	f.Add("f", "", "", 0.0, "", uint8(1))
	f.Fuzz(func(t *testing.T, name, key, val string, num float64, pre string, n uint8) {
		args, err := json.Marshal(map[string]any{key: val, key + "2": []any{num, map[string]any{}}})
		if err != nil {
			return
		}
		nm, _ := json.Marshal(name)
		call := fmt.Sprintf(`{"name": %s, "%%s": %s}`, nm, args)
		replies := map[Format]string{
			FormatQwen:    pre + "<tool_call>\n" + fmt.Sprintf(call, "arguments") + "\n</tool_call>",
			FormatLlama3:  pre + "<|python_tag|>" + fmt.Sprintf(call, "parameters") + "; " + fmt.Sprintf(call, "parameters") + "<|eom_id|>",
			FormatMistral: pre + "[TOOL_CALLS] [" + fmt.Sprintf(call, "arguments") + ", " + fmt.Sprintf(call, "arguments") + "]",
		}
		for format, reply := range replies {
			wantContent, want := ParseToolCalls(reply, format)
			if len(want) == 0 {
				continue // a name or prefix that breaks the markup
			}
			content, calls, _, truncated := feedParser(t, format, reply, int(n%7)+1)
			if truncated || len(calls) != len(want) {
				t.Fatalf("%v %q: %d calls (truncated %v), ParseToolCalls finds %d", format, reply, len(calls), truncated, len(want))
			}
			for i := range want {
				if calls[i].Function != want[i].Function {
					t.Fatalf("%v %q: call %d %+v, ParseToolCalls %+v", format, reply, i, calls[i].Function, want[i].Function)
				}
			}
			if strings.TrimSpace(content) != wantContent {
				t.Fatalf("%v %q: content %q, ParseToolCalls %q", format, reply, content, wantContent)
			}
		}
	})
}

func TestCallSyntax(t *testing.T) {
	for _, f := range []Format{FormatNone, FormatQwen, FormatLlama3, FormatMistral} {
		pre, mid, suf := f.CallSyntax()
		pf := f
		if f == FormatNone {
			pf = FormatQwen
		}
		content, calls := ParseToolCalls(pre+"get_weather"+mid+`{"city": "Paris"}`+suf, pf)
		if content != "" || len(calls) != 1 || calls[0].Function.Name != "get_weather" || calls[0].Function.Arguments != `{"city":"Paris"}` {
			t.Errorf("%v: %q %+v", f, content, calls)
		}
	}
}
