package engine

import (
	"context"
	"strings"
	"testing"

	"github.com/vkllm/vkllm/sampler"
)

// TestKVUsageCountsRunningOnly: the cells an idle engine keeps for cached
// prefixes are reported as retained, not as in use, so KVUsage (vLLM's
// kv_cache_usage_perc) is 0 when nothing runs, and evicting them frees
// exactly KVRetained cells.
func TestKVUsageCountsRunningOnly(t *testing.T) {
	tiny(t)
	l := openLLM(t, Options{ContextLen: 256, MaxSeqs: 2})
	defer l.Close()
	prompt := strings.Repeat("the sea and the mountains in spring ", 8) // several whole blocks
	if _, err := l.Generate(context.Background(), []string{prompt}, sampler.Params{MaxTokens: 4}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.cellsUsed(); err != nil { // after the step that finished it, and its stats
		t.Fatal(err)
	}
	st := l.Stats()
	if st.KVUsed < BlockSize || st.KVRetained != st.KVUsed || st.KVUsage() != 0 || st.KVRetainedUsage() <= 0 {
		t.Fatalf("idle with a cached prefix: used %d, retained %d, usage %v, retained usage %v; want retained = used > 0 and usage 0",
			st.KVUsed, st.KVRetained, st.KVUsage(), st.KVRetainedUsage())
	}
	checkNoCells(t, l) // evicting the retained cells leaves none
}
