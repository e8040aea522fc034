package grammar

import (
	"encoding/json"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/vkllm/vkllm/tokenizer"
	"github.com/vkllm/vkllm/tokenizer/chat"
)

// scanAllow is the mask by definition: every token fed to a copy of the
// state, with the budget check, and the end tokens when the document may
// end (the slow reference for the trie walk and the cached masks).
func scanAllow(c *SchemaConstraint, allowed []bool) {
	if c.off {
		return
	}
	pass := func(budget bool) bool {
		some := false
		left := c.budget - c.n - 1
		for id, b := range c.v.bytes {
			if len(b) == 0 || c.v.literal[id] || c.v.end[id] || c.st.done() {
				continue
			}
			s := c.st
			s.log = nil
			ok := true
			for _, x := range b {
				if !s.step(x) {
					ok = false
					break
				}
			}
			if ok && (!budget || s.completion() <= left-1) {
				allowed[id], some = true, true
			}
		}
		return some
	}
	if !pass(c.budget > 0) && c.budget > 0 {
		pass(false)
	}
	if c.st.completion() == 0 {
		for _, id := range c.v.ends {
			allowed[id] = true
		}
	}
}

// TestSchemaConstraintWalk runs random replies over Qwen3's vocabulary:
// each step's mask must be the scan's, and each reply a document the
// reference validator accepts, finished within its budget.
func TestSchemaConstraintWalk(t *testing.T) {
	tok := realTokenizer(t, "qwen3")
	v := vocabOf(tok)
	seeds := 3
	if testing.Short() {
		seeds = 1
	}
	schemas := []string{nestedSchema, `{"type":"object"}`,
		`{"type":"object","properties":{"k":{"type":"string","pattern":"^[A-Fa-f0-9]{2,8}$"},"s":{"type":"string","maxLength":4},"n":{"type":"integer","minimum":-7,"maximum":300}},"required":["k","n","s"],"additionalProperties":false}`,
		`{"type":"array","items":{"type":"string"},"maxItems":3}`,
	}
	steps := 0
	for si, sc := range schemas {
		s := compile(t, sc)
		val := validator(t, sc)
		for seed := range seeds {
			r := rand.New(rand.NewPCG(uint64(si), uint64(seed)))
			budget := s.MinLen() + 5 + 20*seed // room for the shortest document, one byte a token
			c := NewSchemaConstraint(s, v, budget)
			got := make([]bool, tok.VocabSize())
			want := make([]bool, tok.VocabSize())
			var text []byte
			ended := false
			for range budget {
				clear(got)
				clear(want)
				c.Allow(got)
				scanAllow(c, want)
				if !slices.Equal(got, want) {
					for id := range got {
						if got[id] != want[id] {
							t.Fatalf("schema %d seed %d after %q: token %d %q: walk %v, scan %v", si, seed, text, id, v.bytes[id], got[id], want[id])
						}
					}
				}
				steps++
				ids := allowedIDs(got)
				if len(ids) == 0 {
					t.Fatalf("schema %d: nothing allowed after %q", si, text)
				}
				id := ids[r.IntN(len(ids))]
				if v.end[id] {
					ended = true
					break
				}
				c.Accept(id)
				text = append(text, v.bytes[id]...)
			}
			if !ended && c.st.completion() != 0 {
				t.Fatalf("schema %d seed %d: %d tokens and not finished: %q", si, seed, budget, text)
			}
			if !json.Valid(text) {
				t.Fatalf("schema %d seed %d: not JSON: %q", si, seed, text)
			}
			if err := validates(t, val, text); err != nil {
				t.Fatalf("schema %d seed %d: %s: %v", si, seed, text, err)
			}
			t.Logf("schema %d seed %d: %s", si, seed, text)
		}
	}
	t.Logf("%d steps compared", steps)
}

var toolSchemas = map[string]string{
	"get_weather": `{"type":"object","properties":{"city":{"type":"string","maxLength":10},"unit":{"enum":["c","f"]},"days":{"type":"integer","minimum":1,"maximum":7}},"required":["city","unit"],"additionalProperties":false}`,
	"search":      `{"type":"object","properties":{"q":{"type":"string","pattern":"^[a-z ]+$"},"n":{"type":"array","items":{"type":"boolean"},"minItems":2}},"required":["q","n"],"additionalProperties":false}`,
}

// TestToolArgsSchemaWalk draws random forced calls whose arguments follow
// each tool's schema ("get" has none: any object), with and without
// max_tokens: every call must parse, name an offered tool, and carry
// arguments its schema's reference validator accepts.
func TestToolArgsSchemaWalk(t *testing.T) {
	tiny, err := tokenizer.FromFile(tinyDir)
	if err != nil {
		t.Fatal(err)
	}
	toks := []*tokenizer.Tokenizer{tiny}
	if !testing.Short() {
		toks = append(toks, realTokenizer(t, "qwen3"))
	}
	names := []string{"get_weather", "get", "search"}
	var args []*Schema
	vals := map[string]*jsonschema.Schema{}
	for _, n := range names {
		if sc, ok := toolSchemas[n]; ok {
			args = append(args, compile(t, sc))
			vals[n] = validator(t, sc)
		} else {
			args = append(args, nil)
		}
	}
	for ti, tok := range toks {
		v := vocabOf(tok)
		formats, seeds := []chat.Format{chat.FormatQwen, chat.FormatLlama3, chat.FormatMistral}, uint64(12)
		if ti > 0 { // Qwen3's 151k tokens: fewer walks
			formats, seeds = formats[:1], 4
		}
		for _, f := range formats {
			pre, mid, suf := f.CallSyntax()
			g, err := NewToolCallGrammarArgs(pre, mid, suf, names, args)
			if err != nil {
				t.Fatal(err)
			}
			for seed := range seeds {
				rng := rand.New(rand.NewPCG(seed, uint64(ti)))
				c := NewToolCallConstraint(g, v, 0)
				budget := 0
				if seed%2 == 0 {
					budget = c.completionOf(&gstate{}, nil) + 40 + rng.IntN(40)
					c.budget = budget
				}
				allowed := make([]bool, tok.VocabSize())
				var text []byte
				for n := 0; n < 400 && (budget == 0 || n < budget); n++ {
					clear(allowed)
					c.Allow(allowed)
					ids := allowedIDs(allowed)
					if len(ids) == 0 {
						t.Fatalf("%v seed %d: nothing allowed after %q", f, seed, text)
					}
					id := ids[rng.IntN(len(ids))]
					if budget == 0 && n > 60 { // head for the end
						best := c.completionOf(&c.st, c.active())
						cands := ids[:0:0]
						for range 64 {
							cands = append(cands, ids[rng.IntN(len(ids))])
						}
						for _, id := range ids {
							if len(v.bytes[id]) == 1 || v.end[id] { // the closer's byte is among them
								cands = append(cands, id)
							}
						}
						for _, cand := range cands {
							if v.end[cand] {
								id = cand
								break
							}
							s := c.st
							a := c.active()
							var mark, depth int
							if a != nil {
								mark, depth = len(a.log), a.depth
							}
							got, ok := c.feed(&s, a, int(cand), false)
							if ok && c.completionOf(&s, got) < best {
								id, best = cand, c.completionOf(&s, got)
							}
							if a != nil {
								a.undo(mark, depth)
							}
						}
					}
					if v.end[id] {
						break
					}
					c.Accept(id)
					if c.off {
						t.Fatalf("%v seed %d: token %d refused after Allow", f, seed, id)
					}
					text = append(text, v.bytes[id]...)
				}
				content, calls := chat.ParseToolCalls(string(text), f)
				if content != "" || len(calls) != 1 {
					t.Fatalf("%v seed %d budget %d: %q parses as %q %+v", f, seed, budget, text, content, calls)
				}
				call := calls[0]
				if val := vals[call.Function.Name]; val != nil {
					if err := validates(t, val, []byte(call.Function.Arguments)); err != nil {
						t.Fatalf("%v seed %d: %s(%s): %v", f, seed, call.Function.Name, call.Function.Arguments, err)
					}
				} else if !json.Valid([]byte(call.Function.Arguments)) {
					t.Fatalf("%v seed %d: %s(%s) not JSON", f, seed, call.Function.Name, call.Function.Arguments)
				}
			}
		}
	}
}

// TestSchemaConstraintConcurrent: constraints of one schema on one
// vocabulary run on several goroutines (the choices of a request), the
// vocabulary's tries and masks built and shared under them (run with
// -race).
func TestSchemaConstraintConcurrent(t *testing.T) {
	tok, err := tokenizer.FromFile(tinyDir)
	if err != nil {
		t.Fatal(err)
	}
	v := vocabOf(tok)
	cache := NewSchemaCache(4)
	var wg sync.WaitGroup
	texts := make([]string, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := cache.Compile([]byte(nestedSchema))
			if err != nil {
				t.Error(err)
				return
			}
			r := rand.New(rand.NewPCG(uint64(g), 9))
			c := NewSchemaConstraint(s, v, s.MinLen()+30)
			allowed := make([]bool, tok.VocabSize())
			var text []byte
			for range s.MinLen() + 30 {
				clear(allowed)
				c.Allow(allowed)
				ids := allowedIDs(allowed)
				id := ids[r.IntN(len(ids))]
				if v.end[id] {
					break
				}
				c.Accept(id)
				text = append(text, v.bytes[id]...)
			}
			texts[g] = string(text)
		}()
	}
	wg.Wait()
	val := validator(t, nestedSchema)
	for g, text := range texts {
		if err := validates(t, val, []byte(text)); err != nil {
			t.Errorf("goroutine %d: %q: %v", g, text, err)
		}
	}
}
