package kv

import (
	"fmt"
	"math"
)

// Mask writes the attention mask of batch b over the first nKV cells into
// dst, (len(b.Pos), nKV) row-major:
//
//	dst[i*nKV+j] = 0     if cell j is not empty, shares a sequence with
//	                     token i, and its position ≤ b.Pos[i]
//	             = -Inf  otherwise
//
// Call it after Apply, so each token sees its own cell, with nKV ≥
// UsedMax() so no visible cell is cut off (nKV may be anything in
// [0, Size()]). Mask checks that len(b.Seq) == len(b.Pos), that the
// sequence ids are in [0, SeqMax()) and that dst holds at least
// len(b.Pos)*nKV values; it writes only those. Errors wrap ErrBadArg; dst
// is untouched then.
//
// A token in several sequences sees the union of their cells. (llama.cpp
// looks only at a token's first sequence, having required that sequences
// sharing a token hold the same cells; see CheckConsecutive.)
func (c *Cache) Mask(b Batch, dst []float32, nKV int) error {
	n := len(b.Pos)
	if len(b.Seq) != n {
		return fmt.Errorf("%w: mask of %d positions and %d sequence sets", ErrBadArg, n, len(b.Seq))
	}
	if nKV < 0 || nKV > len(c.cells) {
		return fmt.Errorf("%w: mask over %d cells, cache has %d", ErrBadArg, nKV, len(c.cells))
	}
	if int64(len(dst)) < int64(n)*int64(nKV) {
		return fmt.Errorf("%w: mask needs %d×%d values, dst has %d", ErrBadArg, n, nKV, len(dst))
	}
	// Tokens of one sequence set share which cells they may see, apart
	// from the position test: compute that once per distinct set.
	sets := make([]seqSet, n)
	for i := range n {
		for _, s := range b.Seq[i] {
			if err := c.checkSeq(s); err != nil {
				return fmt.Errorf("%w (batch index %d)", err, i)
			}
			sets[i].add(s)
		}
	}
	shares := map[seqSet][]bool{} // set → (nKV) cell shares a sequence with it
	negInf := float32(math.Inf(-1))
	cells := c.cells[:nKV]
	for i, p := range b.Pos {
		vis, ok := shares[sets[i]]
		if !ok {
			vis = make([]bool, nKV)
			for j := range cells {
				vis[j] = cells[j].seqs.intersects(&sets[i])
			}
			shares[sets[i]] = vis
		}
		row := dst[i*nKV : (i+1)*nKV]
		for j := range row {
			if vis[j] && cells[j].pos <= p {
				row[j] = 0
			} else {
				row[j] = negInf
			}
		}
	}
	return nil
}
