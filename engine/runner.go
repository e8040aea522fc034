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
	pool   *pool          // sequences kept after their request (prefixes, sessions)
	prefix bool           // prefix caching on
	count  *counters      // the Engine's (prefix-cache queries and hits)
	free   []models.SeqID // stack of unused ids in [0, MaxSeqs)
	batch  models.Batch   // reused: (tokens) SoA
	seqs   [][]models.SeqID
	logits [][]float32 // per chunk of the last run; nil when it did not sample
}

func newRunner(ctx *models.Context, prefix bool, count *counters) *runner {
	r := &runner{ctx: ctx, pool: newPool(), prefix: prefix, count: count}
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
	return r.ctx.Params().ContextLen - r.ctx.Used()
}

// reclaim evicts one retained sequence (a cached prefix first, else the
// least recently used idle session) and returns the free cells after it;
// ok is false when nothing is retained.
func (r *runner) reclaim() (free int, ok bool, err error) {
	v := r.pool.victim(nil)
	if v == nil {
		return r.freeCells(), false, nil
	}
	if err := r.evict(v); err != nil {
		return 0, false, err
	}
	return r.freeCells(), true, nil
}

// evict frees a retained sequence and its id.
func (r *runner) evict(v *retained) error {
	r.pool.remove(v)
	if err := r.ctx.SeqRm(models.SeqID(v.seqID), -1, -1); err != nil {
		return fmt.Errorf("engine: release: %w", err)
	}
	r.free = append(r.free, models.SeqID(v.seqID))
	return nil
}

// preempt frees q's cells and id and returns the free cells after it.
func (r *runner) preempt(q *sequence) (int, error) {
	if err := r.release(q); err != nil {
		return 0, err
	}
	return r.freeCells(), nil
}

// attach gives q, which holds no sequence yet, an id and whatever of its
// tokens the cache already holds: its session's idle sequence (taken over,
// cut where the tokens differ) or a cached prefix (shared through SeqCp).
// It sets q.numCached; at least one token is always left to compute.
func (r *runner) attach(q *sequence) error {
	if s := r.pool.sessions[q.session]; q.session != "" && s != nil {
		r.pool.remove(s)
		c := commonPrefix(s.tokens, q.tokens[:len(q.tokens)-1])
		if err := r.ctx.SeqRm(models.SeqID(s.seqID), int32(c), -1); err != nil {
			return fmt.Errorf("engine: %w", err)
		}
		q.seqID, q.numCached, q.numReused = s.seqID, c, c
		return nil
	}
	var hit *retained
	m := 0
	if r.prefix {
		hit, m = r.pool.match(q.tokens)
		r.count.prefixQueries += uint64(len(q.tokens))
		r.count.prefixHits += uint64(m)
	}
	if len(r.free) == 0 {
		if v := r.pool.victim(hit); v != nil {
			if err := r.evict(v); err != nil {
				return err
			}
		} else if hit != nil { // the only retained sequence is the hit: take it over
			r.pool.remove(hit)
			if err := r.ctx.SeqRm(models.SeqID(hit.seqID), int32(m), -1); err != nil {
				return fmt.Errorf("engine: %w", err)
			}
			q.seqID, q.numCached, q.numReused = hit.seqID, m, m
			return nil
		} else {
			return errNoSeqID
		}
	}
	id := r.free[len(r.free)-1]
	r.free = r.free[:len(r.free)-1]
	q.seqID = int32(id)
	if hit != nil {
		if err := r.ctx.SeqCp(models.SeqID(hit.seqID), id, 0, int32(m)); err != nil {
			return fmt.Errorf("engine: %w", err)
		}
		r.pool.touch(hit)
	}
	q.numCached, q.numReused = m, m
	return nil
}

func commonPrefix(a, b []int32) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// retire ends q's hold on the cache: its sequence is kept for its session
// (when it has one) or as a cached prefix (whole blocks, when prefix
// caching is on), else freed.
func (r *runner) retire(q *sequence) error {
	if q.seqID < 0 {
		return nil
	}
	toks := q.tokens[:q.numCached]
	switch {
	case q.session != "" && len(toks) > 0:
		if old := r.pool.sessions[q.session]; old != nil {
			if err := r.evict(old); err != nil {
				return err
			}
		}
		r.pool.addSession(q.session, q.seqID, append([]int32(nil), toks...))
	case r.prefix && len(toks) >= BlockSize:
		n := len(toks) / BlockSize * BlockSize
		if err := r.ctx.SeqRm(models.SeqID(q.seqID), int32(n), -1); err != nil {
			return fmt.Errorf("engine: %w", err)
		}
		r.pool.addPrefix(q.seqID, append([]int32(nil), toks[:n]...))
	default:
		return r.release(q)
	}
	q.seqID = -1
	return nil
}

// run decodes the chunks in one forward pass and returns, per chunk, the
// logits of its last token when it samples (nil otherwise). The rows are
// the Context's and valid until the next run. On error the cache is as it
// was (Decode's promise); sequence ids taken stay with their requests.
func (r *runner) run(chunks []chunk) ([][]float32, error) {
	b := &r.batch
	b.Token, b.Pos, b.Seq, b.Logits = b.Token[:0], b.Pos[:0], b.Seq[:0], b.Logits[:0]
	last := make([]int, len(chunks)) // batch index of each chunk's last token
	for i := range chunks {
		c := &chunks[i]
		q := c.seq
		if q.seqID < 0 {
			if err := r.attach(q); err != nil {
				return nil, err
			}
			if q.numCached > c.start { // the cache had some of it: compute what follows, within the chunk's budget
				c.start = q.numCached
				c.n = min(c.n, len(q.tokens)-c.start)
				c.sample = c.start+c.n == len(q.tokens)
			}
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
	if err := r.ctx.SeqRm(models.SeqID(q.seqID), -1, -1); err != nil {
		return fmt.Errorf("engine: release: %w", err)
	}
	r.free = append(r.free, models.SeqID(q.seqID))
	q.seqID = -1
	return nil
}
