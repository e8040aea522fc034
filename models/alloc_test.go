package models

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/vkllm/vkllm/internal/testmodel"
	"github.com/vkllm/vkllm/kernels/cpu"
)

// TestDecodeAllocatesNothing: a Context allocates its backend memory when
// it is made, for BatchSize tokens; Decode then runs batches of every
// size from 1 to BatchSize, prefill and decode mixed, sequences growing,
// removed and shifted, without one backend allocation. A batch asking for
// logits of more rows than MaxOutputs (default MaxSeqs) grows the output
// tensors once.
func TestDecodeAllocatesNothing(t *testing.T) {
	cb := &testmodel.Counting{Backend: cpu.New(0)}
	t.Cleanup(func() { cb.Close() })
	m, err := Open(context.Background(), filepath.Join(testdata, "qwen2-tiny"), WithBackend(cb))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	const seqs, batchSize = 4, 24
	ctx := newCtx(t, m, ContextParams{ContextLen: 192, MaxSeqs: seqs, BatchSize: batchSize})
	base := cb.Allocs()

	r := rand.New(rand.NewPCG(7, 7))
	vocab := int32(m.Config.VocabSize)
	next := make([]int32, seqs) // each sequence's next position
	sizes := map[int]bool{}
	for step := range 120 {
		// Sequences take 1 token (decode) or a chunk (prefill), in
		// batch order; the last token of each asks for logits.
		var b Batch
		room := batchSize
		for s := range seqs {
			if room == 0 || r.IntN(4) == 0 {
				continue
			}
			k := 1
			if r.IntN(3) == 0 {
				k = 1 + r.IntN(room)
			}
			k = min(k, room)
			for i := range k {
				b.Add(r.Int32N(vocab), next[s]+int32(i), i == k-1, SeqID(s))
			}
			next[s] += int32(k)
			room -= k
		}
		if b.Len() == 0 {
			b.Add(r.Int32N(vocab), next[0], true, 0)
			next[0]++
		}
		sizes[b.Len()] = true
		if err := ctx.Decode(b); err != nil {
			t.Fatalf("step %d (%d tokens): %v", step, b.Len(), err)
		}
		// Keep the cache from filling (at most 38 cells a sequence
		// before a step): a long sequence is dropped, or shifted back
		// after losing its head.
		for s := range seqs {
			switch {
			case next[s] > 48 || next[s] > 32 && r.IntN(3) == 0:
				if err := ctx.SeqRm(SeqID(s), -1, -1); err != nil {
					t.Fatal(err)
				}
				next[s] = 0
			case next[s] > 32:
				if err := ctx.SeqRm(SeqID(s), 0, 10); err != nil {
					t.Fatal(err)
				}
				if err := ctx.SeqAdd(SeqID(s), 10, -1, -10); err != nil {
					t.Fatal(err)
				}
				next[s] -= 10
			}
		}
		if cb.Allocs() != base {
			t.Fatalf("step %d (%d tokens): %d backend allocations since NewContext", step, b.Len(), cb.Allocs()-base)
		}
	}
	t.Logf("%d batch sizes", len(sizes))
	if len(sizes) < batchSize/2 {
		t.Fatalf("only %d batch sizes ran", len(sizes))
	}

	// Logits for every token of a batch: more rows than MaxSeqs. The
	// output tensors (three) grow to BatchSize, once.
	for i, n := range []int{batchSize, 7, batchSize} {
		if err := ctx.SeqRm(-1, -1, -1); err != nil {
			t.Fatal(err)
		}
		var b Batch
		for p := range n {
			b.Add(r.Int32N(vocab), int32(p), true, 0)
		}
		if err := ctx.Decode(b); err != nil {
			t.Fatal(err)
		}
		if want := base + 3; cb.Allocs() != want {
			t.Fatalf("batch %d of %d tokens, all with logits: %d allocations since NewContext, want 3", i, n, cb.Allocs()-base)
		}
	}
}

// TestLoRAAllocatesNothing: a Context made after its model's adapters
// were loaded makes their scratch then, so batches running one adapter,
// then both, then the base model allocate nothing.
func TestLoRAAllocatesNothing(t *testing.T) {
	cb := &testmodel.Counting{Backend: cpu.New(0)}
	t.Cleanup(func() { cb.Close() })
	m, err := Open(context.Background(), filepath.Join(testdata, "llama-tiny"), WithBackend(cb))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	a, b := loadAdapter(t, m, "llama-tiny-lora-a"), loadAdapter(t, m, "llama-tiny-lora-b")
	ctx := newCtx(t, m, ContextParams{ContextLen: 128, MaxSeqs: 2, BatchSize: 8})
	var first Batch
	first.Add(3, 0, true, 0)
	if err := ctx.Decode(first); err != nil { // the base model: makes the RoPE table
		t.Fatal(err)
	}
	base := cb.Allocs()
	next := [2]int32{1, 0}
	for i, ads := range [][2]AdapterID{{a, a}, {a, b}, {b, NoAdapter}, {NoAdapter, NoAdapter}} {
		var bt Batch
		for s := range 2 {
			for j := range 3 {
				bt.Add(int32(4+i), next[s], j == 2, SeqID(s))
				bt.Adapter = append(bt.Adapter, ads[s])
				next[s]++
			}
		}
		if err := ctx.Decode(bt); err != nil {
			t.Fatal(err)
		}
		if got := cb.Allocs() - base; got != 0 {
			t.Fatalf("step %d, adapters %v: %d backend allocations", i, ads, got)
		}
	}
}
