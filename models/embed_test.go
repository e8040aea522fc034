package models

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// embedGolden is a testdata/models/*.embed.golden.json
// (tools/make_embedding_goldens.py): transformers' last hidden states
// (output_hidden_states[-1], after the final norm) of the logits goldens'
// prompts, and their pooled vectors.
type embedGolden struct {
	Model      string
	Versions   map[string]string
	HiddenSize int `json:"hidden_size"`
	Prompts    []struct {
		Tokens     []int32
		Hidden     [][]float32 // (positions, hidden)
		Last, Mean []float32   // pooled, L2-normalised
		LastRaw    []float32   `json:"last_raw"`
		MeanRaw    []float32   `json:"mean_raw"`
	}
}

func loadEmbedGolden(t testing.TB, name string) *embedGolden {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(testdata, name+".embed.golden.json"))
	if err != nil {
		t.Fatal(err)
	}
	var g embedGolden
	if err := json.Unmarshal(raw, &g); err != nil {
		t.Fatal(err)
	}
	return &g
}

// embedCases: model path → embedding golden name (safetensors folders:
// the goldens come from transformers on them).
var embedCases = []struct{ path, golden string }{
	{"qwen2-tiny", "qwen2-tiny"},
	{"llama-tiny", "llama-tiny"},
	{"llama-tiny-sharded", "llama-tiny"},
}

// TestEmbeddingParity: the final hidden state of every prompt position
// (Batch.Embed, Context.Embeddings) is within 1e-4 × max|h| of the row's
// transformers value (output_hidden_states[-1]), the bound TestParity
// puts on logits.
func TestEmbeddingParity(t *testing.T) {
	for _, c := range embedCases {
		t.Run(c.path, func(t *testing.T) {
			checkEmbeddingParity(t, openTest(t, filepath.Join(testdata, c.path)), loadEmbedGolden(t, c.golden))
		})
	}
}

// checkEmbeddingParity decodes each golden prompt in one batch asking for
// every position's hidden state (and, for odd positions, its logits too,
// which must not change the hidden states) and compares them.
func checkEmbeddingParity(t *testing.T, m *Model, g *embedGolden) {
	t.Helper()
	if g.HiddenSize != m.Config.HiddenSize {
		t.Fatalf("golden hidden size %d, model %d", g.HiddenSize, m.Config.HiddenSize)
	}
	ctx := newCtx(t, m, ContextParams{ContextLen: 128, BatchSize: 64})
	var worst float64
	for pi, p := range g.Prompts {
		if err := ctx.SeqRm(0, -1, -1); err != nil {
			t.Fatal(err)
		}
		var b Batch
		for i, tok := range p.Tokens {
			b.Add(tok, int32(i), i%2 == 1, 0)
			b.Embed = append(b.Embed, true)
		}
		if err := ctx.Decode(b); err != nil {
			t.Fatal(err)
		}
		for i := range p.Tokens {
			got := ctx.Embeddings(i)
			if len(got) != m.Config.HiddenSize {
				t.Fatalf("prompt %d pos %d: %d values, want %d", pi, i, len(got), m.Config.HiddenSize)
			}
			if j, d, bound := farLogit(got, p.Hidden[i], 1e-4); j >= 0 {
				t.Fatalf("prompt %d pos %d dim %d: hidden %v, want %v (|diff| %.3g > %.3g)", pi, i, j, got[j], p.Hidden[i][j], d, bound)
			}
			worst = max(worst, maxAbsDiff(got, p.Hidden[i]))
		}
	}
	t.Logf("max |hidden − transformers| = %.3g", worst)
}

// TestEmbeddingsAsked: Embeddings gives rows only for the tokens that
// asked, nil otherwise and after a pass that asked for none; asking for
// hidden states changes no logits; a flag slice of the wrong length is a
// bad batch that changes nothing.
func TestEmbeddingsAsked(t *testing.T) {
	m := openTest(t, filepath.Join(testdata, "qwen2-tiny"))
	ctx := newCtx(t, m, ContextParams{ContextLen: 64, MaxSeqs: 2, BatchSize: 16})
	p := prompts[0]
	var plain, asked Batch
	for i, tok := range p {
		plain.Add(tok, int32(i), true, 0)
		asked.Add(tok, int32(i), true, 1)
		asked.Embed = append(asked.Embed, i == 2 || i == len(p)-1)
	}
	if err := ctx.Decode(plain); err != nil {
		t.Fatal(err)
	}
	want := make([][]float32, len(p))
	for i := range p {
		want[i] = append([]float32(nil), ctx.Logits(i)...)
		if ctx.Embeddings(i) != nil {
			t.Fatalf("pos %d: hidden state without asking", i)
		}
	}
	bad := asked
	bad.Embed = bad.Embed[:2]
	if err := ctx.Decode(bad); !errors.Is(err, ErrBadBatch) {
		t.Fatalf("Embed of %d flags for %d tokens: %v, want ErrBadBatch", len(bad.Embed), bad.Len(), err)
	}
	if got := ctx.Used(); got != len(p) {
		t.Fatalf("bad batch left %d cells in use, want %d", got, len(p))
	}
	if err := ctx.Decode(asked); err != nil {
		t.Fatal(err)
	}
	for i := range p {
		if got := ctx.Embeddings(i); (got != nil) != asked.Embed[i] {
			t.Fatalf("pos %d: asked %v, got a row %v", i, asked.Embed[i], got != nil)
		}
		if !bitwiseEqual(ctx.Logits(i), want[i]) {
			t.Fatalf("pos %d: logits changed by asking for hidden states", i)
		}
	}
	if ctx.Embeddings(-1) != nil || ctx.Embeddings(len(p)) != nil {
		t.Fatal("out-of-range index gave a row")
	}
	if _, err := decodeToken(ctx, 1, 5); err != nil {
		t.Fatal(err)
	}
	if ctx.Embeddings(0) != nil {
		t.Fatal("a pass that asked for no hidden state still gives one")
	}
}
