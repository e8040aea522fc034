package sampler

import (
	"encoding/json"
	"math/rand/v2"
	"slices"
	"testing"
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
		left := c.budget - c.n
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
	schemas := []string{nestedSchema, `{"type":"object"}`,
		`{"type":"object","properties":{"k":{"type":"string","pattern":"^[A-Fa-f0-9]{2,8}$"},"s":{"type":"string","maxLength":4},"n":{"type":"integer","minimum":-7,"maximum":300}},"required":["k","n","s"],"additionalProperties":false}`,
		`{"type":"array","items":{"type":"string"},"maxItems":3}`,
	}
	steps := 0
	for si, sc := range schemas {
		s := compile(t, sc)
		val := validator(t, sc)
		for seed := range 3 {
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
				var ids []int32
				for id, ok := range got {
					if ok {
						ids = append(ids, int32(id))
					}
				}
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
