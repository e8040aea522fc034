package grammar

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/vkllm/vkllm/tokenizer"
	"github.com/vkllm/vkllm/tokenizer/chat"
)

// realTokenizer loads a real tokenizer and its config from
// testdata/tokenizers (gzipped).
func realTokenizer(tb testing.TB, name string) *tokenizer.Tokenizer {
	tb.Helper()
	read := func(file string) []byte {
		f, err := os.Open(filepath.Join("../../testdata/tokenizers", name, file))
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

// benchDoc is a document of nestedSchema, written as a model might.
const benchDoc = `{"id":"user_42-beta","age":37,"score":1.75,"tags":["red","blue","green"],"owner":{"name":"Ada Lovelace","admin":false},"note":"first login from the mobile app","kind":"user"}`

// BenchmarkSchemaMask is the cost per token of a JSON-schema reply over
// Qwen3's 151k tokens at batch 1: Allow (with clearing the mask) and
// Accept over the tokens of benchDoc, the schema's masks already cached
// (compile-time costs are BenchmarkCompileSchema's).
func BenchmarkSchemaMask(b *testing.B) {
	tok := realTokenizer(b, "qwen3")
	v := vocabOf(tok)
	s := compile(b, nestedSchema)
	ids, err := tok.Encode(benchDoc, false)
	if err != nil {
		b.Fatal(err)
	}
	allowed := make([]bool, tok.VocabSize())
	run := func() {
		c := NewSchemaConstraint(s, v, 0)
		for _, id := range ids {
			clear(allowed)
			c.Allow(allowed)
			if !allowed[id] {
				b.Fatalf("token %d %q refused", id, v.bytes[id])
			}
			c.Accept(id)
		}
		if c.st.completion() != 0 {
			b.Fatal("document not finished")
		}
	}
	run() // builds the vocabulary's tries and the pattern's masks
	for _, budget := range []int{0, 200} {
		b.Run(fmt.Sprintf("budget=%d", budget), func(b *testing.B) {
			cpu := cpuTime()
			for b.Loop() {
				c := NewSchemaConstraint(s, v, budget)
				for _, id := range ids {
					clear(allowed)
					c.Allow(allowed)
					c.Accept(id)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(ids)), "ns/token")
			b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N*len(ids)), "cpu-ns/token")
			b.ReportMetric(float64(len(ids)), "tokens")
		})
	}
}

// BenchmarkCompileSchema is the cost of compiling nestedSchema, and of
// the first mask of each pattern state on Qwen3's vocabulary.
func BenchmarkCompileSchema(b *testing.B) {
	b.Run("compile", func(b *testing.B) {
		for b.Loop() {
			if _, err := CompileSchema([]byte(nestedSchema)); err != nil {
				b.Fatal(err)
			}
		}
	})
	tok := realTokenizer(b, "qwen3")
	v := vocabOf(tok)
	v.schema()
	s := compile(b, nestedSchema)
	id := s.root.props[slices.Index(s.root.names, "id")]
	b.Run("pattern-mask", func(b *testing.B) {
		for b.Loop() {
			sv := v.schema()
			sv.masks.order.Init()
			clear(sv.masks.byKey)
			v.patternMask(id, 0)
		}
	})
	b.Run("vocab-tries", func(b *testing.B) {
		for b.Loop() {
			w := vocabOf(tok)
			w.schema()
		}
	})
}
