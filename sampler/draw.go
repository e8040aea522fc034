package sampler

import (
	"math"
	"slices"
)

// The draw order is the full-sort order of the scaled logits x: larger
// first, the smaller id first on ties. A draw only needs the head of that
// order, up to the cut of top-k, top-p or min-p, or up to the token drawn;
// it selects that head without ordering the rest of the vocabulary.
//
// Top-k selects its k candidates with a bounded heap. Otherwise a token of
// weight e = exp(x-max) > 0 falls into bucket floor((max-x)*bucketsPerNat),
// the last bucket for max-x ≥ bucketSpan; the buckets are bands of x in
// the draw order, and the head is the concatenation of the first buckets,
// each sorted on its own when it is reached.
const (
	bucketsPerNat = 16
	bucketSpan    = 64 // nats below the max that the buckets resolve
	nBuckets      = bucketSpan * bucketsPerNat
	noBucket      = nBuckets // weight 0: never drawn, never ordered
	// massSlack is the relative margin on the mass a head must gather for
	// top-p or for the draw: the head's probabilities are summed in another
	// order than the buckets' masses.
	massSlack = 1e-9
)

// cand is a candidate token and its scaled logit.
type cand struct {
	x  float64
	id int32
}

// before reports whether a comes before b in the draw order.
func before(a, b cand) bool { return a.x > b.x || a.x == b.x && a.id < b.id }

func drawOrder(a, b cand) int {
	switch {
	case before(a, b):
		return -1
	case before(b, a):
		return 1
	}
	return 0
}

// sel holds the buffers of a draw, reused from one token to the next.
type sel struct {
	head   []cand    // the head of the draw order, sorted
	probs  []float64 // probs[i]: head[i]'s probability
	weight []float64 // (vocab) exp(x - max)
	bucket []uint16  // (vocab) each token's bucket, or noBucket
	mass   [nBuckets]float64
	next   int     // the first bucket not yet in head
	got    float64 // the mass of the buckets before next
}

// grow sizes the buffers for a vocabulary of n tokens.
func (b *sel) grow(n int) {
	if cap(b.head) < n {
		b.head = make([]cand, 0, n)
		b.probs = make([]float64, 0, n)
		b.weight = make([]float64, n)
		b.bucket = make([]uint16, n)
	}
}

// drawTopK draws among the k first tokens of the draw order, with u
// uniform in [0, 1): softmax over those k, then min-p and top-p.
func (s *Sampler) drawTopK(x []float64, k int, u float64) int32 {
	s.grow(len(x))
	h := s.topK(x, k)
	mx := h[0].x
	probs := s.probs[:k]
	var sum float64
	for i := range h {
		probs[i] = math.Exp(h[i].x - mx)
		sum += probs[i]
	}
	for i := range probs {
		probs[i] /= sum
	}
	n := k
	for n > 1 && probs[n-1] == 0 { // masked (-Inf) tokens: never the fallback draw
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
	s.probs = probs
	return s.pick(n, u)
}

// topK returns the k first tokens of the draw order, sorted, in s.head.
// The heap keeps the last of them at its root; a later token ties with it
// only to come after it.
func (s *Sampler) topK(x []float64, k int) []cand {
	h := s.head[:0]
	for i, v := range x {
		c := cand{v, int32(i)}
		switch {
		case len(h) < k:
			h = append(h, c)
			for j := len(h) - 1; j > 0; {
				up := (j - 1) / 2
				if !before(h[up], h[j]) {
					break
				}
				h[up], h[j] = h[j], h[up]
				j = up
			}
		case v > h[0].x:
			h[0] = c
			siftDown(h, 0)
		}
	}
	for n := len(h) - 1; n > 0; n-- { // heapsort: the last goes last
		h[0], h[n] = h[n], h[0]
		siftDown(h[:n], 0)
	}
	s.head = h
	return h
}

// siftDown restores the heap below j: each node comes after its children
// in the draw order.
func siftDown(h []cand, j int) {
	for {
		c := 2*j + 1
		if c >= len(h) {
			return
		}
		if c+1 < len(h) && before(h[c], h[c+1]) {
			c++
		}
		if !before(h[j], h[c]) {
			return
		}
		h[j], h[c] = h[c], h[j]
		j = c
	}
}

// drawAll draws from the whole vocabulary, with mx the largest of x and
// u uniform in [0, 1): softmax, then min-p and top-p.
func (s *Sampler) drawAll(x []float64, mx, u float64) int32 {
	s.grow(len(x))
	sum := s.weigh(x, mx)
	s.head, s.probs, s.next, s.got = s.head[:0], s.probs[:0], 0, 0
	tp := s.p.TopP
	topP := tp > 0 && tp < 1
	var cut float64 // min-p: the probability below which a token is cut
	if mp := s.p.MinP; mp > 0 {
		cut = mp * (1 / sum) // 1/sum: the first token's probability
	}
	if !topP && cut == 0 {
		return s.walk(x, sum, u)
	}
	want, through := math.Inf(1), nBuckets
	if topP {
		want = tp * sum * (1 + massSlack)
	}
	if cut > 0 {
		through = min(bucketOf(-math.Log(s.p.MinP))+1, nBuckets)
	}
	// The kept candidates are the head up to the first one that min-p
	// cuts (or of probability 0), or through the first at which the
	// cumulative probability reaches top-p; all of them when neither.
	n := 0
	var c float64
scan:
	for s.extend(x, sum, want, through) {
		want, through = 0, 0 // from now on, one more bucket at a time
		for ; n < len(s.head); n++ {
			p := s.probs[n]
			if p == 0 || p < cut {
				break scan // n ≥ 1: the first token's probability is 1/sum ≥ cut
			}
			if topP {
				c += p
				if c >= tp {
					n++
					break scan
				}
			}
		}
	}
	return s.pick(n, u)
}

// walk draws from every token of non-zero probability, with no cut: it
// orders the head only as far as the draw goes.
func (s *Sampler) walk(x []float64, sum, u float64) int32 {
	var total float64
	n := 0
	for _, e := range s.weight[:len(x)] {
		if p := e / sum; p != 0 {
			total += p
			n++
		}
	}
	r := u * total
	want := r * sum * (1 + massSlack)
	i := 0
	for i < n && s.extend(x, sum, want, nBuckets) {
		want = 0
		for ; i < len(s.head) && i < n; i++ {
			r -= s.probs[i]
			if r < 0 {
				return s.head[i].id
			}
		}
	}
	return s.head[n-1].id
}

// pick draws among the first n candidates of the head with u uniform
// in [0, 1).
func (s *Sampler) pick(n int, u float64) int32 {
	var total float64
	for i := 0; i < n; i++ {
		total += s.probs[i]
	}
	r := u * total
	for i := 0; i < n; i++ {
		r -= s.probs[i]
		if r < 0 {
			return s.head[i].id
		}
	}
	return s.head[n-1].id
}

// weigh sets each token's weight exp(x-mx) and bucket, and each bucket's
// mass; it returns the sum of the weights, the softmax's normaliser.
func (s *Sampler) weigh(x []float64, mx float64) float64 {
	clear(s.mass[:])
	weight, bucket := s.weight[:len(x)], s.bucket[:len(x)]
	var sum float64
	for i, v := range x {
		d := v - mx
		e := math.Exp(d)
		weight[i] = e
		if e == 0 {
			bucket[i] = noBucket
			continue
		}
		sum += e
		b := bucketOf(-d)
		bucket[i] = uint16(b)
		s.mass[b] += e
	}
	return sum
}

// bucketOf is the bucket of a token d ≥ 0 nats below the max.
func bucketOf(d float64) int {
	if d < bucketSpan {
		return int(d * bucketsPerNat)
	}
	return nBuckets - 1
}

// extend appends to the head the tokens of the next buckets, each bucket
// sorted: through the first non-empty bucket at which the mass gathered
// reaches want or whose index reaches through. It returns false when no
// token was left.
func (s *Sampler) extend(x []float64, sum, want float64, through int) bool {
	lo, hi := s.next, s.next
	for ; hi < nBuckets; hi++ {
		s.got += s.mass[hi]
		if s.mass[hi] > 0 && (s.got >= want || hi >= through) {
			break
		}
	}
	hi = min(hi, nBuckets-1)
	s.next = hi + 1
	start := len(s.head)
	for i, b := range s.bucket[:len(x)] {
		if int(b) >= lo && int(b) <= hi {
			s.head = append(s.head, cand{x[i], int32(i)})
		}
	}
	if len(s.head) == start {
		return false
	}
	slices.SortFunc(s.head[start:], drawOrder)
	for _, c := range s.head[start:] {
		s.probs = append(s.probs, s.weight[c.id]/sum)
	}
	return true
}
