package engine

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/vkllm/vkllm/errcode"
	"github.com/vkllm/vkllm/models"
	"github.com/vkllm/vkllm/sampler"
	"github.com/vkllm/vkllm/tokenizer"
)

const tinyModel = "../testdata/models/qwen2-tiny"

var (
	tinyOnce sync.Once
	tinyM    *models.Model
	tinyTok  *tokenizer.Tokenizer
	tinyErr  error
)

// tiny opens qwen2-tiny once per test binary (vocab 320, 256 positions).
func tiny(t testing.TB) (*models.Model, *tokenizer.Tokenizer) {
	t.Helper()
	tinyOnce.Do(func() {
		if tinyM, tinyErr = models.Open(context.Background(), tinyModel); tinyErr != nil {
			return
		}
		tinyTok, tinyErr = tokenizer.FromFile(tinyModel)
	})
	if tinyErr != nil {
		t.Fatal(tinyErr)
	}
	return tinyM, tinyTok
}

// newEngine builds an Engine on a fresh Context.
func newEngine(t testing.TB, cp models.ContextParams, cfg Config) (*Engine, *models.Context) {
	t.Helper()
	m, tok := tiny(t)
	ctx, err := m.NewContext(cp)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ctx.Close() })
	e, err := New(m, ctx, tok, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e, ctx
}

// result is everything a request reported, joined.
type result struct {
	tokens  []int32
	text    string
	reason  string
	usage   Usage
	outputs int
	lps     []TokenLogprob
}

// add joins the output o to r; it fails on an output after r's final one
// (name says whose).
func (r *result) add(t testing.TB, name string, o Output) {
	t.Helper()
	if r.reason != "" {
		t.Fatalf("%s: output after its final one: %+v", name, o)
	}
	r.outputs++
	r.tokens = append(r.tokens, o.NewTokens...)
	r.text += o.TextDelta
	r.lps = append(r.lps, o.Logprobs...)
	if o.Finished {
		r.reason = o.FinishReason
		r.usage = o.Usage
	}
}

// stepUntilDone steps e until nothing is left, handing each output to f;
// it fails on a step's error or when e does not finish in 100000 steps.
func stepUntilDone(t testing.TB, e *Engine, f func(Output)) {
	t.Helper()
	for steps := 0; e.HasUnfinished(); steps++ {
		if steps > 100000 {
			t.Fatal("engine does not finish")
		}
		outs, err := e.Step()
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range outs {
			f(o)
		}
	}
}

// drain steps e until nothing is left and joins the outputs by id; it
// fails on an output after the final one.
func drain(t testing.TB, e *Engine) map[string]*result {
	t.Helper()
	res := map[string]*result{}
	stepUntilDone(t, e, func(o Output) {
		r := res[o.ID]
		if r == nil {
			r = &result{}
			res[o.ID] = r
		}
		r.add(t, o.ID, o)
	})
	return res
}

// prompt returns n pseudo-random tokens in [3, 320) (0..2 are special).
func prompt(r *rand.Rand, n int) []int32 {
	p := make([]int32, n)
	for i := range p {
		p[i] = 3 + r.Int32N(317)
	}
	return p
}

func usedCells(ctx *models.Context) int { return ctx.Used() }

// decodeSeq decodes tokens after seq's last position in one Decode and
// returns a copy of the last one's logits.
func decodeSeq(ctx *models.Context, seq models.SeqID, tokens []int32) ([]float32, error) {
	pos := ctx.SeqPosMax(seq) + 1
	var b models.Batch
	for i, tok := range tokens {
		b.Add(tok, pos+int32(i), i == len(tokens)-1, seq)
	}
	if err := ctx.Decode(b); err != nil {
		return nil, err
	}
	return slices.Clone(ctx.Logits(len(tokens) - 1)), nil
}

func greedy(maxTokens int) sampler.Params {
	return sampler.Params{MaxTokens: maxTokens, IgnoreEOS: true}
}

func TestTransitions(t *testing.T) {
	legal := map[[2]State]bool{
		{Waiting, Running}: true, {Waiting, FinishedAborted}: true,
		{Running, Preempted}: true, {Running, FinishedStopped}: true,
		{Running, FinishedLengthCapped}: true, {Running, FinishedAborted}: true,
		{Preempted, Running}: true, {Preempted, FinishedAborted}: true,
	}
	for from := State(0); from < numStates; from++ {
		for to := State(0); to < numStates; to++ {
			t.Run(from.String()+"->"+to.String(), func(t *testing.T) {
				s := from
				err := transition("r", &s, to)
				if legal[[2]State{from, to}] {
					if err != nil || s != to {
						t.Fatalf("legal move refused: %v (state %v)", err, s)
					}
					return
				}
				var te *TransitionError
				if !errors.As(err, &te) || !errors.Is(err, ErrBadTransition) || te.From != from || te.To != to || s != from {
					t.Fatalf("illegal move: err %v, state now %v", err, s)
				}
			})
		}
	}
	if CanTransition(numStates, Running) || CanTransition(Waiting, numStates+3) {
		t.Fatal("states out of range accepted")
	}
}

func TestAddValidates(t *testing.T) {
	e, _ := newEngine(t, models.ContextParams{ContextLen: 64, MaxSeqs: 2}, Config{})
	ok := []int32{5, 6, 7}
	cases := []struct {
		name  string
		r     Request
		want  error
		field string
	}{
		{"empty id", Request{Prompt: ok}, ErrEmptyID, ""},
		{"empty prompt", Request{ID: "a"}, sampler.ErrEmptyPrompt, ""},
		{"bad token", Request{ID: "a", Prompt: []int32{1, 320}}, ErrBadToken, ""},
		{"negative token", Request{ID: "a", Prompt: []int32{-1}}, ErrBadToken, ""},
		{"temperature", Request{ID: "a", Prompt: ok, Params: sampler.Params{Temperature: 3}}, nil, "temperature"},
		{"top_k", Request{ID: "a", Prompt: ok, Params: sampler.Params{TopK: 321}}, nil, "top_k"},
		{"max_tokens", Request{ID: "a", Prompt: ok, Params: sampler.Params{MaxTokens: -1}}, nil, "max_tokens"},
		{"stop", Request{ID: "a", Prompt: ok, Params: sampler.Params{Stop: []string{""}}}, nil, "stop"},
		{"stop ids", Request{ID: "a", Prompt: ok, Params: sampler.Params{StopTokenIDs: []int32{999}}}, nil, "stop_token_ids"},
		{"logprobs", Request{ID: "a", Prompt: ok, Params: sampler.Params{Logprobs: 21}}, nil, "logprobs"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := e.Add(c.r)
			if c.want != nil && !errors.Is(err, c.want) {
				t.Fatalf("got %v, want %v", err, c.want)
			}
			if c.field != "" {
				var fe *sampler.FieldError
				if !errors.As(err, &fe) || fe.Field != c.field {
					t.Fatalf("got %v, want a FieldError on %s", err, c.field)
				}
			}
		})
	}
	if e.HasUnfinished() {
		t.Fatal("a refused request was queued")
	}
	if err := e.Add(Request{ID: "a", Prompt: ok}); err != nil {
		t.Fatal(err)
	}
	if err := e.Add(Request{ID: "a", Prompt: ok}); !errors.Is(err, ErrDuplicateID) {
		t.Fatalf("duplicate id: %v", err)
	}
	noTok, err := New(tinyM, e.ctx, nil, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := noTok.Add(Request{ID: "b", Prompt: ok, Params: sampler.Params{Stop: []string{"x"}}}); !errors.Is(err, ErrNoTokenizer) {
		t.Fatalf("stop without tokenizer: %v", err)
	}
}

// runAll adds the prompts as requests "0", "1", … and drains.
func runAll(t testing.TB, e *Engine, prompts [][]int32, p sampler.Params) map[string]*result {
	t.Helper()
	for i, pr := range prompts {
		if err := e.Add(Request{ID: fmt.Sprint(i), Prompt: pr, Params: p}); err != nil {
			t.Fatal(err)
		}
	}
	return drain(t, e)
}

func samePerRequest(t *testing.T, what string, got, want map[string]*result) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d results, want %d", what, len(got), len(want))
	}
	for id, w := range want {
		g := got[id]
		if g == nil || !slices.Equal(g.tokens, w.tokens) || g.reason != w.reason || g.text != w.text {
			t.Fatalf("%s: request %s\n got %v %q (%s)\nwant %v %q (%s)", what, id, g.tokens, g.text, g.reason, w.tokens, w.text, w.reason)
		}
	}
}

func TestGreedyOne(t *testing.T) {
	e, ctx := newEngine(t, models.ContextParams{ContextLen: 256, MaxSeqs: 1}, Config{})
	r := rand.New(rand.NewPCG(1, 2))
	pr := prompt(r, 10)
	res := runAll(t, e, [][]int32{pr}, greedy(20))
	got := res["0"]
	// The same tokens by hand with Decode on a fresh context.
	m, _ := tiny(t)
	ref, err := m.NewContext(models.ContextParams{ContextLen: 256})
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	logits, err := decodeSeq(ref, 0, pr)
	if err != nil {
		t.Fatal(err)
	}
	var want []int32
	for range 20 {
		tok := int32(slices.Index(logits, slices.Max(logits)))
		want = append(want, tok)
		if logits, err = decodeSeq(ref, 0, []int32{tok}); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(got.tokens, want) || got.reason != "length" {
		t.Fatalf("got %v (%s), want %v", got.tokens, got.reason, want)
	}
	if got.usage != (Usage{PromptTokens: 10, CompletionTokens: 20}) {
		t.Fatalf("usage %+v", got.usage)
	}
	if used := usedCells(ctx); used != 0 {
		t.Fatalf("%d cells in use after the end", used)
	}
	t.Logf("tokens %v text %q", got.tokens, got.text)
}

// mixed are the parameter sets the equality tests run: greedy, and seeded
// sampling (which notices a changed logit far more often than argmax).
func mixed() map[string]sampler.Params {
	seed := uint64(7)
	return map[string]sampler.Params{
		"greedy": greedy(24),
		"seeded": {Temperature: 1, Seed: &seed, MaxTokens: 24, IgnoreEOS: true},
	}
}

func prompts(seed uint64, n, minLen, maxLen int) [][]int32 {
	r := rand.New(rand.NewPCG(seed, 99))
	out := make([][]int32, n)
	for i := range out {
		out[i] = prompt(r, minLen+r.IntN(maxLen-minLen+1))
	}
	return out
}

func TestPreemptionEqualsLargeCache(t *testing.T) {
	prs := prompts(3, 6, 6, 16)
	for name, p := range mixed() {
		t.Run(name, func(t *testing.T) {
			big, _ := newEngine(t, models.ContextParams{ContextLen: 256, MaxSeqs: 6}, Config{})
			want := runAll(t, big, prs, p)
			small, ctx := newEngine(t, models.ContextParams{ContextLen: 48, MaxSeqs: 6}, Config{})
			got := runAll(t, small, prs, p)
			samePerRequest(t, "ContextLen 48", got, want)
			if small.count.preemptions == 0 {
				t.Fatal("no preemption happened: the test does not test it")
			}
			if u := usedCells(ctx); u != 0 {
				t.Fatalf("%d cells in use at the end", u)
			}
			t.Logf("%d preemptions", small.count.preemptions)
		})
	}
}

func TestChunkedPrefillEqualsWhole(t *testing.T) {
	prs := prompts(4, 5, 20, 60)
	for name, p := range mixed() {
		t.Run(name, func(t *testing.T) {
			whole, _ := newEngine(t, models.ContextParams{ContextLen: 512, MaxSeqs: 5, BatchSize: 512}, Config{})
			want := runAll(t, whole, prs, p)
			chunked, _ := newEngine(t, models.ContextParams{ContextLen: 512, MaxSeqs: 5, BatchSize: 512}, Config{MaxBatchTokens: 7})
			got := runAll(t, chunked, prs, p)
			samePerRequest(t, "budget 7", got, want)
		})
	}
}

func TestBatchInvariance(t *testing.T) {
	prs := prompts(5, 16, 3, 30)
	for name, p := range mixed() {
		t.Run(name, func(t *testing.T) {
			alone, _ := newEngine(t, models.ContextParams{ContextLen: 1024, MaxSeqs: 16}, Config{})
			want := runAll(t, alone, prs[:1], p)
			together, _ := newEngine(t, models.ContextParams{ContextLen: 1024, MaxSeqs: 16}, Config{})
			got := runAll(t, together, prs, p)
			samePerRequest(t, "among 16", map[string]*result{"0": got["0"]}, want)
			// and every other request equals its own run alone
			for i := 1; i < len(prs); i += 7 {
				one, _ := newEngine(t, models.ContextParams{ContextLen: 1024, MaxSeqs: 16}, Config{})
				w := runAll(t, one, prs[i:i+1], p)
				samePerRequest(t, fmt.Sprint("request ", i), map[string]*result{"0": got[fmt.Sprint(i)]}, w)
			}
		})
	}
}

func TestPromptTooLongAndLengthCap(t *testing.T) {
	e, ctx := newEngine(t, models.ContextParams{ContextLen: 32, MaxSeqs: 2}, Config{})
	r := rand.New(rand.NewPCG(6, 6))
	err := e.Add(Request{ID: "long", Prompt: prompt(r, 33), Params: greedy(0)})
	if !errors.Is(err, ErrPromptTooLong) || errcode.Of(err) != errcode.PromptTooLong ||
		!strings.Contains(err.Error(), "33 tokens exceed the context of 32") {
		t.Fatalf("33 tokens in a context of 32: err %v [%s], want ErrPromptTooLong naming both", err, errcode.Of(err))
	}
	for _, q := range []Request{
		{ID: "full", Prompt: prompt(r, 32), Params: greedy(0)}, // the whole context: one token drawn
		{ID: "fits", Prompt: prompt(r, 30), Params: greedy(0)}, // default max_tokens: 32-30
		{ID: "capped", Prompt: prompt(r, 5), Params: greedy(100)},
	} {
		if err := e.Add(q); err != nil {
			t.Fatalf("%s: %v", q.ID, err)
		}
	}
	res := drain(t, e)
	if _, ok := res["long"]; ok {
		t.Fatalf("the refused request ran: %+v", res["long"])
	}
	if g := res["full"]; g.reason != "length" || len(g.tokens) != 1 {
		t.Fatalf("full: %+v", g)
	}
	if g := res["fits"]; g.reason != "length" || len(g.tokens) != 2 {
		t.Fatalf("fits: %+v", g)
	}
	if g := res["capped"]; g.reason != "length" || len(g.tokens) != 32-5 {
		t.Fatalf("capped: %d tokens (%s), want %d", len(g.tokens), g.reason, 32-5)
	}
	if u := usedCells(ctx); u != 0 {
		t.Fatalf("%d cells in use", u)
	}
}

func TestStopTokensAndEOS(t *testing.T) {
	pr := prompts(8, 1, 8, 8)
	e, _ := newEngine(t, models.ContextParams{ContextLen: 256, MaxSeqs: 1}, Config{})
	seed := uint64(11)
	p := sampler.Params{Temperature: 1.5, Seed: &seed, MaxTokens: 40, IgnoreEOS: true}
	full := runAll(t, e, pr, p)["0"]
	// Stop at the fifth token's id: output ends there, the token included,
	// its text left out.
	stop := full.tokens[4]
	k := slices.Index(full.tokens, stop)
	p2 := p
	p2.StopTokenIDs = []int32{stop}
	got := runAll(t, e, pr, p2)["0"]
	if got.reason != "stop" || !slices.Equal(got.tokens, full.tokens[:k+1]) {
		t.Fatalf("stop token %d: got %v (%s), want %v", stop, got.tokens, got.reason, full.tokens[:k+1])
	}
	wantText, _ := tinyTok.Decode(full.tokens[:k], true)
	if got.text != wantText {
		t.Fatalf("stop token text %q, want %q", got.text, wantText)
	}
	// The same id as EOS, unless IgnoreEOS.
	eosEng, err := New(tinyM, e.ctx, tinyTok, Config{EOS: []int32{stop}})
	if err != nil {
		t.Fatal(err)
	}
	p3 := p
	p3.IgnoreEOS = false
	if got := runAll(t, eosEng, pr, p3)["0"]; got.reason != "stop" || len(got.tokens) != k+1 {
		t.Fatalf("eos: %v (%s)", got.tokens, got.reason)
	}
	if got := runAll(t, eosEng, pr, p)["0"]; got.reason != "length" || len(got.tokens) != 40 {
		t.Fatalf("IgnoreEOS: %d tokens (%s)", len(got.tokens), got.reason)
	}
}

// TestStopStrings cuts a sampled text at stop strings that span token
// boundaries; the text out is the text up to the stop string, and every
// delta is whole UTF-8.
func TestStopStrings(t *testing.T) {
	pr := prompts(9, 1, 8, 8)
	e, _ := newEngine(t, models.ContextParams{ContextLen: 256, MaxSeqs: 1}, Config{})
	seed := uint64(12)
	p := sampler.Params{Temperature: 1.5, Seed: &seed, MaxTokens: 60, IgnoreEOS: true}
	full := runAll(t, e, pr, p)["0"]
	// token i's text starts at bounds[i] of the full text
	var bounds []int
	for i := range full.tokens {
		s, _ := tinyTok.Decode(full.tokens[:i], true)
		bounds = append(bounds, len(s))
	}
	tested := 0
	for i := 2; i < len(bounds)-2 && tested < 6; i += 3 {
		b := bounds[i]
		if b < 2 || b+2 > len(full.text) || bounds[i+1]-b == 0 {
			continue
		}
		stop := full.text[b-2 : b+2] // two bytes of each side of a boundary
		if !utf8Valid(stop) {
			continue
		}
		want := full.text[:strings.Index(full.text, stop)]
		p2 := p
		p2.Stop = []string{"\x00never", stop}
		got := runAll(t, e, pr, p2)["0"]
		if got.reason != "stop" || got.text != want {
			t.Fatalf("stop %q: got %q (%s), want %q", stop, got.text, got.reason, want)
		}
		tested++
	}
	if tested < 2 {
		t.Fatalf("only %d stop strings tried; text %q", tested, full.text)
	}
	// A stop string that never appears changes nothing, even when it
	// shares a prefix with the text (held back, then released).
	p3 := p
	p3.Stop = []string{full.text[len(full.text)-1:] + "\x01"}
	if got := runAll(t, e, pr, p3)["0"]; got.text != full.text || got.reason != "length" {
		t.Fatalf("unmatched stop: %q (%s), want %q", got.text, got.reason, full.text)
	}
}

func utf8Valid(s string) bool {
	return strings.ToValidUTF8(s, "\uFFFD") == s && !strings.Contains(s, "\uFFFD")
}

func TestLogprobs(t *testing.T) {
	e, _ := newEngine(t, models.ContextParams{ContextLen: 256, MaxSeqs: 1}, Config{})
	p := greedy(5)
	p.Logprobs = 3
	got := runAll(t, e, prompts(10, 1, 5, 5), p)["0"]
	if len(got.lps) != 5 {
		t.Fatalf("%d logprob entries for 5 tokens", len(got.lps))
	}
	for i, lp := range got.lps {
		if lp.ID != got.tokens[i] || len(lp.Top) != 3 || lp.Top[0].ID != lp.ID || lp.Top[0].Logprob != lp.Logprob || lp.Logprob > 0 {
			t.Fatalf("token %d: %+v", i, lp)
		}
	}
}

func TestAbortFreesCells(t *testing.T) {
	e, ctx := newEngine(t, models.ContextParams{ContextLen: 256, MaxSeqs: 4}, Config{MaxBatchTokens: 8})
	for i, pr := range prompts(11, 4, 10, 20) {
		e.Add(Request{ID: fmt.Sprint(i), Prompt: pr, Params: greedy(50)})
	}
	e.Step()
	e.Step() // 0 decodes, 1 and 2 part-prefilled
	if !e.Abort("1") || !e.Abort("3") || e.Abort("3") || e.Abort("nope") {
		t.Fatal("Abort reports wrong")
	}
	res := drain(t, e)
	if res["1"].reason != "abort" || res["3"].reason != "abort" || res["0"].reason != "length" || res["2"].reason != "length" {
		t.Fatalf("reasons %s %s %s %s", res["0"].reason, res["1"].reason, res["2"].reason, res["3"].reason)
	}
	if u := usedCells(ctx); u != 0 {
		t.Fatalf("%d cells in use", u)
	}
	if len(e.blocks.free) != 4 {
		t.Fatalf("%d sequence ids free, want 4", len(e.blocks.free))
	}
}

func modelsParams(cells, seqs int) models.ContextParams {
	return models.ContextParams{ContextLen: cells, MaxSeqs: seqs}
}
