//go:build cgo

package vulkan

import (
	"math"
	"runtime"
	"testing"
	"time"

	"github.com/vkllm/vkllm/internal/synth"
	"github.com/vkllm/vkllm/kernels"
	"github.com/vkllm/vkllm/tensor"
)

// BenchmarkRecordStep: the host cost of recording one decode step (one
// token) of a real model's shape with Q4_0 weights, the ops in the order
// of models/decoder.go's forward: ns/op is per step, "ns/dispatch" per
// dispatch, "dispatches" per step. The step is not submitted in pieces
// and its command buffer is discarded unexecuted, off the clock, so it
// measures this package's and the driver's recording alone (the weights
// hold zeros, and every layer binds the same ones: recording costs the
// same whatever the bytes):
//
//	go test ./kernels/vulkan/ -run '^$' -bench RecordStep -benchtime 200x
func BenchmarkRecordStep(bm *testing.B) {
	for _, name := range []string{"qwen2.5-0.5b", "llama-3.1-8b"} {
		bm.Run(name, func(bm *testing.B) {
			s, err := synth.Lookup(name)
			if err != nil {
				bm.Fatal(err)
			}
			b, err := Open(Config{})
			if err != nil {
				bm.Skip(err)
			}
			defer b.Close()
			b.pieceFirst = 0
			st := newStepShape(bm, b, s, 1024)
			if err := b.Sync(); err != nil { // the uploads
				bm.Fatal(err)
			}
			st.record(b) // pipelines and descriptor sets
			per := b.recorded
			b.discard()
			// Sub-benchmarks split a dispatch's cost: "go" stops before
			// the cgo call, "cgo" calls a C function that does nothing;
			// "record" is the whole recording.
			for _, m := range []struct {
				name string
				dry  dryRun
			}{{"record", 0}, {"go", dryGo}, {"cgo", dryCgo}} {
				bm.Run(m.name, func(bm *testing.B) {
					b.dry = m.dry
					defer func() { b.dry = 0 }()
					bm.ReportAllocs()
					for bm.Loop() {
						st.record(b)
						bm.StopTimer()
						b.discard()
						bm.StartTimer()
					}
					bm.ReportMetric(float64(per), "dispatches")
					bm.ReportMetric(float64(bm.Elapsed().Nanoseconds())/float64(bm.N)/float64(per), "ns/dispatch")
				})
			}
			if err := b.Sync(); err != nil {
				bm.Fatal(err)
			}
		})
	}
}

// BenchmarkReplayStep: the host cost of a replayed decode step with the
// 0.5B shape's 340 dispatches (BenchmarkRecordStep's), at small sizes
// so that lavapipe runs it quickly (the host's cost does not depend on
// them): writing its inputs and submitting its recording
// (kernels.Replayer). The device's work runs at the Sync, off the clock;
// on lavapipe it also runs on a thread of its own as soon as submitted,
// so the wall time takes in its share of the cores: "host-ns" is the
// calling thread's CPU time alone, and "record-host-ns" the same for
// recording the step instead.
//
//	go test ./kernels/vulkan/ -run '^$' -bench ReplayStep -benchtime 200x
func BenchmarkReplayStep(bm *testing.B) {
	s, err := synth.Lookup("qwen2.5-0.5b")
	if err != nil {
		bm.Fatal(err)
	}
	s.Hidden, s.Heads, s.KVHeads, s.Intermediate, s.Vocab = 128, 2, 1, 256, 1000
	b, err := Open(Config{})
	if err != nil {
		bm.Skip(err)
	}
	defer b.Close()
	st := newStepShape(bm, b, s, 1024)
	st.record(b) // pipelines, descriptor sets, the RoPE table
	if err := b.Sync(); err != nil {
		bm.Fatal(err)
	}
	st.inputs(b)
	b.BeginCapture()
	st.ops(b)
	id := b.EndCapture()
	if err := b.Sync(); err != nil || id == 0 {
		bm.Fatal(err, id)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	bm.ReportAllocs()
	var host, rec time.Duration
	for bm.Loop() {
		t0 := threadTime()
		st.inputs(b)
		if !b.Replay(id) {
			bm.Fatal("recording gone")
		}
		host += threadTime() - t0
		bm.StopTimer()
		if err := b.Sync(); err != nil {
			bm.Fatal(err)
		}
		t0 = threadTime()
		st.record(b)
		rec += threadTime() - t0
		if err := b.Sync(); err != nil {
			bm.Fatal(err)
		}
		bm.StartTimer()
	}
	bm.ReportMetric(float64(host.Nanoseconds())/float64(bm.N), "host-ns")
	bm.ReportMetric(float64(rec.Nanoseconds())/float64(bm.N), "record-host-ns")
}

// stepShape is one decode step's tensors for a synth.Shape: the layers
// share one set of Q4_0 weights but have their own caches.
type stepShape struct {
	s                            synth.Shape
	ids, pos, cells, vis         kernels.Tensor
	x, h, q, k, v, attn, o, down kernels.Tensor
	gate, up, xs, logits, sel    kernels.Tensor
	wq, wk, wv, wo, wg, wu, wd   kernels.Tensor
	qb, kb, vb, norm             kernels.Tensor
	embed, head                  kernels.Tensor
	kc, vc                       []kernels.Tensor
	rope                         kernels.RoPE
	width                        int
	hostVis, tok, one, zero      []int32
	qkv, wqkv                    []kernels.Tensor
}

func newStepShape(tb testing.TB, b *Backend, s synth.Shape, width int) *stepShape {
	tb.Helper()
	st := &stepShape{s: s, width: width}
	qd, kvd := s.Heads*s.HeadDim, s.KVHeads*s.HeadDim
	nt := func(dt tensor.DType, shape ...int) kernels.Tensor {
		t, err := b.NewTensor(dt, shape...)
		if err != nil {
			tb.Fatal(err)
		}
		return t
	}
	w := func(rows, cols int) kernels.Tensor {
		n, _ := tensor.Q4_0.Bytes(int64(rows) * int64(cols))
		t, err := b.Upload(tensor.Tensor{Name: "w", DType: tensor.Q4_0, Shape: []int64{int64(rows), int64(cols)}, Data: make([]byte, n)})
		if err != nil {
			tb.Fatal(err)
		}
		return t
	}
	st.ids, st.pos, st.cells, st.sel = nt(tensor.I32, 1), nt(tensor.I32, 1), nt(tensor.I32, 1), nt(tensor.I32, 1)
	st.vis = nt(tensor.I32, 1, width)
	st.x, st.h, st.o, st.down, st.xs = nt(tensor.F32, 1, s.Hidden), nt(tensor.F32, 1, s.Hidden), nt(tensor.F32, 1, s.Hidden), nt(tensor.F32, 1, s.Hidden), nt(tensor.F32, 1, s.Hidden)
	st.q, st.attn, st.k, st.v = nt(tensor.F32, 1, qd), nt(tensor.F32, 1, qd), nt(tensor.F32, 1, kvd), nt(tensor.F32, 1, kvd)
	st.gate, st.up = nt(tensor.F32, 1, s.Intermediate), nt(tensor.F32, 1, s.Intermediate)
	st.logits = nt(tensor.F32, 1, s.Vocab)
	st.wq, st.wk, st.wv, st.wo = w(qd, s.Hidden), w(kvd, s.Hidden), w(kvd, s.Hidden), w(s.Hidden, qd)
	st.wg, st.wu, st.wd = w(s.Intermediate, s.Hidden), w(s.Intermediate, s.Hidden), w(s.Hidden, s.Intermediate)
	st.qb, st.kb, st.vb, st.norm = nt(tensor.F32, qd), nt(tensor.F32, kvd), nt(tensor.F32, kvd), nt(tensor.F32, s.Hidden)
	st.embed = w(s.Vocab, s.Hidden)
	st.head = st.embed
	if !s.Tied {
		st.head = w(s.Vocab, s.Hidden)
	}
	for range s.Layers {
		st.kc = append(st.kc, nt(tensor.F16, width, kvd))
		st.vc = append(st.vc, nt(tensor.F16, width, kvd))
	}
	st.rope = kernels.RoPE{Style: kernels.RoPENeox, HeadDim: s.HeadDim, Theta: s.RoPETheta}
	st.qkv, st.wqkv = []kernels.Tensor{st.q, st.k, st.v}, []kernels.Tensor{st.wq, st.wk, st.wv}
	st.tok, st.one, st.zero = []int32{7}, []int32{int32(width - 1)}, []int32{0}
	st.hostVis = make([]int32, width)
	for i := range st.hostVis {
		st.hostVis[i] = int32(i)
	}
	return st
}

// record records one decode step as models/decoder.go's forward does,
// up to the logits (which it does not read back).
func (st *stepShape) record(b *Backend) {
	st.inputs(b)
	st.ops(b)
}

// inputs writes the step's inputs.
func (st *stepShape) inputs(b *Backend) {
	for _, err := range []error{b.SetI32(st.ids, st.tok), b.SetI32(st.pos, st.one), b.SetI32(st.cells, st.one), b.SetI32(st.vis, st.hostVis), b.SetI32(st.sel, st.zero)} {
		if err != nil {
			b.fail(err)
		}
	}
}

// ops records the step's ops.
func (st *stepShape) ops(b *Backend) {
	s := st.s
	eps := float32(s.RMSNormEps)
	scale := float32(1 / math.Sqrt(float64(s.HeadDim)))
	b.GetRows(st.x, st.embed, st.ids)
	b.RMSNorm(st.h, st.x, st.norm, eps)
	for l := range s.Layers {
		kernels.MatMuls(b, st.qkv, st.h, st.wqkv)
		if s.QKVBias {
			b.Add(st.q, st.q, st.qb)
			b.Add(st.k, st.k, st.kb)
			b.Add(st.v, st.v, st.vb)
		}
		b.RoPEKVWrite(st.q, st.k, st.v, st.pos, st.kc[l], st.vc[l], st.cells, st.rope)
		b.Attention(st.attn, st.q, st.kc[l], st.vc[l], st.vis, s.Heads, s.KVHeads, scale)
		b.MatMul(st.o, st.attn, st.wo)
		b.AddRMSNorm(st.x, st.h, st.x, st.o, st.norm, eps)
		kernels.GateUpSwiGLU(b, st.gate, st.up, st.h, st.wg, st.wu)
		b.MatMul(st.down, st.gate, st.wd)
		b.AddRMSNorm(st.x, st.h, st.x, st.down, st.norm, eps)
	}
	b.GetRows(st.xs, st.x, st.sel)
	b.MatMul(st.logits, st.xs, st.head)
}

// TestStepAllocs: once its pipelines and descriptor sets exist,
// recording a decode step of a model's shape (every op of the decoder,
// MatMul, GateUpSwiGLU and Attention's split included) allocates nothing
// on the Go heap.
func TestStepAllocs(t *testing.T) {
	b := openTest(t, Config{})
	s, err := synth.Lookup("qwen2.5-0.5b")
	if err != nil {
		t.Fatal(err)
	}
	s = s.Tiny()
	b.pieceFirst = 0
	st := newStepShape(t, b, s, 256) // 256 cells: attention splits
	st.record(b)
	b.discard()
	if n := testing.AllocsPerRun(5, func() { st.record(b); b.discard() }); n != 0 {
		t.Errorf("recording a step: %v allocations, want 0", n)
	}
	// q, k and v's MatMuls and their biases' Adds run one pipeline
	// each: bound once per layer.
	skip := b.bindsSkipped()
	st.record(b)
	b.discard()
	if got, want := b.bindsSkipped()-skip, uint64(4*s.Layers); got < want {
		t.Errorf("recording a step skipped %d binds, want at least %d", got, want)
	}
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
}
