package kv

import (
	"fmt"
	"math"
)

// The operations by sequence, as llama.cpp's llama_memory_seq_*. Ranges
// are half-open, [p0, p1): p0 < 0 means 0 and p1 < 0 means no upper bound.
// Every one validates its arguments first and, on an error (wrapping
// ErrBadArg), changes nothing.

// SeqRm removes seq from the cells with positions in [p0, p1); a cell left
// without a sequence becomes empty. seq < 0 means every sequence: those
// cells become empty whatever they hold.
//
// llama.cpp's seq_rm returns a bool, false when a partial removal is
// impossible. That happens only for recurrent state; in a unified-cell
// cache any range can be removed, so SeqRm returns only an error (for a
// seq ≥ SeqMax()).
func (c *Cache) SeqRm(seq SeqID, p0, p1 Pos) error {
	if seq >= 0 {
		if err := c.checkSeq(seq); err != nil {
			return err
		}
	}
	lo, hi := span(p0, p1)
	changed := false
	for i := range c.cells[:c.usedMax] {
		cl := &c.cells[i]
		if cl.seqs.empty() || !cl.in(lo, hi) {
			continue
		}
		switch {
		case seq < 0:
			*cl = cell{}
		case cl.seqs.has(seq):
			cl.seqs.del(seq)
			if cl.seqs.empty() {
				*cl = cell{}
			}
		default:
			continue
		}
		changed = true
	}
	c.done(changed)
	return nil
}

// SeqCp adds dst to every cell of src with a position in [p0, p1): dst
// now shares those tokens (a common prefix costs no copy). Cells dst
// already has keep it; dst may then hold a position twice.
func (c *Cache) SeqCp(src, dst SeqID, p0, p1 Pos) error {
	if err := c.checkSeq(src); err != nil {
		return err
	}
	if err := c.checkSeq(dst); err != nil {
		return err
	}
	lo, hi := span(p0, p1)
	changed := false
	for i := range c.cells[:c.usedMax] {
		cl := &c.cells[i]
		if cl.seqs.has(src) && !cl.seqs.has(dst) && cl.in(lo, hi) {
			cl.seqs.add(dst)
			changed = true
		}
	}
	c.done(changed)
	return nil
}

// SeqKeep empties every cell seq does not have and removes every other
// sequence from the cells it has.
func (c *Cache) SeqKeep(seq SeqID) error {
	if err := c.checkSeq(seq); err != nil {
		return err
	}
	var only seqSet
	only.add(seq)
	changed := false
	for i := range c.cells[:c.usedMax] {
		cl := &c.cells[i]
		switch {
		case cl.seqs.empty() || cl.seqs == only:
			continue
		case cl.seqs.has(seq):
			cl.seqs = only
		default:
			*cl = cell{}
		}
		changed = true
	}
	c.done(changed)
	return nil
}

// SeqAdd adds delta to the position of every cell of seq with a position
// in [p0, p1). The cell moves for every sequence sharing it (a cell has
// one position), as in llama.cpp. A cell whose position would fall below
// 0 is emptied; one that would pass math.MaxInt32 is an error (nothing
// moves). Each moved cell accumulates its change for TakeShifts.
func (c *Cache) SeqAdd(seq SeqID, p0, p1, delta Pos) error {
	if err := c.checkSeq(seq); err != nil {
		return err
	}
	if delta == 0 {
		return nil
	}
	lo, hi := span(p0, p1)
	if delta > 0 {
		for i := range c.cells[:c.usedMax] {
			cl := &c.cells[i]
			if cl.seqs.has(seq) && cl.in(lo, hi) && int64(cl.pos)+int64(delta) > math.MaxInt32 {
				return fmt.Errorf("%w: position %d of sequence %d + %d overflows int32", ErrBadArg, cl.pos, seq, delta)
			}
		}
	}
	changed := false
	for i := range c.cells[:c.usedMax] {
		cl := &c.cells[i]
		if !cl.seqs.has(seq) || !cl.in(lo, hi) {
			continue
		}
		changed = true
		np := int64(cl.pos) + int64(delta)
		if np < 0 {
			*cl = cell{}
			continue
		}
		cl.shift += Pos(np) - cl.pos
		cl.pos = Pos(np)
	}
	c.done(changed)
	return nil
}

// SeqDiv divides (rounding toward zero) by d ≥ 1 the position of every
// cell of seq with a position in [p0, p1). As with SeqAdd, the cell moves
// for all its sequences and accumulates its change (new − old) for
// TakeShifts. (llama.cpp's kv-cells pos_div records old − new, the sign
// opposite to pos_add; we record new − old for both.)
func (c *Cache) SeqDiv(seq SeqID, p0, p1 Pos, d int) error {
	if err := c.checkSeq(seq); err != nil {
		return err
	}
	if d < 1 {
		return fmt.Errorf("%w: divisor %d < 1", ErrBadArg, d)
	}
	if d == 1 {
		return nil
	}
	lo, hi := span(p0, p1)
	changed := false
	for i := range c.cells[:c.usedMax] {
		cl := &c.cells[i]
		if !cl.seqs.has(seq) || !cl.in(lo, hi) {
			continue
		}
		np := Pos(int64(cl.pos) / int64(d))
		if np != cl.pos {
			cl.shift += np - cl.pos
			cl.pos = np
			changed = true
		}
	}
	c.done(changed)
	return nil
}

// TakeShifts returns the non-empty cells whose positions moved since the
// last call, in ascending order, with each one's total change (new − old;
// several SeqAdd/SeqDiv add up, as llama.cpp's shift array), and forgets
// them. The keys of those cells were rotated at their old positions; the
// owner re-rotates them by delta (backend.KVShift) before the next forward
// pass. A cell whose moves cancel out is not listed. Both slices are nil
// when nothing moved.
func (c *Cache) TakeShifts() (cells, delta []int32) {
	for i := range c.cells[:c.usedMax] {
		cl := &c.cells[i]
		if cl.shift != 0 { // empty cells always have shift 0
			cells = append(cells, int32(i))
			delta = append(delta, int32(cl.shift))
			cl.shift = 0
		}
	}
	c.done(cells != nil)
	return cells, delta
}

// done ends a sequence operation: recompute the counters and rename the
// state if anything changed.
func (c *Cache) done(changed bool) {
	if changed {
		c.restat()
		c.touch()
	}
}
