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

// MaxSeqs is the largest nSeqMax New accepts (the width of a cell's
// sequence bitset: 64 bytes a cell). A server running 256 requests keeps
// as many retained sequences (cached prefixes, idle sessions) on ids of
// their own.
const MaxSeqs = 512

// ErrNoSlot: the cache has too few empty cells for a batch. Prepare wraps
// it with the number of cells needed and free.
var ErrNoSlot = errors.New("kv: no free slot")

// ErrBadArg wraps every invalid argument: a sequence id out of range, a
// negative position, a (sequence, position) pair twice, a bad divisor or
// mask size, a shift that overflows int32. Nothing changes when it is
// returned.
var ErrBadArg = errors.New("kv: invalid argument")

// ErrStaleSlot: Apply or Rollback got a Slot that does not fit the cache's
// current state (the cache changed since Prepare or Apply, the slot was
// already applied or rolled back, or it belongs to another cache). Nothing
// changes when it is returned.
var ErrStaleSlot = errors.New("kv: stale slot")

// seqSet is a bitset of sequence ids in [0, MaxSeqs).
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

// each calls f for every id in s, in ascending order.
func (s *seqSet) each(f func(SeqID)) {
	for w, word := range s {
		for word != 0 {
			f(SeqID(w*64 + bits.TrailingZeros64(word)))
			word &= word - 1
		}
	}
}

// cell is one KV slot. Empty ⇔ seqs is empty; an empty cell is the zero
// value (pos 0, shift 0).
type cell struct {
	pos   Pos
	seqs  seqSet
	shift Pos // position change (new − old) since the last TakeShifts
}

// Cache is the cell metadata. It is not safe for concurrent use.
//
// Besides the cells it keeps derived counters, always equal to what a scan
// of the cells would give (checked by invariants in the tests):
// used, usedMax, head and the per-sequence minimum and maximum position.
type Cache struct {
	cells   []cell
	nSeqMax int

	used    int   // non-empty cells
	usedMax int   // 1 + index of the highest non-empty cell, 0 if none
	head    int   // index of the lowest empty cell, len(cells) if none
	seqMin  []Pos // (nSeqMax) smallest position of each sequence, -1 if none
	seqMax  []Pos // (nSeqMax) largest position of each sequence, -1 if none

	// gen names the current state; it changes whenever the state does, and
	// returns to an earlier value only when Rollback restores that state.
	// lastGen hands out fresh names.
	gen, lastGen uint64

	// window > 0: every reader attends through a sliding window of this
	// many positions, so Prepare may reuse cells out of it (SetWindow).
	window Pos

	vis visScratch // Visible's buffers
}

// SetWindow declares that everything reading the cache attends through a
// sliding window of w positions (VisibleWindow with w), w 0 (the default)
// that something sees every position. With a window, when too few cells
// are empty Prepare also reuses cells that no token can see any more, as
// llama.cpp's SWA cache does: a cell whose position p is at most
// limit − w for each of its sequences, limit the smallest position the
// batch gives that sequence or, if smaller or absent, the sequence's
// largest position + 1. Such a cell is masked for every position from
// limit on; only a token filling a gap below the sequence's end could
// have seen it, and it no longer can. A negative w is an error wrapping
// ErrBadArg.
func (c *Cache) SetWindow(w int) error {
	if w < 0 || w > math.MaxInt32 {
		return fmt.Errorf("%w: window %d", ErrBadArg, w)
	}
	c.window = Pos(w)
	return nil
}

// New makes an empty cache of nCells cells for sequence ids in
// [0, nSeqMax), nSeqMax ≤ MaxSeqs.
func New(nCells, nSeqMax int) (*Cache, error) {
	if nCells < 1 || nCells > math.MaxInt32 {
		return nil, fmt.Errorf("%w: %d cells, want [1, %d]", ErrBadArg, nCells, math.MaxInt32)
	}
	if nSeqMax < 1 || nSeqMax > MaxSeqs {
		return nil, fmt.Errorf("%w: nSeqMax %d outside [1, %d]", ErrBadArg, nSeqMax, MaxSeqs)
	}
	c := &Cache{
		cells:   make([]cell, nCells),
		nSeqMax: nSeqMax,
		seqMin:  make([]Pos, nSeqMax),
		seqMax:  make([]Pos, nSeqMax),
	}
	c.restat()
	return c, nil
}

// Size is the number of cells.
func (c *Cache) Size() int { return len(c.cells) }

// SeqMax is the number of sequence ids: valid ids are [0, SeqMax()).
func (c *Cache) SeqMax() int { return c.nSeqMax }

// Used is the number of non-empty cells.
func (c *Cache) Used() int { return c.used }

// UsedMax is one past the highest non-empty cell (0 when the cache is
// empty): attention over the first UsedMax cells sees every token.
func (c *Cache) UsedMax() int { return c.usedMax }

// SeqPosMin returns the smallest position of seq's cells, -1 when it has
// none or the id is outside [0, SeqMax()).
func (c *Cache) SeqPosMin(seq SeqID) Pos {
	if c.checkSeq(seq) != nil {
		return -1
	}
	return c.seqMin[seq]
}

// SeqPosMax returns the largest position of seq's cells, -1 when it has
// none or the id is outside [0, SeqMax()).
func (c *Cache) SeqPosMax(seq SeqID) Pos {
	if c.checkSeq(seq) != nil {
		return -1
	}
	return c.seqMax[seq]
}

// SeqCount returns how many sequences share cell i (0: empty, or i out of
// range). For tests and monitoring.
func (c *Cache) SeqCount(i int) int {
	if i < 0 || i >= len(c.cells) {
		return 0
	}
	return c.cells[i].seqs.count()
}

// UsedBy returns how many cells hold at least one of seqs (ids outside
// [0, SeqMax) are ignored). It scans the cells: for monitoring, once a
// step.
func (c *Cache) UsedBy(seqs []SeqID) int {
	var set seqSet
	for _, s := range seqs {
		if s >= 0 && int(s) < c.nSeqMax {
			set.add(s)
		}
	}
	if set.empty() {
		return 0
	}
	n := 0
	for i := range c.cells[:c.usedMax] {
		if c.cells[i].seqs.intersects(&set) {
			n++
		}
	}
	return n
}

// Clear empties every cell and forgets pending shifts.
func (c *Cache) Clear() {
	if c.used == 0 {
		return // empty cells hold no shift: nothing to change
	}
	clear(c.cells[:c.usedMax])
	c.restat()
	c.touch()
}

func (c *Cache) checkSeq(id SeqID) error {
	if id < 0 || int(id) >= c.nSeqMax {
		return fmt.Errorf("%w: sequence id %d outside [0, %d)", ErrBadArg, id, c.nSeqMax)
	}
	return nil
}

// touch gives the state a fresh name after a change.
func (c *Cache) touch() {
	c.lastGen++
	c.gen = c.lastGen
}

// restat recomputes the derived counters from the cells. Only Apply fills
// cells, and it raises usedMax, so every non-empty cell lies below the
// current usedMax and the scan can stop there.
func (c *Cache) restat() {
	for s := range c.seqMin {
		c.seqMin[s], c.seqMax[s] = -1, -1
	}
	used, top, head := 0, 0, -1
	for i := range c.cells[:c.usedMax] {
		cl := &c.cells[i]
		if cl.seqs.empty() {
			if head < 0 {
				head = i
			}
			continue
		}
		used++
		top = i + 1
		c.addStats(cl)
	}
	if head < 0 || head >= top {
		head = top
	}
	c.used, c.usedMax, c.head = used, top, head
}

// addStats folds a non-empty cell into the per-sequence minimum and
// maximum.
func (c *Cache) addStats(cl *cell) {
	p := cl.pos
	cl.seqs.each(func(s SeqID) {
		if c.seqMax[s] < 0 {
			c.seqMin[s], c.seqMax[s] = p, p
			return
		}
		c.seqMin[s] = min(c.seqMin[s], p)
		c.seqMax[s] = max(c.seqMax[s], p)
	})
}

// span turns [p0, p1) with negative "no bound" ends into int64 bounds.
func span(p0, p1 Pos) (lo, hi int64) {
	lo, hi = int64(p0), int64(p1)
	if p0 < 0 {
		lo = 0
	}
	if p1 < 0 {
		hi = math.MaxInt64
	}
	return lo, hi
}

func (cl *cell) in(lo, hi int64) bool { return int64(cl.pos) >= lo && int64(cl.pos) < hi }
