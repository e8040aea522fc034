package tokenizer

import (
	"encoding/json"
	"path/filepath"
	"testing"
	"unicode/utf8"
)

// TestUnicodeGoldens checks the normalization forms and the three fast regex
// scanners against HF tokenizers (tools/make_tokenizer_goldens.py).
func TestUnicodeGoldens(t *testing.T) {
	var g struct {
		Normalize map[string][]string `json:"normalize"`
		Pretok    struct {
			Texts  []string `json:"texts"`
			GPT2   [][]int  `json:"gpt2"`
			Llama3 [][]int  `json:"llama3"`
			Qwen2  [][]int  `json:"qwen2"`
		} `json:"pretokenize"`
	}
	if err := json.Unmarshal(readGz(t, filepath.Join("..", "testdata", "tokenizers", "unicode_goldens.json.gz")), &g); err != nil {
		t.Fatal(err)
	}
	texts := g.Normalize["texts"]
	for name, f := range map[string]normForm{"nfc": formNFC, "nfd": formNFD, "nfkc": formNFKC, "nfkd": formNFKD} {
		want := g.Normalize[name]
		if len(want) != len(texts) || len(texts) < 1000 {
			t.Fatalf("%s: %d results for %d texts", name, len(want), len(texts))
		}
		bad := 0
		for i, s := range texts {
			if got := normalizeForm(s, f); got != want[i] {
				if bad < 5 {
					t.Errorf("%s(%+q) = %+q, want %+q", name, s, got, want[i])
				}
				bad++
			}
		}
		if bad > 0 {
			t.Errorf("%s: %d of %d differ", name, bad, len(texts))
		}
	}
	for _, c := range []struct {
		name string
		m    matcher
		want [][]int
	}{{"gpt2", gpt2Matcher{}, g.Pretok.GPT2}, {"llama3", llama3Matcher{3}, g.Pretok.Llama3}, {"qwen2", llama3Matcher{1}, g.Pretok.Qwen2}} {
		if len(c.want) != len(g.Pretok.Texts) {
			t.Fatalf("%s: %d results for %d texts", c.name, len(c.want), len(g.Pretok.Texts))
		}
		bad := 0
		for i, s := range g.Pretok.Texts {
			got := runeLens(s, c.m.appendMatches(nil, s))
			if !eqInts(got, c.want[i]) {
				if bad < 5 {
					t.Errorf("%s %+q: pieces %v, want %v", c.name, trunc(s), got, c.want[i])
				}
				bad++
			}
		}
		if bad > 0 {
			t.Errorf("%s: %d of %d differ", c.name, bad, len(g.Pretok.Texts))
		}
	}
}

// runeLens returns the length in code points of each span (they tile s).
func runeLens(s string, spans []span) []int {
	out := make([]int, len(spans))
	for i, sp := range spans {
		out[i] = utf8.RuneCountInString(s[sp.start:sp.end])
	}
	return out
}

func eqInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
