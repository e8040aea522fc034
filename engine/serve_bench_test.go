package engine

import (
	"context"
	"fmt"
	"math"
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
// percentiles; then "ceiling" times the same work on a bare Context
// (serveCeiling) and reports the most continuous batching can give here
// (ceiling_x). The model is qwen2-tiny, or VKLLM_BENCH_MODEL (a GGUF or
// folder) with VKLLM_BENCH_BACKEND (default "cpu") and an F32 KV cache,
// or F16 with VKLLM_BENCH_KV=f16 (a model without a tokenizer, such as
// vkllm bench --synthetic SHAPE:DTYPE --write-gguf writes, will do):
//
//	VKLLM_BENCH_MODEL=~/.cache/vkllm/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf \
//	go test ./engine -run '^$' -bench Serve -benchtime 1x
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
	l, err := Open(context.Background(), path, Options{ContextLen: 4096, MaxSeqs: nReq, NoPrefixCache: true, CacheBytes: -1, KVType: kv,
		Model: []models.Option{models.WithBackendName(backend, kernels.Options{})}})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	r := rand.New(rand.NewPCG(1, 2))
	vocab := l.Model().Config.VocabSize
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
	b.Run(fmt.Sprintf("ceiling/n=%d", nReq), func(b *testing.B) {
		m, err := models.Open(context.Background(), path, models.WithBackendName(backend, kernels.Options{}))
		if err != nil {
			b.Fatal(err)
		}
		defer m.Close()
		for b.Loop() {
			c, err := serveCeiling(m, prs, nOut, kv)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(c.pp, "pp_tok/s")
			b.ReportMetric(c.tg, "tg_tok/s")
			b.ReportMetric(c.batch, "batch_tok/s")
			b.ReportMetric(c.sequential, "sequential_s")
			b.ReportMetric(c.concurrent, "concurrent_s")
			b.ReportMetric(c.sequential/c.concurrent, "ceiling_x")
		}
	})
}

// ceiling is serveCeiling's answer: the model's own rates on the serving
// workload and the two modes' times they add up to.
type ceiling struct {
	pp, tg, batch          float64 // prefill, one-token and n-token decode, tokens/s
	sequential, concurrent float64 // seconds
}

// serveCeiling times, on a bare Context (no engine: no scheduling,
// sampling or streaming), the work BenchmarkServe's two modes are made
// of: the prompts' prefills one after the other (both modes do them),
// nOut one-token decode steps of one more sequence after the same prompt
// length (what one by one does for every request), and nOut steps of one
// token of each of the len(prs) prefilled sequences (what all at once
// does instead), at the same contexts and with the logits read as the
// engine reads them. sequential is prefill + len(prs) × the one-token
// steps, concurrent prefill + the batched steps, and their quotient
// (ceiling_x) is what continuous batching can buy on this machine, set by
// the compute-bound rates (prefill, batched decode) against the
// memory-bound one (one-token decode), not by the scheduler. (The engine
// may pack several prompts into one prefill batch, a little faster than
// one at a time, so its ratio can come out slightly above.)
func serveCeiling(m *models.Model, prs [][]int32, nOut int, kvType tensor.DType) (ceiling, error) {
	if len(prs) == 0 || len(prs[0]) == 0 || nOut < 1 {
		return ceiling{}, fmt.Errorf("serveCeiling: %d prompts, %d output tokens", len(prs), nOut)
	}
	n, nPrompt := len(prs), len(prs[0])
	for _, pr := range prs {
		if len(pr) != nPrompt {
			return ceiling{}, fmt.Errorf("serveCeiling: prompts of %d and %d tokens (one length for all)", nPrompt, len(pr))
		}
	}
	ctx, err := m.NewContext(models.ContextParams{ContextLen: (n + 1) * (nPrompt + nOut), MaxSeqs: n + 1,
		BatchSize: max(n, nPrompt), KVType: kvType})
	if err != nil {
		return ceiling{}, err
	}
	defer ctx.Close()
	var c ceiling
	t0 := time.Now()
	for s, pr := range prs {
		if _, err := decodeSeq(ctx, models.SeqID(s), pr); err != nil {
			return c, err
		}
	}
	prefill := time.Since(t0).Seconds()
	c.pp = float64(n*nPrompt) / prefill
	// one sequence alone (id n, the first prompt again)
	if _, err := decodeSeq(ctx, models.SeqID(n), prs[0]); err != nil {
		return c, err
	}
	var one models.Batch
	one.Add(0, 0, true, models.SeqID(n))
	t0 = time.Now()
	for i := range nOut {
		one.Token[0], one.Pos[0] = prs[0][i%nPrompt], int32(nPrompt+i)
		if err := ctx.Decode(one); err != nil {
			return c, err
		}
		_ = ctx.Logits(0)
	}
	single := time.Since(t0).Seconds()
	c.tg = float64(nOut) / single
	// all n together
	var all models.Batch
	for s := range n {
		all.Add(0, 0, true, models.SeqID(s))
	}
	t0 = time.Now()
	for i := range nOut {
		for s := range n {
			all.Token[s], all.Pos[s] = prs[s][i%nPrompt], int32(nPrompt+i)
		}
		if err := ctx.Decode(all); err != nil {
			return c, err
		}
		for s := range n {
			_ = ctx.Logits(s)
		}
	}
	batched := time.Since(t0).Seconds()
	c.batch = float64(n*nOut) / batched
	c.sequential = prefill + float64(n)*single
	c.concurrent = prefill + batched
	return c, nil
}

// TestServeCeiling runs serveCeiling on qwen2-tiny: every rate and time
// comes out positive and finite, the two modes share the prefill's time,
// and prompts it cannot time alike are refused.
func TestServeCeiling(t *testing.T) {
	m, _ := tiny(t)
	prs := [][]int32{{5, 6, 7, 8, 9}, {10, 11, 12, 13, 14}, {15, 16, 17, 18, 19}}
	c, err := serveCeiling(m, prs, 4, tensor.F32)
	if err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]float64{"pp": c.pp, "tg": c.tg, "batch": c.batch, "sequential": c.sequential, "concurrent": c.concurrent} {
		if !(v > 0) || math.IsInf(v, 0) {
			t.Errorf("%s = %v, want a positive finite value", name, v)
		}
	}
	prefill := float64(len(prs)*5) / c.pp
	if seq, conc := c.sequential-float64(len(prs))*4/c.tg, c.concurrent-float64(len(prs)*4)/c.batch; math.Abs(seq-prefill) > 1e-9*prefill+1e-12 || math.Abs(conc-prefill) > 1e-9*prefill+1e-12 {
		t.Errorf("prefill %v s, sequential less its steps %v s, concurrent less its steps %v s: want all three equal", prefill, seq, conc)
	}
	for _, bad := range [][][]int32{nil, {{1, 2}, {3}}, {{}}} {
		if _, err := serveCeiling(m, bad, 4, tensor.F32); err == nil {
			t.Errorf("serveCeiling(%v) succeeded, want an error", bad)
		}
	}
}
