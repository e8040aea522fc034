package sampler

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/vkllm/vkllm/tokenizer"
	"github.com/vkllm/vkllm/tokenizer/chat"
)

// realTokenizer loads a real tokenizer and its config from
// testdata/tokenizers (gzipped).
func realTokenizer(tb testing.TB, name string) *tokenizer.Tokenizer {
	tb.Helper()
	read := func(file string) []byte {
		f, err := os.Open(filepath.Join("../testdata/tokenizers", name, file))
		if err != nil {
			tb.Fatal(err)
		}
		defer f.Close()
		zr, err := gzip.NewReader(f)
		if err != nil {
			tb.Fatal(err)
		}
		data, err := io.ReadAll(zr)
		if err != nil {
			tb.Fatal(err)
		}
		return data
	}
	tok, err := tokenizer.FromJSONWithConfig(read("tokenizer.json.gz"), read("tokenizer_config.json.gz"))
	if err != nil {
		tb.Fatal(err)
	}
	return tok
}

// BenchmarkToolCallConstraint is the cost of one step's mask over Qwen3's
// 151k tokens: in the prefix (most tokens fail at once), inside a JSON
// string (most pass every byte) and near the end of max_tokens (each
// candidate's completion is measured).
func BenchmarkToolCallConstraint(b *testing.B) {
	tok := realTokenizer(b, "qwen3")
	v := vocabOf(tok)
	g := grammar(b, chat.FormatQwen, "get_weather", "search")
	allowed := make([]bool, tok.VocabSize())
	for _, c := range []struct {
		name   string
		text   string
		budget int
	}{
		{"prefix", "", 0},
		{"string", "<tool_call>\n{\"name\": \"search\", \"arguments\": {\"query\": \"the", 0},
		{"string-budget", "<tool_call>\n{\"name\": \"search\", \"arguments\": {\"query\": \"the", 80},
	} {
		b.Run(c.name, func(b *testing.B) {
			con := NewToolCallConstraint(g, v, c.budget)
			for _, x := range []byte(c.text) {
				if !g.step(&con.st, x) {
					b.Fatalf("%q refused", c.text)
				}
			}
			con.n = c.budget - 60
			for b.Loop() {
				clear(allowed)
				con.Allow(allowed)
			}
			if n := bytes.Count(boolBytes(allowed), []byte{1}); n == 0 {
				b.Fatal("nothing allowed")
			}
		})
	}
}

func boolBytes(a []bool) []byte {
	out := make([]byte, len(a))
	for i, x := range a {
		if x {
			out[i] = 1
		}
	}
	return out
}
