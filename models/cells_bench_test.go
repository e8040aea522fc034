package models

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/vkllm/vkllm/kernels"
)

// BenchmarkDecodeCells: one-token decode steps with 64 cells in use, in
// a context of 512 cells and of 32768: a step's cost should follow the
// cells in use, not ContextLen. Besides tok/s it reports the process's
// CPU time per token (cpu-µs/tok), which a busy machine disturbs far
// less than wall time. The model is qwen2-tiny or
// VKLLM_BENCH_MODEL, on "cpu" and, where a Vulkan device is, "vulkan":
//
//	VKLLM_BENCH_MODEL=~/.cache/vkllm/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf \
//	go test ./models -run '^$' -bench DecodeCells -count 6 | benchstat -col /ctx -
func BenchmarkDecodeCells(b *testing.B) {
	path := filepath.Join(testdata, "qwen2-tiny")
	if p := os.Getenv("VKLLM_BENCH_MODEL"); p != "" {
		path = p
	}
	for _, backend := range []string{kernels.CPU, kernels.Vulkan} {
		m, err := Open(context.Background(), path, WithBackendName(backend, kernels.Options{}))
		if err != nil {
			b.Logf("%s: %v", backend, err)
			continue
		}
		for _, cells := range []int{512, 32768} {
			b.Run(fmt.Sprintf("backend=%s/ctx=%d", backend, cells), func(b *testing.B) {
				ctx, err := m.NewContext(ContextParams{ContextLen: cells, MaxSeqs: 8, BatchSize: 64})
				if err != nil {
					b.Skip(err)
				}
				defer ctx.Close()
				prompt := make([]int32, 63)
				for i := range prompt {
					prompt[i] = int32(3 + i*7%200)
				}
				if _, err := prefill(ctx, 0, prompt); err != nil {
					b.Fatal(err)
				}
				cpu0, cpuOK := cpuTime()
				for b.Loop() {
					if _, err := decodeToken(ctx, 0, 5); err != nil { // the 64th cell
						b.Fatal(err)
					}
					if err := ctx.SeqRm(0, 63, -1); err != nil { // and back to 63
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tok/s")
				if cpu1, ok := cpuTime(); ok && cpuOK {
					b.ReportMetric(float64((cpu1-cpu0).Microseconds())/float64(b.N), "cpu-µs/tok")
				}
			})
		}
		m.Close()
	}
}
