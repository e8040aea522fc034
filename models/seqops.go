package models

import "github.com/vkllm/vkllm/kv"

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

// KVUsedBy returns how many cells hold at least one of seqs.
func (ctx *Context) KVUsedBy(seqs []SeqID) int { return ctx.cache.UsedBy(seqs) }
