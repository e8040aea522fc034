package server

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"runtime/debug"
	"sync"
	"time"

	"github.com/vkllm/vkllm/engine"
	"github.com/vkllm/vkllm/tokenizer/chat"
)

// event is one delta (or the error) of choice i.
type event struct {
	i   int
	d   engine.Delta
	err error
}

// errBadIndex is a Delta whose choice index is out of its stream's range
// (a Generator's bug).
var errBadIndex = errors.New("server: delta of an unknown choice")

// run is the choices of one request in flight: one goroutine per engine
// stream (a prompt and its n choices, which share one prefill) ranges
// over it and sends its deltas on events. Stop cancels every stream
// (aborting its engine request and freeing its cells) and waits for the
// goroutines.
type run struct {
	events   chan event
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	start    time.Time
	n        int                  // choices
	logf     func(string, ...any) // the server's, for internal errors
	stopping <-chan struct{}      // closed by Server.AbortStreams
	timeout  time.Duration        // Config.WriteTimeout, for each streamed event
}

// errShutdown ends the requests still running when the server stops
// waiting for them (Server.AbortStreams).
var errShutdown = func() *apiError {
	e := newError(http.StatusServiceUnavailable, "server_error", "server_shutting_down",
		"the server is shutting down and stopped this request; retry it")
	e.RetryAfter = 1
	return e
}()

// errPanic is a panic outside the forward pass (parsing a choice's
// output, say), recovered in the goroutine that ranged over a stream.
var errPanic = errors.New("server: internal error (a vkllm bug; the log has its stack)")

// startRun starts the streams, each of n choices: choice j of stream k
// is choice k*n+j of the answer. A stream is left after its n final
// deltas or an error. ctx is the request's context: when the client goes
// away, every stream is aborted.
func (s *Server) startRun(ctx context.Context, streams []func(context.Context) iter.Seq2[engine.Delta, error], n int) *run {
	info := infoOf(ctx)
	ctx, cancel := context.WithCancel(ctx)
	total := len(streams) * n
	r := &run{events: make(chan event, 16*total), cancel: cancel, start: time.Now(), n: total, logf: s.cfg.Logf,
		stopping: s.stopping, timeout: s.cfg.WriteTimeout}
	for k, st := range streams {
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			defer func() {
				if v := recover(); v != nil {
					r.logf("panic serving a request: %v\n%s", v, debug.Stack())
					select {
					case r.events <- event{i: k * n, err: fmt.Errorf("%w: %v", errPanic, v)}:
					case <-ctx.Done():
					}
				}
			}()
			open := n // choices without their final delta
			for d, err := range st(ctx) {
				if err == nil && (d.Index < 0 || d.Index >= n) {
					err = fmt.Errorf("%w: index %d of %d", errBadIndex, d.Index, n)
				}
				ev := event{k * n, d, err}
				if err == nil {
					ev.i += d.Index
					info.observe(ev.i, d, time.Now())
				}
				select {
				case r.events <- ev:
				case <-ctx.Done():
					return // leaving the loop aborts the request
				}
				if d.Finished {
					open--
				}
				if err != nil || open == 0 {
					return
				}
			}
		}()
	}
	return r
}

// stop cancels what is still running and waits for the goroutines.
func (r *run) stop() {
	r.cancel()
	r.wg.Wait()
}

// choiceState accumulates one choice.
type choiceState struct {
	started  bool // first delta seen
	finished bool
	text     []byte // content, when tools are offered
	calls    []chat.ToolCall
	tokens   []int32
	logprobs []engine.TokenLogprob
	reason   string
	usage    engine.Usage
	first    time.Time // first token
	last     time.Time // latest token
	buffered int       // bytes of text already sent (streaming)
}

// add observes TTFT and inter-token latencies for one choice and, at
// its end, its latency, tokens and phases. A reply from the inference
// cache (d.Replayed) ran no forward pass: it counts in the end-to-end
// latency and the token counts, never in the model's speeds.
func (c *choiceState) add(d engine.Delta, now time.Time, m *modelMetrics, start time.Time) {
	if d.Replayed {
		m = m.replayed()
	}
	if len(d.NewTokens) > 0 {
		if c.first.IsZero() {
			c.first = now
			if m != nil {
				m.ttft.Observe(now.Sub(start).Seconds())
			}
		} else if m != nil {
			gap := now.Sub(c.last).Seconds() / float64(len(d.NewTokens))
			for range d.NewTokens {
				m.itl.Observe(gap)
			}
		}
		c.last = now
	}
	c.started = true
	c.text = append(c.text, d.TextDelta...)
	for _, tc := range d.ToolCalls { // a call's first delta names it, the next ones add arguments
		if tc.Index == len(c.calls) {
			c.calls = append(c.calls, chat.ToolCall{ID: tc.ID, Type: tc.Type, Function: chat.FunctionCall{Name: tc.Function.Name}})
		}
		if tc.Index >= 0 && tc.Index < len(c.calls) {
			c.calls[tc.Index].Function.Arguments += tc.Function.Arguments
		}
	}
	c.tokens = append(c.tokens, d.NewTokens...)
	c.logprobs = append(c.logprobs, d.Logprobs...)
	if d.Finished {
		c.finished = true
		c.reason = d.FinishReason
		c.usage = d.Usage
		if m != nil {
			m.e2e.Observe(now.Sub(start).Seconds())
			m.promptToks.Observe(float64(d.Usage.PromptTokens))
			m.genToks.Observe(float64(d.Usage.CompletionTokens))
			if n := len(c.tokens); n > 1 {
				m.tpot.Observe(c.last.Sub(c.first).Seconds() / float64(n-1))
			}
			if t := d.Timing; t != nil {
				m.queue.Observe(t.Queue.Seconds())
				m.prefill.Observe(t.Prefill.Seconds())
				m.decode.Observe(t.Decode.Seconds())
			}
		}
	}
}

// waitStarted waits until every choice has its first delta (or one
// fails). It returns the deltas received so far in arrival order and
// an error when a choice failed before any output was sent, so the
// answer can still be an HTTP error status.
func (r *run) waitStarted(ctx context.Context, n int, promptParam string) ([]event, *apiError) {
	var got []event
	started := make([]bool, n)
	left := n
	for left > 0 {
		select {
		case ev := <-r.events:
			if ev.err != nil {
				if ctx.Err() != nil {
					return nil, clientGone
				}
				return nil, engineError(ev.err, promptParam, r.logf)
			}
			got = append(got, ev)
			if !started[ev.i] {
				started[ev.i] = true
				left--
			}
		case <-ctx.Done():
			return nil, clientGone
		case <-r.stopping:
			return nil, errShutdown
		}
	}
	return got, nil
}

// allFinished reports whether every choice has its final delta.
func allFinished(cs []choiceState) bool {
	for i := range cs {
		if !cs[i].finished {
			return false
		}
	}
	return true
}

// collect adds the events (first, then those that come) to their choices
// until every choice has finished: the non-streaming answer. It returns
// the first engine error, or ctx's error when the client went away.
func (r *run) collect(ctx context.Context, first []event, cs []choiceState, mm *modelMetrics) error {
	evs := first
	for {
		for _, ev := range evs {
			cs[ev.i].add(ev.d, time.Now(), mm, r.start)
		}
		evs = evs[:0]
		if allFinished(cs) {
			return nil
		}
		select {
		case ev := <-r.events:
			if ev.err != nil {
				return ev.err
			}
			evs = append(evs, ev)
		case <-ctx.Done():
			return ctx.Err()
		case <-r.stopping:
			return errShutdown
		}
	}
}

// pump hands the events (first, then those that come) to handle, which
// adds each to its choice and streams it, until every choice has
// finished; it reports whether all did. An engine error is sent as an
// error event, as is an *apiError that handle returns, and ends the
// stream; any other error of handle (the client went away) ends it
// silently.
func (r *run) pump(ctx context.Context, out *sse, first []event, cs []choiceState, param string, handle func(event) error) bool {
	fail := func(e *apiError) bool {
		if ctx.Err() == nil {
			out.sendError(e)
			out.done()
		}
		return false
	}
	do := func(ev event) bool {
		err := handle(ev)
		if e, ok := err.(*apiError); ok {
			return fail(e)
		}
		return err == nil
	}
	for _, ev := range first {
		if !do(ev) {
			return false
		}
	}
	for !allFinished(cs) {
		select {
		case ev := <-r.events:
			if ev.err != nil {
				return fail(engineError(ev.err, param, r.logf))
			}
			if !do(ev) {
				return false
			}
		case <-ctx.Done():
			return false
		case <-r.stopping:
			return fail(errShutdown)
		}
	}
	return true
}

// started is waitStarted for every choice; when one failed it writes the
// error (nothing when the client went away) and reports false.
func (r *run) started(ctx context.Context, w http.ResponseWriter, promptParam string) ([]event, bool) {
	first, e := r.waitStarted(ctx, r.n, promptParam)
	if e != nil && e != clientGone {
		writeError(w, e)
	}
	return first, e == nil
}

// clientGone marks a request whose client went away: nothing is written.
var clientGone = &apiError{Status: 499, Message: "client closed request"}
