package engine

import (
	"context"
	"testing"

	"github.com/vkllm/vkllm/internal/testmodel"
	"github.com/vkllm/vkllm/kernels/cpu"
	"github.com/vkllm/vkllm/models"
	"github.com/vkllm/vkllm/sampler"
)

// TestSpecAllocatesNothing: with drafts, a verifying step asks for the
// logits of every draft token of every running request; the LLM makes
// its Context for that many rows, so serving allocates nothing on the
// backend after the first request.
func TestSpecAllocatesNothing(t *testing.T) {
	cb := &testmodel.Counting{Backend: cpu.New(0)}
	t.Cleanup(func() { cb.Close() })
	const seqs, drafts = 4, 5
	l, err := Open(context.Background(), tinyModel, Options{MaxSeqs: seqs, ContextLen: 256, CacheBytes: -1,
		DraftProposer: fixedProposer{5, 6, 7, 8, 9}, DraftMax: drafts, Model: []models.Option{models.WithBackend(cb)}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	p := sampler.Params{MaxTokens: 12, IgnoreEOS: true}
	prompt := []int32{3, 4, 5, 6, 7, 8}
	run := func(prompts [][]int32) {
		t.Helper()
		errs := make(chan error, len(prompts))
		for _, pr := range prompts {
			go func() {
				for _, err := range l.StreamTokens(context.Background(), pr, p) {
					if err != nil {
						errs <- err
						return
					}
				}
				errs <- nil
			}()
		}
		for range prompts {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
	}
	run([][]int32{prompt})
	base := cb.Allocs()
	prompts := make([][]int32, seqs)
	for i := range prompts {
		prompts[i] = append([]int32{int32(10 + i)}, prompt...)
	}
	run(prompts)
	st := l.Stats()
	if st.DraftTokens < seqs*drafts {
		t.Fatalf("%d draft tokens: the test needs steps verifying every request's drafts", st.DraftTokens)
	}
	if got := cb.Allocs() - base; got != 0 {
		t.Fatalf("%d backend allocations while %d requests verified drafts (%d draft tokens)", got, seqs, st.DraftTokens)
	}
}
