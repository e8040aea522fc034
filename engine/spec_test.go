package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"testing"

	"github.com/vkllm/vkllm/internal/testmodel"

	"github.com/vkllm/vkllm/kernels"
	"github.com/vkllm/vkllm/models"
	"github.com/vkllm/vkllm/sampler"
)

const tinyDraft = "../testdata/models/qwen2-tiny-Q4_0.gguf" // qwen2-tiny's weights in Q4_0: the same vocabulary

// openOn opens path on the named backend, failing (or skipping, for a
// Vulkan without device under VKLLM_VULKAN_OPTIONAL=1) when it cannot.
func openOn(t *testing.T, path, backend string) *models.Model {
	t.Helper()
	m, err := models.Open(context.Background(), path, models.WithBackendName(backend, kernels.Options{}))
	if err != nil {
		if backend == kernels.Vulkan && os.Getenv("VKLLM_VULKAN_OPTIONAL") == "1" {
			t.Skipf("no Vulkan device (VKLLM_VULKAN_OPTIONAL=1): %v", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func newCtxT(t *testing.T, m *models.Model, cp models.ContextParams) *models.Context {
	t.Helper()
	ctx, err := m.NewContext(cp)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ctx.Close() })
	return ctx
}

// specPrompts are prompts that repeat pieces of themselves, so that
// prompt lookup finds drafts in them, of several lengths.
func specPrompts(n int) [][]int32 {
	r := rand.New(rand.NewPCG(3, 4))
	prs := make([][]int32, n)
	for i := range prs {
		seg := prompt(r, 5+i%4)
		p := append(prompt(r, 3+i), seg...)
		p = append(p, prompt(r, 2)...)
		prs[i] = append(p, seg[:3]...)
	}
	return prs
}

// runSpec runs reqs on a fresh Engine over m with cp and cfg and returns
// their results and the engine's Stats.
func runSpec(t *testing.T, m *models.Model, cp models.ContextParams, cfg Config, reqs []Request) (map[string]*result, Stats) {
	t.Helper()
	ctx := newCtxT(t, m, cp)
	e, err := New(m, ctx, nil, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reqs {
		if err := e.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	res := drain(t, e)
	if used := ctx.Used(); used != 0 {
		t.Fatalf("%d cells still used after every request finished", used)
	}
	return res, e.Stats()
}

// TestSpecGreedyEqual: greedy requests with speculation, by prompt lookup
// and by a draft model (qwen2-tiny's weights in Q4_0), give token for
// token and logprob for logprob what they give without, on every backend:
// several requests in one continuous batch, a token budget that cuts
// drafts and prefill chunks, and a cache short enough that requests are
// preempted and recomputed.
func TestSpecGreedyEqual(t *testing.T) {
	for _, backend := range []string{kernels.CPURef, kernels.CPU, kernels.Vulkan} {
		t.Run(backend, func(t *testing.T) {
			m := openOn(t, tinyModel, backend)
			dm := openOn(t, tinyDraft, backend)
			var reqs []Request
			for i, p := range specPrompts(6) {
				reqs = append(reqs, Request{ID: fmt.Sprint(i), Prompt: p,
					Params: sampler.Params{MaxTokens: 24 + 7*i, IgnoreEOS: true, Logprobs: 2}})
			}
			type setup struct {
				name       string
				cp         models.ContextParams
				maxSeqs    int
				batch      int
				preemption bool
			}
			for _, s := range []setup{
				{"roomy", models.ContextParams{ContextLen: 512, MaxSeqs: 8, BatchSize: 64}, 4, 0, false},
				{"short", models.ContextParams{ContextLen: 96, MaxSeqs: 6, BatchSize: 64}, 3, 12, true},
			} {
				t.Run(s.name, func(t *testing.T) {
					cfg := Config{MaxSeqs: s.maxSeqs, MaxBatchTokens: s.batch}
					want, st := runSpec(t, m, s.cp, cfg, reqs)
					if s.preemption && st.Preemptions == 0 {
						t.Fatal("no preemption without speculation: the setup no longer covers it")
					}
					for _, src := range []string{"ngram", "draft"} {
						t.Run(src, func(t *testing.T) {
							sp := &Speculation{Proposer: NGram{}, Max: 5}
							if src == "draft" {
								sp = &Speculation{Draft: dm, DraftContext: newCtxT(t, dm, s.cp), Max: 5}
							}
							cfg := cfg
							cfg.Speculation = sp
							got, st := runSpec(t, m, s.cp, cfg, reqs)
							checkSame(t, got, want)
							t.Logf("%d of %d drafts kept, %d preemptions", st.DraftAccepted, st.DraftTokens, st.Preemptions)
							if st.DraftAccepted == 0 || st.DraftAccepted == st.DraftTokens {
								t.Fatalf("%d of %d drafts kept: the test needs both kept and rejected drafts", st.DraftAccepted, st.DraftTokens)
							}
						})
					}
				})
			}
		})
	}
}

// checkSame compares results bit for bit: tokens, logprobs, finish
// reasons and usage.
func checkSame(t *testing.T, got, want map[string]*result) {
	t.Helper()
	for id, w := range want {
		g := got[id]
		if g == nil {
			t.Fatalf("%s: no result", id)
		}
		if !slices.Equal(g.tokens, w.tokens) {
			t.Fatalf("%s: tokens\n%v with speculation,\n%v without", id, g.tokens, w.tokens)
		}
		if len(g.lps) != len(w.lps) {
			t.Fatalf("%s: %d logprobs, %d without", id, len(g.lps), len(w.lps))
		}
		for s := range w.lps {
			if err := sameLogprob(g.lps[s], w.lps[s]); err != nil {
				t.Fatalf("%s step %d: %v", id, s, err)
			}
		}
		if g.reason != w.reason || g.usage != w.usage {
			t.Fatalf("%s: finish %q %+v, without %q %+v", id, g.reason, g.usage, w.reason, w.usage)
		}
	}
}

// fixedProposer drafts the same tokens whatever the sequence.
type fixedProposer []int32

func (f fixedProposer) Propose([]int32, int) []int32 { return f }

// TestSpecSampledDistribution: seeded sampling with speculation keeps the
// target distribution. 4000 requests (temperature 1.5, top-k 3, fixed
// seeds) draw two tokens after one prompt on qwen2-tiny; the second is
// drawn by the rejection rule against a draft: a fixed token (q one-hot,
// as prompt lookup) or the draft model's proposal (q its distribution).
// The pairs' counts against the exact probabilities p(t1)·p(t2|t1) (from
// the model's logits and sampler.Dist) pass a chi-square test at p-value
// 1e-4.
func TestSpecSampledDistribution(t *testing.T) {
	m, _ := tiny(t)
	dm := openOn(t, tinyDraft, kernels.CPU)
	pr := specPrompts(1)[0]
	params := sampler.Params{Temperature: 1.5, TopK: 3, MaxTokens: 3, IgnoreEOS: true}

	// The exact distribution of the first two tokens.
	ctx := newCtxT(t, m, models.ContextParams{ContextLen: 64, MaxSeqs: 1})
	row, err := decodeSeq(ctx, 0, pr)
	if err != nil {
		t.Fatal(err)
	}
	p1 := sampler.New(params, pr).Dist(row, nil)
	exact := map[[2]int32]float64{}
	var best [2]int32 // the likeliest pair: its t2 is the fixed draft
	for t1, a := range p1 {
		if a == 0 {
			continue
		}
		row, err := decodeSeq(ctx, 0, []int32{int32(t1)})
		if err != nil {
			t.Fatal(err)
		}
		if err := ctx.SeqRm(0, int32(len(pr)), -1); err != nil {
			t.Fatal(err)
		}
		for t2, b := range sampler.New(params, pr).Dist(row, nil) {
			if b > 0 {
				k := [2]int32{int32(t1), int32(t2)}
				exact[k] = a * b
				if exact[k] > exact[best] {
					best = k
				}
			}
		}
	}

	for _, src := range []string{"fixed", "draft"} {
		t.Run(src, func(t *testing.T) {
			const n = 4000
			cp := models.ContextParams{ContextLen: 512, MaxSeqs: 32, BatchSize: 256}
			sp := &Speculation{Proposer: fixedProposer{best[1], best[1]}, Max: 2}
			if src == "draft" {
				sp = &Speculation{Draft: dm, DraftContext: newCtxT(t, dm, cp), Max: 2}
			}
			reqs := make([]Request, n)
			for i := range reqs {
				p := params
				seed := uint64(i)
				p.Seed = &seed
				reqs[i] = Request{ID: fmt.Sprint(i), Prompt: pr, Params: p}
			}
			res, st := runSpec(t, m, cp, Config{MaxSeqs: 32, Speculation: sp}, reqs)
			t.Logf("%d of %d drafts kept", st.DraftAccepted, st.DraftTokens)
			if st.DraftTokens < n || st.DraftAccepted == 0 || st.DraftAccepted == st.DraftTokens {
				t.Fatalf("%d of %d drafts kept for %d requests: the test needs a draft per request, kept and rejected ones", st.DraftAccepted, st.DraftTokens, n)
			}
			counts := map[[2]int32]float64{}
			for _, r := range res {
				counts[[2]int32{r.tokens[0], r.tokens[1]}]++
			}
			var chi2 float64
			for k, c := range counts {
				if exact[k] == 0 {
					t.Fatalf("pair %v drawn %v times, probability 0", k, c)
				}
			}
			for k, p := range exact {
				e := p * n
				chi2 += (counts[k] - e) * (counts[k] - e) / e
			}
			dof := len(exact) - 1
			pv := chiSquareP(chi2, dof)
			if pv < 1e-4 {
				t.Fatalf("chi² = %.1f on %d dof, p-value %.2g: counts %v, exact %v", chi2, dof, pv, counts, exact)
			}
			t.Logf("chi² = %.1f on %d dof, p-value %.2g", chi2, dof, pv)
		})
	}
}

// chiSquareP is the upper tail P(X ≥ x) of a chi-square of dof degrees
// of freedom: the regularized upper incomplete gamma Q(dof/2, x/2) (as in
// the sampler's tests).
func chiSquareP(x float64, dof int) float64 {
	a, x := float64(dof)/2, x/2
	lg, _ := math.Lgamma(a)
	if x < a+1 {
		sum, term := 1/a, 1/a
		for n := 1; n < 1000 && term >= sum*1e-15; n++ {
			term *= x / (a + float64(n))
			sum += term
		}
		return 1 - sum*math.Exp(-x+a*math.Log(x)-lg)
	}
	b := x + 1 - a
	c, d := 1/1e-300, 1/b
	h := d
	for i := 1; i < 1000; i++ {
		an := -float64(i) * (float64(i) - a)
		b += 2
		if d = an*d + b; math.Abs(d) < 1e-300 {
			d = 1e-300
		}
		if c = b + an/c; math.Abs(c) < 1e-300 {
			c = 1e-300
		}
		d = 1 / d
		h *= d * c
		if math.Abs(d*c-1) < 1e-15 {
			break
		}
	}
	return math.Exp(-x+a*math.Log(x)-lg) * h
}

func TestNGram(t *testing.T) {
	cases := []struct {
		name   string
		tokens []int32
		k      int
		want   []int32
	}{
		{"latest match", []int32{1, 2, 3, 9, 1, 2, 4, 8, 1, 2}, 3, []int32{4, 8, 1}},
		{"longest n first", []int32{5, 1, 2, 7, 0, 1, 2, 6, 5, 1, 2}, 2, []int32{7, 0}},
		{"cut at the end", []int32{1, 2, 3, 1, 2}, 5, []int32{3, 1, 2}},
		{"no match", []int32{1, 2, 3, 4}, 3, nil},
		{"too short", []int32{1}, 3, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := (NGram{}).Propose(c.tokens, c.k); !slices.Equal(got, c.want) {
				t.Errorf("Propose(%v, %d) = %v, want %v", c.tokens, c.k, got, c.want)
			}
		})
	}
}

// TestSpecOptions: Options.Draft opens prompt lookup or a draft model;
// a draft model of another vocabulary is refused with ErrDraftVocab.
func TestSpecOptions(t *testing.T) {
	for _, draft := range []string{"ngram", tinyDraft} {
		t.Run(draft, func(t *testing.T) {
			l := openLLM(t, Options{Draft: draft, DraftMax: 4, MaxSeqs: 2, ContextLen: 256})
			defer l.Close()
			plain := openLLM(t, Options{MaxSeqs: 2, ContextLen: 256})
			defer plain.Close()
			p := sampler.Params{MaxTokens: 40, IgnoreEOS: true}
			in := []string{"one two three one two three one two", "the cat sat on the mat"}
			got, err := l.Generate(context.Background(), in, p)
			if err != nil {
				t.Fatal(err)
			}
			want, err := plain.Generate(context.Background(), in, p)
			if err != nil {
				t.Fatal(err)
			}
			for i := range want {
				if !slices.Equal(got[i].Tokens, want[i].Tokens) {
					t.Fatalf("prompt %d: %v with drafts, %v without", i, got[i].Tokens, want[i].Tokens)
				}
			}
			if st := l.Stats(); st.DraftTokens == 0 {
				t.Fatal("no drafts scored")
			}
		})
	}
	_, err := Open(context.Background(), tinyModel, Options{Draft: testmodel.OtherVocab(t, tinyModel)})
	if !errors.Is(err, ErrDraftVocab) {
		t.Fatalf("a draft model of another vocabulary: %v, want ErrDraftVocab", err)
	}
	_, err = Open(context.Background(), tinyModel, Options{Draft: "../testdata/models/nope.gguf"})
	if err == nil {
		t.Fatal("a missing draft model opened")
	}
}
