package sampler

import (
	"math"
	"math/rand/v2"
	"sync"
)

// Sampler draws tokens for one sequence.
type Sampler struct {
	p      Params
	rng    *rand.Rand
	seen   map[int32]bool // prompt and output tokens (repetition penalty)
	counts map[int32]int  // output tokens (frequency, presence)
	*bufs                 // only during a call (see hold)
}

// bufs are the vocabulary-sized buffers of one call of Sample, Dist or
// Verify. They hold nothing from one call to the next, so a Sampler
// takes them from a pool for the call only: the memory of idle samplers
// (the many choices of requests waiting or ended) is their history, and
// the buffers in use are bounded by the draws running at once.
type bufs struct {
	scratch []float64 // (vocab) adjusted logits
	allowed []bool    // (vocab) Constraint's mask
	dist    []float64 // (vocab) Verify's target distribution
	sel               // the draw's selection buffers (draw.go)
}

var bufPool = sync.Pool{New: func() any { return new(bufs) }}

// hold gives s buffers for a call, unless it has them (a call within
// a call), and reports whether it took them: then release gives them
// back at the end of the call.
func (s *Sampler) hold() bool {
	if s.bufs != nil {
		return false
	}
	s.bufs = bufPool.Get().(*bufs)
	return true
}

func (s *Sampler) release() {
	bufPool.Put(s.bufs)
	s.bufs = nil
}

// New returns a Sampler for validated params; prompt seeds the repetition
// penalty's history.
func New(p Params, prompt []int32) *Sampler {
	var seed uint64
	if p.Seed != nil {
		seed = *p.Seed
	} else {
		seed = rand.Uint64()
	}
	s := &Sampler{p: p, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		seen: map[int32]bool{}, counts: map[int32]int{}}
	for _, t := range prompt {
		s.seen[t] = true
	}
	return s
}

// Accept records a generated token for the penalties and the Constraint.
func (s *Sampler) Accept(t int32) {
	s.seen[t] = true
	s.counts[t]++
	if s.p.Constraint != nil {
		s.p.Constraint.Accept(t)
	}
}

// Sample returns the next token for logits (not modified).
func (s *Sampler) Sample(logits []float32) int32 {
	if s.hold() {
		defer s.release()
	}
	if s.p.Temperature == 0 {
		return argmax(s.adjusted(logits))
	}
	x, mx, finite := s.scaled(logits)
	u := s.rng.Float64() // one draw per token, whatever the path
	if !finite || math.IsInf(mx, 0) {
		return argmax(x) // no distribution to draw from
	}
	if k := s.p.TopK; k > 0 && k < len(x) {
		return s.drawTopK(x, k, u)
	}
	return s.drawAll(x, mx, u)
}

// scaled returns the adjusted logits divided by the temperature, their
// largest value, and whether none is NaN. Without logit bias, penalties
// or a Constraint (nothing to adjust) it converts and divides in one
// pass.
func (s *Sampler) scaled(logits []float32) (x []float64, mx float64, finite bool) {
	t := s.p.Temperature
	mx, finite = math.Inf(-1), true
	if s.adjusts() {
		x = s.adjusted(logits)
		for i := range x {
			x[i] /= t
			if x[i] > mx {
				mx = x[i]
			} else if x[i] != x[i] {
				finite = false // NaN
			}
		}
		return x, mx, finite
	}
	if cap(s.scratch) < len(logits) {
		s.scratch = make([]float64, len(logits))
	}
	x = s.scratch[:len(logits)]
	for i, v := range logits {
		y := float64(v) / t
		x[i] = y
		if y > mx {
			mx = y
		} else if y != y {
			finite = false // NaN
		}
	}
	return x, mx, finite
}

// adjusts reports whether adjusted changes anything: a logit bias, a
// penalty with tokens to apply it to, or a Constraint.
func (s *Sampler) adjusts() bool {
	p := s.p
	return len(p.LogitBias) > 0 || p.Constraint != nil ||
		p.RepetitionPenalty != 0 && p.RepetitionPenalty != 1 && len(s.seen) > 0 ||
		(p.FrequencyPenalty != 0 || p.PresencePenalty != 0) && len(s.counts) > 0
}

// argmax is the greedy choice: the largest of x, the first on ties.
func argmax(x []float64) int32 {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return int32(best)
}

// adjusted applies logit bias and penalties into a float64 scratch row.
func (s *Sampler) adjusted(logits []float32) []float64 {
	if cap(s.scratch) < len(logits) {
		s.scratch = make([]float64, len(logits))
	}
	x := s.scratch[:len(logits)]
	for i, v := range logits {
		x[i] = float64(v)
	}
	for id, b := range s.p.LogitBias {
		if int(id) < len(x) {
			x[id] += b
		}
	}
	if rp := s.p.RepetitionPenalty; rp != 0 && rp != 1 {
		for id := range s.seen {
			if int(id) >= len(x) {
				continue
			}
			if x[id] > 0 {
				x[id] /= rp
			} else {
				x[id] *= rp
			}
		}
	}
	if s.p.FrequencyPenalty != 0 || s.p.PresencePenalty != 0 {
		for id, n := range s.counts {
			if int(id) < len(x) {
				x[id] -= s.p.FrequencyPenalty*float64(n) + s.p.PresencePenalty
			}
		}
	}
	if s.p.Constraint != nil {
		s.constrain(x)
	}
	return x
}

// constrain sets the logits of the tokens the Constraint forbids to -Inf;
// when it allows none, x is left as it is.
func (s *Sampler) constrain(x []float64) {
	if cap(s.allowed) < len(x) {
		s.allowed = make([]bool, len(x))
	}
	allowed := s.allowed[:len(x)]
	clear(allowed)
	s.p.Constraint.Allow(allowed)
	some := false
	for _, ok := range allowed {
		if ok {
			some = true
			break
		}
	}
	if !some {
		return
	}
	for i, ok := range allowed {
		if !ok {
			x[i] = math.Inf(-1)
		}
	}
}

// TopLogprobs returns the k most likely tokens of the raw logits (before
// any adjustment) with their log-probabilities, log-softmax in float64.
func TopLogprobs(logits []float32, k int) []Logprob {
	if k <= 0 || len(logits) == 0 {
		return nil
	}
	mx := float64(logits[0])
	for _, v := range logits {
		mx = math.Max(mx, float64(v))
	}
	var sum float64
	for _, v := range logits {
		sum += math.Exp(float64(v) - mx)
	}
	lse := mx + math.Log(sum)
	top := make([]Logprob, 0, k+1)
	for i, v := range logits { // insertion into a small sorted list
		lp := float64(v) - lse
		if len(top) == k && lp <= top[k-1].Logprob {
			continue
		}
		j := len(top)
		if j < k {
			top = append(top, Logprob{})
		} else {
			j = k - 1
		}
		for j > 0 && top[j-1].Logprob < lp {
			top[j] = top[j-1]
			j--
		}
		top[j] = Logprob{ID: int32(i), Logprob: lp}
	}
	return top
}

// Logprob is a token and its log-probability.
type Logprob struct {
	ID      int32   `json:"id"`
	Logprob float64 `json:"logprob"`
}
