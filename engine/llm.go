package engine

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/vkllm/vkllm/errcode"
	"github.com/vkllm/vkllm/kernels"
	"github.com/vkllm/vkllm/kv"
	"github.com/vkllm/vkllm/models"
	"github.com/vkllm/vkllm/sampler"
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

// Delta is one piece of a Stream: the Output of one engine step.
type Delta = Output

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
	toolVocab  *sampler.Vocab // see vocab
	opts       Options
	// maxLen is the most tokens one request may hold (Engine.MaxLen); a
	// longer prompt is refused before it is queued.
	maxLen int

	embedCfg embedConfig // see EmbedConfig
	// encodeSlots bounds the prompts tokenised at once (GOMAXPROCS).
	encodeSlots chan struct{}

	w     *worker
	done  chan struct{}   // closed when the loop has returned
	cache *inferenceCache // nil when Options.CacheBytes < 0

	mu      sync.Mutex
	pending int // accepted, not finished
	nextID  uint64
	closed  bool
}

// worker is the Context, its Engine and what the loop that owns them
// shares with the callers.
type worker struct {
	ctx   *models.Context
	draft *draftModel           // the draft model's Context (and model), if any
	eng   *Engine               // the loop's only
	inbox []command             // commands the loop has not taken yet (l.mu)
	wake  chan struct{}         // cap 1: the inbox has something
	stats atomic.Pointer[Stats] // published by the loop after each step
}

// command is one inbox entry: an add, an abort, a session's end, or a
// query.
type command struct {
	req        *Request
	box        *mailbox
	abort      string
	endSession string
	query      func(*worker)
}

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
	w := &worker{ctx: ctx, eng: eng, draft: d, wake: make(chan struct{}, 1)}
	st := eng.Stats()
	w.stats.Store(&st)
	l := &LLM{model: m, tok: tok, opts: opts, maxLen: eng.MaxLen(), w: w, done: make(chan struct{}),
		encodeSlots: make(chan struct{}, runtime.GOMAXPROCS(0))}
	switch {
	case opts.CacheBytes == 0:
		l.cache = newInferenceCache(defaultCacheBytes())
	case opts.CacheBytes > 0:
		l.cache = newInferenceCache(opts.CacheBytes)
	}
	go func() {
		defer close(l.done)
		l.loop(w)
	}()
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
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		<-l.done
		return nil
	}
	l.closed = true
	l.mu.Unlock()
	l.w.poke()
	<-l.done
	l.w.draft.close()
	l.w.ctx.Close()
	return l.model.Close()
}

func (w *worker) poke() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
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
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	if l.pending+adds > l.opts.MaxPending {
		l.mu.Unlock()
		return fmt.Errorf("%w: %d pending, at most %d", ErrQueueFull, l.pending, l.opts.MaxPending)
	}
	l.pending += adds
	for i, c := range cmds {
		if hits == nil || hits[i] == nil {
			l.w.inbox = append(l.w.inbox, c)
		}
	}
	l.w.poke()
	l.mu.Unlock()
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
	// Tools are the functions the model may call; the template describes
	// them (a template that knows no tools gets none) and the reply's
	// calls are parsed out of its text, in the template's format (see
	// LLM.ToolFormat).
	Tools []chat.Tool
	// ToolChoice is ToolAuto ("" too), ToolNone (no tools offered),
	// ToolRequired (the reply is one call of one of Tools) or the name of
	// one of Tools (the reply is one call of it, the only tool offered).
	// A forced call is decoded under a sampler.ToolCallConstraint, so
	// even a model that never calls tools writes a valid one: one of the
	// names, a JSON object for arguments that follows the tool's
	// Parameters schema (see ToolCallGrammar).
	ToolChoice string
	// RawToolCalls leaves the reply's text as the model wrote it, its
	// tool calls unparsed, for a caller that reads them itself (the
	// OpenAI server streams them as its clients expect).
	RawToolCalls bool
	// Kwargs are extra template variables (enable_thinking, date_string, …).
	Kwargs map[string]any
	// ResponseFormat, when set to JSON, makes the reply one JSON
	// document (see ResponseFormat); with tools offered under ToolAuto
	// the reply is then the document, never a call. A forced tool call
	// beside it is refused with ErrResponseFormat.
	ResponseFormat *ResponseFormat
	// LiteralContent tokenises the messages' text as plain text:
	// special-token text in it ("<|im_end|>") stays text instead of
	// becoming the control token. Off by default, as Hugging Face's
	// apply_chat_template and llama.cpp (which parse it), so a user's
	// message can then close its turn and open a system one.
	LiteralContent bool
}

// Roles are the message roles Chat accepts, as OpenAI's API: "developer"
// is its newer name for "system".
var Roles = []string{"system", "developer", "user", "assistant", "tool"}

// ErrUnknownRole is wrapped by every *RoleError.
var ErrUnknownRole = errcode.New(errcode.BadParams, "engine: unknown message role")

// RoleError is a message whose role is not one of Roles.
type RoleError struct {
	Index int // in the messages
	Role  string
}

func (e *RoleError) Error() string {
	return fmt.Sprintf("engine: messages[%d]: unknown role %q; expected one of %s", e.Index, e.Role, strings.Join(Roles, ", "))
}

func (e *RoleError) Unwrap() error { return ErrUnknownRole }

// CheckRoles returns a *RoleError for the first message whose role is not
// one of Roles, or nil.
func CheckRoles(msgs []chat.Message) error {
	for i, m := range msgs {
		if !slices.Contains(Roles, m.Role) {
			return &RoleError{Index: i, Role: m.Role}
		}
	}
	return nil
}

// systemForDeveloper returns msgs with "developer" messages as "system"
// (a copy when there are any; msgs is not changed).
func systemForDeveloper(msgs []chat.Message) []chat.Message {
	if !slices.ContainsFunc(msgs, func(m chat.Message) bool { return m.Role == "developer" }) {
		return msgs
	}
	out := slices.Clone(msgs)
	for i := range out {
		if out[i].Role == "developer" {
			out[i].Role = "system"
		}
	}
	return out
}

// RenderChat renders a conversation with the model's chat template (ChatML
// when it has none), with the generation prompt, as apply_chat_template.
// An empty conversation is refused with sampler.ErrEmptyPrompt, a message
// whose role is not one of Roles with a *RoleError; a "developer"
// message is rendered as "system". The tools offered are those of
// ToolChoice (a bad one is refused with ErrToolChoice).
func (l *LLM) RenderChat(req ChatRequest) (string, error) { return l.renderChat(req, true) }

// renderChat is RenderChat, the generation prompt added or not.
func (l *LLM) renderChat(req ChatRequest, addGenerationPrompt bool) (string, error) {
	if len(req.Messages) == 0 {
		return "", errcode.Wrap(errcode.EmptyPrompt, sampler.ErrEmptyPrompt)
	}
	if err := CheckRoles(req.Messages); err != nil {
		return "", err
	}
	tools, err := offered(req)
	if err != nil {
		return "", err
	}
	req.Tools = tools
	req.Messages = systemForDeveloper(req.Messages)
	cc := l.chat
	if cc == nil {
		cc = &chat.Config{}
	}
	tpl, err := chat.Parse(cc.TemplateFor(len(req.Tools) > 0))
	if err != nil {
		return "", err
	}
	in := cc.Input(&chat.Request{Messages: req.Messages, Tools: req.Tools, AddGenerationPrompt: &addGenerationPrompt})
	for k, v := range req.Kwargs {
		in.Kwargs[k] = v
	}
	return tpl.Render(in)
}

// Chat renders the conversation through the chat template and generates
// the reply. The rendered prompt is tokenized without adding special tokens
// (the template writes its own, as apply_chat_template(tokenize=True)).
// With tools offered, the reply's tool calls are in Result.ToolCalls
// (see ChatRequest.ToolChoice).
func (l *LLM) Chat(ctx context.Context, req ChatRequest, params sampler.Params) (Result, error) {
	if ctx == nil {
		return Result{}, ErrNilContext
	}
	var res Result
	for d, err := range l.StreamChat(ctx, req, params) {
		if err != nil {
			return Result{}, err
		}
		res.add(d)
	}
	return res, nil
}

func (r *Result) add(o Output) {
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
	return l.stream(ctx, func() ([]string, []*mailbox, error) { return l.submit([]string{prompt}, params, opts...) })
}

// StreamChat is Stream for a conversation rendered through the chat
// template, as Chat. With tools offered, each Delta's TextDelta is
// content and its ToolCalls the pieces of the calls as they are written:
// a call's first piece carries its index, ID, type and name, the next
// ones fragments of its arguments (chat.ToolParser); the last Delta's
// FinishReason is "tool_calls" when the reply made calls. With
// WithChoices, each choice is parsed (and, for a forced call,
// constrained) on its own.
func (l *LLM) StreamChat(ctx context.Context, req ChatRequest, params sampler.Params, opts ...StreamOption) iter.Seq2[Delta, error] {
	return func(yield func(Delta, error) bool) {
		var t chatTurn
		submit := func() ([]string, []*mailbox, error) {
			err := l.admit(1)
			if err == nil {
				t, err = l.prepareChat(req, params, opts)
			}
			if err != nil {
				return nil, nil, err
			}
			return l.submitEncoded([]string{t.prompt}, t.params, false, t.literal, t.opts...)
		}
		for d, err := range l.stream(ctx, submit) {
			if err == nil {
				t.parse(&d)
			}
			if !yield(d, err) {
				return
			}
		}
	}
}

// StreamTokens is Stream for a prompt given as token ids.
func (l *LLM) StreamTokens(ctx context.Context, prompt []int32, params sampler.Params, opts ...StreamOption) iter.Seq2[Delta, error] {
	return l.stream(ctx, func() ([]string, []*mailbox, error) {
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
				if !yield(o, nil) {
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

// kvUsed asks the loop for the cells in use, after every command sent
// before it (tests). With clear, retained sequences (cached prefixes,
// idle sessions) are freed first.
func (l *LLM) kvUsed(clear bool) (int, error) {
	ch := make(chan int, 1)
	q := func(w *worker) {
		if clear {
			w.clear()
		}
		ch <- w.ctx.Used()
	}
	if err := l.send(command{query: q}); err != nil {
		return 0, err
	}
	select {
	case u := <-ch:
		return u, nil
	case <-l.done:
		return 0, ErrClosed
	}
}

// ClearCache frees the retained sequences: cached prefixes and idle
// sessions (whose next turn then recomputes its conversation). With no
// request running, no cell is in use afterwards.
func (l *LLM) ClearCache() error {
	_, err := l.kvUsed(true)
	return err
}

// clear frees w's retained sequences and publishes its stats.
func (w *worker) clear() {
	w.eng.ClearCache()
	st := w.eng.Stats()
	w.stats.Store(&st)
}

// Stats is a snapshot of the load and counters as of the loop's last
// step. It never waits for a step, so a metrics scrape is cheap. A
// request is counted from the moment it is accepted until it finishes:
// before the loop has added it to the engine (in the inbox, or in the
// step that adds it), as waiting.
func (l *LLM) Stats() Stats {
	s := *l.w.stats.Load()
	s.Finished = maps.Clone(s.Finished)
	if l.cache != nil {
		s.InferenceCacheHits, s.InferenceCacheBytes = l.cache.stats()
	}
	l.mu.Lock()
	s.Waiting += max(0, l.pending-(s.Running+s.Waiting))
	l.mu.Unlock()
	return s
}

// loop owns w's engine: it takes its inbox, steps while there is work,
// and delivers outputs; it sleeps when idle and returns on Close.
func (l *LLM) loop(w *worker) {
	boxes := map[string]*mailbox{}
	finish := func(id string, o Output, err error) {
		if b := boxes[id]; b != nil {
			delete(boxes, id)
			l.mu.Lock() // before the caller hears of the end, so its next call finds room
			l.pending--
			l.mu.Unlock()
			b.put(o, err)
		}
	}
	for {
		l.mu.Lock()
		cmds, closed := w.inbox, l.closed
		w.inbox = nil
		l.mu.Unlock()
		if closed {
			for _, c := range cmds {
				if c.req != nil {
					boxes[c.req.ID] = c.box
				}
			}
			for id := range boxes {
				w.eng.Abort(id)
				finish(id, Output{}, ErrClosed)
			}
			return
		}
		var queries []func(*worker)
		l.guard(w, boxes, finish, func() {
			for _, c := range cmds {
				switch {
				case c.req != nil:
					boxes[c.req.ID] = c.box
					if err := w.eng.Add(*c.req); err != nil {
						finish(c.req.ID, Output{}, err)
					}
				case c.query != nil:
					queries = append(queries, c.query)
				case c.endSession != "":
					if err := w.eng.EndSession(c.endSession); err != nil {
						l.fail(w, boxes, finish, err)
					}
				default:
					w.eng.Abort(c.abort)
				}
			}
			if w.eng.HasUnfinished() {
				l.step(w, boxes, finish)
			}
		})
		st := w.eng.Stats()
		w.stats.Store(&st)
		for _, q := range queries { // after the step that reported the aborts before them (and its stats)
			q(w)
		}
		if !w.eng.HasUnfinished() {
			<-w.wake // a send after the inbox was taken left a wake-up
		}
	}
}

// guard runs the loop's work on w's engine; a panic there (sampling, a
// Constraint, stop strings, detokenising) fails w's requests with a
// *PanicError and frees their cells, as a failed step does, and the loop
// goes on.
func (l *LLM) guard(w *worker, boxes map[string]*mailbox, finish func(string, Output, error), work func()) {
	defer func() {
		if v := recover(); v != nil {
			l.fail(w, boxes, finish, recovered(v))
		}
	}()
	work()
}

// step runs one engine step and delivers its outputs.
func (l *LLM) step(w *worker, boxes map[string]*mailbox, finish func(string, Output, error)) {
	outs, err := w.eng.Step()
	for _, o := range outs {
		b := boxes[o.ID]
		switch {
		case b == nil:
		case o.Finished && b.last(): // the request's last choice
			finish(o.ID, o, nil)
		default:
			b.put(o, nil)
		}
	}
	if err != nil {
		l.fail(w, boxes, finish, err)
	}
}

// fail ends every request of w with err after its cache failed, and frees
// everything it holds.
func (l *LLM) fail(w *worker, boxes map[string]*mailbox, finish func(string, Output, error), err error) {
	for id := range boxes {
		w.eng.Abort(id)
		finish(id, Output{}, err)
	}
	w.eng.Step() // reports the aborts, to nobody
	w.eng.ClearCache()
}
