package engine

import (
	"fmt"
	"math"

	"github.com/vkllm/vkllm/errcode"
)

// Pooling is how an embedding request's final hidden states (after the
// model's final norm) become one vector.
type Pooling uint8

const (
	// PoolDefault is the model's pooling: its folder's sentence-
	// transformers pooling (modules.json, 1_Pooling/config.json), else
	// PoolLast. An Engine request takes it as PoolLast; LLM.Embed reads
	// the folder.
	PoolDefault Pooling = iota
	// PoolLast is the last token's state: the only one that has seen the
	// whole input in a causal model (Qwen3-Embedding, e5-mistral).
	PoolLast
	// PoolMean is the mean over every input token.
	PoolMean
	numPoolings
)

var poolingNames = [numPoolings]string{"default", "last", "mean"}

func (p Pooling) String() string {
	if p < numPoolings {
		return poolingNames[p]
	}
	return fmt.Sprintf("Pooling(%d)", uint8(p))
}

// ErrBadEmbed: an embedding request with choices, a session or an unknown
// pooling.
var ErrBadEmbed = errcode.New(errcode.BadParams, "engine: bad embedding request")

// EmbedParams make a Request an embedding request (Request.Embed).
type EmbedParams struct {
	Pooling Pooling
	// Normalize scales the pooled vector to unit L2 norm.
	Normalize bool
}

// embedState is an embedding request's pooling in progress. The tokens
// of its sequence are its prompt only; when the step that computes the
// last of them ends, the request finishes with the pooled vector and
// gives back its cells (through the block manager, as any request).
type embedState struct {
	p   EmbedParams
	sum []float64 // PoolMean: the sum of the hidden states of the prompt's computed tokens
}

// everyRow reports whether q needs the hidden state of every prompt
// token, so that no token of it may come from the cache.
func (q *sequence) everyRow() bool { return q.emb != nil && q.emb.p.Pooling == PoolMean }

// embedRow reports whether the token at position p of chunk c asks for
// its hidden state.
func (c chunk) embedRow(p int) bool {
	switch e := c.seq.emb; {
	case e == nil:
		return false
	case e.p.Pooling == PoolMean:
		return true
	default:
		return c.sample && p == c.start+c.n-1
	}
}

// checkEmbed refuses what an embedding request cannot have.
func checkEmbed(r *Request) error {
	switch p := r.Embed; {
	case r.N > 1:
		return fmt.Errorf("%w: %d choices", ErrBadEmbed, r.N)
	case r.Session != "":
		return fmt.Errorf("%w: session %q", ErrBadEmbed, r.Session)
	case p.Pooling >= numPoolings:
		return fmt.Errorf("%w: pooling %v", ErrBadEmbed, p.Pooling)
	}
	return nil
}

// newEmbedSequence is the waiting sequence of embedding request r.
func newEmbedSequence(r *Request) *sequence {
	p := *r.Embed
	if p.Pooling == PoolDefault {
		p.Pooling = PoolLast
	}
	return &sequence{id: r.ID, state: Waiting, numPrompt: len(r.Prompt), seqID: -1,
		tokens: append([]int32(nil), r.Prompt...), emb: &embedState{p: p}}
}

// pool takes the embedding chunks out of a step that has run: each adds
// its hidden states to its request's pooling, and a chunk that ends its
// prompt finishes the request with its vector (in outs). It returns the
// other chunks and their logits, for sampling. The runner lays the chunks
// out in the batch in order, c.n tokens each.
func (e *Engine) pool(chunks []chunk, logits [][]float32, outs []Output) ([]chunk, [][]float32, []Output, error) {
	gen, genLogits := chunks[:0:0], logits[:0:0]
	first := 0 // batch index of the chunk's first token
	for i, c := range chunks {
		start := first
		first += c.n
		q := c.seq
		if q.emb == nil {
			gen, genLogits = append(gen, c), append(genLogits, logits[i])
			continue
		}
		vec, err := e.poolChunk(c, start)
		if err != nil {
			return nil, nil, outs, err
		}
		q.numCached += c.n
		if !c.sample {
			continue
		}
		if err := e.finish(q, FinishedStopped); err != nil {
			return nil, nil, outs, err
		}
		outs = append(outs, e.final(q, Output{ID: q.id, Embedding: vec}))
	}
	return gen, genLogits, outs, nil
}

// errNoHidden: a token that asked for its hidden state has none (a bug).
var errNoHidden = fmt.Errorf("engine: no hidden state for an embedding token")

// poolChunk adds chunk c's hidden states (its tokens from batch index
// start) to its request's pooling and, when c ends the prompt, returns
// the pooled vector.
func (e *Engine) poolChunk(c chunk, start int) ([]float32, error) {
	st := c.seq.emb
	row := func(p int) ([]float32, error) {
		h := e.ctx.Embeddings(start + p - c.start)
		if h == nil {
			return nil, fmt.Errorf("%w: %q position %d", errNoHidden, c.seq.id, p)
		}
		return h, nil
	}
	var vec []float32
	switch st.p.Pooling {
	case PoolMean:
		switch {
		case c.start == 0: // the first chunk, or a recompute after preemption
			st.sum = make([]float64, e.hidden)
		case st.sum == nil: // the prompt's head came from the cache: match must not allow it
			return nil, fmt.Errorf("%w: %q starts at %d", errNoHidden, c.seq.id, c.start)
		}
		for p := c.start; p < c.start+c.n; p++ {
			h, err := row(p)
			if err != nil {
				return nil, err
			}
			for j, v := range h {
				st.sum[j] += float64(v)
			}
		}
		if !c.sample {
			return nil, nil
		}
		vec = make([]float32, len(st.sum))
		for j, s := range st.sum {
			vec[j] = float32(s / float64(len(c.seq.tokens)))
		}
	default:
		if !c.sample {
			return nil, nil
		}
		h, err := row(c.start + c.n - 1)
		if err != nil {
			return nil, err
		}
		vec = append([]float32(nil), h...)
	}
	if st.p.Normalize {
		normalize(vec)
	}
	return vec, nil
}

// normalize scales v to unit L2 norm, as torch.nn.functional.normalize
// (a norm below 1e-12 divides by 1e-12).
func normalize(v []float32) {
	var ss float64
	for _, x := range v {
		ss += float64(x) * float64(x)
	}
	n := max(math.Sqrt(ss), 1e-12)
	for i, x := range v {
		v[i] = float32(float64(x) / n)
	}
}
