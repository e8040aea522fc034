package engine

import (
	"context"
	"testing"

	"go.uber.org/goleak"

	"github.com/vkllm/vkllm/sampler"
)

// window allows tokens lo..lo+9 for steps tokens, then only end.
type window struct {
	lo, steps int
	end       int32
	accepted  []int32
}

func (w *window) Allow(allowed []bool) {
	if len(w.accepted) >= w.steps {
		allowed[w.end] = true
		return
	}
	for id := w.lo; id < w.lo+10; id++ {
		allowed[id] = true
	}
}

func (w *window) Accept(id int32) { w.accepted = append(w.accepted, id) }

// TestConstraint: a request's sampler.Constraint rules each draw of the
// real loop, hears of every token drawn, and can end the request with an
// end token.
func TestConstraint(t *testing.T) {
	tiny(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	l := openLLM(t, Options{ContextLen: 256, MaxSeqs: 2})
	defer l.Close()
	eos := tinyTok.EOS()[0]
	c := &window{lo: 100, steps: 6, end: eos}
	seed := uint64(1)
	res, err := l.Generate(context.Background(), []string{"hello world"},
		sampler.Params{Temperature: 1, Seed: &seed, MaxTokens: 32, Constraint: c})
	if err != nil {
		t.Fatal(err)
	}
	r := res[0]
	if r.FinishReason != "stop" || len(r.Tokens) != 7 || r.Tokens[6] != eos {
		t.Fatalf("finish %q after %v; want 6 tokens in [100, 110) then EOS", r.FinishReason, r.Tokens)
	}
	for _, tok := range r.Tokens[:6] {
		if tok < 100 || tok >= 110 {
			t.Fatalf("token %d outside the window: %v", tok, r.Tokens)
		}
	}
	if len(c.accepted) != 7 {
		t.Errorf("the constraint heard of %d tokens, want 7", len(c.accepted))
	}
	checkNoCells(t, l)
}
