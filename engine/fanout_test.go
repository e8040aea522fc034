package engine

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"go.uber.org/goleak"

	"github.com/vkllm/vkllm/models"
	"github.com/vkllm/vkllm/sampler"
)

// drainChoices steps e until nothing is left and joins the outputs by
// request id and choice index; it fails on an output after a choice's
// final one.
func drainChoices(t testing.TB, e *Engine) map[string][]*result {
	t.Helper()
	res := map[string][]*result{}
	stepUntilDone(t, e, func(o Output) {
		for len(res[o.ID]) <= o.Index {
			res[o.ID] = append(res[o.ID], &result{})
		}
		res[o.ID][o.Index].add(t, fmt.Sprintf("%s/%d", o.ID, o.Index), o)
	})
	return res
}

// TestChoicesOnePrefill: a request of n = 4 seeded choices computes its
// prompt once and gives, token for token and logprob for logprob, the
// choices of four separate requests seeded seed, seed+1, ... (what the
// server sent before), also when the prompt is prefilled in chunks and
// when a short cache preempts choices.
func TestChoicesOnePrefill(t *testing.T) {
	const n = 4
	cases := []struct {
		name      string
		cp        models.ContextParams
		cfg       Config
		maxTokens int
		preempts  bool // the cache is too short for every choice: recomputes
	}{
		{"one batch", models.ContextParams{ContextLen: 256, MaxSeqs: 8}, Config{}, 12, false},
		{"chunked prompt", models.ContextParams{ContextLen: 256, MaxSeqs: 8}, Config{MaxBatchTokens: 16}, 12, false},
		{"prefix cache", models.ContextParams{ContextLen: 256, MaxSeqs: 8}, Config{PrefixCache: true}, 12, false},
		{"short cache", models.ContextParams{ContextLen: 96, MaxSeqs: 8}, Config{}, 30, true},
	}
	toks := prompt(rand.New(rand.NewPCG(5, 6)), 40)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			seed := uint64(11)
			p := sampler.Params{Temperature: 1, Seed: &seed, MaxTokens: c.maxTokens, IgnoreEOS: true, Logprobs: 2}

			e, ctx := newEngine(t, c.cp, c.cfg)
			if err := e.Add(Request{ID: "n", Prompt: toks, Params: p, N: n}); err != nil {
				t.Fatal(err)
			}
			got := drainChoices(t, e)["n"]
			st := e.Stats()

			sep, _ := newEngine(t, c.cp, c.cfg)
			for i := range n {
				s := seed + uint64(i)
				pi := p
				pi.Seed = &s
				if err := sep.Add(Request{ID: fmt.Sprint("c", i), Prompt: toks, Params: pi}); err != nil {
					t.Fatal(err)
				}
			}
			want := drain(t, sep)

			if len(got) != n {
				t.Fatalf("%d choices, want %d", len(got), n)
			}
			decoded := 0 // drawn tokens fed back: all but each choice's last
			for i, g := range got {
				w := want[fmt.Sprint("c", i)]
				if !slices.Equal(g.tokens, w.tokens) || !slices.EqualFunc(g.lps, w.lps, equalLogprob) || g.reason != w.reason {
					t.Errorf("choice %d: %v (%s), separate request: %v (%s)", i, g.tokens, g.reason, w.tokens, w.reason)
				}
				if g.usage.PromptTokens != len(toks) || g.usage.CompletionTokens != len(g.tokens) {
					t.Errorf("choice %d: usage %+v", i, g.usage)
				}
				decoded += len(g.tokens) - 1
			}
			if slices.Equal(got[0].tokens, got[1].tokens) && slices.Equal(got[1].tokens, got[2].tokens) {
				t.Errorf("choices 0..2 are equal (%v): the seeds do not differ", got[0].tokens)
			}
			if st.PromptTokens != uint64(len(toks)) {
				t.Errorf("PromptTokens %d, want %d", st.PromptTokens, len(toks))
			}
			if c.preempts {
				if st.Preemptions == 0 {
					t.Errorf("no preemption on the short cache: %+v", st)
				}
			} else if want := uint64(len(toks) + decoded); st.ComputedTokens != want {
				t.Errorf("ComputedTokens %d, want %d (the prompt once, then %d decodes); four requests compute %d",
					st.ComputedTokens, want, decoded, sep.Stats().ComputedTokens)
			}
			if err := e.ClearCache(); err != nil {
				t.Fatal(err)
			}
			if u := usedCells(ctx); u != 0 {
				t.Errorf("%d cells in use after the request", u)
			}
		})
	}
}

func equalLogprob(a, b TokenLogprob) bool { return sameLogprob(a, b) == nil }

// TestChoicesWaitForSequences: a request of N choices is admitted only
// when N sequence ids are free, so it never runs short of one.
func TestChoicesWaitForSequences(t *testing.T) {
	e, ctx := newEngine(t, models.ContextParams{ContextLen: 256, MaxSeqs: 8}, Config{PrefixCache: true})
	r := rand.New(rand.NewPCG(1, 2))
	for i, n := range []int{1, 4, 2, 3, 1} {
		if err := e.Add(Request{ID: fmt.Sprint("r", i), Prompt: prompt(r, 20+i), Params: greedy(5 + 3*i), N: n}); err != nil {
			t.Fatal(err)
		}
	}
	for steps := 0; e.HasUnfinished(); steps++ {
		if steps > 10000 {
			t.Fatal("engine does not finish")
		}
		if _, err := e.Step(); err != nil {
			t.Fatal(err)
		}
		if held := e.sched.held(); held > 4 {
			t.Fatalf("step %d: %d sequences held or reserved, MaxSeqs 4", steps, held)
		}
	}
	if err := e.ClearCache(); err != nil {
		t.Fatal(err)
	}
	if u := usedCells(ctx); u != 0 {
		t.Errorf("%d cells in use", u)
	}
}

// countConstraint allows every token and counts its calls.
type countConstraint struct{ allows, accepts int }

func (c *countConstraint) Allow(a []bool) {
	c.allows++
	for i := range a {
		a[i] = true
	}
}
func (c *countConstraint) Accept(int32) { c.accepts++ }

func TestChoicesValidate(t *testing.T) {
	e, _ := newEngine(t, models.ContextParams{ContextLen: 64, MaxSeqs: 4}, Config{})
	ok := []int32{5, 6, 7}
	c1, c2 := &countConstraint{}, &countConstraint{}
	cases := []struct {
		name string
		r    Request
		want error
	}{
		{"negative", Request{N: -1}, ErrTooManyChoices},
		{"over MaxSeqs", Request{N: 3}, ErrTooManyChoices},
		{"session", Request{N: 2, Session: "s"}, ErrTooManyChoices},
		{"shared constraint", Request{N: 2, Params: sampler.Params{Constraint: c1}}, ErrSharedConstraint},
		{"constraints short", Request{N: 2, Constraints: []sampler.Constraint{c1}}, ErrSharedConstraint},
		{"constraint twice", Request{N: 2, Constraints: []sampler.Constraint{c1, c1}}, ErrSharedConstraint},
		{"nil constraint", Request{N: 2, Constraints: []sampler.Constraint{c1, nil}}, ErrSharedConstraint},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.r.ID, c.r.Prompt = "a", ok
			if err := e.Add(c.r); !errors.Is(err, c.want) {
				t.Fatalf("got %v, want %v", err, c.want)
			}
		})
	}
	if e.HasUnfinished() {
		t.Fatal("a refused request was queued")
	}
	// One constraint per choice: each choice's own is asked.
	p := greedy(4)
	if err := e.Add(Request{ID: "c", Prompt: ok, Params: p, N: 2, Constraints: []sampler.Constraint{c1, c2}}); err != nil {
		t.Fatal(err)
	}
	drainChoices(t, e)
	if c1.accepts != 4 || c2.accepts != 4 {
		t.Fatalf("constraints accepted %d and %d tokens, want 4 each", c1.accepts, c2.accepts)
	}
}

// TestChoicesAbort: aborting a request of several choices ends every
// choice, each with its own final Output, whether or not its prompt is
// in yet, and frees all cells.
func TestChoicesAbort(t *testing.T) {
	for _, steps := range []int{0, 1, 2, 4} { // 16-token chunks: the 40-token prompt is in after 3
		t.Run(fmt.Sprint("after ", steps, " steps"), func(t *testing.T) {
			e, ctx := newEngine(t, models.ContextParams{ContextLen: 256, MaxSeqs: 8}, Config{MaxBatchTokens: 16})
			toks := prompt(rand.New(rand.NewPCG(3, 4)), 40)
			if err := e.Add(Request{ID: "a", Prompt: toks, Params: greedy(50), N: 3}); err != nil {
				t.Fatal(err)
			}
			for range steps {
				if _, err := e.Step(); err != nil {
					t.Fatal(err)
				}
			}
			if !e.Abort("a") {
				t.Fatal("Abort found no request")
			}
			if e.Abort("a") {
				t.Fatal("second Abort found the request")
			}
			outs, err := e.Step()
			if err != nil {
				t.Fatal(err)
			}
			var idx []int
			for _, o := range outs {
				if !o.Finished || o.FinishReason != "abort" {
					t.Fatalf("output %+v", o)
				}
				idx = append(idx, o.Index)
			}
			slices.Sort(idx)
			if !slices.Equal(idx, []int{0, 1, 2}) {
				t.Fatalf("final outputs for choices %v", idx)
			}
			if e.HasUnfinished() {
				t.Fatal("unfinished after the abort")
			}
			if u := usedCells(ctx); u != 0 {
				t.Fatalf("%d cells in use", u)
			}
		})
	}
}

// TestStreamChoices: Stream with WithChoices yields every choice's deltas
// (by Index) and ends after the last choice's final one; the choices are
// the seeded separate requests'. Breaking out early aborts them all.
func TestStreamChoices(t *testing.T) {
	tiny(t) // opened once per binary, outside the leak check
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	l := openLLM(t, Options{ContextLen: 256, MaxSeqs: 4})
	defer l.Close()
	seed := uint64(21)
	p := sampler.Params{Temperature: 1, Seed: &seed, MaxTokens: 8, IgnoreEOS: true}
	got := make([]Result, 3)
	for d, err := range l.Stream(context.Background(), "hello world", p, WithChoices(3)) {
		if err != nil {
			t.Fatal(err)
		}
		if d.Index < 0 || d.Index >= 3 || got[d.Index].FinishReason != "" {
			t.Fatalf("delta %+v", d)
		}
		got[d.Index].add(d)
	}
	for i := range got {
		s := seed + uint64(i)
		pi := p
		pi.Seed = &s
		want, err := l.Generate(context.Background(), []string{"hello world"}, pi)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got[i].Tokens, want[0].Tokens) || got[i].Text != want[0].Text || got[i].FinishReason != "length" {
			t.Errorf("choice %d: %q %v, separate: %q %v", i, got[i].Text, got[i].Tokens, want[0].Text, want[0].Tokens)
		}
	}
	checkNoCells(t, l)
	long := greedy(200)
	for range l.Stream(context.Background(), "hello", long, WithChoices(4)) {
		break
	}
	checkNoCells(t, l)
	for _, err := range l.Stream(context.Background(), "hello", long, WithChoices(5)) {
		if !errors.Is(err, ErrTooManyChoices) {
			t.Fatalf("n = 5 over MaxSeqs 4: %v", err)
		}
	}
	checkNoCells(t, l)
}
