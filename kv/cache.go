package kv

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
)

// SeqID names a sequence; Pos is a token position.
type (
	SeqID int32
	Pos   int32
)

// MaxSeqs is the largest nSeqMax New accepts.
const MaxSeqs = 256

// ErrNoSlot: the cache has too few empty cells for a batch.
var ErrNoSlot = errors.New("kv: no free slot")

// ErrBadArg wraps every invalid argument (a sequence id out of range, a
// duplicate position, …). Nothing changes when it is returned.
var ErrBadArg = errors.New("kv: invalid argument")

// seqSet is a bitset of sequence ids.
type seqSet [MaxSeqs / 64]uint64

func (s *seqSet) has(id SeqID) bool { return s[id/64]&(1<<(uint(id)%64)) != 0 }
func (s *seqSet) add(id SeqID)      { s[id/64] |= 1 << (uint(id) % 64) }
func (s *seqSet) del(id SeqID)      { s[id/64] &^= 1 << (uint(id) % 64) }
func (s *seqSet) empty() bool       { return *s == seqSet{} }
func (s *seqSet) count() int {
	n := 0
	for _, w := range s {
		n += bits.OnesCount64(w)
	}
	return n
}
func (s *seqSet) intersects(o *seqSet) bool {
	for i := range s {
		if s[i]&o[i] != 0 {
			return true
		}
	}
	return false
}

type cell struct {
	pos   Pos
	seqs  seqSet // empty ⇔ the cell is free
	shift Pos    // accumulated position change since the last TakeShifts
}

// Cache is the cell metadata. It is not safe for concurrent use.
type Cache struct {
	cells   []cell
	nSeqMax int
	used    int
}

// Batch is the part of a forward batch the cache needs: Pos[i] and the
// sequences Seq[i] of token i.
type Batch struct {
	Pos []Pos
	Seq [][]SeqID
}

// Slot is where Prepare put a batch: Cells()[i] is token i's cell.
type Slot struct {
	cells []int32
	b     Batch
}

// Cells returns the cell index of every token, in batch order.
func (s *Slot) Cells() []int32 { return s.cells }

// New makes a cache of nCells cells for sequence ids in [0, nSeqMax).
func New(nCells, nSeqMax int) (*Cache, error) {
	if nCells < 1 || nCells > math.MaxInt32 {
		return nil, fmt.Errorf("%w: %d cells", ErrBadArg, nCells)
	}
	if nSeqMax < 1 || nSeqMax > MaxSeqs {
		return nil, fmt.Errorf("%w: nSeqMax %d outside [1, %d]", ErrBadArg, nSeqMax, MaxSeqs)
	}
	return &Cache{cells: make([]cell, nCells), nSeqMax: nSeqMax}, nil
}

// Size is the number of cells; Used the number of non-empty ones.
func (c *Cache) Size() int { return len(c.cells) }
func (c *Cache) Used() int { return c.used }

// UsedMax is one past the highest non-empty cell: attention need not look
// further.
func (c *Cache) UsedMax() int {
	for i := len(c.cells) - 1; i >= 0; i-- {
		if !c.cells[i].seqs.empty() {
			return i + 1
		}
	}
	return 0
}

// Clear empties every cell.
func (c *Cache) Clear() {
	clear(c.cells)
	c.used = 0
}

func (c *Cache) checkSeq(id SeqID) error {
	if id < 0 || int(id) >= c.nSeqMax {
		return fmt.Errorf("%w: sequence id %d outside [0, %d)", ErrBadArg, id, c.nSeqMax)
	}
	return nil
}

func span(p0, p1 Pos) (Pos, Pos) {
	if p0 < 0 {
		p0 = 0
	}
	if p1 < 0 {
		p1 = math.MaxInt32
	}
	return p0, p1
}

// Prepare validates b and finds an empty cell for each token. It changes
// nothing. A token must belong to at least one sequence; positions are
// non-negative; a (sequence, position) pair may appear only once in the
// batch and must not already be in the cache.
func (c *Cache) Prepare(b Batch) (*Slot, error) {
	n := len(b.Pos)
	if n == 0 || len(b.Seq) != n {
		return nil, fmt.Errorf("%w: batch of %d positions and %d sequence sets", ErrBadArg, n, len(b.Seq))
	}
	type key struct {
		s SeqID
		p Pos
	}
	inBatch := make(map[key]bool, n)
	for i := range n {
		if b.Pos[i] < 0 {
			return nil, fmt.Errorf("%w: negative position %d at %d", ErrBadArg, b.Pos[i], i)
		}
		if len(b.Seq[i]) == 0 {
			return nil, fmt.Errorf("%w: token %d belongs to no sequence", ErrBadArg, i)
		}
		for _, s := range b.Seq[i] {
			if err := c.checkSeq(s); err != nil {
				return nil, err
			}
			k := key{s, b.Pos[i]}
			if inBatch[k] {
				return nil, fmt.Errorf("%w: sequence %d has position %d twice in the batch", ErrBadArg, s, b.Pos[i])
			}
			inBatch[k] = true
		}
	}
	for i := range c.cells {
		cl := &c.cells[i]
		if cl.seqs.empty() {
			continue
		}
		for s := SeqID(0); int(s) < c.nSeqMax; s++ {
			if cl.seqs.has(s) && inBatch[key{s, cl.pos}] {
				return nil, fmt.Errorf("%w: sequence %d already has position %d in the cache", ErrBadArg, s, cl.pos)
			}
		}
	}
	if free := len(c.cells) - c.used; free < n {
		return nil, fmt.Errorf("%w: need %d cells, %d of %d free", ErrNoSlot, n, free, len(c.cells))
	}
	slot := &Slot{cells: make([]int32, 0, n), b: b}
	for i := 0; len(slot.cells) < n; i++ {
		if c.cells[i].seqs.empty() {
			slot.cells = append(slot.cells, int32(i))
		}
	}
	return slot, nil
}

// Apply writes the batch Prepare placed into its cells. Nothing may change
// the cache between Prepare and Apply.
func (c *Cache) Apply(s *Slot) {
	for i, ci := range s.cells {
		cl := &c.cells[ci]
		if !cl.seqs.empty() {
			panic("kv: Apply to a cell that is not empty (cache changed after Prepare)")
		}
		*cl = cell{pos: s.b.Pos[i]}
		for _, id := range s.b.Seq[i] {
			cl.seqs.add(id)
		}
		c.used++
	}
}

// Rollback empties the cells Apply filled, restoring the state before it.
func (c *Cache) Rollback(s *Slot) {
	for _, ci := range s.cells {
		if !c.cells[ci].seqs.empty() {
			c.used--
		}
		c.cells[ci] = cell{}
	}
}

// Mask writes the attention mask of a batch already applied: dst is
// (len(b.Pos), nKV) row-major, 0 where token i may see cell j and -Inf
// elsewhere, for the first nKV cells.
func (c *Cache) Mask(b Batch, dst []float32, nKV int) {
	if nKV > len(c.cells) || len(dst) < len(b.Pos)*nKV {
		panic(fmt.Sprintf("kv: Mask: nKV %d of %d cells, dst %d for %d tokens", nKV, len(c.cells), len(dst), len(b.Pos)))
	}
	negInf := float32(math.Inf(-1))
	for i, p := range b.Pos {
		var want seqSet
		for _, s := range b.Seq[i] {
			want.add(s)
		}
		row := dst[i*nKV : (i+1)*nKV]
		for j := range row {
			cl := &c.cells[j]
			if cl.pos <= p && cl.seqs.intersects(&want) {
				row[j] = 0
			} else {
				row[j] = negInf
			}
		}
	}
}

// remove empties cell i.
func (c *Cache) remove(i int) {
	if !c.cells[i].seqs.empty() {
		c.used--
	}
	c.cells[i] = cell{}
}

// SeqRm removes seq (every sequence if seq < 0) from the cells with
// positions in [p0, p1); cells left without a sequence become empty.
func (c *Cache) SeqRm(seq SeqID, p0, p1 Pos) error {
	if seq >= 0 {
		if err := c.checkSeq(seq); err != nil {
			return err
		}
	}
	p0, p1 = span(p0, p1)
	for i := range c.cells {
		cl := &c.cells[i]
		if cl.seqs.empty() || cl.pos < p0 || cl.pos >= p1 {
			continue
		}
		if seq < 0 {
			c.remove(i)
			continue
		}
		if cl.seqs.has(seq) {
			cl.seqs.del(seq)
			if cl.seqs.empty() {
				c.used--
				*cl = cell{}
			}
		}
	}
	return nil
}

// SeqCp adds dst to every cell of src with a position in [p0, p1).
func (c *Cache) SeqCp(src, dst SeqID, p0, p1 Pos) error {
	if err := c.checkSeq(src); err != nil {
		return err
	}
	if err := c.checkSeq(dst); err != nil {
		return err
	}
	p0, p1 = span(p0, p1)
	for i := range c.cells {
		cl := &c.cells[i]
		if cl.seqs.has(src) && cl.pos >= p0 && cl.pos < p1 {
			cl.seqs.add(dst)
		}
	}
	return nil
}

// SeqKeep removes every sequence but seq from every cell.
func (c *Cache) SeqKeep(seq SeqID) error {
	if err := c.checkSeq(seq); err != nil {
		return err
	}
	for i := range c.cells {
		cl := &c.cells[i]
		if cl.seqs.empty() {
			continue
		}
		if cl.seqs.has(seq) {
			cl.seqs = seqSet{}
			cl.seqs.add(seq)
		} else {
			c.remove(i)
		}
	}
	return nil
}

// SeqAdd adds delta to the positions of seq's cells in [p0, p1). A cell
// whose position would fall below 0 is removed.
func (c *Cache) SeqAdd(seq SeqID, p0, p1, delta Pos) error {
	if err := c.checkSeq(seq); err != nil {
		return err
	}
	if delta == 0 {
		return nil
	}
	p0, p1 = span(p0, p1)
	for i := range c.cells {
		cl := &c.cells[i]
		if !cl.seqs.has(seq) || cl.pos < p0 || cl.pos >= p1 {
			continue
		}
		np := int64(cl.pos) + int64(delta)
		if np < 0 {
			c.remove(i)
			continue
		}
		if np > math.MaxInt32 {
			np = math.MaxInt32
		}
		cl.shift += Pos(np) - cl.pos
		cl.pos = Pos(np)
	}
	return nil
}

// SeqDiv divides the positions of seq's cells in [p0, p1) by d ≥ 1.
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
	p0, p1 = span(p0, p1)
	for i := range c.cells {
		cl := &c.cells[i]
		if !cl.seqs.has(seq) || cl.pos < p0 || cl.pos >= p1 {
			continue
		}
		np := cl.pos / Pos(d)
		cl.shift += np - cl.pos
		cl.pos = np
	}
	return nil
}

// SeqPosMin and SeqPosMax return the smallest and largest position of
// seq's cells, -1 when it has none (or the id is out of range).
func (c *Cache) SeqPosMin(seq SeqID) Pos { return c.seqPos(seq, true) }
func (c *Cache) SeqPosMax(seq SeqID) Pos { return c.seqPos(seq, false) }

func (c *Cache) seqPos(seq SeqID, lowest bool) Pos {
	if c.checkSeq(seq) != nil {
		return -1
	}
	best := Pos(-1)
	for i := range c.cells {
		cl := &c.cells[i]
		if !cl.seqs.has(seq) {
			continue
		}
		if best < 0 || (lowest && cl.pos < best) || (!lowest && cl.pos > best) {
			best = cl.pos
		}
	}
	return best
}

// TakeShifts returns the cells whose positions moved since the last call
// and by how much, and forgets them.
func (c *Cache) TakeShifts() (cells, delta []int32) {
	for i := range c.cells {
		cl := &c.cells[i]
		if cl.shift != 0 && !cl.seqs.empty() {
			cells = append(cells, int32(i))
			delta = append(delta, int32(cl.shift))
		}
		cl.shift = 0
	}
	return cells, delta
}

// SeqCount returns how many sequences share cell i (0: empty). For tests
// and monitoring.
func (c *Cache) SeqCount(i int) int { return c.cells[i].seqs.count() }
