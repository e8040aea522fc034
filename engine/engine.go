package engine

import (
	"time"

	"fmt"
	"runtime"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/vkllm/vkllm/errcode"
	"github.com/vkllm/vkllm/models"
	"github.com/vkllm/vkllm/sampler"
	"github.com/vkllm/vkllm/tokenizer"
)

// Errors of Add. Params outside their range come as *sampler.FieldError
// (errcode BAD_PARAMS), an empty prompt as sampler.ErrEmptyPrompt
// (EMPTY_PROMPT); errors.Is and errors.As find them.
var (
	ErrDuplicateID = errcode.New(errcode.BadParams, "engine: request id already in use")
	ErrEmptyID     = errcode.New(errcode.BadParams, "engine: empty request id")
	ErrBadToken    = errcode.New(errcode.BadParams, "engine: prompt token outside the vocabulary")
	ErrNoTokenizer = errcode.New(errcode.BadParams, "engine: the model has no tokenizer")
	ErrSessionBusy = errcode.New(errcode.BadParams, "engine: the session already has an unfinished request")
	// ErrUnknownAdapter: Request.Adapter names no adapter of the engine.
	ErrUnknownAdapter = errcode.New(errcode.BadParams, "engine: unknown LoRA adapter")
	// ErrPromptTooLong: the prompt has more tokens than one request may
	// hold (MaxLen). It is wrapped with both numbers.
	ErrPromptTooLong = errcode.New(errcode.PromptTooLong, "engine: prompt too long")
)

// promptTooLong is the error for a prompt of n tokens when a request
// holds at most max.
func promptTooLong(n, max int) error {
	return fmt.Errorf("%w: %d tokens exceed the context of %d", ErrPromptTooLong, n, max)
}

// Config tunes an Engine. Zero values take the defaults.
type Config struct {
	// MaxBatchTokens is the token budget of one step (prefill chunks plus
	// decodes). Default and maximum: the Context's BatchSize.
	MaxBatchTokens int
	// MaxSeqs is the most requests running at once, in [1, the Context's
	// MaxSeqs]. The Context's other sequence ids are the budget of the
	// retained sequences (cached prefixes and idle sessions), which thus
	// stay under full load: a retained sequence never takes a running
	// request's id, nor the reverse. Default: half the Context's ids,
	// rounded up (all of them for a Context of one id, which then keeps
	// nothing).
	MaxSeqs int
	// EOS ends a request unless its Params.IgnoreEOS. Default: the model
	// config's eos ids and the tokenizer's.
	EOS []int32
	// PrefixCache keeps the K/V of finished requests' whole blocks of
	// BlockSize tokens and reuses them (SeqCp, no copy) for a later prompt
	// that starts with the same tokens, as it reuses the whole blocks that
	// a running request has computed. Retained cells count as used but are
	// evicted, least recently used first, before anything running is
	// preempted.
	PrefixCache bool
	// Speculation, when set, turns on speculative decoding (see
	// Speculation).
	Speculation *Speculation
	// Adapters names the LoRA adapters loaded on the model
	// (models.Model.LoadAdapter) that a Request may ask for.
	Adapters map[string]models.AdapterID
}

// Engine schedules requests over one Context. It is not safe for
// concurrent use: one goroutine owns it (LLM does this).
type Engine struct {
	ctx    *models.Context
	tok    *tokenizer.Tokenizer
	eos    []int32
	vocab  int
	hidden int // the model's hidden size: an embedding's length
	maxLen int // tokens one sequence may hold: min(cells, positions)

	sched   *scheduler
	blocks  *blockManager
	run     *runner
	spec    *speculator          // nil without speculation
	byID    map[string]*sequence // unfinished requests
	pending []Output             // finished outside Step (aborts), reported by the next Step

	count    counters // totals for Stats
	adapters map[string]models.AdapterID

	toks []int32 // drawAll's tokens and the chunks that draw, reused
	todo []int
}

// New returns an Engine over ctx, a Context of m. tok may be nil: outputs
// then carry tokens only and stop strings are refused.
func New(m *models.Model, ctx *models.Context, tok *tokenizer.Tokenizer, cfg Config) (*Engine, error) {
	cp := ctx.Params()
	if cfg.MaxBatchTokens == 0 {
		cfg.MaxBatchTokens = cp.BatchSize
	}
	if cfg.MaxBatchTokens < 1 || cfg.MaxBatchTokens > cp.BatchSize {
		return nil, errcode.Wrap(errcode.BadParams, fmt.Errorf("engine: MaxBatchTokens %d out of range [1, %d]", cfg.MaxBatchTokens, cp.BatchSize))
	}
	if cfg.MaxSeqs == 0 {
		cfg.MaxSeqs = (cp.MaxSeqs + 1) / 2
	}
	if cfg.MaxSeqs < 1 || cfg.MaxSeqs > cp.MaxSeqs {
		return nil, errcode.Wrap(errcode.BadParams, fmt.Errorf("engine: MaxSeqs %d out of range [1, %d]", cfg.MaxSeqs, cp.MaxSeqs))
	}
	eos := cfg.EOS
	if eos == nil {
		eos = append(eos, m.Config.EOS...)
		if tok != nil {
			eos = append(eos, tok.EOS()...)
		}
	}
	e := &Engine{ctx: ctx, tok: tok, eos: eos, vocab: m.Config.VocabSize, hidden: m.Config.HiddenSize,
		maxLen: min(cp.ContextLen, m.Config.MaxPositions), byID: map[string]*sequence{}, adapters: cfg.Adapters}
	for name, id := range cfg.Adapters {
		if _, ok := m.Adapter(id); !ok || name == "" {
			return nil, errcode.Wrap(errcode.BadParams, fmt.Errorf("engine: adapter %q: %d is not loaded on the model", name, id))
		}
	}
	e.sched = newScheduler(schedulerConfig{maxSeqs: cfg.MaxSeqs, maxTokens: cfg.MaxBatchTokens})
	e.blocks = newBlockManager(ctx, cfg.MaxSeqs, cp.MaxSeqs-cfg.MaxSeqs, cfg.PrefixCache, &e.count)
	e.run = newRunner(ctx)
	if sp := cfg.Speculation; sp != nil {
		var err error
		if e.spec, err = newSpeculator(sp, e.vocab, cfg.MaxSeqs); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// MaxLen is the most tokens (prompt and output) one request may hold.
func (e *Engine) MaxLen() int { return e.maxLen }

// Add queues a request. Its Params are validated here; an invalid request
// is refused with an error (a *sampler.FieldError for a parameter,
// ErrPromptTooLong for a prompt of more than MaxLen tokens).
func (e *Engine) Add(r Request) error {
	switch {
	case r.ID == "":
		return ErrEmptyID
	case e.byID[r.ID] != nil:
		return fmt.Errorf("%w: %q", ErrDuplicateID, r.ID)
	case len(r.Prompt) == 0:
		return errcode.Wrap(errcode.EmptyPrompt, sampler.ErrEmptyPrompt)
	case len(r.Prompt) > e.maxLen:
		return promptTooLong(len(r.Prompt), e.maxLen)
	case len(r.Params.Stop) > 0 && e.tok == nil:
		return fmt.Errorf("%w: stop strings need one", ErrNoTokenizer)
	case r.Session != "" && e.sessionBusy(r.Session):
		return fmt.Errorf("%w: %q", ErrSessionBusy, r.Session)
	case r.Adapter != "" && e.adapters[r.Adapter] == models.NoAdapter:
		return fmt.Errorf("%w: %q", ErrUnknownAdapter, r.Adapter)
	}
	for i, t := range r.Prompt {
		if t < 0 || int(t) >= e.vocab {
			return fmt.Errorf("%w: %d at %d (vocabulary %d)", ErrBadToken, t, i, e.vocab)
		}
	}
	if r.Embed != nil {
		if err := checkEmbed(&r); err != nil {
			return err
		}
		q := newEmbedSequence(&r)
		e.byID[r.ID] = q
		e.sched.add(q)
		e.count.promptTokens += uint64(len(r.Prompt))
		return nil
	}
	if err := r.Params.Validate(e.vocab); err != nil {
		return errcode.Wrap(errcode.BadParams, err)
	}
	if err := checkChoices(&r, e.sched.cfg.maxSeqs); err != nil {
		return err
	}
	n := max(r.N, 1)
	var fan *fanout
	if n > 1 {
		fan = &fanout{open: n}
	}
	for i := range n {
		q := e.newSequence(&r, choiceParams(r.Params, r.Constraints, i))
		q.choice, q.fan = i, fan
		if fan != nil {
			fan.choices = append(fan.choices, q)
		}
		if i == 0 { // the other choices wait for its prompt (fanOut)
			e.byID[r.ID] = q
			e.sched.add(q)
		}
	}
	e.count.promptTokens += uint64(len(r.Prompt))
	return nil
}

// newSequence is a waiting sequence for one choice of r, sampled with p.
func (e *Engine) newSequence(r *Request, p sampler.Params) *sequence {
	q := &sequence{id: r.ID, state: Waiting, numPrompt: len(r.Prompt), seqID: -1, session: r.Session,
		adapter: e.adapters[r.Adapter], adapterName: r.Adapter, scope: r.CacheScope, queued: time.Now(),
		tokens: append(make([]int32, 0, len(r.Prompt)+16), r.Prompt...)}
	post := &q.post
	post.params = p
	post.params.Stop = append([]string(nil), p.Stop...)
	post.sampler = sampler.New(p, r.Prompt)
	if e.tok != nil {
		post.dec = e.tok.NewDecoder()
	}
	post.maxTokens = p.MaxTokens
	if post.maxTokens == 0 {
		post.maxTokens = max(e.maxLen-len(r.Prompt), 1)
	}
	post.stopIDs = map[int32]bool{}
	for _, id := range p.StopTokenIDs {
		post.stopIDs[id] = true
	}
	if !p.IgnoreEOS {
		for _, id := range e.eos {
			post.stopIDs[id] = true
		}
	}
	return q
}

// Abort ends a request now, every choice of it: their cells are freed at
// once and the final Output (reason "abort") of each unfinished choice
// comes with the next Step. It reports whether the request was
// unfinished.
func (e *Engine) Abort(id string) bool {
	q := e.byID[id]
	if q == nil {
		return false
	}
	for _, c := range q.choices() {
		if c.state.Finished() {
			continue
		}
		if err := e.finish(c, FinishedAborted); err != nil {
			return false
		}
		e.pending = append(e.pending, e.final(c, Output{ID: c.id, Index: c.choice}))
	}
	return true
}

// HasUnfinished reports whether a Step has anything to do or report.
func (e *Engine) HasUnfinished() bool { return len(e.byID) > 0 || len(e.pending) > 0 }

// Step runs one engine iteration: schedule, run, postprocess. It returns
// an Output for every request that drew a token or finished. On error
// (the forward pass failed) no request moved on; the error wraps the
// Context's.
func (e *Engine) Step() ([]Output, error) {
	outs := e.pending
	e.pending = nil
	if e.spec != nil {
		if err := e.draftAll(); err != nil {
			return outs, err
		}
	}
	sc, err := e.sched.next(e.blocks)
	if err != nil {
		return outs, err
	}
	e.count.preemptions += uint64(len(sc.preempted))
	if len(sc.chunks) == 0 {
		return outs, nil
	}
	now := time.Now()
	for _, c := range sc.chunks {
		for _, x := range c.seq.choices() {
			if x.scheduled.IsZero() {
				x.scheduled = now
			}
		}
	}
	logits, err := e.run.run(sc.chunks)
	if err != nil {
		return outs, err
	}
	for _, c := range sc.chunks {
		e.count.computedTokens += uint64(c.n + c.draft)
	}
	chunks, logits, outs, err := e.pool(sc.chunks, logits, outs)
	if err != nil {
		return outs, err
	}
	chunks, logits, err = e.fanOut(chunks, logits)
	if err != nil {
		return outs, err
	}
	toks := e.drawAll(chunks, logits)
	for i, c := range chunks {
		q := c.seq
		q.numCached += c.n
		if !c.sample {
			continue
		}
		var out Output
		var final State
		if c.draft > 0 {
			if out, final, err = e.verify(c, e.run.rows(i, c)); err != nil {
				return outs, err
			}
		} else {
			out, final = e.accept(q, logits[i], toks[i])
		}
		if len(out.NewTokens) > 0 && q.firstToken.IsZero() {
			q.firstToken = time.Now()
		}
		if final != Running {
			if err := e.finish(q, final); err != nil {
				return outs, err
			}
			out = e.final(q, out)
		} else {
			out.Usage = e.usage(q)
		}
		outs = append(outs, out)
	}
	return outs, nil
}

// drawAll samples the next token of every chunk that asks for one
// (toks[i] for chunks[i]), on up to GOMAXPROCS goroutines: a draw at
// temperature > 0 visits the whole vocabulary, and the forward pass's
// threads are idle meanwhile. Each draw uses only its own sequence's
// sampler, so the tokens are those of drawing one after the other. A
// draw's panic is raised again on the caller's goroutine, as if it had
// drawn there.
func (e *Engine) drawAll(chunks []chunk, logits [][]float32) []int32 {
	e.toks, e.todo = slices.Grow(e.toks[:0], len(chunks))[:len(chunks)], e.todo[:0]
	toks := e.toks
	for i, c := range chunks {
		if c.sample && c.draft == 0 { // verify draws the others
			e.todo = append(e.todo, i)
		}
	}
	todo := e.todo
	workers := min(runtime.GOMAXPROCS(0), len(todo))
	if workers <= 1 {
		for _, i := range todo {
			toks[i] = draw(chunks[i].seq, logits[i])
		}
		return toks
	}
	var next atomic.Int32
	var wg sync.WaitGroup
	var failed atomic.Pointer[any] // a draw's panic, raised again on the caller
	for range workers {
		wg.Go(func() {
			defer func() {
				if v := recover(); v != nil {
					var p any = &drawPanic{value: v, stack: debug.Stack()}
					failed.CompareAndSwap(nil, &p)
				}
			}()
			for {
				k := int(next.Add(1)) - 1
				if k >= len(todo) {
					return
				}
				i := todo[k]
				toks[i] = draw(chunks[i].seq, logits[i])
			}
		})
	}
	wg.Wait()
	if v := failed.Load(); v != nil {
		panic(*v)
	}
	return toks
}

// finish moves q to a final state and gives back its cells; the request
// is over with its last choice.
func (e *Engine) finish(q *sequence, to State) error {
	if err := transition(q.id, &q.state, to); err != nil {
		return err
	}
	e.sched.remove(q)
	if q.fan == nil || q.fan.end() {
		delete(e.byID, q.id)
	}
	return e.blocks.deallocate(q)
}

func (e *Engine) sessionBusy(name string) bool {
	for _, q := range e.byID {
		if q.session == name {
			return true
		}
	}
	return false
}

// EndSession aborts the session's unfinished request, if any (its final
// Output comes with the next Step), and frees the cells it keeps.
func (e *Engine) EndSession(name string) error {
	for id, q := range e.byID {
		if q.session == name {
			q.session = "" // its cells are freed, not kept
			e.Abort(id)
		}
	}
	if s := e.blocks.pool.sessions[name]; s != nil {
		return e.blocks.evict(s)
	}
	return nil
}

// ClearCache frees every retained sequence: cached prefixes and idle
// sessions (which recompute their conversation on their next turn).
func (e *Engine) ClearCache() error {
	for {
		ok, err := e.blocks.evictLRU(nil)
		if err != nil || !ok {
			return err
		}
	}
}

// final fills the closing fields of q's last Output.
func (e *Engine) final(q *sequence, out Output) Output {
	out.Finished = true
	out.FinishReason = q.state.FinishReason()
	if e.count.finished == nil {
		e.count.finished = map[string]uint64{}
	}
	e.count.finished[out.FinishReason]++
	out.Usage = e.usage(q)
	if q.emb == nil {
		out.Timing = q.timing(time.Now())
	}
	return out
}

// timing is q's phases as of now, its end.
func (q *sequence) timing(now time.Time) *Timing {
	var t Timing
	if !q.scheduled.IsZero() {
		t.Queue = q.scheduled.Sub(q.queued)
		if !q.firstToken.IsZero() {
			t.Prefill = q.firstToken.Sub(q.scheduled)
			t.Decode = now.Sub(q.firstToken)
		}
	} else {
		t.Queue = now.Sub(q.queued)
	}
	return &t
}

func (e *Engine) usage(q *sequence) Usage {
	return Usage{PromptTokens: q.numPrompt, CompletionTokens: len(q.tokens) - q.numPrompt, CachedTokens: q.numReused}
}
