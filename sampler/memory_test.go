package sampler

import (
	"math/rand/v2"
	"runtime"
	"testing"
)

// TestIdleSamplersHoldNoBuffers: samplers between draws (the many
// choices of requests that wait, or that ended and are not yet
// collected) hold no vocabulary-sized buffers: the memory of many live
// samplers is bounded by the draws running at once, not by how many
// samplers there are.
func TestIdleSamplersHoldNoBuffers(t *testing.T) {
	const vocab, samplers = 65536, 100
	r := rand.New(rand.NewPCG(1, 2))
	logits := make([]float32, vocab)
	for i := range logits {
		logits[i] = float32(r.NormFloat64() * 3)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	live := make([]*Sampler, samplers)
	for i := range live {
		s := New(Params{Temperature: 1, TopP: 0.9, PresencePenalty: 0.5}, nil)
		s.Sample(logits)
		d := s.Dist(logits, nil)
		s.Verify(logits, 5, d)
		live[i] = s
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	grew := float64(int64(after.HeapInuse)-int64(before.HeapInuse)) / (1 << 20)
	t.Logf("heap grew by %.1f MiB for %d idle samplers of a %d-token vocabulary", grew, samplers, vocab)
	// One draw's buffers are ≈ 2.5 MiB: a few of them pooled, not 100.
	if grew > 24 {
		t.Errorf("heap grew by %.1f MiB; want at most 24", grew)
	}
	runtime.KeepAlive(live)
}
