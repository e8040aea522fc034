package engine

import (
	"fmt"
	"testing"
)

// BenchmarkConcurrent decodes 16 requests of 32 tokens each on one
// Engine, all at once (continuous batching) and one after the other. With
// qwen2-tiny (2 layers, hidden 64) the forward pass is so cheap that
// scheduling overhead weighs far more than on a real model: the numbers
// only indicate that batching works.
func BenchmarkConcurrent(b *testing.B) {
	const nReq, nTok = 16, 32
	prs := prompts(21, nReq, 8, 16)
	p := greedy(nTok)
	for _, mode := range []string{"concurrent", "sequential"} {
		b.Run(fmt.Sprintf("%s/n=%d", mode, nReq), func(b *testing.B) {
			e, _ := newEngine(b, modelsParams(1024, nReq), Config{})
			tokens := 0
			for b.Loop() {
				if mode == "concurrent" {
					tokens += countTokens(b, runAll(b, e, prs, p))
				} else {
					for _, pr := range prs {
						tokens += countTokens(b, runAll(b, e, [][]int32{pr}, p))
					}
				}
			}
			b.ReportMetric(float64(tokens)/b.Elapsed().Seconds(), "tok/s")
		})
	}
}

func countTokens(b *testing.B, res map[string]*result) int {
	n := 0
	for _, r := range res {
		n += len(r.tokens)
	}
	return n
}
