package kv

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
)

// naive is the reference: a plain slice of cells, each a position, a set
// of sequences and a pending shift, with the most obvious loops. The
// property test and the fuzz target run every operation on both and
// compare.
type naive struct {
	cells []naiveCell
	nSeq  int
}

type naiveCell struct {
	pos   Pos
	seqs  map[SeqID]bool // empty ⇔ the cell is empty
	shift Pos
}

func newNaive(nCells, nSeq int) *naive {
	m := &naive{cells: make([]naiveCell, nCells), nSeq: nSeq}
	for i := range m.cells {
		m.empty(i)
	}
	return m
}

func (m *naive) empty(i int)               { m.cells[i] = naiveCell{seqs: map[SeqID]bool{}} }
func (m *naive) isEmpty(i int) bool        { return len(m.cells[i].seqs) == 0 }
func (m *naive) okSeq(s SeqID) bool        { return s >= 0 && int(s) < m.nSeq }
func inRange(p, p0, p1 Pos) bool           { return (p0 < 0 || p >= p0) && (p1 < 0 || p < p1) }
func (m *naive) in(i int, p0, p1 Pos) bool { return !m.isEmpty(i) && inRange(m.cells[i].pos, p0, p1) }

func (m *naive) clone() *naive {
	o := &naive{cells: make([]naiveCell, len(m.cells)), nSeq: m.nSeq}
	for i, cl := range m.cells {
		o.cells[i] = naiveCell{pos: cl.pos, shift: cl.shift, seqs: map[SeqID]bool{}}
		for s := range cl.seqs {
			o.cells[i].seqs[s] = true
		}
	}
	return o
}

func (m *naive) equal(o *naive) bool {
	for i := range m.cells {
		a, b := m.cells[i], o.cells[i]
		if a.pos != b.pos || a.shift != b.shift || !reflect.DeepEqual(a.seqs, b.seqs) {
			return false
		}
	}
	return true
}

func (m *naive) has(s SeqID, p Pos) bool {
	for i := range m.cells {
		if m.cells[i].seqs[s] && m.cells[i].pos == p {
			return true
		}
	}
	return false
}

// valid is Prepare's well-formedness rule.
func (m *naive) valid(b Batch) bool {
	if len(b.Pos) == 0 || len(b.Pos) != len(b.Seq) {
		return false
	}
	for i := range b.Pos {
		if b.Pos[i] < 0 || len(b.Seq[i]) == 0 {
			return false
		}
		for k, s := range b.Seq[i] {
			if !m.okSeq(s) {
				return false
			}
			for j := 0; j <= i; j++ {
				for l, s2 := range b.Seq[j] {
					if (j < i || l < k) && s2 == s && b.Pos[j] == b.Pos[i] {
						return false
					}
				}
			}
		}
	}
	return true
}

func (m *naive) prepare(b Batch) ([]int32, error) {
	if !m.valid(b) {
		return nil, ErrBadArg
	}
	for i := range b.Pos {
		for _, s := range b.Seq[i] {
			if m.has(s, b.Pos[i]) {
				return nil, ErrBadArg
			}
		}
	}
	var cells []int32
	for i := range m.cells {
		if m.isEmpty(i) && len(cells) < len(b.Pos) {
			cells = append(cells, int32(i))
		}
	}
	if len(cells) < len(b.Pos) {
		return nil, ErrNoSlot
	}
	return cells, nil
}

func (m *naive) apply(b Batch, cells []int32) {
	for i, ci := range cells {
		m.cells[ci] = naiveCell{pos: b.Pos[i], seqs: map[SeqID]bool{}}
		for _, s := range b.Seq[i] {
			m.cells[ci].seqs[s] = true
		}
	}
}

func (m *naive) seqRm(seq SeqID, p0, p1 Pos) error {
	if int(seq) >= m.nSeq {
		return ErrBadArg
	}
	for i := range m.cells {
		if !m.in(i, p0, p1) {
			continue
		}
		if seq < 0 {
			m.empty(i)
		} else if m.cells[i].seqs[seq] {
			delete(m.cells[i].seqs, seq)
			if m.isEmpty(i) {
				m.empty(i)
			}
		}
	}
	return nil
}

func (m *naive) seqCp(src, dst SeqID, p0, p1 Pos) error {
	if !m.okSeq(src) || !m.okSeq(dst) {
		return ErrBadArg
	}
	for i := range m.cells {
		if m.in(i, p0, p1) && m.cells[i].seqs[src] {
			m.cells[i].seqs[dst] = true
		}
	}
	return nil
}

func (m *naive) seqKeep(seq SeqID) error {
	if !m.okSeq(seq) {
		return ErrBadArg
	}
	for i := range m.cells {
		if m.cells[i].seqs[seq] {
			m.cells[i].seqs = map[SeqID]bool{seq: true}
		} else {
			m.empty(i)
		}
	}
	return nil
}

func (m *naive) seqAdd(seq SeqID, p0, p1, d Pos) error {
	if !m.okSeq(seq) {
		return ErrBadArg
	}
	for i := range m.cells {
		if m.in(i, p0, p1) && m.cells[i].seqs[seq] && int64(m.cells[i].pos)+int64(d) > math.MaxInt32 {
			return ErrBadArg
		}
	}
	for i := range m.cells {
		if m.in(i, p0, p1) && m.cells[i].seqs[seq] {
			if m.cells[i].pos+d < 0 {
				m.empty(i)
			} else {
				m.cells[i].pos += d
				m.cells[i].shift += d
			}
		}
	}
	return nil
}

func (m *naive) seqDiv(seq SeqID, p0, p1 Pos, d int) error {
	if !m.okSeq(seq) || d < 1 {
		return ErrBadArg
	}
	for i := range m.cells {
		if m.in(i, p0, p1) && m.cells[i].seqs[seq] {
			np := Pos(int(m.cells[i].pos) / d)
			m.cells[i].shift += np - m.cells[i].pos
			m.cells[i].pos = np
		}
	}
	return nil
}

func (m *naive) takeShifts() (cells, delta []int32) {
	for i := range m.cells {
		if !m.isEmpty(i) && m.cells[i].shift != 0 {
			cells = append(cells, int32(i))
			delta = append(delta, int32(m.cells[i].shift))
		}
		m.cells[i].shift = 0
	}
	return cells, delta
}

func (m *naive) used() (n int) {
	for i := range m.cells {
		if !m.isEmpty(i) {
			n++
		}
	}
	return n
}

func (m *naive) usedMax() int {
	top := 0
	for i := range m.cells {
		if !m.isEmpty(i) {
			top = i + 1
		}
	}
	return top
}

func (m *naive) posMinMax(s SeqID) (lo, hi Pos) {
	lo, hi = -1, -1
	for i := range m.cells {
		if m.cells[i].seqs[s] {
			p := m.cells[i].pos
			if lo < 0 || p < lo {
				lo = p
			}
			if p > hi {
				hi = p
			}
		}
	}
	return lo, hi
}

// allMinMax is posMinMax of every id in [-1, nSeq] (-1, -1 for ids out of
// range), in one pass.
func (m *naive) allMinMax() (lo, hi map[SeqID]Pos) {
	lo, hi = map[SeqID]Pos{}, map[SeqID]Pos{}
	for s := SeqID(-1); int(s) <= m.nSeq; s++ {
		lo[s], hi[s] = -1, -1
	}
	for _, cl := range m.cells {
		for s := range cl.seqs {
			if lo[s] < 0 || cl.pos < lo[s] {
				lo[s] = cl.pos
			}
			hi[s] = max(hi[s], cl.pos)
		}
	}
	return lo, hi
}

// visible lists, per token, the cells it may attend to by (position,
// cell index): the rule written out plainly.
func (m *naive) visible(b Batch) [][]int32 {
	out := make([][]int32, len(b.Pos))
	for i := range b.Pos {
		for j := range m.cells {
			for _, s := range b.Seq[i] {
				if m.cells[j].seqs[s] && m.cells[j].pos <= b.Pos[i] {
					out[i] = append(out[i], int32(j))
					break
				}
			}
		}
		slices.SortStableFunc(out[i], func(x, y int32) int { return cmp.Compare(m.cells[x].pos, m.cells[y].pos) })
	}
	return out
}

func (m *naive) checkConsecutive(b Batch) error {
	if !m.valid(b) {
		return ErrBadArg
	}
	for s := SeqID(0); int(s) < m.nSeq; s++ {
		_, last := m.posMinMax(s)
		started := last >= 0
		for i := range b.Pos {
			if !slices.Contains(b.Seq[i], s) {
				continue
			}
			if started && int64(b.Pos[i]) != int64(last)+1 {
				return ErrBadArg
			}
			last, started = b.Pos[i], true
		}
	}
	for i := range b.Seq {
		for _, a := range b.Seq[i] {
			for _, c := range b.Seq[i] {
				alo, ahi := m.posMinMax(a)
				clo, chi := m.posMinMax(c)
				if alo != clo || ahi != chi {
					return ErrBadArg
				}
			}
		}
	}
	return nil
}

// kind names the sentinel an error wraps, for comparing with the model.
func kind(err error) string {
	switch {
	case err == nil:
		return "nil"
	case errors.Is(err, ErrNoSlot):
		return "ErrNoSlot"
	case errors.Is(err, ErrBadArg):
		return "ErrBadArg"
	case errors.Is(err, ErrStaleSlot):
		return "ErrStaleSlot"
	}
	return "other: " + err.Error()
}

// invariants checks the cache's derived counters against a scan of its
// cells, and that empty cells are zero.
func (c *Cache) invariants() error {
	used, top, head := 0, 0, len(c.cells)
	lo := make([]Pos, c.nSeqMax)
	hi := make([]Pos, c.nSeqMax)
	for s := range lo {
		lo[s], hi[s] = -1, -1
	}
	for i, cl := range c.cells {
		if cl.seqs.empty() {
			if cl != (cell{}) {
				return fmt.Errorf("empty cell %d not zero: %+v", i, cl)
			}
			head = min(head, i)
			continue
		}
		if cl.pos < 0 {
			return fmt.Errorf("cell %d has position %d", i, cl.pos)
		}
		used++
		top = i + 1
		for s := SeqID(0); s < MaxSeqs; s++ {
			if !cl.seqs.has(s) {
				continue
			}
			if int(s) >= c.nSeqMax {
				return fmt.Errorf("cell %d holds sequence %d ≥ %d", i, s, c.nSeqMax)
			}
			if lo[s] < 0 || cl.pos < lo[s] {
				lo[s] = cl.pos
			}
			hi[s] = max(hi[s], cl.pos)
		}
	}
	if used != c.used || top != c.usedMax || head != c.head {
		return fmt.Errorf("used/usedMax/head %d/%d/%d, scan says %d/%d/%d", c.used, c.usedMax, c.head, used, top, head)
	}
	if !slices.Equal(lo, c.seqMin) || !slices.Equal(hi, c.seqMax) {
		return fmt.Errorf("seq min %v max %v, scan says %v %v", c.seqMin, c.seqMax, lo, hi)
	}
	return nil
}

// snapshot is a deep copy of everything that makes up a cache's state
// (all but the generation counter lastGen).
type snapshot struct {
	cells               []cell
	used, usedMax, head int
	seqMin, seqMax      []Pos
	gen                 uint64
}

func (c *Cache) snap() snapshot {
	return snapshot{
		cells: slices.Clone(c.cells), used: c.used, usedMax: c.usedMax, head: c.head,
		seqMin: slices.Clone(c.seqMin), seqMax: slices.Clone(c.seqMax), gen: c.gen,
	}
}

// sameCells compares the cells and counters of two snapshots, not gen.
func (s snapshot) sameCells(o snapshot) bool {
	s.gen, o.gen = 0, 0
	return reflect.DeepEqual(s, o)
}
