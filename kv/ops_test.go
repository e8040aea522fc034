package kv

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// source drives the operation checker: random numbers for the property
// test, the fuzzer's bytes for FuzzOps.
type source interface {
	intn(n int) int // in [0, n)
}

type randSource struct{ r *rand.Rand }

func (s randSource) intn(n int) int { return s.r.IntN(n) }

// byteSource reads the fuzzer's bytes; 0 once they run out.
type byteSource struct{ b []byte }

func (s *byteSource) intn(n int) int {
	if len(s.b) == 0 || n <= 1 {
		return 0
	}
	v := int(s.b[0])
	s.b = s.b[1:]
	if n > 256 {
		v = v<<8 | s.intn(256)
	}
	return v % n
}

// checker runs operations on a Cache and on the naive model and fails at
// the first difference.
type checker struct {
	t     testing.TB
	src   source
	c     *Cache
	m     *naive
	nSeq  int
	slots []slotRec
	step  int
	log   []string // the operations so far, printed on failure
}

// slotRec remembers a slot with the model state it was prepared on and
// (if applied) the state right after Apply.
type slotRec struct {
	s          *Slot
	b          Batch
	before     *naive   // model state at Prepare
	snapBefore snapshot // cache state at Prepare
	afterApply *naive   // model state right after a successful Apply
}

func newChecker(t testing.TB, src source, nCells, nSeq int) *checker {
	c, err := New(nCells, nSeq)
	if err != nil {
		t.Fatal(err)
	}
	return &checker{t: t, src: src, c: c, m: newNaive(nCells, nSeq), nSeq: nSeq}
}

func (k *checker) fail(format string, args ...any) {
	k.t.Helper()
	tail := k.log[max(0, len(k.log)-30):]
	k.t.Fatalf("step %d: %s\nlast operations:\n  %s", k.step, fmt.Sprintf(format, args...), joinLines(tail))
}

func joinLines(s []string) string {
	out := ""
	for i, l := range s {
		if i > 0 {
			out += "\n  "
		}
		out += l
	}
	return out
}

func (k *checker) logf(format string, args ...any) {
	if len(k.log) == 64 {
		k.log = append(k.log[:0], k.log[32:]...)
	}
	k.log = append(k.log, fmt.Sprintf(format, args...))
}

// seq picks a sequence id, sometimes out of range.
func (k *checker) seq() SeqID {
	if k.src.intn(12) == 0 {
		return []SeqID{-1, SeqID(k.nSeq), MaxSeqs, math.MaxInt32}[k.src.intn(4)]
	}
	return SeqID(k.src.intn(k.nSeq))
}

// pos picks a position: mostly small so pairs collide, sometimes
// negative, sometimes near math.MaxInt32.
func (k *checker) pos() Pos {
	switch k.src.intn(16) {
	case 0:
		return Pos(-1 - k.src.intn(2))
	case 1:
		return Pos(math.MaxInt32 - k.src.intn(3))
	}
	return Pos(k.src.intn(14))
}

func (k *checker) batch() Batch {
	var b Batch
	n := 1 + k.src.intn(5)
	if k.src.intn(20) == 0 {
		n = 0
	}
	base := Pos(k.src.intn(14))
	for i := range n {
		p := base + Pos(i)
		if k.src.intn(3) == 0 {
			p = k.pos()
		}
		b.Pos = append(b.Pos, p)
		set := []SeqID{k.seq()}
		for k.src.intn(3) == 0 && len(set) < 4 {
			set = append(set, k.seq())
		}
		if k.src.intn(25) == 0 {
			set = nil
		}
		b.Seq = append(b.Seq, set)
	}
	if n > 0 && k.src.intn(25) == 0 {
		b.Seq = b.Seq[:n-1] // lengths differ
	}
	return b
}

// run performs one random operation and checks the result.
func (k *checker) run() {
	k.t.Helper()
	k.step++
	before := k.c.snap()
	c, m := k.c, k.m
	switch op := k.src.intn(16); op {
	case 0, 1, 2, 3: // Prepare, usually Apply, sometimes Rollback
		b := k.batch()
		want, werr := m.prepare(b)
		s, err := c.Prepare(b)
		k.logf("Prepare(%v) → %v", b, kind(err))
		if kind(err) != kind(werr) {
			k.fail("Prepare(%v): %v, model %v", b, err, werr)
		}
		if !before.sameCells(c.snap()) || before.gen != c.gen {
			k.fail("Prepare changed the cache")
		}
		if err != nil {
			return
		}
		if !slices.Equal(s.Cells(), want) {
			k.fail("Prepare(%v) cells %v, model %v", b, s.Cells(), want)
		}
		rec := slotRec{s: s, b: cloneBatch(b), before: m.clone(), snapBefore: c.snap()}
		scramble(b) // the slot must not depend on the caller's slices
		if k.src.intn(6) != 0 {
			k.apply(&rec)
			k.checkVisible(rec.b, c.Size())
			if k.src.intn(4) == 0 {
				k.rollback(&rec)
			}
		}
		k.slots = append(k.slots, rec)
		if len(k.slots) > 8 {
			k.slots = k.slots[1:]
		}
	case 4: // Apply or Rollback an older slot: only a state match may pass
		if len(k.slots) == 0 {
			return
		}
		rec := &k.slots[k.src.intn(len(k.slots))]
		if k.src.intn(2) == 0 {
			k.apply(rec)
		} else {
			k.rollback(rec)
		}
	case 5, 6:
		seq := k.seq()
		if k.src.intn(5) == 0 {
			seq = -1
		}
		p0, p1 := k.pos(), k.pos()
		err, werr := c.SeqRm(seq, p0, p1), m.seqRm(seq, p0, p1)
		k.logf("SeqRm(%d, %d, %d) → %v", seq, p0, p1, kind(err))
		k.same("SeqRm", err, werr, before)
	case 7:
		src, dst, p0, p1 := k.seq(), k.seq(), k.pos(), k.pos()
		err, werr := c.SeqCp(src, dst, p0, p1), m.seqCp(src, dst, p0, p1)
		k.logf("SeqCp(%d, %d, %d, %d) → %v", src, dst, p0, p1, kind(err))
		k.same("SeqCp", err, werr, before)
	case 8:
		seq := k.seq()
		err, werr := c.SeqKeep(seq), m.seqKeep(seq)
		k.logf("SeqKeep(%d) → %v", seq, kind(err))
		k.same("SeqKeep", err, werr, before)
	case 9, 10:
		seq, p0, p1 := k.seq(), k.pos(), k.pos()
		d := Pos(k.src.intn(13) - 6)
		if k.src.intn(10) == 0 {
			d = []Pos{math.MaxInt32, math.MinInt32, math.MaxInt32 - 5}[k.src.intn(3)]
		}
		err, werr := c.SeqAdd(seq, p0, p1, d), m.seqAdd(seq, p0, p1, d)
		k.logf("SeqAdd(%d, %d, %d, %d) → %v", seq, p0, p1, d, kind(err))
		k.same("SeqAdd", err, werr, before)
	case 11:
		seq, p0, p1 := k.seq(), k.pos(), k.pos()
		d := k.src.intn(5) - 1
		if k.src.intn(10) == 0 {
			d = math.MaxInt32 + 7
		}
		err, werr := c.SeqDiv(seq, p0, p1, d), m.seqDiv(seq, p0, p1, d)
		k.logf("SeqDiv(%d, %d, %d, %d) → %v", seq, p0, p1, d, kind(err))
		k.same("SeqDiv", err, werr, before)
	case 12:
		cells, delta := c.TakeShifts()
		wc, wd := m.takeShifts()
		k.logf("TakeShifts() → %v %v", cells, delta)
		if !slices.Equal(cells, wc) || !slices.Equal(delta, wd) {
			k.fail("TakeShifts: %v %v, model %v %v", cells, delta, wc, wd)
		}
		k.same("TakeShifts", nil, nil, before)
	case 13:
		if k.src.intn(4) != 0 {
			return // Clear rarely, or little would accumulate
		}
		c.Clear()
		k.m = newNaive(len(m.cells), k.nSeq)
		k.logf("Clear()")
		k.same("Clear", nil, nil, before)
	case 14: // Visible of any batch into any room, valid or not
		b := k.batch()
		k.checkVisible(b, k.src.intn(len(b.Pos)*(c.Size()+1)+1))
	case 15:
		b := k.batch()
		err, werr := c.CheckConsecutive(b), m.checkConsecutive(b)
		k.logf("CheckConsecutive(%v) → %v", b, kind(err))
		if kind(err) != kind(werr) {
			k.fail("CheckConsecutive(%v): %v, model %v", b, err, werr)
		}
		if c.snap().gen != before.gen || !before.sameCells(c.snap()) {
			k.fail("CheckConsecutive changed the cache")
		}
	}
	k.compare()
}

func (k *checker) apply(rec *slotRec) {
	k.t.Helper()
	before := k.c.snap()
	err := k.c.Apply(rec.s)
	k.logf("Apply(slot %v) → %v", rec.s.Cells(), kind(err))
	if err != nil {
		if kind(err) != "ErrStaleSlot" {
			k.fail("Apply: %v", err)
		}
		if rec.before.equal(k.m) && rec.s.prepGen == before.gen {
			k.fail("Apply refused a slot whose state is current: %v", err)
		}
		if !before.sameCells(k.c.snap()) || before.gen != k.c.gen {
			k.fail("a refused Apply changed the cache")
		}
		return
	}
	if !rec.before.equal(k.m) {
		k.fail("Apply accepted a slot prepared on another state")
	}
	k.m.apply(rec.b, rec.s.Cells())
	rec.afterApply = k.m.clone()
	if k.c.gen == before.gen {
		k.fail("Apply did not rename the state")
	}
}

func (k *checker) rollback(rec *slotRec) {
	k.t.Helper()
	before := k.c.snap()
	err := k.c.Rollback(rec.s)
	k.logf("Rollback(slot %v) → %v", rec.s.Cells(), kind(err))
	if err != nil {
		if kind(err) != "ErrStaleSlot" {
			k.fail("Rollback: %v", err)
		}
		if !before.sameCells(k.c.snap()) || before.gen != k.c.gen {
			k.fail("a refused Rollback changed the cache")
		}
		return
	}
	if rec.afterApply == nil || !rec.afterApply.equal(k.m) {
		k.fail("Rollback accepted a slot whose Apply is not the current state")
	}
	k.m = rec.before.clone()
	rec.afterApply = nil
	if after := k.c.snap(); !after.sameCells(rec.snapBefore) || after.gen != rec.snapBefore.gen {
		k.fail("Rollback did not restore the state before Apply bit for bit")
	}
}

// same checks an operation's error kind against the model's, that a
// failed operation changed nothing, and that the state's name (gen)
// changed exactly when the cells did.
func (k *checker) same(op string, err, werr error, before snapshot) {
	k.t.Helper()
	after := k.c.snap()
	if kind(err) != kind(werr) {
		k.fail("%s: %v, model %v", op, err, werr)
	}
	if err != nil && (!before.sameCells(after) || before.gen != after.gen) {
		k.fail("%s failed but changed the cache", op)
	}
	if changed := !before.sameCells(after); changed != (before.gen != after.gen) {
		k.fail("%s: cells changed %v but gen changed %v", op, changed, before.gen != after.gen)
	}
}

// checkVisible compares Visible's rows with the model's, into a dst of
// room values (too few, exactly enough or more: its rows must be in dst's
// memory whenever they fit).
func (k *checker) checkVisible(b Batch, room int) {
	k.t.Helper()
	c := k.c
	n := len(b.Pos)
	dst := make([]int32, room)
	for i := range dst {
		dst[i] = 42
	}
	vis, width, err := c.Visible(b, dst)
	bad := len(b.Seq) != n
	for i := range b.Seq {
		for _, s := range b.Seq[i] {
			bad = bad || !k.m.okSeq(s)
		}
	}
	if bad {
		if kind(err) != "ErrBadArg" {
			k.fail("Visible(%v): %v, want ErrBadArg", b, err)
		}
		for _, v := range dst {
			if v != 42 {
				k.fail("failed Visible wrote dst")
			}
		}
		return
	}
	if err != nil {
		k.fail("Visible(%v): %v", b, err)
	}
	want := k.m.visible(b)
	w := 1
	for _, r := range want {
		w = max(w, len(r))
	}
	if width != w || len(vis) != n*w {
		k.fail("Visible(%v) width %d, %d values; model %d, %d", b, width, len(vis), w, n*w)
	}
	if len(vis) > 0 && len(vis) <= cap(dst) && &vis[0] != &dst[:1][0] {
		k.fail("Visible(%v): rows not in dst's memory though they fit", b)
	}
	for i, r := range want {
		for j := range width {
			v := int32(-1)
			if j < len(r) {
				v = r[j]
			}
			if vis[i*width+j] != v {
				k.fail("Visible(%v) row %d = %v, model %v", b, i, vis[i*width:(i+1)*width], r)
				break
			}
		}
	}
	untouched := dst // a new slice: dst is as it was
	if len(vis) <= len(dst) {
		untouched = dst[len(vis):]
	}
	for _, v := range untouched {
		if v != 42 {
			k.fail("Visible(%v) wrote past its rows", b)
			break
		}
	}
}

// compare checks everything observable against the model.
func (k *checker) compare() {
	k.t.Helper()
	c, m := k.c, k.m
	if err := c.invariants(); err != nil {
		k.fail("invariants: %v", err)
	}
	if c.Used() != m.used() || c.UsedMax() != m.usedMax() {
		k.fail("Used/UsedMax %d/%d, model %d/%d", c.Used(), c.UsedMax(), m.used(), m.usedMax())
	}
	lo, hi := m.allMinMax()
	for s := SeqID(-1); int(s) <= k.nSeq; s++ {
		lo, hi := lo[s], hi[s]
		if c.SeqPosMin(s) != lo || c.SeqPosMax(s) != hi {
			k.fail("seq %d min/max %d/%d, model %d/%d", s, c.SeqPosMin(s), c.SeqPosMax(s), lo, hi)
		}
	}
	for i := range m.cells {
		cl, w := c.cells[i], m.cells[i]
		if c.SeqCount(i) != len(w.seqs) {
			k.fail("cell %d: %d sequences, model %d", i, c.SeqCount(i), len(w.seqs))
		}
		if len(w.seqs) == 0 {
			continue
		}
		if cl.pos != w.pos || cl.shift != w.shift {
			k.fail("cell %d: pos %d shift %d, model %d %d", i, cl.pos, cl.shift, w.pos, w.shift)
		}
		for s := range w.seqs {
			if !cl.seqs.has(s) {
				k.fail("cell %d lacks sequence %d", i, s)
			}
		}
	}
}

func cloneBatch(b Batch) Batch {
	o := Batch{Pos: slices.Clone(b.Pos)}
	for _, s := range b.Seq {
		o.Seq = append(o.Seq, slices.Clone(s))
	}
	return o
}

// scramble overwrites a batch's slices, as a caller reusing them would.
func scramble(b Batch) {
	for i := range b.Pos {
		b.Pos[i] = 1000 + Pos(i)
	}
	for _, s := range b.Seq {
		for j := range s {
			s[j] = 0
		}
	}
}

// TestOpsAgainstModel runs random operations on small caches and checks
// every step against the naive model.
func TestOpsAgainstModel(t *testing.T) {
	seeds, steps := 200, 300
	if !testing.Short() {
		seeds, steps = 1000, 1000
	}
	for seed := range seeds {
		r := rand.New(rand.NewPCG(uint64(seed), 0x6b76))
		nCells := 1 + r.IntN(24)
		nSeq := 1 + r.IntN(5)
		if seed%10 == 0 {
			nSeq = MaxSeqs - r.IntN(2) // ids in the last bitset word
		}
		k := newChecker(t, randSource{r}, nCells, nSeq)
		for range steps {
			k.run()
		}
	}
}

// FuzzOps reads bytes as a cache size and a sequence of operations, and
// checks each against the naive model: no panic, invariants hold.
func FuzzOps(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{7, 2, 0, 3, 1, 2, 0, 0, 5, 1, 9, 1, 2, 3, 12})
	f.Add([]byte{3, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 255, 12, 11, 0, 2, 4, 3})
	f.Add([]byte("\x10\x04prepare apply seqcp seqadd seqdiv takeshifts rollback"))
	r := rand.New(rand.NewPCG(1, 2))
	for range 8 {
		b := make([]byte, 64+r.IntN(256))
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		src := &byteSource{b: data}
		nCells := 1 + src.intn(32)
		nSeq := 1 + src.intn(6)
		if src.intn(8) == 0 {
			nSeq = MaxSeqs
		}
		k := newChecker(t, src, nCells, nSeq)
		for range 2000 { // bounds the time of one input
			if len(src.b) == 0 {
				break
			}
			k.run()
		}
	})
}
