package kv

import (
	"errors"
	"slices"
	"testing"
)

// TestVisibleWindow checks the sliding-window rule: with window w, token
// i sees the cells Visible lists whose positions are > pos_i − w, in the
// same order, and the width shrinks to the longest windowed row.
func TestVisibleWindow(t *testing.T) {
	c := newCache(t, 16, 2)
	mustApply(t, c, batch(0, 0, 1, 2, 3, 4, 5)) // cells 0..5
	mustApply(t, c, batch(1, 0, 1, 2))          // cells 6..8
	b := Batch{Pos: []Pos{6, 3, 7}, Seq: [][]SeqID{{0}, {1}, {0, 1}}}
	mustApply(t, c, b) // cells 9..11
	all := [][]int32{{0, 1, 2, 3, 4, 5, 9}, {6, 7, 8, 10}, {0, 6, 1, 7, 2, 8, 3, 10, 4, 5, 9, 11}}
	cases := []struct {
		window int
		rows   [][]int32
	}{
		{0, all},
		{3, [][]int32{{4, 5, 9}, {7, 8, 10}, {5, 9, 11}}}, // positions > 3, > 0, > 4
		{1, [][]int32{{9}, {10}, {11}}},                   // only its own position
		{100, all},
	}
	for _, tc := range cases {
		vis, width, err := c.VisibleWindow(b, tc.window, nil)
		mustNil(t, err)
		w := 0
		for _, r := range tc.rows {
			w = max(w, len(r))
		}
		if width != w {
			t.Fatalf("window %d: width %d, want %d", tc.window, width, w)
		}
		for i, r := range tc.rows {
			row := vis[i*width : (i+1)*width]
			want := append(slices.Clone(r), slices.Repeat([]int32{-1}, width-len(r))...)
			if !slices.Equal(row, want) {
				t.Errorf("window %d row %d = %v, want %v", tc.window, i, row, want)
			}
		}
	}
	if _, _, err := c.VisibleWindow(b, -1, nil); !errors.Is(err, ErrBadArg) {
		t.Errorf("negative window: %v, want ErrBadArg", err)
	}
}

// TestWindowReuse checks SetWindow: a full cache reuses the cells no
// later position can see (the lowest first), never one the batch or a
// later token can still see, and Rollback brings the old cells back.
func TestWindowReuse(t *testing.T) {
	c := newCache(t, 6, 2)
	mustNil(t, c.SetWindow(3))
	mustApply(t, c, batch(0, 0, 1, 2, 3)) // cells 0..3
	mustApply(t, c, batch(1, 0, 1))       // cells 4, 5
	before := view(c)

	// Seq 0's next position 4 sees positions 2, 3, 4: cells 0 and 1
	// (positions 0, 1) are out. Seq 1's (next 2) see 0 and 1: none.
	s, err := c.Prepare(batch(0, 4, 5))
	mustNil(t, err)
	if !slices.Equal(s.Cells(), []int32{0, 1}) {
		t.Fatalf("cells %v, want [0 1]", s.Cells())
	}
	mustNil(t, c.Apply(s))
	if c.SeqPosMin(0) != 2 || c.SeqPosMax(0) != 5 || c.Used() != 6 {
		t.Fatalf("after reuse: seq 0 in [%d, %d], %d used", c.SeqPosMin(0), c.SeqPosMax(0), c.Used())
	}
	mustNil(t, c.Rollback(s))
	if got := view(c); !sameView(got, before) || c.SeqPosMin(0) != 0 || c.Used() != 6 {
		t.Fatalf("after rollback: %v, want %v", got, before)
	}

	// A batch starting lower limits the reuse: seq 0 at 4..6 needs cells
	// after position 1, and 3 tokens find only 2 cells out of the window.
	if _, err := c.Prepare(batch(0, 4, 5, 6)); !errors.Is(err, ErrNoSlot) {
		t.Fatalf("3 tokens, 2 reusable cells: %v, want ErrNoSlot", err)
	}
	// Seq 1 gets nothing from seq 0's old cells unless seq 0 is done with
	// them: cells 0 and 1 are out of seq 0's window whoever asks.
	s, err = c.Prepare(batch(1, 2))
	mustNil(t, err)
	if !slices.Equal(s.Cells(), []int32{0}) {
		t.Fatalf("seq 1: cells %v, want [0]", s.Cells())
	}
	// Without a window nothing is reused.
	mustNil(t, c.SetWindow(0))
	if _, err := c.Prepare(batch(0, 4)); !errors.Is(err, ErrNoSlot) {
		t.Fatalf("no window: %v, want ErrNoSlot", err)
	}
	if err := c.SetWindow(-1); !errors.Is(err, ErrBadArg) {
		t.Errorf("negative window: %v", err)
	}

	// A cell shared by two sequences is reused only when out of both
	// windows: cell 0 (position 0, seqs 0 and 1) is out of seq 0's window
	// for position 3 but not of seq 1's (next position 1); cell 1 is.
	c = newCache(t, 3, 2)
	mustNil(t, c.SetWindow(2))
	mustApply(t, c, batch(0, 0))
	mustNil(t, c.SeqCp(0, 1, -1, -1))
	mustApply(t, c, batch(0, 1, 2)) // seq 0 at 0..2, seq 1 at 0
	if s, err := c.Prepare(batch(0, 3)); err != nil || !slices.Equal(s.Cells(), []int32{1}) {
		t.Fatalf("shared cell: %v %v, want cell 1", s, err)
	}
	if _, err := c.Prepare(batch(0, 3, 4)); !errors.Is(err, ErrNoSlot) {
		t.Fatalf("two tokens, one cell out of both windows: %v, want ErrNoSlot", err)
	}
}
