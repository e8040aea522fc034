package engine

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/vkllm/vkllm/models"
)

// loop is the goroutine that owns an Engine and its Context: callers
// hand it commands through its inbox (enqueue) and read each request's
// outputs from the request's mailbox; run takes the inbox, steps while
// there is work and sleeps when idle. The inbox, the count of requests
// accepted and not finished, and the closed flag are the loop's, under
// its own lock.
type loop struct {
	ctx        *models.Context
	draft      *draftModel // the draft model's Context (and model), if any
	eng        *Engine
	maxPending int
	stats      atomic.Pointer[Stats] // published after each step
	done       chan struct{}         // closed when run has returned

	mu      sync.Mutex
	inbox   []command // commands run has not taken yet
	pending int       // requests accepted, not finished
	closed  bool
	wake    chan struct{} // cap 1: the inbox has something

	boxes map[string]*mailbox // run's only: the mailboxes of the requests in eng
}

// command is one inbox entry: an add, an abort, a session's end, or a
// query.
type command struct {
	req        *Request
	box        *mailbox
	abort      string
	endSession string
	query      func(*loop)
}

func newLoop(eng *Engine, ctx *models.Context, d *draftModel, maxPending int) *loop {
	lp := &loop{ctx: ctx, draft: d, eng: eng, maxPending: maxPending, done: make(chan struct{}),
		wake: make(chan struct{}, 1), boxes: map[string]*mailbox{}}
	st := eng.Stats()
	lp.stats.Store(&st)
	return lp
}

// admit refuses adds requests at once when the inbox cannot take them,
// before their prompts cost anything; enqueue checks again.
func (lp *loop) admit(adds int) error {
	lp.mu.Lock()
	defer lp.mu.Unlock()
	return lp.room(adds)
}

// room is admit's check (lp.mu held).
func (lp *loop) room(adds int) error {
	switch {
	case lp.closed:
		return ErrClosed
	case lp.pending+adds > lp.maxPending:
		return fmt.Errorf("%w: %d pending, at most %d", ErrQueueFull, lp.pending, lp.maxPending)
	}
	return nil
}

// enqueue queues cmds, in order, of which adds are requests: all or
// none (ErrClosed, ErrQueueFull).
func (lp *loop) enqueue(cmds []command, adds int) error {
	lp.mu.Lock()
	defer lp.mu.Unlock()
	if err := lp.room(adds); err != nil {
		return err
	}
	lp.pending += adds
	lp.inbox = append(lp.inbox, cmds...)
	lp.poke()
	return nil
}

// pendingCount is the requests accepted and not finished.
func (lp *loop) pendingCount() int {
	lp.mu.Lock()
	defer lp.mu.Unlock()
	return lp.pending
}

func (lp *loop) poke() {
	select {
	case lp.wake <- struct{}{}:
	default:
	}
}

// close stops run (unfinished requests end with ErrClosed), waits for
// it and frees the Contexts; it reports whether this call closed it.
func (lp *loop) close() bool {
	lp.mu.Lock()
	if lp.closed {
		lp.mu.Unlock()
		<-lp.done
		return false
	}
	lp.closed = true
	lp.poke()
	lp.mu.Unlock()
	<-lp.done
	lp.draft.close()
	lp.ctx.Close()
	return true
}

// clear frees the retained sequences and publishes the stats.
func (lp *loop) clear() {
	lp.eng.ClearCache()
	st := lp.eng.Stats()
	lp.stats.Store(&st)
}

// finish delivers a request's last output (or its error) and forgets it.
func (lp *loop) finish(id string, o Output, err error) {
	if b := lp.boxes[id]; b != nil {
		delete(lp.boxes, id)
		lp.mu.Lock() // before the caller hears of the end, so its next call finds room
		lp.pending--
		lp.mu.Unlock()
		b.put(o, err)
	}
}

// run takes the inbox, steps while there is work and delivers outputs;
// it sleeps when idle and returns once closed.
func (lp *loop) run() {
	defer close(lp.done)
	for {
		lp.mu.Lock()
		cmds, closed := lp.inbox, lp.closed
		lp.inbox = nil
		lp.mu.Unlock()
		if closed {
			for _, c := range cmds {
				if c.req != nil {
					lp.boxes[c.req.ID] = c.box
				}
			}
			for id := range lp.boxes {
				lp.eng.Abort(id)
				lp.finish(id, Output{}, ErrClosed)
			}
			return
		}
		var queries []func(*loop)
		lp.guard(func() {
			for _, c := range cmds {
				switch {
				case c.req != nil:
					lp.boxes[c.req.ID] = c.box
					if err := lp.eng.Add(*c.req); err != nil {
						lp.finish(c.req.ID, Output{}, err)
					}
				case c.query != nil:
					queries = append(queries, c.query)
				case c.endSession != "":
					if err := lp.eng.EndSession(c.endSession); err != nil {
						lp.fail(err)
					}
				default:
					lp.eng.Abort(c.abort)
				}
			}
			if lp.eng.HasUnfinished() {
				lp.step()
			}
		})
		st := lp.eng.Stats()
		lp.stats.Store(&st)
		for _, q := range queries { // after the step that reported the aborts before them (and its stats)
			q(lp)
		}
		if !lp.eng.HasUnfinished() {
			<-lp.wake // an enqueue after the inbox was taken left a wake-up
		}
	}
}

// guard runs work on the engine; a panic there (sampling, a Constraint,
// stop strings, detokenising) fails every request with a *PanicError
// and frees their cells, as a failed step does, and the loop goes on.
func (lp *loop) guard(work func()) {
	defer func() {
		if v := recover(); v != nil {
			lp.fail(recovered(v))
		}
	}()
	work()
}

// step runs one engine step and delivers its outputs, after publishing
// the stats that count them: a caller that hears of its request's end
// reads Stats with that request in them.
func (lp *loop) step() {
	outs, err := lp.eng.Step()
	st := lp.eng.Stats()
	lp.stats.Store(&st)
	for _, o := range outs {
		b := lp.boxes[o.ID]
		switch {
		case b == nil:
		case o.Finished && b.last(): // the request's last choice
			lp.finish(o.ID, o, nil)
		default:
			b.put(o, nil)
		}
	}
	if err != nil {
		lp.fail(err)
	}
}

// fail ends every request with err after the cache failed, and frees
// everything the engine holds.
func (lp *loop) fail(err error) {
	for id := range lp.boxes {
		lp.eng.Abort(id)
		lp.finish(id, Output{}, err)
	}
	lp.eng.Step() // reports the aborts, to nobody
	lp.eng.ClearCache()
}
