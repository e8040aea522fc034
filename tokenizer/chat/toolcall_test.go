package chat

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func call(id, name, args string) ToolCall {
	return ToolCall{ID: id, Type: "function", Function: FunctionCall{Name: name, Arguments: args}}
}

func TestParseToolCalls(t *testing.T) {
	tests := []struct {
		name        string
		format      Format
		text        string
		wantContent string
		wantCalls   []ToolCall
	}{
		{"qwen one", FormatQwen, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"n\": 1.50}}\n</tool_call>",
			"", []ToolCall{call("", "get_weather", `{"city":"Paris","n":1.50}`)}},
		{"qwen two with text", FormatQwen,
			"Let me check.\n<tool_call>\n{\"name\": \"a\", \"arguments\": {\"z\": 1, \"a\": [true, null]}}\n</tool_call>\n<tool_call>\n{\"name\": \"b\", \"arguments\": {}}\n</tool_call>",
			"Let me check.", []ToolCall{call("", "a", `{"z":1,"a":[true,null]}`), call("", "b", `{}`)}},
		{"qwen text between and after", FormatQwen, "x <tool_call>{\"name\":\"a\",\"arguments\":{}}</tool_call> y <tool_call>{\"name\":\"b\"}</tool_call> z",
			"x  y  z", []ToolCall{call("", "a", "{}"), call("", "b", "{}")}},
		{"qwen bad json stays content", FormatQwen, "a <tool_call>{not json}</tool_call> b",
			"a <tool_call>{not json}</tool_call> b", nil},
		{"qwen one bad one good", FormatQwen, "<tool_call>{\"x\":1}</tool_call><tool_call>{\"name\":\"ok\",\"arguments\":{\"u\":\"ü\"}}</tool_call>",
			"<tool_call>{\"x\":1}</tool_call>", []ToolCall{call("", "ok", `{"u":"ü"}`)}},
		{"qwen unclosed", FormatQwen, "t <tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}\n",
			"t", []ToolCall{call("", "f", `{"a":1}`)}},
		{"qwen unclosed garbage", FormatQwen, "t <tool_call>\n{\"name\": \"f\", ", "t <tool_call>\n{\"name\": \"f\", ", nil},
		{"qwen string arguments", FormatQwen, "<tool_call>{\"name\":\"f\",\"arguments\":\"{\\\"a\\\":1}\"}</tool_call>",
			"", []ToolCall{call("", "f", `{"a":1}`)}},
		{"qwen array arguments rejected", FormatQwen, "<tool_call>{\"name\":\"f\",\"arguments\":[1]}</tool_call>",
			"<tool_call>{\"name\":\"f\",\"arguments\":[1]}</tool_call>", nil},
		{"qwen no calls", FormatQwen, "  plain answer \n", "  plain answer \n", nil},
		{"llama3 json", FormatLlama3, `{"name": "get_weather", "parameters": {"city": "Paris"}}`,
			"", []ToolCall{call("", "get_weather", `{"city":"Paris"}`)}},
		{"llama3 python tag", FormatLlama3, "<|python_tag|>{\"name\": \"f\", \"parameters\": {\"q\": \"x\"}}<|eom_id|>",
			"", []ToolCall{call("", "f", `{"q":"x"}`)}},
		{"llama3 text then tag", FormatLlama3, "Sure. <|python_tag|>{\"name\": \"f\", \"parameters\": {}}",
			"Sure.", []ToolCall{call("", "f", `{}`)}},
		{"llama3 two calls", FormatLlama3, `{"name": "a", "parameters": {"x": 1}}; {"name": "b", "arguments": {"y": 2}}`,
			"", []ToolCall{call("", "a", `{"x":1}`), call("", "b", `{"y":2}`)}},
		{"llama3 trailing text", FormatLlama3, `{"name": "a", "parameters": {}} and more`,
			`{"name": "a", "parameters": {}} and more`, nil},
		{"llama3 plain text", FormatLlama3, "The weather is {sunny}.", "The weather is {sunny}.", nil},
		{"llama3 json without name", FormatLlama3, `{"answer": 42}`, `{"answer": 42}`, nil},
		{"llama3 builtin call is content", FormatLlama3, `<|python_tag|>brave_search.call(query="x")`,
			`<|python_tag|>brave_search.call(query="x")`, nil},
		{"mistral", FormatMistral, `[TOOL_CALLS][{"name": "f", "arguments": {"a": "b"}, "id": "abcdefghi"}, {"name": "g", "arguments": {}}]</s>`,
			"", []ToolCall{call("abcdefghi", "f", `{"a":"b"}`), call("", "g", `{}`)}},
		{"mistral content first", FormatMistral, `Checking. [TOOL_CALLS] [{"name": "f", "arguments": {}}]`,
			"Checking.", []ToolCall{call("", "f", `{}`)}},
		{"mistral broken", FormatMistral, `[TOOL_CALLS][{"name": "f", "arguments": {}`, `[TOOL_CALLS][{"name": "f", "arguments": {}`, nil},
		{"none", FormatNone, "<tool_call>{\"name\":\"f\"}</tool_call>", "<tool_call>{\"name\":\"f\"}</tool_call>", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			content, calls := ParseToolCalls(tt.text, tt.format)
			if content != tt.wantContent || !reflect.DeepEqual(calls, tt.wantCalls) {
				t.Errorf("got (%q, %+v), want (%q, %+v)", content, calls, tt.wantContent, tt.wantCalls)
			}
		})
	}
}

func TestDetectToolFormat(t *testing.T) {
	want := map[string]Format{
		"qwen3": FormatQwen, "qwen2.5": FormatQwen, "llama3.1": FormatLlama3, "llama3.2": FormatLlama3,
		"mistral": FormatMistral, "llama3": FormatNone, "smollm2": FormatNone,
	}
	for name, f := range want {
		if got := DetectToolFormat(loadGoldenTemplate(t, name).ChatTemplate); got != f {
			t.Errorf("%s: %v, want %v", name, got, f)
		}
	}
	if got := DetectToolFormat(DefaultTemplate); got != FormatNone {
		t.Errorf("DefaultTemplate: %v", got)
	}
}

// TestToolCallRoundTrip renders an assistant message with tool calls through
// each real template, cuts out the assistant's text as the model would have
// written it, and parses it back.
func TestToolCallRoundTrip(t *testing.T) {
	calls := []ToolCall{
		call("call00001", "get_weather", `{"city":"São Paulo","unit":"celsius","days":3}`),
		call("call00002", "calculate", `{"expression":"2+2","values":[1,2.5,-3.0,1e+20],"opts":{"z":null,"a":true}}`),
	}
	tests := []struct {
		template     string
		start, end   string
		content      string
		calls        []ToolCall
		keepIDs      bool
		wantContents string
	}{
		// Qwen3 writes an (empty) think block before the last assistant turn;
		// it is content to ParseToolCalls.
		{"qwen3", "<|im_start|>assistant\n", "<|im_end|>", "Let me check.", calls, false, "<think>\n\n</think>\n\nLet me check."},
		{"qwen2.5", "<|im_start|>assistant\n", "<|im_end|>", "", calls, false, ""},
		{"llama3.1", "<|start_header_id|>assistant<|end_header_id|>\n\n", "<|eot_id|>", "", calls[:1], false, ""},
		{"mistral", "[/INST]", "</s>", "", calls, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.template, func(t *testing.T) {
			gt := loadGoldenTemplate(t, tt.template)
			tpl := MustParse(gt.ChatTemplate)
			in := Input{
				Messages: []Message{{Role: "user", Content: "Weather?"},
					{Role: "assistant", Content: tt.content, ToolCalls: tt.calls}},
				Tools:    []Tool{{Type: "function", Function: ToolFunction{Name: "get_weather", Parameters: json.RawMessage(`{"type":"object"}`)}}},
				BOSToken: gt.SpecialTokens["bos_token"], EOSToken: gt.SpecialTokens["eos_token"],
				Kwargs: map[string]any{"date_string": "1 Jan 2025"},
			}
			out, err := tpl.Render(in)
			if err != nil {
				t.Fatal(err)
			}
			i := strings.LastIndex(out, tt.start)
			if i < 0 {
				t.Fatalf("no %q in %q", tt.start, out)
			}
			text, _, _ := strings.Cut(out[i+len(tt.start):], tt.end)
			content, got := ParseToolCalls(text, DetectToolFormat(gt.ChatTemplate))
			want := make([]ToolCall, len(tt.calls))
			for i, c := range tt.calls {
				if !tt.keepIDs {
					c.ID = ""
				}
				want[i] = c
			}
			if content != tt.wantContents || len(got) != len(want) {
				t.Fatalf("text %q: got (%q, %+v)", text, content, got)
			}
			for i := range got {
				if got[i].ID != want[i].ID || got[i].Function.Name != want[i].Function.Name ||
					compactJSON(t, got[i].Function.Arguments) != compactJSON(t, want[i].Function.Arguments) {
					t.Errorf("call %d: got %+v, want %+v", i, got[i], want[i])
				}
			}
		})
	}
}

// compactJSON removes insignificant whitespace (templates write ", " and
// ": ") but keeps key order and number spelling.
func compactJSON(t *testing.T, s string) string {
	t.Helper()
	var b strings.Builder
	inString, escaped := false, false
	for _, r := range s {
		switch {
		case inString:
			b.WriteRune(r)
			if escaped {
				escaped = false
			} else if r == '\\' {
				escaped = true
			} else if r == '"' {
				inString = false
			}
		case r == '"':
			inString = true
			b.WriteRune(r)
		case r == ' ' || r == '\n' || r == '\t' || r == '\r':
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
