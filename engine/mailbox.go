package engine

import "sync"

// mailbox collects one request's outputs for its caller.
type mailbox struct {
	mu       sync.Mutex
	outs     []Output
	err      error
	choices  int           // the request's (Request.N, at least 1)
	finished int           // final outputs delivered
	done     bool          // every choice's final output, or err, delivered to the box
	signal   chan struct{} // cap 1
	// rec, when set, gathers the outputs for the inference cache; they
	// are stored when every choice has finished other than by abort.
	rec   *recording
	cache *inferenceCache
}

func newMailbox(choices int) *mailbox {
	return &mailbox{choices: max(choices, 1), signal: make(chan struct{}, 1)}
}

// last reports whether the box waits for one final output only.
func (b *mailbox) last() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.finished+1 >= b.choices
}

func (b *mailbox) put(o Output, err error) {
	b.mu.Lock()
	if !b.done {
		if err != nil {
			b.err = err
		} else {
			b.outs = append(b.outs, o)
		}
		if o.Finished {
			b.finished++
		}
		b.done = err != nil || b.finished >= b.choices
		b.record(o, err)
	}
	b.mu.Unlock()
	select {
	case b.signal <- struct{}{}:
	default:
	}
}

// record adds o to the box's recording, and stores the recording in the
// cache once the request has finished well (b.mu held).
func (b *mailbox) record(o Output, err error) {
	if b.rec == nil {
		return
	}
	if err != nil || o.FinishReason == "abort" {
		b.rec = nil
		return
	}
	b.rec.outs = append(b.rec.outs, o)
	if b.done {
		b.cache.put(b.rec.key, b.rec.outs)
		b.rec = nil
	}
}

// take returns what arrived since the last take.
func (b *mailbox) take() (outs []Output, err error, done bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	outs, b.outs = b.outs, nil
	return outs, b.err, b.done
}
