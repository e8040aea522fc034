package sampler

import (
	"math"
	"testing"
)

func TestDist(t *testing.T) {
	logits := []float32{2, 1, 0, -1, 3}
	soft := func(ids ...int) []float64 { // softmax over ids of logits at temperature 1
		p := make([]float64, len(logits))
		var sum float64
		for _, i := range ids {
			p[i] = math.Exp(float64(logits[i]))
			sum += p[i]
		}
		for i := range p {
			p[i] /= sum
		}
		return p
	}
	cases := []struct {
		name string
		p    Params
		want []float64
	}{
		{"greedy", Params{}, []float64{0, 0, 0, 0, 1}},
		{"all", Params{Temperature: 1}, soft(0, 1, 2, 3, 4)},
		{"top-k 2", Params{Temperature: 1, TopK: 2}, soft(4, 0)},
		// sorted probabilities 0.636, 0.234, 0.086, ...: 0.8 is reached at the second
		{"top-p 0.8", Params{Temperature: 1, TopP: 0.8}, soft(4, 0)},
		// min-p 0.3 of 0.636 keeps 0.234 but not 0.086
		{"min-p 0.3", Params{Temperature: 1, MinP: 0.3}, soft(4, 0)},
		{"min-p 0.1", Params{Temperature: 1, MinP: 0.1}, soft(4, 0, 1)},
		{"bias", Params{Temperature: 1, TopK: 1, LogitBias: map[int32]float64{2: 10}}, []float64{0, 0, 1, 0, 0}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := New(c.p, nil).Dist(logits, nil)
			for i := range c.want {
				if math.Abs(got[i]-c.want[i]) > 1e-12 {
					t.Fatalf("Dist = %v, want %v", got, c.want)
				}
			}
		})
	}
}

// TestVerifyGreedy: at temperature 0 the token is the greedy one, kept
// when it is the draft.
func TestVerifyGreedy(t *testing.T) {
	s := New(Params{}, nil)
	logits := []float32{0, 5, 1}
	if tok, ok := s.Verify(logits, 1, nil); tok != 1 || !ok {
		t.Errorf("Verify(draft 1) = %d, %v; want 1, true", tok, ok)
	}
	if tok, ok := s.Verify(logits, 2, nil); tok != 1 || ok {
		t.Errorf("Verify(draft 2) = %d, %v; want 1, false", tok, ok)
	}
}

// TestVerifyKeepsDistribution: the tokens Verify gives for a draft drawn
// from q are distributed as Dist (the target p), for a one-hot q (prompt
// lookup) at each token, and for a q far from p (a draft model) drawn by
// Choose; a chi-square test over 40000 draws with fixed seeds, p-value
// above 1e-4.
func TestVerifyKeepsDistribution(t *testing.T) {
	logits := []float32{1.5, 0.2, -0.7, 2.1, 0.9, -2, 1.1}
	params := Params{Temperature: 0.8, TopK: 6, TopP: 0.97, RepetitionPenalty: 1.3}
	prompt := []int32{3}
	target := New(params, prompt).Dist(logits, nil)
	qs := map[string][]float64{"draft model": {0.05, 0.3, 0.2, 0.05, 0.1, 0.25, 0.05}}
	for x := range logits {
		q := make([]float64, len(logits))
		q[x] = 1
		qs["one-hot "+string(rune('0'+x))] = q
	}
	for name, q := range qs {
		t.Run(name, func(t *testing.T) {
			const n = 40000
			ps := params
			ps.Seed = seed(7)
			s := New(ps, prompt)
			draft := New(Params{Temperature: 1, Seed: seed(5)}, nil)
			counts := make([]float64, len(logits))
			accepted := 0
			for range n {
				x := draft.Choose(q)
				qq := q
				if q[x] == 1 {
					qq = nil // deterministic: Verify's one-hot
				}
				tok, ok := s.Verify(logits, x, qq)
				if ok {
					accepted++
				}
				counts[tok]++
			}
			chi2, dof := chiSquare(counts, target, n)
			if pv := chiSquareP(chi2, dof); pv < 1e-4 {
				t.Fatalf("chi² = %.1f on %d dof, p-value %.2g: counts %v, target %v", chi2, dof, pv, counts, target)
			}
			t.Logf("accepted %d of %d", accepted, n)
		})
	}
}

// chiSquare is Pearson's statistic of counts against probabilities want
// over n draws, and its degrees of freedom; a count where want is 0 makes
// it infinite.
func chiSquare(counts, want []float64, n int) (float64, int) {
	var chi2 float64
	cells := 0
	for i, c := range counts {
		e := want[i] * float64(n)
		if e == 0 {
			if c > 0 {
				return math.Inf(1), 1
			}
			continue
		}
		chi2 += (c - e) * (c - e) / e
		cells++
	}
	return chi2, cells - 1
}

// chiSquareP is the upper tail P(X ≥ x) of a chi-square of dof degrees
// of freedom: the regularized upper incomplete gamma Q(dof/2, x/2), by
// its series (Numerical Recipes' gser) or its continued fraction (gcf).
func chiSquareP(x float64, dof int) float64 {
	a, x := float64(dof)/2, x/2
	if math.IsInf(x, 1) {
		return 0
	}
	lg, _ := math.Lgamma(a)
	if x < a+1 {
		sum, term := 1/a, 1/a
		for n := 1; n < 1000; n++ {
			term *= x / (a + float64(n))
			sum += term
			if term < sum*1e-15 {
				break
			}
		}
		return 1 - sum*math.Exp(-x+a*math.Log(x)-lg)
	}
	b := x + 1 - a
	c, d := 1/1e-300, 1/b
	h := d
	for i := 1; i < 1000; i++ {
		an := -float64(i) * (float64(i) - a)
		b += 2
		d = an*d + b
		if math.Abs(d) < 1e-300 {
			d = 1e-300
		}
		c = b + an/c
		if math.Abs(c) < 1e-300 {
			c = 1e-300
		}
		d = 1 / d
		h *= d * c
		if math.Abs(d*c-1) < 1e-15 {
			break
		}
	}
	return math.Exp(-x+a*math.Log(x)-lg) * h
}

func TestChiSquareP(t *testing.T) {
	for _, c := range []struct {
		x    float64
		dof  int
		want float64
	}{{3.841, 1, 0.05}, {31.83, 8, 1e-4}, {9.488, 4, 0.05}, {0.5, 3, 0.9189}} {
		if got := chiSquareP(c.x, c.dof); math.Abs(got-c.want) > 2e-4*math.Max(1, c.want*10) && math.Abs(got/c.want-1) > 1e-3 {
			t.Errorf("chiSquareP(%v, %d) = %v, want %v", c.x, c.dof, got, c.want)
		}
	}
}
