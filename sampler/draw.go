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
// Top-k selects its k candidates with a bounded heap. Otherwise a token
// d = max-x nats below the max falls into bucket floor(d*bucketsPerNat),
// the last bucket for d ≥ bucketSpan: the buckets are bands of x in the
// draw order, and the head is the concatenation of the first buckets,
// each sorted on its own when it is reached. Only the head's weights
// e = exp(x-max) are computed with math.Exp. The softmax normaliser Z,
// the sum of every weight, is estimated in the bucketing pass without it
// (exp(-d) = exp(-k/256)·exp(-r) from a table and a cubic in
// r < 1/256), within zSlack; a decision that
// depends on Z (the top-p cut, the token a draw without cut lands on) is
// taken when those bounds settle it, and otherwise (a cut within 1e-10 of
// a boundary) after every weight has been computed with math.Exp.
const (
	bucketsPerNat = 16
	bucketSpan    = 64 // nats below the max that the buckets resolve
	nBuckets      = bucketSpan * bucketsPerNat
	noBucket      = nBuckets // weight 0 (a logit of -Inf): never drawn, never ordered
	// zSlack bounds the relative error of the estimate of Z (each term
	// within a few ulps, a sum of at most a few hundred thousand terms
	// within n·2^-53) and of the head's sums against it, with a margin.
	zSlack = 1e-10
)

// edge[b] = exp(-b/bucketsPerNat), the largest weight of bucket b.
var edge = func() (e [nBuckets + 1]float64) {
	for b := range e {
		e[b] = math.Exp(-float64(b) / bucketsPerNat)
	}
	return e
}()

// fine[k] = exp(-k/finePerNat): weigh's table, finePerNat steps a nat.
const finePerNat = 256

var fine = func() []float64 {
	e := make([]float64, bucketSpan*finePerNat)
	for k := range e {
		e[k] = math.Exp(-float64(k) / finePerNat)
	}
	return e
}()

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
	probs  []float64 // head[i]'s probability (top-k) or weight exp(x-max)
	bucket []uint16  // (vocab) each token's bucket, or noBucket
	count  [nBuckets]int32
	// byBucket lists the tokens bucket by bucket, bucket b's at
	// [first[b], first[b+1]), once grouped is set (by the second extend).
	byBucket []int32
	first    [nBuckets + 1]int32
	grouped  bool
	next     int     // the first bucket not yet in head
	known    float64 // Σ the head's weights, in head order
	zLo      float64 // bounds on Z, the sum of every weight
	zHi      float64
}

// grow sizes the buffers for a vocabulary of n tokens.
func (b *sel) grow(n int) {
	if cap(b.head) < n {
		b.head = make([]cand, 0, n)
		b.probs = make([]float64, 0, n)
		b.bucket = make([]uint16, n)
		b.byBucket = make([]int32, n)
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
	s.probs = probs
	return s.pick(s.kept(probs), u)
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
	s.weigh(x, mx)
	s.head, s.probs, s.next, s.known = s.head[:0], s.probs[:0], 0, 0
	tp, mp := s.p.TopP, s.p.MinP
	topP := tp > 0 && tp < 1
	if !topP && mp == 0 {
		return s.walk(x, mx, u)
	}
	// The kept candidates are the head up to the first one that min-p
	// cuts (a weight below mp·1, the first token's weight being
	// exp(0) = 1), or through the first at which the cumulative weight
	// reaches top_p·Z; all of them when neither.
	want, through := math.Inf(1), nBuckets
	if topP {
		want = tp * s.zHi
	}
	if mp > 0 {
		through = min(bucketOf(-math.Log(mp))+1, nBuckets)
	}
	n := 0
	var c float64
scan:
	for s.extend(x, mx, want, through) {
		want, through = 0, 0 // from now on, one more bucket at a time
		for ; n < len(s.head); n++ {
			e := s.probs[n]
			if e < mp {
				break scan // n ≥ 1: the first token's weight is 1 ≥ mp
			}
			if topP {
				c += e
				yes, settled := past(c, tp, s.zLo, s.zHi, false)
				if !settled {
					return s.exactDraw(x, mx, u) // Z's bounds do not settle the cut
				}
				if yes {
					n++
					break scan
				}
			}
		}
	}
	return s.pick(n, u)
}

// past reports whether a cumulative weight c has reached f·Z (c ≥ f·Z),
// or passed it when strict (c > f·Z), for any Z in [zLo, zHi]; settled is
// false when the answer depends on where Z lies in the bounds.
func past(c, f, zLo, zHi float64, strict bool) (yes, settled bool) {
	lo, hi := f*zLo, f*zHi
	if strict {
		switch {
		case c > hi:
			return true, true
		case c <= lo:
			return false, true
		}
		return false, false
	}
	switch {
	case c >= hi:
		return true, true
	case c < lo:
		return false, true
	}
	return false, false
}

// walk draws from every token of non-zero weight, with no cut: the first
// token at which the cumulative weight passes u·Z. It orders the head
// only as far as the draw goes.
func (s *Sampler) walk(x []float64, mx, u float64) int32 {
	want := u * s.zHi
	var c float64
	i := 0
	for s.extend(x, mx, want, nBuckets) {
		want = 0
		for ; i < len(s.head); i++ {
			c += s.probs[i]
			yes, settled := past(c, u, s.zLo, s.zHi, true)
			if !settled {
				return s.exactDraw(x, mx, u) // Z's bounds do not settle the token
			}
			if yes {
				return s.head[i].id
			}
		}
	}
	return s.exactDraw(x, mx, u) // rounding left the draw past the last token
}

// exactDraw is the draw with every weight computed: the full sort's
// arithmetic on the whole head, probabilities e/Z with Z summed in head
// order, then the zero and min-p trims, the top-p cut and the pick. It
// decides what Z's bounds could not.
func (s *Sampler) exactDraw(x []float64, mx, u float64) int32 {
	for s.extend(x, mx, math.Inf(1), nBuckets) {
	}
	for i := range s.probs {
		s.probs[i] /= s.known
	}
	return s.pick(s.kept(s.probs), u)
}

// kept is how many of the sorted probabilities a draw keeps, the full
// sort's way: the tail trimmed of zeros (masked tokens, never the
// fallback draw) and of min-p, then cut at the first token where the
// cumulative probability reaches top_p.
func (s *Sampler) kept(probs []float64) int {
	n := len(probs)
	for n > 1 && probs[n-1] == 0 {
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
				return i + 1
			}
		}
	}
	return n
}

// pick draws among the first n candidates of the head with u uniform
// in [0, 1), by their probabilities or weights (the same draw).
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

// weigh puts each token in its bucket, counts the buckets and bounds Z,
// with no call of math.Exp: a token d = mx-x nats below the max weighs
// fine[k]·exp(-r) with k = floor(d·finePerNat) and r = d - k/finePerNat
// in [0, 1/finePerNat), and expNeg gives exp(-r) within 1e-11. Its
// bucket is k/(finePerNat/bucketsPerNat). A token 64 nats or more below
// weighs less than exp(-64) (and 0 at -Inf: noBucket).
func (s *Sampler) weigh(x []float64, mx float64) {
	clear(s.count[:])
	s.grouped = false
	bucket := s.bucket[:len(x)]
	var z0, z1 float64 // two partial sums: half as many additions wait on each other
	far := 0
	for i, v := range x {
		d := mx - v
		if !(d < bucketSpan) {
			if math.IsInf(d, 1) {
				bucket[i] = noBucket
				continue
			}
			bucket[i] = nBuckets - 1
			s.count[nBuckets-1]++
			far++
			continue
		}
		f := d * finePerNat
		k := int(f)
		e := fine[k] * expNeg((f-float64(k))*(1.0/finePerNat))
		if i&1 == 0 {
			z0 += e
		} else {
			z1 += e
		}
		b := k / (finePerNat / bucketsPerNat)
		bucket[i] = uint16(b)
		s.count[b]++
	}
	z := z0 + z1
	s.zLo = z * (1 - zSlack)
	s.zHi = (z + float64(far)*edge[nBuckets]) * (1 + zSlack)
}

// expNeg is exp(-r) for r in [0, 1/256), by its Taylor polynomial to r³
// (the rest is below r⁴/24 < 1e-11 of it).
func expNeg(r float64) float64 {
	return 1 - r*(1-r*(0.5-r*(1.0/6)))
}

// group lists the tokens of the vocabulary (n) bucket by bucket
// (a counting sort), so that extend reads only the buckets it takes.
func (s *Sampler) group(n int) {
	var at int32
	for b, c := range s.count {
		s.first[b] = at
		at += c
	}
	s.first[nBuckets] = at
	next := s.first // a copy: each bucket's next free slot
	for i, b := range s.bucket[:n] {
		if b != noBucket {
			s.byBucket[next[b]] = int32(i)
			next[b]++
		}
	}
	s.grouped = true
}

// bucketOf is the bucket of a token d ≥ 0 nats below the max.
func bucketOf(d float64) int {
	if d < bucketSpan {
		return int(d * bucketsPerNat)
	}
	return nBuckets - 1
}

// extend appends to the head the tokens of the next buckets, each bucket
// sorted, with their weights: through the first non-empty bucket at
// which the weight known plus the buckets' upper bounds reaches want, or
// whose index reaches through. It returns false when no bucket was left.
func (s *Sampler) extend(x []float64, mx, want float64, through int) bool {
	if s.next >= nBuckets {
		return false // every bucket is in the head: s.known is Z
	}
	lo, hi := s.next, s.next
	got := s.known
	for ; hi < nBuckets; hi++ {
		if s.count[hi] == 0 {
			continue
		}
		got += float64(s.count[hi]) * edge[hi]
		if got >= want || hi >= through {
			break
		}
	}
	hi = min(hi, nBuckets-1)
	s.next = hi + 1
	start := len(s.head)
	if lo == 0 { // the first extend: one pass, no grouping (often the only one)
		for i, b := range s.bucket[:len(x)] {
			if int(b) <= hi {
				s.head = append(s.head, cand{x[i], int32(i)})
			}
		}
	} else {
		if !s.grouped {
			s.group(len(x))
		}
		for _, i := range s.byBucket[s.first[lo]:s.first[hi+1]] {
			s.head = append(s.head, cand{x[i], i})
		}
	}
	slices.SortFunc(s.head[start:], drawOrder)
	n := start
	for _, c := range s.head[start:] {
		e := math.Exp(c.x - mx)
		if e == 0 {
			break // the rest weigh 0 too: never drawn
		}
		s.head[n] = c
		s.probs = append(s.probs, e)
		s.known += e
		n++
	}
	s.head = s.head[:n]
	return true
}
