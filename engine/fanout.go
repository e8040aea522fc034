package engine

import (
	"fmt"

	"github.com/vkllm/vkllm/errcode"
	"github.com/vkllm/vkllm/models"
	"github.com/vkllm/vkllm/sampler"
)

// Errors of Add for a request of several choices (Request.N).
var (
	// ErrTooManyChoices: N is negative, exceeds the sequences of the
	// Context (MaxSeqs), or is more than one for a session request.
	ErrTooManyChoices = errcode.New(errcode.BadParams, "engine: too many choices")
	// ErrSharedConstraint: the choices would share one stateful
	// Constraint, or Request.Constraints does not have one per choice.
	ErrSharedConstraint = errcode.New(errcode.BadParams, "engine: choices need a Constraint each")
)

// fanout is a request of several choices. Choice 0 (the leader) is the
// only one queued at first: it prefills the prompt in its own sequence.
// In the step whose Decode gives the prompt's last logits, every other
// choice gets a sequence sharing the leader's prompt cells (SeqCp, no
// copy), joins the running queue and draws its first token from those
// same logits. From then on each choice is an ordinary sequence:
// preempted alone, recomputed alone, finished alone.
type fanout struct {
	choices []*sequence // choice i at index i
	split   bool        // every choice runs on its own sequence
	open    int         // choices not finished
}

// width is the sequence ids q needs to run: its request's N while q is
// the leader of a request not yet split, else 1.
func (q *sequence) width() int {
	if f := q.fan; f != nil && !f.split && q.choice == 0 {
		return len(f.choices)
	}
	return 1
}

// held is the sequence ids the running requests hold or have reserved.
func (s *scheduler) held() int {
	n := 0
	for _, q := range s.running {
		n += q.width()
	}
	return n
}

// choices is q's request's choices: q alone, or all of them.
func (q *sequence) choices() []*sequence {
	if q.fan == nil {
		return []*sequence{q}
	}
	return q.fan.choices
}

// end counts one more finished choice and reports whether it was the
// request's last.
func (f *fanout) end() bool {
	f.open--
	return f.open == 0
}

// choiceParams are the sampling parameters of choice i: Seed+i when a
// seed is set (the seeds n separate requests get from the server), the
// choice's own Constraint when constraints are given.
func choiceParams(p sampler.Params, constraints []sampler.Constraint, i int) sampler.Params {
	if p.Seed != nil && i > 0 {
		s := *p.Seed + uint64(i)
		p.Seed = &s
	}
	if constraints != nil {
		p.Constraint = constraints[i]
	}
	return p
}

// checkChoices validates r's N and Constraints against maxSeqs sequence
// ids.
func checkChoices(r *Request, maxSeqs int) error {
	n := max(r.N, 1)
	switch {
	case r.N < 0 || r.N > maxSeqs:
		return fmt.Errorf("%w: n = %d, at most %d (the sequences that run at once)", ErrTooManyChoices, r.N, maxSeqs)
	case n > 1 && r.Session != "":
		return fmt.Errorf("%w: n = %d for session %q, which keeps one sequence", ErrTooManyChoices, r.N, r.Session)
	case r.Constraints != nil && len(r.Constraints) != n:
		return fmt.Errorf("%w: %d constraints for %d choices", ErrSharedConstraint, len(r.Constraints), n)
	case n > 1 && r.Constraints == nil && r.Params.Constraint != nil:
		return fmt.Errorf("%w: Params.Constraint for %d choices; give Request.Constraints", ErrSharedConstraint, n)
	}
	for i, c := range r.Constraints {
		if c == nil {
			return fmt.Errorf("%w: constraint %d is nil", ErrSharedConstraint, i)
		}
		for _, d := range r.Constraints[:i] {
			if d == c {
				return fmt.Errorf("%w: constraint %d is also an earlier choice's", ErrSharedConstraint, i)
			}
		}
	}
	return nil
}

// fanOut splits, after the Decode of chunks, every request whose leader
// just computed the prompt's last token: each other choice gets a
// sequence sharing the prompt's cells and running, and a chunk of no
// tokens that samples from the leader's logits row. It returns chunks
// and logits with those appended.
func (e *Engine) fanOut(chunks []chunk, logits [][]float32) ([]chunk, [][]float32, error) {
	for i, n := 0, len(chunks); i < n; i++ {
		lead := chunks[i].seq
		f := lead.fan
		if f == nil || f.split || !chunks[i].sample {
			continue
		}
		f.split = true
		for _, q := range f.choices[1:] {
			if err := e.blocks.share(lead, q, lead.numPrompt); err != nil {
				return chunks, logits, err
			}
			if err := transition(q.id, &q.state, Running); err != nil {
				return chunks, logits, err
			}
			q.numCached, q.numReused = q.numPrompt, lead.numReused
			e.sched.running = append(e.sched.running, q)
			chunks = append(chunks, chunk{seq: q, start: q.numPrompt, n: 0, sample: true})
			logits = append(logits, logits[i])
		}
	}
	return chunks, logits, nil
}

// share gives q, which holds no sequence, a sequence id whose cells at
// positions [0, n) are from's (shared, not copied). The scheduler
// reserved the id: a request's leader holds its choices' place in the
// running budget (width) until they split.
func (m *blockManager) share(from, q *sequence, n int) error {
	if len(m.free) == 0 {
		return errNoSeqID
	}
	id := m.free[len(m.free)-1]
	if err := m.cells.SeqCp(models.SeqID(from.seqID), models.SeqID(id), 0, int32(n)); err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	m.free = m.free[:len(m.free)-1]
	m.running[id] = q
	q.seqID = id
	return nil
}
