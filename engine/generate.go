// Generate, Stream and StreamTokens: a caller's prompts submitted to the
// loop, and its outputs read from its mailboxes.

package engine

import (
	"context"
	"iter"
	"strconv"

	"github.com/vkllm/vkllm/sampler"
	"github.com/vkllm/vkllm/tokenizer/chat"
)

// Result is a finished request of Generate or Chat.
type Result struct {
	// Text is the reply; for a Chat that offers tools, its content: the
	// text around the tool calls.
	Text   string
	Tokens []int32
	// ToolCalls are the calls a Chat reply made (IDs are new ones).
	// FinishReason is then "tool_calls", or "length" when the last call
	// was cut short.
	ToolCalls    []chat.ToolCall
	Logprobs     []TokenLogprob
	FinishReason string
	Usage        Usage
}

// Delta is one piece of a Stream: the Output of one engine step, and,
// for a chat that offers tools, the tool calls its text completes.
type Delta struct {
	Output
	// ToolCalls are the pieces of the calls this delta's text completes
	// (see LLM.StreamChat); TextDelta is then the content around them.
	ToolCalls []chat.ToolCallDelta
}

// Generate runs the prompts as concurrent requests and returns their
// results in input order. Cancelling ctx aborts them all (their cells are
// freed) and returns ctx's error. A prompt longer than a request may hold
// fails the call with ErrPromptTooLong before any runs; a request refused
// by the engine (bad params) fails it with its error after the others are
// aborted.
func (l *LLM) Generate(ctx context.Context, prompts []string, params sampler.Params) ([]Result, error) {
	if ctx == nil {
		return nil, ErrNilContext
	}
	ids, boxes, err := l.submit(prompts, params)
	if err != nil {
		return nil, err
	}
	return l.collect(ctx, ids, boxes)
}

// collect waits for every mailbox and gathers the results in order.
func (l *LLM) collect(ctx context.Context, ids []string, boxes []*mailbox) ([]Result, error) {
	res := make([]Result, len(boxes))
	for i, b := range boxes {
		for {
			outs, err, done := b.take()
			for _, o := range outs {
				res[i].add(Delta{Output: o})
			}
			if err != nil {
				l.abort(ids...)
				return nil, err
			}
			if done {
				break
			}
			select {
			case <-b.signal:
			case <-ctx.Done():
				l.abort(ids...)
				return nil, ctx.Err()
			}
		}
	}
	return res, nil
}

func (r *Result) add(o Delta) {
	for _, d := range o.ToolCalls {
		if d.Index == len(r.ToolCalls) {
			r.ToolCalls = append(r.ToolCalls, chat.ToolCall{ID: d.ID, Type: d.Type, Function: chat.FunctionCall{Name: d.Function.Name}})
		}
		r.ToolCalls[d.Index].Function.Arguments += d.Function.Arguments
	}
	r.Text += o.TextDelta
	r.Tokens = append(r.Tokens, o.NewTokens...)
	r.Logprobs = append(r.Logprobs, o.Logprobs...)
	r.Usage = o.Usage
	r.FinishReason = o.FinishReason
}

// Stream runs one prompt and yields its outputs as they come; the last
// has Finished set (with WithChoices, each choice has a final Delta and
// the stream ends after the last). An error (bad params,
// ErrPromptTooLong, ErrQueueFull, ctx cancelled, ErrClosed,
// ErrNilContext) is yielded once and ends the stream. Stopping the
// iteration early, or cancelling ctx, aborts the request (every choice)
// and frees its cells.
func (l *LLM) Stream(ctx context.Context, prompt string, params sampler.Params, opts ...StreamOption) iter.Seq2[Delta, error] {
	return l.stream(ctx, func() ([]string, []*mailbox, error) {
		params, opts, err := l.withFormat(params, opts)
		if err != nil {
			return nil, nil, err
		}
		return l.submit([]string{prompt}, params, opts...)
	})
}

// StreamTokens is Stream for a prompt given as token ids.
func (l *LLM) StreamTokens(ctx context.Context, prompt []int32, params sampler.Params, opts ...StreamOption) iter.Seq2[Delta, error] {
	return l.stream(ctx, func() ([]string, []*mailbox, error) {
		params, opts, err := l.withFormat(params, opts)
		if err != nil {
			return nil, nil, err
		}
		id := l.newID()
		req := &Request{ID: id, Prompt: append([]int32(nil), prompt...), Params: params}
		for _, o := range opts {
			o(req)
		}
		box := newMailbox(req.N)
		if err := l.send(command{req: req, box: box}); err != nil {
			return nil, nil, err
		}
		return []string{id}, []*mailbox{box}, nil
	})
}

func (l *LLM) newID() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.nextID++
	return "req-" + strconv.FormatUint(l.nextID, 10)
}

// stream queues one request with submit and yields its outputs.
func (l *LLM) stream(ctx context.Context, submit func() ([]string, []*mailbox, error)) iter.Seq2[Delta, error] {
	return func(yield func(Delta, error) bool) {
		if ctx == nil {
			yield(Delta{}, ErrNilContext)
			return
		}
		ids, boxes, err := submit()
		if err != nil {
			yield(Delta{}, err)
			return
		}
		b := boxes[0]
		open := b.choices // choices without their final output yet
		for {
			outs, err, done := b.take()
			for _, o := range outs {
				if o.Finished {
					open--
				}
				if !yield(Delta{Output: o}, nil) {
					if open > 0 {
						l.abort(ids...)
					}
					return
				}
			}
			if err != nil {
				yield(Delta{}, err)
				return
			}
			if done {
				return
			}
			select {
			case <-b.signal:
			case <-ctx.Done():
				l.abort(ids...)
				yield(Delta{}, ctx.Err())
				return
			}
		}
	}
}
