package kv

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
)

// Visible lists, for each token i of batch b, the cells it may attend
// to (the mask rule: not empty, sharing a sequence with token i, position
// ≤ b.Pos[i]) as row i of rows, (len(b.Pos), width) row-major: the cells
// in ascending position (ties, which only SeqCp, SeqAdd or SeqDiv can
// make, by cell index), then -1 to the end of the row. width is the
// longest row's count, at least 1, so it never exceeds UsedMax (or 1):
// the rows follow the cells in use, not Size. rows is dst[:len(b.Pos)*width]
// when dst has the capacity, else a new slice.
//
// The order is what makes attention placement-invariant: a backend sums
// a token's cells in the order of its row, so a sequence's results do
// not depend on which cells it occupies or what else is in the cache.
//
// Call it after Apply, so each token sees its own cell. Visible checks
// that len(b.Seq) == len(b.Pos) and that the sequence ids are in
// [0, SeqMax()); errors wrap ErrBadArg, and dst is untouched then. A
// token in several sequences sees the union of their cells.
func (c *Cache) Visible(b Batch, dst []int32) (rows []int32, width int, err error) {
	return c.VisibleWindow(b, 0, dst)
}

// VisibleWindow is Visible with a sliding window: with window > 0, token
// i sees only the cells whose positions are also > b.Pos[i] − window
// (transformers' and llama.cpp's sliding-window mask: the window
// positions ending at its own). window 0 is Visible; a negative window
// is an error wrapping ErrBadArg.
func (c *Cache) VisibleWindow(b Batch, window int, dst []int32) (rows []int32, width int, err error) {
	if window < 0 {
		return nil, 0, fmt.Errorf("%w: window %d", ErrBadArg, window)
	}
	n := len(b.Pos)
	if len(b.Seq) != n {
		return nil, 0, fmt.Errorf("%w: %d positions and %d sequence sets", ErrBadArg, n, len(b.Seq))
	}
	v := &c.vis
	if cap(v.sets) < n {
		v.sets, v.counts, v.starts = make([]seqSet, n), make([]int, n), make([]int, n)
	}
	sets, counts, starts := v.sets[:n], v.counts[:n], v.starts[:n]
	clear(sets)
	for i := range n {
		for _, s := range b.Seq[i] {
			if err := c.checkSeq(s); err != nil {
				return nil, 0, fmt.Errorf("%w (batch index %d)", err, i)
			}
			sets[i].add(s)
		}
	}
	// Tokens of one sequence set share their candidate cells, apart from
	// the position test: list them once per distinct set, by position,
	// and a token's cells are the prefix up to its position. The cells
	// of a set are mostly in position order already (a sequence fills
	// cells first fit), which the sort handles in about linear time. The
	// lists' memory is the Cache's, reused by the next call.
	if v.index == nil {
		v.index = map[seqSet]int{}
	}
	clear(v.index)
	width = 1
	for i, p := range b.Pos {
		k, ok := v.index[sets[i]]
		if !ok {
			k = len(v.index)
			if k == len(v.lists) {
				v.lists = append(v.lists, nil)
			}
			l := v.lists[k][:0]
			for j := range c.usedMax {
				if c.cells[j].seqs.intersects(&sets[i]) {
					l = append(l, int32(j))
				}
			}
			slices.SortFunc(l, func(x, y int32) int {
				return cmp.Or(cmp.Compare(c.cells[x].pos, c.cells[y].pos), cmp.Compare(x, y))
			})
			v.lists[k], v.index[sets[i]] = l, k
		}
		l := v.lists[k]
		counts[i] = sort.Search(len(l), func(k int) bool { return c.cells[l[k]].pos > p })
		starts[i] = 0
		if window > 0 {
			lo := int64(p) - int64(window) // cells at positions > lo
			starts[i] = sort.Search(counts[i], func(k int) bool { return int64(c.cells[l[k]].pos) > lo })
		}
		width = max(width, counts[i]-starts[i])
	}
	if cap(dst) < n*width {
		dst = make([]int32, n*width)
	}
	rows = dst[:n*width]
	for i := range n {
		row := rows[i*width : (i+1)*width]
		k := copy(row, v.lists[v.index[sets[i]]][starts[i]:counts[i]])
		for j := k; j < width; j++ {
			row[j] = -1
		}
	}
	return rows, width, nil
}

// visScratch is Visible's memory, kept between calls: each token's
// sequence set, count and first cell in its window, and one list of
// cells per distinct set.
type visScratch struct {
	sets   []seqSet
	counts []int
	starts []int
	index  map[seqSet]int // a set → its list in lists, this call
	lists  [][]int32
}
