package engine

import (
	"context"
	"errors"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/vkllm/vkllm/sampler"
)

// bomb is a Constraint that allows every token and panics in Allow (a
// call of the sampler's draw) or in Accept (the loop's bookkeeping of
// the token drawn) once it has seen after tokens.
type bomb struct {
	inAllow bool
	after   int
	seen    int
}

func (b *bomb) Allow(allowed []bool) {
	if b.inAllow && b.seen >= b.after {
		panic("bomb in Allow")
	}
	for i := range allowed {
		allowed[i] = true
	}
}

func (b *bomb) Accept(int32) {
	b.seen++
	if !b.inAllow && b.seen > b.after {
		panic("bomb in Accept")
	}
}

// TestLoopPanic: a panic in the engine loop outside the forward pass (in
// the sampler's draw, or in a constraint's Accept) fails the requests of
// that step with a *PanicError carrying the panic's stack, frees their
// cells, and the LLM goes on serving.
func TestLoopPanic(t *testing.T) {
	tiny(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	l := openLLM(t, Options{ContextLen: 256, MaxSeqs: 4})
	defer l.Close()
	for _, c := range []struct {
		name    string
		inAllow bool
		want    string
	}{
		{"sampler draw", true, "bomb in Allow"},
		{"constraint accept", false, "bomb in Accept"},
	} {
		t.Run(c.name, func(t *testing.T) {
			seed := uint64(3)
			p := sampler.Params{Temperature: 1, Seed: &seed, MaxTokens: 20, IgnoreEOS: true,
				Constraint: &bomb{inAllow: c.inAllow, after: 3}}
			// Two prompts: with two draws in a step, the draws run on goroutines of their own.
			_, err := l.Generate(context.Background(), []string{"hello world", "the sea"}, p)
			var pe *PanicError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v (%T), want a *PanicError", err, err)
			}
			if !strings.Contains(pe.Error(), c.want) || !strings.Contains(string(pe.Stack), "(*bomb)") {
				t.Fatalf("error %q, stack:\n%s\nwant %q raised in a bomb method", pe.Error(), pe.Stack, c.want)
			}
			checkNoCells(t, l)
			res, err := l.Generate(context.Background(), []string{"hello"}, sampler.Params{MaxTokens: 4})
			if err != nil || len(res[0].Tokens) == 0 {
				t.Fatalf("after the panic: %v, %+v", err, res)
			}
			checkNoCells(t, l)
		})
	}
}
