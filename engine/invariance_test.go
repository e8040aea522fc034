package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"sync"
	"testing"

	"github.com/vkllm/vkllm/kernels"
	_ "github.com/vkllm/vkllm/kernels/vulkan" // registers "vulkan"
	"github.com/vkllm/vkllm/models"
	"github.com/vkllm/vkllm/sampler"
)

// TestConcurrentSeededEqualsAlone: eight seeded requests at temperature
// 0.9 with logprobs, run concurrently on one LLM whose cache is short (so
// requests wait, finish and start in between, are usually preempted and
// recomputed, and reuse cached prefixes), give bit for bit the tokens and
// logprobs of the same requests run one at a time on a fresh LLM; and the
// same requests added at once to an Engine on that short cache, where
// preemption is certain, give them too. This holds only because every
// backend is batch- and placement-invariant.
func TestConcurrentSeededEqualsAlone(t *testing.T) {
	for _, name := range []string{kernels.CPU, kernels.CPURef, kernels.Vulkan} {
		t.Run(name, func(t *testing.T) {
			if name == kernels.Vulkan {
				b, err := kernels.Open(name, kernels.Options{})
				if err != nil {
					if os.Getenv("VKLLM_VULKAN_OPTIONAL") == "1" {
						t.Skipf("no Vulkan device (VKLLM_VULKAN_OPTIONAL=1): %v", err)
					}
					t.Fatalf("open vulkan: %v (run tools/install-deps.sh, or set VKLLM_VULKAN_OPTIONAL=1 to skip)", err)
				}
				b.Close()
			}
			concurrentSeeded(t, name)
		})
	}
}

func concurrentSeeded(t *testing.T, backend string) {
	const shared = "In the beginning the cat sat on the mat, and the dog sat on the log; " // a cached prefix
	prompts := []string{
		shared + "then", "one two three four", shared + "but", "a b c d e f g h i j",
		"hello there", shared + "so", "so it goes, and goes", "x",
	}
	type want struct {
		tokens []int32
		lps    []TokenLogprob
	}
	params := func(i int) sampler.Params {
		seed := uint64(1000 + i)
		return sampler.Params{Temperature: 0.9, Seed: &seed, MaxTokens: 6 + 3*i, IgnoreEOS: true, Logprobs: 3}
	}
	run := func(l *LLM, i int) (want, error) {
		res, err := l.Generate(context.Background(), []string{prompts[i]}, params(i))
		if err != nil {
			return want{}, err
		}
		return want{res[0].Tokens, res[0].Logprobs}, nil
	}

	alone := make([]want, len(prompts))
	l := openLLM(t, Options{Backend: backend, ContextLen: 256, MaxSeqs: 1})
	for i := range prompts {
		var err error
		if alone[i], err = run(l, i); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()

	// 8 requests, 3 running at once, 80 cells: not enough for three of
	// the longer ones, so some are preempted and recomputed.
	l = openLLM(t, Options{Backend: backend, ContextLen: 80, MaxSeqs: 3, BatchSize: 32})
	defer l.Close()
	got := make([]want, len(prompts))
	errs := make([]error, len(prompts))
	var wg sync.WaitGroup
	for i := range prompts {
		wg.Go(func() { got[i], errs[i] = run(l, i) })
	}
	wg.Wait()
	err := errors.Join(errs...)
	if err != nil {
		t.Fatal(err)
	}
	st := l.Stats()
	t.Logf("%s: preemptions %d, prefix hits %d of %d", backend, st.Preemptions, st.PrefixHits, st.PrefixQueries)
	for i := range prompts {
		if !slices.Equal(got[i].tokens, alone[i].tokens) {
			t.Fatalf("request %d: tokens %v concurrently, %v alone", i, got[i].tokens, alone[i].tokens)
		}
		for s, a := range alone[i].lps {
			if err := sameLogprob(got[i].lps[s], a); err != nil {
				t.Fatalf("request %d step %d: %v", i, s, err)
			}
		}
	}

	// The goroutines' timing decides how much the LLM's requests overlap;
	// on an Engine, all of them are added before the first step, so three
	// run at once on 80 cells and some are preempted.
	ids := make([][]int32, len(prompts))
	for i, pr := range prompts {
		if ids[i], err = l.Tokenizer().Encode(pr, true); err != nil {
			t.Fatal(err)
		}
	}
	ctx, err := l.Model().NewContext(models.ContextParams{ContextLen: 80, MaxSeqs: 3, BatchSize: 32})
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Close()
	e, err := New(l.Model(), ctx, l.Tokenizer(), Config{PrefixCache: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := range prompts {
		if err := e.Add(Request{ID: fmt.Sprint(i), Prompt: ids[i], Params: params(i)}); err != nil {
			t.Fatal(err)
		}
	}
	res := drain(t, e)
	if e.Stats().Preemptions == 0 {
		t.Fatalf("%s: no request was preempted on the Engine: the test no longer covers recomputation", backend)
	}
	for i := range prompts {
		r := res[fmt.Sprint(i)]
		if !slices.Equal(r.tokens, alone[i].tokens) {
			t.Fatalf("engine, request %d: tokens %v, %v alone", i, r.tokens, alone[i].tokens)
		}
		for s, a := range alone[i].lps {
			if err := sameLogprob(r.lps[s], a); err != nil {
				t.Fatalf("engine, request %d step %d: %v", i, s, err)
			}
		}
	}
}

// sameLogprob compares two steps' logprobs bit for bit.
func sameLogprob(got, want TokenLogprob) error {
	bits := math.Float64bits
	if got.ID != want.ID || bits(got.Logprob) != bits(want.Logprob) || len(got.Top) != len(want.Top) {
		return fmt.Errorf("logprob %+v concurrently, %+v alone", got, want)
	}
	for k := range want.Top {
		if got.Top[k].ID != want.Top[k].ID || bits(got.Top[k].Logprob) != bits(want.Top[k].Logprob) {
			return fmt.Errorf("top %d: %+v concurrently, %+v alone", k, got.Top[k], want.Top[k])
		}
	}
	return nil
}
