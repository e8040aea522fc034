package grammar

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/vkllm/vkllm/tokenizer"
	"github.com/vkllm/vkllm/tokenizer/chat"
)

const tinyDir = "../../testdata/models/qwen2-tiny"

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
	// An empty prefix or suffix would leave the grammar nothing to
	// match first or last.
	for _, ps := range [][2]string{{"", ">"}, {"<", ""}} {
		if _, err := NewToolCallGrammar(ps[0], `", "arguments": `, ps[1], []string{"f"}); !errors.Is(err, ErrToolCallGrammar) {
			t.Errorf("prefix %q suffix %q: error %v, want ErrToolCallGrammar", ps[0], ps[1], err)
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
		ids := allowedIDs(allowed)
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

// allowedIDs is the ids a mask lets through, ascending.
func allowedIDs(mask []bool) []int32 {
	var ids []int32
	for id, ok := range mask {
		if ok {
			ids = append(ids, int32(id))
		}
	}
	return ids
}

// scanToolAllow is the mask by definition: every token fed to a copy of
// the grammar's state (and the arguments' schema state), with the budget
// check, and the budget dropped when it leaves no token (the slow
// reference for the trie walk).
func scanToolAllow(c *ToolCallConstraint, allowed []bool) {
	c.allowWith(allowed, func(allowed []bool, budget bool, left int) bool { return scanToolPass(c, allowed, budget, left) })
}

func scanToolPass(c *ToolCallConstraint, allowed []bool, budget bool, left int) bool {
	a := c.active()
	base := c.completionOf(&c.st, a)
	// Inside a string, a plain token changes nothing (a free string of
	// the schema too).
	inString := c.st.phase == phJSON && c.st.js == jString && c.st.more == 0 && (a == nil || onFreeString(a))
	some := false
	for id := range min(len(allowed), len(c.v.bytes)) {
		if inString && c.v.plain[id] {
			if !budget || base <= left-1 {
				allowed[id], some = true, true
			}
			continue
		}
		s := c.st
		var mark, depth int
		if a != nil {
			mark, depth = len(a.log), a.depth
		}
		got, ok := c.feed(&s, a, id, false)
		if ok && budget && (c.g.args != nil || base+4*len(c.v.bytes[id]) > left-1) && c.completionOf(&s, got) > left-1 {
			ok = false
		}
		if a != nil {
			a.undo(mark, depth)
		}
		if ok {
			allowed[id], some = true, true
		}
	}
	return some
}

// maskGrammars are the grammars of forced calls in format f that the
// mask tests run: the tools without schemas, and with them ("get" has
// none; "note" holds a free string).
func maskGrammars(t *testing.T, f chat.Format) []*ToolCallGrammar {
	t.Helper()
	names := []string{"get_weather", "get", "search", "note"}
	args := []*Schema{compile(t, toolSchemas["get_weather"]), nil, compile(t, toolSchemas["search"]),
		compile(t, `{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`)}
	pre, mid, suf := f.CallSyntax()
	free, err := NewToolCallGrammar(pre, mid, suf, names)
	if err != nil {
		t.Fatal(err)
	}
	typed, err := NewToolCallGrammarArgs(pre, mid, suf, names, args)
	if err != nil {
		t.Fatal(err)
	}
	return []*ToolCallGrammar{free, typed}
}

// sameMask checks c's mask against the scan's; got and want are scratch.
func sameMask(t *testing.T, c *ToolCallConstraint, got, want []bool, label string, text []byte) {
	t.Helper()
	clear(got)
	clear(want)
	c.Allow(got)
	scanToolAllow(c, want)
	if slices.Equal(got, want) {
		return
	}
	for id := range got {
		if got[id] != want[id] {
			t.Fatalf("%s budget %d after %q: token %d %q: walk %v, scan %v", label, c.budget, text, id, c.v.bytes[id], got[id], want[id])
		}
	}
}

// TestToolCallConstraintMask runs random forced calls over Qwen3's and
// Llama 3's vocabularies, each in its format and another, with and
// without the tools' argument schemas, unbounded, within a budget and
// with one too small for any call: each step's mask must be the scan's.
func TestToolCallConstraintMask(t *testing.T) {
	seeds := uint64(3)
	if testing.Short() {
		seeds = 1
	}
	steps := 0
	for _, run := range []struct {
		tok     string
		formats []chat.Format
	}{
		{"qwen3", []chat.Format{chat.FormatQwen, chat.FormatMistral}},
		{"llama3", []chat.Format{chat.FormatLlama3, chat.FormatQwen}},
	} {
		name := run.tok
		tok := realTokenizer(t, name)
		v := vocabOf(tok)
		got := make([]bool, tok.VocabSize())
		want := make([]bool, tok.VocabSize())
		for _, f := range run.formats {
			for gi, g := range maskGrammars(t, f) {
				for seed := range seeds {
					label := fmt.Sprintf("%s %v grammar %d seed %d", name, f, gi, seed)
					rng := rand.New(rand.NewPCG(seed, uint64(gi)))
					c := NewToolCallConstraint(g, v, 0)
					switch seed % 3 {
					case 1: // tight: the budget logic measures candidates
						c.budget = c.completionOf(&gstate{}, nil) + rng.IntN(30)
					case 2: // too small for any call: the grammar alone rules
						c.budget = 24
					}
					var text []byte
					for n := 0; n < 100 && (c.budget == 0 || n < c.budget); n++ {
						sameMask(t, c, got, want, label, text)
						steps++
						ids := allowedIDs(got)
						if len(ids) == 0 {
							t.Fatalf("%s: nothing allowed after %q", label, text)
						}
						id := ids[rng.IntN(len(ids))]
						if n > 20 && rng.IntN(2) == 0 {
							id = towardEnd(c, ids, rng)
						}
						if v.end[id] {
							break
						}
						c.Accept(id)
						text = append(text, v.bytes[id]...)
					}
				}
			}
		}
	}
	t.Logf("%d steps compared", steps)
}

// TestToolCallConstraintMaskBudgets compares the mask with the scan's at
// chosen states of a Qwen call (each phase; inside strings, escapes and
// characters; keys, numbers, literals; a schema's free, pattern and
// bounded strings), under budgets that leave from one byte less than the
// completion to a few tokens more: where the budget's check measures
// some tokens and not others.
func TestToolCallConstraintMaskBudgets(t *testing.T) {
	tok := realTokenizer(t, "qwen3")
	v := vocabOf(tok)
	// Qwen3's <tool_call> and </tool_call> are not special; in sv they
	// are, as a tokenizer may have them: a special token writes only the
	// literal parts.
	sv := vocabOf(tok)
	for id, b := range sv.bytes {
		if s := string(b); s == "<tool_call>" || s == "</tool_call>" {
			sv.literal[id], sv.plain[id] = true, false
		}
	}
	byteTok := map[byte]int32{} // a token of each byte, to write any text
	for id, b := range v.bytes {
		if len(b) == 1 && !v.literal[id] && !v.end[id] {
			byteTok[b[0]] = int32(id)
		}
	}
	got := make([]bool, tok.VocabSize())
	want := make([]bool, tok.VocabSize())
	head := "<tool_call>\n{\"name\": \""
	call := func(name, args string) string { return head + name + `", "arguments": ` + args }
	texts := []string{"", "<tool_", head + "get", call("get", ""), call("get", "{ "),
		call("get", `{"query": "the`), call("get", `{"query": "the\`), call("get", `{"query": "the\u00`),
		call("get", "{\"query\": \"th\xc3"), call("get", "{\"query\": \"\xe2\x82"), call("get", `{"qu`),
		call("get", `{"a": [1, -2.5e`), call("get", `{"a": {"b": tr`), call("get", `{"a": 12`), call("get", `{"a": []`),
		call("get", "{}"), call("get", "{}}\n"), call("get", "{}}\n</tool"), call("get", "{}}\n</tool_call>"),
		call("search", `{"q":"ab`), call("search", `{"n":[true,`), call("get_weather", `{"city":"Par`),
		call("get_weather", `{"unit":"`), call("note", `{"text":"hi`), call("note", `{"te`), call("note", `{"x":"y\u00e`),
	}
	rooms := []int{-1, 0, 1, 2, 3, 4, 7, 12} // left-1 = base+room
	if testing.Short() {
		rooms = []int{-1, 0, 2}
	}
	cases := 0
	for vi, v := range []*Vocab{v, sv} {
		for gi, g := range maskGrammars(t, chat.FormatQwen) {
			for _, text := range texts {
				label := fmt.Sprintf("vocab %d grammar %d", vi, gi)
				c := NewToolCallConstraint(g, v, 0)
				for i := range len(text) {
					c.Accept(byteTok[text[i]])
				}
				if c.off {
					t.Fatalf("%s: %q refused", label, text)
				}
				base := c.completionOf(&c.st, c.active())
				for _, room := range rooms {
					c.budget = c.n + base + room + 1
					sameMask(t, c, got, want, label, []byte(text))
					cases++
				}
			}
		}
	}
	t.Logf("%d masks compared", cases)
}

// towardEnd is, of some of ids, the token that leaves the shortest
// completion of c's call (an end token first).
func towardEnd(c *ToolCallConstraint, ids []int32, rng *rand.Rand) int32 {
	best, id := c.completionOf(&c.st, c.active()), ids[rng.IntN(len(ids))]
	cands := ids[:0:0]
	for range 64 {
		cands = append(cands, ids[rng.IntN(len(ids))])
	}
	for _, id := range ids {
		if len(c.v.bytes[id]) == 1 || c.v.end[id] { // the closer's byte is among them
			cands = append(cands, id)
		}
	}
	for _, cand := range cands {
		if c.v.end[cand] {
			return cand
		}
		s := c.st
		a := c.active()
		var mark, depth int
		if a != nil {
			mark, depth = len(a.log), a.depth
		}
		if got, ok := c.feed(&s, a, int(cand), false); ok && c.completionOf(&s, got) < best {
			id, best = cand, c.completionOf(&s, got)
		}
		if a != nil {
			a.undo(mark, depth)
		}
	}
	return id
}
