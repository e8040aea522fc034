package tokenizer

import (
	"crypto/sha256"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// benchText builds the ~1 MB mixed text of BenchmarkEncode from
// testdata/tokenizers/bench_fragments.json. tools/bench_tokenizer.py builds
// the same bytes (it prints the same sha256) to time HF tokenizers on it.
func benchText(tb testing.TB) string {
	data, err := os.ReadFile(filepath.Join("..", "testdata", "tokenizers", "bench_fragments.json"))
	if err != nil {
		tb.Fatal(err)
	}
	var doc struct {
		Weights   map[string]int      `json:"weights"`
		Fragments map[string][]string `json:"fragments"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		tb.Fatal(err)
	}
	order := []string{"english", "code", "cjk", "numbers", "emoji", "space"}
	state := uint32(1)
	next := func() uint32 {
		state = (state*1103515245 + 12345) & 0x7fffffff
		return state >> 16
	}
	var b strings.Builder
	for b.Len() < 1<<20 {
		r := int(next() % 100)
		cat := order[len(order)-1]
		for _, c := range order {
			if r < doc.Weights[c] {
				cat = c
				break
			}
			r -= doc.Weights[c]
		}
		list := doc.Fragments[cat]
		b.WriteString(list[next()%uint32(len(list))])
	}
	return b.String()
}

// BenchmarkEncode encodes the whole benchmark text in one call (one
// goroutine; the word cache is warm after the first iteration, as HF's is).
func BenchmarkEncode(b *testing.B) {
	text := benchText(b)
	b.Logf("bench text: %d bytes, sha256 %x", len(text), sha256.Sum256([]byte(text)))
	for _, name := range []string{"qwen3", "llama3", "llama2", "smollm2"} {
		tk := loadGolden(b, name)
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			var n int
			for b.Loop() {
				ids, err := tk.Encode(text, false)
				if err != nil {
					b.Fatal(err)
				}
				n = len(ids)
			}
			b.ReportMetric(float64(n), "tokens")
		})
	}
}

// BenchmarkEncodeLines encodes the benchmark text line by line (one Encode
// per "\n"-terminated line), tools/bench_tokenizer.py --by-lines.
func BenchmarkEncodeLines(b *testing.B) {
	text := benchText(b)
	lines := strings.SplitAfter(text, "\n")
	for _, name := range []string{"qwen3", "llama3", "llama2", "smollm2"} {
		tk := loadGolden(b, name)
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			var n int
			for b.Loop() {
				n = 0
				for _, l := range lines {
					ids, err := tk.Encode(l, false)
					if err != nil {
						b.Fatal(err)
					}
					n += len(ids)
				}
			}
			b.ReportMetric(float64(n), "tokens")
		})
	}
}

// BenchmarkDecode decodes the benchmark text's ids.
func BenchmarkDecode(b *testing.B) {
	text := benchText(b)
	for _, name := range []string{"qwen3", "llama2"} {
		tk := loadGolden(b, name)
		ids, err := tk.Encode(text, false)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				tk.Decode(ids, false)
			}
		})
	}
}
