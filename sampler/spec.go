package sampler

import (
	"math"
	"slices"
)

// Speculative decoding: a draft proposes a token x drawn from a
// distribution q, the target model's logits give the distribution p that
// Sample would draw from, and Verify keeps x with probability
// min(1, p(x)/q(x)); on rejection it draws from norm(max(0, p−q)). The
// token that comes out is distributed as p whatever q is (Leviathan et
// al., Chen et al. 2023). A deterministic draft (prompt lookup, a greedy
// draft model) has q one-hot at x: Verify keeps x with probability p(x)
// and otherwise draws from p without x.

// Dist returns, in dst (resized to the vocabulary), the distribution
// Sample draws from for logits in the sampler's current state: logit
// bias, penalties and the Constraint applied, then temperature, top-k,
// min-p and top-p, in the full sort's arithmetic (see the package doc).
// At temperature 0, or for a row without a distribution, it is one-hot
// at the greedy choice.
func (s *Sampler) Dist(logits []float32, dst []float64) []float64 {
	if s.hold() {
		defer s.release()
	}
	dst = slices.Grow(dst[:0], len(logits))[:len(logits)]
	clear(dst)
	if s.p.Temperature == 0 {
		dst[argmax(s.adjusted(logits))] = 1
		return dst
	}
	x, mx, finite := s.scaled(logits)
	if !finite || math.IsInf(mx, 0) {
		dst[argmax(x)] = 1
		return dst
	}
	k, tp := s.p.TopK, s.p.TopP
	if (k <= 0 || k >= len(x)) && (tp <= 0 || tp >= 1) && s.p.MinP == 0 {
		var sum float64 // no cut: the softmax of the whole row
		for i, v := range x {
			dst[i] = math.Exp(v - mx)
			sum += dst[i]
		}
		for i := range dst {
			dst[i] /= sum
		}
		return dst
	}
	s.grow(len(x))
	var h []cand
	if k > 0 && k < len(x) {
		h = s.topK(x, k)
	} else {
		h = s.head[:0]
		for i, v := range x {
			if !math.IsInf(v, -1) {
				h = append(h, cand{v, int32(i)})
			}
		}
		slices.SortFunc(h, drawOrder)
		s.head = h
	}
	probs := s.probs[:len(h)]
	var sum float64
	for i, c := range h {
		probs[i] = math.Exp(c.x - h[0].x)
		sum += probs[i]
	}
	for i := range probs {
		probs[i] /= sum
	}
	n := s.kept(probs)
	var kept float64
	for _, p := range probs[:n] {
		kept += p
	}
	for i, c := range h[:n] {
		dst[c.id] = probs[i] / kept
	}
	return dst
}

// Verify decides draft, a token proposed to follow the sequence, against
// the target's logits at its position, and returns the token that comes
// next: draft itself (accepted) or another one. q is the distribution
// the draft was drawn from (one entry per vocabulary id), nil for a
// deterministic draft (q one-hot at draft).
//
// At temperature 0 the token is Sample's greedy choice, whatever the
// draft: greedy output with drafts is the output without. Otherwise the
// rejection rule above keeps the distribution of Dist; it takes one
// uniform number from the sampler's generator, and one more on
// rejection. Like Sample it does not Accept the token: the caller
// accepts each token that it keeps before it verifies the next draft
// (penalties and the Constraint then see it).
func (s *Sampler) Verify(logits []float32, draft int32, q []float64) (tok int32, accepted bool) {
	if s.hold() {
		defer s.release()
	}
	if s.p.Temperature == 0 {
		tok = s.Sample(logits)
		return tok, tok == draft
	}
	p := s.Dist(logits, s.dist)
	s.dist = p
	qx := 1.0
	if q != nil {
		qx = q[draft]
	}
	u := s.rng.Float64()
	if p[draft] > 0 && u*qx < p[draft] { // u < p(x)/q(x)
		return draft, true
	}
	var sum float64
	for i := range p {
		var qi float64
		switch {
		case q != nil:
			qi = q[i]
		case int32(i) == draft:
			qi = 1
		}
		p[i] = max(p[i]-qi, 0)
		sum += p[i]
	}
	if sum <= 0 { // p ≤ q everywhere: p = q, and x was kept
		return draft, true
	}
	return choose(p, sum, s.rng.Float64()), false
}

// Choose draws a token from dist, weights over the vocabulary (a Dist),
// with the sampler's generator: a draft model's proposal.
func (s *Sampler) Choose(dist []float64) int32 {
	var sum float64
	for _, w := range dist {
		sum += w
	}
	return choose(dist, sum, s.rng.Float64())
}

// choose walks u·sum down the weights w, in id order.
func choose(w []float64, sum, u float64) int32 {
	r := u * sum
	last := int32(0)
	for i, v := range w {
		if v <= 0 {
			continue
		}
		last = int32(i)
		if r -= v; r < 0 {
			return last
		}
	}
	return last // rounding left r past the last weight
}
