package models

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/vkllm/vkllm/kernels"
	"github.com/vkllm/vkllm/kernels/cpu"
	"github.com/vkllm/vkllm/kernels/cpuref"
)

// placement checks that a sequence's logits do not depend on which cells
// it occupies or on what else is in the cache: the sequence decoded
// alone against the same tokens decoded beside another sequence that is
// then removed (SeqRm), so that its later tokens land in the freed cells
// below its earlier ones, and against a copy of it (SeqCp) that goes on
// in yet other cells; both times the prompt is shifted (SeqAdd, its keys
// re-rotated) before the tokens after it. Bit for bit.
func placement(t *testing.T, m *Model) {
	t.Helper()
	vocab := int32(m.Config.VocabSize)
	tok := func(i int) int32 { return int32(i*7919+13) % vocab }
	other := []int32{tok(1), tok(2), tok(3), tok(4), tok(5), tok(6), tok(7)}
	prompt := []int32{tok(11), tok(12), tok(13), tok(14), tok(15), tok(16), tok(17), tok(18), tok(19)}
	next := make([]int32, 12) // the tokens fed after the prompt
	for i := range next {
		next[i] = tok(30 + i)
	}
	params := ContextParams{ContextLen: 64, BatchSize: 32, MaxSeqs: 3}
	decode := func(ctx *Context, b Batch, row int) []float32 {
		t.Helper()
		if err := ctx.Decode(b); err != nil {
			t.Fatal(err)
		}
		return append([]float32(nil), ctx.Logits(row)...)
	}
	const shift = 4 // positions the prompt moves up by before next
	P := int32(len(prompt)) + shift
	shiftPrompt := func(ctx *Context, seq SeqID) {
		t.Helper()
		if err := ctx.SeqAdd(seq, 0, -1, shift); err != nil {
			t.Fatal(err)
		}
	}

	// Alone: the prompt, then next one token at a time, as sequence 0.
	var want [][]float32
	alone := newCtx(t, m, params)
	var b Batch
	for i, x := range prompt {
		b.Add(x, int32(i), i == len(prompt)-1, 0)
	}
	want = append(want, decode(alone, b, len(prompt)-1))
	shiftPrompt(alone, 0)
	for i, x := range next {
		b = Batch{}
		b.Add(x, P+int32(i), true, 0)
		want = append(want, decode(alone, b, 0))
	}

	// Beside another: sequence 0 takes the first cells; sequence 1 (ours)
	// follows; three steps decode both; sequence 0 is removed; ours goes
	// on in the freed cells. Then a copy (sequence 2) of ours goes on
	// with the last tokens in cells further up.
	ctx := newCtx(t, m, params)
	b = Batch{}
	for i, x := range other {
		b.Add(x, int32(i), false, 0)
	}
	for i, x := range prompt {
		b.Add(x, int32(i), i == len(prompt)-1, 1)
	}
	got := [][]float32{decode(ctx, b, b.Len()-1)}
	shiftPrompt(ctx, 1)
	for i := range 3 {
		b = Batch{}
		b.Add(tok(50+i), int32(len(other)+i), true, 0)
		b.Add(next[i], P+int32(i), true, 1)
		got = append(got, decode(ctx, b, 1))
	}
	if err := ctx.SeqRm(0, -1, -1); err != nil {
		t.Fatal(err)
	}
	const copyAt = 8 // next[copyAt:] go to the copy
	for i := 3; i < copyAt; i++ {
		b = Batch{}
		b.Add(next[i], P+int32(i), true, 1)
		got = append(got, decode(ctx, b, 0))
	}
	if err := ctx.SeqCp(1, 2, -1, -1); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 4; i++ { // fill the cells right above with sequence 1's own tokens
		b = Batch{}
		b.Add(tok(70+i), P+int32(copyAt+i), false, 1)
		if err := ctx.Decode(b); err != nil {
			t.Fatal(err)
		}
	}
	for i := copyAt; i < len(next); i++ {
		b = Batch{}
		b.Add(next[i], P+int32(i), true, 2)
		got = append(got, decode(ctx, b, 0))
	}
	for step := range want {
		if !bitwiseEqual(got[step], want[step]) {
			t.Fatalf("%s: step %d: logits differ from the sequence decoded alone (max |Δ| %g): results depend on cell placement",
				m.Backend().Name(), step, maxAbsDiff(got[step], want[step]))
		}
	}
}

func maxAbsDiff(a, b []float32) float64 {
	var d float64
	for i := range a {
		d = max(d, float64(abs32(a[i]-b[i])))
	}
	return d
}

func abs32(x float32) float32 {
	if x < 0 {
		return -x
	}
	return x
}

// TestPlacement runs placement on both CPU paths, on a float model and a
// quantised one (the fast path's integer kernels).
func TestPlacement(t *testing.T) {
	for _, path := range []string{"qwen2-tiny", "llama-tiny-Q4_0.gguf"} {
		for _, be := range []kernels.Backend{cpuref.New(0), cpu.New(0)} {
			t.Run(path+"/"+be.Name(), func(t *testing.T) {
				m, err := Open(context.Background(), filepath.Join(testdata, path), WithBackend(be))
				if err != nil {
					t.Fatal(err)
				}
				defer m.Close()
				placement(t, m)
			})
		}
	}
}
