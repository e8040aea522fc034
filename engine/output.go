package engine

import (
	"time"

	"math"
	"strings"

	"github.com/vkllm/vkllm/sampler"
	"github.com/vkllm/vkllm/tokenizer"
)

// Output is what one Step reports about one request: the tokens it drew
// this step and the text they complete, or its end.
type Output struct {
	ID string
	// Index is the choice, in [0, Request.N); 0 for a one-choice request.
	// Each choice has its own final Output.
	Index     int
	NewTokens []int32
	// TextDelta is whole UTF-8 characters only; text that might be the
	// start of a stop string is held back until it is known not to be,
	// and a stop string is left out.
	TextDelta string
	Logprobs  []TokenLogprob // one per new token when Params.Logprobs > 0
	// Embedding is an embedding request's pooled vector, in its final
	// Output (Request.Embed).
	Embedding []float32

	Finished     bool
	FinishReason string // "stop", "length" or "abort"; "" while running
	Usage        Usage
	// Replayed marks the Outputs of a request answered from the
	// inference cache: no forward pass ran, so their timing says
	// nothing of the model's speed.
	Replayed bool
	// Timing is a choice's phases, in its final Output (nil in a replay,
	// and for an embedding request).
	Timing *Timing
}

// Timing is the phases of one choice, as vLLM's request metrics: Queue
// from Engine.Add until first scheduled, Prefill from then until its
// first token, Decode from its first token to its end. A phase not
// reached is 0; a request that never ran (aborted while it waited) was
// queued all its life.
type Timing struct {
	Queue, Prefill, Decode time.Duration
}

// Usage counts a request's tokens.
type Usage struct {
	PromptTokens     int
	CompletionTokens int
	CachedTokens     int // prompt tokens found in the cache (a cached prefix or the session's), not computed
}

// TokenLogprob is a drawn token's log-probability under the raw logits
// and the Params.Logprobs most likely tokens.
type TokenLogprob struct {
	ID      int32
	Logprob float64
	Top     []sampler.Logprob
}

// postState is a request's sampling and text state.
type postState struct {
	params    sampler.Params
	sampler   *sampler.Sampler
	dec       *tokenizer.StreamDecoder // nil without a tokenizer
	held      string                   // decoded text not yet emitted
	maxTokens int                      // output tokens allowed
	stopIDs   map[int32]bool           // stop_token_ids, and EOS unless IgnoreEOS
}

// draw samples q's next token from logits. It touches only q's sampler
// (and its Constraint), so the draws of a step's sequences may run at
// once.
func draw(q *sequence, logits []float32) int32 { return q.post.sampler.Sample(logits) }

// accept appends tok, drawn for q from logits, and returns the Output and
// the final state it reached (Running if none).
func (e *Engine) accept(q *sequence, logits []float32, tok int32) (Output, State) {
	p := &q.post
	p.sampler.Accept(tok)
	q.tokens = append(q.tokens, tok)
	e.count.generationTokens++
	out := Output{ID: q.id, Index: q.choice, NewTokens: []int32{tok}}
	if k := p.params.Logprobs; k > 0 {
		out.Logprobs = []TokenLogprob{{ID: tok, Logprob: logprobOf(logits, tok), Top: sampler.TopLogprobs(logits, k)}}
	}
	final := Running
	if p.stopIDs[tok] {
		final = FinishedStopped // the stop token's text is not output
	} else if p.dec != nil {
		p.held += p.dec.Add(tok)
		var hit bool
		out.TextDelta, hit = p.emit(false)
		if hit {
			final = FinishedStopped
		}
	}
	if final == Running && (len(q.tokens)-q.numPrompt >= p.maxTokens || len(q.tokens) >= e.maxLen) {
		final = FinishedLengthCapped
	}
	if final == FinishedLengthCapped || final == FinishedStopped && p.stopIDs[tok] {
		out.TextDelta += p.flush() // no stop string cut the text: all of it goes out
	}
	return out, final
}

// flush emits what the decoder and the stop-string check held back, at
// the end of a request that did not end on a stop string (which may still
// appear in the last characters).
func (p *postState) flush() string {
	if p.dec == nil {
		return ""
	}
	p.held += p.dec.Flush()
	d, _ := p.emit(true)
	p.held = ""
	return d
}

// emit takes the text of held that can be output: up to the first stop
// string (hit, and the rest dropped), or all but the longest suffix that
// begins a stop string (all of it when final).
func (p *postState) emit(final bool) (delta string, hit bool) {
	idx := -1
	for _, s := range p.params.Stop {
		if i := strings.Index(p.held, s); i >= 0 && (idx < 0 || i < idx) {
			idx = i
		}
	}
	if idx >= 0 {
		delta, p.held = p.held[:idx], ""
		return delta, true
	}
	keep := 0
	if !final {
		for _, s := range p.params.Stop {
			for k := min(len(s)-1, len(p.held)); k > keep; k-- {
				if strings.HasSuffix(p.held, s[:k]) {
					keep = k
					break
				}
			}
		}
	}
	cut := len(p.held) - keep
	delta, p.held = p.held[:cut], p.held[cut:]
	return delta, false
}

// logprobOf is log softmax(logits)[id], in float64.
func logprobOf(logits []float32, id int32) float64 {
	mx := math.Inf(-1)
	for _, v := range logits {
		mx = math.Max(mx, float64(v))
	}
	var sum float64
	for _, v := range logits {
		sum += math.Exp(float64(v) - mx)
	}
	return float64(logits[id]) - (mx + math.Log(sum)) // as sampler.TopLogprobs
}
