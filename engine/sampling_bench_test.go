package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/vkllm/vkllm/models"
	"github.com/vkllm/vkllm/sampler"
)

// BenchmarkSampling: what sampling costs per generated token in the
// engine, greedy against temperature 0.8 / top-p 0.95 (the draw without
// a full sort), at batch 1 and 16: 32-token prompts, 64 tokens each, on
// qwen2-tiny or VKLLM_BENCH_MODEL on the default backend. Compare the two
// with benchstat -col /sampling:
//
//	VKLLM_BENCH_MODEL=~/.cache/vkllm/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf \
//	go test ./engine -run '^$' -bench Sampling -count 6 | benchstat -col /sampling -
func BenchmarkSampling(b *testing.B) {
	path := tinyModel
	if p := os.Getenv("VKLLM_BENCH_MODEL"); p != "" {
		path = p
	}
	m, err := models.Open(context.Background(), path)
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	vocab := m.Config.VocabSize
	for _, batch := range []int{1, 16} {
		r := rand.New(rand.NewPCG(1, 2))
		prs := make([][]int32, batch)
		for i := range prs {
			for range 32 {
				prs[i] = append(prs[i], int32(3+r.IntN(min(vocab, 32000)-3)))
			}
		}
		for _, mode := range []string{"greedy", "top-p"} {
			b.Run(fmt.Sprintf("batch=%d/sampling=%s", batch, mode), func(b *testing.B) {
				ctx, err := m.NewContext(models.ContextParams{ContextLen: batch * 128, MaxSeqs: batch, BatchSize: 512})
				if err != nil {
					b.Fatal(err)
				}
				defer ctx.Close()
				e, err := New(m, ctx, nil, Config{})
				if err != nil {
					b.Fatal(err)
				}
				tokens := 0
				for b.Loop() {
					for i, pr := range prs {
						p := sampler.Params{MaxTokens: 64, IgnoreEOS: true}
						if mode == "top-p" {
							seed := uint64(i)
							p.Temperature, p.TopP, p.Seed = 0.8, 0.95, &seed
						}
						if err := e.Add(Request{ID: fmt.Sprint(i), Prompt: pr, Params: p}); err != nil {
							b.Fatal(err)
						}
					}
					tokens += countTokens(b, drain(b, e))
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(tokens)/1e6, "ms/token")
				b.ReportMetric(0, "ns/op")
			})
		}
	}
}
