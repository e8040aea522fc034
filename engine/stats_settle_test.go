package engine

import (
	"context"
	"testing"

	"github.com/vkllm/vkllm/sampler"
)

// TestStatsCountWhatWasDelivered: once a caller has its request's last
// output, Stats counts that request and the tokens it computed (the loop
// publishes a step's stats before it delivers the step's outputs), so a
// caller comparing Stats before and after a request sees all of it.
func TestStatsCountWhatWasDelivered(t *testing.T) {
	l := openLLM(t, Options{ContextLen: 256, MaxSeqs: 4, CacheBytes: -1}) // no inference cache: every request runs
	defer l.Close()
	p := sampler.Params{MaxTokens: 3, IgnoreEOS: true}
	for i := range 200 {
		before := l.Stats()
		if _, err := l.Generate(context.Background(), []string{"the quick brown fox"}, p); err != nil {
			t.Fatal(err)
		}
		after := l.Stats()
		var fb, fa uint64
		for _, n := range before.Finished {
			fb += n
		}
		for _, n := range after.Finished {
			fa += n
		}
		if fa != fb+1 || after.ComputedTokens <= before.ComputedTokens {
			t.Fatalf("request %d: finished %d → %d, computed %d → %d: Stats lags the delivered output",
				i, fb, fa, before.ComputedTokens, after.ComputedTokens)
		}
	}
}
