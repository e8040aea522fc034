package models

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vkllm/vkllm/errcode"
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
	rows, err := decodeBatch(ctx, []SeqID{0, 1, 2, 3}, next)
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
	if _, err := prefill(ctx, 0, prefix); err != nil {
		t.Fatal(err)
	}
	if err := ctx.SeqCp(0, 1, -1, -1); err != nil {
		t.Fatal(err)
	}
	if used := ctx.Used(); used != len(prefix) {
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
	if _, err := prefill(ctx, 0, []int32{1, 2, 3, 4, 5, 6}); err != nil {
		t.Fatal(err)
	}
	if err := ctx.SeqRm(0, 3, -1); err != nil {
		t.Fatal(err)
	}
	got, err := prefill(ctx, 0, []int32{40, 41})
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
			if _, err := prefill(ctx, 0, p); err != nil {
				t.Fatal(err)
			}
			if err := ctx.SeqAdd(0, -1, -1, 10); err != nil {
				t.Fatal(err)
			}
			if ctx.SeqPosMin(0) != 10 {
				t.Fatalf("pos min %d", ctx.SeqPosMin(0))
			}
			got, err := prefill(ctx, 0, []int32{7})
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
	if _, err := prefill(ctx, 0, []int32{1, 2, 3, 4, 5, 6}); err != nil {
		t.Fatal(err)
	}
	before := ctx.SeqPosMax(0)
	_, err := prefill(ctx, 1, []int32{7, 8, 9})
	if !errors.Is(err, kv.ErrNoSlot) {
		t.Fatalf("got %v, want kv.ErrNoSlot", err)
	}
	if ctx.Used() != 6 || ctx.SeqPosMax(0) != before || ctx.SeqPosMax(1) != -1 {
		t.Fatalf("cache changed: used %d", ctx.Used())
	}
	if err := ctx.SeqRm(0, 3, -1); err != nil {
		t.Fatal(err)
	}
	got, err := prefill(ctx, 1, []int32{7, 8, 9})
	if err != nil {
		t.Fatal(err)
	}
	fresh := decodeAlone(t, m, []int32{7, 8, 9}, 0)
	if !bitwiseEqual(got, fresh[2]) {
		t.Fatal("after freeing room, logits differ from fresh")
	}
}

// TestBadBatch: every malformed batch is refused with an error wrapping
// ErrBadBatch (errcode BAD_PARAMS), without a panic and without changing
// the cache.
func TestBadBatch(t *testing.T) {
	m := openTest(t, filepath.Join(testdata, "qwen2-tiny")) // vocab 320, 256 positions
	ctx := newCtx(t, m, ContextParams{ContextLen: 16, MaxSeqs: 2, BatchSize: 4})
	if _, err := prefill(ctx, 0, []int32{1, 2}); err != nil { // seq 0 holds positions 0 and 1
		t.Fatal(err)
	}
	one := func(tok, pos int32, seqs ...SeqID) Batch {
		return Batch{Token: []int32{tok}, Pos: []int32{pos}, Seq: [][]SeqID{seqs}, Logits: []bool{true}}
	}
	cases := []struct {
		name string
		b    Batch
	}{
		{"empty", Batch{}},
		{"no tokens, other slices", Batch{Pos: []int32{0}, Seq: [][]SeqID{{0}}, Logits: []bool{true}}},
		{"fewer positions", Batch{Token: []int32{1, 2}, Pos: []int32{5}, Seq: [][]SeqID{{1}, {1}}, Logits: []bool{true, true}}},
		{"more positions", Batch{Token: []int32{1}, Pos: []int32{5, 6}, Seq: [][]SeqID{{1}}, Logits: []bool{true}}},
		{"fewer seq sets", Batch{Token: []int32{1, 2}, Pos: []int32{5, 6}, Seq: [][]SeqID{{1}}, Logits: []bool{true, true}}},
		{"nil seq sets", Batch{Token: []int32{1}, Pos: []int32{5}, Logits: []bool{true}}},
		{"fewer logits flags", Batch{Token: []int32{1, 2}, Pos: []int32{5, 6}, Seq: [][]SeqID{{1}, {1}}, Logits: []bool{true}}},
		{"nil logits flags", Batch{Token: []int32{1}, Pos: []int32{5}, Seq: [][]SeqID{{1}}}},
		{"token = vocab", one(320, 5, 1)},
		{"token huge", one(1<<30, 5, 1)},
		{"negative token", one(-1, 5, 1)},
		{"negative pos", one(1, -1, 1)},
		{"pos = model positions", one(1, 256, 1)},
		{"pos huge", one(1, 1<<30, 1)},
		{"seq = MaxSeqs", one(1, 5, 2)},
		{"negative seq", one(1, 5, -1)},
		{"seq huge", one(1, 5, 1<<20)},
		{"no seq", one(1, 5)},
		{"seq twice in a token", one(1, 5, 1, 1)},
		{"a good seq then a bad one", one(1, 5, 1, 7)},
		{"seq and pos twice", Batch{Token: []int32{1, 2}, Pos: []int32{5, 5}, Seq: [][]SeqID{{1}, {1}}, Logits: []bool{false, true}}},
		{"pos already cached", one(3, 1, 0)},
		{"shared token, pos cached in one seq", one(3, 1, 1, 0)},
		{"more tokens than BatchSize", Batch{Token: make([]int32, 5), Pos: []int32{5, 6, 7, 8, 9}, Seq: [][]SeqID{{1}, {1}, {1}, {1}, {1}}, Logits: make([]bool, 5)}},
		{"bad index past the first", Batch{Token: []int32{1, 2, 3}, Pos: []int32{5, 6, 7}, Seq: [][]SeqID{{1}, {1}, {}}, Logits: []bool{false, false, true}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var err error
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Fatalf("panic: %v", r)
					}
				}()
				err = ctx.Decode(c.b)
			}()
			if !errors.Is(err, ErrBadBatch) || errcode.Of(err) != errcode.BadParams {
				t.Errorf("got %v [%s], want ErrBadBatch", err, errcode.Of(err))
			}
			if ctx.Used() != 2 || ctx.SeqPosMax(0) != 1 || ctx.SeqPosMax(1) != -1 {
				t.Errorf("the cache changed: used %d", ctx.Used())
			}
		})
	}
	// a position already cached also names the cache's reason
	if err := ctx.Decode(one(3, 1, 0)); !errors.Is(err, kv.ErrBadArg) {
		t.Errorf("position in the cache: %v, want kv.ErrBadArg too", err)
	}
	// the limits themselves are fine: the last position, the last token,
	// the last sequence, a full batch, and a batch asking for no logits
	var b Batch
	b.Add(319, 255, false, 1)
	b.Add(0, 2, false, 0)
	b.Add(5, 3, false, 0, 1)
	b.Add(6, 4, false, 0)
	if err := ctx.Decode(b); err != nil || len(ctx.OutputIDs()) != 0 {
		t.Fatalf("a valid batch at the limits: %v, outputs %v", err, ctx.OutputIDs())
	}
}

// TestCacheFullCode: a full cache is errcode CACHE_FULL and still
// kv.ErrNoSlot.
func TestCacheFullCode(t *testing.T) {
	m := openTest(t, filepath.Join(testdata, "qwen2-tiny"))
	ctx := newCtx(t, m, ContextParams{ContextLen: 4, BatchSize: 8})
	_, err := prefill(ctx, 0, []int32{1, 2, 3, 4, 5})
	if !errors.Is(err, kv.ErrNoSlot) || errcode.Of(err) != errcode.CacheFull {
		t.Fatalf("got %v [%s], want kv.ErrNoSlot, CACHE_FULL", err, errcode.Of(err))
	}
}

// TestCheckContextLen: the cells seqs sequences of 256 positions can
// fill are allowed, one more is refused naming the numbers, and seqs
// outside [1, kv.MaxSeqs] are refused.
func TestCheckContextLen(t *testing.T) {
	c := &Config{MaxPositions: 256}
	for _, tc := range []struct {
		contextLen, seqs int
		want             string // "" for fine, else in the error
	}{
		{256, 1, ""},
		{257, 1, "ContextLen 257 exceeds the model's 256 positions"},
		{512, 2, ""},
		{513, 2, "ContextLen 513 exceeds what 2 sequences of the model's 256 positions can use (512)"},
		{256 * kv.MaxSeqs, kv.MaxSeqs, ""},
		{1, 0, "MaxSeqs 0 out of range"},
		{1, -3, "MaxSeqs -3 out of range"},
		{1, kv.MaxSeqs + 1, fmt.Sprintf("MaxSeqs %d out of range", kv.MaxSeqs+1)},
	} {
		err := c.CheckContextLen(tc.contextLen, tc.seqs)
		if tc.want == "" {
			if err != nil {
				t.Errorf("(%d, %d): %v", tc.contextLen, tc.seqs, err)
			}
			continue
		}
		if !errors.Is(err, ErrBadParams) || errcode.Of(err) != errcode.BadParams || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("(%d, %d): got %v, want ErrBadParams with %q", tc.contextLen, tc.seqs, err, tc.want)
		}
	}
}

// TestContextLen: ContextLen beyond what MaxSeqs sequences of the
// model's positions can use is refused, naming the numbers; up to it is
// fine.
func TestContextLen(t *testing.T) {
	m := openTest(t, filepath.Join(testdata, "qwen2-tiny")) // 256 positions
	cases := []struct {
		p    ContextParams
		want string // "" for fine, else in the error
	}{
		{ContextParams{ContextLen: 256}, ""},
		{ContextParams{ContextLen: 257}, "ContextLen 257 exceeds the model's 256 positions"},
		{ContextParams{ContextLen: 4096}, "ContextLen 4096 exceeds the model's 256 positions"},
		{ContextParams{ContextLen: 512, MaxSeqs: 2}, ""},
		{ContextParams{ContextLen: 513, MaxSeqs: 2}, "ContextLen 513 exceeds what 2 sequences of the model's 256 positions can use (512)"},
		{ContextParams{}, ""}, // the default: min(positions, 4096)
		{ContextParams{ContextLen: -1}, "ContextLen -1 out of range"},
		{ContextParams{MaxSeqs: 1000}, "MaxSeqs 1000 out of range"},
		{ContextParams{BatchSize: -1}, "BatchSize -1 out of range"},
		{ContextParams{ContextLen: 16640, MaxSeqs: 65, BatchSize: 1 << 16}, "BatchSize 65536 × ContextLen 16640 exceeds 2^30"},
	}
	for _, c := range cases {
		ctx, err := m.NewContext(c.p)
		if c.want == "" {
			if err != nil {
				t.Errorf("%+v: %v", c.p, err)
				continue
			}
			if c.p.ContextLen == 0 && ctx.Params().ContextLen != 256 {
				t.Errorf("default ContextLen %d, want 256", ctx.Params().ContextLen)
			}
			ctx.Close()
			continue
		}
		if !errors.Is(err, ErrBadParams) || errcode.Of(err) != errcode.BadParams || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got %v [%s], want ErrBadParams with %q", c.p, err, errcode.Of(err), c.want)
		}
	}
}

// TestModelCloseWithContextOpen: Close refuses while a Context is open
// and frees nothing (the Context still decodes); it works once the
// Context is closed; a closed Context's Decode is an error, not a panic,
// and a closed Model makes no Context.
func TestModelCloseWithContextOpen(t *testing.T) {
	b, err := kernels.Open(*testBackend, kernels.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	m, err := Open(context.Background(), filepath.Join(testdata, "qwen2-tiny"), WithBackend(b))
	if err != nil {
		t.Fatal(err)
	}
	ctx, err := m.NewContext(ContextParams{ContextLen: 16, MaxSeqs: 2, BatchSize: 8})
	if err != nil {
		t.Fatal(err)
	}
	ctx2, err := m.NewContext(ContextParams{ContextLen: 16})
	if err != nil {
		t.Fatal(err)
	}
	ctx2.Close()
	err = m.Close()
	if !errors.Is(err, ErrContextsOpen) || !strings.Contains(err.Error(), ": 1;") {
		t.Fatalf("Close with one Context open: %v, want ErrContextsOpen naming 1", err)
	}
	got, err := prefill(ctx, 0, []int32{7, 8, 9})
	if err != nil {
		t.Fatalf("Decode after the refused Close: %v", err)
	}
	if fresh := decodeAlone(t, openTest(t, filepath.Join(testdata, "qwen2-tiny")), []int32{7, 8, 9}, 0); !bitwiseEqual(got, fresh[2]) {
		t.Fatal("after the refused Close, logits differ from a fresh model's")
	}
	if err := ctx.Close(); err != nil {
		t.Fatal(err)
	}
	if err := ctx.Close(); err != nil {
		t.Fatalf("second Context.Close: %v", err)
	}
	if _, err := prefill(ctx, 0, []int32{10}); !errors.Is(err, ErrContextClosed) || errcode.Of(err) != errcode.Closed {
		t.Fatalf("Decode on a closed Context: %v", err)
	}
	if err := ctx.SeqAdd(0, 0, -1, 1); !errors.Is(err, ErrContextClosed) {
		t.Fatalf("SeqAdd on a closed Context: %v", err)
	}
	if err := m.Close(); err != nil {
		t.Fatalf("Close after the Context's: %v", err)
	}
	if err := m.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := m.NewContext(ContextParams{}); !errors.Is(err, ErrModelClosed) {
		t.Fatalf("NewContext on a closed Model: %v", err)
	}
}

// TestForwardPanic: a panic inside the forward pass comes back from
// Decode as a *PanicError, the cache rolled back and the model's lock
// released (Close used to deadlock on it, and Decode to crash the caller),
// and once the fault is gone the context decodes as a fresh one.
func TestForwardPanic(t *testing.T) {
	pb := &kerneltest.Faulty{Backend: cpu.New(0)}
	t.Cleanup(func() { pb.Close() }) // after the model, after its contexts
	m, err := Open(context.Background(), filepath.Join(testdata, "qwen2-tiny"), WithBackend(pb))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	ctx := newCtx(t, m, ContextParams{ContextLen: 16, MaxSeqs: 2, BatchSize: 8})
	if _, err := prefill(ctx, 0, []int32{5, 6, 7}); err != nil {
		t.Fatal(err)
	}
	pb.Armed.Store(true)
	_, err = prefill(ctx, 1, []int32{7, 8, 9})
	var pe *PanicError
	if !errors.As(err, &pe) || pe.Value != kerneltest.FaultValue || len(pe.Stack) == 0 {
		t.Fatalf("got %v, want a *PanicError with the panic's value and a stack", err)
	}
	if ctx.Used() != 3 || ctx.SeqPosMax(1) != -1 {
		t.Fatalf("cache not rolled back: used %d, seq 1 at %d", ctx.Used(), ctx.SeqPosMax(1))
	}
	// A panic a backend raised again from a worker goroutine of its own
	// (kernels.WorkerPanic) reports that goroutine's value and stack.
	pb.Value = &kernels.WorkerPanic{Value: "worker boom", Stack: []byte("the worker's stack")}
	_, err = prefill(ctx, 1, []int32{7, 8, 9})
	if !errors.As(err, &pe) || pe.Value != "worker boom" || string(pe.Stack) != "the worker's stack" {
		t.Fatalf("got %v, want a *PanicError with the worker's value and stack", err)
	}
	if ctx.Used() != 3 || ctx.SeqPosMax(1) != -1 {
		t.Fatalf("cache not rolled back: used %d, seq 1 at %d", ctx.Used(), ctx.SeqPosMax(1))
	}
	pb.Armed.Store(false)
	got, err := prefill(ctx, 1, []int32{7, 8, 9})
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
