package sampler

import (
	"math/rand/v2"
	"testing"
)

// lmLogits returns a row shaped like a language model's: vocab logits
// drawn from a normal with standard deviation 2.5, and a few tokens far
// above the rest (the likely continuations).
func lmLogits(vocab int, seed uint64) []float32 {
	r := rand.New(rand.NewPCG(seed, 1))
	x := make([]float32, vocab)
	for i := range x {
		x[i] = float32(2.5 * r.NormFloat64())
	}
	for _, v := range []float32{14, 13, 12.5, 11} {
		x[r.IntN(vocab)] = v
	}
	return x
}

// BenchmarkSample draws one token from a 49,152-entry row (SmolLM2's
// vocabulary) per iteration, greedy and at temperature 0.8 with top-p or
// top-k.
func BenchmarkSample(b *testing.B) {
	logits := lmLogits(49152, 1)
	for _, c := range []struct {
		name string
		p    Params
	}{
		{"greedy", Params{}},
		{"temp=0.8/top_p=0.95", Params{Temperature: 0.8, TopP: 0.95}},
		{"temp=0.8/top_k=40", Params{Temperature: 0.8, TopK: 40}},
	} {
		b.Run(c.name, func(b *testing.B) {
			c.p.Seed = seed(1)
			s := New(c.p, nil)
			for b.Loop() {
				s.Sample(logits)
			}
		})
	}
}
