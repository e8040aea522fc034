package engine

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/vkllm/vkllm/errcode"
	"github.com/vkllm/vkllm/kv"
	"github.com/vkllm/vkllm/models"
)

// fakeCells is a cellStore on a bare kv.Cache: cell metadata, no K/V.
type fakeCells struct{ c *kv.Cache }

func (f fakeCells) Params() models.ContextParams {
	return models.ContextParams{ContextLen: f.c.Size(), MaxSeqs: f.c.SeqMax()}
}
func (f fakeCells) Used() int { return f.c.Used() }
func (f fakeCells) KVUsedBy(seqs []models.SeqID) int {
	ids := make([]kv.SeqID, len(seqs))
	for i, s := range seqs {
		ids[i] = kv.SeqID(s)
	}
	return f.c.UsedBy(ids)
}
func (f fakeCells) SeqCp(src, dst models.SeqID, p0, p1 int32) error {
	return f.c.SeqCp(src, dst, kv.Pos(p0), kv.Pos(p1))
}
func (f fakeCells) SeqRm(seq models.SeqID, p0, p1 int32) error {
	return f.c.SeqRm(seq, kv.Pos(p0), kv.Pos(p1))
}

// compute does what a forward pass does to the cells: q's tokens
// numCached..to-1 get cells at their positions in q's sequence.
func (f fakeCells) compute(t *testing.T, q *sequence, to int) {
	t.Helper()
	var b kv.Batch
	for p := q.numCached; p < to; p++ {
		b.Pos = append(b.Pos, kv.Pos(p))
		b.Seq = append(b.Seq, []kv.SeqID{kv.SeqID(q.seqID)})
	}
	s, err := f.c.Prepare(b)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.c.Apply(s); err != nil {
		t.Fatal(err)
	}
	q.numCached = to
}

func newTestManager(t *testing.T, cells, running, retained int, prefix bool) (*blockManager, fakeCells) {
	t.Helper()
	c, err := kv.New(cells, running+retained)
	if err != nil {
		t.Fatal(err)
	}
	f := fakeCells{c}
	return newBlockManager(f, running, retained, prefix, &counters{}), f
}

func newSeq(id string, toks []int32) *sequence {
	return &sequence{id: id, tokens: slices.Clone(toks), numPrompt: len(toks), seqID: -1}
}

// admit matches and allocates q, as the scheduler does.
func admit(t *testing.T, m *blockManager, q *sequence) hit {
	t.Helper()
	h := m.match(q)
	if err := m.allocate(q, h); err != nil {
		t.Fatal(err)
	}
	return h
}

// finish computes all of q's tokens and deallocates it.
func finish(t *testing.T, m *blockManager, f fakeCells, q *sequence) {
	t.Helper()
	f.compute(t, q, len(q.tokens))
	if err := m.deallocate(q); err != nil {
		t.Fatal(err)
	}
}

// TestBlockManagerMatch: what allocate finds of a request (can_allocate's
// question) and gives it: whole blocks of a retained prefix or of a
// running request's computed tokens, its session's common start, at least
// one token left to compute; the cached tokens are shared, not new cells.
func TestBlockManagerMatch(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	a := prompt(r, 40)
	cat := func(x []int32, n int) []int32 { return append(slices.Clone(x), prompt(r, n)...) }
	for _, tc := range []struct {
		name   string
		prefix bool
		setup  func(t *testing.T, m *blockManager, f fakeCells)
		q      *sequence
		want   int  // tokens cached
		shared bool // the cached tokens are another sequence's cells
	}{
		{"empty cache", true, nil, newSeq("q", a), 0, false},
		{"retained prefix", true, func(t *testing.T, m *blockManager, f fakeCells) {
			q := newSeq("a", a)
			admit(t, m, q)
			finish(t, m, f, q) // keeps 2 blocks
		}, newSeq("q", cat(a[:37], 5)), 2 * BlockSize, true},
		{"retained prefix, last token left", true, func(t *testing.T, m *blockManager, f fakeCells) {
			q := newSeq("a", a)
			admit(t, m, q)
			finish(t, m, f, q)
		}, newSeq("q", a[:2*BlockSize]), BlockSize, true},
		{"running request's computed blocks", true, func(t *testing.T, m *blockManager, f fakeCells) {
			q := newSeq("a", a)
			admit(t, m, q)
			f.compute(t, q, 20) // one whole block computed
		}, newSeq("q", cat(a, 3)), BlockSize, true},
		{"prefix caching off", false, func(t *testing.T, m *blockManager, f fakeCells) {
			q := newSeq("a", a)
			admit(t, m, q)
			f.compute(t, q, 40)
		}, newSeq("q", cat(a, 3)), 0, false},
		{"idle session", false, func(t *testing.T, m *blockManager, f fakeCells) {
			q := newSeq("a", a)
			q.session = "s"
			admit(t, m, q)
			finish(t, m, f, q)
		}, &sequence{id: "q", tokens: cat(a[:27], 4), session: "s", seqID: -1}, 27, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, f := newTestManager(t, 128, 2, 2, tc.prefix)
			if tc.setup != nil {
				tc.setup(t, m, f)
			}
			used := f.c.Used()
			h := admit(t, m, tc.q)
			if h.n != tc.want || tc.q.numCached != tc.want || tc.q.numReused != tc.want {
				t.Fatalf("cached %d (numCached %d, numReused %d), want %d", h.n, tc.q.numCached, tc.q.numReused, tc.want)
			}
			if got := int(f.c.SeqPosMax(kv.SeqID(tc.q.seqID))) + 1; got != tc.want {
				t.Fatalf("the sequence holds positions up to %d, want %d", got, tc.want)
			}
			if tc.shared && f.c.Used() != used {
				t.Fatalf("sharing %d tokens took %d new cells", tc.want, f.c.Used()-used)
			}
		})
	}
}

// TestBlockManagerRetainedBudget: retained sequences keep to their own
// budget of ids, the least recently used prefix giving way; a prefix
// never pushes out an idle session; with no budget nothing is kept.
func TestBlockManagerRetainedBudget(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	a, b, c := prompt(r, 33), prompt(r, 33), prompt(r, 33)
	t.Run("LRU prefix gives way", func(t *testing.T) {
		m, f := newTestManager(t, 256, 1, 2, true)
		for _, p := range [][]int32{a, b} {
			q := newSeq("x", p)
			admit(t, m, q)
			finish(t, m, f, q)
		}
		q := newSeq("a again", slices.Concat(a, []int32{7}))
		if h := admit(t, m, q); h.n != 2*BlockSize { // a is now more recent than b
			t.Fatalf("a matched %d tokens", h.n)
		}
		if err := m.release(q); err != nil {
			t.Fatal(err)
		}
		q = newSeq("c", c)
		admit(t, m, q)
		finish(t, m, f, q) // the budget is full: b goes
		for _, tc := range []struct {
			p    []int32
			want int
		}{{a, 2 * BlockSize}, {b, 0}, {c, 2 * BlockSize}} {
			if h := m.match(newSeq("q", slices.Concat(tc.p, []int32{7}))); h.n != tc.want {
				t.Errorf("matched %d, want %d", h.n, tc.want)
			}
		}
		if len(m.pool.entries) != 2 || len(m.free) != 1 {
			t.Fatalf("%d retained, %d ids free", len(m.pool.entries), len(m.free))
		}
		if want := 2 * 2 * BlockSize; f.c.Used() != want {
			t.Fatalf("%d cells used, want %d", f.c.Used(), want)
		}
	})
	t.Run("a prefix does not push out a session", func(t *testing.T) {
		m, f := newTestManager(t, 256, 1, 1, true)
		s := newSeq("s", a)
		s.session = "s"
		admit(t, m, s)
		finish(t, m, f, s)
		q := newSeq("b", b)
		admit(t, m, q)
		finish(t, m, f, q)
		if m.pool.sessions["s"] == nil || len(m.pool.entries) != 1 || f.c.Used() != len(a) {
			t.Fatalf("session kept: %v, %d retained, %d cells used", m.pool.sessions["s"] != nil, len(m.pool.entries), f.c.Used())
		}
	})
	t.Run("no budget", func(t *testing.T) {
		m, f := newTestManager(t, 256, 1, 0, true)
		q := newSeq("a", a)
		admit(t, m, q)
		finish(t, m, f, q)
		if len(m.pool.entries) != 0 || f.c.Used() != 0 || len(m.free) != 1 {
			t.Fatalf("%d retained, %d cells used, %d ids free", len(m.pool.entries), f.c.Used(), len(m.free))
		}
	})
}

// TestBlockManagerEvict: evictLRU takes the least recently used retained
// sequence but keep, frees its id and the cells no one else holds.
func TestBlockManagerEvict(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	a, b := prompt(r, 32), prompt(r, 32)
	m, f := newTestManager(t, 256, 2, 2, true)
	for _, p := range [][]int32{a, b} {
		q := newSeq("x", p)
		admit(t, m, q)
		finish(t, m, f, q)
	}
	q := newSeq("q", slices.Concat(a[:BlockSize], []int32{5})) // shares a's first block, touches a
	if h := admit(t, m, q); h.n != BlockSize {
		t.Fatalf("matched %d", h.n)
	}
	ea := m.pool.entries[m.match(newSeq("a", slices.Concat(a, []int32{1}))).src]
	if ok, err := m.evictLRU(ea); !ok || err != nil { // b: least recently used
		t.Fatal(ok, err)
	}
	if f.c.Used() != len(a) || len(m.free) != 2 {
		t.Fatalf("after evicting b: %d cells used, %d ids free", f.c.Used(), len(m.free))
	}
	if ok, err := m.evictLRU(ea); ok || err != nil {
		t.Fatalf("evicted the kept entry: %v %v", ok, err)
	}
	if ok, err := m.evictLRU(nil); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if f.c.Used() != BlockSize || len(m.free) != 3 { // q still holds a's first block
		t.Fatalf("after evicting a: %d cells used, %d ids free", f.c.Used(), len(m.free))
	}
	if ok, _ := m.evictLRU(nil); ok {
		t.Fatal("evicted from an empty pool")
	}
}

// TestBlockManagerNoID: allocating past the ids is an error, not a panic.
func TestBlockManagerNoID(t *testing.T) {
	m, _ := newTestManager(t, 64, 1, 0, false)
	admit(t, m, newSeq("a", []int32{1, 2}))
	q := newSeq("b", []int32{1, 2})
	if err := m.allocate(q, m.match(q)); !errors.Is(err, errNoSeqID) || q.seqID != -1 {
		t.Fatalf("second allocation: %v, sequence %d", err, q.seqID)
	}
}

// TestConfigMaxSeqs: the running budget must leave it within the
// Context's ids; out of range is a BadParams error.
func TestConfigMaxSeqs(t *testing.T) {
	m, tok := tiny(t)
	ctx, err := m.NewContext(modelsParams(64, 4))
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Close()
	for _, tc := range []struct{ maxSeqs, running, free int }{{0, 2, 4}, {1, 1, 4}, {4, 4, 4}, {5, 0, 0}, {-1, 0, 0}} {
		e, err := New(m, ctx, tok, Config{MaxSeqs: tc.maxSeqs})
		if tc.running == 0 {
			if errcode.Of(err) != errcode.BadParams || !strings.Contains(err.Error(), "MaxSeqs") {
				t.Errorf("MaxSeqs %d: %v", tc.maxSeqs, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("MaxSeqs %d: %v", tc.maxSeqs, err)
		} else if e.sched.cfg.maxSeqs != tc.running || len(e.blocks.free) != tc.free {
			t.Errorf("MaxSeqs %d: %d running, %d ids", tc.maxSeqs, e.sched.cfg.maxSeqs, len(e.blocks.free))
		}
	}
}
