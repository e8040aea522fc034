package models

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/vkllm/vkllm/errcode"
	"github.com/vkllm/vkllm/kv"
)

// TestSlidingWindowReuse runs mistral-tiny (window 8 on every layer) on a
// cache of 16 cells over prompts and continuations of up to 72 positions:
// the cells that fell out of the window are reused, and every logit still
// matches transformers (the bounds of TestParity). A model that mixes
// windowed and full layers (qwen2-swa-tiny) reuses nothing: its full
// layers see every position.
func TestSlidingWindowReuse(t *testing.T) {
	const cells, chunk = 16, 8 // a chunk of 8 plus the 7 positions before it fit
	m := openTest(t, filepath.Join(testdata, "mistral-tiny"))
	g := loadGolden(t, "mistral-tiny")
	ctx, err := m.NewContext(ContextParams{ContextLen: cells, BatchSize: chunk})
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Close()
	for pi, p := range g.Prompts {
		if err := ctx.SeqRm(0, -1, -1); err != nil {
			t.Fatal(err)
		}
		for start := 0; start < len(p.Tokens); start += chunk {
			var b Batch
			for i := start; i < min(start+chunk, len(p.Tokens)); i++ {
				b.Add(p.Tokens[i], int32(i), true, 0)
			}
			if err := ctx.Decode(b); err != nil {
				t.Fatalf("prompt %d at %d: %v", pi, start, err)
			}
			for i := range b.Len() {
				checkLogits(t, ctx.Logits(i), p.Logits[start+i], pi, start+i)
			}
		}
		logits := ctx.Logits(ctx.OutputIDs()[len(ctx.OutputIDs())-1])
		for step, want := range p.Greedy {
			if step > 0 {
				if logits, err = decodeToken(ctx, 0, p.Greedy[step-1]); err != nil {
					t.Fatalf("prompt %d step %d: %v", pi, step, err)
				}
			}
			checkStep(t, logits, want, p.Top5[step], p.Margin[step], pi, step)
			if ctx.Used() > cells {
				t.Fatalf("%d cells used", ctx.Used())
			}
		}
	}

	mixed := openTest(t, filepath.Join(testdata, "qwen2-swa-tiny"))
	mctx, err := mixed.NewContext(ContextParams{ContextLen: cells, BatchSize: chunk})
	if err != nil {
		t.Fatal(err)
	}
	defer mctx.Close()
	_, err = prefill(mctx, 0, g.Prompts[3].Tokens[:cells+1])
	if !errors.Is(err, kv.ErrNoSlot) || errcode.Of(err) != errcode.CacheFull {
		t.Fatalf("mixed layers, %d tokens in %d cells: %v, want CACHE_FULL", cells+1, cells, err)
	}
}
