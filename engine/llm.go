package engine

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/vkllm/vkllm/models"
	"github.com/vkllm/vkllm/sampler"
	"github.com/vkllm/vkllm/tensor"
	"github.com/vkllm/vkllm/tokenizer"
	"github.com/vkllm/vkllm/tokenizer/chat"
)

// Errors of the LLM facade.
var (
	ErrQueueFull = errors.New("engine: request queue full")
	ErrClosed    = errors.New("engine: LLM closed")
)

// Options size an LLM. Zero values take the defaults.
type Options struct {
	ContextLen     int          // KV cells shared by all requests; default min(positions, 4096)
	MaxSeqs        int          // requests running at once; default 16
	BatchSize      int          // tokens per forward pass; default 512
	MaxBatchTokens int          // token budget per step; default BatchSize
	KVType         tensor.DType // F32 (default) or F16
	// MaxPending bounds the requests accepted and not finished (queued or
	// running); one more gets ErrQueueFull. Default 1024.
	MaxPending int
	Model      []models.Option
}

// Result is a finished request of Generate.
type Result struct {
	Text         string
	Tokens       []int32
	Logprobs     []TokenLogprob
	FinishReason string
	Usage        Usage
}

// Delta is one piece of a Stream: the Output of one engine step.
type Delta = Output

// LLM serves Generate and Stream from any goroutine. One goroutine (the
// loop) owns the Engine; callers talk to it through an inbox and read
// their outputs from a mailbox each, so a slow reader never stalls it.
type LLM struct {
	model *models.Model
	ctx   *models.Context
	tok   *tokenizer.Tokenizer
	chat  *chat.Config // the model's chat template and special tokens
	eng   *Engine      // the loop's only
	opts  Options

	mu      sync.Mutex
	inbox   []command
	pending int // accepted, not finished
	nextID  uint64
	closed  bool
	wake    chan struct{} // cap 1: the inbox has something
	done    chan struct{} // closed when the loop has returned

	stats atomic.Pointer[Stats] // published by the loop after each step
}

// command is one inbox entry: an add, an abort, or a query.
type command struct {
	req   *Request
	box   *mailbox
	abort string
	query func(*Engine)
}

// mailbox collects one request's outputs for its caller.
type mailbox struct {
	mu     sync.Mutex
	outs   []Output
	err    error
	done   bool          // final output or err delivered to the box
	signal chan struct{} // cap 1
}

func newMailbox() *mailbox { return &mailbox{signal: make(chan struct{}, 1)} }

func (b *mailbox) put(o Output, err error) {
	b.mu.Lock()
	if !b.done {
		if err != nil {
			b.err = err
		} else {
			b.outs = append(b.outs, o)
		}
		b.done = err != nil || o.Finished
	}
	b.mu.Unlock()
	select {
	case b.signal <- struct{}{}:
	default:
	}
}

// take returns what arrived since the last take.
func (b *mailbox) take() (outs []Output, err error, done bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	outs, b.outs = b.outs, nil
	return outs, b.err, b.done
}

// Open opens a model folder or GGUF file with its tokenizer and starts the
// loop. Close it when done.
func Open(path string, opts Options) (*LLM, error) {
	m, err := models.Open(path, opts.Model...)
	if err != nil {
		return nil, err
	}
	var tok *tokenizer.Tokenizer
	var cc *chat.Config
	if g := m.Files.GGUF; g != nil {
		tok, err = tokenizer.FromGGUF(g)
		cc = chat.ConfigFromGGUF(g)
	} else if tok, err = tokenizer.FromFile(m.Files.TokenizerPath); err == nil {
		cc, err = chat.LoadConfig(filepath.Dir(m.Files.TokenizerPath))
	}
	if err != nil {
		m.Close()
		return nil, err
	}
	l, err := newLLM(m, tok, opts)
	if err != nil {
		m.Close()
		return nil, err
	}
	l.chat = cc
	return l, nil
}

func newLLM(m *models.Model, tok *tokenizer.Tokenizer, opts Options) (*LLM, error) {
	if opts.MaxSeqs == 0 {
		opts.MaxSeqs = 16
	}
	if opts.MaxPending == 0 {
		opts.MaxPending = 1024
	}
	if opts.MaxPending < 1 {
		return nil, fmt.Errorf("engine: MaxPending %d < 1", opts.MaxPending)
	}
	ctx, err := m.NewContext(models.ContextParams{ContextLen: opts.ContextLen, MaxSeqs: opts.MaxSeqs,
		BatchSize: opts.BatchSize, KVType: opts.KVType})
	if err != nil {
		return nil, err
	}
	eng, err := New(m, ctx, tok, Config{MaxBatchTokens: opts.MaxBatchTokens})
	if err != nil {
		ctx.Close()
		return nil, err
	}
	l := &LLM{model: m, ctx: ctx, tok: tok, eng: eng, opts: opts,
		wake: make(chan struct{}, 1), done: make(chan struct{})}
	st := eng.Stats()
	l.stats.Store(&st)
	go l.loop()
	return l, nil
}

// Tokenizer is the model's tokenizer.
func (l *LLM) Tokenizer() *tokenizer.Tokenizer { return l.tok }

// Close stops the loop (unfinished requests end with ErrClosed), waits
// for it, and frees the Context and the model.
func (l *LLM) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		<-l.done
		return nil
	}
	l.closed = true
	l.mu.Unlock()
	l.poke()
	<-l.done
	l.ctx.Close()
	return l.model.Close()
}

func (l *LLM) poke() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// send puts commands in the inbox; adds count against MaxPending.
func (l *LLM) send(cmds ...command) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	adds := 0
	for _, c := range cmds {
		if c.req != nil {
			adds++
		}
	}
	if l.pending+adds > l.opts.MaxPending {
		return fmt.Errorf("%w: %d pending, at most %d", ErrQueueFull, l.pending, l.opts.MaxPending)
	}
	l.pending += adds
	l.inbox = append(l.inbox, cmds...)
	l.poke()
	return nil
}

// submit tokenizes prompts and queues them, all or none.
func (l *LLM) submit(prompts []string, params sampler.Params) ([]string, []*mailbox, error) {
	return l.submitEncoded(prompts, params, true)
}

// submitEncoded is submit; addSpecial is false for rendered chat prompts,
// which carry their own special tokens (as apply_chat_template).
func (l *LLM) submitEncoded(prompts []string, params sampler.Params, addSpecial bool) ([]string, []*mailbox, error) {
	cmds := make([]command, len(prompts))
	ids := make([]string, len(prompts))
	boxes := make([]*mailbox, len(prompts))
	for i, p := range prompts {
		toks, err := l.tok.Encode(p, addSpecial)
		if err != nil {
			return nil, nil, err
		}
		ids[i] = l.newID()
		boxes[i] = newMailbox()
		cmds[i] = command{req: &Request{ID: ids[i], Prompt: toks, Params: params}, box: boxes[i]}
	}
	if err := l.send(cmds...); err != nil {
		return nil, nil, err
	}
	return ids, boxes, nil
}

// abort asks the loop to end requests (best effort after Close).
func (l *LLM) abort(ids ...string) {
	cmds := make([]command, len(ids))
	for i, id := range ids {
		cmds[i] = command{abort: id}
	}
	l.send(cmds...)
}

// Generate runs the prompts as concurrent requests and returns their
// results in input order. Cancelling ctx aborts them all (their cells are
// freed) and returns ctx's error. A request refused by the engine (bad
// params) fails the call with its error after the others are aborted.
func (l *LLM) Generate(ctx context.Context, prompts []string, params sampler.Params) ([]Result, error) {
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
				res[i].add(o)
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

// ChatRequest is a conversation for Chat.
type ChatRequest struct {
	Messages []chat.Message
	Tools    []chat.Tool
	// Kwargs are extra template variables (enable_thinking, date_string, …).
	Kwargs map[string]any
}

// RenderChat renders a conversation with the model's chat template (ChatML
// when it has none), with the generation prompt, as apply_chat_template.
func (l *LLM) RenderChat(req ChatRequest) (string, error) {
	if len(req.Messages) == 0 {
		return "", sampler.ErrEmptyPrompt
	}
	cc := l.chat
	if cc == nil {
		cc = &chat.Config{}
	}
	tpl, err := chat.Parse(cc.TemplateFor(len(req.Tools) > 0))
	if err != nil {
		return "", err
	}
	in := cc.Input(&chat.Request{Messages: req.Messages, Tools: req.Tools})
	for k, v := range req.Kwargs {
		in.Kwargs[k] = v
	}
	return tpl.Render(in)
}

// Chat renders the conversation through the chat template and generates
// the reply. The rendered prompt is tokenized without adding special tokens
// (the template writes its own, as apply_chat_template(tokenize=True)).
func (l *LLM) Chat(ctx context.Context, req ChatRequest, params sampler.Params) (Result, error) {
	prompt, err := l.RenderChat(req)
	if err != nil {
		return Result{}, err
	}
	ids, boxes, err := l.submitEncoded([]string{prompt}, params, false)
	if err != nil {
		return Result{}, err
	}
	res, err := l.collect(ctx, ids, boxes)
	if err != nil {
		return Result{}, err
	}
	return res[0], nil
}

func (r *Result) add(o Output) {
	r.Text += o.TextDelta
	r.Tokens = append(r.Tokens, o.NewTokens...)
	r.Logprobs = append(r.Logprobs, o.Logprobs...)
	r.Usage = o.Usage
	r.FinishReason = o.FinishReason
}

// Stream runs one prompt and yields its outputs as they come; the last
// has Finished set. An error (bad params, ErrQueueFull, ctx cancelled,
// ErrClosed) is yielded once and ends the stream. Stopping the iteration
// early, or cancelling ctx, aborts the request and frees its cells.
func (l *LLM) Stream(ctx context.Context, prompt string, params sampler.Params) iter.Seq2[Delta, error] {
	return l.stream(ctx, func() ([]string, []*mailbox, error) { return l.submit([]string{prompt}, params) })
}

// StreamChat is Stream for a conversation rendered through the chat
// template, as Chat.
func (l *LLM) StreamChat(ctx context.Context, req ChatRequest, params sampler.Params) iter.Seq2[Delta, error] {
	return l.stream(ctx, func() ([]string, []*mailbox, error) {
		prompt, err := l.RenderChat(req)
		if err != nil {
			return nil, nil, err
		}
		return l.submitEncoded([]string{prompt}, params, false)
	})
}

// StreamTokens is Stream for a prompt given as token ids.
func (l *LLM) StreamTokens(ctx context.Context, prompt []int32, params sampler.Params) iter.Seq2[Delta, error] {
	return l.stream(ctx, func() ([]string, []*mailbox, error) {
		id := l.newID()
		box := newMailbox()
		req := &Request{ID: id, Prompt: append([]int32(nil), prompt...), Params: params}
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
		ids, boxes, err := submit()
		if err != nil {
			yield(Delta{}, err)
			return
		}
		b := boxes[0]
		for {
			outs, err, done := b.take()
			for _, o := range outs {
				if !yield(o, nil) {
					if !o.Finished {
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

// Stats is a snapshot of the engine's load and counters as of its last
// step. It never waits for a step, so a metrics scrape is cheap.
func (l *LLM) Stats() Stats {
	if s := l.stats.Load(); s != nil {
		return *s
	}
	return Stats{}
}

// kvUsed asks the loop for the cells in use, after every command sent
// before it (tests, stats).
func (l *LLM) kvUsed() (int, error) {
	ch := make(chan int, 1)
	if err := l.send(command{query: func(e *Engine) { _, u := e.ctx.KVCapacity(); ch <- u }}); err != nil {
		return 0, err
	}
	select {
	case u := <-ch:
		return u, nil
	case <-l.done:
		return 0, ErrClosed
	}
}

// loop owns the engine: it takes the inbox, steps while there is work,
// and delivers outputs; it sleeps when idle and returns on Close.
func (l *LLM) loop() {
	defer close(l.done)
	boxes := map[string]*mailbox{}
	finish := func(id string, o Output, err error) {
		if b := boxes[id]; b != nil {
			b.put(o, err)
			delete(boxes, id)
			l.mu.Lock()
			l.pending--
			l.mu.Unlock()
		}
	}
	for {
		l.mu.Lock()
		cmds, closed := l.inbox, l.closed
		l.inbox = nil
		l.mu.Unlock()
		if closed {
			for id := range boxes {
				l.eng.Abort(id)
				finish(id, Output{}, ErrClosed)
			}
			return
		}
		var queries []func(*Engine)
		for _, c := range cmds {
			switch {
			case c.req != nil:
				boxes[c.req.ID] = c.box
				if err := l.eng.Add(*c.req); err != nil {
					finish(c.req.ID, Output{}, err)
				}
			case c.query != nil:
				queries = append(queries, c.query)
			default:
				l.eng.Abort(c.abort)
			}
		}
		if l.eng.HasUnfinished() {
			l.step(boxes, finish)
		}
		st := l.eng.Stats()
		l.stats.Store(&st)
		for _, q := range queries { // after the step that reported the aborts before them (and its stats)
			q(l.eng)
		}
		if !l.eng.HasUnfinished() {
			<-l.wake
		}
	}
}

// step runs one engine step and delivers its outputs.
func (l *LLM) step(boxes map[string]*mailbox, finish func(string, Output, error)) {
	outs, err := l.eng.Step()
	for _, o := range outs {
		if o.Finished {
			finish(o.ID, o, nil)
		} else if b := boxes[o.ID]; b != nil {
			b.put(o, nil)
		}
	}
	if err != nil { // the forward pass failed: fail everyone, free everything
		for id := range boxes {
			l.eng.Abort(id)
			finish(id, Output{}, err)
		}
		l.eng.Step() // reports the aborts, to nobody
	}
}
