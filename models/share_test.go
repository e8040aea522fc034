package models

import (
	"context"
	"path/filepath"
	"sync"
	"testing"

	"github.com/vkllm/vkllm/kernels"
	"github.com/vkllm/vkllm/kernels/cpu"
)

// TestContextsShareBackend: Contexts of one Model decoding on different
// goroutines take turns on its backend. The fast CPU path keeps scratch
// per backend, so without the Model's lock they race on it (-race reports
// it) and their logits come out wrong; with it each Context's logits are
// bitwise those of a Context decoding alone.
func TestContextsShareBackend(t *testing.T) {
	m, err := Open(context.Background(), filepath.Join(testdata, "qwen2-tiny"), WithBackendName(cpu.Name, kernels.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	want := make([][][]float32, len(prompts))
	for i, p := range prompts {
		want[i] = decodeAlone(t, m, p, 0)
	}
	var wg sync.WaitGroup
	for i, p := range prompts {
		ctx := newCtx(t, m, ContextParams{ContextLen: 64, BatchSize: 64})
		wg.Go(func() {
			for range 20 {
				if err := ctx.SeqRm(0, -1, -1); err != nil {
					t.Error(err)
					return
				}
				var b Batch
				for j, tok := range p {
					b.Add(tok, int32(j), true, 0)
				}
				if err := ctx.Decode(b); err != nil {
					t.Error(err)
					return
				}
				for j := range p {
					if !bitwiseEqual(ctx.Logits(j), want[i][j]) {
						t.Errorf("prompt %d position %d: logits differ from a context alone", i, j)
						return
					}
				}
			}
		})
	}
	wg.Wait()
}
