package engine

import (
	"errors"
	"fmt"

	"github.com/vkllm/vkllm/models"
)

// errNoSeqID means more requests ran than the scheduler allows: a bug.
var errNoSeqID = errors.New("engine: no free sequence id")

// runner turns a schedule into one models.Batch and one Decode. It owns
// the sequence ids: a request takes one from the free list when it first
// runs and gives it back (with its cells) when preempted or finished.
type runner struct {
	ctx    *models.Context
	free   []models.SeqID // stack of unused ids in [0, MaxSeqs)
	batch  models.Batch   // reused: (tokens) SoA
	seqs   [][]models.SeqID
	logits [][]float32 // per chunk of the last run; nil when it did not sample
}

func newRunner(ctx *models.Context) *runner {
	r := &runner{ctx: ctx}
	n := ctx.Params().MaxSeqs
	for id := n - 1; id >= 0; id-- { // pop gives 0 first
		r.free = append(r.free, models.SeqID(id))
	}
	r.seqs = make([][]models.SeqID, n)
	for i := range r.seqs {
		r.seqs[i] = []models.SeqID{models.SeqID(i)}
	}
	return r
}

// freeCells is the number of empty cells.
func (r *runner) freeCells() int {
	cells, used := r.ctx.KVCapacity()
	return cells - used
}

// run decodes the chunks in one forward pass and returns, per chunk, the
// logits of its last token when it samples (nil otherwise). The rows are
// the Context's and valid until the next run. On error the cache is as it
// was (Decode's promise); sequence ids taken stay with their requests.
func (r *runner) run(chunks []chunk) ([][]float32, error) {
	b := &r.batch
	b.Token, b.Pos, b.Seq, b.Logits = b.Token[:0], b.Pos[:0], b.Seq[:0], b.Logits[:0]
	last := make([]int, len(chunks)) // batch index of each chunk's last token
	for i, c := range chunks {
		q := c.seq
		if q.seqID < 0 {
			if len(r.free) == 0 {
				return nil, errNoSeqID
			}
			q.seqID = int32(r.free[len(r.free)-1])
			r.free = r.free[:len(r.free)-1]
		}
		for p := c.start; p < c.start+c.n; p++ {
			b.Add(q.tokens[p], int32(p), c.sample && p == c.start+c.n-1, r.seqs[q.seqID]...)
		}
		last[i] = b.Len() - 1
	}
	if b.Len() == 0 {
		return nil, nil
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

// release frees q's cells and sequence id, if it holds them.
func (r *runner) release(q *sequence) error {
	if q.seqID < 0 {
		return nil
	}
	if err := r.ctx.Release(models.SeqID(q.seqID)); err != nil {
		return fmt.Errorf("engine: release: %w", err)
	}
	r.free = append(r.free, models.SeqID(q.seqID))
	q.seqID = -1
	return nil
}
