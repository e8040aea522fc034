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

// objectDoc is a json_object reply: every key is an other key, checked
// against the object's keys written before it.
const objectDoc = `{"id":"user_42-beta","age":37,"score":1.75,"tags":["red","blue","green"],"owner":{"name":"Ada Lovelace","admin":false,"id":7},"note":"first login from the mobile app","kind":"user","id2":null}`

// BenchmarkSchemaMask is the cost per token of a JSON-schema reply over
// Qwen3's 151k tokens at batch 1: Allow (with clearing the mask) and
// Accept over the tokens of benchDoc, the schema's masks already cached
// (compile-time costs are BenchmarkCompileSchema's); json_object is
// objectDoc's under JSONObjectSchema.
func BenchmarkSchemaMask(b *testing.B) {
	tok := realTokenizer(b, "qwen3")
	v := vocabOf(tok)
	allowed := make([]bool, tok.VocabSize())
	for _, c := range []struct {
		name string
		s    *Schema
		doc  string
	}{{"", compile(b, nestedSchema), benchDoc}, {"json_object,", JSONObjectSchema, objectDoc}} {
		ids, err := tok.Encode(c.doc, false)
		if err != nil {
			b.Fatal(err)
		}
		run := func() {
			con := NewSchemaConstraint(c.s, v, 0)
			for _, id := range ids {
				clear(allowed)
				con.Allow(allowed)
				if !allowed[id] {
					b.Fatalf("token %d %q refused", id, v.bytes[id])
				}
				con.Accept(id)
			}
			if con.st.completion() != 0 {
				b.Fatal("document not finished")
			}
		}
		run() // builds the vocabulary's tries and the pattern's masks
		for _, budget := range []int{0, 200} {
			b.Run(fmt.Sprintf("%sbudget=%d", c.name, budget), func(b *testing.B) {
				cpu := cpuTime()
				for b.Loop() {
					con := NewSchemaConstraint(c.s, v, budget)
					for _, id := range ids {
						clear(allowed)
						con.Allow(allowed)
						con.Accept(id)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(ids)), "ns/token")
				b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N*len(ids)), "cpu-ns/token")
				b.ReportMetric(float64(len(ids)), "tokens")
			})
		}
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

// argsDoc is a forced call's arguments with no schema, compact (the
// language both ways below take: JSONObjectSchema writes compact JSON,
// with at most 6 fraction digits and no exponent).
const argsDoc = `{"query":"the weather in Paris tomorrow morning","limit":5,"score":0.75,"filters":{"lang":"fr","safe":true,"sites":["meteo.fr","bbc.co.uk"]},"note":null}`

// BenchmarkToolCallArgs is the cost per token of a forced call whose
// tool has no schema, over Qwen3's 151k tokens (Allow, with clearing the
// mask, and Accept over the call's tokens): "hand" is the grammar's own
// JSON automaton (stepJSON), "schema" the same call with the arguments
// also walked by JSONObjectSchema's automaton (NewToolCallGrammarArgs),
// the way a schema-less call would go through the schema machinery.
// Run with -count to alternate them.
func BenchmarkToolCallArgs(b *testing.B) {
	tok := realTokenizer(b, "qwen3")
	v := vocabOf(tok)
	pre, mid, suf := chat.FormatQwen.CallSyntax()
	names := []string{"get_weather", "search"}
	hand, err := NewToolCallGrammar(pre, mid, suf, names)
	if err != nil {
		b.Fatal(err)
	}
	schema, err := NewToolCallGrammarArgs(pre, mid, suf, names, []*Schema{JSONObjectSchema, JSONObjectSchema})
	if err != nil {
		b.Fatal(err)
	}
	ids, err := tok.Encode(pre+"search"+mid+argsDoc+suf, false)
	if err != nil {
		b.Fatal(err)
	}
	allowed := make([]bool, tok.VocabSize())
	run := func(g *ToolCallGrammar, budget int) {
		con := NewToolCallConstraint(g, v, budget)
		for _, id := range ids {
			clear(allowed)
			con.Allow(allowed)
			if !allowed[id] {
				b.Fatalf("token %d %q refused", id, v.bytes[id])
			}
			con.Accept(id)
		}
		if con.st.phase != phEnd {
			b.Fatal("call not finished")
		}
	}
	for _, g := range []*ToolCallGrammar{hand, schema} {
		run(g, 0) // builds the tries and the masks
	}
	for _, budget := range []int{0, 200} {
		for _, c := range []struct {
			name string
			g    *ToolCallGrammar
		}{{"hand", hand}, {"schema", schema}} {
			b.Run(fmt.Sprintf("%s/budget=%d", c.name, budget), func(b *testing.B) {
				cpu := cpuTime()
				for b.Loop() {
					run(c.g, budget)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(ids)), "ns/token")
				b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N*len(ids)), "cpu-ns/token")
				b.ReportMetric(float64(len(ids)), "tokens")
			})
		}
	}
}
