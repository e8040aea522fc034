package sampler

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
)

// refSample is the reference draw: Sample with the whole vocabulary
// sorted, as the sampler did before it selected only the head.
func refSample(s *Sampler, logits []float32) int32 {
	if s.hold() {
		defer s.release()
	}
	x := s.adjusted(logits)
	if s.p.Temperature == 0 {
		return argmax(x)
	}
	mx := math.Inf(-1)
	for i := range x {
		x[i] /= s.p.Temperature
		mx = math.Max(mx, x[i])
	}
	if math.IsInf(mx, -1) { // no finite logit: the greedy choice, see TestSampleNotFinite
		s.rng.Float64()
		return argmax(x)
	}
	return refDraw(s.p, s.rng, x)
}

// refDraw samples from softmax(x) restricted by top-k, top-p and min-p,
// over the fully sorted vocabulary.
func refDraw(p Params, rng *rand.Rand, x []float64) int32 {
	idx := make([]int32, len(x))
	for i := range idx {
		idx[i] = int32(i)
	}
	// Sort by logit, descending; ties by id so the order is deterministic.
	sort.Slice(idx, func(a, b int) bool {
		if x[idx[a]] != x[idx[b]] {
			return x[idx[a]] > x[idx[b]]
		}
		return idx[a] < idx[b]
	})
	n := len(idx)
	if k := p.TopK; k > 0 && k < n {
		n = k
	}
	mx := x[idx[0]]
	probs := make([]float64, n)
	var sum float64
	for i := 0; i < n; i++ {
		probs[i] = math.Exp(x[idx[i]] - mx)
		sum += probs[i]
	}
	for i := range probs {
		probs[i] /= sum
	}
	for n > 1 && probs[n-1] == 0 {
		n--
	}
	if mp := p.MinP; mp > 0 {
		cut := mp * probs[0]
		for n > 1 && probs[n-1] < cut {
			n--
		}
	}
	if tp := p.TopP; tp > 0 && tp < 1 {
		var c float64
		for i := 0; i < n; i++ {
			c += probs[i]
			if c >= tp {
				n = i + 1
				break
			}
		}
	}
	var total float64
	for i := 0; i < n; i++ {
		total += probs[i]
	}
	r := rng.Float64() * total
	for i := 0; i < n; i++ {
		r -= probs[i]
		if r < 0 {
			return idx[i]
		}
	}
	return idx[n-1]
}

// rows returns logit rows of many shapes: LM-like, with ties, with
// masked (-Inf) entries, very peaked, very flat, and spread so wide that
// most weights underflow to 0 or fall beyond the last bucket.
func rows(r *rand.Rand) map[string]func(vocab int) []float32 {
	fill := func(vocab int, f func(i int) float32) []float32 {
		x := make([]float32, vocab)
		for i := range x {
			x[i] = f(i)
		}
		return x
	}
	return map[string]func(int) []float32{
		"lm": func(v int) []float32 {
			x := fill(v, func(int) float32 { return float32(2.5 * r.NormFloat64()) })
			for range 3 {
				x[r.IntN(v)] = 8 + 6*r.Float32()
			}
			return x
		},
		"ties": func(v int) []float32 {
			return fill(v, func(int) float32 { return float32(r.IntN(4)) * 0.5 })
		},
		"quantized": func(v int) []float32 {
			return fill(v, func(int) float32 { return float32(math.Round(4*r.NormFloat64()) / 4) })
		},
		"masked": func(v int) []float32 {
			x := fill(v, func(int) float32 { return float32(2 * r.NormFloat64()) })
			for i := range x {
				if r.IntN(3) > 0 {
					x[i] = float32(math.Inf(-1))
				}
			}
			x[r.IntN(v)] = 1
			return x
		},
		"peaked": func(v int) []float32 {
			x := fill(v, func(int) float32 { return float32(r.NormFloat64()) })
			x[r.IntN(v)] = 40
			return x
		},
		"flat": func(v int) []float32 {
			return fill(v, func(int) float32 { return float32(1e-3 * r.NormFloat64()) })
		},
		"equal": func(v int) []float32 { return fill(v, func(int) float32 { return 3 }) },
		"wide": func(v int) []float32 {
			return fill(v, func(int) float32 { return float32(300 * r.NormFloat64()) })
		},
	}
}

// randomMask allows a random half of the vocabulary at each step.
type randomMask struct{ r *rand.Rand }

func (m randomMask) Allow(allowed []bool) {
	for i := range allowed {
		allowed[i] = m.r.IntN(2) == 0
	}
}
func (randomMask) Accept(int32) {}

// TestSampleMatchesFullSort checks that Sample draws, token for token, what
// the full sort of the vocabulary draws with the same seed, over rows of
// every shape and every combination of parameters.
func TestSampleMatchesFullSort(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	gens := rows(r)
	extras := map[string]func(p *Params, seed uint64){
		"plain": func(*Params, uint64) {},
		"penalties": func(p *Params, _ uint64) {
			p.RepetitionPenalty, p.FrequencyPenalty, p.PresencePenalty = 1.3, 0.5, 0.3
			p.LogitBias = map[int32]float64{0: 5, 1: -100}
		},
		"constraint": func(p *Params, seed uint64) {
			p.Constraint = randomMask{rand.New(rand.NewPCG(seed, 3))}
		},
	}
	var seqs, differ int
	// compare draws steps tokens with p from both samplers.
	compare := func(name string, vocab int, extra string, p Params) {
		logits := make([][]float32, 3)
		for i := range logits {
			logits[i] = gens[name](vocab)
		}
		sd := r.Uint64()
		p.Seed = seed(sd)
		q := p
		extras[extra](&p, sd)
		extras[extra](&q, sd)
		prompt := []int32{0, int32(vocab - 1)}
		got, want := New(p, prompt), New(q, prompt)
		seqs++
		for step, row := range logits {
			if a, b := got.Sample(row), refSample(want, row); a != b {
				if differ++; differ <= 5 {
					t.Errorf("%s vocab=%d %+v %s step %d: drew %d, full sort drew %d",
						name, vocab, p, extra, step, a, b)
				}
				return
			} else {
				got.Accept(a)
				want.Accept(b)
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(gens)) {
		for _, vocab := range []int{1, 2, 7, 60, 400} {
			for _, temp := range []float64{0.3, 0.8, 1.7} {
				for _, topK := range []int{0, 1, 3, 40, vocab} {
					for _, topP := range []float64{0, 0.5, 0.95, 1} {
						for _, minP := range []float64{0, 0.05, 1} {
							for _, extra := range slices.Sorted(maps.Keys(extras)) {
								compare(name, vocab, extra, Params{Temperature: temp, TopK: topK, TopP: topP, MinP: minP})
							}
						}
					}
				}
			}
		}
	}
	// A model's vocabulary, at the usual settings.
	for _, name := range []string{"lm", "masked"} {
		for _, p := range []Params{
			{Temperature: 0.8, TopP: 0.95},
			{Temperature: 0.8, TopK: 40},
			{Temperature: 0.8, MinP: 0.05},
			{Temperature: 1},
			{Temperature: 0.7, TopK: 1000, TopP: 0.9, MinP: 0.01},
		} {
			compare(name, 49152, "plain", p)
		}
	}
	if differ > 0 {
		t.Errorf("%d of %d draw sequences differ from the full sort", differ, seqs)
	}
}

// TestSampleNotFinite: a row with NaN, +Inf or only -Inf has no
// distribution; Sample returns the greedy choice and still takes one
// random number, so that the next draws stay those of the seed.
func TestSampleNotFinite(t *testing.T) {
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	good := []float32{0, 1, 2, 1, 0}
	for _, c := range []struct {
		name   string
		logits []float32
		want   int32
	}{
		{"+Inf", []float32{0, inf, 3, inf}, 1},
		{"NaN", []float32{0, 5, nan, 3}, 1},
		{"all -Inf", []float32{-inf, -inf, -inf}, 0},
		{"empty", nil, 0},
	} {
		for _, topK := range []int{0, 2} {
			p := Params{Temperature: 1, TopK: topK, TopP: 0.9, Seed: seed(5)}
			s, ref := New(p, nil), New(p, nil)
			if got := s.Sample(c.logits); got != c.want {
				t.Errorf("%s top_k=%d: drew %d, want the greedy %d", c.name, topK, got, c.want)
			}
			ref.rng.Float64()
			for range 5 {
				if a, b := s.Sample(good), ref.Sample(good); a != b {
					t.Fatalf("%s top_k=%d: the draws after it differ (%d, %d)", c.name, topK, a, b)
				}
			}
		}
	}
}

// TestSampleAllocs: after the first call, a draw allocates nothing (its
// buffers come from a pool).
func TestSampleAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop buffers on purpose; counted without -race")
	}
	logits := lmLogits(49152, 1)
	for _, p := range []Params{
		{Temperature: 0.8, TopP: 0.95},
		{Temperature: 0.8, TopK: 40},
		{Temperature: 0.8, MinP: 0.05},
		{Temperature: 1},
	} {
		p.Seed = seed(1)
		s := New(p, nil)
		s.Sample(logits)
		if n := testing.AllocsPerRun(20, func() { s.Sample(logits) }); n != 0 {
			t.Errorf("%+v: %v allocations per Sample, want 0", p, n)
		}
	}
}

// TestTopLogprobsMatchesFullSort compares TopLogprobs with the first k of
// all tokens sorted by log-probability, ties by id.
func TestTopLogprobsMatchesFullSort(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	gens := rows(r)
	for _, name := range slices.Sorted(maps.Keys(gens)) {
		for _, vocab := range []int{1, 5, 300} {
			logits := gens[name](vocab)
			mx := math.Inf(-1)
			for _, v := range logits {
				mx = math.Max(mx, float64(v))
			}
			var sum float64
			for _, v := range logits {
				sum += math.Exp(float64(v) - mx)
			}
			all := make([]Logprob, vocab)
			for i, v := range logits {
				all[i] = Logprob{ID: int32(i), Logprob: float64(v) - (mx + math.Log(sum))}
			}
			sort.SliceStable(all, func(a, b int) bool { return all[a].Logprob > all[b].Logprob })
			for _, k := range []int{1, 3, 20} {
				want := all[:min(k, vocab)]
				if got := TopLogprobs(logits, k); fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("%s vocab=%d k=%d: %v, want %v", name, vocab, k, got, want)
				}
			}
		}
	}
}

// TestBoundsSettleDraws: on rows shaped like a language model's, Z's
// bounds settle almost every draw, so it computes the weights of the
// tokens it orders (the head) and not the exact sum over the vocabulary:
// exactDraw, which weighs every token, is for the rare draw they leave
// undecided. (exactDraw turns the head's weights into probabilities, so
// the first is no longer exp(0) = 1 after it.)
func TestBoundsSettleDraws(t *testing.T) {
	const vocab, draws = 49152, 300
	for _, p := range []Params{
		{Temperature: 0.8, TopP: 0.95},
		{Temperature: 0.8, MinP: 0.05},
		{Temperature: 0.8},
		{Temperature: 1.5, TopP: 0.9},
		{Temperature: 0.3, TopP: 0.5},
	} {
		p.Seed = seed(7)
		s := New(p, nil)
		s.hold() // keep the buffers between draws, to look at them
		exact, head := 0, 0
		for i := range draws {
			s.Sample(lmLogits(vocab, uint64(i)))
			if s.probs[0] != 1 {
				exact++
			}
			head += len(s.head)
		}
		t.Logf("T %v top_p %v min_p %v: %d of %d draws exact, head %d tokens on average", p.Temperature, p.TopP, p.MinP, exact, draws, head/draws)
		if exact > draws/100 {
			t.Errorf("T %v top_p %v min_p %v: %d of %d draws needed every weight", p.Temperature, p.TopP, p.MinP, exact, draws)
		}
	}
}

// TestZBounds: weigh's bounds hold Z, the sum of every weight computed
// with math.Exp, and are within a few zSlack of each other, on rows of
// every shape the exactness test uses and at several temperatures.
func TestZBounds(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for trial := range 200 {
		n := 1 + r.IntN(5000)
		x := make([]float64, n)
		scale := []float64{0.01, 1, 3, 20, 200}[trial%5]
		for i := range x {
			x[i] = scale * r.NormFloat64()
		}
		if trial%7 == 0 {
			x[r.IntN(n)] = math.Inf(-1)
		}
		mx := math.Inf(-1)
		for _, v := range x {
			mx = max(mx, v)
		}
		s := New(Params{}, nil)
		s.hold()
		s.grow(n)
		s.weigh(x, mx)
		var z float64
		for _, v := range x {
			z += math.Exp(v - mx)
		}
		if !(s.zLo <= z && z <= s.zHi) || (s.zHi-s.zLo)/z > 3*zSlack {
			t.Fatalf("trial %d (n %d, scale %v): Z %v, bounds [%v, %v] (width %.3g of Z)", trial, n, scale, z, s.zLo, s.zHi, (s.zHi-s.zLo)/z)
		}
	}
}

// TestPast: a cumulative weight is past f·Z only when it is for every Z
// in the bounds; in between, nothing is settled.
func TestPast(t *testing.T) {
	for _, c := range []struct {
		c, f, lo, hi float64
		strict       bool
		yes, settled bool
	}{
		{c: 10, f: 0.5, lo: 19, hi: 21, settled: false}, // 0.5·19 ≤ 10 < 0.5·21
		{c: 11, f: 0.5, lo: 19, hi: 21, yes: true, settled: true},
		{c: 9, f: 0.5, lo: 19, hi: 21, yes: false, settled: true},
		{c: 10, f: 0.5, lo: 20, hi: 20, yes: true, settled: true},                // c = f·Z reaches it
		{c: 10, f: 0.5, lo: 20, hi: 20, strict: true, yes: false, settled: true}, // but does not pass it
		{c: 10.6, f: 0.5, lo: 20, hi: 21, strict: true, yes: true, settled: true},
		{c: 10.5, f: 0.5, lo: 20, hi: 21, strict: true, settled: false},
		{c: 10.2, f: 0.5, lo: 20, hi: 21, strict: true, settled: false},
	} {
		yes, settled := past(c.c, c.f, c.lo, c.hi, c.strict)
		if yes != c.yes || settled != c.settled {
			t.Errorf("past(%v, %v, %v, %v, strict %v) = %v, %v; want %v, %v", c.c, c.f, c.lo, c.hi, c.strict, yes, settled, c.yes, c.settled)
		}
	}
}
