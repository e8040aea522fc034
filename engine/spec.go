package engine

import (
	"fmt"
	"slices"

	"github.com/vkllm/vkllm/errcode"
	"github.com/vkllm/vkllm/models"
)

// ErrDraftVocab: the draft model's vocabulary is not the target's.
var ErrDraftVocab = errcode.New(errcode.BadParams, "engine: draft model vocabulary differs from the model's")

// Speculation turns on speculative decoding: before a step, each
// decoding request may get up to Max draft tokens, which the step scores
// in the same forward pass as its last token (k+1 tokens of the one
// sequence, logits on each, beside the other requests' decodes and
// prefill chunks, within the token budget). The sampler keeps the
// longest acceptable prefix of the drafts and draws one more token from
// the logits after it; the cells of the rejected drafts are removed
// (SeqRm). Greedy output is the output without speculation, token for
// token (the kernels are batch- and placement-invariant); seeded sampling
// keeps the target distribution through the rejection rule of
// sampler.Sampler.Verify, with other draws than without speculation.
//
// A request with a Constraint (a grammar) does not speculate: its
// Constraint would have to step over tokens that are then rejected.
//
// The draft length adapts per request: it starts at half of Max, doubles
// (up to Max) when every draft is kept, drops to one more than the drafts
// kept when some are rejected, and after drafts rejected at their first
// token the request sits out 1, 3, 7, ... (at most 63) steps before it
// drafts again, so that a draft source that keeps missing costs little.
type Speculation struct {
	// Proposer drafts tokens from a request's tokens alone (NGram is
	// prompt lookup). Its drafts are deterministic (a one-hot q).
	Proposer Proposer
	// Draft and DraftContext, when Proposer is nil, are a draft model
	// with the target's vocabulary and a Context of it with at least
	// Config.MaxSeqs sequence ids. The engine keeps each running
	// request's tokens in a sequence of DraftContext, decodes the drafts
	// there one at a time (all requests in one batch per draft), and
	// removes what the target rejected. At temperature 0 a draft is the
	// draft model's greedy choice; otherwise it is drawn, with the
	// request's temperature, top-k, top-p and min-p, from the draft's
	// distribution q, which the rejection rule takes into account. The
	// Context stays the caller's.
	Draft        *models.Model
	DraftContext *models.Context
	// Max bounds the drafts of one request in one step; default 8.
	Max int
}

// A Proposer drafts up to k tokens to follow tokens (a request's prompt
// and output so far); fewer or none when it has no guess. It is called
// from the engine's goroutine only.
type Proposer interface {
	Propose(tokens []int32, k int) []int32
}

// NGram is prompt lookup: the last n tokens (n from Max down to Min) are
// looked for earlier in the tokens, the latest occurrence first, and the
// tokens that followed it are the draft. It suits output that repeats its
// input (rewriting, extraction, code edits). Zero values mean Min 2,
// Max 4.
type NGram struct {
	Min, Max int
}

// Propose implements Proposer.
func (g NGram) Propose(tokens []int32, k int) []int32 {
	lo, hi := g.Min, g.Max
	if lo <= 0 {
		lo = 2
	}
	if hi <= 0 {
		hi = 4
	}
	for n := min(hi, len(tokens)-1); n >= lo; n-- {
		suffix := tokens[len(tokens)-n:]
	search:
		for i := len(tokens) - n - 1; i >= 0; i-- { // an occurrence at [i, i+n), before the suffix's own
			for j, t := range suffix {
				if tokens[i+j] != t {
					continue search
				}
			}
			next := tokens[i+n : min(i+n+k, len(tokens))]
			return next
		}
	}
	return nil
}

// specState is a request's speculation: its adaptive draft length and
// this step's drafts.
type specState struct {
	k     int         // drafts to ask for next (0: not started)
	miss  int         // steps in a row whose first draft was rejected
	wait  int         // steps to sit out before drafting again
	draft []int32     // this step's drafts, after the request's tokens
	dists [][]float64 // the distribution each draft was drawn from; nil: deterministic
}

// adapt sets the next draft length after kept of n drafts were kept.
func (s *specState) adapt(kept, n, max int) {
	switch {
	case kept == n:
		s.k, s.miss = min(2*s.k, max), 0
	case kept > 0:
		s.k, s.miss = kept+1, 0
	default:
		s.miss++
		s.k, s.wait = 1, min(1<<s.miss, 64)-1
	}
}

// speculator drafts for the engine's requests.
type speculator struct {
	max   int
	prop  Proposer
	model *modelDrafter
	want  []*sequence // this step's requests that draft
}

// defaultDraftMax bounds the drafts per step when Speculation.Max (or
// Options.DraftMax) is 0.
const defaultDraftMax = 8

func newSpeculator(sp *Speculation, vocab, maxSeqs int) (*speculator, error) {
	s := &speculator{max: sp.Max, prop: sp.Proposer}
	if s.max == 0 {
		s.max = defaultDraftMax
	}
	if s.max < 1 || s.max > 64 {
		return nil, errcode.Wrap(errcode.BadParams, fmt.Errorf("engine: Speculation.Max %d out of range [1, 64]", s.max))
	}
	if s.prop != nil {
		return s, nil
	}
	switch {
	case sp.Draft == nil || sp.DraftContext == nil:
		return nil, errcode.Wrap(errcode.BadParams, fmt.Errorf("engine: Speculation needs a Proposer or a Draft model and its DraftContext"))
	case sp.Draft.Config.VocabSize != vocab:
		return nil, fmt.Errorf("%w: %d tokens, the model has %d", ErrDraftVocab, sp.Draft.Config.VocabSize, vocab)
	case sp.DraftContext.Params().MaxSeqs < maxSeqs:
		return nil, errcode.Wrap(errcode.BadParams, fmt.Errorf("engine: DraftContext has %d sequence ids, the engine runs %d requests",
			sp.DraftContext.Params().MaxSeqs, maxSeqs))
	}
	s.model = newModelDrafter(sp.DraftContext, sp.Draft.Config.MaxPositions)
	return s, nil
}

// draftAll gives each running request that decodes this step its drafts
// (q.spec.draft), as many as its draft length, its remaining tokens and
// the positions allow; the scheduler may cut them to the budget.
func (e *Engine) draftAll() error {
	s := e.spec
	s.want = s.want[:0]
	for _, q := range e.sched.running {
		sp := &q.spec
		sp.draft = sp.draft[:0]
		if q.seqID < 0 || q.numCached != len(q.tokens)-1 || q.post.params.Constraint != nil || q.emb != nil {
			continue
		}
		if sp.wait > 0 {
			sp.wait--
			continue
		}
		if sp.k == 0 {
			sp.k = (s.max + 1) / 2
		}
		k := min(sp.k, e.maxLen-len(q.tokens)-1, q.post.maxTokens-(len(q.tokens)-q.numPrompt)-1)
		if k <= 0 {
			continue
		}
		if s.prop != nil {
			d := s.prop.Propose(q.tokens, k)
			sp.draft = append(sp.draft, d[:min(len(d), k)]...)
			sp.dists = sp.dists[:0]
			continue
		}
		sp.draft = slices.Grow(sp.draft, k)[:k] // a length for the drafter to fill
		s.want = append(s.want, q)
	}
	if s.model != nil {
		return s.model.draft(e.sched.running, s.want)
	}
	return nil
}

// verify decides the drafts a chunk scored: rows are the logits after
// the request's last token and after each draft. It accepts the drafts
// the sampler keeps and one more token, as accept does one, and removes
// the cells of the tokens fed but not kept.
func (e *Engine) verify(c chunk, rows [][]float32) (Output, State, error) {
	q := c.seq
	sp := &q.spec
	d := sp.draft[:c.draft]
	out := Output{ID: q.id, Index: q.choice}
	final, kept := Running, 0
	for j := 0; j <= len(d) && final == Running; j++ {
		var tok int32
		ok := false
		if j < len(d) {
			var qd []float64
			if j < len(sp.dists) {
				qd = sp.dists[j]
			}
			tok, ok = q.post.sampler.Verify(rows[j], d[j], qd)
		} else {
			tok = draw(q, rows[j])
		}
		o, f := e.accept(q, rows[j], tok)
		out.NewTokens = append(out.NewTokens, o.NewTokens...)
		out.TextDelta += o.TextDelta
		out.Logprobs = append(out.Logprobs, o.Logprobs...)
		final = f
		if !ok {
			break
		}
		kept++
	}
	fed := c.start + c.n + c.draft // positions [0, fed) hold cells
	q.numCached = len(q.tokens) - 1
	if fed > q.numCached {
		if err := e.ctx.SeqRm(models.SeqID(q.seqID), int32(q.numCached), -1); err != nil {
			return out, final, fmt.Errorf("engine: %w", err)
		}
	}
	e.count.draftTokens += uint64(len(d))
	e.count.draftAccepted += uint64(kept)
	sp.adapt(kept, len(d), e.spec.max)
	sp.draft = sp.draft[:0]
	return out, final, nil
}
