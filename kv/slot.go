package kv

import (
	"fmt"
	"slices"
)

// Batch is the part of a forward batch the cache needs, in SoA form as
// llama_batch: token i has position Pos[i] and belongs to the sequences
// Seq[i]. len(Pos) == len(Seq).
type Batch struct {
	Pos []Pos
	Seq [][]SeqID
}

// Slot is where Prepare placed a batch: Cells()[i] is token i's cell. It
// keeps its own copy of the batch, so the caller may reuse the Batch's
// slices after Prepare.
type Slot struct {
	c     *Cache
	cells []int32  // (n) cell of each token, ascending
	pos   []Pos    // (n)
	seqs  []seqSet // (n)
	// reused are the cells of s.cells that held tokens out of the
	// window (SetWindow), and old their content, for Rollback.
	reused []int32
	old    []cell

	prepGen    uint64 // state Prepare saw; Apply needs it
	appliedGen uint64 // state Apply made, 0 when not applied; Rollback needs it
}

// Cells returns the cell index of every token, in batch order. The slice
// is the slot's; do not modify it.
func (s *Slot) Cells() []int32 { return s.cells }

// Len is the number of tokens of the slot.
func (s *Slot) Len() int { return len(s.cells) }

// validate checks the batch and returns each token's sequence set. A batch
// must have at least one token; every token a position ≥ 0 and at least
// one sequence id, all in [0, SeqMax()); a (sequence, position) pair may
// appear once.
func (c *Cache) validate(b Batch) ([]seqSet, error) {
	n := len(b.Pos)
	if n == 0 || len(b.Seq) != n {
		return nil, fmt.Errorf("%w: batch of %d positions and %d sequence sets", ErrBadArg, n, len(b.Seq))
	}
	type key struct {
		s SeqID
		p Pos
	}
	seen := make(map[key]struct{}, n)
	sets := make([]seqSet, n)
	for i := range n {
		if b.Pos[i] < 0 {
			return nil, fmt.Errorf("%w: negative position %d at batch index %d", ErrBadArg, b.Pos[i], i)
		}
		if len(b.Seq[i]) == 0 {
			return nil, fmt.Errorf("%w: token at batch index %d belongs to no sequence", ErrBadArg, i)
		}
		for _, s := range b.Seq[i] {
			if err := c.checkSeq(s); err != nil {
				return nil, fmt.Errorf("%w (batch index %d)", err, i)
			}
			k := key{s, b.Pos[i]}
			if _, dup := seen[k]; dup {
				return nil, fmt.Errorf("%w: sequence %d has position %d twice in the batch", ErrBadArg, s, b.Pos[i])
			}
			seen[k] = struct{}{}
			sets[i].add(s)
		}
	}
	return sets, nil
}

// Prepare validates b and finds an empty cell for each token, without
// changing the cache.
//
// The rule: besides the checks of a well-formed batch (lengths equal and
// non-zero, positions ≥ 0, every token in at least one sequence, ids in
// [0, SeqMax()), no (sequence, position) pair twice in the batch), no
// (sequence, position) pair of the batch may already be in the cache.
// Any such error wraps ErrBadArg and takes precedence over ErrNoSlot.
// Prepare does not impose llama.cpp's stricter order rule (each sequence's
// positions continue at SeqPosMax+1 without gaps); CheckConsecutive does,
// for callers that want it.
//
// Cells are chosen first fit: the lowest empty cells in ascending order,
// one per token in batch order; they need not be contiguous. The choice
// depends only on the cache state and the batch size. With too few empty
// cells, a cache with a window (SetWindow) adds the lowest cells out of
// the window; with still too few Prepare returns an error wrapping
// ErrNoSlot.
func (c *Cache) Prepare(b Batch) (*Slot, error) {
	sets, err := c.validate(b)
	if err != nil {
		return nil, err
	}
	if err := c.checkNotPresent(b.Pos, sets); err != nil {
		return nil, err
	}
	n := len(b.Pos)
	free := len(c.cells) - c.used
	var reused []int32
	if free < n && c.window > 0 {
		reused = c.outOfWindow(b.Pos, sets, n-free)
	}
	if free+len(reused) < n {
		msg := ""
		if c.window > 0 {
			msg = fmt.Sprintf(" and %d out of the window", len(reused))
		}
		return nil, fmt.Errorf("%w: batch needs %d cells, %d of %d free%s", ErrNoSlot, n, free, len(c.cells), msg)
	}
	s := &Slot{
		c:       c,
		cells:   make([]int32, 0, n),
		pos:     append([]Pos(nil), b.Pos...),
		seqs:    sets,
		prepGen: c.gen,
		reused:  reused,
	}
	for i := c.head; len(s.cells) < n-len(reused); i++ {
		if c.cells[i].seqs.empty() {
			s.cells = append(s.cells, int32(i))
		}
	}
	if len(reused) > 0 {
		s.cells = append(s.cells, reused...)
		slices.Sort(s.cells)
		s.old = make([]cell, len(reused))
		for i, ci := range reused {
			s.old[i] = c.cells[ci]
		}
	}
	return s, nil
}

// outOfWindow returns up to need of the lowest non-empty cells that no
// token of the batch nor any later position of their sequences can see
// through the window (the rule SetWindow states). Cells with a pending
// shift are kept: their K rows still wait for TakeShifts' caller.
func (c *Cache) outOfWindow(pos []Pos, sets []seqSet, need int) []int32 {
	limit := make([]int64, c.nSeqMax) // masked at positions ≥ limit: pos ≤ limit − window
	for s := range limit {
		limit[s] = int64(c.seqMax[s]) + 1
	}
	for i, p := range pos {
		sets[i].each(func(s SeqID) { limit[s] = min(limit[s], int64(p)) })
	}
	var reused []int32
	for i := range c.cells[:c.usedMax] {
		cl := &c.cells[i]
		if cl.seqs.empty() || cl.shift != 0 {
			continue
		}
		masked := true
		cl.seqs.each(func(s SeqID) { masked = masked && int64(cl.pos) <= limit[s]-int64(c.window) })
		if !masked {
			continue
		}
		reused = append(reused, int32(i))
		if len(reused) == need {
			break
		}
	}
	return reused
}

// checkNotPresent fails if some (sequence, position) pair of the batch is
// already in a cell. A pair outside the sequence's [min, max] cannot be;
// only when some pair falls inside does it scan the cells.
func (c *Cache) checkNotPresent(pos []Pos, sets []seqSet) error {
	type key struct {
		s SeqID
		p Pos
	}
	var inside map[key]bool
	var insideSeqs seqSet
	for i, p := range pos {
		sets[i].each(func(s SeqID) {
			if c.seqMax[s] >= 0 && p >= c.seqMin[s] && p <= c.seqMax[s] {
				if inside == nil {
					inside = make(map[key]bool)
				}
				inside[key{s, p}] = true
				insideSeqs.add(s)
			}
		})
	}
	if inside == nil {
		return nil
	}
	for i := range c.cells[:c.usedMax] {
		cl := &c.cells[i]
		if !cl.seqs.intersects(&insideSeqs) {
			continue
		}
		var dup SeqID = -1
		cl.seqs.each(func(s SeqID) {
			if dup < 0 && inside[key{s, cl.pos}] {
				dup = s
			}
		})
		if dup >= 0 {
			return fmt.Errorf("%w: sequence %d already has position %d in the cache (cell %d)", ErrBadArg, dup, cl.pos, i)
		}
	}
	return nil
}

// Apply writes the positions and sequences of the slot's batch into its
// cells. The cache must be in the state Prepare saw (no change in
// between); otherwise Apply returns an error wrapping ErrStaleSlot and
// changes nothing.
func (c *Cache) Apply(s *Slot) error {
	if s == nil || s.c != c {
		return fmt.Errorf("%w: slot of another cache", ErrStaleSlot)
	}
	if c.gen != s.prepGen {
		return fmt.Errorf("%w: the cache changed since Prepare, or the slot is applied", ErrStaleSlot)
	}
	for _, ci := range s.cells { // guaranteed by gen; checked before any write
		if !c.cells[ci].seqs.empty() && !slices.Contains(s.reused, ci) {
			return fmt.Errorf("%w: cell %d is not empty", ErrStaleSlot, ci)
		}
	}
	for i, ci := range s.cells {
		cl := &c.cells[ci]
		*cl = cell{pos: s.pos[i], seqs: s.seqs[i]}
		c.addStats(cl)
		c.used++
		c.usedMax = max(c.usedMax, int(ci)+1)
	}
	if len(s.reused) > 0 { // the reused cells' sequences lost positions
		c.restat()
	}
	for c.head < len(c.cells) && !c.cells[c.head].seqs.empty() {
		c.head++
	}
	c.touch()
	s.appliedGen = c.gen
	return nil
}

// Rollback undoes Apply exactly: the cells it filled become empty again and
// the cache is bit for bit as before Apply. It is for a forward pass that
// failed after Apply, so nothing may change the cache in between;
// otherwise (or if the slot is not applied) it returns an error wrapping
// ErrStaleSlot and changes nothing.
func (c *Cache) Rollback(s *Slot) error {
	if s == nil || s.c != c {
		return fmt.Errorf("%w: slot of another cache", ErrStaleSlot)
	}
	if s.appliedGen == 0 || c.gen != s.appliedGen {
		return fmt.Errorf("%w: the slot is not applied, or the cache changed since Apply", ErrStaleSlot)
	}
	for _, ci := range s.cells {
		c.cells[ci] = cell{}
	}
	for i, ci := range s.reused {
		c.cells[ci] = s.old[i]
	}
	c.restat()
	c.gen = s.prepGen
	s.appliedGen = 0
	return nil
}

// CheckConsecutive applies llama.cpp's batch rule (llama_batch_allocr)
// on top of Prepare's: taken in batch order, the positions of each
// sequence s of the batch are p, p+1, p+2, … with p = SeqPosMax(s)+1 when
// the cache holds s (any p when it does not). A token in several sequences
// couples them: they must have equal SeqPosMin and SeqPosMax in the cache.
// Errors wrap ErrBadArg. It changes nothing.
func (c *Cache) CheckConsecutive(b Batch) error {
	sets, err := c.validate(b)
	if err != nil {
		return err
	}
	next := make([]int64, c.nSeqMax) // next position expected, -1: any
	for s := range next {
		next[s] = -1
		if c.seqMax[s] >= 0 {
			next[s] = int64(c.seqMax[s]) + 1
		}
	}
	for i, p := range b.Pos {
		var bad error
		first := SeqID(-1)
		sets[i].each(func(s SeqID) {
			switch {
			case bad != nil:
			case next[s] >= 0 && int64(p) != next[s]:
				bad = fmt.Errorf("%w: sequence %d has position %d at batch index %d, want %d (positions continue the cache's by one)", ErrBadArg, s, p, i, next[s])
			case first >= 0 && (c.seqMin[s] != c.seqMin[first] || c.seqMax[s] != c.seqMax[first]):
				bad = fmt.Errorf("%w: sequences %d and %d share the token at batch index %d but have diverged in the cache", ErrBadArg, first, s, i)
			}
			if first < 0 {
				first = s
			}
			next[s] = int64(p) + 1
		})
		if bad != nil {
			return bad
		}
	}
	return nil
}
