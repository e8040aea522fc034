package engine

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// BenchmarkPrefixHitRate measures the prefix cache's hit rate (cached
// prompt tokens / prompt tokens, from Stats) when requests share a
// 200-token system prompt and 16 run at once: a burst of 16 requests
// added together, and 64 requests queued at once (a steady full load).
// Each prompt is the system prompt and a user turn of 8 to 40 tokens;
// each request draws 8 tokens.
func BenchmarkPrefixHitRate(b *testing.B) {
	const running, system = 16, 200
	r := rand.New(rand.NewPCG(31, 32))
	sys := prompt(r, system)
	for _, n := range []int{16, 64} {
		prs := make([][]int32, n)
		for i := range prs {
			prs[i] = append(slices.Clone(sys), prompt(r, 8+r.IntN(33))...)
		}
		b.Run(fmt.Sprintf("requests=%d", n), func(b *testing.B) {
			var hits, queries uint64
			for b.Loop() {
				e := hitRateEngine(b, running)
				runAll(b, e, prs, greedy(8))
				st := e.Stats()
				hits += st.PrefixHits
				queries += st.PrefixQueries
			}
			b.ReportMetric(100*float64(hits)/float64(queries), "hit%")
		})
	}
}

// hitRateEngine is an engine running n requests at once, with the prefix
// cache, on 4096 cells.
func hitRateEngine(b *testing.B, n int) *Engine {
	e, _ := newEngine(b, modelsParams(4096, 2*n), Config{MaxSeqs: n, PrefixCache: true})
	return e
}
