package engine

import (
	"errors"
	"fmt"

	"github.com/vkllm/vkllm/models"
)

// errNoSequence: a scheduled request holds no sequence id (a bug: the
// scheduler allocates one when it admits a request).
var errNoSequence = errors.New("engine: scheduled request without a sequence")

// runner turns a schedule into one models.Batch and one Decode. Which
// sequence a request uses and what the cache holds of it are decided
// before, by the scheduler and the block manager; the runner runs the
// chunks as planned.
type runner struct {
	ctx    *models.Context
	batch  models.Batch // reused: (tokens) SoA
	seqs   [][]models.SeqID
	logits [][]float32 // per chunk of the last run; nil when it did not sample
	last   []int       // batch index of each chunk's last token (before its drafts)
	rowBuf [][]float32 // rows' result, reused
}

func newRunner(ctx *models.Context) *runner {
	r := &runner{ctx: ctx}
	r.seqs = make([][]models.SeqID, ctx.Params().MaxSeqs)
	for i := range r.seqs {
		r.seqs[i] = []models.SeqID{models.SeqID(i)}
	}
	return r
}

// run decodes the chunks in one forward pass and returns, per chunk, the
// logits of its last token when it samples (nil otherwise). The rows are
// the Context's and valid until the next run. On error the cache is as it
// was (Decode's promise).
func (r *runner) run(chunks []chunk) ([][]float32, error) {
	b := &r.batch
	b.Token, b.Pos, b.Seq, b.Logits, b.Embed, b.Adapter = b.Token[:0], b.Pos[:0], b.Seq[:0], b.Logits[:0], b.Embed[:0], b.Adapter[:0]
	r.last = r.last[:0]
	lora := false
	for _, c := range chunks {
		q := c.seq
		if q.seqID < 0 {
			return nil, fmt.Errorf("%w: %q", errNoSequence, q.id)
		}
		for p := c.start; p < c.start+c.n; p++ {
			b.Add(q.tokens[p], int32(p), c.sample && q.emb == nil && p == c.start+c.n-1, r.seqs[q.seqID]...)
			b.Embed = append(b.Embed, c.embedRow(p))
			b.Adapter = append(b.Adapter, q.adapter)
		}
		r.last = append(r.last, b.Len()-1)
		for j, t := range q.spec.draft[:c.draft] {
			b.Add(t, int32(c.start+c.n+j), true, r.seqs[q.seqID]...)
			b.Embed = append(b.Embed, false)
			b.Adapter = append(b.Adapter, q.adapter)
		}
		lora = lora || q.adapter != models.NoAdapter
	}
	last := r.last
	if b.Len() == 0 {
		return nil, nil
	}
	if !lora {
		b.Adapter = b.Adapter[:0] // the base model for every token
	}
	if err := r.ctx.Decode(*b); err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	r.logits = r.logits[:0]
	for i, c := range chunks {
		var row []float32
		if c.sample {
			row = r.ctx.Logits(last[i])
		}
		r.logits = append(r.logits, row)
	}
	return r.logits, nil
}

// rows returns the logits of chunk i's last token and of each of its
// drafts, from the last run; the slice is reused by the next call.
func (r *runner) rows(i int, c chunk) [][]float32 {
	r.rowBuf = r.rowBuf[:0]
	for j := range c.draft + 1 {
		r.rowBuf = append(r.rowBuf, r.ctx.Logits(r.last[i]+j))
	}
	return r.rowBuf
}
