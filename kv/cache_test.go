package kv

import (
	"errors"
	"math"
	"slices"
	"testing"
)

// batch makes a batch of one sequence.
func batch(seq SeqID, pos ...Pos) Batch {
	b := Batch{Pos: pos}
	for range pos {
		b.Seq = append(b.Seq, []SeqID{seq})
	}
	return b
}

func newCache(t *testing.T, nCells, nSeq int) *Cache {
	t.Helper()
	c, err := New(nCells, nSeq)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func mustApply(t *testing.T, c *Cache, b Batch) *Slot {
	t.Helper()
	s, err := c.Prepare(b)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Apply(s); err != nil {
		t.Fatal(err)
	}
	return s
}

func mustNil(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// cellView is one cell for readable table tests: its position and
// sequences, position -1 when empty.
type cellView struct {
	pos  Pos
	seqs []SeqID
}

func view(c *Cache) []cellView {
	var out []cellView
	for _, cl := range c.cells {
		v := cellView{pos: -1}
		if !cl.seqs.empty() {
			v.pos = cl.pos
			cl.seqs.each(func(s SeqID) { v.seqs = append(v.seqs, s) })
		}
		out = append(out, v)
	}
	return out
}

func cv(pos Pos, seqs ...SeqID) cellView { return cellView{pos, seqs} }

var free = cellView{pos: -1}

func sameView(a, b []cellView) bool {
	return slices.EqualFunc(a, b, func(x, y cellView) bool { return x.pos == y.pos && slices.Equal(x.seqs, y.seqs) })
}

func TestNew(t *testing.T) {
	for _, tc := range []struct{ cells, seqs int }{{0, 1}, {-1, 1}, {4, 0}, {4, MaxSeqs + 1}, {math.MaxInt32 + 1, 1}} {
		if _, err := New(tc.cells, tc.seqs); !errors.Is(err, ErrBadArg) {
			t.Errorf("New(%d, %d): %v, want ErrBadArg", tc.cells, tc.seqs, err)
		}
	}
	c := newCache(t, 5, MaxSeqs)
	if c.Size() != 5 || c.SeqMax() != MaxSeqs || c.Used() != 0 || c.UsedMax() != 0 || c.SeqPosMax(0) != -1 {
		t.Fatal("new cache not empty")
	}
}

func TestPrepareFirstFit(t *testing.T) {
	c := newCache(t, 8, 3)
	mustApply(t, c, batch(0, 0, 1, 2, 3))
	mustApply(t, c, batch(1, 0, 1))
	mustNil(t, c.SeqRm(0, 1, 3)) // frees cells 1 and 2
	// Four tokens go to the lowest empty cells in batch order, not
	// contiguous: 1, 2, then 6, 7.
	s, err := c.Prepare(Batch{Pos: []Pos{9, 4, 7, 5}, Seq: [][]SeqID{{2}, {2}, {2}, {2}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Cells(); !slices.Equal(got, []int32{1, 2, 6, 7}) || s.Len() != 4 {
		t.Fatalf("cells %v", got)
	}
	mustNil(t, c.Apply(s))
	want := []cellView{cv(0, 0), cv(9, 2), cv(4, 2), cv(3, 0), cv(0, 1), cv(1, 1), cv(7, 2), cv(5, 2)}
	if got := view(c); !sameView(got, want) {
		t.Fatalf("cells\n%v\nwant\n%v", got, want)
	}
	if c.Used() != 8 || c.UsedMax() != 8 || c.SeqPosMin(2) != 4 || c.SeqPosMax(2) != 9 {
		t.Fatalf("used %d max %d seq 2 [%d, %d]", c.Used(), c.UsedMax(), c.SeqPosMin(2), c.SeqPosMax(2))
	}
}

func TestPrepareErrors(t *testing.T) {
	c := newCache(t, 8, 2)
	mustApply(t, c, batch(0, 0, 1))
	for name, b := range map[string]Batch{
		"empty":           {},
		"lengths":         {Pos: []Pos{0}},
		"negative pos":    batch(0, -1),
		"seq range":       batch(2, 5),
		"negative seq":    batch(-1, 5),
		"no seq":          {Pos: []Pos{3}, Seq: [][]SeqID{{}}},
		"dup in batch":    batch(1, 4, 4),
		"dup in set":      {Pos: []Pos{3}, Seq: [][]SeqID{{1, 1}}},
		"dup in cache":    batch(0, 1),
		"shared in cache": {Pos: []Pos{7, 0}, Seq: [][]SeqID{{1}, {1, 0}}},
	} {
		if _, err := c.Prepare(b); !errors.Is(err, ErrBadArg) {
			t.Errorf("%s: %v, want ErrBadArg", name, err)
		}
	}
	// The same position in another sequence, or a new one, is fine.
	if _, err := c.Prepare(Batch{Pos: []Pos{1, 2}, Seq: [][]SeqID{{1}, {0, 1}}}); err != nil {
		t.Fatal(err)
	}
}

// TestPrepareNoSlot: with too little room Prepare fails with ErrNoSlot,
// says how much is needed and free, and leaves the cache bit-identical.
func TestPrepareNoSlot(t *testing.T) {
	c := newCache(t, 4, 2)
	mustApply(t, c, batch(0, 0, 1, 2))
	mustNil(t, c.SeqAdd(0, 1, -1, 3)) // a pending shift too
	before := c.snap()
	_, err := c.Prepare(batch(1, 0, 1))
	if !errors.Is(err, ErrNoSlot) || errors.Is(err, ErrBadArg) {
		t.Fatalf("full cache: %v", err)
	}
	if want := "kv: no free slot: batch needs 2 cells, 1 of 4 free"; err.Error() != want {
		t.Fatalf("message %q, want %q", err, want)
	}
	if after := c.snap(); !after.sameCells(before) || after.gen != before.gen {
		t.Fatal("failed Prepare changed the cache")
	}
	// An invalid batch is reported as such even when there is no room.
	if _, err := c.Prepare(batch(0, 0, 9)); !errors.Is(err, ErrBadArg) {
		t.Fatalf("invalid and too big: %v", err)
	}
}

func TestRollbackRestoresExactly(t *testing.T) {
	c := newCache(t, 6, 3)
	mustApply(t, c, batch(0, 0, 1, 2))
	mustNil(t, c.SeqRm(0, 1, 2)) // a hole at cell 1
	mustNil(t, c.SeqAdd(0, 2, -1, 5))
	before := c.snap()
	s := mustApply(t, c, Batch{Pos: []Pos{0, 1, 9}, Seq: [][]SeqID{{1}, {1, 2}, {0}}})
	if c.Used() != 5 || c.SeqPosMax(0) != 9 || c.SeqPosMax(2) != 1 {
		t.Fatalf("after apply: used %d", c.Used())
	}
	mustNil(t, c.Rollback(s))
	if after := c.snap(); !after.sameCells(before) || after.gen != before.gen {
		t.Fatalf("Rollback did not restore:\n%+v\n%+v", after, before)
	}
	// The pending shift survived the round trip.
	if cells, delta := c.TakeShifts(); !slices.Equal(cells, []int32{2}) || !slices.Equal(delta, []int32{5}) {
		t.Fatalf("shifts %v %v", cells, delta)
	}
}

func TestStaleSlot(t *testing.T) {
	c := newCache(t, 4, 2)
	other := newCache(t, 4, 2)
	a, _ := c.Prepare(batch(0, 0))
	b, _ := c.Prepare(batch(1, 0))
	for name, f := range map[string]func() error{
		"rollback before apply": func() error { return c.Rollback(a) },
		"other cache":           func() error { return other.Apply(a) },
		"nil":                   func() error { return c.Apply(nil) },
		"nil rollback":          func() error { return c.Rollback(nil) },
	} {
		if err := f(); !errors.Is(err, ErrStaleSlot) {
			t.Errorf("%s: %v, want ErrStaleSlot", name, err)
		}
	}
	mustNil(t, c.Apply(a))
	snap := c.snap()
	// b was prepared on the state before a: its cell is taken now.
	if err := c.Apply(b); !errors.Is(err, ErrStaleSlot) {
		t.Fatalf("apply of a slot prepared before another apply: %v", err)
	}
	if err := c.Apply(a); !errors.Is(err, ErrStaleSlot) {
		t.Fatalf("second apply: %v", err)
	}
	if after := c.snap(); !after.sameCells(snap) || after.gen != snap.gen {
		t.Fatal("refused Apply changed the cache")
	}
	mustNil(t, c.SeqCp(0, 1, -1, -1))
	if err := c.Rollback(a); !errors.Is(err, ErrStaleSlot) {
		t.Fatalf("rollback after another change: %v", err)
	}
	mustNil(t, c.SeqRm(1, -1, -1)) // the cells are as after a again
	if err := c.Rollback(a); !errors.Is(err, ErrStaleSlot) {
		t.Fatalf("rollback after a change and its undo: %v (only Rollback restores a state's name)", err)
	}

	// After rolling back a, the state b was prepared on is current again.
	c2 := newCache(t, 4, 2)
	a2, _ := c2.Prepare(batch(0, 0))
	b2, _ := c2.Prepare(batch(1, 0))
	mustNil(t, c2.Apply(a2))
	mustNil(t, c2.Rollback(a2))
	if err := c2.Rollback(a2); !errors.Is(err, ErrStaleSlot) {
		t.Fatalf("second rollback: %v", err)
	}
	mustNil(t, c2.Apply(b2))
	if c2.SeqPosMax(1) != 0 || c2.SeqPosMax(0) != -1 {
		t.Fatal("b2 not applied")
	}
	if err := c2.Rollback(a2); !errors.Is(err, ErrStaleSlot) {
		t.Fatalf("rollback of a2 over b2: %v", err)
	}
}

// TestVisible checks the rule on a hand-made cache: cell j is visible to
// token i iff it is not empty, shares a sequence with i, and pos ≤ i's
// pos; a row lists those cells by position, then -1.
func TestVisible(t *testing.T) {
	c := newCache(t, 8, 3)
	mustApply(t, c, batch(0, 0, 1))   // cells 0, 1
	mustNil(t, c.SeqCp(0, 1, -1, -1)) // seq 1 shares them
	mustApply(t, c, batch(1, 2))      // cell 2
	mustApply(t, c, batch(2, 0))      // cell 3
	b := Batch{Pos: []Pos{2, 3, 1, 5}, Seq: [][]SeqID{{0}, {1}, {2}, {0, 2}}}
	mustApply(t, c, b) // cells 4..7
	want := []cellView{cv(0, 0, 1), cv(1, 0, 1), cv(2, 1), cv(0, 2), cv(2, 0), cv(3, 1), cv(1, 2), cv(5, 0, 2)}
	if got := view(c); !sameView(got, want) {
		t.Fatalf("cells %v, want %v", got, want)
	}
	rows := [][]int32{
		{0, 1, 4},          // pos 2, seq 0: not seq 1's cell 2, not pos 5
		{0, 1, 2, 5},       // pos 3, seq 1
		{3, 6},             // pos 1, seq 2
		{0, 3, 1, 6, 4, 7}, // pos 5, seqs 0 and 2: the union, by position (ties by cell)
	}
	check := func(dst []int32) {
		t.Helper()
		vis, width, err := c.Visible(b, dst)
		mustNil(t, err)
		w := 0
		for _, r := range rows {
			w = max(w, len(r))
		}
		if width != w || len(vis) != len(b.Pos)*w {
			t.Fatalf("width %d and %d values, want %d and %d", width, len(vis), w, len(b.Pos)*w)
		}
		if cap(dst) >= len(vis) && &vis[0] != &dst[:1][0] {
			t.Errorf("rows not in dst's memory though it has room for them")
		}
		for i, r := range rows {
			for j := range width {
				want := int32(-1)
				if j < len(r) {
					want = r[j]
				}
				if vis[i*width+j] != want {
					t.Errorf("row %d = %v, want %v then -1", i, vis[i*width:(i+1)*width], r)
					break
				}
			}
		}
	}
	check(nil)
	check(make([]int32, 64))     // room to spare: the rows are its first values
	check(make([]int32, 23))     // one short: a new slice
	mustNil(t, c.SeqRm(1, 2, 3)) // cell 2 becomes empty: no one sees it
	rows[1] = []int32{0, 1, 5}
	check(nil)

	// Placement: a sequence whose cells are out of position order is
	// listed by position.
	c2 := newCache(t, 6, 2)
	mustApply(t, c2, batch(1, 0, 1, 2)) // cells 0..2 for seq 1
	mustApply(t, c2, batch(0, 0, 1))    // cells 3, 4 for seq 0
	mustNil(t, c2.SeqRm(1, -1, -1))     // frees 0..2
	mustApply(t, c2, batch(0, 2, 3, 4)) // seq 0 goes on in cells 0, 1, 2
	if vis, _, err := c2.Visible(batch(0, 4), nil); err != nil || !slices.Equal(vis, []int32{3, 4, 0, 1, 2}) {
		t.Fatalf("refilled sequence: %v %v, want [3 4 0 1 2]", vis, err)
	}
	// A token that sees no cell (Visible before Apply) still gets a row.
	if vis, width, err := c2.Visible(batch(1, 0), nil); err != nil || width != 1 || !slices.Equal(vis, []int32{-1}) {
		t.Fatalf("token seeing nothing: %v width %d %v, want [-1] width 1", vis, width, err)
	}

	dst := make([]int32, 32)
	for i := range dst {
		dst[i] = 42
	}
	for name, f := range map[string]func() error{
		"lengths":      func() error { _, _, err := c.Visible(Batch{Pos: []Pos{1}}, dst); return err },
		"seq range":    func() error { _, _, err := c.Visible(batch(3, 1), dst); return err },
		"seq negative": func() error { _, _, err := c.Visible(batch(-1, 1), dst); return err },
	} {
		if err := f(); !errors.Is(err, ErrBadArg) {
			t.Errorf("%s: %v, want ErrBadArg", name, err)
		}
	}
	for _, v := range dst {
		if v != 42 {
			t.Fatalf("a failed Visible wrote dst: %v", dst)
		}
	}
}

func TestSeqOps(t *testing.T) {
	// The starting cache: seq 0 at 0..3 in cells 0..3, seq 1 sharing 0..1
	// and owning 2 in cell 4, seq 2 at 5 in cell 5; cells 6, 7 empty.
	setup := func(t *testing.T) *Cache {
		c := newCache(t, 8, 3)
		mustApply(t, c, batch(0, 0, 1, 2, 3))
		mustNil(t, c.SeqCp(0, 1, 0, 2))
		mustApply(t, c, batch(1, 2))
		mustApply(t, c, batch(2, 5))
		return c
	}
	start := []cellView{cv(0, 0, 1), cv(1, 0, 1), cv(2, 0), cv(3, 0), cv(2, 1), cv(5, 2), free, free}
	tests := []struct {
		name   string
		op     func(t *testing.T, c *Cache) error
		want   []cellView
		shifts []int32 // cell, delta pairs
	}{
		{"rm seq range", func(t *testing.T, c *Cache) error { return c.SeqRm(0, 1, 3) },
			[]cellView{cv(0, 0, 1), cv(1, 1), free, cv(3, 0), cv(2, 1), cv(5, 2), free, free}, nil},
		{"rm seq all", func(t *testing.T, c *Cache) error { return c.SeqRm(1, -1, -1) },
			[]cellView{cv(0, 0), cv(1, 0), cv(2, 0), cv(3, 0), free, cv(5, 2), free, free}, nil},
		{"rm any seq", func(t *testing.T, c *Cache) error { return c.SeqRm(-1, 1, 3) },
			[]cellView{cv(0, 0, 1), free, free, cv(3, 0), free, cv(5, 2), free, free}, nil},
		{"rm open start", func(t *testing.T, c *Cache) error { return c.SeqRm(0, -5, 2) },
			[]cellView{cv(0, 1), cv(1, 1), cv(2, 0), cv(3, 0), cv(2, 1), cv(5, 2), free, free}, nil},
		{"rm empty range", func(t *testing.T, c *Cache) error { return c.SeqRm(0, 3, 3) }, start, nil},
		{"rm reversed range", func(t *testing.T, c *Cache) error { return c.SeqRm(0, 3, 1) }, start, nil},
		{"cp range", func(t *testing.T, c *Cache) error { return c.SeqCp(0, 2, 2, -1) },
			[]cellView{cv(0, 0, 1), cv(1, 0, 1), cv(2, 0, 2), cv(3, 0, 2), cv(2, 1), cv(5, 2), free, free}, nil},
		{"cp to self", func(t *testing.T, c *Cache) error { return c.SeqCp(1, 1, -1, -1) }, start, nil},
		{"keep", func(t *testing.T, c *Cache) error { return c.SeqKeep(1) },
			[]cellView{cv(0, 1), cv(1, 1), free, free, cv(2, 1), free, free, free}, nil},
		{"add moves shared cells", func(t *testing.T, c *Cache) error { return c.SeqAdd(1, 1, -1, 10) },
			[]cellView{cv(0, 0, 1), cv(11, 0, 1), cv(2, 0), cv(3, 0), cv(12, 1), cv(5, 2), free, free},
			[]int32{1, 10, 4, 10}},
		{"add below zero removes", func(t *testing.T, c *Cache) error { return c.SeqAdd(0, -1, -1, -2) },
			[]cellView{free, free, cv(0, 0), cv(1, 0), cv(2, 1), cv(5, 2), free, free},
			[]int32{2, -2, 3, -2}},
		{"add zero", func(t *testing.T, c *Cache) error { return c.SeqAdd(0, -1, -1, 0) }, start, nil},
		{"div", func(t *testing.T, c *Cache) error { return c.SeqDiv(0, 1, -1, 2) },
			[]cellView{cv(0, 0, 1), cv(0, 0, 1), cv(1, 0), cv(1, 0), cv(2, 1), cv(5, 2), free, free},
			[]int32{1, -1, 2, -1, 3, -2}},
		{"div by one", func(t *testing.T, c *Cache) error { return c.SeqDiv(0, -1, -1, 1) }, start, nil},
		{"add then add accumulates", func(t *testing.T, c *Cache) error {
			mustNil(t, c.SeqAdd(2, -1, -1, 4))
			return c.SeqAdd(2, -1, -1, -1)
		}, []cellView{cv(0, 0, 1), cv(1, 0, 1), cv(2, 0), cv(3, 0), cv(2, 1), cv(8, 2), free, free},
			[]int32{5, 3}},
		{"add then div accumulates", func(t *testing.T, c *Cache) error {
			mustNil(t, c.SeqAdd(2, -1, -1, 4)) // 5 → 9
			return c.SeqDiv(2, -1, -1, 4)      // 9 → 2
		}, []cellView{cv(0, 0, 1), cv(1, 0, 1), cv(2, 0), cv(3, 0), cv(2, 1), cv(2, 2), free, free},
			[]int32{5, -3}},
		{"moves that cancel leave no shift", func(t *testing.T, c *Cache) error {
			mustNil(t, c.SeqAdd(2, -1, -1, 4))
			return c.SeqAdd(2, -1, -1, -4)
		}, start, nil},
		{"removed cell forgets its shift", func(t *testing.T, c *Cache) error {
			mustNil(t, c.SeqAdd(2, -1, -1, 4))
			return c.SeqRm(2, -1, -1)
		}, []cellView{cv(0, 0, 1), cv(1, 0, 1), cv(2, 0), cv(3, 0), cv(2, 1), free, free, free}, nil},
		{"clear", func(t *testing.T, c *Cache) error { c.Clear(); return nil },
			[]cellView{free, free, free, free, free, free, free, free}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := setup(t)
			mustNil(t, tc.op(t, c))
			if got := view(c); !sameView(got, tc.want) {
				t.Fatalf("cells\n%v\nwant\n%v", got, tc.want)
			}
			if err := c.invariants(); err != nil {
				t.Fatal(err)
			}
			cells, delta := c.TakeShifts()
			var got []int32
			for i := range cells {
				got = append(got, cells[i], delta[i])
			}
			if !slices.Equal(got, tc.shifts) {
				t.Fatalf("shifts %v, want %v", got, tc.shifts)
			}
			if cells, _ := c.TakeShifts(); cells != nil {
				t.Fatalf("shifts not cleared: %v", cells)
			}
		})
	}
}

func TestSeqOpErrors(t *testing.T) {
	c := newCache(t, 4, 2)
	mustApply(t, c, batch(0, 0, math.MaxInt32-1))
	before := c.snap()
	for name, f := range map[string]func() error{
		"rm range":     func() error { return c.SeqRm(2, -1, -1) },
		"cp src":       func() error { return c.SeqCp(2, 0, -1, -1) },
		"cp dst":       func() error { return c.SeqCp(0, -1, -1, -1) },
		"keep":         func() error { return c.SeqKeep(-1) },
		"add seq":      func() error { return c.SeqAdd(-1, -1, -1, 1) },
		"add overflow": func() error { return c.SeqAdd(0, -1, -1, 2) },
		"div seq":      func() error { return c.SeqDiv(5, -1, -1, 2) },
		"div zero":     func() error { return c.SeqDiv(0, -1, -1, 0) },
		"div negative": func() error { return c.SeqDiv(0, -1, -1, -2) },
	} {
		if err := f(); !errors.Is(err, ErrBadArg) {
			t.Errorf("%s: %v, want ErrBadArg", name, err)
		}
		if after := c.snap(); !after.sameCells(before) || after.gen != before.gen {
			t.Fatalf("%s changed the cache", name)
		}
	}
	// The largest position is reachable, and removable with an open end.
	mustNil(t, c.SeqAdd(0, 1, -1, 1))
	if c.SeqPosMax(0) != math.MaxInt32 {
		t.Fatalf("max %d", c.SeqPosMax(0))
	}
	mustNil(t, c.SeqRm(0, 5, -1))
	if c.SeqPosMax(0) != 0 || c.Used() != 1 {
		t.Fatalf("max %d used %d", c.SeqPosMax(0), c.Used())
	}
	if c.SeqPosMin(7) != -1 || c.SeqPosMax(-3) != -1 {
		t.Fatal("out of range id")
	}
}

func TestCheckConsecutive(t *testing.T) {
	c := newCache(t, 16, 3)
	mustApply(t, c, batch(0, 0, 1, 2))
	mustNil(t, c.SeqCp(0, 1, -1, -1))
	mustApply(t, c, batch(2, 0))
	for _, tc := range []struct {
		name string
		b    Batch
		ok   bool
	}{
		{"continues", batch(0, 3, 4), true},
		{"decreasing", batch(0, 4, 3), false},
		{"interleaved", Batch{Pos: []Pos{3, 1, 4, 2}, Seq: [][]SeqID{{0}, {2}, {0}, {2}}}, true},
		{"restart", batch(2, 7, 8), false}, // seq 2 holds 0
		{"gap after cache", batch(0, 4), false},
		{"gap in batch", batch(0, 3, 5), false},
		{"coupled equal", Batch{Pos: []Pos{3}, Seq: [][]SeqID{{0, 1}}}, true},
		{"coupled diverged", Batch{Pos: []Pos{3}, Seq: [][]SeqID{{0, 2}}}, false},
		{"invalid", batch(5, 0), false},
	} {
		if err := c.CheckConsecutive(tc.b); (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrBadArg)) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	c2 := newCache(t, 4, 1)
	mustNil(t, c2.CheckConsecutive(batch(0, 7, 8))) // an empty seq may start anywhere
}

// TestBatchInvariance: a sequence's tokens land in ascending cells in
// position order, the same cells however the input is split into batches.
func TestBatchInvariance(t *testing.T) {
	one := newCache(t, 16, 2)
	mustApply(t, one, batch(0, 0, 1, 2, 3, 4, 5))
	split := newCache(t, 16, 2)
	mustApply(t, split, batch(0, 0, 1))
	mustApply(t, split, batch(0, 2))
	mustApply(t, split, batch(0, 3, 4, 5))
	if !sameView(view(one), view(split)) {
		t.Fatalf("%v\n%v", view(one), view(split))
	}
	for i, v := range view(one)[:6] {
		if v.pos != Pos(i) {
			t.Fatalf("cell %d holds position %d", i, v.pos)
		}
	}
}
