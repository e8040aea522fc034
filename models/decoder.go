package models

import (
	"math"
	"slices"

	"github.com/vkllm/vkllm/kernels"
	"github.com/vkllm/vkllm/kv"
	"github.com/vkllm/vkllm/tensor"
)

// scratch holds the activations of a forward pass, allocated once for
// BatchSize tokens when the Context is made (as llama2.c's RunState and
// llama.cpp's worst-case reserve): a pass over n tokens runs its ops on
// views of the first n rows, so no step allocates on the backend.
type scratch struct {
	ids, pos, cells kernels.Tensor // I32 (BatchSize)
	// vis holds a pass's (n, w) visibility lists in its first n·w
	// values, w the most cells a token of the pass sees (≤ ContextLen).
	vis kernels.Tensor // I32 (BatchSize·ContextLen)
	// visSWA holds the windowed lists of a model whose layers mix
	// windowed and full attention (nil otherwise: one list serves all).
	visSWA   kernels.Tensor // I32 (BatchSize·ContextLen)
	x, h     kernels.Tensor // (BatchSize, hidden)
	q, attn  kernels.Tensor // (BatchSize, heads*hd)
	k, v     kernels.Tensor // (BatchSize, kv*hd)
	o, down  kernels.Tensor // (BatchSize, hidden)
	gate, up kernels.Tensor // (BatchSize, inter)
	// The rows logits are asked for: room for outRows of them,
	// ContextParams.MaxOutputs until a batch asks for more, and then
	// BatchSize.
	outRows int
	sel     kernels.Tensor // I32 (outRows): batch indices
	xs      kernels.Tensor // (outRows, hidden)
	logits  kernels.Tensor // (outRows, vocab)
	// SeqAdd's and SeqDiv's re-rotation: cells and deltas.
	shiftCells, shiftDelta kernels.Tensor // I32 (ContextLen)

	all     []kernels.Tensor // everything above
	hostVis []int32          // the lists on the host, kv.Cache.Visible's memory
	hostSWA []int32          // the windowed lists on the host (visSWA)
	rows    []int32          // the batch indices of the rows asked for
	// padVis and padSWA hold the lists re-laid at padded widths for a
	// backend that replays steps (padLists); replays maps a step's
	// shape to its recording (kernels.Replayer).
	padVis, padSWA []int32
	replays        map[replayKey]int
}

// replayKey is what makes two steps' ops the same on one Context: every
// shape and scalar of the ops follows from the tokens, the lists' widths
// and the rows of logits asked for (the tensors are the Context's).
type replayKey struct{ n, width, widthSWA, outputs int }

// padLists returns rows, n lists of width entries (cells, then -1), laid
// out at a width rounded up to a multiple of 64 entries (at most limit),
// in dst's memory, and that width. For a backend that replays steps
// (kernels.Replayer): a decode step's width then stays the same for 64
// steps, so its ops do. The kernels read each list's length from its
// -1s and cut it into chunks of 64 by that length, and the most
// segments a list of the padded width is cut into is the same, so the
// results are the same bits at either width. *dst must not share
// memory with rows; it grows as needed.
func padLists(rows []int32, n, width, limit int, dst *[]int32) ([]int32, int) {
	w := min((width+63)/64*64, max(limit, width))
	if w == width {
		return rows, width
	}
	if cap(*dst) < n*w {
		*dst = make([]int32, n*w)
	}
	out := (*dst)[:n*w]
	for i := range n {
		row := out[i*w : (i+1)*w]
		copy(row, rows[i*width:(i+1)*width])
		for j := width; j < w; j++ {
			row[j] = -1
		}
	}
	return out, w
}

func (s *scratch) free(b kernels.Backend) {
	for _, t := range s.all {
		b.Free(t)
	}
	s.all = nil
}

// tensorSpec is one tensor for allocTensors to make.
type tensorSpec struct {
	dst   *kernels.Tensor
	dt    tensor.DType
	shape []int
}

// allocTensors makes each tensor of specs, listing it in s.all (so that
// free releases it, made or not all of them).
func (s *scratch) allocTensors(b kernels.Backend, specs []tensorSpec) error {
	for _, a := range specs {
		t, err := b.NewTensor(a.dt, a.shape...)
		if err != nil {
			return err
		}
		s.all = append(s.all, t)
		*a.dst = t
	}
	return nil
}

// allocScratch makes the Context's scratch tensors.
func (ctx *Context) allocScratch() error {
	c, b, p := ctx.m.Config, ctx.m.backend, ctx.p
	n := p.BatchSize
	qDim, kvDim := c.NumHeads*c.HeadDim, c.NumKVHeads*c.HeadDim
	s := &scratch{}
	ctx.s = s
	if err := s.allocTensors(b, []tensorSpec{
		{&s.ids, tensor.I32, []int{n}}, {&s.pos, tensor.I32, []int{n}}, {&s.cells, tensor.I32, []int{n}},
		{&s.vis, tensor.I32, []int{n * p.ContextLen}},
		{&s.x, tensor.F32, []int{n, c.HiddenSize}}, {&s.h, tensor.F32, []int{n, c.HiddenSize}},
		{&s.q, tensor.F32, []int{n, qDim}}, {&s.attn, tensor.F32, []int{n, qDim}},
		{&s.k, tensor.F32, []int{n, kvDim}}, {&s.v, tensor.F32, []int{n, kvDim}},
		{&s.o, tensor.F32, []int{n, c.HiddenSize}}, {&s.down, tensor.F32, []int{n, c.HiddenSize}},
		{&s.gate, tensor.F32, []int{n, c.IntermediateSize}}, {&s.up, tensor.F32, []int{n, c.IntermediateSize}},
		{&s.shiftCells, tensor.I32, []int{p.ContextLen}}, {&s.shiftDelta, tensor.I32, []int{p.ContextLen}},
	}); err != nil {
		return err
	}
	if c.SlidingWindow > 0 && !c.AllWindowed() {
		if err := s.allocTensors(b, []tensorSpec{{&s.visSWA, tensor.I32, []int{n * p.ContextLen}}}); err != nil {
			return err
		}
	}
	return ctx.allocOutputs(p.MaxOutputs)
}

// allocOutputs makes the output tensors with room for rows rows, freeing
// any smaller ones.
func (ctx *Context) allocOutputs(rows int) error {
	c, b, s := ctx.m.Config, ctx.m.backend, ctx.s
	if s.outRows > 0 {
		for _, t := range []kernels.Tensor{s.sel, s.xs, s.logits} {
			b.Free(t)
		}
		s.all = slices.DeleteFunc(s.all, func(t kernels.Tensor) bool { return t == s.sel || t == s.xs || t == s.logits })
		s.outRows, s.sel, s.xs, s.logits = 0, nil, nil, nil
	}
	if err := s.allocTensors(b, []tensorSpec{
		{&s.sel, tensor.I32, []int{rows}},
		{&s.xs, tensor.F32, []int{rows, c.HiddenSize}},
		{&s.logits, tensor.F32, []int{rows, c.VocabSize}},
	}); err != nil {
		return err
	}
	s.outRows = rows
	return nil
}

// forward runs the decoder over a validated batch whose cells are applied.
// It is the whole model, written only against kernels.Backend:
//
//	x = embed[tokens]
//	for each layer:
//	    h = rmsnorm(x) ; q,k,v = h·Wq,k,vᵀ (+bias)
//	    q,k = rmsnorm per head (Qwen3) ; rope(q,k) (not in NoPE layers)
//	    cache[cells] = k,v ; x += attention(q, cache, vis or its window)·Woᵀ
//	    h = rmsnorm(x) ; x += (silu(h·Wgateᵀ) * h·Wupᵀ)·Wdownᵀ
//	(with LoRA adapters, each y = u·Wᵀ above also gets + s·(u·Aᵀ)·Bᵀ
//	for the tokens of each adapter: applyLoRA)
//	logits = rmsnorm(x)[rows asked] · lm_headᵀ
func (ctx *Context) forward(bt Batch, kb kv.Batch, cells []int32) error {
	m, b, c, s := ctx.m, ctx.m.backend, ctx.m.Config, ctx.s
	n := len(bt.Token)
	// Every layer sees the full lists, or the windowed ones, or (mixed)
	// each layer its kind.
	window := 0
	if c.AllWindowed() {
		window = c.SlidingWindow
	}
	visList, width, err := ctx.cache.VisibleWindow(kb, window, s.hostVis)
	if err != nil {
		return err
	}
	s.hostVis = visList
	rp, _ := b.(kernels.Replayer)
	replays := rp != nil && rp.Replays()
	if replays {
		visList, width = padLists(visList, n, width, ctx.p.ContextLen, &s.padVis)
	}
	// The pass's tensors: views of the first n rows of the scratch.
	rows := func(t kernels.Tensor) kernels.Tensor { return b.View(t, n, t.Shape()[1]) }
	ids, pos, cl := b.View(s.ids, n), b.View(s.pos, n), b.View(s.cells, n)
	vis := b.View(s.vis, n, width) // (n, width)
	x, h, q, attn, k, v := rows(s.x), rows(s.h), rows(s.q), rows(s.attn), rows(s.k), rows(s.v)
	o, down, gate, up := rows(s.o), rows(s.down), rows(s.gate), rows(s.up)
	qkv, gateUp := [3]kernels.Tensor{q, k, v}, [2]kernels.Tensor{gate, up}
	if err := b.SetI32(ids, bt.Token); err != nil {
		return err
	}
	if err := b.SetI32(pos, bt.Pos); err != nil {
		return err
	}
	if err := b.SetI32(cl, cells); err != nil {
		return err
	}
	if err := b.SetI32(vis, visList); err != nil {
		return err
	}
	visSWA, widthSWA := vis, 0
	if s.visSWA != nil {
		list, w, err := ctx.cache.VisibleWindow(kb, c.SlidingWindow, s.hostSWA)
		if err != nil {
			return err
		}
		s.hostSWA = list
		if replays {
			list, w = padLists(list, n, w, ctx.p.ContextLen, &s.padSWA)
		}
		widthSWA = w
		visSWA = b.View(s.visSWA, n, w) // (n, w)
		if err := b.SetI32(visSWA, list); err != nil {
			return err
		}
	}

	lora, err := ctx.loraPass(bt) // nil without adapters
	if err != nil {
		return err
	}

	// Logits only for the rows asked for, in batch order: their indices
	// are written before the ops, like every input.
	ctx.outputIDs = ctx.outputIDs[:0]
	ctx.outRow = ctx.outRow[:0]
	s.rows = s.rows[:0]
	for i, want := range bt.Logits {
		if want {
			ctx.outRow = append(ctx.outRow, len(s.rows))
			ctx.outputIDs = append(ctx.outputIDs, i)
			s.rows = append(s.rows, int32(i))
		} else {
			ctx.outRow = append(ctx.outRow, -1)
		}
	}
	nr := len(s.rows)
	if nr > s.outRows {
		if err := ctx.allocOutputs(ctx.p.BatchSize); err != nil {
			return err
		}
	}
	var sel, xs, lt kernels.Tensor
	if nr > 0 {
		sel, xs, lt = b.View(s.sel, nr), b.View(s.xs, nr, c.HiddenSize), b.View(s.logits, nr, c.VocabSize)
		if err := b.SetI32(sel, s.rows); err != nil {
			return err
		}
	}

	// A step whose ops repeat an earlier one's runs its recording (a
	// backend's kernels.Replayer), else records it: without adapters
	// (their ops follow the batch) or embeddings (read mid-step).
	key := replayKey{n, width, widthSWA, nr}
	replays = replays && lora == nil && !slices.Contains(bt.Embed, true)
	if replays {
		if s.replays == nil {
			s.replays = map[replayKey]int{}
		}
		if id, ok := s.replays[key]; ok && rp.Replay(id) {
			return ctx.readLogits(nr, lt)
		}
		delete(s.replays, key)
		rp.BeginCapture()
	}
	eps := float32(c.RMSNormEps)
	scale := float32(1 / math.Sqrt(float64(c.HeadDim)))
	w := m.w
	b.GetRows(x, w.embed, ids)
	b.RMSNorm(h, x, w.layers[0].attnNorm, eps) // later layers': the previous one's AddRMSNorm
	for l := range w.layers {
		ly := &w.layers[l]
		kernels.MatMuls(b, qkv[:], h, ly.qkv[:])
		if ly.qBias != nil {
			b.Add(q, q, ly.qBias)
			b.Add(k, k, ly.kBias)
			b.Add(v, v, ly.vBias)
		}
		if lora != nil {
			ctx.applyLoRA(lora, l, loraQ, h, q)
			ctx.applyLoRA(lora, l, loraK, h, k)
			ctx.applyLoRA(lora, l, loraV, h, v)
		}
		if ly.qNorm != nil { // each head's row of HeadDim on its own
			qh, kh := b.View(s.q, n*c.NumHeads, c.HeadDim), b.View(s.k, n*c.NumKVHeads, c.HeadDim)
			b.RMSNorm(qh, qh, ly.qNorm, eps)
			b.RMSNorm(kh, kh, ly.kNorm, eps)
		}
		if c.RoPE(l) { // q and k rotated, k and v to the caches
			kernels.RoPEKVWrite(b, q, k, v, pos, ctx.kCache[l], ctx.vCache[l], cl, m.rope)
		} else {
			b.KVWrite(ctx.kCache[l], k, cl)
			b.KVWrite(ctx.vCache[l], v, cl)
		}
		lv := vis
		if c.Windowed(l) {
			lv = visSWA
		}
		b.Attention(attn, q, ctx.kCache[l], ctx.vCache[l], lv, c.NumHeads, c.NumKVHeads, scale)
		b.MatMul(o, attn, ly.o)
		if ly.oBias != nil {
			b.Add(o, o, ly.oBias)
		}
		if lora != nil {
			ctx.applyLoRA(lora, l, loraO, attn, o)
		}
		kernels.AddRMSNorm(b, x, h, x, o, ly.ffnNorm, eps) // x += o; h = norm(x)
		if lora != nil {                                   // the adapters add to gate and up before the SwiGLU
			kernels.MatMuls(b, gateUp[:], h, ly.gateUp[:])
			ctx.applyLoRA(lora, l, loraGate, h, gate)
			ctx.applyLoRA(lora, l, loraUp, h, up)
			b.SwiGLU(gate, gate, up)
		} else { // gate = silu(h·Wgᵀ)·(h·Wuᵀ)
			kernels.GateUpSwiGLU(b, gate, up, h, ly.gateUp[0], ly.gateUp[1])
		}
		b.MatMul(down, gate, ly.down)
		if lora != nil {
			ctx.applyLoRA(lora, l, loraDown, gate, down)
		}
		if l+1 < len(w.layers) { // x += down; h = the next layer's norm of x
			kernels.AddRMSNorm(b, x, h, x, down, w.layers[l+1].attnNorm, eps)
		} else { // x += down; x = the output norm of x
			kernels.AddRMSNorm(b, x, x, x, down, w.outNorm, eps)
		}
	}
	if err := ctx.readHidden(bt, x); err != nil {
		return err
	}
	if nr > 0 {
		b.GetRows(xs, x, sel)
		b.MatMul(lt, xs, w.lmHead)
	}
	if replays {
		if id := rp.EndCapture(); id != 0 {
			s.replays[key] = id
		}
	}
	return ctx.readLogits(nr, lt)
}

// readLogits reads the step's nr rows of logits from lt (waiting for
// the step).
func (ctx *Context) readLogits(nr int, lt kernels.Tensor) error {
	b, c := ctx.m.backend, ctx.m.Config
	if nr == 0 {
		ctx.logits = ctx.logits[:0]
		return b.Sync()
	}
	if need := nr * c.VocabSize; cap(ctx.logits) < need {
		ctx.logits = make([]float32, need)
	} else {
		ctx.logits = ctx.logits[:need]
	}
	return b.GetF32(lt, ctx.logits)
}
