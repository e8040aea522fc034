package models

import (
	"errors"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/vkllm/vkllm/kernels"
	"github.com/vkllm/vkllm/kernels/cpu"
	"github.com/vkllm/vkllm/kernels/kerneltest"
	"github.com/vkllm/vkllm/kv"
)

var prompts = [][]int32{
	{17, 200, 33, 41, 5, 99, 250},
	{3, 4, 5},
	{300, 12, 7, 7, 7, 100, 2, 9, 9, 60, 61},
	{1},
}

func newCtx(t *testing.T, m *Model, p ContextParams) *Context {
	t.Helper()
	ctx, err := m.NewContext(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ctx.Close() })
	return ctx
}

// decodeAlone returns the logits of every position of prompt, decoded as
// sequence 0 of a fresh context.
func decodeAlone(t *testing.T, m *Model, prompt []int32, start int32) [][]float32 {
	ctx := newCtx(t, m, ContextParams{ContextLen: 64, BatchSize: 64})
	var b Batch
	for i, tok := range prompt {
		b.Add(tok, start+int32(i), true, 0)
	}
	if err := ctx.Decode(b); err != nil {
		t.Fatal(err)
	}
	out := make([][]float32, len(prompt))
	for i := range prompt {
		out[i] = append([]float32(nil), ctx.Logits(i)...)
	}
	return out
}

func bitwiseEqual(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}

// TestBatchInvariance: four prompts in one batch give bitwise the same
// logits as each alone; and so do decode steps of four sequences at once.
func TestBatchInvariance(t *testing.T) {
	for _, name := range []string{"qwen2-tiny", "llama-tiny-Q4_1.gguf"} {
		t.Run(name, func(t *testing.T) {
			batchVsAlone(t, openTest(t, filepath.Join(testdata, name)), func(got, alone []float32, seq, pos int) {
				if !bitwiseEqual(got, alone) {
					t.Fatalf("seq %d pos %d: batched logits differ from alone", seq, pos)
				}
			})
		})
	}
}

// batchVsAlone decodes the four prompts in one batch, then one step of
// the four sequences at once, and hands every row of logits to cmp with
// the same row computed alone.
func batchVsAlone(t *testing.T, m *Model, cmp func(got, alone []float32, seq, pos int)) {
	t.Helper()
	ctx := newCtx(t, m, ContextParams{ContextLen: 64, MaxSeqs: 4, BatchSize: 64})
	var b Batch
	for s, p := range prompts {
		for i, tok := range p {
			b.Add(tok, int32(i), true, SeqID(s))
		}
	}
	if err := ctx.Decode(b); err != nil {
		t.Fatal(err)
	}
	k := 0
	for s, p := range prompts {
		alone := decodeAlone(t, m, p, 0)
		for i := range p {
			cmp(ctx.Logits(k), alone[i], s, i)
			k++
		}
	}
	next := []int32{10, 20, 30, 40}
	rows, err := ctx.DecodeBatch([]SeqID{0, 1, 2, 3}, next)
	if err != nil {
		t.Fatal(err)
	}
	for s, p := range prompts {
		alone := decodeAlone(t, m, append(append([]int32{}, p...), next[s]), 0)
		cmp(rows[s], alone[len(p)], s, len(p))
	}
}

// TestSeqCpPrefix: a shared prefix through SeqCp, then two divergent
// continuations, equals recomputing each from scratch.
func TestSeqCpPrefix(t *testing.T) {
	m := openTest(t, filepath.Join(testdata, "qwen2-tiny"))
	ctx := newCtx(t, m, ContextParams{ContextLen: 64, MaxSeqs: 2, BatchSize: 64})
	prefix := []int32{17, 200, 33, 41, 5}
	if _, err := ctx.Prefill(0, prefix); err != nil {
		t.Fatal(err)
	}
	if err := ctx.SeqCp(0, 1, -1, -1); err != nil {
		t.Fatal(err)
	}
	if used := ctx.Cache().Used(); used != len(prefix) {
		t.Fatalf("SeqCp used %d cells, want %d (no copy)", used, len(prefix))
	}
	var b Batch
	b.Add(7, 5, true, 0)
	b.Add(8, 5, true, 1)
	if err := ctx.Decode(b); err != nil {
		t.Fatal(err)
	}
	for s, tok := range []int32{7, 8} {
		fresh := decodeAlone(t, m, append(append([]int32{}, prefix...), tok), 0)
		if !bitwiseEqual(ctx.Logits(s), fresh[len(prefix)]) {
			t.Fatalf("continuation %d differs from a fresh decode", s)
		}
	}
}

// TestSeqRmRedecode: removing the tail then decoding other tokens equals a
// fresh decode.
func TestSeqRmRedecode(t *testing.T) {
	m := openTest(t, filepath.Join(testdata, "llama-tiny"))
	ctx := newCtx(t, m, ContextParams{ContextLen: 64, BatchSize: 64})
	if _, err := ctx.Prefill(0, []int32{1, 2, 3, 4, 5, 6}); err != nil {
		t.Fatal(err)
	}
	if err := ctx.TruncateKV(0, 3); err != nil {
		t.Fatal(err)
	}
	got, err := ctx.Prefill(0, []int32{40, 41})
	if err != nil {
		t.Fatal(err)
	}
	fresh := decodeAlone(t, m, []int32{1, 2, 3, 40, 41}, 0)
	if !bitwiseEqual(got, fresh[4]) {
		t.Fatal("SeqRm then re-decode differs from fresh")
	}
}

// TestSeqAddShift: shifting a sequence's positions (keys re-rotated) matches
// a fresh decode at the shifted positions within 1e-4 × max|logit|.
func TestSeqAddShift(t *testing.T) {
	for _, name := range []string{"qwen2-tiny", "llama-tiny", "llama-tiny-F32.gguf"} {
		t.Run(name, func(t *testing.T) {
			m := openTest(t, filepath.Join(testdata, name))
			ctx := newCtx(t, m, ContextParams{ContextLen: 64, BatchSize: 64})
			p := []int32{17, 200, 33, 41, 5, 99}
			if _, err := ctx.Prefill(0, p); err != nil {
				t.Fatal(err)
			}
			if err := ctx.SeqAdd(0, -1, -1, 10); err != nil {
				t.Fatal(err)
			}
			if ctx.SeqPosMin(0) != 10 {
				t.Fatalf("pos min %d", ctx.SeqPosMin(0))
			}
			got, err := ctx.Prefill(0, []int32{7})
			if err != nil {
				t.Fatal(err)
			}
			fresh := decodeAlone(t, m, append(append([]int32{}, p...), 7), 10)
			checkLogits(t, got, fresh[len(p)], 0, len(p))
		})
	}
}

// TestFullCache: a full cache gives kv.ErrNoSlot, leaves the cache as it
// was, and decoding works again after SeqRm frees room.
func TestFullCache(t *testing.T) {
	m := openTest(t, filepath.Join(testdata, "qwen2-tiny"))
	ctx := newCtx(t, m, ContextParams{ContextLen: 8, MaxSeqs: 2, BatchSize: 8})
	if _, err := ctx.Prefill(0, []int32{1, 2, 3, 4, 5, 6}); err != nil {
		t.Fatal(err)
	}
	before := ctx.SeqPosMax(0)
	_, err := ctx.Prefill(1, []int32{7, 8, 9})
	if !errors.Is(err, kv.ErrNoSlot) {
		t.Fatalf("got %v, want kv.ErrNoSlot", err)
	}
	if ctx.Cache().Used() != 6 || ctx.SeqPosMax(0) != before || ctx.SeqPosMax(1) != -1 {
		t.Fatalf("cache changed: used %d", ctx.Cache().Used())
	}
	if err := ctx.SeqRm(0, 3, -1); err != nil {
		t.Fatal(err)
	}
	got, err := ctx.Prefill(1, []int32{7, 8, 9})
	if err != nil {
		t.Fatal(err)
	}
	fresh := decodeAlone(t, m, []int32{7, 8, 9}, 0)
	if !bitwiseEqual(got, fresh[2]) {
		t.Fatal("after freeing room, logits differ from fresh")
	}
}

func TestBadBatch(t *testing.T) {
	m := openTest(t, filepath.Join(testdata, "qwen2-tiny"))
	ctx := newCtx(t, m, ContextParams{ContextLen: 16, MaxSeqs: 2, BatchSize: 4})
	cases := map[string]Batch{
		"empty":        {},
		"lengths":      {Token: []int32{1}, Pos: []int32{0, 1}, Seq: [][]SeqID{{0}}, Logits: []bool{true}},
		"vocab":        {Token: []int32{320}, Pos: []int32{0}, Seq: [][]SeqID{{0}}, Logits: []bool{true}},
		"negative tok": {Token: []int32{-1}, Pos: []int32{0}, Seq: [][]SeqID{{0}}, Logits: []bool{true}},
		"negative pos": {Token: []int32{1}, Pos: []int32{-1}, Seq: [][]SeqID{{0}}, Logits: []bool{true}},
		"seq range":    {Token: []int32{1}, Pos: []int32{0}, Seq: [][]SeqID{{2}}, Logits: []bool{true}},
		"no seq":       {Token: []int32{1}, Pos: []int32{0}, Seq: [][]SeqID{{}}, Logits: []bool{true}},
		"too big":      {Token: make([]int32, 5), Pos: []int32{0, 1, 2, 3, 4}, Seq: [][]SeqID{{0}, {0}, {0}, {0}, {0}}, Logits: make([]bool, 5)},
	}
	for name, b := range cases {
		if err := ctx.Decode(b); !errors.Is(err, ErrBadBatch) {
			t.Errorf("%s: got %v, want ErrBadBatch", name, err)
		}
		if ctx.Cache().Used() != 0 {
			t.Fatalf("%s changed the cache", name)
		}
	}
	// A position already present is refused by the cache, also untouched.
	if _, err := ctx.Prefill(0, []int32{1, 2}); err != nil {
		t.Fatal(err)
	}
	var b Batch
	b.Add(3, 1, true, 0)
	if err := ctx.Decode(b); !errors.Is(err, kv.ErrBadArg) || ctx.Cache().Used() != 2 {
		t.Fatalf("duplicate position: %v, used %d", err, ctx.Cache().Used())
	}
}

// TestForwardPanic: a panic inside the forward pass comes back from
// Decode as a *PanicError, the cache rolled back and the model's lock
// released (Close used to deadlock on it, and Decode to crash the caller),
// and once the fault is gone the context decodes as a fresh one.
func TestForwardPanic(t *testing.T) {
	pb := &kerneltest.Faulty{Backend: cpu.New(0)}
	defer pb.Close()
	m, err := Open(filepath.Join(testdata, "qwen2-tiny"), WithBackend(pb))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ctx := newCtx(t, m, ContextParams{ContextLen: 16, MaxSeqs: 2, BatchSize: 8})
	if _, err := ctx.Prefill(0, []int32{5, 6, 7}); err != nil {
		t.Fatal(err)
	}
	pb.Armed.Store(true)
	_, err = ctx.Prefill(1, []int32{7, 8, 9})
	var pe *PanicError
	if !errors.As(err, &pe) || pe.Value != kerneltest.FaultValue || len(pe.Stack) == 0 {
		t.Fatalf("got %v, want a *PanicError with the panic's value and a stack", err)
	}
	if ctx.Cache().Used() != 3 || ctx.SeqPosMax(1) != -1 {
		t.Fatalf("cache not rolled back: used %d, seq 1 at %d", ctx.Cache().Used(), ctx.SeqPosMax(1))
	}
	// A panic a backend raised again from a worker goroutine of its own
	// (kernels.WorkerPanic) reports that goroutine's value and stack.
	pb.Value = &kernels.WorkerPanic{Value: "worker boom", Stack: []byte("the worker's stack")}
	_, err = ctx.Prefill(1, []int32{7, 8, 9})
	if !errors.As(err, &pe) || pe.Value != "worker boom" || string(pe.Stack) != "the worker's stack" {
		t.Fatalf("got %v, want a *PanicError with the worker's value and stack", err)
	}
	if ctx.Cache().Used() != 3 || ctx.SeqPosMax(1) != -1 {
		t.Fatalf("cache not rolled back: used %d, seq 1 at %d", ctx.Cache().Used(), ctx.SeqPosMax(1))
	}
	pb.Armed.Store(false)
	got, err := ctx.Prefill(1, []int32{7, 8, 9})
	if err != nil {
		t.Fatal(err)
	}
	if fresh := decodeAlone(t, m, []int32{7, 8, 9}, 0); !bitwiseEqual(got, fresh[2]) {
		t.Fatal("after the panic, logits differ from a fresh context's")
	}
	closed := make(chan error, 1)
	go func() { closed <- ctx.Close() }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close still waiting on the model's lock")
	}
}
