package engine

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/vkllm/vkllm/kernels"
	"github.com/vkllm/vkllm/kernels/cpu"
	"github.com/vkllm/vkllm/kernels/kerneltest"
	"github.com/vkllm/vkllm/models"
	"github.com/vkllm/vkllm/sampler"
)

// Workers share one backend; the fast CPU path keeps per-backend scratch,
// so two workers decoding at once must take turns on it (models.Model
// serialises its contexts). Under -race this is the test that caught two
// workers racing on that scratch; it also checks that each request's
// greedy tokens are those of a one-worker engine.
func TestWorkersShareFastBackend(t *testing.T) {
	fast := []models.Option{models.WithBackendName("cpu", kernels.Options{})}
	prompts := []string{"the cat", "a dog and", "one two three", "x y", "hello", "the the the", "blue", "so it goes"}
	p := sampler.Params{MaxTokens: 12, IgnoreEOS: true}
	one := openLLM(t, Options{ContextLen: 128, MaxSeqs: 8, Model: fast})
	want, err := one.Generate(context.Background(), prompts, p)
	one.Close()
	if err != nil {
		t.Fatal(err)
	}
	l := openLLM(t, Options{ContextLen: 128, MaxSeqs: 4, Workers: 2, Model: fast})
	defer l.Close()
	var wg sync.WaitGroup
	for i, pr := range prompts {
		wg.Go(func() {
			got, err := l.Generate(context.Background(), []string{pr}, p)
			if err != nil {
				t.Error(err)
				return
			}
			if !slices.Equal(got[0].Tokens, want[i].Tokens) {
				t.Errorf("prompt %q: %v with two workers, %v with one", pr, got[0].Tokens, want[i].Tokens)
			}
		})
	}
	wg.Wait()
}

// TestForwardPanicFailsRequests: a panic in a worker's forward pass (a
// backend bug) fails that step's requests with a *models.PanicError
// instead of killing the process; the LLM frees their cells and serves
// the next request.
func TestForwardPanicFailsRequests(t *testing.T) {
	fb := &kerneltest.Faulty{Backend: cpu.New(0)}
	defer fb.Close()
	l := openLLM(t, Options{ContextLen: 64, MaxSeqs: 2, Model: []models.Option{models.WithBackend(fb)}})
	defer l.Close()
	p := sampler.Params{MaxTokens: 4, IgnoreEOS: true}
	want, err := l.Generate(context.Background(), []string{"the cat"}, p)
	if err != nil {
		t.Fatal(err)
	}
	fb.Armed.Store(true)
	_, err = l.Generate(context.Background(), []string{"the cat", "a dog"}, p)
	var pe *models.PanicError
	if !errors.As(err, &pe) || pe.Value != kerneltest.FaultValue {
		t.Fatalf("got %v, want a *models.PanicError", err)
	}
	fb.Armed.Store(false)
	checkNoCells(t, l)
	got, err := l.Generate(context.Background(), []string{"the cat"}, p)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got[0].Tokens, want[0].Tokens) {
		t.Fatalf("after the panic: %v, before: %v", got[0].Tokens, want[0].Tokens)
	}
}
