package server

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/vkllm/vkllm/engine"
)

// TestEmbeddings asks the tiny model for embeddings through openai-go:
// strings and token ids, float and base64. Every vector is the one
// engine.LLM.Embed gives (to the float32 bit; base64 carries exactly
// those bits), in input order, of unit norm, and usage counts the
// inputs' tokens.
func TestEmbeddings(t *testing.T) {
	ts := newTestServer(t, Config{})
	ts.waitLoaded()
	defer ts.close()
	ctx := context.Background()
	c := ts.client()
	l := ts.gen().(*engine.LLM)
	texts := []string{"The quick brown fox", "Hello, world!", "kernels multiply matrices"}
	want, err := l.Embed(ctx, texts, engine.EmbedOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tokens := 0
	var ids [][]int64
	for _, s := range texts {
		toks, err := l.Tokenizer().Encode(s, true)
		if err != nil {
			t.Fatal(err)
		}
		tokens += len(toks)
		var row []int64
		for _, id := range toks {
			row = append(row, int64(id))
		}
		ids = append(ids, row)
	}
	for _, format := range []openai.EmbeddingNewParamsEncodingFormat{"", openai.EmbeddingNewParamsEncodingFormatFloat, openai.EmbeddingNewParamsEncodingFormatBase64} {
		for _, in := range []struct {
			name  string
			input openai.EmbeddingNewParamsInputUnion
			want  []engine.Embedding
		}{
			{"strings", openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: texts}, want},
			{"string", openai.EmbeddingNewParamsInputUnion{OfString: openai.String(texts[1])}, want[1:2]},
			{"token lists", openai.EmbeddingNewParamsInputUnion{OfArrayOfTokenArrays: ids}, want},
			{"tokens", openai.EmbeddingNewParamsInputUnion{OfArrayOfTokens: ids[2]}, want[2:]},
		} {
			t.Run(string(format)+" "+in.name, func(t *testing.T) {
				p := openai.EmbeddingNewParams{Model: "tiny", Input: in.input, EncodingFormat: format}
				resp, err := c.Embeddings.New(ctx, p)
				if err != nil {
					t.Fatal(err)
				}
				if len(resp.Data) != len(in.want) || resp.Model != "tiny" || resp.Object != "list" {
					t.Fatalf("%d vectors of model %q (%s), want %d of tiny", len(resp.Data), resp.Model, resp.Object, len(in.want))
				}
				n := 0
				for i, d := range resp.Data {
					w := in.want[i]
					n += w.PromptTokens
					if d.Index != int64(i) || d.Object != "embedding" || len(d.Embedding) != len(w.Vector) {
						t.Fatalf("data[%d]: index %d object %q %d values, want %d", i, d.Index, d.Object, len(d.Embedding), len(w.Vector))
					}
					if isString := strings.HasPrefix(d.JSON.Embedding.Raw(), `"`); isString != (format == "base64") {
						t.Fatalf("data[%d]: embedding sent as a string %v for encoding_format %q", i, isString, format)
					}
					var norm float64
					for j, v := range d.Embedding {
						if float32(v) != w.Vector[j] {
							t.Fatalf("data[%d][%d] = %v, engine %v", i, j, v, w.Vector[j])
						}
						norm += v * v
					}
					if math.Abs(norm-1) > 1e-5 {
						t.Fatalf("data[%d]: |v|² = %v, want 1", i, norm)
					}
				}
				if resp.Usage.PromptTokens != int64(n) || resp.Usage.TotalTokens != int64(n) || n == 0 {
					t.Fatalf("usage %+v, want %d prompt and total tokens", resp.Usage, n)
				}
			})
		}
	}
	if tokens != want[0].PromptTokens+want[1].PromptTokens+want[2].PromptTokens {
		t.Fatalf("engine counts %d tokens, the tokenizer %d", want[0].PromptTokens+want[1].PromptTokens+want[2].PromptTokens, tokens)
	}

	// dimensions: the model's own 64 is accepted, any other refused.
	if _, err := c.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: "tiny", Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("a")}, Dimensions: openai.Int(64)}); err != nil {
		t.Fatalf("dimensions 64: %v", err)
	}
	_, err = c.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: "tiny", Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("a")}, Dimensions: openai.Int(32)})
	var ae *openai.Error
	if !errors.As(err, &ae) || ae.StatusCode != http.StatusBadRequest || ae.Param != "dimensions" {
		t.Fatalf("dimensions 32: %v, want a 400 naming dimensions", err)
	}
	// normalize false (vLLM's extension): the raw pooled vector.
	code, _, b := ts.do("POST", "/v1/embeddings", "application/json", `{"model":"tiny","input":"a","normalize":false}`)
	var raw embeddingResponse
	if err := json.Unmarshal(b, &raw); code != 200 || err != nil {
		t.Fatalf("normalize false: %d %s", code, b)
	}
	rawWant, err := l.Embed(ctx, []string{"a"}, engine.EmbedOptions{NoNormalize: true})
	if err != nil {
		t.Fatal(err)
	}
	for j, v := range raw.Data[0].Embedding.([]any) {
		if float32(v.(float64)) != rawWant[0].Vector[j] {
			t.Fatalf("normalize false: [%d] = %v, want %v", j, v, rawWant[0].Vector[j])
		}
	}
	ts.settle()
}

// TestEmbeddingInputBoundedMemory: a 4 MiB body of tiny inputs, far more
// than MaxEmbeddingInputs, or of token ids, far more than an input may
// hold, is refused after scanning that many, having allocated no more
// than a few times the body.
func TestEmbeddingInputBoundedMemory(t *testing.T) {
	for _, c := range []struct{ name, elem string }{{"lists", "[1],"}, {"strings", `"a",`}, {"ids", "1,"}} {
		t.Run(c.name, func(t *testing.T) {
			body := "[" + strings.Repeat(c.elem, (4<<20)/len(c.elem)) + c.elem[:len(c.elem)-1] + "]"
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			_, e := parseEmbeddingInput(json.RawMessage(body), 1024)
			runtime.ReadMemStats(&after)
			if e == nil || e.Status != 400 || *e.Param != "input" {
				t.Fatalf("got %v, want a 400 naming input", e)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 4*uint64(len(body)) {
				t.Fatalf("allocated %d bytes for a body of %d", alloc, len(body))
			} else {
				t.Logf("allocated %d bytes for a body of %d", alloc, len(body))
			}
		})
	}
}

// TestEmbeddingsUnsupported: a model whose Generator cannot embed
// answers 400 naming the model.
func TestEmbeddingsUnsupported(t *testing.T) {
	ts, _ := newFakeServer(t, "x")
	defer ts.close()
	code, _, b := ts.do("POST", "/v1/embeddings", "application/json", `{"model":"fake","input":"a"}`)
	if e := errorBody(t, b); code != http.StatusBadRequest || e["param"] != "model" {
		t.Fatalf("%d %s, want a 400 naming model", code, b)
	}
}
