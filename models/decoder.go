package models

import (
	"math"

	"github.com/vkllm/vkllm/kernels"
	"github.com/vkllm/vkllm/kv"
	"github.com/vkllm/vkllm/tensor"
)

// scratch holds the activations of a forward pass over n tokens.
type scratch struct {
	n               int
	ids, pos, cells kernels.Tensor    // I32 (n)
	vis             kernels.Tensor    // I32 (n, cells): each token's cells, by position
	x, h            kernels.Tensor    // (n, hidden)
	q, attn         kernels.Tensor    // (n, heads*hd)
	k, v            kernels.Tensor    // (n, kv*hd)
	o, down         kernels.Tensor    // (n, hidden)
	gate, up        kernels.Tensor    // (n, inter)
	qkv             [3]kernels.Tensor // q, k, v (for kernels.MultiMatMul)
	gateUp          [2]kernels.Tensor // gate, up
	all             []kernels.Tensor  // everything above and in outs
	outs            map[int]*outputs  // by rows of logits asked for
	hostVis         []int32
}

// outputs are the tensors that turn rows of the final hidden state into
// logits, for one number of rows asked for.
type outputs struct {
	sel    kernels.Tensor // I32 (rows): batch indices
	xs     kernels.Tensor // (rows, hidden)
	logits kernels.Tensor // (rows, vocab)
}

func (s *scratch) free(b kernels.Backend) {
	for _, t := range s.all {
		b.Free(t)
	}
	s.all, s.outs = nil, nil
}

// outputTensors returns (allocating once) the output tensors of a pass over
// s.n tokens that asks for rows logits rows, so a decode step allocates
// nothing on the backend.
func (ctx *Context) outputTensors(s *scratch, rows int) (*outputs, error) {
	if o, ok := s.outs[rows]; ok {
		return o, nil
	}
	b, c := ctx.m.backend, ctx.m.Config
	o := &outputs{}
	for _, a := range []struct {
		dst   *kernels.Tensor
		dt    tensor.DType
		shape []int
	}{
		{&o.sel, tensor.I32, []int{rows}},
		{&o.xs, tensor.F32, []int{rows, c.HiddenSize}},
		{&o.logits, tensor.F32, []int{rows, c.VocabSize}},
	} {
		t, err := b.NewTensor(a.dt, a.shape...)
		if err != nil {
			return nil, err
		}
		s.all = append(s.all, t) // freed with the scratch
		*a.dst = t
	}
	if s.outs == nil {
		s.outs = map[int]*outputs{}
	}
	s.outs[rows] = o
	return o, nil
}

func (ctx *Context) getScratch(n int) (*scratch, error) {
	if s, ok := ctx.scratch[n]; ok {
		return s, nil
	}
	if len(ctx.scratch) >= 8 { // keep a few shapes; drop the rest
		for k, s := range ctx.scratch {
			s.free(ctx.m.backend)
			delete(ctx.scratch, k)
		}
	}
	c, b := ctx.m.Config, ctx.m.backend
	s := &scratch{n: n}
	alloc := func(dst *kernels.Tensor, dt tensor.DType, shape ...int) error {
		t, err := b.NewTensor(dt, shape...)
		if err != nil {
			return err
		}
		s.all = append(s.all, t)
		*dst = t
		return nil
	}
	qDim, kvDim := c.NumHeads*c.HeadDim, c.NumKVHeads*c.HeadDim
	for _, a := range []struct {
		dst   *kernels.Tensor
		dt    tensor.DType
		shape []int
	}{
		{&s.ids, tensor.I32, []int{n}}, {&s.pos, tensor.I32, []int{n}}, {&s.cells, tensor.I32, []int{n}},
		{&s.vis, tensor.I32, []int{n, ctx.p.ContextLen}},
		{&s.x, tensor.F32, []int{n, c.HiddenSize}}, {&s.h, tensor.F32, []int{n, c.HiddenSize}},
		{&s.q, tensor.F32, []int{n, qDim}}, {&s.attn, tensor.F32, []int{n, qDim}},
		{&s.k, tensor.F32, []int{n, kvDim}}, {&s.v, tensor.F32, []int{n, kvDim}},
		{&s.o, tensor.F32, []int{n, c.HiddenSize}}, {&s.down, tensor.F32, []int{n, c.HiddenSize}},
		{&s.gate, tensor.F32, []int{n, c.IntermediateSize}}, {&s.up, tensor.F32, []int{n, c.IntermediateSize}},
	} {
		if err := alloc(a.dst, a.dt, a.shape...); err != nil {
			s.free(b)
			return nil, err
		}
	}
	s.qkv, s.gateUp = [3]kernels.Tensor{s.q, s.k, s.v}, [2]kernels.Tensor{s.gate, s.up}
	s.hostVis = make([]int32, n*ctx.p.ContextLen)
	ctx.scratch[n] = s
	return s, nil
}

// forward runs the decoder over a validated batch whose cells are applied.
// It is the whole model, written only against kernels.Backend:
//
//	x = embed[tokens]
//	for each layer:
//	    h = rmsnorm(x) ; q,k,v = h·Wq,k,vᵀ (+bias) ; rope(q,k)
//	    cache[cells] = k,v ; x += attention(q, cache, vis)·Woᵀ
//	    h = rmsnorm(x) ; x += (silu(h·Wgateᵀ) * h·Wupᵀ)·Wdownᵀ
//	logits = rmsnorm(x)[rows asked] · lm_headᵀ
func (ctx *Context) forward(bt Batch, kb kv.Batch, cells []int32) error {
	m, b, c := ctx.m, ctx.m.backend, ctx.m.Config
	n := len(bt.Token)
	s, err := ctx.getScratch(n)
	if err != nil {
		return err
	}
	if err := b.SetI32(s.ids, bt.Token); err != nil {
		return err
	}
	if err := b.SetI32(s.pos, bt.Pos); err != nil {
		return err
	}
	if err := b.SetI32(s.cells, cells); err != nil {
		return err
	}
	if _, err := ctx.cache.Visible(kb, s.hostVis, ctx.p.ContextLen); err != nil {
		return err
	}
	if err := b.SetI32(s.vis, s.hostVis); err != nil {
		return err
	}

	eps := float32(c.RMSNormEps)
	scale := float32(1 / math.Sqrt(float64(c.HeadDim)))
	w := m.w
	b.GetRows(s.x, w.embed, s.ids)
	for l := range w.layers {
		ly := &w.layers[l]
		b.RMSNorm(s.h, s.x, ly.attnNorm, eps)
		kernels.MatMuls(b, s.qkv[:], s.h, ly.qkv[:])
		if ly.qBias != nil {
			b.Add(s.q, s.q, ly.qBias)
			b.Add(s.k, s.k, ly.kBias)
			b.Add(s.v, s.v, ly.vBias)
		}
		b.RoPE(s.q, s.pos, m.rope)
		b.RoPE(s.k, s.pos, m.rope)
		b.KVWrite(ctx.kCache[l], s.k, s.cells)
		b.KVWrite(ctx.vCache[l], s.v, s.cells)
		b.Attention(s.attn, s.q, ctx.kCache[l], ctx.vCache[l], s.vis, c.NumHeads, c.NumKVHeads, scale)
		b.MatMul(s.o, s.attn, ly.o)
		if ly.oBias != nil {
			b.Add(s.o, s.o, ly.oBias)
		}
		b.Add(s.x, s.x, s.o)

		b.RMSNorm(s.h, s.x, ly.ffnNorm, eps)
		kernels.MatMuls(b, s.gateUp[:], s.h, ly.gateUp[:])
		b.SwiGLU(s.gate, s.gate, s.up)
		b.MatMul(s.down, s.gate, ly.down)
		b.Add(s.x, s.x, s.down)
	}
	b.RMSNorm(s.x, s.x, w.outNorm, eps)

	// Logits only for the rows asked for, in batch order.
	ctx.outputIDs = ctx.outputIDs[:0]
	ctx.outRow = ctx.outRow[:0]
	var rows []int32
	for i, want := range bt.Logits {
		if want {
			ctx.outRow = append(ctx.outRow, len(rows))
			ctx.outputIDs = append(ctx.outputIDs, i)
			rows = append(rows, int32(i))
		} else {
			ctx.outRow = append(ctx.outRow, -1)
		}
	}
	if len(rows) == 0 {
		ctx.logits = ctx.logits[:0]
		return b.Sync()
	}
	o, err := ctx.outputTensors(s, len(rows))
	if err != nil {
		return err
	}
	sel, xs, lt := o.sel, o.xs, o.logits
	if err := b.SetI32(sel, rows); err != nil {
		return err
	}
	b.GetRows(xs, s.x, sel)
	b.MatMul(lt, xs, w.lmHead)
	if need := len(rows) * c.VocabSize; cap(ctx.logits) < need {
		ctx.logits = make([]float32, need)
	} else {
		ctx.logits = ctx.logits[:need]
	}
	return b.GetF32(lt, ctx.logits)
}
