package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/vkllm/vkllm/kernels"
	_ "github.com/vkllm/vkllm/kernels/cpu"
	"github.com/vkllm/vkllm/models"
	"github.com/vkllm/vkllm/sampler"
	"github.com/vkllm/vkllm/tensor"
)

// BenchmarkServe serves 16 requests of 128 prompt and 128 output tokens
// on one LLM, all at once (continuous batching) and one after the other,
// and reports tokens/s with time to first token and inter-token latency
// percentiles. The model is qwen2-tiny, or VKLLM_BENCH_MODEL (a GGUF or
// folder) with VKLLM_BENCH_BACKEND (default "cpu") and an F32 KV cache,
// or F16 with VKLLM_BENCH_KV=f16:
//
//	VKLLM_BENCH_MODEL=~/.cache/vkllm/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf \
//	VKLLM_BENCH_BACKEND=cpu-fast go test ./engine -run '^$' -bench Serve -benchtime 1x
func BenchmarkServe(b *testing.B) {
	const nReq, nPrompt, nOut = 16, 128, 128
	path, backend := tinyModel, os.Getenv("VKLLM_BENCH_BACKEND")
	if p := os.Getenv("VKLLM_BENCH_MODEL"); p != "" {
		path = p
	}
	if backend == "" {
		backend = "cpu"
	}
	kv := tensor.F32
	if os.Getenv("VKLLM_BENCH_KV") == "f16" {
		kv = tensor.F16
	}
	l, err := Open(path, Options{ContextLen: 4096, MaxSeqs: nReq, NoPrefixCache: true, KVType: kv,
		Model: []models.Option{models.WithBackendName(backend, kernels.Options{})}})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	r := rand.New(rand.NewPCG(1, 2))
	vocab := l.Tokenizer().VocabSize()
	prs := make([][]int32, nReq)
	for i := range prs {
		for range nPrompt {
			prs[i] = append(prs[i], int32(3+r.IntN(min(vocab, 32000)-3)))
		}
	}
	p := sampler.Params{MaxTokens: nOut, IgnoreEOS: true}
	one := func(pr []int32, ttft, itl *[]time.Duration, mu *sync.Mutex) int {
		start, last, n := time.Now(), time.Time{}, 0
		var myITL []time.Duration
		var first time.Duration
		for d, err := range l.StreamTokens(context.Background(), pr, p) {
			if err != nil {
				b.Error(err)
				return n
			}
			now := time.Now()
			if n == 0 {
				first = now.Sub(start)
			} else {
				myITL = append(myITL, now.Sub(last))
			}
			last = now
			n += len(d.NewTokens)
		}
		mu.Lock()
		*ttft = append(*ttft, first)
		*itl = append(*itl, myITL...)
		mu.Unlock()
		return n
	}
	for _, mode := range []string{"concurrent", "sequential"} {
		b.Run(fmt.Sprintf("%s/n=%d", mode, nReq), func(b *testing.B) {
			var ttft, itl []time.Duration
			var mu sync.Mutex
			tokens := 0
			for b.Loop() {
				if mode == "concurrent" {
					var wg sync.WaitGroup
					counts := make([]int, nReq)
					for i, pr := range prs {
						wg.Go(func() { counts[i] = one(pr, &ttft, &itl, &mu) })
					}
					wg.Wait()
					for _, c := range counts {
						tokens += c
					}
				} else {
					for _, pr := range prs {
						tokens += one(pr, &ttft, &itl, &mu)
					}
				}
			}
			b.ReportMetric(float64(tokens)/b.Elapsed().Seconds(), "tok/s")
			pct := func(ds []time.Duration, q float64) float64 {
				if len(ds) == 0 {
					return 0
				}
				slices.Sort(ds)
				return ds[min(len(ds)-1, int(q*float64(len(ds))))].Seconds() * 1000
			}
			b.ReportMetric(pct(ttft, 0.5), "ttft_p50_ms")
			b.ReportMetric(pct(ttft, 0.99), "ttft_p99_ms")
			b.ReportMetric(pct(itl, 0.5), "itl_p50_ms")
			b.ReportMetric(pct(itl, 0.99), "itl_p99_ms")
		})
	}
}
