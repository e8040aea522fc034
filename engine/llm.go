package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"runtime"
	"slices"
	"sync"

	"github.com/vkllm/vkllm/errcode"
	"github.com/vkllm/vkllm/kernels"
	"github.com/vkllm/vkllm/kv"
	"github.com/vkllm/vkllm/models"
	"github.com/vkllm/vkllm/sampler"
	"github.com/vkllm/vkllm/sampler/grammar"
	"github.com/vkllm/vkllm/tensor"
	"github.com/vkllm/vkllm/tokenizer"
	"github.com/vkllm/vkllm/tokenizer/chat"
)

// Errors of the LLM facade. A call also returns the errors of Add
// (ErrPromptTooLong, *sampler.FieldError, ...) and its context's error.
var (
	ErrQueueFull  = errcode.New(errcode.QueueFull, "engine: request queue full")
	ErrClosed     = errcode.New(errcode.Closed, "engine: LLM closed")
	ErrNilContext = errcode.New(errcode.BadParams, "engine: nil context.Context")
)

// Options size an LLM. Zero values take the defaults.
type Options struct {
	// ContextLen is the KV cells of the cache, shared by its MaxSeqs
	// sequences; default min(positions, 4096). One request holds
	// at most min(ContextLen, the model's positions) tokens. More cells
	// than MaxSeqs sequences of the model's positions can fill are
	// refused (see models.ContextParams).
	ContextLen int
	// MaxSeqs is the requests running at once (more wait); default 16.
	// The Context has as many sequence ids again (up to kv.MaxSeqs in
	// all) for the retained sequences: cached prefixes and idle sessions
	// (Config.MaxSeqs).
	MaxSeqs        int
	BatchSize      int          // tokens per forward pass; default 512
	MaxBatchTokens int          // token budget per step; default BatchSize
	KVType         tensor.DType // F32 (default) or F16
	// MaxPending bounds the requests accepted and not finished (queued or
	// running); one more gets ErrQueueFull. Default 1024.
	MaxPending int
	// NoPrefixCache turns off the reuse of cached prompt prefixes
	// (Config.PrefixCache, on by default here).
	NoPrefixCache bool
	// Backend names the kernels the model runs on: kernels.Auto (the
	// default: a real GPU through Vulkan where kernels/vulkan is imported
	// and finds one, else kernels.CPU, the fast CPU path), kernels.CPU,
	// kernels.CPURef (the exact reference, ~30× slower) or kernels.Vulkan.
	Backend string
	// Device picks a GPU by index or name substring ("" = the first).
	Device string
	// Threads bounds the CPU backends' parallelism (0: GOMAXPROCS).
	Threads int
	// Progress, if set, is called as the weights load with the bytes
	// uploaded so far and their total (see models.WithProgress).
	Progress func(done, total int64)
	// Adapters are LoRA adapters to load, by name: a PEFT folder or a
	// llama.cpp GGUF LoRA file each (models.Model.LoadAdapter). A
	// request names one with WithAdapter.
	Adapters map[string]string
	// Model holds further options for models.Open; a models.WithBackend
	// or WithBackendName there overrides Backend, Device and Threads.
	Model []models.Option
	// Draft turns on speculative decoding (see Speculation): "ngram" is
	// prompt lookup (NGram), any other value the path of a draft model,
	// opened on the model's backend, whose tokenizer must be the
	// model's (ErrDraftVocab otherwise). DraftModel, when set instead,
	// is an open draft model (it stays the caller's: close it after the
	// LLM). DraftProposer, when set instead, is the draft source (a
	// Proposer of one's own). DraftMax bounds the drafts per step
	// (default 8).
	Draft         string
	DraftModel    *models.Model
	DraftProposer Proposer
	DraftMax      int
	// CacheBytes bounds the inference cache, which answers a repeated
	// greedy or seeded request from the outputs of its first run, with
	// no forward pass (see WithConstraintKey for constrained ones): 0
	// is DefaultCacheShare of the machine's memory, a negative value
	// turns the cache off.
	CacheBytes int64
}

// LLM serves Generate and Stream from any goroutine. One goroutine (the
// loop) owns an Engine over the model's one Context and batches every
// request into its steps; callers send it commands through an inbox and
// read their outputs from a mailbox each, so a slow reader never stalls
// the loop.
type LLM struct {
	model *models.Model
	tok   *tokenizer.Tokenizer
	chat  *chat.Config // the model's chat template and special tokens
	// toolFormat is how the template has the model write tool calls.
	toolFormat chat.Format
	vocabOnce  sync.Once
	toolVocab  *grammar.Vocab // see vocab
	opts       Options
	// maxLen is the most tokens one request may hold (Engine.MaxLen); a
	// longer prompt is refused before it is queued.
	maxLen int

	embedCfg embedConfig // see EmbedConfig
	// encodeSlots bounds the prompts tokenised at once (GOMAXPROCS).
	encodeSlots chan struct{}

	loop  *loop
	cache *inferenceCache // nil when Options.CacheBytes < 0

	mu     sync.Mutex
	nextID uint64
}

// Open opens a model folder or GGUF file with its tokenizer and starts the
// loop. Cancelling ctx stops the weight upload (the error wraps
// ctx.Err()); once Open has returned, ctx no longer matters. Close the
// LLM when done. A GGUF whose tokenizer.ggml.model is "no_vocab" opens
// without a tokenizer: its LLM runs token ids (StreamTokens, EmbedTokens)
// and refuses text with ErrNoTokenizer.
func Open(ctx context.Context, path string, opts Options) (*LLM, error) {
	name := opts.Backend
	if name == "" {
		name = kernels.Auto
	}
	mopts := []models.Option{models.WithBackendName(name, kernels.Options{Threads: opts.Threads, Device: opts.Device})}
	if opts.Progress != nil {
		mopts = append(mopts, models.WithProgress(opts.Progress))
	}
	m, err := models.Open(ctx, path, append(mopts, opts.Model...)...)
	if err != nil {
		return nil, err
	}
	var tok *tokenizer.Tokenizer
	var cc *chat.Config
	if g := m.Files.GGUF; g != nil {
		tok, err = tokenizer.FromGGUF(g)
		cc = chat.ConfigFromGGUF(g)
		if errors.Is(err, tokenizer.ErrNoVocabulary) { // token ids only
			tok, cc, err = nil, nil, nil
		}
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
	if cc != nil {
		l.toolFormat = chat.DetectToolFormat(cc.TemplateFor(true))
	}
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
		return nil, errcode.Wrap(errcode.BadParams, fmt.Errorf("engine: MaxPending %d < 1", opts.MaxPending))
	}
	// The Context has more sequence ids than MaxSeqs (the retained
	// sequences'), but only MaxSeqs requests run, so only their positions
	// can fill the cells.
	if err := m.Config.CheckContextLen(opts.ContextLen, opts.MaxSeqs); err != nil {
		return nil, err
	}
	// The adapters first, so that the Context makes their scratch.
	adapters, err := loadAdapters(m, opts.Adapters)
	if err != nil {
		return nil, err
	}
	cp := models.ContextParams{ContextLen: opts.ContextLen, MaxSeqs: contextSeqs(opts.MaxSeqs),
		BatchSize: opts.BatchSize, KVType: opts.KVType}
	if opts.Draft != "" || opts.DraftModel != nil || opts.DraftProposer != nil {
		// A verifying step asks for the logits of each running request's
		// last token and of each of its drafts.
		draftMax := opts.DraftMax
		if draftMax <= 0 {
			draftMax = defaultDraftMax // a negative one fails in newSpeculator
		}
		cp.MaxOutputs = opts.MaxSeqs * (1 + draftMax) // at most BatchSize: NewContext bounds it
	}
	ctx, err := m.NewContext(cp)
	if err != nil {
		return nil, err
	}
	d, err := openDraft(m, tok, ctx.Params(), opts)
	if err != nil {
		ctx.Close()
		return nil, err
	}
	eng, err := New(m, ctx, tok, Config{MaxSeqs: opts.MaxSeqs, MaxBatchTokens: opts.MaxBatchTokens, PrefixCache: !opts.NoPrefixCache,
		Speculation: d.spec, Adapters: adapters})
	if err != nil {
		d.close()
		ctx.Close()
		return nil, err
	}
	lp := newLoop(eng, ctx, d, opts.MaxPending)
	l := &LLM{model: m, tok: tok, opts: opts, maxLen: eng.MaxLen(), loop: lp,
		encodeSlots: make(chan struct{}, runtime.GOMAXPROCS(0))}
	switch {
	case opts.CacheBytes == 0:
		l.cache = newInferenceCache(defaultCacheBytes())
	case opts.CacheBytes > 0:
		l.cache = newInferenceCache(opts.CacheBytes)
	}
	go lp.run()
	return l, nil
}

// loadAdapters loads each named adapter on m, in name order.
func loadAdapters(m *models.Model, paths map[string]string) (map[string]models.AdapterID, error) {
	ids := map[string]models.AdapterID{}
	for _, name := range slices.Sorted(maps.Keys(paths)) {
		if name == "" {
			return nil, errcode.Wrap(errcode.BadParams, fmt.Errorf("engine: adapter %s has an empty name", paths[name]))
		}
		id, err := m.LoadAdapter(paths[name])
		if err != nil {
			return nil, fmt.Errorf("engine: adapter %q: %w", name, err)
		}
		ids[name] = id
	}
	return ids, nil
}

// Adapters names the LoRA adapters the LLM loaded (Options.Adapters),
// sorted.
func (l *LLM) Adapters() []string { return slices.Sorted(maps.Keys(l.opts.Adapters)) }

// WithAdapter runs the request with the LoRA adapter of that name
// (Options.Adapters); an unknown name fails it with ErrUnknownAdapter.
func WithAdapter(name string) StreamOption {
	return func(r *Request) { r.Adapter = name }
}

// WithCacheScope runs the request in a cache scope (Request.CacheScope):
// only requests of the same scope reuse its cached prefixes and answers.
func WithCacheScope(scope string) StreamOption {
	return func(r *Request) { r.CacheScope = scope }
}

// contextSeqs is the sequence ids of the LLM's Context: running requests
// and as many again for retained sequences, up to kv.MaxSeqs.
func contextSeqs(running int) int { return max(running, min(2*running, kv.MaxSeqs)) }

// Tokenizer is the model's tokenizer, nil for a model without one.
func (l *LLM) Tokenizer() *tokenizer.Tokenizer { return l.tok }

// Model is the model the LLM runs (its files, configuration and backend).
// It stays the LLM's: do not close it.
func (l *LLM) Model() *models.Model { return l.model }

// Close stops the loop (unfinished requests end with ErrClosed), waits
// for it, and frees the Context and the model.
func (l *LLM) Close() error {
	if !l.loop.close() {
		return nil
	}
	return l.model.Close()
}

// send queues commands for the loop, in order. Adds count against
// MaxPending; a prompt longer than a request may hold fails them all.
// An add the inference cache holds is answered at once, never queued.
func (l *LLM) send(cmds ...command) error {
	adds := 0
	var hits [][]Output // per command: the stored outputs of a cache hit
	for i, c := range cmds {
		if c.req == nil {
			continue
		}
		if n := len(c.req.Prompt); n > l.maxLen {
			return promptTooLong(n, l.maxLen)
		}
		if outs := l.lookup(c); outs != nil {
			if hits == nil {
				hits = make([][]Output, len(cmds))
			}
			hits[i] = outs
			continue
		}
		adds++
	}
	queued := cmds
	if hits != nil {
		queued = nil
		for i, c := range cmds {
			if hits[i] == nil {
				queued = append(queued, c)
			}
		}
	}
	if err := l.loop.enqueue(queued, adds); err != nil {
		return err
	}
	for i, outs := range hits {
		if outs != nil {
			l.cache.hit()
			for _, o := range replay(cmds[i].req.ID, outs) {
				cmds[i].box.put(o, nil)
			}
		}
	}
	return nil
}

// lookup returns the cached outputs of c's request, or nil; on a miss a
// cacheable request's mailbox records its outputs for the cache.
func (l *LLM) lookup(c command) []Output {
	if l.cache == nil || c.box == nil {
		return nil
	}
	k, ok := keyOf(c.req)
	if !ok {
		return nil
	}
	if outs := l.cache.get(k); outs != nil {
		return outs
	}
	c.box.rec, c.box.cache = &recording{key: k}, l.cache
	return nil
}

// A StreamOption changes the request a Stream call queues.
type StreamOption func(*Request)

// WithChoices asks for n choices of the one prompt (Request.N): the
// prompt is computed once, choice i draws with Seed+i, its Deltas carry
// Index i, and the stream ends when every choice has had its final
// Delta. constraints, when given, are one per choice
// (Request.Constraints). n above Options.MaxSeqs is refused with
// ErrTooManyChoices.
func WithChoices(n int, constraints ...sampler.Constraint) StreamOption {
	return func(r *Request) {
		r.N = n
		r.Constraints = constraints
	}
}

// submit tokenizes prompts and queues them, all or none.
func (l *LLM) submit(prompts []string, params sampler.Params, opts ...StreamOption) ([]string, []*mailbox, error) {
	return l.submitEncoded(prompts, params, true, nil, opts...)
}

// submitEncoded is submit; addSpecial is false for rendered chat prompts,
// which carry their own special tokens (as apply_chat_template), and lit
// are the literal ranges of a single prompt.
func (l *LLM) submitEncoded(prompts []string, params sampler.Params, addSpecial bool, lit []tokenizer.Range, opts ...StreamOption) ([]string, []*mailbox, error) {
	if err := l.admit(len(prompts)); err != nil {
		return nil, nil, err
	}
	cmds := make([]command, len(prompts))
	ids := make([]string, len(prompts))
	boxes := make([]*mailbox, len(prompts))
	for i, p := range prompts {
		toks, err := l.encode(p, addSpecial, lit)
		if err != nil {
			return nil, nil, err
		}
		ids[i] = l.newID()
		req := &Request{ID: ids[i], Prompt: toks, Params: params}
		for _, o := range opts {
			o(req)
		}
		boxes[i] = newMailbox(req.N)
		cmds[i] = command{req: req, box: boxes[i]}
	}
	if err := l.send(cmds...); err != nil {
		return nil, nil, err
	}
	return ids, boxes, nil
}

// abort ends requests (best effort after Close) and waits until the
// loop has reported them and published its stats (the end of the step
// under way, and the step that reports the aborts), so that Stats read
// after a cancel counts them as finished.
func (l *LLM) abort(ids ...string) {
	cmds := make([]command, len(ids))
	for i, id := range ids {
		cmds[i] = command{abort: id}
	}
	if l.send(cmds...) == nil {
		l.query(func(*loop) {})
	}
}

// query runs f on the loop, after every command sent before it, and
// waits for it.
func (l *LLM) query(f func(*loop)) error {
	ran := make(chan struct{})
	if err := l.send(command{query: func(lp *loop) { f(lp); close(ran) }}); err != nil {
		return err
	}
	select {
	case <-ran:
		return nil
	case <-l.loop.done:
		return ErrClosed
	}
}

// cellsUsed is the cells in use after every command sent before it
// (tests).
func (l *LLM) cellsUsed() (int, error) {
	var n int
	err := l.query(func(lp *loop) { n = lp.ctx.Used() })
	return n, err
}

// ClearCache frees the retained sequences: cached prefixes and idle
// sessions (whose next turn then recomputes its conversation). With no
// request running, no cell is in use afterwards.
func (l *LLM) ClearCache() error { return l.query((*loop).clear) }

// Stats is a snapshot of the load and counters as of the loop's last
// step. It never waits for a step, so a metrics scrape is cheap. A
// request is counted from the moment it is accepted until it finishes:
// before the loop has added it to the engine (in the inbox, or in the
// step that adds it), as waiting. A cancelled request (its ctx done, or
// a break out of its stream) is counted as finished ("abort") by the
// time its call returns: the abort waits for the step under way.
func (l *LLM) Stats() Stats {
	s := *l.loop.stats.Load()
	s.Finished = maps.Clone(s.Finished)
	if l.cache != nil {
		s.InferenceCacheHits, s.InferenceCacheBytes = l.cache.stats()
	}
	s.Waiting += max(0, l.loop.pendingCount()-(s.Running+s.Waiting))
	return s
}
