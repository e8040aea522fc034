package engine

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/vkllm/vkllm/models"
)

// checkEmpty clears the retained sequences and checks that no cell and no
// sequence id is left in use.
func checkEmpty(t *testing.T, e *Engine, ctx *models.Context) {
	t.Helper()
	if err := e.ClearCache(); err != nil {
		t.Fatal(err)
	}
	if u := usedCells(ctx); u != 0 {
		t.Fatalf("%d cells in use", u)
	}
	if n := len(e.blocks.free); n != ctx.Params().MaxSeqs {
		t.Fatalf("%d sequence ids free, want %d", n, ctx.Params().MaxSeqs)
	}
}

// run1 runs one request to the end.
func run1(t *testing.T, e *Engine, r Request) *result {
	t.Helper()
	if err := e.Add(r); err != nil {
		t.Fatal(err)
	}
	return drain(t, e)[r.ID]
}

// TestPrefixCacheReuse: a prompt that shares whole blocks with a finished
// one computes only the rest, and its output equals a fresh engine's.
func TestPrefixCacheReuse(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	shared := prompt(r, 37) // two whole blocks and 5 tokens
	a := append(slices.Clone(shared), prompt(r, 4)...)
	b := append(slices.Clone(shared), prompt(r, 9)...)
	for name, p := range mixed() {
		t.Run(name, func(t *testing.T) {
			e, ctx := newEngine(t, modelsParams(256, 4), Config{PrefixCache: true})
			run1(t, e, Request{ID: "a", Prompt: a, Params: p})
			got := run1(t, e, Request{ID: "b", Prompt: b, Params: p})
			fresh, _ := newEngine(t, modelsParams(256, 4), Config{})
			want := run1(t, fresh, Request{ID: "b", Prompt: b, Params: p})
			if !slices.Equal(got.tokens, want.tokens) || got.text != want.text {
				t.Fatalf("with the cached prefix %v, fresh %v", got.tokens, want.tokens)
			}
			if got.usage.CachedTokens != 2*BlockSize {
				t.Fatalf("cached tokens %d, want %d", got.usage.CachedTokens, 2*BlockSize)
			}
			st := e.Stats()
			if st.PrefixHits != 2*BlockSize || st.PrefixQueries != uint64(len(a)+len(b)) {
				t.Fatalf("prefix stats %d hits of %d queried", st.PrefixHits, st.PrefixQueries)
			}
			// the same prompt again: all whole blocks but the one holding the last token
			again := run1(t, e, Request{ID: "b2", Prompt: b, Params: p})
			if !slices.Equal(again.tokens, want.tokens) || again.usage.CachedTokens != (len(b)-1)/BlockSize*BlockSize {
				t.Fatalf("again: %v, %d cached", again.tokens, again.usage.CachedTokens)
			}
			checkEmpty(t, e, ctx)
		})
	}
}

// TestPrefixCacheUnderPressure: many prompts sharing prefixes on a cache
// too small to keep them all: retained prefixes are evicted (before
// anyone is preempted) and every output equals a large cache's without
// prefix caching.
func TestPrefixCacheUnderPressure(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 9))
	heads := [][]int32{prompt(r, 20), prompt(r, 33)}
	var prs [][]int32
	for i := range 12 {
		prs = append(prs, append(slices.Clone(heads[i%2]), prompt(r, 1+r.IntN(12))...))
	}
	for name, p := range mixed() {
		t.Run(name, func(t *testing.T) {
			big, _ := newEngine(t, modelsParams(512, 4), Config{})
			small, ctx := newEngine(t, modelsParams(96, 4), Config{PrefixCache: true, MaxBatchTokens: 32})
			hits := 0
			for round := range 3 { // in waves, so that later ones find earlier ones' blocks
				batch := prs[round*4 : round*4+4]
				want := runAll(t, big, batch, p)
				got := runAll(t, small, batch, p)
				samePerRequest(t, fmt.Sprintf("round %d", round), got, want)
				for _, g := range got {
					hits += g.usage.CachedTokens
				}
			}
			if hits == 0 {
				t.Fatal("no prefix was reused: the test does not test reuse")
			}
			t.Logf("%d tokens reused, %d preemptions", hits, small.count.preemptions)
			checkEmpty(t, small, ctx)
		})
	}
}

// TestSessionTurns: a session's second turn computes only what its cache
// lacks, the new input and the first turn's last token (drawn, never run),
// and its output equals a fresh run of the whole conversation.
func TestSessionTurns(t *testing.T) {
	r := rand.New(rand.NewPCG(10, 11))
	turn1, delta := prompt(r, 12), prompt(r, 7)
	p := greedy(9)
	e, ctx := newEngine(t, modelsParams(256, 2), Config{})
	out1 := run1(t, e, Request{ID: "t1", Prompt: turn1, Params: p, Session: "s"})
	full := append(append(slices.Clone(turn1), out1.tokens...), delta...)
	out2 := run1(t, e, Request{ID: "t2", Prompt: full, Params: p, Session: "s"})
	if computed := out2.usage.PromptTokens - out2.usage.CachedTokens; computed != len(delta)+1 {
		t.Fatalf("second turn computed %d prompt tokens, want %d (the delta and the last reply token)", computed, len(delta)+1)
	}
	fresh, _ := newEngine(t, modelsParams(256, 2), Config{})
	want := run1(t, fresh, Request{ID: "f", Prompt: full, Params: p})
	if !slices.Equal(out2.tokens, want.tokens) {
		t.Fatalf("session turn %v, fresh %v", out2.tokens, want.tokens)
	}
	if usedCells(ctx) != len(full)+len(out2.tokens)-1 {
		t.Fatalf("idle session holds %d cells, want %d", usedCells(ctx), len(full)+len(out2.tokens)-1)
	}
	// an edited history (the last turn dropped): the common start is kept
	edited := append(slices.Clone(turn1), prompt(r, 5)...)
	out3 := run1(t, e, Request{ID: "t3", Prompt: edited, Params: p, Session: "s"})
	if out3.usage.CachedTokens != len(turn1) {
		t.Fatalf("edited history reused %d tokens, want %d", out3.usage.CachedTokens, len(turn1))
	}
	want3 := run1(t, fresh, Request{ID: "f3", Prompt: edited, Params: p})
	if !slices.Equal(out3.tokens, want3.tokens) {
		t.Fatalf("edited turn %v, fresh %v", out3.tokens, want3.tokens)
	}
	if err := e.Add(Request{ID: "x", Prompt: edited, Params: p, Session: "s"}); err != nil {
		t.Fatal(err)
	}
	if err := e.Add(Request{ID: "y", Prompt: edited, Params: p, Session: "s"}); err == nil {
		t.Fatal("two unfinished requests in one session")
	}
	if err := e.EndSession("s"); err != nil {
		t.Fatal(err)
	}
	if res := drain(t, e); res["x"].reason != "abort" {
		t.Fatalf("EndSession left its request %+v", res["x"])
	}
	if u := usedCells(ctx); u != 0 {
		t.Fatalf("%d cells in use after EndSession", u)
	}
	checkEmpty(t, e, ctx)
}

// TestSessionEvicted: idle sessions give way to running requests; the
// evicted session's next turn recomputes and still equals a fresh run.
func TestSessionEvicted(t *testing.T) {
	r := rand.New(rand.NewPCG(12, 13))
	p := greedy(6)
	e, ctx := newEngine(t, modelsParams(64, 2), Config{})
	first := prompt(r, 20)
	out1 := run1(t, e, Request{ID: "s1", Prompt: first, Params: p, Session: "s"})
	// a long request needs the session's cells
	big := run1(t, e, Request{ID: "big", Prompt: prompt(r, 40), Params: greedy(10)})
	if big.reason != "length" || e.count.preemptions != 0 {
		t.Fatalf("the big request: %s, %d preemptions", big.reason, e.count.preemptions)
	}
	full := append(append(slices.Clone(first), out1.tokens...), prompt(r, 3)...)
	out2 := run1(t, e, Request{ID: "s2", Prompt: full, Params: p, Session: "s"})
	if out2.usage.CachedTokens != 0 {
		t.Fatalf("an evicted session reused %d tokens", out2.usage.CachedTokens)
	}
	fresh, _ := newEngine(t, modelsParams(64, 2), Config{})
	if want := run1(t, fresh, Request{ID: "f", Prompt: full, Params: p}); !slices.Equal(out2.tokens, want.tokens) {
		t.Fatalf("after eviction %v, fresh %v", out2.tokens, want.tokens)
	}
	checkEmpty(t, e, ctx)
}

// TestPoolVictimOrder: prefix entries go before sessions, each least
// recently used first.
func TestPoolVictimOrder(t *testing.T) {
	p := newPool()
	toks := make([]int32, 2*BlockSize)
	p.addSession("old", 0, models.NoAdapter, toks)
	p.addPrefix(1, models.NoAdapter, "", toks)
	p.addSession("new", 2, models.NoAdapter, toks)
	p.addPrefix(3, models.NoAdapter, "", toks[:BlockSize])
	var order []int32
	for len(p.entries) > 0 {
		v := p.victim(nil)
		order = append(order, v.seqID)
		p.remove(v)
	}
	if !slices.Equal(order, []int32{1, 3, 0, 2}) {
		t.Fatalf("eviction order %v", order)
	}
	if _, n := p.match(models.NoAdapter, "", toks); n != 0 {
		t.Fatalf("an empty pool matched %d tokens", n)
	}
}

// TestPrefixKeptUnderFullLoad: with as many requests running as the
// engine allows, a retained prefix keeps its cells (its id is not a
// running request's), and the next request with that prefix reuses it.
func TestPrefixKeptUnderFullLoad(t *testing.T) {
	r := rand.New(rand.NewPCG(14, 15))
	shared := prompt(r, 2*BlockSize)
	p := greedy(4)
	d := append(slices.Clone(shared), prompt(r, 5)...)
	e, ctx := fullLoadEngine(t, 2)
	run1(t, e, Request{ID: "a", Prompt: append(slices.Clone(shared), prompt(r, 3)...), Params: p})
	// two unrelated requests fill the running budget; "c" outlives "b"
	for _, q := range []Request{
		{ID: "b", Prompt: prompt(r, 10), Params: greedy(2)},
		{ID: "c", Prompt: prompt(r, 10), Params: greedy(20)},
		{ID: "d", Prompt: d, Params: p},
	} {
		if err := e.Add(q); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.Step(); err != nil {
		t.Fatal(err)
	}
	if st := e.Stats(); st.Running != 2 || st.Waiting != 1 {
		t.Fatalf("%d running, %d waiting: not a full load", st.Running, st.Waiting)
	}
	res := drain(t, e)
	if got := res["d"].usage.CachedTokens; got != len(shared) {
		t.Fatalf("the request after the full load reused %d tokens, want %d", got, len(shared))
	}
	fresh, _ := newEngine(t, modelsParams(256, 1), Config{})
	if want := run1(t, fresh, Request{ID: "d", Prompt: d, Params: p}); !slices.Equal(res["d"].tokens, want.tokens) {
		t.Fatalf("with the kept prefix %v, fresh %v", res["d"].tokens, want.tokens)
	}
	checkEmpty(t, e, ctx)
}

// fullLoadEngine is an engine with prefix caching running n requests at
// once.
func fullLoadEngine(t *testing.T, n int) (*Engine, *models.Context) {
	return newEngine(t, modelsParams(256, 2*n), Config{MaxSeqs: n, PrefixCache: true})
}

// TestAdmissionPlansUncachedTokens: a request admitted with a cached
// prefix is planned from its cached tokens on, so the step's token budget
// goes to tokens that need computing (here the rest of the budget starts
// another request), and the plan is what runs.
func TestAdmissionPlansUncachedTokens(t *testing.T) {
	r := rand.New(rand.NewPCG(16, 17))
	shared := prompt(r, 2*BlockSize)
	y := append(slices.Clone(shared), prompt(r, 5)...)
	p := greedy(3)
	e, ctx := newEngine(t, modelsParams(256, 4), Config{PrefixCache: true, MaxBatchTokens: 8})
	run1(t, e, Request{ID: "a", Prompt: append(slices.Clone(shared), prompt(r, 2)...), Params: p})
	for _, q := range []Request{{ID: "y", Prompt: y, Params: p}, {ID: "z", Prompt: prompt(r, 10), Params: p}} {
		if err := e.Add(q); err != nil {
			t.Fatal(err)
		}
	}
	sc, err := e.sched.next(e.blocks)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range sc.chunks {
		got = append(got, fmt.Sprintf("%s[%d:%d]%v", c.seq.id, c.start, c.start+c.n, c.sample))
	}
	if want := []string{"y[32:37]true", "z[0:3]false"}; !slices.Equal(got, want) {
		t.Fatalf("planned %v, want %v", got, want)
	}
	res := drain(t, e) // plans again from where the requests stand
	fresh, _ := newEngine(t, modelsParams(256, 1), Config{})
	if want := run1(t, fresh, Request{ID: "y", Prompt: y, Params: p}); !slices.Equal(res["y"].tokens, want.tokens) {
		t.Fatalf("with the cached prefix %v, fresh %v", res["y"].tokens, want.tokens)
	}
	checkEmpty(t, e, ctx)
}
