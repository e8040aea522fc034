package chat

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

var hi = []Message{{Role: "user", Content: "hi"}}

func TestParseErrors(t *testing.T) {
	for _, src := range []string{
		"{% if %}x{% endif %}",
		"{{ x ",
		"{% for m in messages %}",
		"{% endfor %}",
		"{{ 1 + }}",
		"{% notatag %}",
		"{% include 'other.jinja' %}",
		"{% extends 'base' %}",
		"{% block a %}{{ self.a() }}{% endblock %}",
		"{% import 'x' as y %}",
		strings.Repeat("{{ (", 300) + "1" + strings.Repeat(") }}", 300),
		strings.Repeat("{% if true %}", 300) + strings.Repeat("{% endif %}", 300),
		strings.Repeat("x", MaxTemplateBytes+1),
	} {
		tpl, err := Parse(src)
		var pe *ParseError
		if !errors.As(err, &pe) || tpl != nil {
			t.Errorf("Parse(%.60q) = (%v, %v), want a *ParseError", src, tpl, err)
		}
	}
	_, err := Parse("line one\n{{ x + }}")
	var pe *ParseError
	if errors.As(err, &pe) && pe.Line != 2 {
		t.Errorf("syntax error on line 2 reported at line %d (%v)", pe.Line, err)
	}
}

func TestRaiseException(t *testing.T) {
	tpl := MustParse(`{% for m in messages %}{% if m.role == 'bad' %}{{ raise_exception('role ' + m.role + ' not allowed') }}{% endif %}{{ m.content }}{% endfor %}`)
	out, err := tpl.Render(Input{Messages: []Message{{Role: "user", Content: "a"}, {Role: "bad", Content: "b"}}})
	var te *TemplateError
	if !errors.As(err, &te) || te.Message != "role bad not allowed" || out != "" {
		t.Fatalf("got (%q, %v), want TemplateError", out, err)
	}
	if errors.Is(err, ErrRender) {
		t.Errorf("a TemplateError should not wrap ErrRender")
	}
	out, err = tpl.Render(Input{Messages: hi})
	if err != nil || out != "hi" {
		t.Fatalf("got (%q, %v)", out, err)
	}
	// Raised inside a set and a macro too.
	for _, src := range []string{
		`{% set x = raise_exception('in set') %}`,
		`{% macro m() %}{{ raise_exception('in set') }}{% endmacro %}{{ m() }}`,
	} {
		_, err := MustParse(src).Render(Input{Messages: hi})
		if !errors.As(err, &te) || te.Message != "in set" {
			t.Errorf("%s: %v", src, err)
		}
	}
}

func TestRenderErrors(t *testing.T) {
	tpl := MustParse(DefaultTemplate)
	if _, err := tpl.Render(Input{}); !errors.Is(err, ErrEmptyConversation) {
		t.Errorf("empty: %v", err)
	}
	for _, k := range []string{"messages", "tools", "documents", "add_generation_prompt"} {
		if _, err := tpl.Render(Input{Messages: hi, Kwargs: map[string]any{k: 1}}); !errors.Is(err, ErrBadKwarg) {
			t.Errorf("kwarg %s: %v", k, err)
		}
	}
	if _, err := tpl.Render(Input{Messages: hi, Kwargs: map[string]any{"x": make(chan int)}}); !errors.Is(err, ErrBadKwarg) {
		t.Errorf("chan kwarg: %v", err)
	}
	if _, err := tpl.Render(Input{Messages: hi, Tools: []Tool{{Function: ToolFunction{Name: "f", Parameters: json.RawMessage("{bad")}}}}); !errors.Is(err, ErrBadKwarg) {
		t.Errorf("bad tool parameters: %v", err)
	}
	for _, src := range []string{
		`{{ range(200000)|length }}`,
		`{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}`,
		`{{ messages|nosuchfilter }}`,
		`{{ 'a'|tojson(bogus=1) }}`,
	} {
		out, err := MustParse(src).Render(Input{Messages: hi})
		if !errors.Is(err, ErrRender) || out != "" {
			t.Errorf("%s: got (%.40q, %v), want ErrRender", src, out, err)
		}
	}
	out, err := MustParse(`{% for i in range(100000) %}{{ 'x' * 1000 }}{% endfor %}`).Render(Input{Messages: hi})
	if !errors.Is(err, ErrRender) || !errors.Is(err, ErrOutputTooLarge) || out != "" {
		t.Errorf("output limit: %v", err)
	}
	// A recursive macro within the depth limit works (Hermes templates print
	// nested JSON types this way).
	out, err = MustParse(`{% macro f(n) %}{% if n > 0 %}({{ f(n - 1) }}){% endif %}{% endmacro %}{{ f(50) }}`).Render(Input{Messages: hi})
	if err != nil || out != strings.Repeat("(", 50)+strings.Repeat(")", 50) {
		t.Errorf("recursive macro: (%q, %v)", out, err)
	}
}

// TestDefaultTemplate: ChatML, as transformers' old default rendered it.
func TestDefaultTemplate(t *testing.T) {
	in := Input{Messages: []Message{{Role: "system", Content: "s"}, {Role: "user", Content: "ü\n"}}, AddGenerationPrompt: true}
	got, err := MustParse(DefaultTemplate).Render(in)
	want := "<|im_start|>system\ns<|im_end|>\n<|im_start|>user\nü\n<|im_end|>\n<|im_start|>assistant\n"
	if err != nil || got != want {
		t.Errorf("got (%q, %v), want %q", got, err, want)
	}
	if got := (&Config{}).TemplateFor(false); got != DefaultTemplate {
		t.Errorf("a config without a template should fall back to ChatML")
	}
}

func TestGenerationTag(t *testing.T) {
	got, err := MustParse(`{% for m in messages %}{% generation %}[{{ m.content }}]{% endgeneration %}{% endfor %}`).Render(Input{Messages: hi})
	if err != nil || got != "[hi]" {
		t.Errorf("got (%q, %v)", got, err)
	}
}

// TestPartsAndReasoning: list-of-parts content is flattened; reasoning is
// seen under both names; key order of arguments survives into tojson.
func TestPartsAndReasoning(t *testing.T) {
	var msgs []Message
	if err := json.Unmarshal([]byte(`[
		{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "image_url"}, {"type": "text", "text": "b"}]},
		{"role": "assistant", "content": null, "reasoning_content": "think",
		 "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{\"z\": 1, \"a\": 2.50}"}}]}
	]`), &msgs); err != nil {
		t.Fatal(err)
	}
	tpl := MustParse(`{% for m in messages %}{{ m.content }}|{{ m.thinking }}|{{ m.reasoning_content }}|{% for c in m.tool_calls or [] %}{{ c.function.arguments|tojson }}{% endfor %};{% endfor %}`)
	got, err := tpl.Render(Input{Messages: msgs})
	want := `a` + "\n" + `b|||;|think|think|{"z": 1, "a": 2.5};`
	if err != nil || got != want {
		t.Errorf("got (%q, %v), want %q", got, err, want)
	}
	// Messages marshal back to the shape they came in.
	data, err := json.Marshal(msgs)
	if err != nil {
		t.Fatal(err)
	}
	var again []Message
	if err := json.Unmarshal(data, &again); err != nil || again[0].Text() != "a\nb" || again[1].ToolCalls[0].Function.Arguments != `{"z": 1, "a": 2.50}` {
		t.Errorf("round trip: %s -> %+v (%v)", data, again, err)
	}
}

func TestKwargValues(t *testing.T) {
	tpl := MustParse(`{{ a|tojson }}|{{ b|tojson }}|{{ c|tojson }}|{{ d }}|{{ e is true }}|{{ f|tojson }}`)
	got, err := tpl.Render(Input{Messages: hi, Kwargs: map[string]any{
		"a": json.RawMessage(`{"z": [1, 2.0, "x"], "a": null}`),
		"b": map[string]int{"y": 2, "x": 1},
		"c": []string{"p", "q"},
		"d": int64(7),
		"e": true,
		"f": float32(0.5),
	}})
	want := `{"z": [1, 2.0, "x"], "a": null}|{"x": 1, "y": 2}|["p", "q"]|7|True|0.5`
	if err != nil || got != want {
		t.Errorf("got (%q, %v), want %q", got, err, want)
	}
}

// TestConcurrentRender renders the goldens of one template from several
// goroutines at once (run with -race).
func TestConcurrentRender(t *testing.T) {
	g := loadGoldens(t)
	gt := loadGoldenTemplate(t, "qwen3")
	tpl := MustParse(gt.ChatTemplate)
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range g.Cases {
				c := &g.Cases[i]
				if c.Template != "qwen3" || c.Expected == nil {
					continue
				}
				if got, err := tpl.Render(c.input(gt.SpecialTokens)); err != nil || got != *c.Expected {
					t.Errorf("%s: concurrent render differs (%v)", c.ID, err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func TestConfig(t *testing.T) {
	c, err := ParseTokenizerConfig([]byte(`{"chat_template": [{"name": "default", "template": "D"}, {"name": "tool_use", "template": "T"}],
		"bos_token": {"content": "<s>", "lstrip": false}, "eos_token": "</s>", "pad_token": null, "unk_token": "<unk>",
		"additional_special_tokens": ["<x>"]}`))
	if err != nil {
		t.Fatal(err)
	}
	if c.TemplateFor(false) != "D" || c.TemplateFor(true) != "T" {
		t.Errorf("named templates: %+v", c)
	}
	if len(c.SpecialTokens) != 3 || c.SpecialTokens["bos_token"] != "<s>" || c.SpecialTokens["unk_token"] != "<unk>" {
		t.Errorf("special tokens: %v", c.SpecialTokens)
	}
	for _, bad := range []string{`{`, `{"chat_template": 3}`, `{"bos_token": 3}`} {
		if _, err := ParseTokenizerConfig([]byte(bad)); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: %v", bad, err)
		}
	}

	// A folder: chat_template.jinja wins over the config's template.
	dir := t.TempDir()
	gt := loadGoldenTemplate(t, "qwen3")
	cfg, _ := json.Marshal(map[string]any{"chat_template": "ignored", "eos_token": "<|im_end|>", "bos_token": nil})
	if err := os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "chat_template.jinja"), []byte(gt.ChatTemplate), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err = LoadConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	// The request of a golden case, as a file, renders to its golden.
	g := loadGoldens(t)
	for i := range g.Cases {
		gc := &g.Cases[i]
		if gc.Template != "qwen3" || gc.Expected == nil || len(gc.Tools) == 0 {
			continue
		}
		agp := gc.AddGenerationPrompt
		req, _ := json.Marshal(Request{Messages: gc.Messages, Tools: gc.Tools, AddGenerationPrompt: &agp, ChatTemplateKwargs: gc.Kwargs})
		got, err := c.RenderRequest(req)
		if err != nil || got != *gc.Expected {
			t.Fatalf("%s: RenderRequest = (%q, %v), want %q", gc.ID, got, err, *gc.Expected)
		}
	}
	// A bare message list asks for a generation prompt.
	got, err := c.RenderRequest([]byte(`[{"role": "user", "content": "hi"}]`))
	if err != nil || got != "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n" {
		t.Errorf("bare list: (%q, %v)", got, err)
	}
	for _, bad := range []string{`{}`, `[]`, `{"messages": [{"role": "user", "content": 5}]}`} {
		if _, err := c.RenderRequest([]byte(bad)); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

// TestPyFloatRepr: the shortest repr round-trips, and the layout follows
// Python's rules (positional for exponents in [-4, 16)).
func TestPyFloatRepr(t *testing.T) {
	for _, f := range []float64{0, 1, -1, 0.1, 1e15, 1e16, 1.5e-5, 1e-4, 123456.789, 5e-324, math.MaxFloat64, 2.5e-300, 100} {
		s := pyFloatRepr(f)
		back, err := strconv.ParseFloat(s, 64)
		if err != nil || back != f {
			t.Errorf("pyFloatRepr(%g) = %q does not round-trip", f, s)
		}
		exp := math.Floor(math.Log10(math.Abs(f)))
		sci := strings.Contains(s, "e")
		if f != 0 && sci != (exp < -4 || exp >= 16) {
			t.Errorf("pyFloatRepr(%g) = %q: wrong notation", f, s)
		}
		if !sci && !strings.Contains(s, ".") {
			t.Errorf("pyFloatRepr(%g) = %q: positional without a point", f, s)
		}
	}
}
