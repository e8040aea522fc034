package models

import (
	"fmt"

	"github.com/vkllm/vkllm/kv"
)

// The KV operations of llama.cpp, by sequence. Positions are half-open
// ranges [p0, p1); a negative p0 means 0 and a negative p1 means "to the
// end". They change only metadata, except SeqAdd and SeqDiv, which also
// re-rotate the K cache of the moved cells.

// SeqRm removes the cells of seq (any seq if seq < 0) in [p0, p1).
func (ctx *Context) SeqRm(seq SeqID, p0, p1 int32) error {
	return ctx.cache.SeqRm(seq, kv.Pos(p0), kv.Pos(p1))
}

// SeqCp makes dst share src's cells in [p0, p1): a shared prefix, no copy.
func (ctx *Context) SeqCp(src, dst SeqID, p0, p1 int32) error {
	return ctx.cache.SeqCp(src, dst, kv.Pos(p0), kv.Pos(p1))
}

// SeqKeep removes every cell not in seq.
func (ctx *Context) SeqKeep(seq SeqID) error { return ctx.cache.SeqKeep(seq) }

// SeqAdd shifts the positions of seq's cells in [p0, p1) by delta and
// re-rotates their keys; cells pushed below position 0 are removed.
func (ctx *Context) SeqAdd(seq SeqID, p0, p1, delta int32) error {
	if ctx.closed {
		return ErrContextClosed
	}
	if err := ctx.cache.SeqAdd(seq, kv.Pos(p0), kv.Pos(p1), kv.Pos(delta)); err != nil {
		return err
	}
	return ctx.applyShifts()
}

// SeqDiv divides the positions of seq's cells in [p0, p1) by d (d ≥ 1)
// and re-rotates their keys.
func (ctx *Context) SeqDiv(seq SeqID, p0, p1 int32, d int) error {
	if ctx.closed {
		return ErrContextClosed
	}
	if err := ctx.cache.SeqDiv(seq, kv.Pos(p0), kv.Pos(p1), d); err != nil {
		return err
	}
	return ctx.applyShifts()
}

// SeqPosMin and SeqPosMax give the smallest and largest position of seq,
// -1 when it has no cells.
func (ctx *Context) SeqPosMin(seq SeqID) int32 { return int32(ctx.cache.SeqPosMin(seq)) }
func (ctx *Context) SeqPosMax(seq SeqID) int32 { return int32(ctx.cache.SeqPosMax(seq)) }

// The calls a seed engine makes, as thin uses of Decode and the seq ops.

// Prefill appends tokens to seq after its last position and returns the
// logits of the last one (a copy). Longer inputs are split into batches.
func (ctx *Context) Prefill(seq SeqID, tokens []int32) ([]float32, error) {
	if len(tokens) == 0 {
		return nil, fmt.Errorf("%w: prefill of no tokens", ErrBadBatch)
	}
	pos := ctx.SeqPosMax(seq) + 1
	last := 0 // batch index of the final token in the final chunk
	for start := 0; start < len(tokens); start += ctx.p.BatchSize {
		end := min(start+ctx.p.BatchSize, len(tokens))
		var b Batch
		for i := start; i < end; i++ {
			b.Add(tokens[i], pos+int32(i), i == len(tokens)-1, seq)
		}
		if err := ctx.Decode(b); err != nil {
			if start > 0 { // keep the all-or-nothing promise across chunks
				ctx.cache.SeqRm(seq, kv.Pos(pos), -1)
			}
			return nil, err
		}
		last = end - 1 - start
	}
	return append([]float32(nil), ctx.Logits(last)...), nil
}

// DecodeToken appends one token to seq and returns its logits (a copy).
func (ctx *Context) DecodeToken(seq SeqID, token int32) ([]float32, error) {
	return ctx.Prefill(seq, []int32{token})
}

// DecodeBatch appends one token to each of several sequences in one
// forward pass and returns their logits in order (copies).
func (ctx *Context) DecodeBatch(seqs []SeqID, tokens []int32) ([][]float32, error) {
	if len(seqs) != len(tokens) {
		return nil, fmt.Errorf("%w: %d sequences, %d tokens", ErrBadBatch, len(seqs), len(tokens))
	}
	var b Batch
	for i, s := range seqs {
		b.Add(tokens[i], ctx.SeqPosMax(s)+1, true, s)
	}
	if err := ctx.Decode(b); err != nil {
		return nil, err
	}
	out := make([][]float32, len(seqs))
	for i := range seqs {
		out[i] = append([]float32(nil), ctx.Logits(i)...)
	}
	return out, nil
}

// Release frees every cell of seq.
func (ctx *Context) Release(seq SeqID) error { return ctx.SeqRm(seq, -1, -1) }

// TruncateKV keeps the first n positions of seq and frees the rest.
func (ctx *Context) TruncateKV(seq SeqID, n int32) error { return ctx.SeqRm(seq, n, -1) }

// KVUsedBy returns how many cells hold at least one of seqs.
func (ctx *Context) KVUsedBy(seqs []SeqID) int { return ctx.cache.UsedBy(seqs) }

// KVCapacity returns the number of cells and how many are in use.
func (ctx *Context) KVCapacity() (cells, used int) { return ctx.cache.Size(), ctx.cache.Used() }
