package sampler

import (
	"errors"
	"math"
	"testing"
)

func seed(v uint64) *uint64 { return &v }

func TestValidate(t *testing.T) {
	ok := Params{Temperature: 0.7, TopP: 0.9, TopK: 40, MinP: 0.05, RepetitionPenalty: 1.1,
		PresencePenalty: 0.5, FrequencyPenalty: -0.5, LogitBias: map[int32]float64{3: -100}, Logprobs: 5, Stop: []string{"\n"}}
	if err := ok.Validate(100); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		field string
		p     Params
	}{
		{"temperature", Params{Temperature: -0.1}},
		{"temperature", Params{Temperature: 2.01}},
		{"temperature", Params{Temperature: math.NaN()}},
		{"top_p", Params{TopP: 1.5}},
		{"top_p", Params{TopP: -1}},
		{"top_k", Params{TopK: -1}},
		{"top_k", Params{TopK: 101}},
		{"min_p", Params{MinP: 1.1}},
		{"repetition_penalty", Params{RepetitionPenalty: 3}},
		{"presence_penalty", Params{PresencePenalty: 2.5}},
		{"frequency_penalty", Params{FrequencyPenalty: -2.5}},
		{"max_tokens", Params{MaxTokens: -1}},
		{"stop", Params{Stop: []string{""}}},
		{"stop", Params{Stop: make([]string, 17)}},
		{"stop_token_ids", Params{StopTokenIDs: []int32{100}}},
		{"logit_bias", Params{LogitBias: map[int32]float64{-1: 1}}},
		{"logit_bias", Params{LogitBias: map[int32]float64{1: 101}}},
		{"logprobs", Params{Logprobs: 21}},
	}
	for _, c := range cases {
		err := c.p.Validate(100)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != c.field {
			t.Errorf("%+v: got %v, want a FieldError on %s", c.p, err, c.field)
		}
	}
}

func TestGreedy(t *testing.T) {
	s := New(Params{}, nil)
	if got := s.Sample([]float32{1, 3, 3, 2}); got != 1 {
		t.Errorf("greedy = %d, want 1 (first of ties)", got)
	}
	s = New(Params{LogitBias: map[int32]float64{3: 5}}, nil)
	if got := s.Sample([]float32{1, 3, 3, 2}); got != 3 {
		t.Errorf("with bias = %d, want 3", got)
	}
}

func TestSeedDeterminism(t *testing.T) {
	logits := make([]float32, 50)
	for i := range logits {
		logits[i] = float32(math.Sin(float64(i)))
	}
	run := func() []int32 {
		s := New(Params{Temperature: 1, Seed: seed(42)}, nil)
		var out []int32
		for range 20 {
			tok := s.Sample(logits)
			s.Accept(tok)
			out = append(out, tok)
		}
		return out
	}
	a, b := run(), run()
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("same seed, different tokens: %v vs %v", a, b)
		}
	}
}

// TestDistribution checks that top-k, top-p and min-p cut where they should
// and that draws follow the softmax.
func TestDistribution(t *testing.T) {
	logits := []float32{2, 1, 0, -1, -30}
	count := func(p Params) map[int32]int {
		s := New(p, nil)
		m := map[int32]int{}
		for range 20000 {
			m[s.Sample(logits)]++
		}
		return m
	}
	if m := count(Params{Temperature: 1, TopK: 2, Seed: seed(1)}); len(m) != 2 || m[0] == 0 || m[1] == 0 {
		t.Errorf("top_k=2 drew %v", m)
	}
	// probs ≈ .644 .237 .087 .032: top_p .8 keeps the first two.
	if m := count(Params{Temperature: 1, TopP: 0.8, Seed: seed(2)}); len(m) != 2 {
		t.Errorf("top_p=0.8 drew %v", m)
	}
	// min_p .1 keeps p ≥ .0644: the first three.
	if m := count(Params{Temperature: 1, MinP: 0.1, Seed: seed(3)}); len(m) != 3 {
		t.Errorf("min_p=0.1 drew %v", m)
	}
	m := count(Params{Temperature: 1, Seed: seed(4)})
	want := 1 / (1 + math.Exp(-1) + math.Exp(-2) + math.Exp(-3) + math.Exp(-32))
	if got := float64(m[0]) / 20000; math.Abs(got-want) > 0.015 {
		t.Errorf("P(0) = %.3f, want %.3f", got, want)
	}
}

func TestPenalties(t *testing.T) {
	s := New(Params{RepetitionPenalty: 2}, []int32{0})
	if got := s.Sample([]float32{3, 2}); got != 1 { // 3/2 = 1.5 < 2
		t.Errorf("repetition penalty: got %d", got)
	}
	s = New(Params{FrequencyPenalty: 1}, nil)
	s.Accept(0)
	s.Accept(0)
	if got := s.Sample([]float32{3, 2}); got != 1 { // 3 - 2 = 1 < 2
		t.Errorf("frequency penalty: got %d", got)
	}
}

func TestTopLogprobs(t *testing.T) {
	logits := []float32{0, 2, 1, 2}
	top := TopLogprobs(logits, 3)
	if len(top) != 3 || top[0].ID != 1 || top[1].ID != 3 || top[2].ID != 2 {
		t.Fatalf("order: %+v", top)
	}
	lse := math.Log(1 + 2*math.Exp(2) + math.Exp(1))
	if math.Abs(top[0].Logprob-(2-lse)) > 1e-12 {
		t.Errorf("logprob %v, want %v", top[0].Logprob, 2-lse)
	}
}
