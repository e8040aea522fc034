package kv

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

func batch(seq SeqID, pos ...Pos) Batch {
	b := Batch{Pos: pos}
	for range pos {
		b.Seq = append(b.Seq, []SeqID{seq})
	}
	return b
}

func mustApply(t *testing.T, c *Cache, b Batch) *Slot {
	t.Helper()
	s, err := c.Prepare(b)
	if err != nil {
		t.Fatal(err)
	}
	c.Apply(s)
	return s
}

func TestPrepareApplyRollback(t *testing.T) {
	c, _ := New(4, 2)
	s := mustApply(t, c, batch(0, 0, 1, 2))
	if got := s.Cells(); len(got) != 3 || got[0] != 0 || got[2] != 2 {
		t.Fatalf("cells %v", got)
	}
	if c.Used() != 3 || c.SeqPosMax(0) != 2 || c.SeqPosMin(0) != 0 {
		t.Fatalf("used %d max %d", c.Used(), c.SeqPosMax(0))
	}
	before := append([]cell(nil), c.cells...)
	if _, err := c.Prepare(batch(1, 0, 1)); !errors.Is(err, ErrNoSlot) {
		t.Fatalf("full cache: %v", err)
	}
	for i := range before {
		if before[i] != c.cells[i] {
			t.Fatal("failed Prepare changed the cache")
		}
	}
	s2 := mustApply(t, c, batch(1, 0))
	c.Rollback(s2)
	for i := range before {
		if before[i] != c.cells[i] {
			t.Fatal("Rollback did not restore the cache")
		}
	}
	if c.Used() != 3 {
		t.Fatal("used after rollback")
	}
}

func TestPrepareErrors(t *testing.T) {
	c, _ := New(8, 2)
	mustApply(t, c, batch(0, 0, 1))
	for name, b := range map[string]Batch{
		"empty":        {},
		"lengths":      {Pos: []Pos{0}},
		"negative pos": batch(0, -1),
		"seq range":    batch(2, 5),
		"no seq":       {Pos: []Pos{3}, Seq: [][]SeqID{{}}},
		"dup in batch": batch(1, 4, 4),
		"dup in cache": batch(0, 1),
	} {
		if _, err := c.Prepare(b); !errors.Is(err, ErrBadArg) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestMask(t *testing.T) {
	c, _ := New(6, 3)
	mustApply(t, c, batch(0, 0, 1))
	if err := c.SeqCp(0, 1, -1, -1); err != nil {
		t.Fatal(err)
	}
	b := Batch{Pos: []Pos{2, 2, 0}, Seq: [][]SeqID{{0}, {1}, {2}}}
	mustApply(t, c, b)
	dst := make([]float32, 3*6)
	c.Mask(b, dst, 6)
	inf := float32(math.Inf(-1))
	want := [][]float32{
		{0, 0, 0, inf, inf, inf},     // seq 0 at 2: prefix + itself
		{0, 0, inf, 0, inf, inf},     // seq 1 at 2: shared prefix + itself
		{inf, inf, inf, inf, 0, inf}, // seq 2 at 0: only itself
	}
	for i := range want {
		for j := range want[i] {
			if dst[i*6+j] != want[i][j] {
				t.Fatalf("mask row %d: %v, want %v", i, dst[i*6:(i+1)*6], want[i])
			}
		}
	}
}

func TestSeqOps(t *testing.T) {
	c, _ := New(8, 3)
	mustApply(t, c, batch(0, 0, 1, 2, 3))
	c.SeqCp(0, 1, 0, 2)
	if c.SeqPosMax(1) != 1 || c.SeqCount(0) != 2 || c.SeqCount(2) != 1 {
		t.Fatal("SeqCp")
	}
	c.SeqRm(0, 2, -1)
	if c.Used() != 2 || c.SeqPosMax(0) != 1 {
		t.Fatalf("SeqRm: used %d", c.Used())
	}
	c.SeqAdd(0, 0, -1, 5)
	if c.SeqPosMin(0) != 5 || c.SeqPosMax(1) != 6 { // shared cells move for both
		t.Fatal("SeqAdd")
	}
	cells, delta := c.TakeShifts()
	if len(cells) != 2 || delta[0] != 5 || delta[1] != 5 {
		t.Fatalf("shifts %v %v", cells, delta)
	}
	if cells, _ := c.TakeShifts(); len(cells) != 0 {
		t.Fatal("shifts not cleared")
	}
	c.SeqDiv(0, -1, -1, 2)
	if c.SeqPosMin(0) != 2 || c.SeqPosMax(0) != 3 {
		t.Fatalf("SeqDiv: %d %d", c.SeqPosMin(0), c.SeqPosMax(0))
	}
	c.SeqAdd(0, 0, -1, -3) // pos 2 → -1 removed, 3 → 0
	if c.Used() != 1 || c.SeqPosMax(0) != 0 {
		t.Fatalf("SeqAdd below zero: used %d", c.Used())
	}
	c.SeqKeep(2)
	if c.Used() != 0 {
		t.Fatal("SeqKeep")
	}
	if err := c.SeqRm(7, 0, 1); !errors.Is(err, ErrBadArg) {
		t.Fatal("bad seq id accepted")
	}
}

// naive is the obviously-correct model the property test compares with.
type naive struct {
	pos   []Pos
	seqs  []map[SeqID]bool
	shift []Pos
}

func newNaive(n int) *naive {
	m := &naive{pos: make([]Pos, n), seqs: make([]map[SeqID]bool, n), shift: make([]Pos, n)}
	for i := range m.seqs {
		m.seqs[i] = map[SeqID]bool{}
	}
	return m
}

func (m *naive) clearCell(i int) { m.seqs[i] = map[SeqID]bool{}; m.pos[i] = 0; m.shift[i] = 0 }

func (m *naive) in(i int, p0, p1 Pos) bool {
	p0, p1 = span(p0, p1)
	return len(m.seqs[i]) > 0 && m.pos[i] >= p0 && m.pos[i] < p1
}

func TestProperty(t *testing.T) {
	seeds := 200
	if testing.Short() {
		seeds = 30
	}
	for seed := range seeds {
		r := rand.New(rand.NewPCG(uint64(seed), 7))
		nCells, nSeq := 1+r.IntN(24), 1+r.IntN(4)
		c, _ := New(nCells, nSeq)
		m := newNaive(nCells)
		for step := range 200 {
			seq := SeqID(r.IntN(nSeq))
			p0, p1 := Pos(r.IntN(12)-2), Pos(r.IntN(14)-2)
			switch op := r.IntN(7); op {
			case 0, 1: // a batch
				b := Batch{}
				for range 1 + r.IntN(4) {
					b.Pos = append(b.Pos, Pos(r.IntN(12)))
					set := []SeqID{SeqID(r.IntN(nSeq))}
					if r.IntN(3) == 0 {
						set = append(set, SeqID(r.IntN(nSeq)))
					}
					b.Seq = append(b.Seq, set)
				}
				s, err := c.Prepare(b)
				if err != nil {
					continue
				}
				c.Apply(s)
				if r.IntN(4) == 0 {
					c.Rollback(s)
					break
				}
				for i, ci := range s.Cells() {
					m.pos[ci] = b.Pos[i]
					for _, id := range b.Seq[i] {
						m.seqs[ci][id] = true
					}
				}
			case 2:
				c.SeqRm(seq, p0, p1)
				for i := range m.pos {
					if m.in(i, p0, p1) && m.seqs[i][seq] {
						delete(m.seqs[i], seq)
						if len(m.seqs[i]) == 0 {
							m.clearCell(i)
						}
					}
				}
			case 3:
				dst := SeqID(r.IntN(nSeq))
				c.SeqCp(seq, dst, p0, p1)
				for i := range m.pos {
					if m.in(i, p0, p1) && m.seqs[i][seq] {
						m.seqs[i][dst] = true
					}
				}
			case 4:
				c.SeqKeep(seq)
				for i := range m.pos {
					if m.seqs[i][seq] {
						m.seqs[i] = map[SeqID]bool{seq: true}
					} else {
						m.clearCell(i)
					}
				}
			case 5:
				d := Pos(r.IntN(9) - 4)
				c.SeqAdd(seq, p0, p1, d)
				for i := range m.pos {
					if d != 0 && m.in(i, p0, p1) && m.seqs[i][seq] {
						if m.pos[i]+d < 0 {
							m.clearCell(i)
						} else {
							m.pos[i] += d
							m.shift[i] += d
						}
					}
				}
			case 6:
				d := 1 + r.IntN(3)
				c.SeqDiv(seq, p0, p1, d)
				for i := range m.pos {
					if m.in(i, p0, p1) && m.seqs[i][seq] {
						np := m.pos[i] / Pos(d)
						m.shift[i] += np - m.pos[i]
						m.pos[i] = np
					}
				}
			}
			check(t, seed, step, c, m, nSeq)
		}
	}
}

func check(t *testing.T, seed, step int, c *Cache, m *naive, nSeq int) {
	t.Helper()
	used := 0
	for i := range m.pos {
		if len(m.seqs[i]) > 0 {
			used++
			if c.cells[i].pos != m.pos[i] || c.SeqCount(i) != len(m.seqs[i]) {
				t.Fatalf("seed %d step %d: cell %d differs", seed, step, i)
			}
			for s := range m.seqs[i] {
				if !c.cells[i].seqs.has(s) {
					t.Fatalf("seed %d step %d: cell %d lacks seq %d", seed, step, i, s)
				}
			}
		} else if c.SeqCount(i) != 0 {
			t.Fatalf("seed %d step %d: cell %d should be empty", seed, step, i)
		}
	}
	if c.Used() != used {
		t.Fatalf("seed %d step %d: used %d, want %d", seed, step, c.Used(), used)
	}
	for s := SeqID(0); int(s) < nSeq; s++ {
		lo, hi := Pos(-1), Pos(-1)
		for i := range m.pos {
			if m.seqs[i][s] {
				if lo < 0 || m.pos[i] < lo {
					lo = m.pos[i]
				}
				if m.pos[i] > hi {
					hi = m.pos[i]
				}
			}
		}
		if c.SeqPosMin(s) != lo || c.SeqPosMax(s) != hi {
			t.Fatalf("seed %d step %d: seq %d min/max %d/%d, want %d/%d", seed, step, s, c.SeqPosMin(s), c.SeqPosMax(s), lo, hi)
		}
	}
	// Mask for a probe token of each sequence at a random position.
	for s := SeqID(0); int(s) < nSeq; s++ {
		p := Pos(step % 13)
		dst := make([]float32, len(m.pos))
		c.Mask(Batch{Pos: []Pos{p}, Seq: [][]SeqID{{s}}}, dst, len(m.pos))
		for j := range m.pos {
			vis := m.seqs[j][s] && m.pos[j] <= p
			if vis != (dst[j] == 0) {
				t.Fatalf("seed %d step %d: mask seq %d pos %d cell %d = %v", seed, step, s, p, j, dst[j])
			}
		}
	}
	// Pending shifts, only checked every few steps (TakeShifts clears them).
	if step%5 == 0 {
		cells, delta := c.TakeShifts()
		k := 0
		for i := range m.pos {
			if len(m.seqs[i]) > 0 && m.shift[i] != 0 {
				if k >= len(cells) || cells[k] != int32(i) || delta[k] != int32(m.shift[i]) {
					t.Fatalf("seed %d step %d: shifts %v %v at cell %d want %d", seed, step, cells, delta, i, m.shift[i])
				}
				k++
			}
			m.shift[i] = 0
		}
		if k != len(cells) {
			t.Fatalf("seed %d step %d: extra shifts %v", seed, step, cells)
		}
	}
}

func FuzzOps(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Add([]byte{255, 0, 255, 0, 17, 3, 99})
	f.Fuzz(func(t *testing.T, data []byte) {
		c, _ := New(16, 4)
		next := func() int {
			if len(data) == 0 {
				return 0
			}
			v := int(data[0])
			data = data[1:]
			return v
		}
		for len(data) > 0 {
			seq, a, b := SeqID(next()%6-1), Pos(next()%20-3), Pos(next()%20-3)
			switch next() % 7 {
			case 0:
				bt := Batch{Pos: []Pos{a, b}, Seq: [][]SeqID{{seq}, {SeqID(next() % 5)}}}
				if s, err := c.Prepare(bt); err == nil {
					c.Apply(s)
				}
			case 1:
				c.SeqRm(seq, a, b)
			case 2:
				c.SeqCp(seq, SeqID(next()%5), a, b)
			case 3:
				c.SeqKeep(seq)
			case 4:
				c.SeqAdd(seq, a, b, Pos(next()-128))
			case 5:
				c.SeqDiv(seq, a, b, next()%4)
			case 6:
				c.TakeShifts()
			}
			n := 0
			for i := range c.cells {
				if c.SeqCount(i) > 0 {
					n++
				}
			}
			if n != c.Used() {
				t.Fatalf("used %d, counted %d", c.Used(), n)
			}
		}
	})
}
