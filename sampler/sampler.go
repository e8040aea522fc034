package sampler

import (
	"math"
	"math/rand/v2"
	"sort"
)

// Sampler draws tokens for one sequence.
type Sampler struct {
	p       Params
	rng     *rand.Rand
	seen    map[int32]bool // prompt and output tokens (repetition penalty)
	counts  map[int32]int  // output tokens (frequency, presence)
	scratch []float64
	idx     []int32
	allowed []bool // Constraint's mask
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
	x := s.adjusted(logits)
	if s.p.Temperature == 0 {
		best := 0
		for i, v := range x {
			if v > x[best] {
				best = i
			}
		}
		return int32(best)
	}
	for i := range x {
		x[i] /= s.p.Temperature
	}
	return s.draw(x)
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

// draw samples from softmax(x) restricted by top-k, top-p and min-p.
func (s *Sampler) draw(x []float64) int32 {
	if cap(s.idx) < len(x) {
		s.idx = make([]int32, len(x))
	}
	idx := s.idx[:len(x)]
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
	if k := s.p.TopK; k > 0 && k < n {
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
	for n > 1 && probs[n-1] == 0 { // masked (-Inf) tokens: never the fallback draw below
		n--
	}
	if mp := s.p.MinP; mp > 0 {
		cut := mp * probs[0]
		for n > 1 && probs[n-1] < cut {
			n--
		}
	}
	if tp := s.p.TopP; tp > 0 && tp < 1 {
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
	r := s.rng.Float64() * total
	for i := 0; i < n; i++ {
		r -= probs[i]
		if r < 0 {
			return idx[i]
		}
	}
	return idx[n-1]
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
