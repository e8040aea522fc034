package models

import (
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/vkllm/vkllm/errcode"
	"github.com/vkllm/vkllm/kernels"
	"github.com/vkllm/vkllm/kv"
	"github.com/vkllm/vkllm/tensor"
)

// SeqID names a sequence in the KV cache.
type SeqID = kv.SeqID

// Batch is one forward pass in SoA form, as llama_batch: token i is
// Token[i] at position Pos[i], belongs to the sequences Seq[i] (usually
// one), and Logits[i] asks for its output row. Any mix of sequences,
// prefill and decode may share a batch. Adapter, when not empty, holds
// one LoRA adapter per token (Model.LoadAdapter; NoAdapter for the base
// model); empty, every token runs the base model. Tokens of one
// sequence should run the same adapter: the cache keeps what each
// computed.
type Batch struct {
	Token  []int32
	Pos    []int32
	Seq    [][]SeqID
	Logits []bool
	// Embed is nil or has one flag per token: Embed[i] asks for token
	// i's final hidden state (after the final norm), read with
	// Context.Embeddings. A token may ask for both, either or neither.
	Embed   []bool
	Adapter []AdapterID
}

// Add appends one token to the batch.
func (b *Batch) Add(token, pos int32, logits bool, seqs ...SeqID) {
	b.Token = append(b.Token, token)
	b.Pos = append(b.Pos, pos)
	b.Seq = append(b.Seq, seqs)
	b.Logits = append(b.Logits, logits)
}

// Len is the number of tokens.
func (b *Batch) Len() int { return len(b.Token) }

// ContextParams size a Context.
type ContextParams struct {
	// ContextLen is the number of KV cells (tokens over all sequences).
	// A model whose every layer has a sliding window reuses cells that
	// fell out of it, so a sequence may then run past ContextLen
	// positions (kv.Cache.SetWindow).
	// Default: min(MaxPositions, 4096). A sequence holds at most the
	// model's MaxPositions positions (Decode refuses later ones), so more
	// cells than MaxSeqs × MaxPositions could never be used and are
	// refused: with one sequence, ContextLen may not exceed MaxPositions.
	ContextLen int
	// MaxSeqs bounds sequence ids to [0, MaxSeqs). Default 1.
	MaxSeqs int
	// BatchSize is the most tokens one Decode takes. Default 512.
	// NewContext allocates the forward pass's memory for BatchSize
	// tokens, including a BatchSize × ContextLen list of visible cells
	// (4 bytes each; two for a model mixing windowed and full layers),
	// and has a backend with memory of its own (kernels.AttentionReserver,
	// kernels.StagingReserver) reserve it, so that no Decode allocates
	// (see MaxOutputs); BatchSize × ContextLen may not exceed 2³⁰.
	BatchSize int
	// MaxOutputs is the most rows of logits a batch is expected to ask
	// for (Batch.Logits); NewContext makes the output tensors for that
	// many, BatchSize at most (no batch asks for more). Default (0):
	// MaxSeqs, one per sequence, what a generating step asks. A batch
	// asking for more grows them, once, to BatchSize rows: an allocation
	// in Decode, which a caller that knows its bound (speculative
	// decoding asks for each draft token's logits too) avoids by setting
	// it.
	MaxOutputs int
	// KVType is the cache element type, F32 (default) or F16.
	KVType tensor.DType
}

// Errors of a Context.
var (
	// ErrBadBatch wraps every batch validation failure; nothing changed.
	ErrBadBatch = errcode.New(errcode.BadParams, "models: bad batch")
	// ErrBadParams wraps every ContextParams out of range.
	ErrBadParams = errcode.New(errcode.BadParams, "models: bad context params")
	// ErrContextClosed: Decode, SeqAdd or SeqDiv on a closed Context.
	ErrContextClosed = errcode.New(errcode.Closed, "models: context closed")
)

// Context runs forward passes of a Model over its own KV cache. One
// goroutine owns a Context at a time; the Contexts of one Model may run on
// different goroutines, and take turns on the Model's backend (one
// forward pass at a time), which a kernels.Backend needs.
type Context struct {
	m      *Model
	p      ContextParams
	cache  *kv.Cache
	kCache []kernels.Tensor // per layer (cells, kvHeads*headDim)
	vCache []kernels.Tensor

	s    *scratch    // the forward pass's tensors
	lora loraScratch // the LoRA part of them, made on first use

	logits    []float32 // (len(outputIDs), vocab)
	outputIDs []int     // batch indices with logits, in batch order
	outRow    []int     // batch index → row in logits, -1 if none
	hidden    []float32 // (batch, hidden) final hidden states, when a token asked (embed.go)
	embRow    []bool    // batch index → its row of hidden was asked for
	closed    bool
}

// CheckContextLen checks contextLen KV cells for seqs sequences running at
// once. seqs must be in [1, kv.MaxSeqs]. A sequence holds at most the
// model's MaxPositions positions, so more cells than seqs × MaxPositions
// (with one sequence, more than MaxPositions) could never be used and are
// refused. The errors wrap ErrBadParams and name the numbers. NewContext
// applies it to its ContextLen and MaxSeqs; a caller whose Context has more
// sequence ids than it runs sequences applies it to the ones it runs.
func (c *Config) CheckContextLen(contextLen, seqs int) error {
	switch {
	case seqs < 1 || seqs > kv.MaxSeqs:
		return fmt.Errorf("%w: MaxSeqs %d out of range [1, %d]", ErrBadParams, seqs, kv.MaxSeqs)
	case seqs == 1 && contextLen > c.MaxPositions:
		return fmt.Errorf("%w: ContextLen %d exceeds the model's %d positions", ErrBadParams, contextLen, c.MaxPositions)
	case contextLen > seqs*c.MaxPositions:
		return fmt.Errorf("%w: ContextLen %d exceeds what %d sequences of the model's %d positions can use (%d)",
			ErrBadParams, contextLen, seqs, c.MaxPositions, seqs*c.MaxPositions)
	}
	return nil
}

// NewContext allocates the KV cache and the forward pass's tensors. Parameters out of
// range give an error wrapping ErrBadParams; a closed Model
// ErrModelClosed. The Model cannot be closed until the Context is.
func (m *Model) NewContext(p ContextParams) (*Context, error) {
	c := m.Config
	if p.ContextLen == 0 {
		p.ContextLen = min(c.MaxPositions, 4096)
	}
	if p.MaxSeqs == 0 {
		p.MaxSeqs = 1
	}
	if p.BatchSize == 0 {
		p.BatchSize = 512
	}
	if p.KVType == tensor.Invalid {
		p.KVType = tensor.F32
	}
	if p.MaxOutputs == 0 {
		p.MaxOutputs = p.MaxSeqs
	}
	p.MaxOutputs = min(p.MaxOutputs, p.BatchSize)
	if p.ContextLen < 1 || p.ContextLen > 1<<22 {
		return nil, fmt.Errorf("%w: ContextLen %d out of range [1, %d]", ErrBadParams, p.ContextLen, 1<<22)
	}
	if err := c.CheckContextLen(p.ContextLen, p.MaxSeqs); err != nil {
		return nil, err
	}
	switch {
	case p.BatchSize < 1 || p.BatchSize > 1<<16:
		return nil, fmt.Errorf("%w: BatchSize %d out of range [1, %d]", ErrBadParams, p.BatchSize, 1<<16)
	case int64(p.BatchSize)*int64(p.ContextLen) > 1<<30:
		return nil, fmt.Errorf("%w: BatchSize %d × ContextLen %d exceeds 2^30 visible-cell entries", ErrBadParams, p.BatchSize, p.ContextLen)
	case p.KVType != tensor.F32 && p.KVType != tensor.F16:
		return nil, fmt.Errorf("%w: KVType %v unsupported (F32 or F16)", ErrBadParams, p.KVType)
	case p.MaxOutputs < 0:
		return nil, fmt.Errorf("%w: MaxOutputs %d < 0", ErrBadParams, p.MaxOutputs)
	}
	cache, err := kv.New(p.ContextLen, p.MaxSeqs)
	if err != nil {
		return nil, err
	}
	if c.AllWindowed() { // no layer sees a cell that fell out of the window again
		if err := cache.SetWindow(c.SlidingWindow); err != nil {
			return nil, err
		}
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, ErrModelClosed
	}
	m.open++
	m.mu.Unlock()
	ctx := &Context{m: m, p: p, cache: cache}
	if err := ctx.allocCache(); err != nil {
		ctx.Close()
		return nil, err
	}
	return ctx, nil
}

// allocCache makes the K and V cache tensors of every layer and the
// scratch of the forward pass, everything a Context holds on the backend,
// and reserves the backend's memory for the Context's Attention calls.
func (ctx *Context) allocCache() error {
	m, c, p := ctx.m, ctx.m.Config, ctx.p
	m.run.Lock()
	defer m.run.Unlock()
	if err := ctx.allocScratch(); err != nil {
		return err
	}
	kvDim := c.NumKVHeads * c.HeadDim
	for range c.NumLayers {
		k, err := m.backend.NewTensor(p.KVType, p.ContextLen, kvDim)
		if err != nil {
			return err
		}
		ctx.kCache = append(ctx.kCache, k)
		v, err := m.backend.NewTensor(p.KVType, p.ContextLen, kvDim)
		if err != nil {
			return err
		}
		ctx.vCache = append(ctx.vCache, v)
	}
	// The LoRA scratch for the adapters loaded now (one loaded later
	// makes or grows it at its first batch).
	if ads := m.adapterList(); len(ads) > 0 {
		rank := 0
		for _, ad := range ads {
			rank = max(rank, ad.info.Rank)
		}
		if err := ctx.allocLoRA(rank, len(ads)); err != nil {
			return err
		}
	}
	// Last, so that a Context that does not fit leaves the backend as it
	// was: the backend's own memory for Attention (it keeps it for later
	// Contexts), for lists of at most ContextLen cells, and for the host
	// traffic of a step.
	if err := kernels.ReserveAttention(m.backend, p.BatchSize, c.NumHeads, c.HeadDim, p.ContextLen); err != nil {
		return err
	}
	return kernels.ReserveStaging(m.backend, ctx.stagingBytes())
}

// stagingBytes bounds the host traffic of one Decode (or SeqAdd/SeqDiv):
// the inputs it sets (token ids, positions, cells, the visible-cell lists
// at their widest, the output rows, the LoRA groups' rows) and what it
// reads back (the logits of MaxOutputs rows, the hidden states of a whole
// batch), each rounded up as a staging arena places it.
func (ctx *Context) stagingBytes() int64 {
	c, p := ctx.m.Config, ctx.p
	n, cells := int64(p.BatchSize), int64(p.ContextLen)
	lists := int64(1)
	if ctx.s.visSWA != nil {
		lists = 2
	}
	const slot = 256 // an arena's alignment, once per buffer moved
	b := 4*(3*n+slot) + lists*4*(n*cells+slot) + 4*(int64(p.MaxOutputs)+slot) +
		4*(2*cells+2*slot) + // SeqAdd's cells and deltas
		4*(int64(p.MaxOutputs)*int64(c.VocabSize)+slot) + 4*(n*int64(c.HiddenSize)+slot)
	if ads := len(ctx.m.adapterList()); ads > 0 {
		b += int64(ads) * 4 * (n + slot)
	}
	return b
}

// Close frees the cache and scratch tensors. Closing twice does nothing.
func (ctx *Context) Close() error {
	if ctx.closed {
		return nil
	}
	ctx.closed = true
	defer func() {
		ctx.m.mu.Lock()
		ctx.m.open--
		ctx.m.mu.Unlock()
	}()
	ctx.m.run.Lock()
	defer ctx.m.run.Unlock()
	b := ctx.m.backend
	for _, t := range ctx.kCache {
		b.Free(t)
	}
	for _, t := range ctx.vCache {
		b.Free(t)
	}
	ctx.kCache, ctx.vCache = nil, nil
	if ctx.s != nil {
		ctx.s.free(b)
		ctx.s = nil
	}
	ctx.lora = loraScratch{}
	return nil
}

// Params returns the context's parameters with defaults filled in.
func (ctx *Context) Params() ContextParams { return ctx.p }

// Used is the number of cells in use. (The cell metadata itself stays
// inside the Context: changing it other than through the Context's
// sequence operations would skip their K re-rotation.)
func (ctx *Context) Used() int { return ctx.cache.Used() }

// validate checks what the model owns of a batch before anything
// changes: its token and logits-flag slices match its positions, it fits
// BatchSize, and every token is in the vocabulary and every position
// within the model's positions. The cache owns the rest (a non-empty
// batch, a sequence set per position, positions ≥ 0, sequence ids in
// range, no (sequence, position) pair twice or already cached):
// kv.Cache.Prepare checks it and Decode wraps its error in ErrBadBatch.
func (ctx *Context) validate(b Batch) error {
	n := len(b.Pos)
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrBadBatch, fmt.Sprintf(format, args...))
	}
	switch {
	case len(b.Token) != n || len(b.Logits) != n:
		return bad("lengths differ: %d tokens, %d positions, %d logits flags", len(b.Token), n, len(b.Logits))
	case b.Embed != nil && len(b.Embed) != n:
		return bad("lengths differ: %d positions, %d embedding flags", n, len(b.Embed))
	case n > ctx.p.BatchSize:
		return bad("%d tokens exceed the batch size %d", n, ctx.p.BatchSize)
	}
	if err := ctx.checkAdapters(b); err != nil {
		return err
	}
	vocab := int32(ctx.m.Config.VocabSize)
	positions := ctx.m.Config.MaxPositions
	for i := range n {
		switch {
		case b.Token[i] < 0 || b.Token[i] >= vocab:
			return bad("token %d at index %d outside the vocabulary [0, %d)", b.Token[i], i, vocab)
		case int(b.Pos[i]) >= positions:
			return bad("position %d at index %d beyond the model's %d positions", b.Pos[i], i, positions)
		}
	}
	return nil
}

// Decode runs one forward pass over the batch. On any error the cache is
// as it was before the call: a full cache gives an error wrapping
// kv.ErrNoSlot (errcode CACHE_FULL), a malformed batch one wrapping
// ErrBadBatch (the cache's rules, such as a sequence id in range or a
// position the sequence does not already hold, also wrap kv.ErrBadArg),
// a closed Context ErrContextClosed, a panic in the forward pass (a vkllm
// bug) a *PanicError. It never evicts.
func (ctx *Context) Decode(b Batch) error {
	if ctx.closed {
		return ErrContextClosed
	}
	if err := ctx.validate(b); err != nil {
		return err
	}
	kb := kv.Batch{Pos: make([]kv.Pos, len(b.Pos)), Seq: b.Seq}
	for i, p := range b.Pos {
		kb.Pos[i] = kv.Pos(p)
	}
	slot, err := ctx.cache.Prepare(kb)
	switch {
	case errors.Is(err, kv.ErrBadArg):
		return fmt.Errorf("%w: %w", ErrBadBatch, err)
	case errors.Is(err, kv.ErrNoSlot):
		return fmt.Errorf("models: decode: %w", errcode.Wrap(errcode.CacheFull, err))
	case err != nil:
		return fmt.Errorf("models: decode: %w", err)
	}
	if err := ctx.cache.Apply(slot); err != nil {
		return fmt.Errorf("models: decode: %w", err)
	}
	err = ctx.forwardGuarded(b, kb, slot.Cells())
	if err != nil {
		ctx.outputIDs, ctx.logits, ctx.embRow = nil, nil, nil
		if rerr := ctx.cache.Rollback(slot); rerr != nil {
			return fmt.Errorf("models: decode: %w (and the cache could not be rolled back: %v)", err, rerr)
		}
		return fmt.Errorf("models: decode: %w", err)
	}
	return nil
}

// forwardGuarded runs forward under the model's lock. A panic in it (a
// backend op or the decoder broke a contract: a bug of vkllm's) comes back
// as a *PanicError, with the lock released, so that Decode rolls the cache
// back and the caller gets an error rather than a crashed process or, in
// a deferred Close, a deadlock on the lock the panic left held.
func (ctx *Context) forwardGuarded(b Batch, kb kv.Batch, cells []int32) (err error) {
	ctx.m.run.Lock()
	defer ctx.m.run.Unlock()
	defer func() {
		if r := recover(); r != nil {
			if wp, ok := r.(*kernels.WorkerPanic); ok { // raised again from a backend's goroutine: its value and stack
				err = &PanicError{Value: wp.Value, Stack: wp.Stack}
			} else {
				err = &PanicError{Value: r, Stack: debug.Stack()}
			}
		}
	}()
	return ctx.forward(b, kb, cells)
}

// Logits returns the output row of batch index i of the last Decode, or
// nil if that token did not ask for logits. The slice is the context's and
// valid until the next Decode.
func (ctx *Context) Logits(i int) []float32 {
	if i < 0 || i >= len(ctx.outRow) || ctx.outRow[i] < 0 {
		return nil
	}
	v := ctx.m.Config.VocabSize
	r := ctx.outRow[i]
	return ctx.logits[r*v : (r+1)*v : (r+1)*v]
}

// OutputIDs lists the batch indices of the last Decode that have logits,
// in batch order.
func (ctx *Context) OutputIDs() []int { return ctx.outputIDs }

// applyShifts re-rotates K cells whose positions SeqAdd/SeqDiv changed.
func (ctx *Context) applyShifts() error {
	cells, delta := ctx.cache.TakeShifts()
	if len(cells) == 0 {
		return nil
	}
	ctx.m.run.Lock()
	defer ctx.m.run.Unlock()
	b, s := ctx.m.backend, ctx.s
	if len(cells) > ctx.p.ContextLen { // distinct cells of the cache: cannot happen
		return fmt.Errorf("models: %d cells to shift in a cache of %d", len(cells), ctx.p.ContextLen)
	}
	ct, dt := b.View(s.shiftCells, len(cells)), b.View(s.shiftDelta, len(delta))
	if err := b.SetI32(ct, cells); err != nil {
		return err
	}
	if err := b.SetI32(dt, delta); err != nil {
		return err
	}
	for l, k := range ctx.kCache {
		if ctx.m.Config.RoPE(l) { // a NoPE layer's K holds no position
			b.KVShift(k, ct, dt, ctx.m.rope)
		}
	}
	return b.Sync()
}
