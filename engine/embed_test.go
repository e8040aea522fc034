package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/vkllm/vkllm/errcode"
	"github.com/vkllm/vkllm/kernels"
	"github.com/vkllm/vkllm/models"
	"github.com/vkllm/vkllm/sampler"
)

// stepAll steps e until nothing is left, and returns every request's
// tokens and its embedding, by id.
func stepAll(t testing.TB, e *Engine) (toks map[string][]int32, vecs map[string][]float32) {
	t.Helper()
	toks, vecs = map[string][]int32{}, map[string][]float32{}
	stepUntilDone(t, e, func(o Output) {
		toks[o.ID] = append(toks[o.ID], o.NewTokens...)
		if o.Embedding != nil {
			if !o.Finished || o.FinishReason != "stop" {
				t.Fatalf("%s: embedding in an output finished %v reason %q", o.ID, o.Finished, o.FinishReason)
			}
			vecs[o.ID] = o.Embedding
		}
	})
	return toks, vecs
}

// poolByHand decodes prompt alone in one Decode asking for every hidden
// state, and pools them as EmbedParams p says.
func poolByHand(t testing.TB, prompt []int32, p EmbedParams) []float32 {
	t.Helper()
	m, _ := tiny(t)
	ctx, err := m.NewContext(models.ContextParams{ContextLen: 256, BatchSize: 256})
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Close()
	var b models.Batch
	for i, tok := range prompt {
		b.Add(tok, int32(i), false, 0)
		b.Embed = append(b.Embed, true)
	}
	if err := ctx.Decode(b); err != nil {
		t.Fatal(err)
	}
	sum := make([]float64, m.Config.HiddenSize)
	for i := range prompt {
		for j, v := range ctx.Embeddings(i) {
			sum[j] += float64(v)
		}
	}
	var vec []float32
	if p.Pooling == PoolMean {
		for _, s := range sum {
			vec = append(vec, float32(s/float64(len(prompt))))
		}
	} else {
		vec = slices.Clone(ctx.Embeddings(len(prompt) - 1))
	}
	if p.Normalize {
		var ss float64
		for _, v := range vec {
			ss += float64(v) * float64(v)
		}
		for j := range vec {
			vec[j] = float32(float64(vec[j]) / math.Sqrt(ss))
		}
	}
	return vec
}

// farVec is the first j with |got[j] − want[j]| > rel·max|want|, or −1.
func farVec(got, want []float32, rel float64) (int, float64) {
	var scale, worst float64
	for _, v := range want {
		scale = max(scale, math.Abs(float64(v)))
	}
	for j := range want {
		d := math.Abs(float64(got[j] - want[j]))
		worst = max(worst, d)
		if d > rel*scale {
			return j, d
		}
	}
	return -1, worst
}

var embedParamCases = []struct {
	name string
	p    EmbedParams
}{
	{"last", EmbedParams{Pooling: PoolLast, Normalize: true}},
	{"mean", EmbedParams{Pooling: PoolMean, Normalize: true}},
	{"last raw", EmbedParams{Pooling: PoolLast}},
	{"mean raw", EmbedParams{Pooling: PoolMean}},
	{"default", EmbedParams{Normalize: true}}, // PoolLast for an Engine request
}

// TestEmbedEqualsPoolingByHand: an embedding request, its prompt cut
// into chunks of 8 tokens and batched with other requests, gives the
// vector pooled by hand from one Decode's hidden states of the whole
// prompt (within 1e-6 of its largest value: chunks change no arithmetic
// of a row), with the prefix cache on (a second request of a prompt
// already cached must still see every token for the mean).
func TestEmbedEqualsPoolingByHand(t *testing.T) {
	prs := prompts(11, 4, 5, 40)
	for _, c := range embedParamCases {
		t.Run(c.name, func(t *testing.T) {
			e, ctx := newEngine(t, models.ContextParams{ContextLen: 256, MaxSeqs: 8, BatchSize: 64},
				Config{MaxBatchTokens: 8, PrefixCache: true})
			for round := range 2 { // the second round finds the first's prompts cached
				for i := range prs {
					p := c.p
					if err := e.Add(Request{ID: fmt.Sprint(round, i), Prompt: prs[i], Embed: &p}); err != nil {
						t.Fatal(err)
					}
				}
				_, vecs := stepAll(t, e)
				for i, pr := range prs {
					want := poolByHand(t, pr, c.p)
					got := vecs[fmt.Sprint(round, i)]
					if len(got) != len(want) {
						t.Fatalf("round %d input %d: %d values, want %d", round, i, len(got), len(want))
					}
					if j, d := farVec(got, want, 1e-6); j >= 0 {
						t.Fatalf("round %d input %d dim %d: %v, by hand %v (|diff| %.3g)", round, i, j, got[j], want[j], d)
					}
				}
			}
			if err := e.ClearCache(); err != nil {
				t.Fatal(err)
			}
			if u := ctx.Used(); u != 0 {
				t.Fatalf("%d cells in use after the embeddings and ClearCache", u)
			}
		})
	}
}

// TestEmbedBesideGeneration: generations that share their steps with
// embedding requests (added before, during and after them, chunked into
// the same batches, in a cache small enough to preempt) draw exactly the
// tokens they draw alone, and the embeddings equal those computed alone.
func TestEmbedBesideGeneration(t *testing.T) {
	gen := prompts(12, 3, 6, 16)
	emb := prompts(13, 6, 10, 30)
	for name, sp := range mixed() {
		t.Run(name, func(t *testing.T) {
			alone, _ := newEngine(t, models.ContextParams{ContextLen: 256, MaxSeqs: 8}, Config{})
			for i, p := range gen {
				if err := alone.Add(Request{ID: fmt.Sprint("g", i), Prompt: p, Params: sp}); err != nil {
					t.Fatal(err)
				}
			}
			want, _ := stepAll(t, alone)
			wantVec := map[string][]float32{}
			for i, p := range emb {
				pp := EmbedParams{Pooling: PoolLast + Pooling(i%2), Normalize: true}
				wantVec[fmt.Sprint("e", i)] = poolByHand(t, p, pp)
			}

			e, ctx := newEngine(t, models.ContextParams{ContextLen: 72, MaxSeqs: 8}, Config{MaxSeqs: 4, MaxBatchTokens: 16})
			// "first" runs ahead of the generations in the batch: its 17
			// tokens end in the second step, beside the first prompt.
			first, firstPrompt := EmbedParams{Pooling: PoolMean}, prompts(16, 1, 17, 17)[0]
			if err := e.Add(Request{ID: "first", Prompt: firstPrompt, Embed: &first}); err != nil {
				t.Fatal(err)
			}
			wantVec["first"] = poolByHand(t, firstPrompt, first)
			for i, p := range gen {
				if err := e.Add(Request{ID: fmt.Sprint("g", i), Prompt: p, Params: sp}); err != nil {
					t.Fatal(err)
				}
			}
			got, gotVec := map[string][]int32{}, map[string][]float32{}
			added := 0
			for steps := 0; e.HasUnfinished() || added < len(emb); steps++ {
				if steps > 10000 {
					t.Fatal("engine does not finish")
				}
				if added < len(emb) && steps%3 == 0 { // embeddings arrive while the generations run
					pp := EmbedParams{Pooling: PoolLast + Pooling(added%2), Normalize: true}
					if err := e.Add(Request{ID: fmt.Sprint("e", added), Prompt: emb[added], Embed: &pp}); err != nil {
						t.Fatal(err)
					}
					added++
				}
				outs, err := e.Step()
				if err != nil {
					t.Fatal(err)
				}
				for _, o := range outs {
					got[o.ID] = append(got[o.ID], o.NewTokens...)
					if o.Embedding != nil {
						gotVec[o.ID] = o.Embedding
					}
				}
			}
			for id, w := range want {
				if !slices.Equal(got[id], w) {
					t.Fatalf("%s: beside embeddings %v, alone %v", id, got[id], w)
				}
			}
			for id, w := range wantVec {
				if j, d := farVec(gotVec[id], w, 1e-6); len(gotVec[id]) != len(w) || j >= 0 {
					t.Fatalf("%s: beside generations %d values, dim %d off by %.3g", id, len(gotVec[id]), j, d)
				}
				if len(got[id]) != 0 {
					t.Fatalf("%s: an embedding request drew tokens %v", id, got[id])
				}
			}
			if e.count.preemptions == 0 {
				t.Fatal("no preemption happened: the small cache does not test it")
			}
			if u := ctx.Used(); u != 0 {
				t.Fatalf("%d cells in use at the end", u)
			}
			t.Logf("%d preemptions", e.count.preemptions)
		})
	}
}

// TestEmbedAddErrors: what an embedding request cannot have is refused
// with a typed error, and nothing is queued.
func TestEmbedAddErrors(t *testing.T) {
	e, _ := newEngine(t, models.ContextParams{ContextLen: 64, MaxSeqs: 4}, Config{})
	p := &EmbedParams{Pooling: PoolMean}
	for _, c := range []struct {
		name string
		r    Request
		want error
	}{
		{"choices", Request{ID: "a", Prompt: []int32{5}, N: 2, Embed: p}, ErrBadEmbed},
		{"session", Request{ID: "a", Prompt: []int32{5}, Session: "s", Embed: p}, ErrBadEmbed},
		{"pooling", Request{ID: "a", Prompt: []int32{5}, Embed: &EmbedParams{Pooling: numPoolings}}, ErrBadEmbed},
		{"empty", Request{ID: "a", Embed: p}, sampler.ErrEmptyPrompt},
		{"bad token", Request{ID: "a", Prompt: []int32{5, 320}, Embed: p}, ErrBadToken},
		{"too long", Request{ID: "a", Prompt: make([]int32, 65), Embed: p}, ErrPromptTooLong},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := e.Add(c.r); !errors.Is(err, c.want) {
				t.Fatalf("Add: %v, want %v", err, c.want)
			}
			if errcode.Of(e.Add(c.r)) == "" {
				t.Fatal("no errcode")
			}
			if e.HasUnfinished() {
				t.Fatal("a refused request was queued")
			}
		})
	}
}

// TestEmbedGoldens: LLM.EmbedTokens on the exact backend gives
// transformers' pooled vectors (last token and mean, normalised or not)
// within 1e-4 of their largest value, the bound the logits meet.
func TestEmbedGoldens(t *testing.T) {
	for _, name := range []string{"qwen2-tiny", "llama-tiny"} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(filepath.Dir(tinyModel), name)
			raw, err := os.ReadFile(dir + ".embed.golden.json")
			if err != nil {
				t.Fatal(err)
			}
			var g struct {
				Prompts []struct {
					Tokens     []int32
					Last, Mean []float32 // L2-normalised
					LastRaw    []float32 `json:"last_raw"`
					MeanRaw    []float32 `json:"mean_raw"`
				}
			}
			if err := json.Unmarshal(raw, &g); err != nil {
				t.Fatal(err)
			}
			l, err := Open(context.Background(), dir, Options{Backend: kernels.CPURef, MaxSeqs: 2})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			var inputs [][]int32
			for _, p := range g.Prompts {
				inputs = append(inputs, p.Tokens)
			}
			for _, c := range []struct {
				name string
				opts EmbedOptions
				want func(i int) []float32
			}{
				{"last", EmbedOptions{Pooling: PoolLast}, func(i int) []float32 { return g.Prompts[i].Last }},
				{"mean", EmbedOptions{Pooling: PoolMean}, func(i int) []float32 { return g.Prompts[i].Mean }},
				{"last raw", EmbedOptions{Pooling: PoolLast, NoNormalize: true}, func(i int) []float32 { return g.Prompts[i].LastRaw }},
				{"mean raw", EmbedOptions{Pooling: PoolMean, NoNormalize: true}, func(i int) []float32 { return g.Prompts[i].MeanRaw }},
			} {
				got, err := l.EmbedTokens(context.Background(), inputs, c.opts)
				if err != nil {
					t.Fatal(err)
				}
				var worst float64
				for i, e := range got {
					want := c.want(i)
					if len(want) == 0 || len(e.Vector) != len(want) {
						t.Fatalf("%s input %d: %d values, golden %d", c.name, i, len(e.Vector), len(want))
					}
					j, d := farVec(e.Vector, want, 1e-4)
					if j >= 0 {
						t.Fatalf("%s input %d dim %d: %v, transformers %v (|diff| %.3g)", c.name, i, j, e.Vector[j], want[j], d)
					}
					worst = max(worst, d)
					if e.PromptTokens != len(inputs[i]) {
						t.Fatalf("%s input %d: %d prompt tokens, want %d", c.name, i, e.PromptTokens, len(inputs[i]))
					}
				}
				t.Logf("%s: max |vector − transformers| = %.3g", c.name, worst)
			}
			checkNoCells(t, l)
		})
	}
}

// TestEmbedBesideGenerate: LLM.Embed calls running concurrently with
// Generate leave its greedy and seeded tokens as they are alone, and
// give the vectors of a call alone; more inputs than MaxPending go
// through in a window.
func TestEmbedBesideGenerate(t *testing.T) {
	texts := []string{"The quick brown fox", "Hello, world!", "a", "kernels multiply matrices", "12345 67890."}
	var inputs []string
	for i := range 12 {
		inputs = append(inputs, texts[i%len(texts)]+fmt.Sprint(i))
	}
	ctx := context.Background()
	l := openLLM(t, Options{Backend: kernels.CPU, MaxSeqs: 4, ContextLen: 512})
	defer l.Close()
	want := map[string][]Result{}
	for name, p := range mixed() {
		r, err := l.Generate(ctx, texts, p)
		if err != nil {
			t.Fatal(err)
		}
		want[name] = r
	}
	wantVec, err := l.Embed(ctx, inputs, EmbedOptions{Pooling: PoolMean})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for name, p := range mixed() {
		wg.Go(func() {
			got, err := l.Generate(ctx, texts, p)
			if err != nil {
				t.Error(err)
				return
			}
			for i := range got {
				if !slices.Equal(got[i].Tokens, want[name][i].Tokens) {
					t.Errorf("%s prompt %d: beside embeddings %v, alone %v", name, i, got[i].Tokens, want[name][i].Tokens)
				}
			}
		})
	}
	for range 2 {
		wg.Go(func() {
			got, err := l.Embed(ctx, inputs, EmbedOptions{Pooling: PoolMean})
			if err != nil {
				t.Error(err)
				return
			}
			for i := range got {
				if j, d := farVec(got[i].Vector, wantVec[i].Vector, 1e-6); j >= 0 {
					t.Errorf("input %d dim %d: beside generations off by %.3g", i, j, d)
				}
			}
		})
	}
	wg.Wait()
	checkNoCells(t, l)

	small := openLLM(t, Options{Backend: kernels.CPU, MaxSeqs: 2, MaxPending: 3, ContextLen: 512})
	defer small.Close()
	got, err := small.Embed(ctx, inputs, EmbedOptions{Pooling: PoolMean})
	if err != nil {
		t.Fatalf("%d inputs, MaxPending 3: %v", len(inputs), err)
	}
	for i := range got {
		if j, d := farVec(got[i].Vector, wantVec[i].Vector, 1e-6); j >= 0 {
			t.Fatalf("input %d dim %d: in a window of 2 off by %.3g", i, j, d)
		}
	}
}

// TestEmbedOptionErrors: bad inputs and options fail the call, typed,
// before anything runs.
func TestEmbedOptionErrors(t *testing.T) {
	l := openLLM(t, Options{Backend: kernels.CPU, MaxSeqs: 2, ContextLen: 64})
	defer l.Close()
	ctx := context.Background()
	for _, c := range []struct {
		name   string
		inputs [][]int32
		opts   EmbedOptions
		want   error
	}{
		{"dimensions", [][]int32{{5}}, EmbedOptions{Dimensions: 32}, ErrDimensions},
		{"negative dimensions", [][]int32{{5}}, EmbedOptions{Dimensions: -1}, ErrDimensions},
		{"pooling", [][]int32{{5}}, EmbedOptions{Pooling: 9}, ErrBadEmbed},
		{"empty input", [][]int32{{5}, {}}, EmbedOptions{}, sampler.ErrEmptyPrompt},
		{"bad id", [][]int32{{5, -1}}, EmbedOptions{}, ErrBadToken},
		{"too long", [][]int32{make([]int32, 65)}, EmbedOptions{}, ErrPromptTooLong},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := l.EmbedTokens(ctx, c.inputs, c.opts); !errors.Is(err, c.want) {
				t.Fatalf("EmbedTokens: %v, want %v", err, c.want)
			}
		})
	}
	if _, err := l.EmbedTokens(nil, [][]int32{{5}}, EmbedOptions{}); !errors.Is(err, ErrNilContext) { //nolint:staticcheck // a nil context is what it tests
		t.Fatalf("nil context: %v", err)
	}
	got, err := l.EmbedTokens(ctx, [][]int32{{5}}, EmbedOptions{Dimensions: 64})
	if err != nil || len(got[0].Vector) != 64 {
		t.Fatalf("Dimensions = the model's 64: %v, %d values", err, len(got))
	}
	if got, err := l.Embed(ctx, nil, EmbedOptions{}); err != nil || len(got) != 0 {
		t.Fatalf("no inputs: %v, %v", got, err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := l.EmbedTokens(cctx, [][]int32{{5, 6, 7}}, EmbedOptions{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	checkNoCells(t, l)
}

// TestEmbedMeanPreempted: a mean-pooled request preempted after part of
// its prompt was computed starts its sum again when it recomputes, and
// gives the vector pooled by hand.
func TestEmbedMeanPreempted(t *testing.T) {
	e, ctx := newEngine(t, models.ContextParams{ContextLen: 64, MaxSeqs: 4}, Config{MaxSeqs: 3, MaxBatchTokens: 8})
	gen := prompts(14, 2, 10, 10)
	for i, p := range gen {
		if err := e.Add(Request{ID: fmt.Sprint("g", i), Prompt: p, Params: greedy(40)}); err != nil {
			t.Fatal(err)
		}
	}
	emb := prompts(15, 1, 40, 40)[0]
	p := EmbedParams{Pooling: PoolMean, Normalize: true}
	if err := e.Add(Request{ID: "e", Prompt: emb, Embed: &p}); err != nil {
		t.Fatal(err)
	}
	var vec []float32
	lost := 0 // computed tokens of "e" lost to a preemption
	for steps := 0; e.HasUnfinished(); steps++ {
		if steps > 10000 {
			t.Fatal("engine does not finish")
		}
		before := 0
		if q := e.byID["e"]; q != nil {
			before = q.numCached
		}
		outs, err := e.Step()
		if err != nil {
			t.Fatal(err)
		}
		if q := e.byID["e"]; q != nil && q.numCached == 0 {
			lost += before
		}
		for _, o := range outs {
			if o.ID == "e" {
				vec = o.Embedding
			}
		}
	}
	if lost == 0 {
		t.Fatal(`"e" was never preempted after computing part of its prompt: the test does not test it`)
	}
	if j, d := farVec(vec, poolByHand(t, emb, p), 1e-6); len(vec) == 0 || j >= 0 {
		t.Fatalf("after preemption: %d values, dim %d off by %.3g", len(vec), j, d)
	}
	if u := ctx.Used(); u != 0 {
		t.Fatalf("%d cells in use at the end", u)
	}
	t.Logf("%d computed tokens lost to preemption", lost)
}
