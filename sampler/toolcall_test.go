package sampler

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/vkllm/vkllm/tokenizer"
	"github.com/vkllm/vkllm/tokenizer/chat"
)

const tinyDir = "../testdata/models/qwen2-tiny"

// grammar is the grammar of a forced call in format f.
func grammar(t testing.TB, f chat.Format, names ...string) *ToolCallGrammar {
	t.Helper()
	pre, mid, suf := f.CallSyntax()
	g, err := NewToolCallGrammar(pre, mid, suf, names)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// vocabOf is the tokenizer's vocabulary for the constraint.
func vocabOf(tok *tokenizer.Tokenizer) *Vocab {
	special := make([]bool, tok.VocabSize())
	for id := range special {
		special[id] = tok.IsSpecial(int32(id))
	}
	return NewVocab(tok.Pieces(), special, tok.EOS())
}

func TestNewToolCallGrammar(t *testing.T) {
	for _, c := range []struct {
		mid   string
		names []string
	}{{`", "arguments": `, nil}, {"", []string{"f"}}, {`", "arguments": `, []string{"f", ""}},
		{`", "arguments": `, []string{`a"b`}}, {`", "arguments": `, []string{`a\b`}}, {`", "arguments": `, []string{"\xff"}}} {
		if _, err := NewToolCallGrammar("<", c.mid, ">", c.names); !errors.Is(err, ErrToolCallGrammar) {
			t.Errorf("mid %q names %q: error %v, want ErrToolCallGrammar", c.mid, c.names, err)
		}
	}
	g, err := NewToolCallGrammar("<", `", "arguments": `, ">", []string{"b", "a", "b"})
	if err != nil || !g.Has("a") || !g.Has("b") || g.Has("c") || len(g.names) != 2 {
		t.Errorf("grammar %+v, %v", g, err)
	}
}

// TestToolGrammarStep feeds whole strings to the automaton.
func TestToolGrammarStep(t *testing.T) {
	g := grammar(t, chat.FormatQwen, "get_weather", "get", "search")
	head := "<tool_call>\n{\"name\": \"get\", \"arguments\": "
	ok := []string{`{}`, `{"a": 1}`, `{ "a" : [1, -2.5e+3, 0, true, null, "x\"\u00e9é"], "b": {"c": []} }`,
		"{\"a\":\n\t\"\\n\"}", `{"é":-0.0E1}`, `{"a": -123456789012345.678e-99}`}
	bad := []string{"{\"\xe0\x80\x80\": 1}", "{\"\xed\xa0\x80\": 1}", "{\"\xf4\x90\x80\x80\": 1}", "{\"\xc3\": 1}", "{\"\x80\": 1}", `[]`, `1`, `{"a"}`, `{"a": 01}`, `{"a": tru }`, `{"a": [1,]x`, `{"a": "x` + "\n" + `"}`,
		`{"a": "\x"}`, `{"a": 1]`, `{"a": [1}`, `{"a": -}`, `{"a": 1.}`, `{,}`, ` {}`,
		`{"a": 1234567890123456}`, `{"a": 1e123}`}
	run := func(text string) (gstate, bool) {
		var s gstate
		for i := 0; i < len(text); i++ {
			if !g.step(&s, text[i]) {
				return s, false
			}
		}
		return s, true
	}
	for _, a := range ok {
		s, good := run(head + a + g.suffix)
		if !good || s.phase != phEnd {
			t.Errorf("%q refused (phase %d)", a, s.phase)
		}
		if !json.Valid([]byte(a)) {
			t.Errorf("test case %q is not JSON", a)
		}
	}
	for _, a := range bad {
		if s, good := run(head + a + g.suffix); good && s.phase == phEnd {
			t.Errorf("%q accepted", a)
		}
	}
	for _, name := range []string{"get_weathe", "gets", "other", ""} {
		if _, good := run("<tool_call>\n{\"name\": \"" + name + `", `); good {
			t.Errorf("name %q accepted", name)
		}
	}
	if _, good := run("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {"); !good {
		t.Errorf("get_weather refused")
	}
}

// TestToolConstraintWalk draws random allowed tokens under the
// constraint, with and without max_tokens, over the tiny model's
// vocabulary and real ones (Qwen3's, where <tool_call> is one token, and
// Llama 2's SentencePiece): every walk must end (an end token, or the
// budget spent) with a reply that parses as one call of an offered tool
// with JSON arguments, within the budget.
func TestToolConstraintWalk(t *testing.T) {
	tiny, err := tokenizer.FromFile(tinyDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []chat.Format{chat.FormatQwen, chat.FormatLlama3, chat.FormatMistral} {
		for seed := range uint64(60) {
			walk(t, tiny, f, seed, seed%3 != 0)
		}
	}
	if testing.Short() {
		return
	}
	for _, name := range []string{"qwen3", "llama2"} {
		tok := realTokenizer(t, name)
		for seed := range uint64(4) {
			walk(t, tok, chat.FormatQwen, seed, seed%2 == 0)
		}
	}
}

func walk(t *testing.T, tok *tokenizer.Tokenizer, f chat.Format, seed uint64, bounded bool) {
	t.Helper()
	v := vocabOf(tok)
	g := grammar(t, f, "get_weather", "get", "search")
	rng := rand.New(rand.NewPCG(seed, 1))
	budget := 0
	if bounded {
		budget = g.completion(gstate{}) + rng.IntN(40)
	}
	c := NewToolCallConstraint(g, v, budget)
	var text strings.Builder
	allowed := make([]bool, tok.VocabSize())
	ended := false
	for n := 0; n < 400 && (budget == 0 || n < budget); n++ {
		clear(allowed)
		c.Allow(allowed)
		var ids []int32
		for id, ok := range allowed {
			if ok {
				ids = append(ids, int32(id))
			}
		}
		if len(ids) == 0 {
			t.Fatalf("%v seed %d: no token allowed after %q", f, seed, text.String())
		}
		id := ids[rng.IntN(len(ids))]
		if budget == 0 && rng.IntN(2) == 0 { // head for the end now and then, so unbounded walks end
			best := g.completion(c.st)
			for range 64 {
				cand := ids[rng.IntN(len(ids))]
				s := c.st
				if _, ok := c.feed(&s, nil, int(cand), false); ok && g.completion(s) < best {
					id, best = cand, g.completion(s)
				} else if v.end[cand] {
					id, best = cand, 0
				}
			}
		}
		if v.end[id] {
			if c.st.phase != phEnd {
				t.Fatalf("%v seed %d: end token allowed in phase %d", f, seed, c.st.phase)
			}
			ended = true
			break
		}
		c.Accept(id)
		if c.off {
			t.Fatalf("%v seed %d: token %d refused after Allow", f, seed, id)
		}
		text.Write(v.bytes[id])
	}
	if !ended && c.st.phase != phEnd {
		t.Fatalf("%v seed %d budget %d: reply unfinished: %q", f, seed, budget, text.String())
	}
	if !utf8.ValidString(text.String()) {
		t.Fatalf("%v seed %d: invalid UTF-8 in %q", f, seed, text.String())
	}
	content, calls := chat.ParseToolCalls(text.String(), f)
	var args map[string]any // as a client decodes them: numbers as float64
	if content != "" || len(calls) != 1 || json.Unmarshal([]byte(calls[0].Function.Arguments), &args) != nil ||
		!strings.Contains(" get_weather get search ", " "+calls[0].Function.Name+" ") {
		t.Fatalf("%v seed %d: %q parses as %q %+v", f, seed, text.String(), content, calls)
	}
}

// FuzzToolGrammar: from any text the automaton accepts, its completion
// (the closing bytes it forces under a budget) finishes the call, and the
// text so finished parses as one call of an offered tool with a JSON
// object for arguments.
func FuzzToolCallGrammar(f *testing.F) {
	f.Add("<tool_call>\n{\"name\": \"get\", \"arguments\": {\"a\": [1, {\"b\": \"\\u00")
	f.Add("<tool_call>\n{\"name\": \"se")
	f.Add("<tool_call>\n{\"name\": \"search\", \"arguments\": {\"x\": -1.5e")
	f.Add("<tool_call>\n{\"name\": \"get\", \"arguments\": {\"é\xe2\x82")
	f.Fuzz(func(t *testing.T, text string) {
		for _, format := range []chat.Format{chat.FormatQwen, chat.FormatLlama3, chat.FormatMistral} {
			g := grammar(t, format, "get_weather", "get", "search")
			var s gstate
			n := 0
			for ; n < len(text) && s.phase != phEnd; n++ {
				if !g.step(&s, text[n]) {
					break
				}
			}
			done := []byte(text[:n])
			want := g.completion(s)
			for s.phase != phEnd {
				b := g.closer(&s)
				if b == 0 || !g.step(&s, b) {
					t.Fatalf("%v: cannot finish %q (closer %q)", format, done, b)
				}
				done = append(done, b)
				want--
			}
			if want != 0 {
				t.Fatalf("%v: completion of %q measured %d bytes off", format, text[:n], want)
			}
			content, calls := chat.ParseToolCalls(string(done), format)
			var args map[string]any // as a client decodes them: numbers as float64
			if content != "" || len(calls) != 1 || json.Unmarshal([]byte(calls[0].Function.Arguments), &args) != nil {
				t.Fatalf("%v: %q parses as %q %+v", format, done, content, calls)
			}
		}
	})
}
