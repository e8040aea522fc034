package sampler

import "testing"

// evenThenOdd allows even ids on even steps and odd ids on odd steps,
// none after limit steps, and records what it was told.
type evenThenOdd struct {
	step, limit int
	got         []int32
}

func (c *evenThenOdd) Allow(allowed []bool) {
	if c.step >= c.limit {
		return
	}
	for i := range allowed {
		allowed[i] = i%2 == c.step%2
	}
}

func (c *evenThenOdd) Accept(id int32) {
	c.got = append(c.got, id)
	c.step++
}

func TestConstraint(t *testing.T) {
	logits := []float32{0, 5, 1, 4, 2, 3} // greedy alone: always 1
	for _, temp := range []float64{0, 1} {
		c := &evenThenOdd{limit: 20}
		s := New(Params{Temperature: temp, TopK: 3, Seed: seed(7), Constraint: c}, nil)
		for i := range 20 {
			tok := s.Sample(logits)
			if int(tok)%2 != i%2 {
				t.Fatalf("temperature %v step %d: drew %d, a token the constraint forbids", temp, i, tok)
			}
			s.Accept(tok)
		}
		if len(c.got) != 20 {
			t.Fatalf("Accept reached the constraint %d times, want 20", len(c.got))
		}
		if temp == 0 && (c.got[0] != 4 || c.got[1] != 1) {
			t.Errorf("greedy under the mask: %v, want 4 then 1", c.got[:2])
		}
		// A step that allows nothing draws as without a constraint.
		if tok := New(Params{Constraint: &evenThenOdd{}}, nil).Sample(logits); tok != 1 {
			t.Errorf("empty mask: drew %d, want the unconstrained 1", tok)
		}
	}
	// Logit bias and penalties come first; the mask still wins.
	s := New(Params{LogitBias: map[int32]float64{3: 100}, Constraint: &evenThenOdd{limit: 1}}, nil)
	if tok := s.Sample(logits); tok != 4 {
		t.Errorf("bias on a forbidden token: drew %d, want 4", tok)
	}
}
