package chat

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// fuzzTemplates are the real templates of testdata/chat plus ChatML.
func fuzzTemplates(f *testing.F) map[string]goldenTemplate {
	out := map[string]goldenTemplate{"chatml": {Name: "chatml", ChatTemplate: DefaultTemplate}}
	for _, n := range []string{"qwen3", "qwen2.5", "llama3", "llama3.1", "llama3.2", "mistral", "smollm2"} {
		out[n] = loadGoldenTemplate(f, n)
	}
	return out
}

// safeToRender reports whether a random template is cheap to render: no
// loops over range(), nested loops or string repetition, which can run or
// allocate without bound (as in Jinja; see guard.go).
func safeToRender(src string) bool {
	return !strings.Contains(src, "*") && !strings.Contains(src, "range") && strings.Count(src, "for") <= 1 &&
		!strings.Contains(src, "recursive") && len(src) < 4096
}

// FuzzParse: any source parses to a template or a *ParseError, never a
// panic; a parsed template renders a small conversation to a string or a
// typed error.
func FuzzParse(f *testing.F) {
	for _, g := range fuzzTemplates(f) {
		f.Add(g.ChatTemplate)
	}
	for _, s := range []string{
		"", "{{", "}}", "{%", "{% if %}", "{{ messages[0]['content'] }}", "{% for m in messages %}{{ m.role }}{% endfor %}",
		"{{ x|tojson(indent=2) }}", "{% set ns = namespace(a=1) %}{% set ns.a = 2 %}{{ ns.a }}",
		"{{ 'a'.split()[-1] }}", "{% macro m(x) %}{{ x }}{% endmacro %}{{ m(1) }}", "{% raw %}{{{% endraw %}",
		"{{ messages[::-1][0].content.strip('\\n') }}", "{% if a is defined and a is not none %}{{ a }}{% endif %}",
		"{# c #}{%- if true -%} x {%- endif -%}", "{{ raise_exception('x') }}", "{{ {'a': [1, 2.5, none]}|tojson }}",
		"{% generation %}x{% endgeneration %}", "{{ strftime_now('%d %b %Y') }}", "{{ (((1))) }}", "{{ 1 if x else 2 }}",
		"{% call m() %}{% endcall %}", "{% filter upper %}x{% endfilter %}", "{{ dict(a=1)|items|list }}",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		// A hang is a failure too: crash with the input in hand.
		watchdog := time.AfterFunc(20*time.Second, func() { panic(fmt.Sprintf("FuzzParse hangs on %q", src)) })
		defer watchdog.Stop()
		tpl, err := Parse(src)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) || tpl != nil {
				t.Fatalf("Parse error %T %v is not a *ParseError", err, err)
			}
			return
		}
		if !safeToRender(src) {
			return
		}
		in := Input{Messages: []Message{{Role: "system", Content: "s"}, {Role: "user", Content: "hi"}},
			BOSToken: "<s>", EOSToken: "</s>", Kwargs: map[string]any{"enable_thinking": false}}
		out, err := tpl.Render(in)
		if err != nil {
			var te *TemplateError
			if !errors.As(err, &te) && !errors.Is(err, ErrRender) {
				t.Fatalf("Render error %T %v is neither a *TemplateError nor ErrRender", err, err)
			}
			if out != "" {
				t.Fatalf("Render returned output with an error")
			}
		}
	})
}

// FuzzRender: random message text, roles, tool-call arguments and kwargs
// through every real template: a string or a typed error, never a panic,
// and the same result twice.
func FuzzRender(f *testing.F) {
	gts := fuzzTemplates(f)
	names := []string{"chatml", "qwen3", "qwen2.5", "llama3", "llama3.1", "llama3.2", "mistral", "smollm2"}
	tpls := make([]*Template, len(names))
	for i, n := range names {
		tpls[i] = MustParse(gts[n].ChatTemplate)
	}
	f.Add("Hello!", "user", `{"city": "Paris"}`, "<think>\nx\n</think>\n\ny", true, uint8(0))
	f.Add("", "assistant", `not json`, "", false, uint8(3))
	f.Add("ü\x00\x1c\u2028{{ x }}", "tool", `{"a": [1, 2.5e300, null, {"b": "\u00e9"}]}`, "</think>", true, uint8(6))
	f.Add("x", "system", `{"z": {}}`, "<tool_call>", false, uint8(255))
	f.Fuzz(func(t *testing.T, content, role, args, second string, agp bool, flags uint8) {
		msgs := []Message{{Role: role, Content: content}}
		if flags&1 != 0 {
			msgs = append([]Message{{Role: "system", Content: second}}, msgs...)
		}
		if flags&2 != 0 {
			msgs = append(msgs, Message{Role: "assistant", Content: second, ToolCalls: []ToolCall{
				{ID: "call00001", Type: "function", Function: FunctionCall{Name: content, Arguments: args}}}})
		}
		if flags&4 != 0 {
			msgs = append(msgs, Message{Role: "tool", Content: args, ToolCallID: "call00001"})
		}
		if flags&8 != 0 {
			msgs = append(msgs, Message{Role: "user", Parts: []ContentPart{{Type: "text", Text: content}, {Type: "text", Text: second}}})
		}
		in := Input{Messages: msgs, AddGenerationPrompt: agp, BOSToken: "<s>", EOSToken: "</s>", Kwargs: map[string]any{}}
		if flags&16 != 0 {
			in.Tools = []Tool{{Type: "function", Function: ToolFunction{Name: second, Description: content,
				Parameters: json.RawMessage(`{"type": "object", "properties": {"a": {"type": "string"}}}`)}}}
		}
		if flags&32 != 0 {
			in.Kwargs["enable_thinking"] = flags&64 != 0
		}
		if flags&128 != 0 {
			in.Kwargs["date_string"] = second
			in.Kwargs["extra"] = json.RawMessage(args) // may be invalid JSON: ErrBadKwarg
		}
		for i, tpl := range tpls {
			out, err := tpl.Render(in)
			if err != nil {
				var te *TemplateError
				if !errors.As(err, &te) && !errors.Is(err, ErrRender) && !errors.Is(err, ErrBadKwarg) {
					t.Fatalf("%s: error %T %v is not typed", names[i], err, err)
				}
				continue
			}
			again, err2 := tpl.Render(in)
			if err2 != nil || again != out {
				t.Fatalf("%s: second rendering differs", names[i])
			}
			if names[i] == "chatml" && !strings.Contains(out, "<|im_start|>"+role+"\n"+content+"<|im_end|>") {
				t.Fatalf("chatml output lacks the message: %q", out)
			}
		}
	})
}

// FuzzParseToolCalls: any text splits into content and calls without a
// panic; no calls means the text is all content; calls have names and
// a type.
func FuzzParseToolCalls(f *testing.F) {
	for _, s := range []string{
		"<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}\n</tool_call>",
		"text <tool_call>{\"name\": \"f\"}</tool_call><tool_call>",
		"<|python_tag|>{\"name\": \"f\", \"parameters\": {}}; {\"name\": \"g\", \"parameters\": {\"x\": [1]}}",
		"{\"name\": \"f\", \"parameters\": {\"q\": \"\\u00e9\"}}<|eot_id|>",
		"[TOOL_CALLS][{\"name\": \"f\", \"arguments\": {}, \"id\": \"abcdefghi\"}]</s>",
		"plain", "", "<tool_call></tool_call>", "{", "[TOOL_CALLS]",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		for _, format := range []Format{FormatNone, FormatQwen, FormatLlama3, FormatMistral} {
			content, calls := ParseToolCalls(text, format)
			if calls == nil && content != text {
				t.Fatalf("%v: no calls but content %q != text %q", format, content, text)
			}
			if len(content) > len(text) {
				t.Fatalf("%v: content longer than the text", format)
			}
			for _, c := range calls {
				if c.Function.Name == "" || c.Type != "function" {
					t.Fatalf("%v: bad call %+v", format, c)
				}
			}
		}
	})
}
